import { type Random, SeededRandom } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { HistoryRecorder, type HistoryValue, type ProcessId } from './history.js';
import { checkLinearizability, formatCounterexample } from './linearizability.js';
import type { Model } from './model.js';
import {
  casRegisterModel,
  kvModel,
  MODELS,
  mutexModel,
  parleyEntryModel,
  parleyLeaseModel,
  parleyLockModel,
  registerModel,
} from './models/index.js';
import {
  bruteForceLinearizable,
  type Completion,
  type OpSpec,
  pick,
  randomHistory,
  testSeed,
  withSeed,
} from './test-util.js';

type Step =
  | readonly ['invoke', ProcessId, string, HistoryValue, string?]
  | readonly ['ok' | 'fail' | 'info', ProcessId, HistoryValue?, string?];

/** Builds a history from compact steps: invoke (process, f, value, key?) / ok|fail|info (process, value, error?). */
function hist(...steps: Step[]) {
  const rec = new HistoryRecorder();
  let t = 0;
  for (const s of steps) {
    t++;
    if (s[0] === 'invoke') rec.invoke(s[1], s[2], s[3], s[4], { timeMs: t });
    else rec[s[0]](s[1], s[2] ?? null, s[3] === undefined ? { timeMs: t } : { timeMs: t, error: s[3] });
  }
  return rec.events();
}

const verdict = (model: Model<never, never, never> | Model, events: ReturnType<typeof hist>) =>
  checkLinearizability(model as Model, events).verdict;

describe('register (etcd)', () => {
  it('accepts a read of a concurrent write', () => {
    const h = hist(['invoke', 1, 'write', 1], ['invoke', 2, 'read', null], ['ok', 2, 1], ['ok', 1, null]);
    expect(verdict(registerModel, h)).toBe('linearizable');
  });

  it('rejects a stale read after a completed write', () => {
    const h = hist(['invoke', 1, 'write', 1], ['ok', 1], ['invoke', 2, 'read', null], ['ok', 2, null]);
    const r = checkLinearizability(registerModel, h);
    expect(r.verdict).toBe('not linearizable');
    expect(r.counterexample?.blocked?.f).toBe('read');
    expect(r.counterexample?.linearized.map((o) => o.f)).toEqual(['write']);
    expect(formatCounterexample(r.counterexample!)).toBe(
      [
        'linearized 1 calls, then stuck',
        '  process 1 write 1 → null (events 0..1)',
        'cannot linearize: process 2 read null → null (events 2..3)',
      ].join('\n'),
    );
  });

  it('starts empty: reading 0 first is illegal, reading nil is fine', () => {
    expect(verdict(registerModel, hist(['invoke', 1, 'read', null], ['ok', 1, 0]))).toBe('not linearizable');
    expect(verdict(registerModel, hist(['invoke', 1, 'read', null], ['ok', 1, null]))).toBe('linearizable');
  });

  it('treats a failed cas as an observation that the compare failed', () => {
    const wrote = [
      ['invoke', 1, 'write', 3],
      ['ok', 1],
    ] as const;
    expect(verdict(registerModel, hist(...wrote, ['invoke', 2, 'cas', [3, 4]], ['fail', 2]))).toBe('not linearizable');
    expect(verdict(registerModel, hist(...wrote, ['invoke', 2, 'cas', [2, 4]], ['fail', 2]))).toBe('linearizable');
    expect(
      verdict(
        registerModel,
        hist(...wrote, ['invoke', 2, 'cas', [3, 4]], ['ok', 2], ['invoke', 1, 'read', null], ['ok', 1, 4]),
      ),
    ).toBe('linearizable');
  });

  it('lets an info write take effect late, or never', () => {
    const base = [
      ['invoke', 1, 'write', 1],
      ['info', 1, null, 'timeout'],
    ] as const;
    // Took effect after a later write: the read sees 1 last.
    expect(
      verdict(
        registerModel,
        hist(...base, ['invoke', 2, 'write', 2], ['ok', 2], ['invoke', 3, 'read', null], ['ok', 3, 1]),
      ),
    ).toBe('linearizable');
    // Never took effect.
    expect(verdict(registerModel, hist(...base, ['invoke', 3, 'read', null], ['ok', 3, null]))).toBe('linearizable');
    // But not before its invocation.
    expect(
      verdict(
        registerModel,
        hist(['invoke', 3, 'read', null], ['ok', 3, 1], ['invoke', 1, 'write', 1], ['info', 1, null, 'timeout']),
      ),
    ).toBe('not linearizable');
  });

  it('treats a call that never completes like info', () => {
    const h = hist(['invoke', 1, 'write', 7], ['invoke', 2, 'read', null], ['ok', 2, 7]);
    expect(verdict(registerModel, h)).toBe('linearizable');
  });

  it('finds the classic non-linearizable triangle', () => {
    // Two reads strictly one after the other see the concurrent write's effect then undo it.
    const h = hist(
      ['invoke', 1, 'write', 1],
      ['invoke', 2, 'read', null],
      ['ok', 2, 1],
      ['invoke', 3, 'read', null],
      ['ok', 3, null],
      ['ok', 1],
    );
    expect(verdict(registerModel, h)).toBe('not linearizable');
  });
});

