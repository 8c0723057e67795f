/**
 * `node-strong-3-lost-answers` and `node-strong-3-forgotten-results`: the real
 * node's session pool under the load that used to apply a write twice. Forty
 * clients call mostly through one node outside a group of three, which keeps
 * four sessions (so each carries many calls), over a network that loses 3% of
 * messages: many answers are lost, each is retried after the default attempt
 * timeout (3 s) while the other callers keep that node's sessions busy, far
 * past the 64 results coord remembers per session; now and then a client
 * issues 40 sets in one turn. Claims and create-only entries expire after a
 * second, so they are won and created again all along; blocking lock waits
 * hold sessions for up to a second.
 *
 * Checked: the exactly-once checker (../check/exactly-once.ts) between the
 * applied command stream and what every caller was told — no call executed
 * twice, a claim's winner told it won, every state-machine answer that of the
 * call's execution; no unexpected error; Raft's invariants and replica
 * agreement after every event. With coord's default limits a live retry must
 * always find its answer (no `outcome_unknown` at all); with a tiny global
 * result bound (`-forgotten-results`) answers are forgotten, and those calls
 * must end `outcome_unknown`, never re-issued.
 */

import { checkExactlyOnce, type Execution, type Outcome } from '@parley/check';
import type { CommandResult, CoordLimits, Operation } from '@parley/coord';
import { Nemesis, type NemesisOptions, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import { startSessionsWorkload } from './sessions-workload.js';
import {
  bootNodeStrongWorld,
  type NodeStrongScenarioConfig,
  nodeStrongConverged,
  type RunState,
  watchNodeStrongWorld,
} from './world.js';

interface SessionsScenarioConfig {
  name: string;
  description: string;
  limits?: Partial<CoordLimits>;
  /** A live retry always finds its answer: any `outcome_unknown` is a violation. */
  noForgottenAnswers: boolean;
  /** Faults on every node (partitions), besides the network's loss (default none). */
  netNemesis?: NemesisOptions;
  clients?: number;
  /** A node's bound on one call and on one attempt (default 8,000 and 3,000 ms). */
  callTimeoutMs?: number;
  attemptTimeoutMs?: number;
}

/** Refusals of a retried command: not an execution. */
const REFUSALS = new Set(['stale_sequence', 'session_expired']);

/** The tag a workload call carries: a string value `t<n>`, or lock metadata `{tag}`. */
function tagOf(op: Operation): string | undefined {
  if ((op.type === 'set' || op.type === 'claim') && typeof op.value === 'string' && /^t\d+$/.test(op.value)) {
    return op.value;
  }
  if (op.type === 'lock_acquire') {
    const m = op.metadata as { tag?: unknown } | undefined;
    if (m !== null && typeof m === 'object' && typeof m.tag === 'string') return m.tag;
  }
  return undefined;
}

function outcomeOf(r: CommandResult): Outcome {
  if (!r.ok) return { ok: false, code: r.error.code };
  const v = r.value;
  switch (v.type) {
    case 'entry':
      return { ok: true, version: v.entry.version };
    case 'claim':
      return { ok: true, won: v.won, value: v.value, version: v.version };
    case 'lock':
      return { ok: true, fence: v.lock.fence };
    case 'lock_waiting':
      return { ok: true, waiting: true };
    default:
      return { ok: true };
  }
}

function sessionsScenario(config: SessionsScenarioConfig): Scenario {
  const world: NodeStrongScenarioConfig = {
    name: config.name,
    description: config.description,
    voters: 3,
    nonMembers: 1,
    clients: config.clients ?? 40,
    network: { lossRate: 0.03, duplicateRate: 0.02, reorder: true, latency: { minMs: 1, meanMs: 6, maxMs: 80 } },
    netNemesis: {},
    voterNemesis: {},
    skewMs: 50,
    callTimeoutMs: config.callTimeoutMs ?? 8_000,
    maxSessions: 4,
    attemptTimeoutMs: config.attemptTimeoutMs ?? 3_000,
    ...(config.limits ? { limits: config.limits } : {}),
  };
  return {
    name: config.name,
    description: config.description,
    safetyMs: 5_000,
    livenessBoundMs: 20_000,
    setup: (sim) => setupSessions(sim, world, config),
  };
}

function setupSessions(sim: Simulation, config: NodeStrongScenarioConfig, sc: SessionsScenarioConfig): ScenarioRun {
  const state: RunState = { running: true };
  const world = bootNodeStrongWorld(sim, config, state);
  const { voters, nodes, app } = world;

  // --- what the state machine executed for each tagged call ----------------------------
  const executions: Execution[] = [];
  const byCommand = new Map<string, Execution>();
  world.onFirstApply((index, command, out) => {
    for (const d of out.deliveries) {
      const e = byCommand.get(`${d.clientId}/${d.seq}`);
      if (e) e.outcome = outcomeOf(d.result);
    }
    const tag = tagOf(command.op);
    if (tag === undefined || command.clientId === undefined) return;
    const who = `${command.clientId}/${command.seq}`;
    if (byCommand.has(who)) return; // a copy answered from the session table
    const r = out.result;
    if (!r.ok && REFUSALS.has(String((r.error.details as { reason?: unknown }).reason))) return;
    const e: Execution = { tag, command: who, index, outcome: outcomeOf(r) };
    executions.push(e);
    byCommand.set(who, e);
  });

  const workload = startSessionsWorkload(sim, { clients: config.clients, burstPercent: 1 }, world, state);

  watchNodeStrongWorld(sim, world);

  const voterNemesis = new Nemesis(sim, voters, config.voterNemesis).start();
  const netNemesis = sc.netNemesis ? new Nemesis(sim, nodes, sc.netNemesis).start() : undefined;
  if (config.network) sim.network.configure(config.network);
  let compared = 0;
  let unavailable = 0;

  return {
    quiesce() {
      state.running = false;
      voterNemesis.stop();
      netNemesis?.stop();
    },
    converged: () => nodeStrongConverged(world),
    check() {
      const r = checkExactlyOnce(executions, workload.answers);
      compared = r.compared;
      const first = r.violations[0];
      if (first) {
        throw violation(`exactly-once/${first.type}`, JSON.stringify(r.violations.slice(0, 3)));
      }
      // `unavailable` is the answer of a call never proposed (docs/guarantees.md, fail fast): it never applies.
      const applied = new Set(executions.map((e) => e.tag));
      const unsent = workload.answers.filter((a) => !a.outcome.ok && a.outcome.code === 'unavailable');
      const wrong = unsent.filter((a) => applied.has(a.tag));
      if (wrong.length > 0) {
        throw violation(
          'node-strong-sessions/unavailable-applied',
          `${wrong.length} calls answered unavailable were applied (first: ${wrong[0]?.client} ${wrong[0]?.f} ${wrong[0]?.tag})`,
        );
      }
      unavailable = unsent.length;
      if (workload.unexpected.length > 0) {
        throw violation('node-strong-sessions/unexpected-error', workload.unexpected.join('; '));
      }
      if (sc.noForgottenAnswers && workload.stats.outcomeUnknown > 0) {
        const lost = workload.answers.find((a) => !a.outcome.ok && a.outcome.code === 'outcome_unknown');
        throw violation(
          'node-strong-sessions/answer-forgotten',
          `${workload.stats.outcomeUnknown} calls ended outcome_unknown with coord's default limits (first: ${lost?.client} ${lost?.f} ${lost?.tag})`,
        );
      }
    },
    metrics() {
      let retries = 0;
      for (const id of nodes) retries += app(id)?.module.router.retries ?? 0;
      return {
        clients: config.clients,
        calls: workload.stats.calls,
        bursts: workload.stats.bursts,
        executions: executions.length,
        answersCompared: compared,
        indeterminate: workload.stats.indeterminate,
        outcomeUnknown: workload.stats.outcomeUnknown,
        unavailable,
        partitions: netNemesis?.stats.partitions ?? 0,
        gaveUp: workload.stats.gaveUp,
        claimsWon: executions.filter((e) => e.outcome.ok && e.outcome.won === true).length,
        retries,
        callMsP50: percentile(workload.callMs, 0.5),
        callMsP99: percentile(workload.callMs, 0.99),
        applied: world.stats.applied,
        pauses: voterNemesis.stats.pauses,
      };
    },
  };
}

function percentile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

export const NODE_STRONG_SESSIONS_SCENARIOS: readonly Scenario[] = [
  sessionsScenario({
    name: 'node-strong-3-lost-answers',
    description:
      '3 voters + 1 non-member with 4 sessions per node, 40 clients mostly through the non-member; 3% loss with duplicates and reordering, slow retries (3 s attempts), bursts of 40 sets in one turn; exactly-once checker, and no answer forgotten with default limits.',
    noForgottenAnswers: true,
  }),
  sessionsScenario({
    name: 'node-strong-3-forgotten-results',
    description:
      'As node-strong-3-lost-answers, with coord remembering 4 KiB of results in all (maxCachedResultBytes): retries find their answers forgotten and must end outcome_unknown, never run twice.',
    limits: { maxCachedResultBytes: 4096 },
    noForgottenAnswers: false,
  }),
  sessionsScenario({
    name: 'node-strong-3-fail-fast',
    description:
      'As node-strong-3-lost-answers with 16 clients, 3 s calls of 1 s attempts, and partitions (isolate, one-way, majority, bridge) over every node: nodes that know no leader fail calls fast; a call answered unavailable must never apply, one that may have been proposed ends timeout or outcome_unknown.',
    netNemesis: {
      partitions: ['one-way', 'one-way', 'isolate', 'majority', 'bridge'],
      gapMs: { min: 300, max: 2_000 },
      durationMs: { min: 2_000, max: 8_000 },
    },
    clients: 16,
    callTimeoutMs: 3_000,
    attemptTimeoutMs: 1_000,
    noForgottenAnswers: true,
  }),
];

for (const s of NODE_STRONG_SESSIONS_SCENARIOS) registerScenario(s);
