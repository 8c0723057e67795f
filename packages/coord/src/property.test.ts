/**
 * Randomized properties of the coord state machine. One seed drives every
 * run: PARLEY_SEED=<n> replays a failure exactly (the seed is printed).
 *
 * A run is a random sequence of abstract steps, turned into a concrete Raft
 * log by a builder replica that picks real versions, epochs and fences from
 * what it has seen (so conditional operations hit and miss), with clock
 * advances, clocks going backwards (leader changes), retries of earlier
 * commands and expiry commands mixed in.
 */
import { testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCommand } from './codec.js';
import type { JsonValue } from './json.js';
import { CoordStateMachine } from './state-machine.js';
import type { ApplyOutput, Command, CommandResult, CoordConfig, Operation } from './types.js';

const seed = testSeed(20261129);
console.log(`coord property tests: PARLEY_SEED=${seed}`);

interface Step {
  kind: number;
  a: number;
  b: number;
  c: number;
  advanceMs: number;
  clockBackMs: number;
  leaderChange: boolean;
  client: number;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.noBias(fc.integer({ min: 0, max: 27 })),
  a: fc.noBias(fc.nat(1000)),
  b: fc.noBias(fc.nat(1000)),
  c: fc.noBias(fc.nat(1000)),
  advanceMs: fc.oneof(
    { weight: 4, arbitrary: fc.constant(0) },
    { weight: 5, arbitrary: fc.nat(1500) },
    { weight: 1, arbitrary: fc.nat(15_000) },
    { weight: 1, arbitrary: fc.constant(150_000) }, // long enough for idle sessions to expire
  ),
  clockBackMs: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(10_000) }),
  leaderChange: fc.boolean(),
  client: fc.nat(3),
});

const NSS = ['n1', 'n2'];
const KEYS = ['a', 'b', 'd/e'];
const LOCKS = ['l1', 'l2'];
const HOLDERS = ['h1', 'h2', 'h3'];
// Small bounds so runs hit them: full namespaces and queues, forgotten results, expired sessions.
const CONFIG: CoordConfig = {
  versionKey: 'prop',
  limits: {
    maxKeysPerNamespace: 6,
    maxWaitersPerLock: 3,
    maxResultsPerSession: 8,
    maxCachedResultBytes: 6000,
    sessionTtlSeconds: 120,
  },
};

interface LogItem {
  command: Command;
  index: number;
  term: number;
  /** For retries: the index of the original command. */
  retryOf?: number;
}

interface Built {
  log: LogItem[];
  outputs: ApplyOutput[];
}

function pick<T>(arr: readonly T[], n: number): T {
  return arr[n % arr.length] as T;
}

