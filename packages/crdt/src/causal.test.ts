/**
 * Causal delivery (INTERNALS §7): writes carrying deps, delivered lost,
 * duplicated and reordered, through the codec. Properties: a replica never
 * shows a write (its key's state holds the write's dot) without covering
 * its deps; the
 * pending buffer stays within its bound; and replicas still converge after
 * anti-entropy.
 */
import { testSeed, withSeed } from '@parley/interface';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEPS_VERSION, type Delta, decodeDelta, encodeDelta, encodeState, NamespaceReplica } from './index.js';

const SEED = testSeed(20_261_202);
const NS = 'causal';
const KEYS = ['x', 'y', 'z'];
const MAX_PENDING = 3;

function replicas(n: number): NamespaceReplica[] {
  return Array.from(
    { length: n },
    (_, i) => new NamespaceReplica({ namespace: NS, replicaId: `r${i}`, maxPendingDeltas: MAX_PENDING }),
  );
}

type Op =
  | { type: 'write'; s: number; r: number; key: string; kind: 'set' | 'inc' | 'del' }
  | { type: 'read'; s: number; r: number; key: string }
  | { type: 'deliver'; i: number; to: number }
  | { type: 'ae'; from: number; to: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('write' as const),
      s: fc.nat(2),
      r: fc.nat(2),
      key: fc.constantFrom(...KEYS),
      kind: fc.constantFrom('set' as const, 'inc' as const, 'del' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('read' as const),
      s: fc.nat(2),
      r: fc.nat(2),
      key: fc.constantFrom(...KEYS),
    }),
  },
  { weight: 5, arbitrary: fc.record({ type: fc.constant('deliver' as const), i: fc.nat(40), to: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('ae' as const), from: fc.nat(2), to: fc.nat(2) }) },
);

function observe(frontier: Map<string, number>, dots: Iterable<readonly [string, number]>): void {
  for (const [o, s] of dots) if (s > (frontier.get(o) ?? 0)) frontier.set(o, s);
}

