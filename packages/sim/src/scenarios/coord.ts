/**
 * `coord-*`: @parley/coord's state machine applied by a real Raft group of 3
 * or 5 voters (./coord-host.ts) under faults, driven by simulated clients.
 *
 * Clients register a session through the log, then issue one operation at a
 * time — set, CAS (`ifVersion`), create-only (`ifNotExists`), delete, get,
 * claim, lease acquire/renew/write/release/get, lock acquire (sometimes a
 * blocking wait)/renew/release/inspect and fenced writes — to the host they
 * believe leads, retrying the same (client id, seq) after a timeout or a
 * leader change; a call unanswered for long is recorded as indeterminate.
 * Voters' clocks are skewed; the leader stamps every command with its clock.
 *
 * Checked after every event: Raft's safety invariants (election safety, log
 * matching, leader completeness, state-machine safety), no driver stopped, every replica computes the
 * same result for the same log index, state-machine time never goes back on
 * a replica. After healing: byte-identical snapshots on every voter; the
 * histories are linearizable under the parley-entry, parley-lease and
 * parley-lock models (per key); the fencing checker over the applied command
 * stream; the durability checker over each voter's disk after a crash and
 * restart of every voter.
 *
 * `coord-*-ttl-skew` runs TTL rounds instead: a fresh entry or lease per
 * round is written with a short TTL, then polled by another client while
 * the leader changes. Expiry (a read finding it gone, a contender taking the
 * lease) must never happen before the deadline minus the skew bound, and a
 * lease must be free once its deadline plus the skew bound has passed (a
 * leader change neither resets nor extends the remaining time).
 */

import {
  type ApplyOutput,
  type Command,
  type CommandResult,
  CoordStateMachine,
  canonicalJson,
  decodeCommand,
  type Entry,
  type LeaseDocument,
  type Operation,
  SessionSequencer,
} from '@parley/coord';
import type { PeerId } from '@parley/interface';
import { type AckedWrite, checkDurability } from '../check/durability.js';
import { checkFencing, type FenceEvent } from '../check/fencing.js';
import { HistoryRecorder, type HistoryValue } from '../check/history.js';
import { InvariantRegistry } from '../check/invariants.js';
import { checkLinearizability, formatCounterexample } from '../check/linearizability.js';
import type { Model } from '../check/model.js';
import { parleyEntryModel, parleyLeaseModel, parleyLockModel } from '../check/parley-models.js';
import { type RaftClusterView, registerRaftInvariants } from '../check/raft-invariants.js';
import { between } from '../kernel.js';
import { Nemesis, type NemesisOptions, PARTITION_KINDS } from '../nemesis.js';
import { registerScenario, type Scenario, type ScenarioRun } from '../scenario.js';
import { type Simulation, violation } from '../simulation.js';
import { CoordHost } from './coord-host.js';
import { highestTermLeader, raftClusterView, raftGroupConverged } from './raft-group.js';
import { RaftGuardWatch } from './raft-guards.js';

export interface CoordScenarioConfig {
  name: string;
  description: string;
  voters: 3 | 5;
  workload: 'mixed' | 'ttl';
  clients?: number;
  network?: {
    lossRate?: number;
    duplicateRate?: number;
    reorder?: boolean;
    latency?: { minMs: number; meanMs: number; maxMs: number };
  };
  nemesis: NemesisOptions;
  /**
   * Cut the leader off just before a check-quorum round, for 2.5–4 s, every few seconds:
   * it passes that round on the answers it already had and believes it leads for another
   * election timeout while the others elect a successor; clients split between the two.
   */
  cutLeaderAfterQuorumCheck?: boolean;
  /** How leaders confirm reads that skip the log: ReadIndex (`safe`, default) or the lease. */
  readOnly?: 'safe' | 'leaseBased';
  /** Voters' clock offsets are drawn in ±skewMs (constant), plus ±driftPpm. */
  skewMs: number;
  driftPpm?: number;
  disk?: { tornWriteRate?: number };
  /** Snapshot cadence (entries) and entries kept behind it: small values force InstallSnapshot. */
  snapshotEveryEntries?: number;
  keepEntries?: number;
  safetyMs?: number;
  livenessBoundMs?: number;
}

const TICK_MS = 100;
/** A client re-sends an unanswered command after this long (to the host it now believes leads). */
const RETRY_MS = 600;
/** A client gives up on a call after this long: the call is recorded as indeterminate (`info`). */
const GIVE_UP_MS = 4_000;
const VERSION_KEY = 'sim-cluster';
/** In a call's map of observed error codes: this error is an `ok` read of nothing. */
const ABSENT = '=absent';