/** Turns abstract steps into a concrete log by applying them on a builder replica. */
function build(steps: readonly Step[]): Built {
  const sm = new CoordStateMachine(CONFIG);
  const log: LogItem[] = [];
  const outputs: ApplyOutput[] = [];
  let index = 0;
  let term = 1;
  let clock = 1_700_000_000_000;
  const clients: string[] = [];
  const nextSeq = new Map<string, number>();
  const versions: string[] = ['nope'];
  const epochs = new Map<string, { holder: string; epoch: number }[]>();
  const fences = new Map<string, { owner: string; fence: number }[]>();
  const issued: LogItem[] = [];

  const observe = (result: CommandResult) => {
    if (!result.ok) return;
    const v = result.value;
    if (v.type === 'entry' || v.type === 'got') versions.push(v.entry.version);
    if (v.type === 'claim') versions.push(v.version);
    if (v.type === 'lease') {
      versions.push(v.lease.version);
      const k = `${v.lease.namespace}/${v.lease.key}`;
      if (v.lease.holder !== null)
        epochs.set(k, [...(epochs.get(k) ?? []), { holder: v.lease.holder, epoch: v.lease.epoch }]);
    }
    if (v.type === 'lock') {
      const k = `${v.lock.namespace}/${v.lock.key}`;
      fences.set(k, [...(fences.get(k) ?? []), { owner: v.lock.owner, fence: v.lock.fence }]);
    }
  };

  const push = (command: Command, retryOf?: number): void => {
    const item: LogItem = { command, index: ++index, term, ...(retryOf !== undefined ? { retryOf } : {}) };
    log.push(item);
    const out = sm.apply(command, { index: item.index, term });
    outputs.push(out);
    observe(out.result);
    for (const d of out.deliveries) observe(d.result);
    if (command.clientId !== undefined && command.seq !== undefined) issued.push(item);
  };

  for (let i = 0; i < 3; i++) {
    push({ nowMs: clock, op: { type: 'register_session' } });
    const last = outputs.at(-1)?.result;
    if (last?.ok && last.value.type === 'session') clients.push(last.value.clientId);
  }

  for (const s of steps) {
    clock += s.advanceMs;
    const stamp = clock - s.clockBackMs; // a leader whose clock lags
    if (s.leaderChange && s.kind % 5 === 0) term++;
    let ns = pick(NSS, s.a);
    let key = pick(KEYS, s.b);
    if (s.kind >= 11 && s.kind <= 15 && epochs.size > 0 && s.b % 4 !== 0) {
      // Lease operations mostly target a key that has seen a lease.
      const known = pick([...epochs.keys()], s.b).split('/');
      ns = known[0] as string;
      key = known.slice(1).join('/');
    }
    const lockKey = pick(LOCKS, s.b);
    const holder = pick(HOLDERS, s.c);
    const version = pick(versions, versions.length - 1 - (s.c % Math.min(3, versions.length)));
    // Mostly the latest period seen, sometimes an older one, sometimes a random holder.
    const epochList = epochs.get(`${ns}/${key}`) ?? [{ holder, epoch: 1 }];
    const period = pick(epochList, epochList.length - 1 - (s.c % 4 === 0 ? 1 % epochList.length : 0));
    const leaseHolder = s.a % 5 === 0 ? holder : period.holder;
    const epoch = period.epoch;
    const fenceList = fences.get(`n1/${lockKey}`) ?? [{ owner: holder, fence: 1 }];
    const grantSeen = pick(fenceList, fenceList.length - 1 - (s.a % Math.min(2, fenceList.length)));
    const lockOwner = s.c % 5 === 0 ? holder : grantSeen.owner;
    const fence = grantSeen.fence;
    const ttl = pick([1, 3, 10, 60], s.c);
    const value: JsonValue = { n: s.c % 7, tag: pick(['x', 'y'], s.a) };
    let op: Operation | undefined;
    switch (s.kind) {
      case 0:
      case 1:
        op = { type: 'set', namespace: ns, key, value, ttlSeconds: ttl };
        break;
      case 2:
        op = { type: 'set', namespace: ns, key, value, ifNotExists: true };
        break;
      case 3:
        op = { type: 'set', namespace: ns, key, value, ifVersion: version };
        break;
      case 4:
        op = { type: 'set', namespace: ns, key, value, fence: { namespace: 'n1', key: lockKey, token: fence } };
        break;
      case 5:
        op = { type: 'delete', namespace: ns, key, ...(s.c % 2 ? { ifVersion: version } : {}) };
        break;
      case 6:
        op = { type: 'get', namespace: ns, key };
        break;
      case 7:
        op = {
          type: 'list',
          namespace: ns,
          filter: 'n >= 2 or tag = "y"',
          sortBy: pick(['key', 'created_at', 'updated_at'] as const, s.c),
          limit: 2,
        };
        break;
      case 8:
        op = { type: 'claim', namespace: ns, key, value, ttlSeconds: ttl };
        break;
      case 9:
      case 10:
        op = {
          type: 'lease_acquire',
          namespace: ns,
          key,
          holder,
          ttlSeconds: ttl,
          ...(s.a % 3 === 0 ? { state: value } : {}),
        };
        break;
      case 11:
        op = { type: 'lease_renew', namespace: ns, key, holder: leaseHolder, epoch, ttlSeconds: ttl };
        break;
      case 12:
        op = {
          type: 'lease_write',
          namespace: ns,
          key,
          holder: leaseHolder,
          epoch,
          state: value,
          ...(s.a % 2 ? { ifVersion: version } : {}),
        };
        break;
      case 13:
        op = { type: 'lease_release', namespace: ns, key, holder: leaseHolder, epoch };
        break;
      case 14:
        op = {
          type: 'lease_cooperative_write',
          namespace: ns,
          key,
          state: value,
          ...(s.a % 2 ? { ifVersion: version } : {}),
        };
        break;
      case 15:
        op = { type: 'lease_attach', namespace: ns, key, holder: leaseHolder };
        break;
      case 16:
      case 17:
        op = {
          type: 'lock_acquire',
          namespace: 'n1',
          key: lockKey,
          owner: holder,
          ttlSeconds: ttl,
          ...(s.a % 2 ? { waitSeconds: pick([1, 5, 30], s.c) } : {}),
        };
        break;
      case 18:
        op = { type: 'lock_renew', namespace: 'n1', key: lockKey, owner: lockOwner, fence, ttlSeconds: ttl };
        break;
      case 19:
        op = { type: 'lock_release', namespace: 'n1', key: lockKey, owner: lockOwner, fence };
        break;
      case 20:
        op = { type: 'lock_inspect', namespace: 'n1', key: lockKey };
        break;
      case 21:
        op = { type: 'expire' };
        break;
      case 22:
        if (s.c % 4 !== 0) {
          op = { type: 'lock_acquire', namespace: 'n1', key: lockKey, owner: holder, ttlSeconds: 10, waitSeconds: 10 };
          break;
        }
        op = { type: 'delete_namespace', namespace: ns, pattern: pick(['*', 'a*', '?'], s.c), confirm: true };
        break;
      case 23:
        op = { type: 'lock_list', namespace: ns };
        break;
      default: {
        // Retry an earlier command of a client, stamped by the current leader.
        if (issued.length > 0) {
          const orig = issued[s.a % issued.length] as LogItem;
          push({ ...orig.command, nowMs: stamp }, orig.index);
        }
        continue;
      }
    }
    if (s.kind === 21) {
      push({ nowMs: stamp, op });
      continue;
    }
    const clientId = s.client < 3 ? clients[s.client] : undefined;
    if (clientId === undefined) {
      push({ nowMs: stamp, op });
    } else {
      const seq = (nextSeq.get(clientId) ?? 0) + 1;
      nextSeq.set(clientId, seq);
      push({ nowMs: stamp, clientId, seq, op });
      const r = outputs.at(-1)?.result;
      if (r && !r.ok && r.error.details.reason === 'session_expired') {
        // What a node does: register a fresh session for this client.
        push({ nowMs: stamp, op: { type: 'register_session' } });
        const reg = outputs.at(-1)?.result;
        if (reg?.ok && reg.value.type === 'session') clients[s.client] = reg.value.clientId;
      }
    }
  }
  return { log, outputs };
}