describe('cas-register (Knossos)', () => {
  it('starts at 0, a nil read matches anything, fails are dropped', () => {
    expect(verdict(casRegisterModel, hist(['invoke', 1, 'read', null], ['ok', 1, 0]))).toBe('linearizable');
    expect(verdict(casRegisterModel, hist(['invoke', 1, 'read', null], ['ok', 1, 5]))).toBe('not linearizable');
    expect(
      verdict(
        casRegisterModel,
        hist(['invoke', 1, 'write', 5], ['ok', 1], ['invoke', 2, 'read', null], ['ok', 2, null]),
      ),
    ).toBe('linearizable');
    // A failed cas whose compare would have succeeded: under Knossos it simply did not happen.
    expect(verdict(casRegisterModel, hist(['invoke', 1, 'cas', [0, 1]], ['fail', 1]))).toBe('linearizable');
  });
});

describe('kv', () => {
  it('checks keys independently and concatenates appends', () => {
    const h = hist(
      ['invoke', 1, 'append', 'a', 'x'],
      ['invoke', 2, 'append', 'b', 'y'],
      ['ok', 1],
      ['ok', 2],
      ['invoke', 1, 'append', 'c', 'x'],
      ['ok', 1],
      ['invoke', 2, 'get', null, 'x'],
      ['ok', 2, 'ac'],
      ['invoke', 3, 'get', null, 'y'],
      ['ok', 3, 'b'],
    );
    const r = checkLinearizability(kvModel, h);
    expect(r.verdict).toBe('linearizable');
    expect(r.partitions).toBe(2);
  });

  it('rejects a get that misses a completed append', () => {
    const h = hist(
      ['invoke', 1, 'put', 'a', 'k'],
      ['ok', 1],
      ['invoke', 2, 'append', 'b', 'k'],
      ['ok', 2],
      ['invoke', 3, 'get', null, 'k'],
      ['ok', 3, 'a'],
    );
    expect(verdict(kvModel, h)).toBe('not linearizable');
  });
});

describe('mutex', () => {
  it('allows acquire/release in turn and rejects two overlapping holders', () => {
    const ok = hist(
      ['invoke', 1, 'acquire', null],
      ['ok', 1],
      ['invoke', 1, 'release', null],
      ['ok', 1],
      ['invoke', 2, 'acquire', null],
      ['ok', 2],
    );
    expect(verdict(mutexModel, ok)).toBe('linearizable');
    const bad = hist(['invoke', 1, 'acquire', null], ['ok', 1], ['invoke', 2, 'acquire', null], ['ok', 2]);
    expect(verdict(mutexModel, bad)).toBe('not linearizable');
    // An acquire whose reply was lost may never have happened.
    const lost = hist(['invoke', 1, 'acquire', null], ['info', 1], ['invoke', 2, 'acquire', null], ['ok', 2]);
    expect(verdict(mutexModel, lost)).toBe('linearizable');
    // Releasing a free mutex is illegal.
    expect(verdict(mutexModel, hist(['invoke', 1, 'release', null], ['ok', 1]))).toBe('not linearizable');
  });
});

describe('limits', () => {
  // Many concurrent unknown writes and reads: a large search space.
  const wide = () => {
    const rec = new HistoryRecorder();
    for (let p = 0; p < 14; p++) rec.invoke(p, 'write', p);
    for (let p = 0; p < 14; p++) rec.info(p);
    for (let p = 100; p < 130; p++) {
      rec.invoke(p, 'read', null);
      rec.ok(p, (p * 7) % 14);
    }
    return rec.events();
  };

  it('answers unknown when the step budget runs out', () => {
    const r = checkLinearizability(registerModel, wide(), { maxSteps: 5000 });
    expect(r.verdict).toBe('unknown');
    expect(r.reason).toBe('max-steps');
  });

  it('answers unknown on timeout, reading the injected clock', () => {
    let now = 0;
    const r = checkLinearizability(registerModel, wide(), { timeoutMs: 10, nowMs: () => (now += 1) });
    expect(r.verdict).toBe('unknown');
    expect(r.reason).toBe('timeout');
  });

  it('treats an empty history as linearizable', () => {
    expect(checkLinearizability(registerModel, []).verdict).toBe('linearizable');
  });
});

// ---------------------------------------------------------------------------
// Randomized: the search agrees with brute force on small histories, and accepts
// large histories of a real atomic object.

