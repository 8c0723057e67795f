import { DecodeError, type Random, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { HistoryRecorder, type HistoryValue } from './history.js';
import { checkLinearizability } from './linearizability.js';
import type { Model } from './model.js';
import { parleyEntryModel, parleyLeaseModel, parleyLockModel } from './models/index.js';
import { testSeed, withSeed } from './test-util.js';

/** A tiny script: each line is `process f key input => result` or `=> !error` or `=> ?` (lost reply). */
type Line = readonly [process: string, f: string, key: string, input: HistoryValue, result: HistoryValue | Err];
type Err = { readonly err: string };
const err = (code: string): Err => ({ err: code });
const LOST: Err = { err: '?' };

/** Sequential calls (each completes before the next starts), then an optional concurrent group. */
function run(model: Model, lines: readonly Line[], concurrent: readonly Line[] = []) {
  const rec = new HistoryRecorder();
  const complete = (l: Line) => {
    const r = l[4];
    if (r !== null && typeof r === 'object' && 'err' in r && Object.keys(r).length === 1) {
      const e = (r as Err).err;
      if (e === '?') rec.info(l[0], null, { error: 'timeout' });
      else rec.fail(l[0], null, { error: e });
    } else rec.ok(l[0], r as HistoryValue);
  };
  for (const l of lines) {
    rec.invoke(l[0], l[1], l[3], l[2]);
    complete(l);
  }
  for (const l of concurrent) rec.invoke(l[0], l[1], l[3], l[2]);
  for (const l of concurrent) complete(l);
  return checkLinearizability(model, rec.events()).verdict;
}

describe('parley-entry', () => {
  const m = parleyEntryModel as unknown as Model;

  it('accepts create, conditional update, read and delete', () => {
    expect(
      run(m, [
        ['a', 'get', 'k', null, null],
        ['a', 'set', 'k', { value: 1, ifNotExists: true }, { version: 'v1' }],
        ['b', 'set', 'k', { value: 9, ifNotExists: true }, err('key_already_exists')],
        ['b', 'get', 'k', null, { value: 1, version: 'v1' }],
        ['b', 'set', 'k', { value: 2, ifVersion: 'v1' }, { version: 'v2' }],
        ['a', 'set', 'k', { value: 3, ifVersion: 'v1' }, err('version_mismatch')],
        ['a', 'delete', 'k', { ifVersion: 'v2' }, { existed: true }],
        ['a', 'get', 'k', null, err('key_not_found')],
        ['a', 'delete', 'k', null, { existed: false }],
      ]),
    ).toBe('linearizable');
  });

  it('rejects two winners of ifNotExists', () => {
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1, ifNotExists: true }, { version: 'v1' }],
        ['b', 'set', 'k', { value: 2, ifNotExists: true }, { version: 'v2' }],
      ]),
    ).toBe('not linearizable');
    // Concurrent: still only one may win.
    expect(
      run(
        m,
        [],
        [
          ['a', 'set', 'k', { value: 1, ifNotExists: true }, { version: 'v1' }],
          ['b', 'set', 'k', { value: 2, ifNotExists: true }, { version: 'v2' }],
        ],
      ),
    ).toBe('not linearizable');
  });

  it('rejects a lost update through a stale ifVersion', () => {
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1 }, { version: 'v1' }],
        ['a', 'set', 'k', { value: 2, ifVersion: 'v1' }, { version: 'v2' }],
        ['b', 'set', 'k', { value: 3, ifVersion: 'v1' }, { version: 'v3' }],
      ]),
    ).toBe('not linearizable');
  });

  it('rejects a version_mismatch that could not have happened, and a reused version', () => {
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1 }, { version: 'v1' }],
        ['b', 'set', 'k', { value: 2, ifVersion: 'v1' }, err('version_mismatch')],
      ]),
    ).toBe('not linearizable');
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1 }, { version: 'v1' }],
        ['a', 'set', 'k', { value: 2 }, { version: 'v1' }],
      ]),
    ).toBe('not linearizable');
  });

  it('rejects a read of a deleted entry and a read of the wrong value', () => {
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1 }, { version: 'v1' }],
        ['a', 'delete', 'k', null, {}],
        ['b', 'get', 'k', null, { value: 1, version: 'v1' }],
      ]),
    ).toBe('not linearizable');
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1 }, { version: 'v1' }],
        ['b', 'get', 'k', null, { value: 2, version: 'v1' }],
      ]),
    ).toBe('not linearizable');
  });

  it('learns the version of a write whose reply was lost from a later read', () => {
    const lost: Line = ['a', 'set', 'k', { value: 5 }, LOST];
    expect(
      run(m, [
        lost,
        ['b', 'get', 'k', null, { value: 5, version: 'v9' }],
        ['b', 'set', 'k', { value: 6, ifVersion: 'v9' }, { version: 'v10' }],
      ]),
    ).toBe('linearizable');
    // Once learned, the version is fixed.
    expect(
      run(m, [
        lost,
        ['b', 'get', 'k', null, { value: 5, version: 'v9' }],
        ['c', 'get', 'k', null, { value: 5, version: 'v8' }],
      ]),
    ).toBe('not linearizable');
  });

  it('drops failures that are not observations', () => {
    expect(
      run(m, [
        ['a', 'set', 'k', { value: 1 }, err('unavailable')],
        ['b', 'get', 'k', null, null],
      ]),
    ).toBe('linearizable');
  });

  it('lets exactly one claim win and shows the winner to the others', () => {
    expect(
      run(
        m,
        [],
        [
          ['a', 'claim', 'job', { value: 'a' }, { won: true, version: 'v1' }],
          ['b', 'claim', 'job', { value: 'b' }, { won: false, value: 'a', version: 'v1' }],
        ],
      ),
    ).toBe('linearizable');
    expect(
      run(
        m,
        [],
        [
          ['a', 'claim', 'job', { value: 'a' }, { won: true, version: 'v1' }],
          ['b', 'claim', 'job', { value: 'b' }, { won: true, version: 'v2' }],
        ],
      ),
    ).toBe('not linearizable');
    // A loser must see the winner's value.
    expect(
      run(m, [
        ['a', 'claim', 'job', { value: 'a' }, { won: true, version: 'v1' }],
        ['b', 'claim', 'job', { value: 'b' }, { won: false, value: 'b', version: 'v1' }],
      ]),
    ).toBe('not linearizable');
  });

  it('checks keys independently', () => {
    const r = run(m, [
      ['a', 'set', 'x', { value: 1, ifNotExists: true }, { version: 'v1' }],
      ['a', 'set', 'y', { value: 1, ifNotExists: true }, { version: 'v2' }],
    ]);
    expect(r).toBe('linearizable');
  });

  it('throws DecodeError on an operation it does not know', () => {
    expect(() => run(m, [['a', 'frobnicate', 'k', null, null]])).toThrow(DecodeError);
  });
});