const ENTRY_KEYS = ['k0', 'k1'];
const CLAIM_KEYS = ['c0', 'c1'];
const LEASE_KEYS = ['l0', 'l1'];
const LOCK_KEYS = ['m0', 'm1'];

export function coordScenario(config: CoordScenarioConfig): Scenario {
  return {
    name: config.name,
    description: config.description,
    safetyMs: config.safetyMs ?? (config.workload === 'ttl' ? 15_000 : 5_000),
    livenessBoundMs: config.livenessBoundMs ?? 15_000,
    setup: (sim) => setupCoord(sim, config),
  };
}

type ModelName = 'entry' | 'lease' | 'lock';

/** One call in flight of a client. */
interface Call {
  readonly op: Operation;
  /** Session-numbered command (undefined for register_session). */
  readonly command: Omit<Command, 'nowMs'>;
  readonly invokedAt: number;
  lastSentAt: number;
  giveUpAt: number;
  /** register_session is routed by the log position its proposal got. */
  regPosition?: { index: number; term: number };
  /** `lock_waiting` arrived: the answer comes as a delivery. */
  waiting: boolean;
  /** A read served through ReadIndex or the lease instead of the log. */
  viaRead: boolean;
  finish(result: CommandResult | undefined): void;
}

interface Client {
  readonly name: string;
  session: SessionSequencer | undefined;
  target: PeerId | undefined;
  call: Call | undefined;
  versions: Map<string, string>;
  leases: Map<string, number>;
  locks: Map<string, number>;
}