type Gen = {
  model: Model;
  invoke: (rng: Random, p: number) => OpSpec;
  complete: (rng: Random, call: OpSpec, p: number) => Completion | undefined;
};

const small = [null, 0, 1, 2];
const outcome = (rng: Random, ok: () => Completion): Completion | undefined => {
  const r = rng.int(20);
  if (r === 0) return undefined;
  if (r === 1) return { type: 'info', value: null, error: 'timeout' };
  if (r === 2) return { type: 'fail', value: null, error: 'unavailable' };
  return ok();
};

const generators: Record<string, Gen> = {
  register: {
    model: registerModel as unknown as Model,
    invoke: (rng) =>
      pick<OpSpec>(rng, [
        { f: 'read', input: null },
        { f: 'write', input: pick(rng, small.slice(1)) },
        { f: 'cas', input: [pick(rng, small), pick(rng, small.slice(1))] },
      ]),
    complete: (rng, call) =>
      outcome(rng, (): Completion => {
        if (call.f === 'read') return { type: 'ok', value: pick(rng, small) };
        if (call.f === 'cas') return { type: rng.int(2) === 0 ? 'ok' : 'fail', value: call.input };
        return { type: 'ok', value: call.input };
      }),
  },
  'cas-register': {
    model: casRegisterModel as unknown as Model,
    invoke: (rng) =>
      pick<OpSpec>(rng, [
        { f: 'read', input: null },
        { f: 'write', input: pick(rng, [0, 1, 2]) },
        { f: 'cas', input: [pick(rng, [0, 1, 2]), pick(rng, [0, 1, 2])] },
      ]),
    complete: (rng, call) =>
      outcome(
        rng,
        (): Completion =>
          call.f === 'read'
            ? { type: 'ok', value: pick(rng, small) }
            : { type: rng.int(3) === 0 ? 'fail' : 'ok', value: call.input },
      ),
  },
  kv: {
    model: kvModel as unknown as Model,
    invoke: (rng) => {
      const key = pick(rng, ['a', 'b']);
      return pick<OpSpec>(rng, [
        { f: 'get', key, input: null },
        { f: 'put', key, input: pick(rng, ['x', 'y']) },
        { f: 'append', key, input: pick(rng, ['x', 'y']) },
      ]);
    },
    complete: (rng, call) =>
      outcome(
        rng,
        (): Completion =>
          call.f === 'get'
            ? { type: 'ok', value: pick(rng, ['', 'x', 'y', 'xy', 'yx', 'xx']) }
            : { type: 'ok', value: null },
      ),
  },
  mutex: {
    model: mutexModel as unknown as Model,
    invoke: (rng) => ({ f: pick(rng, ['acquire', 'release']), input: null }),
    complete: (rng) => outcome(rng, () => ({ type: 'ok', value: null })),
  },
  'parley-entry': {
    model: parleyEntryModel as unknown as Model,
    invoke: (rng) => {
      const key = pick(rng, ['k', 'j']);
      return pick<OpSpec>(rng, [
        { f: 'get', key, input: null },
        { f: 'set', key, input: { value: pick(rng, [1, 2]) } },
        { f: 'set', key, input: { value: 3, ifNotExists: true } },
        { f: 'set', key, input: { value: 4, ifVersion: pick(rng, ['v1', 'v2', 'v3']) } },
        { f: 'delete', key, input: null },
        { f: 'claim', key, input: { value: 5 } },
      ]);
    },
    complete: (rng, call) =>
      outcome(rng, (): Completion => {
        const version = pick(rng, ['v1', 'v2', 'v3']);
        if (call.f === 'get') {
          return rng.int(3) === 0
            ? { type: 'ok', value: null }
            : { type: 'ok', value: { value: pick(rng, [1, 2, 3, 4]), version } };
        }
        if (call.f === 'claim') {
          return rng.int(2) === 0
            ? { type: 'ok', value: { won: true, version } }
            : { type: 'ok', value: { won: false, value: pick(rng, [1, 5]), version } };
        }
        if (call.f === 'set' && rng.int(3) === 0) {
          return { type: 'fail', value: null, error: pick(rng, ['version_mismatch', 'key_already_exists']) };
        }
        return call.f === 'set' ? { type: 'ok', value: { version } } : { type: 'ok', value: {} };
      }),
  },
  'parley-lock': {
    model: parleyLockModel as unknown as Model,
    invoke: (rng, p) => {
      const owner = `o${p}`;
      const fence = 1 + rng.int(3);
      return pick<OpSpec>(rng, [
        { f: 'acquire', key: 'l', input: { owner } },
        { f: 'release', key: 'l', input: { owner, fence } },
        { f: 'write', key: 'l', input: { fence } },
        { f: 'get', key: 'l', input: null },
      ]);
    },
    complete: (rng, call) =>
      outcome(rng, (): Completion => {
        if (call.f === 'acquire') {
          return rng.int(3) === 0
            ? { type: 'fail', value: null, error: 'lock_held' }
            : { type: 'ok', value: { fence: 1 + rng.int(3) } };
        }
        if (call.f === 'get') {
          return rng.int(2) === 0
            ? { type: 'ok', value: null }
            : { type: 'ok', value: { owner: `o${rng.int(3)}`, fence: 1 + rng.int(3) } };
        }
        return rng.int(3) === 0
          ? { type: 'fail', value: null, error: pick(rng, ['fence_stale', 'lease_lost']) }
          : { type: 'ok', value: null };
      }),
  },
  'parley-lease': {
    model: parleyLeaseModel as unknown as Model,
    invoke: (rng, p) => {
      const holder = `h${p}`;
      const epoch = 1 + rng.int(3);
      return pick<OpSpec>(rng, [
        { f: 'acquire', key: 'l', input: { holder } },
        { f: 'renew', key: 'l', input: { holder, epoch } },
        { f: 'release', key: 'l', input: { holder, epoch } },
        { f: 'write', key: 'l', input: { holder, epoch, state: 1 } },
      ]);
    },
    complete: (rng, call) =>
      outcome(rng, (): Completion => {
        if (call.f === 'acquire') {
          return rng.int(3) === 0
            ? { type: 'fail', value: null, error: 'lock_held' }
            : { type: 'ok', value: { epoch: 1 + rng.int(3) } };
        }
        return rng.int(3) === 0 ? { type: 'fail', value: null, error: 'lease_lost' } : { type: 'ok', value: null };
      }),
  },
};

