import { DecodeError, InvalidArgumentError, ParleyError, SeededRandom, testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Delta,
  type Digest,
  decodeDelta,
  decodeDigest,
  decodeState,
  encodeDelta,
  encodeDigest,
  encodeState,
  NamespaceReplica,
} from './index.js';

const SEED = testSeed(20_261_129);
const RUNS = 1000;

/** fc.assert with the seed printed on failure, so `PARLEY_SEED=<n>` replays it. */
function check<T>(arb: fc.Arbitrary<T>, predicate: (t: T) => void, numRuns = RUNS): void {
  withSeed(SEED, (seed) => fc.assert(fc.property(arb, predicate), { numRuns, seed }));
}

const NS = 'prop';
const KEYS = ['a', 'b', 'c', 'd', 'e'];
const valueArb = fc.oneof(
  fc.integer({ min: -5, max: 5 }),
  fc.string({ maxLength: 4 }),
  fc.constant(null),
  fc.record({ n: fc.integer({ min: 0, max: 3 }), s: fc.constantFrom('x', 'é', '😀') }),
);

type Op =
  | { type: 'set'; r: number; key: string; value: unknown; ttl: number }
  | { type: 'inc'; r: number; key: string; by: number; ttl: number }
  | { type: 'del'; r: number; key: string }
  | { type: 'tick'; ms: number }
  | { type: 'deliver'; count: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('set' as const),
      r: fc.nat(4),
      key: fc.constantFrom(...KEYS),
      value: valueArb,
      ttl: fc.constantFrom(1, 2, 3600),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('inc' as const),
      r: fc.nat(4),
      key: fc.constantFrom(...KEYS),
      by: fc.integer({ min: -3, max: 3 }),
      ttl: fc.constantFrom(1, 3600),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ type: fc.constant('del' as const), r: fc.nat(4), key: fc.constantFrom(...KEYS) }),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('tick' as const), ms: fc.constantFrom(0, 1, 2, 700, 1500) }) },
  { weight: 3, arbitrary: fc.record({ type: fc.constant('deliver' as const), count: fc.integer({ min: 1, max: 4 }) }) },
);

const scenarioArb = fc.record({
  replicas: fc.integer({ min: 2, max: 5 }),
  ops: fc.array(opArb, { maxLength: 40 }),
  netSeed: fc.nat(),
});

interface Run {
  replicas: NamespaceReplica[];
  deltas: Delta[];
  nowMs: number;
}

/** Runs random operations; deltas travel as bytes, out of order, duplicated and dropped. */
function simulate(s: { replicas: number; ops: Op[]; netSeed: number }): Run {
  const rng = new SeededRandom(s.netSeed);
  const replicas = Array.from(
    { length: s.replicas },
    (_, i) => new NamespaceReplica({ namespace: NS, replicaId: `r${i}` }),
  );
  const inFlight: Array<{ to: number; bytes: Uint8Array }> = [];
  const deltas: Delta[] = [];
  let nowMs = 1_000_000;
  const emit = (from: number, delta: Delta) => {
    deltas.push(delta);
    const bytes = encodeDelta(delta);
    for (let to = 0; to < replicas.length; to++) if (to !== from) inFlight.push({ to, bytes });
  };
  for (const op of s.ops) {
    if (op.type === 'tick') {
      nowMs += op.ms;
      continue;
    }
    if (op.type === 'deliver') {
      for (let i = 0; i < op.count && inFlight.length > 0; i++) {
        const at = rng.int(inFlight.length);
        const msg = inFlight[at] as { to: number; bytes: Uint8Array };
        const fate = rng.int(10);
        if (fate < 7) inFlight.splice(at, 1); // delivered once (or dropped below)
        if (fate === 0) continue; // dropped
        (replicas[msg.to] as NamespaceReplica).merge(decodeDelta(msg.bytes), nowMs);
      }
      continue;
    }
    const r = op.r % replicas.length;
    const replica = replicas[r] as NamespaceReplica;
    try {
      if (op.type === 'set') emit(r, replica.set(op.key, op.value as never, nowMs, { ttlSeconds: op.ttl }));
      else if (op.type === 'inc') emit(r, replica.increment(op.key, op.by, nowMs, { ttlSeconds: op.ttl }));
      else emit(r, replica.delete(op.key, nowMs));
    } catch (err) {
      // Incrementing a live register is refused; nothing else may throw.
      if (!(err instanceof ParleyError && err.code === 'invalid_argument')) throw err;
    }
  }
  return { replicas, deltas, nowMs };
}

