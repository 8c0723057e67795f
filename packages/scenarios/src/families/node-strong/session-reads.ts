/**
 * `node-strong-3-session-reads`: session guarantees on a strong namespace
 * (docs/sessions.md, "Strong namespaces"). Twelve clients each keep a
 * `Session` and pass it to every call; each call goes to a node picked at
 * random (the three voters or the node outside the group), and now and then
 * the client resumes its session from its token, as a process handing it on
 * would. They write unique values to four keys and read them serializable,
 * bounded (`maxStalenessMs` 50–1000 and/or `maxLagEntries` 2–10: loose
 * bounds, so the session is what holds a read back) or linearizable, under
 * partitions of every kind, voter crashes and pauses, 2% loss with
 * reordering, and clocks skewed ±100 ms with drift.
 *
 * Checked after healing: `checkSessionGuarantees` over the session history
 * with read-your-writes, monotonic reads, monotonic writes and
 * writes-follow-reads (a strong entry's versions are ordered by the log
 * index that wrote them); plus Raft's invariants and replica agreement after
 * every event. A read refused with `session_behind` is a failed read: it
 * answered nothing.
 */

import { checkSessionGuarantees, type SessionOp } from '@parley/check';
import { isParleyError, type PeerId } from '@parley/interface';
import { Session, type StrongReadOptions } from '@parley/node';
import { between, PARTITION_KINDS, type Simulation, violation } from '@parley/sim';
import { registerScenario, type Scenario, type ScenarioRun } from '../../registry.js';
import type { NodeStrongHost } from './host.js';
import {
  bootNodeStrongWorld,
  type NodeStrongScenarioConfig,
  nodeStrongConverged,
  type RunState,
  startNodeStrongFaults,
} from './world.js';

const NS = 'kv';
const KEYS = ['s0', 's1', 's2', 's3'];
const STALENESS_MS = [50, 200, 1_000];
const LAG_ENTRIES = [2, 10];
/** Codes a call may end with besides success. */
const EXPECTED = new Set(['session_behind', 'staleness_exceeded', 'unavailable', 'timeout', 'not_leader', 'closed']);

type Level = 'linearizable' | 'serializable' | 'bounded';

const CONFIG: NodeStrongScenarioConfig = {
  name: 'node-strong-3-session-reads',
  description:
    '3 voters + 1 non-member, 12 clients each with a Session hopping between nodes, writing 4 keys and reading them serializable, bounded and linearizable; partitions of every kind, voter crashes and pauses, 2% loss, clocks ±100 ms with drift; read-your-writes, monotonic reads and writes, writes-follow-reads.',
  voters: 3,
  nonMembers: 1,
  clients: 12,
  network: { lossRate: 0.02, reorder: true, latency: { minMs: 1, meanMs: 5, maxMs: 60 } },
  netNemesis: { partitions: PARTITION_KINDS },
  voterNemesis: { crashes: true, pauses: true, maxDown: 1 },
  disk: { tornWriteRate: 0.5 },
  skewMs: 100,
  driftPpm: 100,
};