function replay(log: readonly LogItem[], viaBytes: boolean, sm = new CoordStateMachine(CONFIG)): ApplyOutput[] {
  return log.map((item) =>
    viaBytes
      ? sm.applyBytes(encodeCommand(item.command), { index: item.index, term: item.term })
      : sm.apply(item.command, { index: item.index, term: item.term }),
  );
}

const stepsArb = fc.array(stepArb, { minLength: 20, maxLength: 200 });

describe('coord properties', () => {
  it('replaying a log gives identical results and byte-identical snapshots on every replica', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(stepsArb, (steps) => {
          const { log, outputs } = build(steps);
          const a = new CoordStateMachine(CONFIG);
          const b = new CoordStateMachine(CONFIG);
          expect(replay(log, false, a)).toEqual(outputs);
          expect(replay(log, true, b)).toEqual(outputs);
          expect(b.snapshot()).toEqual(a.snapshot());
        }),
        { seed, numRuns: 60 },
      ),
    );
  });

  it('restoring a snapshot taken mid-log and applying the rest equals applying everything', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(stepsArb, fc.nat(), (steps, cutSeed) => {
          const { log, outputs } = build(steps);
          const cut = cutSeed % (log.length + 1);
          const full = new CoordStateMachine(CONFIG);
          replay(log, false, full);
          const first = new CoordStateMachine(CONFIG);
          replay(log.slice(0, cut), false, first);
          const restored = new CoordStateMachine(CONFIG);
          restored.restore(first.snapshot());
          expect(restored.snapshot()).toEqual(first.snapshot());
          expect(replay(log.slice(cut), false, restored)).toEqual(outputs.slice(cut));
          expect(restored.snapshot()).toEqual(full.snapshot());
        }),
        { seed: seed + 1, numRuns: 60 },
      ),
    );
  });

  it('skips an expire with nothing due exactly when a full scan would find nothing', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(stepsArb, (steps) => {
          const { log, outputs } = build(steps);
          // Restoring resets the expiry bound, so this replica scans fully on every expire.
          const scanning = new CoordStateMachine(CONFIG);
          log.forEach((item, i) => {
            if (item.command.op.type === 'expire') scanning.restore(scanning.snapshot());
            expect(scanning.apply(item.command, { index: item.index, term: item.term })).toEqual(outputs[i]);
          });
        }),
        { seed: seed + 4, numRuns: 60 },
      ),
    );
  });

  it('keeps lock fences and lease epochs strictly increasing, and fenced writes never pass a newer fence', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(stepsArb, (steps) => {
          const { log, outputs } = build(steps);
          const lastFence = new Map<string, number>();
          const lastEpoch = new Map<string, number>();
          const grant = (result: CommandResult) => {
            if (!result.ok || result.value.type !== 'lock') return;
            const k = `${result.value.lock.namespace}/${result.value.lock.key}`;
            expect(result.value.lock.fence).toBeGreaterThan(lastFence.get(k) ?? 0);
            lastFence.set(k, result.value.lock.fence);
          };
          log.forEach((item, i) => {
            const out = outputs[i] as ApplyOutput;
            const op = item.command.op;
            if (item.retryOf === undefined) {
              if (op.type === 'set' && op.fence && out.result.ok) {
                const k = `${op.fence.namespace}/${op.fence.key}`;
                expect(op.fence.token).toBeGreaterThanOrEqual(lastFence.get(k) ?? 0);
              }
              if (op.type === 'lock_acquire') grant(out.result);
              if (op.type === 'lease_acquire' && out.result.ok && out.result.value.type === 'lease') {
                const k = `${op.namespace}/${op.key}`;
                expect(out.result.value.lease.epoch).toBeGreaterThan(lastEpoch.get(k) ?? 0);
                lastEpoch.set(k, out.result.value.lease.epoch);
              }
            }
            for (const d of out.deliveries) grant(d.result);
          });
        }),
        { seed: seed + 2, numRuns: 80 },
      ),
    );
  });

  it('applies a retried command at most once and answers it with its first (or delivered) result', () => {
    withSeed(seed, () =>
      fc.assert(
        fc.property(stepsArb, (steps) => {
          const { log, outputs } = build(steps);
          const latest = new Map<string, CommandResult>();
          log.forEach((item, i) => {
            const out = outputs[i] as ApplyOutput;
            const { clientId, seq, op } = item.command;
            const id = `${clientId}#${seq}`;
            if (item.retryOf !== undefined && clientId !== undefined && !isRead(op)) {
              const r = out.result;
              const stale = !r.ok && ['stale_sequence', 'session_expired'].includes(String(r.error.details.reason));
              if (!stale) expect(r).toEqual(latest.get(id));
            } else if (clientId !== undefined && !latest.has(id)) latest.set(id, out.result);
            for (const d of out.deliveries) latest.set(`${d.clientId}#${d.seq}`, d.result);
          });
          // Replacing every retry by a no-op of the same client gives byte-identical state:
          // retries changed nothing.
          const noRetry = log.map((item) =>
            item.retryOf === undefined
              ? item
              : {
                  ...item,
                  command: { nowMs: item.command.nowMs, clientId: item.command.clientId, op: { type: 'noop' } },
                },
          ) as LogItem[];
          const a = new CoordStateMachine(CONFIG);
          const b = new CoordStateMachine(CONFIG);
          replay(log, false, a);
          replay(noRetry, false, b);
          expect(a.snapshot()).toEqual(b.snapshot());
        }),
        { seed: seed + 3, numRuns: 80 },
      ),
    );
  });
});

function isRead(op: Operation): boolean {
  return ['get', 'list', 'lease_attach', 'lock_inspect', 'lock_list', 'noop'].includes(op.type);
}