/** Anti-entropy: every replica pulls from every other through the codec, twice over. */
function antiEntropy(replicas: NamespaceReplica[], nowMs: number): number {
  let statesSent = 0;
  for (let round = 0; round < 2; round++) {
    for (const a of replicas) {
      for (const b of replicas) {
        if (a === b) continue;
        const digest = decodeDigest(encodeDigest(a.digest()));
        const reply = decodeDelta(encodeDelta(b.deltaFor(digest)));
        statesSent += reply.states.length;
        a.merge(reply, nowMs);
      }
    }
  }
  return statesSent;
}

function fresh(id = 'observer'): NamespaceReplica {
  return new NamespaceReplica({ namespace: NS, replicaId: id });
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

describe('convergence (property)', () => {
  it('random ops on 2–5 replicas, lossy reordered duplicated delivery, then anti-entropy: identical values and bytes', () => {
    check(scenarioArb, (s) => {
      const { replicas, deltas, nowMs } = simulate(s);
      antiEntropy(replicas, nowMs);
      const expectedEntries = (replicas[0] as NamespaceReplica).entries(nowMs);
      const expectedBytes = hex(encodeState((replicas[0] as NamespaceReplica).state()));
      for (const r of replicas) {
        expect(r.entries(nowMs)).toEqual(expectedEntries);
        expect(hex(encodeState(r.state()))).toBe(expectedBytes);
      }
      // Merging every delta ever produced equals merging the full states.
      const viaDeltas = fresh();
      for (const d of deltas) viaDeltas.merge(d, nowMs);
      const viaStates = fresh();
      for (const r of replicas) viaStates.merge(decodeState(encodeState(r.state())), nowMs);
      expect(hex(encodeState(viaDeltas.state()))).toBe(expectedBytes);
      expect(hex(encodeState(viaStates.state()))).toBe(expectedBytes);
      // Converged replicas have nothing left to send each other.
      const [a, b] = replicas as [NamespaceReplica, NamespaceReplica];
      expect(a.deltaFor(b.digest()).states).toHaveLength(0);
    });
  });

  it('merge is commutative, associative and idempotent on states', () => {
    check(
      scenarioArb,
      (s) => {
        const { replicas, nowMs } = simulate(s);
        const states = replicas.slice(0, 3).map((r) => r.state());
        const [x, y, z = states[0] as Delta] = states as [Delta, Delta, Delta?];
        const join = (...ds: Delta[]) => {
          const r = fresh();
          for (const d of ds) r.merge(d, nowMs);
          return hex(encodeState(r.state()));
        };
        expect(join(x, y)).toBe(join(y, x));
        expect(join(join1(x, y, nowMs), z)).toBe(join(x, join1(y, z, nowMs)));
        expect(join(x, x, y, y)).toBe(join(x, y));
      },
      RUNS,
    );
  });

  it('codec round trip: decode(encode(x)) re-encodes to the same bytes and merges to the same state', () => {
    check(
      scenarioArb,
      (s) => {
        const { replicas, deltas, nowMs } = simulate(s);
        for (const d of deltas) {
          const bytes = encodeDelta(d);
          expect(hex(encodeDelta(decodeDelta(bytes)))).toBe(hex(bytes));
        }
        for (const r of replicas) {
          const bytes = encodeState(r.state());
          const back = fresh();
          back.merge(decodeState(bytes), nowMs);
          expect(back.entries(nowMs)).toEqual(r.entries(nowMs));
          expect(hex(encodeState(back.state()))).toBe(hex(bytes));
          const digest = encodeDigest(r.digest());
          expect(hex(encodeDigest(decodeDigest(digest)))).toBe(hex(digest));
        }
      },
      RUNS,
    );
  });
});

/** Helper for associativity: the state of x ⊔ y as a delta. */
function join1(x: Delta, y: Delta, nowMs: number): Delta {
  const r = fresh();
  r.merge(x, nowMs);
  r.merge(y, nowMs);
  return r.state();
}

describe('garbage collection never brings data back (property)', () => {
  type GcOp =
    | { type: 'set'; r: number; key: string; value: number; ttl: number }
    | { type: 'del'; r: number; key: string }
    | { type: 'tick'; ms: number }
    | { type: 'deliver'; count: number }
    | { type: 'gc'; r: number };
  const gcOpArb: fc.Arbitrary<GcOp> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        type: fc.constant('set' as const),
        r: fc.nat(4),
        key: fc.constantFrom('a', 'b'),
        value: fc.integer({ min: 0, max: 9 }),
        ttl: fc.constantFrom(1, 5, 10),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({ type: fc.constant('del' as const), r: fc.nat(4), key: fc.constantFrom('a', 'b') }),
    },
    {
      weight: 3,
      arbitrary: fc.record({ type: fc.constant('tick' as const), ms: fc.constantFrom(0, 2_500, 11_000) }),
    },
    {
      weight: 3,
      arbitrary: fc.record({ type: fc.constant('deliver' as const), count: fc.integer({ min: 1, max: 4 }) }),
    },
    { weight: 2, arbitrary: fc.record({ type: fc.constant('gc' as const), r: fc.nat(4) }) },
  );

  let gcRemoved = 0;
  it('replicas that collect at random times read exactly what a never-collecting replica reads', () => {
    // Short leases so that random time jumps cross the grace period (= the 10 s maximum TTL).
    const make = (id: string) =>
      new NamespaceReplica({ namespace: NS, replicaId: id, maxTtlSeconds: 10, defaultTtlSeconds: 10 });
    check(
      fc.record({
        replicas: fc.integer({ min: 2, max: 4 }),
        ops: fc.array(gcOpArb, { minLength: 20, maxLength: 60 }),
        netSeed: fc.nat(),
      }),
      (s) => {
        const rng = new SeededRandom(s.netSeed);
        const replicas = Array.from({ length: s.replicas }, (_, i) => make(`r${i}`));
        const reference = make('reference');
        const inFlight: Array<{ to: number; delta: Delta }> = [];
        let nowMs = 1_000_000;
        let collected = 0;
        for (const op of s.ops) {
          if (op.type === 'tick') nowMs += op.ms;
          else if (op.type === 'gc')
            collected += (replicas[op.r % replicas.length] as NamespaceReplica).gc(nowMs).removed;
          else if (op.type === 'deliver') {
            for (let i = 0; i < op.count && inFlight.length > 0; i++) {
              const [msg] = inFlight.splice(rng.int(inFlight.length), 1);
              if (msg && rng.int(4) !== 0) (replicas[msg.to] as NamespaceReplica).merge(msg.delta, nowMs);
            }
          } else {
            const r = op.r % replicas.length;
            const replica = replicas[r] as NamespaceReplica;
            const delta =
              op.type === 'set'
                ? replica.set(op.key, op.value, nowMs, { ttlSeconds: op.ttl })
                : replica.delete(op.key, nowMs);
            reference.merge(delta, nowMs);
            for (let to = 0; to < replicas.length; to++) if (to !== r) inFlight.push({ to, delta });
          }
        }
        antiEntropy(replicas, nowMs);
        const expected = reference.entries(nowMs);
        for (const r of replicas) expect(r.entries(nowMs)).toEqual(expected);
        // Collected replicas still converge byte for byte once all collect at the same instant.
        for (const r of replicas) r.gc(nowMs + 20_000);
        const bytes = hex(encodeState((replicas[0] as NamespaceReplica).state()));
        for (const r of replicas) expect(hex(encodeState(r.state()))).toBe(bytes);
        gcRemoved += collected;
      },
    );
    expect(gcRemoved).toBeGreaterThan(RUNS); // the runs did collect, often
  });
});

