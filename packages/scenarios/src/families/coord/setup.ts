/**
 * `coord-*` scenario setup: the Raft group of CoordHosts, the simulated clients (sessions,
 * retries, routing of answers, history recording), the continuous invariants and the checks
 * run after healing (those that read voters' state directly are in ../voter-checks.ts, shared
 * with node-strong-*). The workloads are in ./workload.ts, the scenario table in ./scenarios.ts.
 */

import type { AckedWrite, Model } from '@parley/check';
import {
  checkFencing,
  checkLinearizability,
  type FenceEvent,
  formatCounterexample,
  HistoryRecorder,
  type HistoryValue,
  InvariantRegistry,
  parleyEntryModel,
  parleyLeaseModel,
  parleyLockModel,
  type RaftClusterView,
  registerRaftInvariants,
} from '@parley/check';
import {
  type ApplyOutput,
  type Command,
  type CommandResult,
  canonicalJson,
  type Operation,
  SessionSequencer,
} from '@parley/coord';
import type { PeerId } from '@parley/interface';
import { between, Nemesis, type Simulation, violation } from '@parley/sim';
import type { Scenario, ScenarioRun } from '../../registry.js';
import { appliedRecorder } from '../applied-record.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from '../raft/group.js';
import { RaftGuardWatch } from '../raft/guards.js';
import { checkDurabilityAfterRestart, checkSnapshotAgreement } from '../voter-checks.js';
import {
  ABSENT,
  type Client,
  type CoordScenarioConfig,
  ENTRY_KEYS,
  GIVE_UP_MS,
  type ModelName,
  RETRY_MS,
  TICK_MS,
  VERSION_KEY,
} from './config.js';
import { installDirectors } from './directors.js';
import { CoordHost } from './host.js';
import { leaseDriftClocks, resyncClocks, resyncedSkewBoundMs } from './lease-drift.js';
import { mixedWorkload, ttlWorkload } from './workload.js';

/**
 * After a whole-cluster outage of length L, state-machine time lags the clocks by about L
 * and catches up one `maxTimeStepMs` (5 s) per command; the leader proposes `expire` every
 * second, so the lag is gone within an election, plus L / 4, after the restart (bounded
 * generously here: 10 s + L / 2).
 */
function catchingUpAfterOutage(windows: readonly { fromMs: number; toMs?: number }[], atMs: number): boolean {
  return windows.some(
    (w) => atMs >= w.fromMs && (w.toMs === undefined || atMs <= w.toMs + 10_000 + (w.toMs - w.fromMs) / 2),
  );
}

export function coordScenario(config: CoordScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? (config.workload === 'ttl' ? 15_000 : 5_000),
    livenessBoundMs: config.livenessBoundMs ?? 15_000,
    setup: (sim) => setupCoord(sim, config),
  };
}

