/**
 * `coord-*` workloads: the mixed workload (entries, claims, leases, locks and fenced writes
 * recorded in the parley-entry, parley-lease and parley-lock histories) and the TTL rounds of
 * `coord-*-ttl-skew`. ./coord-setup.ts owns the clients and calls these once per client tick.
 */

import type { AckedWrite, HistoryValue } from '@parley/check';
import type { CommandResult, Entry, LeaseDocument } from '@parley/coord';
import type { Simulation } from '@parley/sim';
import { between } from '@parley/sim';
import {
  ABSENT,
  CLAIM_KEYS,
  type Client,
  ENTRY_KEYS,
  LEASE_KEYS,
  LOCK_KEYS,
  type RecordCall,
  type StartCall,
} from './config.js';

export interface MixedWorkloadDeps {
  readonly rng: Simulation['random'];
  /** Whether grants and renewals carry their TTL and ε into the histories (no clock jumps). */
  readonly timeAware: boolean;
  readonly skewBoundMs: number;
  readonly record: RecordCall;
  /** Entry version → log index where it was first written. */
  readonly versionIndex: ReadonlyMap<string, number>;
  /** Acknowledged writes, for the durability check. */
  readonly acked: AckedWrite[];
  /** Every client CASes one key (`hot-cas`): it learns the version from each answer, a failure's `actual` too. */
  readonly hotCas?: boolean;
}