describe('decoders on untrusted bytes (property)', () => {
  const codecs = [
    [decodeDelta, encodeDelta],
    [decodeState, encodeState],
    [decodeDigest, encodeDigest],
  ] as const;

  /** The decoder contract: DecodeError, or a value that re-encodes to the very same bytes. */
  function onlyDecodeErrors(bytes: Uint8Array): void {
    for (const [decode, encode] of codecs) {
      let decoded: Delta | Digest;
      try {
        decoded = decode(bytes);
      } catch (err) {
        expect(err).toBeInstanceOf(DecodeError);
        continue;
      }
      expect(hex((encode as (d: Delta | Digest) => Uint8Array)(decoded))).toBe(hex(bytes));
      // Whatever decodes must merge without surprises: applied, or refused whole with a typed error.
      if ('states' in decoded) {
        const r = new NamespaceReplica({ namespace: decoded.namespace, replicaId: 'fuzz' });
        try {
          r.merge(decoded as Delta, 5_000_000_000_000);
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidArgumentError);
        }
        encodeState(r.state());
        r.deltaFor({ namespace: decoded.namespace, context: new Map() });
      }
    }
  }

  it('random bytes give only DecodeError', () => {
    check(fc.uint8Array({ maxLength: 200 }), (bytes) => onlyDecodeErrors(bytes));
    check(
      fc.uint8Array({ maxLength: 200 }).map((b) => Uint8Array.from([1, 1 + ((b[0] ?? 0) % 3), ...b])),
      (bytes) => onlyDecodeErrors(bytes),
    );
  });

  it('mutated valid encodings give only DecodeError', () => {
    const { replicas, deltas, nowMs } = simulate({
      replicas: 3,
      ops: Array.from(
        { length: 30 },
        (_, i): Op =>
          i % 3 === 0
            ? {
                type: 'set',
                r: i % 3,
                key: KEYS[i % 5] as string,
                // Small values, and now and then one nested to the depth limit.
                value: i % 9 === 0 ? JSON.parse(`${'[{"a":'.repeat(32)}1${'}]'.repeat(32)}`) : { n: i, s: 'é😀' },
                ttl: 60 + i,
              }
            : i % 3 === 1
              ? { type: 'inc', r: i % 3, key: `c${i % 2}`, by: i - 10, ttl: 3600 }
              : { type: 'deliver', count: 2 },
      ),
      netSeed: 1,
    });
    antiEntropy(replicas, nowMs);
    const samples = [
      encodeState((replicas[0] as NamespaceReplica).state()),
      encodeDigest((replicas[1] as NamespaceReplica).digest()),
      ...deltas.slice(0, 5).map(encodeDelta),
    ];
    const mutation = fc.record({
      sample: fc.nat(samples.length - 1),
      edits: fc.array(
        fc.record({
          kind: fc.constantFrom('flip', 'set', 'insert', 'delete', 'truncate'),
          at: fc.nat(),
          byte: fc.nat(255),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    });
    check(mutation, ({ sample, edits }) => {
      const bytes = Array.from(samples[sample] as Uint8Array);
      for (const e of edits) {
        const at = e.at % Math.max(1, bytes.length);
        if (e.kind === 'flip') bytes[at] = (bytes[at] ?? 0) ^ (1 << (e.byte % 8));
        else if (e.kind === 'set') bytes[at] = e.byte;
        else if (e.kind === 'insert') bytes.splice(at, 0, e.byte);
        else if (e.kind === 'delete') bytes.splice(at, 1);
        else bytes.length = at;
      }
      onlyDecodeErrors(Uint8Array.from(bytes));
    });
  });
});