describe('parley-lock', () => {
  const m = parleyLockModel as unknown as Model;

  it('accepts increasing fences, fenced writes and stale rejections', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'L', { owner: 'a' }, { fence: 1 }],
        ['b', 'acquire', 'L', { owner: 'b' }, err('lock_held')],
        ['a', 'write', 'L', { fence: 1, value: 'x' }, null],
        ['a', 'release', 'L', { owner: 'a', fence: 1 }, { released: true }],
        ['b', 'acquire', 'L', { owner: 'b' }, { fence: 2 }],
        ['a', 'write', 'L', { fence: 1, value: 'late' }, err('fence_stale')],
        ['b', 'write', 'L', { fence: 2, value: 'y' }, null],
        ['c', 'get', 'L', null, { owner: 'b', fence: 2 }],
      ]),
    ).toBe('linearizable');
  });

  it('rejects an accepted write with a stale fence', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'L', { owner: 'a' }, { fence: 1 }],
        ['b', 'acquire', 'L', { owner: 'b' }, { fence: 2 }], // a's TTL ran out
        ['a', 'write', 'L', { fence: 1, value: 'late' }, null],
      ]),
    ).toBe('not linearizable');
  });

  it('rejects fences that do not increase', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'L', { owner: 'a' }, { fence: 3 }],
        ['a', 'release', 'L', { owner: 'a', fence: 3 }, null],
        ['b', 'acquire', 'L', { owner: 'b' }, { fence: 3 }],
      ]),
    ).toBe('not linearizable');
  });

  it('rejects lock_held on a free lock and a renew after the lock moved on', () => {
    expect(run(m, [['a', 'acquire', 'L', { owner: 'a' }, err('lock_held')]])).toBe('not linearizable');
    expect(
      run(m, [
        ['a', 'acquire', 'L', { owner: 'a' }, { fence: 1 }],
        ['b', 'acquire', 'L', { owner: 'b' }, { fence: 2 }],
        ['a', 'renew', 'L', { owner: 'a', fence: 1 }, null],
      ]),
    ).toBe('not linearizable');
  });

  it('lets an acquire whose reply was lost hold the lock with an unknown fence', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'L', { owner: 'a' }, { fence: 1 }],
        ['b', 'acquire', 'L', { owner: 'b' }, LOST],
        ['c', 'get', 'L', null, { owner: 'b', fence: 4 }],
        ['c', 'write', 'L', { fence: 4 }, null],
        ['a', 'write', 'L', { fence: 1 }, err('fence_stale')],
      ]),
    ).toBe('linearizable');
    expect(
      run(m, [
        ['a', 'acquire', 'L', { owner: 'a' }, { fence: 1 }],
        ['b', 'acquire', 'L', { owner: 'b' }, LOST],
        ['c', 'get', 'L', null, { owner: 'b', fence: 4 }],
        ['c', 'write', 'L', { fence: 3 }, null],
      ]),
    ).toBe('not linearizable');
  });
});

