/**
 * Hostile and malformed input: nothing a peer sends, as bytes or as objects,
 * may poison a replica. Each case names the defect it guards against.
 */
import { DecodeError, InvalidArgumentError, isParleyError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import {
  type Delta,
  decodeDelta,
  decodeDigest,
  decodeState,
  encodeDelta,
  encodeDigest,
  encodeState,
  HybridLogicalClock,
  joinKeyStates,
  MAX_LOGICAL,
  MAX_SEQ,
  MAX_TTL_SECONDS,
  MAX_VALUE_DEPTH,
  NamespaceReplica,
  type NamespaceReplicaOptions,
  Register,
} from './index.js';

const T0 = 1_750_000_000_000;
const NS = 'ns';

function replica(id: string, options: Partial<NamespaceReplicaOptions> = {}): NamespaceReplica {
  return new NamespaceReplica({ namespace: NS, replicaId: id, ...options });
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

function register(value: unknown, fields: Partial<Record<keyof Register, unknown>> = {}): Register {
  const f = { key: 'k', wallMs: T0, logical: 0, node: 'x', seq: 1, ttlSeconds: 60, createdAt: T0, ...fields };
  return new Register(
    f.key as string,
    f.wallMs as number,
    f.logical as number,
    f.node as string,
    f.seq as number,
    f.ttlSeconds as number,
    f.createdAt as number,
    value as never,
  );
}

function delta(states: unknown[], context: Map<string, number[]> = new Map()): Delta {
  return { namespace: NS, states: states as Delta['states'], context };
}

/** A delta's bytes whose single register holds `text` verbatim as its value text. */
function deltaWithValueText(text: string): Uint8Array {
  const placeholder = 'x'.repeat(text.length - 2); // JSON text `"xx…x"` has text.length bytes
  const bytes = encodeDelta(delta([register(placeholder)]));
  const quoted = Buffer.from(JSON.stringify(placeholder));
  const at = Buffer.from(bytes).indexOf(quoted);
  expect(at).toBeGreaterThan(0);
  const out = Uint8Array.from(bytes);
  out.set(Buffer.from(text), at);
  return out;
}

function nested(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

/** Asserts `fn` throws an invalid_argument error and `r`'s encoded state is unchanged. */
function refusedWhole(r: NamespaceReplica, fn: () => unknown): void {
  const before = hex(encodeState(r.state()));
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(isParleyError(thrown, 'invalid_argument'), String(thrown)).toBe(true);
  expect(hex(encodeState(r.state()))).toBe(before);
}

describe('deeply nested values', () => {
  it('decoders refuse a value nested 200,000 levels deep with DecodeError', () => {
    const bytes = deltaWithValueText(nested(200_000));
    expect(() => decodeDelta(bytes)).toThrow(DecodeError);
    const state = Uint8Array.from(bytes);
    state[1] = 0x02; // the same body as a full state
    expect(() => decodeState(state)).toThrow(DecodeError);
  });

  it('decoders accept MAX_VALUE_DEPTH levels and refuse one more', () => {
    const ok = decodeDelta(deltaWithValueText(nested(MAX_VALUE_DEPTH)));
    expect(hex(encodeDelta(ok))).toBe(hex(deltaWithValueText(nested(MAX_VALUE_DEPTH))));
    expect(() => decodeDelta(deltaWithValueText(nested(MAX_VALUE_DEPTH + 1)))).toThrow(/nested too deeply/);
  });

  it('merge refuses a 200,000-deep value object, and gossip from the replica keeps working', () => {
    const r = replica('a');
    r.set('before', 1, T0);
    const deep = JSON.parse(nested(200_000));
    refusedWhole(r, () => r.merge(delta([register(deep)]), T0));
    expect(r.get('k', T0)).toBeUndefined();
    expect(() => encodeState(r.state())).not.toThrow();
    expect(() => r.deltaFor({ namespace: NS, context: new Map() })).not.toThrow();
  });

  it('a local write refuses a value deeper than MAX_VALUE_DEPTH, so no replica sends what peers refuse', () => {
    const r = replica('a');
    expect(() => r.set('k', JSON.parse(nested(MAX_VALUE_DEPTH + 1)), T0)).toThrow(InvalidArgumentError);
    const d = r.set('k', JSON.parse(nested(MAX_VALUE_DEPTH)), T0);
    expect(() => decodeDelta(encodeDelta(d))).not.toThrow();
  });
});

describe('ties on stamps with odd values', () => {
  // Two registers with one stamp and one dot: only a faulty peer makes them,
  // and the tie-break compares the values' JSON text.
  const odd: Array<[string, unknown]> = [
    ['a BigInt', { n: 1n }],
    [
      'a cycle',
      (() => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return o;
      })(),
    ],
    ['NaN', Number.NaN],
    ['undefined', undefined],
    ['a function', () => 1],
    ['a class instance', new Date(0)],
    ['an array hole', new Array(3)],
    ['a 200,000-deep array', JSON.parse(nested(200_000))],
  ];
  for (const [name, value] of odd) {
    it(`merge refuses ${name} with invalid_argument and changes nothing`, () => {
      const r = replica('a');
      r.merge(delta([register('plain')]), T0);
      refusedWhole(r, () => r.merge(delta([register(value)]), T0));
      expect(r.get('k', T0)?.value).toBe('plain');
    });
  }

  it('a tie between two plain values resolves the same way in either order', () => {
    const x = register({ v: 1 });
    const y = register({ v: 2 });
    expect(joinKeyStates(x, y)).toBe(y);
    expect(joinKeyStates(y, x)).toBe(y);
    const z = register('z', { seq: 2 });
    expect(joinKeyStates(x, z)).toBe(z);
    expect(joinKeyStates(z, x)).toBe(z);
  });
});

describe('sequence numbers and context ranges', () => {
  it('decoders refuse a context range past MAX_SEQ', () => {
    const bytes = encodeDelta(delta([], new Map([['x', [1, 2 ** 53 - 1]]])));
    expect(() => decodeDelta(bytes)).toThrow(DecodeError);
    const digest = encodeDigest({ namespace: NS, context: new Map([['x', [5, MAX_SEQ + 1]]]) });
    expect(() => decodeDigest(digest)).toThrow(DecodeError);
    const fine = encodeDigest({ namespace: NS, context: new Map([['x', [5, MAX_SEQ]]]) });
    expect(hex(encodeDigest(decodeDigest(fine)))).toBe(hex(fine));
  });

  it('decoders refuse a dot past MAX_SEQ', () => {
    expect(() => decodeDelta(encodeDelta(delta([register(1, { seq: MAX_SEQ + 1 })])))).toThrow(DecodeError);
    expect((decodeDelta(encodeDelta(delta([register(1, { seq: MAX_SEQ })]))).states[0] as Register).seq).toBe(MAX_SEQ);
  });

  it("merge refuses a context that would make a replica ignore an origin's later writes", () => {
    const r = replica('a');
    refusedWhole(r, () => r.merge(delta([], new Map([['x', [1, 2 ** 53 - 1]]])), T0));
    // x's writes still arrive.
    r.merge(delta([register('from x', { seq: 7 })]), T0);
    expect(r.get('k', T0)?.value).toBe('from x');
  });

  it("merge refuses a context that pushes the replica's own sequence past the safe integers", () => {
    const r = replica('a');
    refusedWhole(r, () => r.merge(delta([], new Map([['a', [1, Number.MAX_SAFE_INTEGER]]])), T0));
    const d = r.set('k', 1, T0);
    expect((d.states[0] as Register).seq).toBe(1);
  });

  it('a replica whose sequence numbers are spent refuses to write instead of minting a dot peers refuse', () => {
    const r = replica('a');
    r.merge(delta([], new Map([['a', [1, MAX_SEQ]]])), T0);
    expect(() => r.set('k', 1, T0)).toThrow(InvalidArgumentError);
    expect(() => r.increment('c', 1, T0)).toThrow(InvalidArgumentError);
    expect(() => r.delete('k', T0)).toThrow(InvalidArgumentError);
  });

  it('merge and deltaFor refuse malformed ranges', () => {
    const r = replica('a');
    for (const ranges of [[0, 3], [5, 4], [1], [1.5, 2], [1, Number.NaN]]) {
      refusedWhole(r, () => r.merge(delta([], new Map([['x', ranges]])), T0));
      refusedWhole(r, () => r.deltaFor({ namespace: NS, context: new Map([['x', ranges]]) }));
      refusedWhole(r, () => r.gc(T0, { peers: [{ namespace: NS, context: new Map([['x', ranges]]) }] }));
    }
  });
});

describe('TTLs and the garbage collection bound', () => {
  it('decoders refuse a TTL beyond MAX_TTL_SECONDS', () => {
    const huge = encodeDelta(delta([register(1, { ttlSeconds: 2 ** 32 - 1 })]));
    expect(() => decodeDelta(huge)).toThrow(DecodeError);
    const over = encodeDelta(delta([register(1, { ttlSeconds: MAX_TTL_SECONDS + 1 })]));
    expect(() => decodeDelta(over)).toThrow(DecodeError);
    const counter = {
      type: 'counter',
      key: 'c',
      wallMs: 0,
      logical: 0,
      node: '',
      createdAt: T0,
      shares: new Map([['x', { inc: 1, dec: 0, wallMs: T0, logical: 0, seq: 1, ttlSeconds: 2 ** 32 - 1 }]]),
    };
    expect(() => decodeDelta(encodeDelta(delta([counter])))).toThrow(DecodeError);
  });

  it("merge refuses a TTL beyond the replica's own maximum (register or counter share)", () => {
    const r = replica('a', { maxTtlSeconds: 10, defaultTtlSeconds: 10 });
    refusedWhole(r, () => r.merge(delta([register(1, { ttlSeconds: 11 })]), T0));
    const counter = {
      type: 'counter',
      key: 'c',
      wallMs: 0,
      logical: 0,
      node: '',
      createdAt: T0,
      shares: new Map([['x', { inc: 1, dec: 0, wallMs: T0, logical: 0, seq: 1, ttlSeconds: 11 }]]),
    };
    refusedWhole(r, () => r.merge(delta([counter]), T0));
    r.merge(delta([register(1, { ttlSeconds: 10 })]), T0);
    expect(r.get('k', T0)?.ttlSeconds).toBe(10);
  });

  it('refuses a tombstoneGraceMs below maxTtlSeconds·1000, and a maxTtlSeconds beyond 30 days', () => {
    const short = { maxTtlSeconds: 10, defaultTtlSeconds: 10 };
    expect(() => replica('a', { ...short, tombstoneGraceMs: 9_999 })).toThrow(InvalidArgumentError);
    expect(() => replica('a', { tombstoneGraceMs: 1000 })).toThrow(InvalidArgumentError);
    expect(replica('a', { ...short, tombstoneGraceMs: 10_000 }).tombstoneGraceMs).toBe(10_000);
    expect(() => replica('a', { maxTtlSeconds: MAX_TTL_SECONDS + 1 })).toThrow(InvalidArgumentError);
  });
});

describe('merge is all or nothing', () => {
  it('a delta with one bad state applies none of its states and none of its context', () => {
    const r = replica('a');
    const good = register('good', { key: 'g', node: 'y', seq: 1 });
    const badState = register('bad', { key: 'b', node: 'z', seq: 1, createdAt: T0 + 1 }); // created after written
    refusedWhole(r, () => r.merge(delta([good, badState], new Map([['w', [1, 9]]])), T0));
    expect(r.get('g', T0)).toBeUndefined();
    expect(r.digest().context.size).toBe(0);
  });

  it('refuses every malformed field with invalid_argument', () => {
    const r = replica('a', { maxKeyBytes: 8, maxValueBytes: 16 });
    const cases: unknown[] = [
      null,
      { namespace: NS, states: 'x', context: new Map() },
      { namespace: NS, states: [], context: {} },
      delta([null]),
      delta([{ ...register(1), type: 'nope' }]),
      delta([register(1, { key: '' })]),
      delta([register(1, { key: 'k'.repeat(9) })]),
      delta([register(1, { key: '\ud800' })]),
      delta([register(1, { node: '' })]),
      delta([register(1, { node: 'n'.repeat(256) })]),
      delta([register(1, { wallMs: -1 })]),
      delta([register(1, { wallMs: 2 ** 53 })]),
      delta([register(1, { logical: MAX_LOGICAL + 1 })]),
      delta([register(1, { seq: 0 })]),
      delta([register(1, { ttlSeconds: 0 })]),
      delta([register('x'.repeat(20))]),
      delta([{ type: 'tombstone', key: 'k', wallMs: T0, logical: 0, node: 'x', seq: -1 }]),
      delta([{ type: 'counter', key: 'c', wallMs: 5, logical: 0, node: '', createdAt: T0, shares: new Map() }]),
      delta([
        { type: 'counter', key: 'c', wallMs: 5, logical: 0, node: '', createdAt: T0, shares: new Map([['x', {}]]) },
      ]),
    ];
    for (const d of cases) refusedWhole(r, () => r.merge(d as Delta, T0));
  });
});

describe('decoders keep their contract: whatever decodes re-encodes to the same bytes', () => {
  it('refuses value texts that are not what JSON.stringify prints', () => {
    for (const text of ['{"a": 1}', '1.0', '-0', '1e3', '"\\u0041"', '{"a":1,"a":2}', '{"b":1,"1":2}', '1e400']) {
      expect(() => decodeDelta(deltaWithValueText(text)), text).toThrow(DecodeError);
    }
    for (const text of ['{"a":1}', '1000', '"A"', '{"1":2,"b":1}', '[]']) {
      const bytes = deltaWithValueText(text);
      expect(hex(encodeDelta(decodeDelta(bytes)))).toBe(hex(bytes));
    }
  });

  it('reads integer texts without parsing them, and refuses the same spellings as the parser', () => {
    // Integers of up to 15 digits take a path that makes no string (codec.ts readInteger).
    for (const text of ['--1', '-01', '00', '+1', '1-', '1 ', ' 1', '12a', '0x1', '2.50', '-1e2', '1'.repeat(17)]) {
      expect(() => decodeDelta(deltaWithValueText(text)), text).toThrow(DecodeError);
    }
    const ints = ['-7', '10', '-10', '123456789012345', '-123456789012345', '1234567890123456', '9007199254740991'];
    for (const text of ints) {
      const bytes = deltaWithValueText(text);
      expect((decodeDelta(bytes).states[0] as Register).value, text).toBe(JSON.parse(text));
      expect(hex(encodeDelta(decodeDelta(bytes))), text).toBe(hex(bytes));
    }
    for (const value of [0, 7, -1, 2 ** 53 - 1, -(2 ** 53 - 1)]) {
      const d = decodeDelta(encodeDelta(delta([register(value)])));
      expect(Object.is((d.states[0] as Register).value, value), String(value)).toBe(true);
    }
  });

  it('refuses a node table that names a node the body does not use', () => {
    const bytes = encodeDigest({ namespace: NS, context: new Map([['x', [1, 2]]]) });
    // version tag ns(len 2) "ns" nodes(1) "x"(len 1) ...: add a second node "y" the context never names.
    const head = Array.from(bytes.subarray(0, 5));
    expect(head).toEqual([1, 3, 2, 0x6e, 0x73]);
    const forged = Uint8Array.from([...head, 2, 1, 0x78, 1, 0x79, ...bytes.subarray(8)]);
    expect(Array.from(bytes.subarray(5, 8))).toEqual([1, 1, 0x78]);
    expect(() => decodeDigest(forged)).toThrow(/unused node/);
  });
});

describe('the clock stays in bounds', () => {
  it('a stamp at MAX_LOGICAL carries into the next millisecond instead of growing past it', () => {
    const clock = new HybridLogicalClock('a');
    clock.observe({ wallMs: 5_000, logical: MAX_LOGICAL, node: 'x' }, 4_000);
    expect(clock.peek()).toEqual({ wallMs: 5_001, logical: 0, node: 'a' });
    const c2 = new HybridLogicalClock('a', { after: { wallMs: 5_000, logical: MAX_LOGICAL, node: 'a' } });
    expect(c2.now(4_000)).toEqual({ wallMs: 5_001, logical: 0, node: 'a' });
  });
});

describe('__proto__ keys', () => {
  it('a value with a "__proto__" key survives a write, the codec and a merge unchanged', () => {
    const value = JSON.parse('{"b":1,"__proto__":{"x":2}}');
    const a = replica('a');
    const b = replica('b');
    const d = a.set('k', value, T0);
    b.merge(decodeDelta(encodeDelta(d)), T0);
    for (const r of [a, b]) {
      const got = r.get('k', T0)?.value as Record<string, unknown>;
      expect(Object.keys(got)).toEqual(['b', '__proto__']);
      expect(Object.getOwnPropertyDescriptor(got, '__proto__')?.value).toEqual({ x: 2 });
      expect(JSON.stringify(got)).toBe('{"b":1,"__proto__":{"x":2}}');
    }
  });
});