describe('agrees with brute force on small random histories', () => {
  for (const [name, gen] of Object.entries(generators)) {
    it(name, () => {
      withSeed(testSeed(20261129), (seed) => {
        const rng = new SeededRandom(seed);
        const counts = { linearizable: 0, 'not linearizable': 0 };
        for (let round = 0; round < 400; round++) {
          const history = randomHistory(rng, 3, 2 + rng.int(2), gen.invoke, gen.complete);
          const expected = bruteForceLinearizable(gen.model, history);
          const got = checkLinearizability(gen.model, history).verdict;
          if (got !== (expected ? 'linearizable' : 'not linearizable')) {
            throw new Error(`round ${round}: search says ${got}, brute force ${expected}\n${JSON.stringify(history)}`);
          }
          counts[got]++;
        }
        // Both verdicts occur, so the comparison means something.
        expect(counts.linearizable).toBeGreaterThan(10);
        expect(counts['not linearizable']).toBeGreaterThan(10);
      });
    });
  }
});

describe('accepts large histories of a real atomic register', () => {
  it('with crashes and lost replies', () => {
    withSeed(testSeed(7), (seed) => {
      const rng = new SeededRandom(seed);
      for (let round = 0; round < 5; round++) {
        // Each call takes effect at one instant between its invoke and its reply (or never, for some lost replies).
        const rec = new HistoryRecorder();
        let value: HistoryValue = null;
        const pending = new Map<number, { f: string; arg: HistoryValue; result?: HistoryValue; applied: boolean }>();
        for (let step = 0; step < 1500; step++) {
          const p = rng.int(8);
          const call = pending.get(p);
          if (call === undefined) {
            const f = pick(rng, ['read', 'write', 'cas']);
            const arg = f === 'read' ? null : f === 'write' ? rng.int(5) : [rng.int(5), rng.int(5)];
            rec.invoke(p, f, arg);
            pending.set(p, { f, arg, applied: false });
          } else if (!call.applied) {
            call.applied = true;
            if (call.f === 'read') call.result = value;
            else if (call.f === 'write') value = call.arg;
            else {
              const [from, to] = call.arg as number[];
              call.result = value === from;
              if (call.result) value = to!;
            }
          } else {
            pending.delete(p);
            if (rng.int(30) === 0) rec.info(p, null, { error: 'timeout' });
            else if (call.f === 'read') rec.ok(p, call.result!);
            else if (call.f === 'cas' && call.result === false) rec.fail(p, call.arg);
            else rec.ok(p, call.arg);
          }
        }
        const r = checkLinearizability(registerModel, rec.events(), { maxSteps: 50_000_000 });
        expect(r.verdict).toBe('linearizable');
      }
    });
  });
});

it('MODELS lists every model by its name', () => {
  for (const [name, m] of Object.entries(MODELS)) expect(m.name).toBe(name);
  expect(Object.keys(MODELS).sort()).toEqual(
    ['cas-register', 'kv', 'mutex', 'parley-entry', 'parley-lease', 'parley-lock', 'register'].sort(),
  );
});