describe('parley-lease', () => {
  const m = parleyLeaseModel as unknown as Model;

  it('accepts acquire, renew, write, release and a takeover with a newer epoch', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'job', { holder: 'a' }, { epoch: 1 }],
        ['a', 'renew', 'job', { holder: 'a', epoch: 1 }, null],
        ['a', 'write', 'job', { holder: 'a', epoch: 1, state: 's' }, null],
        ['b', 'acquire', 'job', { holder: 'b' }, { epoch: 2 }], // a expired
        ['a', 'renew', 'job', { holder: 'a', epoch: 1 }, err('lease_lost')],
        ['b', 'release', 'job', { holder: 'b', epoch: 2 }, null],
        ['a', 'get', 'job', null, { holder: null, epoch: 2 }],
      ]),
    ).toBe('linearizable');
  });

  it('rejects an old holder renewing after a takeover, and a reused epoch', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'job', { holder: 'a' }, { epoch: 1 }],
        ['b', 'acquire', 'job', { holder: 'b' }, { epoch: 2 }],
        ['a', 'renew', 'job', { holder: 'a', epoch: 1 }, null],
      ]),
    ).toBe('not linearizable');
    expect(
      run(m, [
        ['a', 'acquire', 'job', { holder: 'a' }, { epoch: 5 }],
        ['b', 'acquire', 'job', { holder: 'b' }, { epoch: 5 }],
      ]),
    ).toBe('not linearizable');
  });

  it('once a renew said lease_lost, the holder cannot renew that epoch again', () => {
    expect(
      run(m, [
        ['a', 'acquire', 'job', { holder: 'a' }, { epoch: 1 }],
        ['a', 'renew', 'job', { holder: 'a', epoch: 1 }, err('lease_lost')],
        ['a', 'renew', 'job', { holder: 'a', epoch: 1 }, null],
      ]),
    ).toBe('not linearizable');
  });
});

// ---------------------------------------------------------------------------
// At scale: histories of real (atomic) implementations are linearizable; a
// planted bug is caught. Each call takes effect at one instant between its
// invoke and its reply; some replies are lost.

type Reply = { ok: HistoryValue } | { fail: string };
type Call = { f: string; key: string; input: HistoryValue };
interface Impl {
  next(rng: Random, client: string): Call;
  apply(f: string, key: string, input: HistoryValue, client: string): Reply;
}

function simulate(rng: Random, impl: Impl, clients: number, steps: number) {
  const rec = new HistoryRecorder();
  const pending = new Map<string, { f: string; key: string; input: HistoryValue; reply?: Reply }>();
  for (let s = 0; s < steps; s++) {
    const c = `c${rng.int(clients)}`;
    const call = pending.get(c);
    if (call === undefined) {
      const op = impl.next(rng, c);
      rec.invoke(c, op.f, op.input, op.key);
      pending.set(c, op);
    } else if (call.reply === undefined) {
      call.reply = impl.apply(call.f, call.key, call.input, c);
    } else {
      pending.delete(c);
      if (rng.int(25) === 0) rec.info(c, null, { error: 'timeout' });
      else if ('ok' in call.reply) rec.ok(c, call.reply.ok);
      else rec.fail(c, null, { error: call.reply.fail });
    }
  }
  return rec.events();
}