export function setupCoord(sim: Simulation, config: CoordScenarioConfig): ScenarioRun {
  const rng = sim.random;
  const voters: PeerId[] = Array.from({ length: config.voters }, (_, i) => `n${i + 1}`);
  let running = true;

  // Clock skew between voters: constant offsets plus drift, the bound ε taken over the run.
  const driftPpm = config.driftPpm ?? 0;
  const offsets = voters.map(() => between(rng, -config.skewMs, config.skewMs));
  // coord-5-lease-drift: one slow voter, the others fast (tick rates within the lease's bound).
  const leaseClocks = config.leaseDrift && leaseDriftClocks(rng, voters, TICK_MS, config.leaseDrift);
  const drifts = leaseClocks ? leaseClocks.drifts : voters.map(() => between(rng, -driftPpm, driftPpm));
  const horizonMs = 60_000;
  /** ε: the largest difference between two voters' clocks (or a voter and true time) during the run. */
  const skewBoundMs = leaseClocks
    ? resyncedSkewBoundMs(offsets, drifts)
    : Math.max(0, ...offsets) - Math.min(0, ...offsets) + Math.ceil((2 * driftPpm * horizonMs) / 1_000_000) + 1;
  const resync = leaseClocks ? resyncClocks(sim, voters, offsets, skewBoundMs) : undefined;

  // --- what the replicas did -------------------------------------------------
  const outputAt = new Map<number, string>();
  const firstApply = new Map<string, number>(); // "clientId/seq" → index where it took effect
  const fenceEvents: FenceEvent[] = [];
  const grantSeen = new Set<string>();
  const writesAt = new Map<number, { key: string; version: string; who: string }>();
  const versionIndex = new Map<string, number>();
  const deletesAt = new Map<string, number[]>();
  const agreement: string[] = [];
  const timeWentBack: string[] = [];
  const lastTime = new Map<string, number>();
  let applied = 0;
  let stampsBehind = 0;
  let snapshotsInstalled = 0;
  let deliveriesSeen = 0;

  const hosts = new Map<PeerId, CoordHost>();
  const app = (id: PeerId): CoordHost | undefined => {
    const h = sim.host<CoordHost>(id);
    return h.state === 'down' ? undefined : h.app;
  };

  const onFirstApply = appliedRecorder(
    { firstApply, fenceEvents, seen: grantSeen, writesAt, versionIndex, deletesAt },
    () => {
      deliveriesSeen++;
    },
  );

  const undecodable: string[] = [];
  const onApply = (host: PeerId, index: number, _term: number, command: Command | undefined, out: ApplyOutput) => {
    if (command === undefined) {
      // Only this scenario's clients propose: every entry must decode.
      if (undecodable.length < 10) undecodable.push(`${host}: entry ${index} is no coord command`);
      return;
    }
    const h = hosts.get(host);
    const sm = h?.sm;
    if (sm) {
      const tKey = `${host}#${h.ctx.generation}`;
      const prev = lastTime.get(tKey);
      // A command stamped behind state-machine time (a new leader whose clock is behind, or
      // stepped back): the state machine must keep its time, not adopt the stamp.
      if (prev !== undefined && command.nowMs < prev && !outputAt.has(index)) stampsBehind++;
      if (prev !== undefined && sm.timeMs < prev && timeWentBack.length < 10) {
        timeWentBack.push(`${host}: state-machine time went back from ${prev} to ${sm.timeMs} at index ${index}`);
      }
      lastTime.set(tKey, sm.timeMs);
    }
    // Canonical form: a result remembered by a session and restored from a snapshot keeps its
    // content but not its property order, and only the content is the replicas' agreement.
    const text = canonicalJson(out);
    const seen = outputAt.get(index);
    if (seen === undefined) {
      outputAt.set(index, text);
      applied++;
      onFirstApply(index, command, out);
    } else if (seen !== text && agreement.length < 10) {
      agreement.push(`${host} computed a different result at index ${index}: ${text} vs ${seen}`);
    }
    noteWaiting(host, command, out);
  };

  for (const [i, id] of voters.entries()) {
    sim.addHost(
      id,
      async (ctx) => {
        const host = await CoordHost.boot(ctx, {
          voters,
          tickMs: TICK_MS,
          expireEveryMs: 1_000,
          snapshotEveryEntries: config.snapshotEveryEntries ?? 40,
          keepEntries: config.keepEntries ?? 5,
          maxSnapshotChunkBytes: 4096,
          versionKey: VERSION_KEY,
          onApply,
          onRestore: () => {
            if (running) snapshotsInstalled++;
          },
          readOnly: config.readOnly ?? 'safe',
          ...(config.maxSizePerMsgBytes === undefined ? {} : { maxSizePerMsgBytes: config.maxSizePerMsgBytes }),
          onReadServed: (host, lease) => {
            readsServed++;
            if (lease) leaseReadsServed++;
            if (deposed(host)) readsServedDeposed++;
          },
          onFailedFast: (_host, how) => {
            if (running) casFailedFast++;
            if (running && how === 'superseded') casHeldSuperseded++;
          },
        });
        hosts.set(id, host);
        return host;
      },
      {
        disk: config.disk,
        clock: { offsetMs: offsets[i] as number, driftPpm: drifts[i] as number },
      },
    );
  }

  // --- clients ----------------------------------------------------------------
  const recorders: Record<ModelName, HistoryRecorder> = {
    entry: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
    lease: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
    lock: new HistoryRecorder({ nowMs: () => sim.nowMs(), maxEvents: 200_000 }),
  };
  const waitingCalls = new Map<string, Client>(); // "clientId/seq" → client
  const unexpected: string[] = [];
  const acked: AckedWrite[] = [];
  let calls = 0;
  let readsViaIndex = 0;
  let readsServed = 0;
  let leaseReadsServed = 0;
  /** Reads asked of (and answered by) a member that believed it led while another led a later term. */
  let readsAtDeposedLeader = 0;
  let readsServedDeposed = 0;
  /** CASes a leader answered as failed at a read point, without the log. */
  let casFailedFast = 0;
  let casHeldSuperseded = 0;
  const deposed = (id: PeerId): boolean => {
    const t = app(id)?.driver.status();
    if (t?.state !== 'leader') return false;
    return voters.some((v) => {
      const o = app(v)?.driver.status();
      return o?.state === 'leader' && o.term > t.term;
    });
  };
  let retries = 0;
  let gaveUp = 0;

  function leaderGuess(c: Client): PeerId | undefined {
    const cur = c.target === undefined ? undefined : app(c.target);
    // Now and then a client asks around even though its host still claims to lead: clients
    // split between a deposed leader that does not know it yet and its successor.
    const pinned = c.pinned === true && c.call?.viaRead === true;
    if (cur?.isLeader() && (pinned || rng.int(3) !== 0)) return c.target;
    // Ask a random live voter who leads (what a redirect would tell the client).
    const live = voters.filter((v) => app(v) !== undefined && sim.host(v).state === 'up');
    if (live.length === 0) return undefined;
    const asked = app(live[rng.int(live.length)] as PeerId);
    const lead = asked?.driver.status().lead;
    if (lead && voters.includes(lead)) return lead;
    return live[rng.int(live.length)];
  }

  function send(c: Client): void {
    const call = c.call;
    if (!call) return;
    call.lastSentAt = sim.nowMs();
    const target = leaderGuess(c);
    c.target = target;
    if (target === undefined) return;
    const h = app(target);
    if (!h || sim.host(target).state !== 'up') return;
    const done = (r: CommandResult) => {
      if (c.call === call) answer(c, r);
    };
    // The member stopped waiting (it stepped down): a waiting lock acquire is asked again.
    const failed = () => {
      if (c.call === call) call.waiting = false;
    };
    if (call.viaRead) {
      if (deposed(target)) readsAtDeposedLeader++;
      h.read(call.op, done, failed);
      return;
    }
    h.submit(call.command, done, failed, call.sends++ > 0);
  }

  /**
   * The member answers a blocking acquire only with its grant (or the wait's end): that it is
   * waiting shows in the applied output, on the host the client asked.
   */
  function noteWaiting(host: PeerId, command: Command, out: ApplyOutput): void {
    if (command.clientId === undefined || !out.result.ok || out.result.value.type !== 'lock_waiting') return;
    const c = waitingCalls.get(`${command.clientId}/${command.seq}`);
    if (c?.call && c.target === host) answer(c, out.result);
  }

  function answer(c: Client, result: CommandResult): void {
    const call = c.call;
    if (!call) return;
    if (result.ok && result.value.type === 'lock_waiting') {
      call.waiting = true;
      call.giveUpAt = Math.max(call.giveUpAt, sim.nowMs() + GIVE_UP_MS);
      return;
    }
    close(c, result);
  }

  function close(c: Client, result: CommandResult | undefined): void {
    const call = c.call;
    if (!call) return;
    c.call = undefined;
    const seq = call.command.seq;
    if (call.command.clientId !== undefined && seq !== undefined) {
      waitingCalls.delete(`${call.command.clientId}/${seq}`);
      c.session?.done(seq);
    }
    call.finish(result);
  }

  /** Starts a call; `finish` records its outcome (undefined: gave up, outcome unknown). */
  function start(c: Client, op: Operation, finish: (r: CommandResult | undefined) => void, viaRead = false): void {
    const now = sim.nowMs();
    let command: Omit<Command, 'nowMs'>;
    if (viaRead) {
      command = { op }; // never enters the log: no session number
    } else if (c.session) {
      const { nowMs: _ignored, ...rest } = c.session.command(op, 0);
      command = rest;
      waitingCalls.set(`${command.clientId}/${command.seq}`, c);
    } else {
      command = { op };
    }
    calls++;
    c.call = {
      op,
      command,
      invokedAt: now,
      lastSentAt: now,
      sends: 0,
      giveUpAt: now + GIVE_UP_MS,
      waiting: false,
      viaRead,
      finish,
    };
    send(c);
  }

  /** A client's tick: give up, retry, or start its next operation. */
  function tick(c: Client, next: (c: Client) => void): void {
    sim.schedule(between(rng, 30, 150), () => {
      if (!running) return;
      const now = sim.nowMs();
      const call = c.call;
      if (call) {
        if (now >= call.giveUpAt) {
          gaveUp++;
          close(c, undefined);
        } else if (now - call.lastSentAt >= RETRY_MS && !(call.waiting && c.target && app(c.target))) {
          retries++;
          send(c);
        }
      } else if (!c.session) {
        start(c, { type: 'register_session' }, (r) => {
          if (r?.ok && r.value.type === 'session') c.session = new SessionSequencer(r.value.clientId, 8);
        });
      } else {
        next(c);
      }
      tick(c, next);
    });
  }

  const expect = (what: string, r: CommandResult) => {
    if (unexpected.length < 10) unexpected.push(`${what}: ${JSON.stringify(r)}`);
  };

  /** Records the outcome of a call in the `model` history (see docs/checkers.md for the shapes). */
  function record(
    model: ModelName,
    c: Client,
    f: string,
    key: string,
    input: HistoryValue,
    op: Operation,
    okValue: (r: CommandResult & { ok: true }) => HistoryValue,
    observed: Record<string, string>,
    after?: (r: CommandResult) => void,
  ): void {
    const rec = recorders[model];
    rec.invoke(c.name, f, input, key);
    // Half the reads skip the log: ReadIndex (or the lease, with leaseBased reads) and the state machine.
    const viaRead = (op.type === 'get' || op.type === 'lock_inspect') && (c.pinned === true || rng.int(2) === 0);
    if (viaRead) readsViaIndex++;
    start(
      c,
      op,
      (r) => {
        if (r === undefined) {
          rec.info(c.name, null, { error: 'timeout' });
          return;
        }
        if (r.ok) {
          rec.ok(c.name, okValue(r));
        } else {
          const code = observed[r.error.code];
          if (code === ABSENT) rec.ok(c.name, null);
          else if (code !== undefined) rec.fail(c.name, null, { error: code });
          else {
            // Not an observation the model reads: unknown outcome, and reported as unexpected.
            rec.info(c.name, null, { error: r.error.code });
            expect(`${c.name} ${f} ${key}`, r);
          }
        }
        after?.(r);
      },
      viaRead,
    );
  }

  const mixedOp = mixedWorkload({
    rng,
    timeAware: !config.nemesis.clockJumps,
    skewBoundMs,
    record,
    versionIndex,
    acked,
    hotCas: config.workload === 'hot-cas',
  });
  const leaderTerm = (): number => {
    let t = 0;
    for (const v of voters) {
      const a = app(v);
      if (a?.isLeader()) t = Math.max(t, a.driver.status().term);
    }
    return t;
  };
  const ttl = ttlWorkload({
    sim,
    rng,
    isRunning: () => running,
    start,
    leaderTerm,
    skewBoundMs,
    catchingUp: (atMs) => catchingUpAfterOutage(nemesis.outageWindows, atMs),
  });

  // --- start ------------------------------------------------------------------
  const clientCount = config.workload === 'ttl' ? 2 : (config.clients ?? 6);
  const clients: Client[] = Array.from({ length: clientCount }, (_, i) => ({
    name: `c${i}`,
    session: undefined,
    target: undefined,
    call: undefined,
    versions: new Map(),
    leases: new Map(),
    locks: new Map(),
  }));
  if (config.workload !== 'ttl') {
    for (const c of clients) tick(c, mixedOp);
  } else {
    const [writer, watcher] = clients as [Client, Client];
    tick(writer, () => {});
    tick(watcher, () => {});
    const begin = () => {
      if (!running) return;
      if (writer.session && watcher.session && !writer.call) ttl.ttlRound(writer, watcher, 0);
      else sim.schedule(100, begin);
    };
    sim.schedule(100, begin);
  }

  // --- continuous invariants ----------------------------------------------------
  sim.invariant('coord', () => {
    for (const id of voters) {
      const a = app(id);
      if (a?.fatal !== undefined) throw violation('coord/driver-healthy', `${id}: driver stopped: ${String(a.fatal)}`);
    }
    if (agreement.length > 0) throw violation('coord/replica-agreement', agreement.join('; '));
    if (undecodable.length > 0) throw violation('coord/undecodable-entry', undecodable.join('; '));
    if (timeWentBack.length > 0) throw violation('coord/state-machine-time-monotonic', timeWentBack.join('; '));
    if (ttl.violations.length > 0) throw violation('coord/ttl-under-skew', ttl.violations.join('; '));
  });

  // Raft's own safety properties, over the same group, after every event.
  const raftInvariants = new InvariantRegistry<RaftClusterView>();
  registerRaftInvariants(raftInvariants);
  sim.invariant('raft', () => raftInvariants.assertInvariants(raftClusterView(voters, app)));
  const raftGuards = new RaftGuardWatch();
  sim.invariant('raft/guards', () => raftGuards.observe(voters, app));
  // A deposed leader that still believes it leads while a successor leads a later term:
  // the state a lease read must not be served in (counted once per deposed leader and term).
  const overlaps = new Set<string>();
  sim.invariant('coord/guards', () => {
    let top = 0;
    for (const id of voters) {
      const r = app(id)?.driver.probe;
      if (r?.state === 'leader') top = Math.max(top, r.term);
    }
    for (const id of voters) {
      const r = app(id)?.driver.probe;
      if (r?.state === 'leader' && r.term < top && overlaps.size < 10_000) overlaps.add(`${id}@${r.term}`);
    }
  });

  const directors = installDirectors(sim, config, {
    voters,
    app,
    clients,
    isRunning: () => running,
    leaseClocks,
    resend: (c) => {
      retries++;
      send(c);
    },
  });

  const nemesis = new Nemesis(sim, voters, {
    ...config.nemesis,
    leader: () => highestTermLeader(voters, app)?.ctx.id,
    leads: (h) => app(h)?.isLeader() ?? false,
  }).start();
  if (config.network) sim.network.configure(config.network);

  const leader = (): CoordHost | undefined => highestTermLeader(voters, app);

  const linearizable = (model: Model<unknown, unknown, unknown>, name: ModelName) => {
    const r = checkLinearizability(model, recorders[name].events(), { maxSteps: 5_000_000 });
    if (r.verdict === 'not linearizable') {
      throw violation(
        `coord/linearizable-${name}`,
        r.counterexample ? formatCounterexample(r.counterexample) : 'not linearizable',
      );
    }
    if (r.verdict === 'unknown') {
      linUnknown++;
      unknownChecks.push(`coord/linearizable-${name}: unknown (${r.reason}) over ${r.operations} operations`);
    }
    linOps += r.operations;
  };
  let linUnknown = 0;
  const unknownChecks: string[] = [];
  let linOps = 0;
  let durabilityChecked = 0;

  return {
    quiesce() {
      running = false;
      nemesis.stop();
      directors.stop();
      // Calls still in flight stay open in the histories (indeterminate).
    },
    converged() {
      const l = leader();
      return l !== undefined && raftGroupConverged(l, voters, app);
    },
    async check() {
      if (unexpected.length > 0) throw violation('coord/unexpected-error', unexpected.join('; '));
      checkSnapshotAgreement('coord', voters, app);
      linearizable(parleyEntryModel as Model<unknown, unknown, unknown>, 'entry');
      linearizable(parleyLeaseModel as Model<unknown, unknown, unknown>, 'lease');
      linearizable(parleyLockModel as Model<unknown, unknown, unknown>, 'lock');
      const fencing = checkFencing(fenceEvents);
      if (!fencing.ok) throw violation('coord/fencing', JSON.stringify(fencing.violations.slice(0, 3)));

      await checkDurabilityAfterRestart(
        sim,
        'coord',
        voters,
        (id) => app(id)?.storage,
        { acked, versionIndex, deletesAt, writesAt },
        { versionKey: VERSION_KEY, keys: ENTRY_KEYS },
        (writes) => {
          durabilityChecked += writes;
        },
      );
    },
    inconclusive: () => unknownChecks.slice(),
    metrics() {
      return {
        voters: config.voters,
        calls,
        retries,
        gaveUp,
        applied,
        deliveries: deliveriesSeen,
        historyEvents: recorders.entry.size + recorders.lease.size + recorders.lock.size,
        linearizabilityOps: linOps,
        linearizabilityUnknown: linUnknown,
        fenceEvents: fenceEvents.length,
        ackedWrites: acked.length,
        durabilityChecked,
        ttlRounds: ttl.stats.rounds,
        ttlRoundsWithLeaderChange: ttl.stats.roundsWithLeaderChange,
        ttlChecksEarly: ttl.stats.checksEarly,
        ttlChecksLate: ttl.stats.checksLate,
        ...(config.nemesis.outages
          ? { outages: nemesis.stats.outages, ttlChecksLateExcused: ttl.stats.checksLateExcused }
          : {}),
        skewBoundMs,
        partitions: nemesis.stats.partitions,
        crashes: nemesis.stats.crashes,
        pauses: nemesis.stats.pauses,
        snapshotsInstalled,
        'guard.oldTermCommitByCount': raftGuards.oldTermCommitByCount,
        'guard.installSnapshot': snapshotsInstalled,
        'guard.stampBehindStateMachineTime': stampsBehind,
        readsViaIndex,
        readsServed,
        'guard.leaseReadsServed': leaseReadsServed,
        'guard.deposedLeaderStillLeads': overlaps.size,
        'guard.readsAtDeposedLeader': readsAtDeposedLeader,
        readsServedDeposed,
        'guard.casFailedFast': casFailedFast,
        'guard.casHeldSuperseded': casHeldSuperseded,
        ...directors.metrics(resync?.maxSpreadMs ?? 0),
      };
    },
  };
}