function setupCoord(sim: Simulation, config: CoordScenarioConfig): ScenarioRun {
  const rng = sim.random;
  const voters: PeerId[] = Array.from({ length: config.voters }, (_, i) => `n${i + 1}`);
  let running = true;

  // Clock skew between voters: constant offsets plus drift, the bound ε taken over the run.
  const driftPpm = config.driftPpm ?? 0;
  const offsets = voters.map(() => between(rng, -config.skewMs, config.skewMs));
  const drifts = voters.map(() => between(rng, -driftPpm, driftPpm));
  const horizonMs = 60_000;
  /** ε: the largest difference between two voters' clocks (or a voter and true time) during the run. */
  const skewBoundMs =
    Math.max(0, ...offsets) - Math.min(0, ...offsets) + Math.ceil((2 * driftPpm * horizonMs) / 1_000_000) + 1;

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

  const onFirstApply = (index: number, command: Command, out: ApplyOutput) => {
    const who = command.clientId === undefined ? undefined : `${command.clientId}/${command.seq}`;
    if (who !== undefined && !firstApply.has(who)) firstApply.set(who, index);
    const op = command.op;
    const r = out.result;
    const grant = (resource: string, fence: number, id: string) => {
      if (grantSeen.has(id)) return; // a retried command answered from the session table
      grantSeen.add(id);
      fenceEvents.push({ type: 'grant', resource, fence });
    };
    if (op.type === 'lock_acquire' && r.ok && r.value.type === 'lock' && who) {
      grant(`lock:${op.key}`, r.value.lock.fence, who);
    }
    for (const d of out.deliveries) {
      deliveriesSeen++;
      if (d.result.ok && d.result.value.type === 'lock') {
        grant(`lock:${d.result.value.lock.key}`, d.result.value.lock.fence, `${d.clientId}/${d.seq}`);
      }
    }
    if (op.type === 'lease_acquire' && r.ok && r.value.type === 'lease' && who) {
      grant(`lease:${op.key}`, r.value.lease.epoch, who);
    }
    if (op.type === 'lease_write' && who && !grantSeen.has(`w${who}`)) {
      grantSeen.add(`w${who}`);
      fenceEvents.push({ type: 'write', resource: `lease:${op.key}`, fence: op.epoch, accepted: r.ok });
    }
    if (op.type === 'set' && op.fence && who && !grantSeen.has(`w${who}`)) {
      grantSeen.add(`w${who}`);
      fenceEvents.push({ type: 'write', resource: `lock:${op.fence.key}`, fence: op.fence.token, accepted: r.ok });
    }
    if (op.type === 'delete' && op.namespace === 'kv' && r.ok && who && firstApply.get(who) === index) {
      let list = deletesAt.get(op.key);
      if (list === undefined) deletesAt.set(op.key, (list = []));
      list.push(index);
    }
    if (op.type === 'set' && op.namespace === 'kv' && r.ok && r.value.type === 'entry' && who) {
      const v = r.value.entry.version;
      if (!versionIndex.has(v)) {
        versionIndex.set(v, index);
        writesAt.set(index, { key: op.key, version: v, who });
      }
    }
  };

  const onApply = (host: PeerId, index: number, term: number, command: Command, out: ApplyOutput) => {
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
    route(host, index, term, command, out);
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
          onReadServed: (_host, lease) => {
            readsServed++;
            if (lease) leaseReadsServed++;
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
  let retries = 0;
  let gaveUp = 0;

  function leaderGuess(c: Client): PeerId | undefined {
    const cur = c.target === undefined ? undefined : app(c.target);
    // Now and then a client asks around even though its host still claims to lead: clients
    // split between a deposed leader that does not know it yet and its successor.
    if (cur?.isLeader() && rng.int(3) !== 0) return c.target;
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
    if (call.viaRead) {
      h.read(call.op, (r) => {
        if (c.call === call) answer(c, r);
      });
      return;
    }
    const pos = h.propose(call.command);
    if (call.command.clientId === undefined && pos) call.regPosition = { index: pos.index, term: pos.term };
  }

  function route(host: PeerId, index: number, term: number, command: Command, out: ApplyOutput): void {
    if (command.clientId !== undefined) {
      const c = waitingCalls.get(`${command.clientId}/${command.seq}`);
      if (c && c.target === host) answer(c, out.result);
    } else if (command.op.type === 'register_session') {
      for (const c of clients) {
        const p = c.call?.regPosition;
        if (c.target === host && p && p.index === index && p.term === term) answer(c, out.result);
      }
    }
    for (const d of out.deliveries) {
      const c = waitingCalls.get(`${d.clientId}/${d.seq}`);
      if (c && c.target === host) answer(c, d.result);
    }
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
    const viaRead = (op.type === 'get' || op.type === 'lock_inspect') && rng.int(2) === 0;
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

  // --- mixed workload ---------------------------------------------------------
  /**
   * Grants and renewals carry their TTL and the clock bound ε into the lease and lock
   * histories: the models then refuse a takeover (or a `free`, or a `lease_lost`) that
   * completed before invoke + TTL − ε. ε is the skew bound; with clock jumps (which add up)
   * there is no fixed bound and the histories stay time-free.
   */
  const timeAware = !config.nemesis.clockJumps;
  const timed = (ttlSeconds: number): { ttlMs?: number; skewMs?: number } =>
    timeAware ? { ttlMs: ttlSeconds * 1_000, skewMs: skewBoundMs } : {};
  const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;
  let valueCounter = 0;

  function mixedOp(c: Client): void {
    const roll = rng.int(100);
    const value = ++valueCounter;
    if (roll < 35) {
      const key = pick(ENTRY_KEYS);
      const kind = rng.int(6);
      const seen = c.versions.get(key);
      const entryOk = (r: CommandResult & { ok: true }): HistoryValue => {
        const e = (r.value as { entry: Entry }).entry;
        c.versions.set(key, e.version);
        return { value: e.value as HistoryValue, version: e.version };
      };
      const setOk = (r: CommandResult & { ok: true }): HistoryValue => {
        const e = (r.value as { entry: Entry }).entry;
        c.versions.set(key, e.version);
        return { version: e.version };
      };
      const ackSet = (r: CommandResult) => {
        if (r.ok && r.value.type === 'entry') {
          const v = r.value.entry.version;
          const index = versionIndex.get(v);
          if (index !== undefined) acked.push({ key, version: v, index });
        }
      };
      if (kind === 0) {
        record(
          'entry',
          c,
          'get',
          key,
          null,
          { type: 'get', namespace: 'kv', key },
          entryOk,
          { key_not_found: 'key_not_found' },
          (r) => {
            if (!r.ok) c.versions.delete(key);
          },
        );
      } else if (kind === 1 || (kind === 2 && seen === undefined)) {
        record('entry', c, 'set', key, { value }, { type: 'set', namespace: 'kv', key, value }, setOk, {}, ackSet);
      } else if (kind === 2 && seen !== undefined) {
        record(
          'entry',
          c,
          'set',
          key,
          { value, ifVersion: seen },
          { type: 'set', namespace: 'kv', key, value, ifVersion: seen },
          setOk,
          { version_mismatch: 'version_mismatch', key_not_found: 'version_mismatch' },
          ackSet,
        );
      } else if (kind === 3) {
        record(
          'entry',
          c,
          'set',
          key,
          { value, ifNotExists: true },
          { type: 'set', namespace: 'kv', key, value, ifNotExists: true },
          setOk,
          { key_already_exists: 'key_already_exists' },
          ackSet,
        );
      } else if (kind === 4) {
        const useVersion = seen !== undefined && rng.int(2) === 0;
        record(
          'entry',
          c,
          'delete',
          key,
          useVersion ? { ifVersion: seen } : null,
          useVersion
            ? { type: 'delete', namespace: 'kv', key, ifVersion: seen }
            : { type: 'delete', namespace: 'kv', key },
          () => ({ existed: true }),
          { key_not_found: 'key_not_found', version_mismatch: 'version_mismatch' },
        );
      } else {
        const ck = pick(CLAIM_KEYS);
        record(
          'entry',
          c,
          'claim',
          ck,
          { value },
          { type: 'claim', namespace: 'kv', key: ck, value },
          (r): HistoryValue => {
            const v = r.value as { won: boolean; value: HistoryValue; version: string };
            return v.won ? { won: true, version: v.version } : { won: false, value: v.value, version: v.version };
          },
          {},
        );
      }
      return;
    }
    if (roll < 40) {
      const ck = pick(CLAIM_KEYS);
      record(
        'entry',
        c,
        'get',
        ck,
        null,
        { type: 'get', namespace: 'kv', key: ck },
        (r) => {
          const e = (r.value as { entry: Entry }).entry;
          return { value: e.value as HistoryValue, version: e.version };
        },
        { key_not_found: 'key_not_found' },
      );
      return;
    }
    if (roll < 70) {
      const key = pick(LEASE_KEYS);
      const epoch = c.leases.get(key);
      const holder = c.name;
      const kind = epoch === undefined ? (rng.int(4) === 0 ? 4 : 0) : rng.int(5);
      const lost = (r: CommandResult) => {
        if (!r.ok && r.error.code === 'lease_lost') c.leases.delete(key);
      };
      const ttlSeconds = 1 + rng.int(3);
      if (kind === 0) {
        record(
          'lease',
          c,
          'acquire',
          key,
          { holder, ...timed(ttlSeconds) },
          { type: 'lease_acquire', namespace: 'lease', key, holder, ttlSeconds, state: { by: holder } },
          (r) => {
            const lease = (r.value as { lease: LeaseDocument }).lease;
            c.leases.set(key, lease.epoch);
            return { epoch: lease.epoch };
          },
          { lock_held: 'lock_held' },
        );
      } else if (kind === 1 && epoch !== undefined) {
        record(
          'lease',
          c,
          'renew',
          key,
          { holder, epoch, ...timed(ttlSeconds) },
          { type: 'lease_renew', namespace: 'lease', key, holder, epoch, ttlSeconds },
          () => ({}),
          { lease_lost: 'lease_lost' },
          lost,
        );
      } else if (kind === 2 && epoch !== undefined) {
        record(
          'lease',
          c,
          'write',
          key,
          { holder, epoch },
          { type: 'lease_write', namespace: 'lease', key, holder, epoch, state: { n: value } },
          () => ({}),
          { lease_lost: 'lease_lost' },
          lost,
        );
      } else if (kind === 3 && epoch !== undefined) {
        record(
          'lease',
          c,
          'release',
          key,
          { holder, epoch },
          { type: 'lease_release', namespace: 'lease', key, holder, epoch },
          () => ({}),
          { lease_lost: 'lease_lost' },
          (r) => {
            if (r.ok || (!r.ok && r.error.code === 'lease_lost')) c.leases.delete(key);
          },
        );
      } else {
        record(
          'lease',
          c,
          'get',
          key,
          null,
          { type: 'get', namespace: 'lease', key },
          (r): HistoryValue => {
            const doc = (r.value as { entry: Entry }).entry.value as unknown as LeaseDocument;
            return doc.holder === null ? { holder: null } : { holder: doc.holder, epoch: doc.epoch };
          },
          { key_not_found: ABSENT },
        );
      }
      return;
    }
    const key = pick(LOCK_KEYS);
    const fence = c.locks.get(key);
    const owner = c.name;
    const kind = fence === undefined ? (rng.int(5) === 0 ? 4 : 0) : rng.int(5);
    const forget = (r: CommandResult) => {
      if (!r.ok) c.locks.delete(key);
    };
    const ttlSeconds = 1 + rng.int(3);
    if (kind === 0) {
      const waitSeconds = rng.int(4) === 0 ? 1 : 0;
      record(
        'lock',
        c,
        'acquire',
        key,
        { owner, ...timed(ttlSeconds) },
        {
          type: 'lock_acquire',
          namespace: 'lock',
          key,
          owner,
          ttlSeconds,
          ...(waitSeconds > 0 ? { waitSeconds } : {}),
        },
        (r) => {
          const lock = (r.value as { lock: { fence: number } }).lock;
          c.locks.set(key, lock.fence);
          return { fence: lock.fence };
        },
        { lock_held: 'lock_held' },
      );
    } else if (kind === 1 && fence !== undefined) {
      record(
        'lock',
        c,
        'renew',
        key,
        { owner, fence, ...timed(ttlSeconds) },
        { type: 'lock_renew', namespace: 'lock', key, owner, fence, ttlSeconds },
        () => ({}),
        // An expired, not re-granted lock renews as key_not_found: the grant is over.
        { fence_stale: 'fence_stale', key_not_found: 'lease_lost' },
        forget,
      );
    } else if ((kind === 2 || kind === 3) && fence !== undefined) {
      record(
        'lock',
        c,
        'write',
        key,
        { fence },
        {
          type: 'set',
          namespace: 'fenced',
          key,
          value,
          fence: { namespace: 'lock', key, token: fence },
        },
        () => ({}),
        { fence_stale: 'fence_stale' },
        forget,
      );
    } else if (kind === 4 && fence !== undefined) {
      record(
        'lock',
        c,
        'release',
        key,
        { owner, fence },
        { type: 'lock_release', namespace: 'lock', key, owner, fence },
        (r) => ({ released: (r.value as { released: boolean }).released }),
        {},
        () => c.locks.delete(key),
      );
    } else {
      record(
        'lock',
        c,
        'get',
        key,
        null,
        { type: 'lock_inspect', namespace: 'lock', key },
        (r) => {
          const holder = (r.value as { lock: { holder: { owner: string; fence: number } | null } }).lock.holder;
          return holder === null ? null : { owner: holder.owner, fence: holder.fence };
        },
        {},
      );
    }
  }

  // --- TTL workload -----------------------------------------------------------
  const ttlViolations: string[] = [];
  let ttlRounds = 0;
  let ttlRoundsWithLeaderChange = 0;
  let ttlChecksEarly = 0;
  let ttlChecksLate = 0;
  const leaderTerm = (): number => {
    let t = 0;
    for (const v of voters) {
      const a = app(v);
      if (a?.isLeader()) t = Math.max(t, a.driver.status().term);
    }
    return t;
  };

  /** One round: the writer creates a fresh entry and a fresh lease with a short TTL; the watcher polls both. */
  function ttlRound(writer: Client, watcher: Client, round: number): void {
    const ttlSeconds = 1 + rng.int(3);
    const ttlMs = ttlSeconds * 1_000;
    const entryKey = `e${round}`;
    const leaseKey = `t${round}`;
    let entryWritten: { invokedAt: number; answeredAt: number } | undefined;
    let leaseTaken: { invokedAt: number; answeredAt: number; term: number } | undefined;
    let entryDone = false;
    let leaseDone = false;
    const steps: Array<() => void> = [];
    const finishRound = () => {
      if (entryDone && leaseDone) {
        ttlRounds++;
        setTimeoutRound();
      }
    };
    const setTimeoutRound = () =>
      sim.schedule(between(rng, 50, 300), () => running && ttlRound(writer, watcher, round + 1));

    // Writer: the entry, then the lease.
    steps.push(() => {
      const invokedAt = sim.nowMs();
      start(writer, { type: 'set', namespace: 'ttl', key: entryKey, value: round, ttlSeconds }, (r) => {
        if (r?.ok) entryWritten = { invokedAt, answeredAt: sim.nowMs() };
        else entryDone = true; // outcome unknown or refused: no round to check
        const leaseInvokedAt = sim.nowMs();
        start(
          writer,
          { type: 'lease_acquire', namespace: 'ttl', key: leaseKey, holder: writer.name, ttlSeconds },
          (r2) => {
            if (r2?.ok) leaseTaken = { invokedAt: leaseInvokedAt, answeredAt: sim.nowMs(), term: leaderTerm() };
            else leaseDone = true;
            poll();
            finishRound();
          },
        );
      });
    });

    // Watcher: reads the entry until it is gone, tries to take the lease until it gets it.
    const poll = () => {
      sim.schedule(between(rng, 80, 250), () => {
        if (!running || (entryDone && leaseDone)) return;
        if (watcher.call) return poll();
        if (!entryDone && entryWritten) {
          const w = entryWritten;
          const invokedAt = sim.nowMs();
          start(watcher, { type: 'get', namespace: 'ttl', key: entryKey }, (r) => {
            const answeredAt = sim.nowMs();
            if (r && !r.ok && r.error.code === 'key_not_found') {
              ttlChecksEarly++;
              if (answeredAt < w.invokedAt + ttlMs - skewBoundMs) {
                ttlViolations.push(
                  `entry ${entryKey} (ttl ${ttlMs} ms, written from t=${w.invokedAt}) read as gone at t=${answeredAt}, before deadline − ε (${skewBoundMs} ms)`,
                );
              }
              entryDone = true;
              finishRound();
            } else if (r?.ok) {
              ttlChecksLate++;
              if (invokedAt > w.answeredAt + ttlMs + skewBoundMs) {
                ttlViolations.push(
                  `entry ${entryKey} (ttl ${ttlMs} ms, acknowledged at t=${w.answeredAt}) still read at t=${invokedAt}, after deadline + ε (${skewBoundMs} ms)`,
                );
              }
            }
            poll();
          });
          return;
        }
        if (!leaseDone && leaseTaken) {
          const l = leaseTaken;
          const invokedAt = sim.nowMs();
          start(
            watcher,
            { type: 'lease_acquire', namespace: 'ttl', key: leaseKey, holder: watcher.name, ttlSeconds: 1 },
            (r) => {
              const answeredAt = sim.nowMs();
              if (r?.ok) {
                ttlChecksEarly++;
                if (answeredAt < l.invokedAt + ttlMs - skewBoundMs) {
                  ttlViolations.push(
                    `lease ${leaseKey} (ttl ${ttlMs} ms, taken from t=${l.invokedAt}) stolen at t=${answeredAt}, before deadline − ε (${skewBoundMs} ms)`,
                  );
                }
                if (leaderTerm() !== l.term) ttlRoundsWithLeaderChange++;
                leaseDone = true;
                finishRound();
              } else if (r && !r.ok && r.error.code === 'lock_held') {
                ttlChecksLate++;
                if (invokedAt > l.answeredAt + ttlMs + skewBoundMs) {
                  ttlViolations.push(
                    `lease ${leaseKey} (ttl ${ttlMs} ms, acknowledged at t=${l.answeredAt}) still held at t=${invokedAt}, after deadline + ε (${skewBoundMs} ms): its time was extended`,
                  );
                }
              }
              poll();
            },
          );
          return;
        }
        poll();
      });
    };
    for (const s of steps) s();
  }

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
  if (config.workload === 'mixed') {
    for (const c of clients) tick(c, mixedOp);
  } else {
    const [writer, watcher] = clients as [Client, Client];
    tick(writer, () => {});
    tick(watcher, () => {});
    const begin = () => {
      if (!running) return;
      if (writer.session && watcher.session && !writer.call) ttlRound(writer, watcher, 0);
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
    if (timeWentBack.length > 0) throw violation('coord/state-machine-time-monotonic', timeWentBack.join('; '));
    if (ttlViolations.length > 0) throw violation('coord/ttl-under-skew', ttlViolations.join('; '));
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
      const r = app(id)?.driver.node.raft;
      if (r?.state === 'leader') top = Math.max(top, r.term);
    }
    for (const id of voters) {
      const r = app(id)?.driver.node.raft;
      if (r?.state === 'leader' && r.term < top && overlaps.size < 10_000) overlaps.add(`${id}@${r.term}`);
    }
  });

  let leaderCuts = 0;
  if (config.cutLeaderAfterQuorumCheck) {
    let cutUntil = -1;
    let nextCut = 1_500 + rng.int(1_000);
    sim.invariant('coord/cut-leader', () => {
      const now = sim.nowMs();
      if (!running) return;
      if (cutUntil >= 0) {
        if (now < cutUntil) return;
        sim.network.heal();
        cutUntil = -1;
        nextCut = now + 1_000 + rng.int(1_500);
        return;
      }
      if (now < nextCut) return;
      // Just before its next check-quorum round: the answers it got since the last one
      // carry it through that round, so it leads on, cut off, for another election timeout.
      const l = highestTermLeader(voters, app);
      const r = l?.driver.node.raft;
      if (!l || !r || r.electionElapsed !== r.electionTimeout - 1) return;
      sim.network.partition([l.ctx.id]);
      cutUntil = now + 2_500 + rng.int(1_500);
      leaderCuts++;
    });
  }

  const nemesis = new Nemesis(sim, voters, {
    ...config.nemesis,
    leader: () => highestTermLeader(voters, app)?.ctx.id,
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
      // Calls still in flight stay open in the histories (indeterminate).
    },
    converged() {
      const l = leader();
      return l !== undefined && raftGroupConverged(l, voters, app);
    },
    async check() {
      if (unexpected.length > 0) throw violation('coord/unexpected-error', unexpected.join('; '));
      // Every voter holds byte-identical state at the same applied index.
      const snaps = voters.map((id) => {
        const a = app(id) as CoordHost;
        return { id, index: a.driver.appliedIndex, bytes: Buffer.from(a.sm.snapshot()).toString('base64') };
      });
      const ref = snaps[0] as (typeof snaps)[number];
      for (const s of snaps) {
        if (s.index === ref.index && s.bytes !== ref.bytes) {
          throw violation('coord/snapshot-agreement', `${s.id} and ${ref.id} differ at applied index ${s.index}`);
        }
      }
      linearizable(parleyEntryModel as Model<unknown, unknown, unknown>, 'entry');
      linearizable(parleyLeaseModel as Model<unknown, unknown, unknown>, 'lease');
      linearizable(parleyLockModel as Model<unknown, unknown, unknown>, 'lock');
      const fencing = checkFencing(fenceEvents);
      if (!fencing.ok) throw violation('coord/fencing', JSON.stringify(fencing.violations.slice(0, 3)));

      // Durability: crash every voter, restart it from its disk, and read what it recovered.
      for (const id of voters) sim.host(id).crash();
      for (const id of voters) sim.host(id).restart();
      await sim.runUntil(() => voters.every((id) => app(id) !== undefined), 1_000);
      for (const id of voters) {
        const a = app(id);
        if (!a) throw violation('coord/durability', `${id} did not boot from its disk`);
        const snap = a.storage.snapshot();
        const snapshotIndex = snap.meta.index;
        const snapshot = new Map<string, { version: string | null; index: number }>();
        if (snap.data.byteLength > 0) {
          const sm = new CoordStateMachine({ versionKey: VERSION_KEY });
          sm.restore(snap.data);
          for (const key of ENTRY_KEYS) {
            const got = sm.query({ type: 'get', namespace: 'kv', key }, sm.timeMs);
            if (got.ok && got.value.type === 'got') {
              const v = got.value.entry.version;
              snapshot.set(key, { version: v, index: versionIndex.get(v) ?? -1 });
            } else {
              // Absent: the snapshot holds the newest delete of that key it covers (none: nothing).
              let at = 0;
              for (const idx of deletesAt.get(key) ?? []) if (idx <= snapshotIndex) at = Math.max(at, idx);
              if (at > 0) snapshot.set(key, { version: null, index: at });
            }
          }
        }
        const entries = new Map<number, { key: string; version: string }>();
        const last = a.storage.lastIndex();
        const first = Math.max(snapshotIndex + 1, a.storage.firstIndex());
        for (const e of first <= last ? a.storage.entries(first, last + 1) : []) {
          const w = writesAt.get(e.index);
          if (!w || e.type !== 'normal' || e.data.byteLength === 0) continue;
          const cmd = decodeCommand(e.data);
          if (`${cmd.clientId}/${cmd.seq}` === w.who) entries.set(e.index, { key: w.key, version: w.version });
        }
        const d = checkDurability(acked, { snapshotIndex, snapshot, entries });
        if (!d.ok) throw violation('coord/durability', `${id}: ${JSON.stringify(d.violations.slice(0, 3))}`);
        durabilityChecked += acked.length;
      }
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
        ttlRounds,
        ttlRoundsWithLeaderChange,
        ttlChecksEarly,
        ttlChecksLate,
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
        leaderCuts,
      };
    },
  };
}

const LOSSY = { lossRate: 0.1, duplicateRate: 0.05, reorder: true, latency: { minMs: 1, meanMs: 8, maxMs: 120 } };

export const COORD_SCENARIOS: readonly Scenario[] = [
  ...([3, 5] as const).map((v) =>
    coordScenario({
      name: `coord-${v}-partition`,
      description: `${v} voters, 6 clients; partitions of every kind, 2% loss with reordering; clocks ±100 ms apart.`,
      voters: v,
      workload: 'mixed',
      network: { lossRate: 0.02, reorder: true },
      nemesis: { partitions: PARTITION_KINDS },
      skewMs: 100,
    }),
  ),
  coordScenario({
    name: 'coord-3-crash',
    description: '3 voters, 6 clients; crashes losing unsynced writes (torn tails), restart from disk; 2% loss.',
    voters: 3,
    workload: 'mixed',
    network: { lossRate: 0.02, duplicateRate: 0.02 },
    nemesis: { crashes: true, maxDown: 1 },
    disk: { tornWriteRate: 0.5 },
    skewMs: 100,
  }),
  coordScenario({
    name: 'coord-3-pause-skew',
    description: '3 voters, 6 clients; paused voters (a paused leader wakes up deposed), clocks ±250 ms with drift.',
    voters: 3,
    workload: 'mixed',
    network: { lossRate: 0.02 },
    nemesis: { pauses: true },
    skewMs: 250,
    driftPpm: 200,
  }),
  coordScenario({
    name: 'coord-5-chaos',
    description:
      '5 voters, 8 clients; lossy network, partitions, crashes, pauses and clogs at once; clocks ±200 ms; snapshot every 10 entries.',
    voters: 5,
    workload: 'mixed',
    clients: 8,
    snapshotEveryEntries: 10,
    keepEntries: 0,
    network: LOSSY,
    nemesis: { partitions: PARTITION_KINDS, crashes: true, pauses: true, clogs: true, maxDown: 2 },
    disk: { tornWriteRate: 0.5 },
    skewMs: 200,
    driftPpm: 100,
  }),
  ...([3, 5] as const).map((v) =>
    coordScenario({
      name: `coord-${v}-lease-reads`,
      description: `${v} voters, 6 clients; leaders answer reads from their lease (half the reads skip the log); the nemesis cuts off and pauses leaders, one-way partitions; clocks ±100 ms with drift.`,
      voters: v,
      workload: 'mixed',
      readOnly: 'leaseBased',
      cutLeaderAfterQuorumCheck: true,
      network: { lossRate: 0.02, reorder: true },
      nemesis: {
        partitions: ['leader', 'leader', 'one-way', 'isolate'],
        pauses: true,
        // Long enough for the rest to elect a successor while the cut-off leader still believes it leads.
        durationMs: { min: 1_500, max: 4_000 },
      },
      skewMs: 100,
      driftPpm: 200,
      safetyMs: 10_000,
    }),
  ),
  coordScenario({
    name: 'coord-5-deposed-leader',
    description:
      '5 voters, 6 clients; the leader is cut off just before a check-quorum round, so it believes it leads while the others elect a successor; clients split between them, half the reads through ReadIndex.',
    voters: 5,
    workload: 'mixed',
    network: { lossRate: 0.01 },
    nemesis: {},
    cutLeaderAfterQuorumCheck: true,
    skewMs: 50,
    safetyMs: 10_000,
  }),
  coordScenario({
    name: 'coord-3-clock-behind',
    description:
      '3 voters, 6 clients; clocks up to ±3 s apart (beyond the 1–2 s election timeout) and stepped ±3 s; the nemesis cuts off or crashes the leader, so a new leader often stamps commands behind state-machine time.',
    voters: 3,
    workload: 'mixed',
    network: { lossRate: 0.02 },
    nemesis: {
      partitions: ['leader', 'leader', 'isolate'],
      crashes: true,
      crashLeader: true,
      clockJumps: true,
      maxClockJumpMs: 3_000,
      maxDown: 1,
    },
    skewMs: 3_000,
    safetyMs: 8_000,
  }),
  coordScenario({
    name: 'coord-5-ttl-clock-behind',
    description:
      '5 voters; TTL rounds while the nemesis cuts off or crashes the leader; clocks up to ±2.5 s apart, beyond the election timeout (the TTL bounds widen with the skew).',
    voters: 5,
    workload: 'ttl',
    network: { lossRate: 0.02 },
    nemesis: { partitions: ['leader', 'leader', 'majority'], crashes: true, crashLeader: true, maxDown: 2 },
    skewMs: 2_500,
  }),
  ...([3, 5] as const).map((v) =>
    coordScenario({
      name: `coord-${v}-ttl-skew`,
      description: `${v} voters; TTL rounds (entries and leases of 1–3 s) under leader changes (partitions, crashes, pauses) with clocks ±200 ms apart.`,
      voters: v,
      workload: 'ttl',
      network: { lossRate: 0.02 },
      nemesis: { partitions: ['isolate', 'majority'], crashes: true, pauses: true, maxDown: v === 3 ? 1 : 2 },
      skewMs: 200,
      driftPpm: 100,
    }),
  ),
];

for (const s of COORD_SCENARIOS) registerScenario(s);