/** The mixed workload: returns a client's next-operation step. */
export function mixedWorkload(deps: MixedWorkloadDeps): (c: Client) => void {
  const { rng, skewBoundMs, record, versionIndex, acked } = deps;
  /**
   * Grants and renewals carry their TTL and the clock bound ε into the lease and lock
   * histories: the models then refuse a takeover (or a `free`, or a `lease_lost`) that
   * completed before invoke + TTL − ε. ε is the skew bound; with clock jumps (which add up)
   * there is no fixed bound and the histories stay time-free.
   */
  const timeAware = deps.timeAware;
  const timed = (ttlSeconds: number): { ttlMs?: number; skewMs?: number } =>
    timeAware ? { ttlMs: ttlSeconds * 1_000, skewMs: skewBoundMs } : {};
  const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;
  let valueCounter = 0;
  type SetOk = (r: CommandResult & { ok: true }) => HistoryValue;
  type After = (r: CommandResult) => void;

  /** An entry `set` of `value`: a CAS on `ifVersion` when given (a missing key fails it as a mismatch). */
  function entrySet(
    c: Client,
    key: string,
    value: number,
    ifVersion: string | undefined,
    ok: SetOk,
    after: After,
  ): void {
    if (ifVersion === undefined) {
      record('entry', c, 'set', key, { value }, { type: 'set', namespace: 'kv', key, value }, ok, {}, after);
      return;
    }
    record(
      'entry',
      c,
      'set',
      key,
      { value, ifVersion },
      { type: 'set', namespace: 'kv', key, value, ifVersion },
      ok,
      { version_mismatch: 'version_mismatch', key_not_found: 'version_mismatch' },
      after,
    );
  }

  /**
   * `hot-cas`: a CAS on one key with the version this client last learned — from a win, from a
   * failure's `details.actual` (as a client retrying a contended CAS does), or from a read (one
   * call in eight) — or a plain set while it knows none. Pinned clients too.
   */
  let latest: string | undefined;
  function hotCasOp(c: Client): void {
    const key = ENTRY_KEYS[0] as string;
    // A client pinned to a deposed leader CASes with the version last learned by anyone (told
    // by another client, say): one its leader may not have; it must not fail it from stale state.
    const seen = c.pinned ? latest : c.versions.get(key);
    const value = ++valueCounter;
    if (rng.int(8) === 0) {
      entryGet(c, key);
      return;
    }
    const learn = (r: CommandResult) => {
      if (r.ok && r.value.type === 'entry') {
        const v = r.value.entry.version;
        c.versions.set(key, v);
        latest = v;
        const index = versionIndex.get(v);
        if (index !== undefined) acked.push({ key, version: v, index });
      } else if (!r.ok && r.error.code === 'version_mismatch') {
        const actual = (r.error.details as { actual?: unknown }).actual;
        if (typeof actual === 'string') c.versions.set(key, actual);
        else c.versions.delete(key);
      }
    };
    const setOk = (r: CommandResult & { ok: true }): HistoryValue => ({
      version: (r.value as { entry: Entry }).entry.version,
    });
    entrySet(c, key, value, seen, setOk, learn);
  }

  function mixedOp(c: Client): void {
    if (deps.hotCas === true) {
      hotCasOp(c);
      return;
    }
    if (c.pinned) {
      readOp(c);
      return;
    }
    const roll = rng.int(100);
    const value = ++valueCounter;
    if (roll < 35) {
      const key = pick(ENTRY_KEYS);
      const kind = rng.int(6);
      const seen = c.versions.get(key);
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
        entryGet(c, key);
      } else if (kind === 1 || kind === 2) {
        entrySet(c, key, value, kind === 2 ? seen : undefined, setOk, ackSet);
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
      claimGet(c, pick(CLAIM_KEYS));
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
        leaseGet(c, key);
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
        // An expired, not re-granted lock renews as lease_lost: the grant is over.
        { fence_stale: 'fence_stale', lease_lost: 'lease_lost' },
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
      lockInspect(c, key);
    }
  }

  function entryGet(c: Client, key: string): void {
    record(
      'entry',
      c,
      'get',
      key,
      null,
      { type: 'get', namespace: 'kv', key },
      (r) => {
        const e = (r.value as { entry: Entry }).entry;
        c.versions.set(key, e.version);
        return { value: e.value as HistoryValue, version: e.version };
      },
      { key_not_found: 'key_not_found' },
      (r) => {
        if (!r.ok) c.versions.delete(key);
      },
    );
  }

  function claimGet(c: Client, key: string): void {
    record(
      'entry',
      c,
      'get',
      key,
      null,
      { type: 'get', namespace: 'kv', key },
      (r) => {
        const e = (r.value as { entry: Entry }).entry;
        return { value: e.value as HistoryValue, version: e.version };
      },
      { key_not_found: 'key_not_found' },
    );
  }

  function leaseGet(c: Client, key: string): void {
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

  function lockInspect(c: Client, key: string): void {
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

  /** A pinned client's step: one read of any kind, on any key. */
  function readOp(c: Client): void {
    const kind = rng.int(4);
    if (kind === 0) entryGet(c, pick(ENTRY_KEYS));
    else if (kind === 1) claimGet(c, pick(CLAIM_KEYS));
    else if (kind === 2) leaseGet(c, pick(LEASE_KEYS));
    else lockInspect(c, pick(LOCK_KEYS));
  }

  return mixedOp;
}

export interface TtlWorkloadDeps {
  readonly sim: Simulation;
  readonly rng: Simulation['random'];
  readonly isRunning: () => boolean;
  readonly start: StartCall;
  /** The highest term a live voter leads in (0: none). */
  readonly leaderTerm: () => number;
  readonly skewBoundMs: number;
  /**
   * True while state-machine time may lag the clocks by more than ε: during and after a
   * leaderless stretch longer than `maxTimeStepMs`, until the catch-up is over. Deadlines
   * then fall due late by design (docs/guarantees.md), so a late expiry is not judged there;
   * an early one always is.
   */
  readonly catchingUp?: (atMs: number) => boolean;
}

export interface TtlWorkload {
  /** Starts round `round` (and, when it ends, the next one). */
  ttlRound(writer: Client, watcher: Client, round: number): void;
  /** Expiry seen too early or too late (checked continuously). */
  readonly violations: readonly string[];
  readonly stats: {
    rounds: number;
    roundsWithLeaderChange: number;
    checksEarly: number;
    checksLate: number;
    /** Late-side checks not judged because state-machine time was catching up. */
    checksLateExcused: number;
  };
}

/** The TTL workload of `coord-*-ttl-skew`. */
export function ttlWorkload(deps: TtlWorkloadDeps): TtlWorkload {
  const { sim, rng, isRunning, start, leaderTerm, skewBoundMs } = deps;
  const ttlViolations: string[] = [];
  const stats = { rounds: 0, roundsWithLeaderChange: 0, checksEarly: 0, checksLate: 0, checksLateExcused: 0 };
  /** Is a late-side check invoked at `atMs` judged? */
  const judgeLate = (atMs: number): boolean => {
    if (deps.catchingUp?.(atMs)) {
      stats.checksLateExcused++;
      return false;
    }
    return true;
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
        stats.rounds++;
        setTimeoutRound();
      }
    };
    const setTimeoutRound = () =>
      sim.schedule(between(rng, 50, 300), () => isRunning() && ttlRound(writer, watcher, round + 1));

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
        if (!isRunning() || (entryDone && leaseDone)) return;
        if (watcher.call) return poll();
        if (!entryDone && entryWritten) {
          const w = entryWritten;
          const invokedAt = sim.nowMs();
          start(watcher, { type: 'get', namespace: 'ttl', key: entryKey }, (r) => {
            const answeredAt = sim.nowMs();
            if (r && !r.ok && r.error.code === 'key_not_found') {
              stats.checksEarly++;
              if (answeredAt < w.invokedAt + ttlMs - skewBoundMs) {
                ttlViolations.push(
                  `entry ${entryKey} (ttl ${ttlMs} ms, written from t=${w.invokedAt}) read as gone at t=${answeredAt}, before deadline − ε (${skewBoundMs} ms)`,
                );
              }
              entryDone = true;
              finishRound();
            } else if (r?.ok) {
              stats.checksLate++;
              if (invokedAt > w.answeredAt + ttlMs + skewBoundMs && judgeLate(invokedAt)) {
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
                stats.checksEarly++;
                if (answeredAt < l.invokedAt + ttlMs - skewBoundMs) {
                  ttlViolations.push(
                    `lease ${leaseKey} (ttl ${ttlMs} ms, taken from t=${l.invokedAt}) stolen at t=${answeredAt}, before deadline − ε (${skewBoundMs} ms)`,
                  );
                }
                if (leaderTerm() !== l.term) stats.roundsWithLeaderChange++;
                leaseDone = true;
                finishRound();
              } else if (r && !r.ok && r.error.code === 'lock_held') {
                stats.checksLate++;
                if (invokedAt > l.answeredAt + ttlMs + skewBoundMs && judgeLate(invokedAt)) {
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
  return { ttlRound, violations: ttlViolations, stats };
}