function setupSessionReads(sim: Simulation, config: NodeStrongScenarioConfig): ScenarioRun {
  const state: RunState = { running: true };
  const world = bootNodeStrongWorld(sim, config, state);
  const { voters, nodes, app, versionIndex } = world;
  const rng = sim.random;

  const ops: SessionOp<string>[] = [];
  const unexpected: string[] = [];
  const stats = {
    writes: 0,
    reads: 0,
    serializable: 0,
    bounded: 0,
    linearizable: 0,
    behind: 0,
    stale: 0,
    resumed: 0,
    tokenMoves: 0,
  };
  let values = 0;

  const live = (ids: readonly PeerId[]) => ids.filter((n) => sim.host(n).state === 'up' && app(n) !== undefined);

  function note(err: unknown, what: string): string {
    const code = isParleyError(err) ? err.code : `crash: ${String(err)}`;
    if (!EXPECTED.has(code) && unexpected.length < 10) unexpected.push(`${what}: ${code}`);
    if (code === 'session_behind') stats.behind++;
    if (code === 'staleness_exceeded') stats.stale++;
    return code;
  }

  /** The session's token may only grow, and only on success. */
  function moved(s: Session, before: number, ok: boolean, what: string): void {
    if (s.strong < before || (!ok && s.strong !== before)) {
      if (unexpected.length < 10) unexpected.push(`${what}: token ${before} -> ${s.strong} (${ok ? 'ok' : 'failed'})`);
    }
    if (s.strong > before) stats.tokenMoves++;
  }

  function write(name: string, s: Session, node: NodeStrongHost): Promise<void> {
    const key = KEYS[rng.int(KEYS.length)] as string;
    const id = `w${++values}`;
    const invokeMs = sim.nowMs();
    const before = s.strong;
    stats.writes++;
    const at = ops.length;
    ops.push({ kind: 'write', session: name, key, id, outcome: 'unknown', invokeMs });
    return node.module
      .strong(NS)
      .set(key, id, { session: s })
      .then(
        (r) => {
          moved(s, before, true, `set ${key}`);
          ops[at] = {
            kind: 'write',
            session: name,
            key,
            id,
            outcome: 'ok',
            version: r.version,
            invokeMs,
            completeMs: sim.nowMs(),
          };
        },
        (err: unknown) => {
          note(err, `set ${key}`);
          moved(s, before, false, `set ${key}`);
          // Anything but a refusal known unsent may have applied: a read that saw it names its version.
          const unsent = isParleyError(err, 'unavailable');
          ops[at] = { kind: 'write', session: name, key, id, outcome: unsent ? 'fail' : 'unknown', invokeMs };
        },
      );
  }

  function read(name: string, s: Session, node: NodeStrongHost): Promise<void> {
    const key = KEYS[rng.int(KEYS.length)] as string;
    const roll = rng.int(100);
    const level: Level = roll < 45 ? 'serializable' : roll < 85 ? 'bounded' : 'linearizable';
    const options: StrongReadOptions = { session: s };
    if (level === 'serializable') options.consistency = 'serializable';
    if (level === 'bounded') {
      const which = rng.int(3); // 0: time, 1: entries, 2: both
      if (which !== 1) options.maxStalenessMs = STALENESS_MS[rng.int(STALENESS_MS.length)] as number;
      if (which !== 0) options.maxLagEntries = LAG_ENTRIES[rng.int(LAG_ENTRIES.length)] as number;
    }
    stats.reads++;
    stats[level]++;
    const invokeMs = sim.nowMs();
    const before = s.strong;
    const at = ops.length;
    ops.push({ kind: 'read', session: name, key, saw: null, outcome: 'unknown', invokeMs });
    return node.module
      .strong(NS)
      .get(key, options)
      .then(
        (e) => {
          moved(s, before, true, `${level} get ${key}`);
          ops[at] = {
            kind: 'read',
            session: name,
            key,
            saw: e === undefined ? null : String(e.value),
            ...(e === undefined ? {} : { version: e.version }),
            outcome: 'ok',
            invokeMs,
            completeMs: sim.nowMs(),
          };
        },
        (err: unknown) => {
          note(err, `${level} get ${key}`);
          moved(s, before, false, `${level} get ${key}`);
          ops[at] = { kind: 'read', session: name, key, saw: null, outcome: 'fail', invokeMs, completeMs: sim.nowMs() };
        },
      );
  }

  function client(name: string): void {
    let session = Session.from();
    let busy = false;
    const tick = () => {
      sim.schedule(between(rng, 5, 40), () => {
        if (!state.running) return;
        if (!busy) {
          // Any node, a new choice every call: mostly a voter, else the node outside the group.
          const pool = rng.int(10) < 7 ? live(voters) : live(nodes);
          const via = pool.length > 0 ? (pool[rng.int(pool.length)] as PeerId) : undefined;
          const node = via === undefined ? undefined : app(via);
          if (via !== undefined && node !== undefined) {
            busy = true;
            // Now and then the session travels as its token (another process takes it on).
            if (rng.int(8) === 0) {
              session = Session.from(session.token);
              stats.resumed++;
            }
            (rng.int(100) < 35 ? write(name, session, node) : read(name, session, node)).finally(() => {
              busy = false;
            });
          }
        }
        tick();
      });
    };
    tick();
  }
  for (let i = 0; i < config.clients; i++) client(`c${i}`);

  const faults = startNodeStrongFaults(sim, config, world, state);
  let checkedReads = 0;

  return {
    quiesce: faults.quiesce,
    converged: () => nodeStrongConverged(world),
    async check() {
      if (unexpected.length > 0) throw violation('node-strong-session-reads/unexpected', unexpected.join('; '));
      const compare = (a: string, b: string) => (versionIndex.get(a) ?? -1) - (versionIndex.get(b) ?? -1);
      const result = checkSessionGuarantees(ops, { guarantees: new Set(['ryw', 'mr', 'mw', 'wfr']), compare });
      const first = result.violations[0];
      if (first) {
        throw violation(
          `node-strong-session-reads/${first.type}`,
          `${result.violations.length} violations; first: ${JSON.stringify(first)}`,
        );
      }
      checkedReads = ops.filter((o) => o.kind === 'read' && o.outcome === 'ok').length;
    },
    metrics() {
      const waited = voters.reduce((n, id) => n + (app(id)?.module.localReads.stats.waited ?? 0), 0);
      return {
        ...stats,
        waited,
        checkedReads,
        applied: world.stats.applied,
        partitions: faults.net.stats.partitions,
        crashes: faults.voters.stats.crashes,
        pauses: faults.voters.stats.pauses,
      };
    },
  };
}

export const NODE_STRONG_SESSION_READS_SCENARIOS: readonly Scenario[] = [
  {
    name: CONFIG.name,
    description: CONFIG.description,
    safetyMs: 10_000,
    livenessBoundMs: 20_000,
    setup: (sim) => setupSessionReads(sim, CONFIG),
  },
];

for (const s of NODE_STRONG_SESSION_READS_SCENARIOS) registerScenario(s);