/** A strong namespace; `bug` lets an ifVersion write through against a stale version now and then. */
function entryImpl(bug: boolean): Impl {
  const store = new Map<string, { value: HistoryValue; version: string }>();
  let versions = 0;
  const lastSeen = new Map<string, string>();
  return {
    next: (rng, client): Call => {
      const key = `k${rng.int(2)}`;
      const seen = lastSeen.get(`${client}/${key}`);
      const r = rng.int(5);
      if (r === 0) return { f: 'get', key, input: null };
      if (r === 1) return { f: 'set', key, input: { value: rng.int(100), ifNotExists: true } };
      if (r === 2 && seen !== undefined) return { f: 'set', key, input: { value: rng.int(100), ifVersion: seen } };
      if (r === 3) return { f: 'delete', key, input: null };
      return { f: 'set', key, input: { value: rng.int(100) } };
    },
    apply: (f, key, input, client): Reply => {
      const cur = store.get(key);
      const ifVersion = (input as { ifVersion?: string } | null)?.ifVersion;
      if (f === 'get') {
        if (cur) lastSeen.set(`${client}/${key}`, cur.version);
        return { ok: cur ? { value: cur.value, version: cur.version } : null };
      }
      if (f === 'delete') {
        store.delete(key);
        return { ok: { existed: cur !== undefined } };
      }
      const i = input as { value: HistoryValue; ifNotExists?: boolean };
      if (i.ifNotExists && cur) return { fail: 'key_already_exists' };
      if (ifVersion !== undefined && cur?.version !== ifVersion && !(bug && cur && versions % 3 === 0)) {
        return { fail: 'version_mismatch' };
      }
      const version = `v${++versions}`;
      store.set(key, { value: i.value, version });
      lastSeen.set(`${client}/${key}`, version);
      return { ok: { version } };
    },
  };
}

/** A lock table with fences; `bug` accepts a write with the previous fence. */
function lockImpl(bug: boolean): Impl {
  const locks = new Map<string, { owner: string | null; fence: number }>();
  const mine = new Map<string, number>();
  return {
    next: (rng, client): Call => {
      const key = 'L';
      const fence = mine.get(client);
      const r = rng.int(4);
      if (r === 0 || fence === undefined) return { f: 'acquire', key, input: { owner: client } };
      if (r === 1) return { f: 'release', key, input: { owner: client, fence } };
      if (r === 2) return { f: 'get', key, input: null };
      return { f: 'write', key, input: { fence, value: rng.int(10) } };
    },
    apply: (f, key, input, client): Reply => {
      const l = locks.get(key) ?? { owner: null, fence: 0 };
      locks.set(key, l);
      const i = input as { fence?: number };
      switch (f) {
        case 'acquire':
          if (l.owner !== null && l.owner !== client) {
            // Occasionally the holder's TTL has run out: take over.
            if (l.fence % 2 === 0) return { fail: 'lock_held' };
          }
          l.owner = client;
          l.fence++;
          mine.set(client, l.fence);
          return { ok: { fence: l.fence } };
        case 'release':
          if (l.owner !== client || l.fence !== i.fence) return { fail: 'lease_lost' };
          l.owner = null;
          return { ok: { released: true } };
        case 'get':
          return { ok: l.owner === null ? null : { owner: l.owner, fence: l.fence } };
        default:
          if (i.fence === l.fence || (bug && i.fence === l.fence - 1)) return { ok: null };
          return { fail: 'fence_stale' };
      }
    },
  };
}

describe('Parley models at scale', () => {
  const cases = [
    ['parley-entry', parleyEntryModel as unknown as Model, entryImpl],
    ['parley-lock', parleyLockModel as unknown as Model, lockImpl],
  ] as const;
  for (const [name, model, impl] of cases) {
    it(`${name}: a correct implementation is linearizable, a planted bug is caught`, () => {
      withSeed(testSeed(4242), (seed) => {
        const rng = new SeededRandom(seed);
        let caught = 0;
        for (let round = 0; round < 6; round++) {
          const good = simulate(rng, impl(false), 5, 1200);
          expect(checkLinearizability(model, good, { maxSteps: 20_000_000 }).verdict).toBe('linearizable');
          const bad = simulate(rng, impl(true), 5, 1200);
          if (checkLinearizability(model, bad, { maxSteps: 20_000_000 }).verdict === 'not linearizable') caught++;
        }
        expect(caught).toBeGreaterThanOrEqual(3);
      });
    });
  }
});