describe('causal delivery', () => {
  it('never shows a write before its deps, bounds the pending buffer, and converges', () => {
    withSeed(SEED, (seed) =>
      fc.assert(
        fc.property(fc.array(opArb, { minLength: 5, maxLength: 80 }), (ops) => {
          const rs = replicas(3);
          const sessions = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()];
          const sent: Array<{ key: string; bytes: Uint8Array; dot: [string, number][]; deps: Map<string, number> }> =
            [];
          let now = 1_000;
          for (const op of ops) {
            now += 1;
            if (op.type === 'write' || op.type === 'read') {
              const r = rs[op.r] as NamespaceReplica;
              const session = sessions[op.s] as Map<string, number>;
              if (!r.covers(session)) {
                // What a node does: pull from the others until it covers the session.
                for (const other of rs) if (other !== r) r.merge(other.deltaFor(r.digest()), now);
              }
              if (!r.covers(session)) continue;
              if (op.type === 'read') {
                r.get(op.key, now);
                observe(session, r.dotsOf(op.key));
                continue;
              }
              const deps = new Map(session);
              let delta: Delta;
              if (op.kind === 'set') delta = r.set(op.key, now, now, { deps });
              else if (op.kind === 'del') delta = r.delete(op.key, now, { deps });
              else {
                const held = r.stateOf(op.key);
                if (held?.type === 'register' && now < held.wallMs + held.ttlSeconds * 1000) continue;
                delta = r.increment(op.key, 1, now, { deps });
              }
              const bytes = encodeDelta(delta);
              if (deps.size > 0) expect(bytes[0]).toBe(DEPS_VERSION);
              const dot = r.dotsOf(op.key).filter(([o]) => o === r.replicaId);
              sent.push({ key: op.key, bytes, dot, deps });
              observe(session, dot);
            } else if (op.type === 'deliver') {
              const m = sent[op.i % Math.max(1, sent.length)];
              if (m) (rs[op.to] as NamespaceReplica).merge(decodeDelta(m.bytes), now);
            } else if (op.from !== op.to) {
              const a = rs[op.from] as NamespaceReplica;
              const b = rs[op.to] as NamespaceReplica;
              b.merge(decodeDelta(encodeDelta(a.deltaFor(b.digest()))), now);
            }
            for (const r of rs) {
              expect(r.stats().pendingDeltas).toBeLessThanOrEqual(MAX_PENDING);
              for (const m of sent) {
                // A write is visible where the key's state holds its dot: only with its deps covered.
                const held = r.dotsOf(m.key);
                const visible = m.dot.every(([o, s]) => held.some(([ho, hs]) => ho === o && hs === s));
                if (visible) expect(r.covers(m.deps)).toBe(true);
              }
            }
          }
          // Anti-entropy all around, twice: every replica converges, nothing is left pending for long.
          for (let round = 0; round < 2; round++)
            for (const a of rs) for (const b of rs) if (a !== b) b.merge(a.deltaFor(b.digest()), now);
          const s0 = encodeState((rs[0] as NamespaceReplica).state());
          for (const r of rs) expect(encodeState(r.state())).toEqual(s0);
        }),
        { numRuns: 400, seed },
      ),
    );
  });

  it('holds a write until its deps arrive, then applies it', () => {
    const [a, b, c] = replicas(3) as [NamespaceReplica, NamespaceReplica, NamespaceReplica];
    const x = a.set('x', 1, 1_000);
    b.merge(x, 1_001);
    const y = b.set('y', 2, 1_002, { deps: new Map([['r0', 1]]) });
    const wire = decodeDelta(encodeDelta(y));
    expect(wire.deps).toEqual(new Map([['r0', 1]]));
    const held = c.merge(wire, 1_003);
    expect(held).toMatchObject({ held: true, changedKeys: [] });
    expect(c.get('y', 1_003)).toBeUndefined();
    expect(c.digest().context.size).toBe(0);
    const after = c.merge(x, 1_004);
    expect(after.changedKeys).toEqual(['x', 'y']);
    expect(after.released).toHaveLength(1);
    expect(c.get('y', 1_004)?.value).toBe(2);
    expect(c.stats().pendingDeltas).toBe(0);
  });

  it('a session overwrite depends on the writer’s prefix frontier: its superseded dots bring their past', () => {
    const [a, b, d] = replicas(3) as [NamespaceReplica, NamespaceReplica, NamespaceReplica];
    const x = a.set('x', 1, 1_000);
    b.merge(x, 1_001);
    b.set('y', 1, 1_002, { deps: new Map([['r0', 1]]) }); // y1 follows x
    const y2 = b.set('y', 2, 1_003, { deps: new Map() }); // supersedes y1: its dot travels as context
    expect(y2.deps).toEqual(
      new Map([
        ['r0', 1],
        ['r1', 1],
      ]),
    );
    expect(d.merge(y2, 1_004)).toMatchObject({ held: true });
    expect(d.covers(new Map([['r1', 1]]))).toBe(false); // y1's dot is not claimed without x
    d.merge(x, 1_005); // y2 needs x, and not a copy of y1 (it brings y1's dot itself)
    expect(d.get('y', 1_005)?.value).toBe(2);
    expect(
      d.covers(
        new Map([
          ['r0', 1],
          ['r1', 2],
        ]),
      ),
    ).toBe(true);
  });

  it('refuses a local write whose deps it does not cover', () => {
    const [a] = replicas(1) as [NamespaceReplica];
    expect(() => a.set('x', 1, 1_000, { deps: new Map([['r9', 1]]) })).toThrow(/lacks/);
  });

  it('drops the oldest held delta beyond the bound', () => {
    const [a, b, c] = replicas(3) as [NamespaceReplica, NamespaceReplica, NamespaceReplica];
    b.merge(a.set('x', 1, 1_000), 1_000);
    for (let i = 0; i < MAX_PENDING + 2; i++)
      c.merge(b.set(`k${i}`, i, 1_001 + i, { deps: new Map([['r0', 1]]) }), 1_010);
    expect(c.stats()).toMatchObject({ pendingDeltas: MAX_PENDING, pendingDropped: 2 });
    c.merge(b.deltaFor(c.digest()), 1_020);
    expect(c.keys(1_020)).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'x']);
  });
});

describe('deps on the wire', () => {
  it('writes version 1 without deps, version 2 only for a delta with deps, and decodes both', () => {
    const [a] = replicas(1) as [NamespaceReplica];
    const plain = encodeDelta(a.set('x', 1, 1_000));
    expect(plain[0]).toBe(1);
    const withDeps = encodeDelta(a.set('y', 2, 1_001, { deps: new Map([['r0', 1]]) }));
    expect(withDeps[0]).toBe(DEPS_VERSION);
    expect(encodeDelta(decodeDelta(withDeps))).toEqual(withDeps);
    const state = encodeState(a.state());
    const v2state = state.slice();
    v2state[0] = DEPS_VERSION;
    expect(() => decodeDelta(v2state)).toThrow();
    // Every truncation of a deps delta fails with DecodeError, never allocates past the input.
    for (let n = 0; n < withDeps.length; n++) expect(() => decodeDelta(withDeps.subarray(0, n))).toThrow();
  });
});
