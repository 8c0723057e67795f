/**
 * @parley/crdt: deltas, full states and digests (codec.ts).
 *
 * Generated values respect the codec's documented shape (dots unique, context
 * ranges sorted, disjoint and non-adjacent, keys unique, TTLs within 30 days,
 * createdAt ≤ wallMs) and its bounds (limits.ts: sequence numbers and clocks
 * up to 2^48 − 1, logical counters up to 2^32 − 1, values up to 64 deep), and
 * reach their edges: thousands of origins and ranges, values at the depth
 * limit, long and astral strings.
 */
import {
  type CounterShare,
  type CounterState,
  type Delta,
  type Digest,
  decodeDelta,
  decodeDigest,
  decodeState,
  encodeDelta,
  encodeDigest,
  encodeState,
  type KeyState,
  MAX_LOGICAL,
  MAX_SEQ,
  MAX_TTL_SECONDS,
  MAX_VALUE_DEPTH,
  MAX_WALL_MS,
} from '@parley/crdt';
import type { Gen } from '../gen.js';
import type { Target } from '../target.js';

function nodeIds(g: Gen): string[] {
  const n = 1 + g.size(64);
  const set = new Set<string>();
  for (let i = 0; i < n * 2 && set.size < n; i++) set.add(g.bool(0.5) ? `n${g.int(10_000)}` : g.id(16));
  return [...set];
}

/** A sequence number: small, 32-bit, or near the top of the safe range. */
function seqNumber(g: Gen): number {
  const r = g.rng.float();
  if (r < 0.6) return 1 + g.int(1000);
  if (r < 0.9) return 1 + g.rng.nextU32();
  return MAX_SEQ - g.int(1 << 20);
}

/** Physical ms: now-ish, near zero, or anywhere up to MAX_WALL_MS. */
function wallMs(g: Gen): number {
  const r = g.rng.float();
  if (r < 0.7) return 1_700_000_000_000 + g.int(1_000_000_000);
  if (r < 0.85) return g.int(1_000_000);
  return g.uint(MAX_WALL_MS);
}

function later(wall: number, g: Gen): number {
  return Math.min(MAX_WALL_MS, wall + g.int(1_000_000));
}

function contextFor(g: Gen, nodes: readonly string[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const origins = g.int(nodes.length + 1);
  const many = g.bool(0.01);
  for (let o = 0; o < origins; o++) {
    const node = g.pick(nodes);
    if (out.has(node)) continue;
    const ranges: number[] = [];
    const count = 1 + (many ? g.int(5000) : g.size(64));
    let prevHi = g.bool(0.9) ? -1 : seqNumber(g) - 2;
    for (let i = 0; i < count; i++) {
      const lo = prevHi + 2 + (g.bool(0.7) ? g.int(5) : g.uint(1 << 30));
      const hi = lo + (g.bool(0.7) ? g.int(10) : g.uint(1 << 30));
      if (lo < 1 || hi > MAX_SEQ) break;
      ranges.push(lo, hi);
      prevHi = hi;
    }
    if (ranges.length > 0) out.set(node, ranges);
  }
  return out;
}

function statesFor(g: Gen, nodes: readonly string[]): KeyState[] {
  const states: KeyState[] = [];
  const keys = new Set<string>();
  const dots = new Set<string>();
  const n = g.bool(0.01) ? g.int(3000) : g.size(64);
  for (let i = 0; i < n; i++) {
    const key = g.bool(0.7) ? `k${g.int(100_000)}` : g.id(32);
    if (keys.has(key)) continue;
    keys.add(key);
    const wall = wallMs(g);
    const logical = g.bool(0.6) ? 0 : g.uint(g.bool(0.9) ? 1000 : MAX_LOGICAL);
    const kind = g.int(5);
    if (kind <= 2) {
      const node = g.pick(nodes);
      const seq = seqNumber(g);
      const dot = `${node}\u0000${seq}`;
      if (dots.has(dot)) continue;
      dots.add(dot);
      if (kind === 2) {
        states.push({ type: 'tombstone', key, wallMs: wall, logical, node, seq });
      } else {
        states.push({
          type: 'register',
          key,
          wallMs: wall,
          logical,
          node,
          seq,
          ttlSeconds: g.uintIn(1, MAX_TTL_SECONDS),
          createdAt: g.bool(0.5) ? wall : wall - g.int(Math.min(wall, 1_000_000_000) + 1),
          // Deeper values come from mutations.
          value: g.json(g.bool(0.1) ? MAX_VALUE_DEPTH : 8, 400),
        });
      }
    } else {
      const zero = g.bool(0.2);
      const shares = new Map<string, CounterShare>();
      const nShares = 1 + g.int(Math.min(nodes.length, 8));
      for (let j = 0; j < nShares; j++) {
        shares.set(g.pick(nodes), {
          inc: g.uint(),
          dec: g.uint(),
          wallMs: later(zero ? 0 : wall, g),
          logical: g.int(100),
          seq: seqNumber(g),
          ttlSeconds: g.uintIn(1, MAX_TTL_SECONDS),
        });
      }
      const base = zero ? 0 : wall;
      const counter: CounterState = {
        type: 'counter',
        key,
        wallMs: base,
        logical: zero ? 0 : logical,
        node: zero ? '' : g.pick(nodes),
        createdAt: later(base, g),
        shares,
      };
      states.push(counter);
    }
  }
  return states;
}

function delta(g: Gen): Delta {
  const nodes = nodeIds(g);
  return { namespace: g.string(64), states: statesFor(g, nodes), context: contextFor(g, nodes) };
}

/** States as plain data in key order (keys are unique), so a Register instance equals its plain twin. */
function normalizeDelta(d: Delta): unknown {
  const states = d.states.map((s) => {
    if (s.type === 'register') {
      const { key, wallMs, logical, node, seq, ttlSeconds, createdAt, value } = s;
      return { type: s.type, key, wallMs, logical, node, seq, ttlSeconds, createdAt, value };
    }
    return { ...s };
  });
  states.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { namespace: d.namespace, context: d.context, states };
}

export const crdtTargets: Target[] = [
  {
    name: 'crdt.decodeDelta',
    codes: ['decode_error'],
    share: 0.5,
    generate: delta,
    encode: (v: Delta) => encodeDelta(v),
    decode: decodeDelta,
    normalize: normalizeDelta,
  } satisfies Target<Delta>,
  {
    name: 'crdt.decodeState',
    codes: ['decode_error'],
    share: 0.5,
    generate: delta,
    encode: (v: Delta) => encodeState(v),
    decode: decodeState,
    normalize: normalizeDelta,
  } satisfies Target<Delta>,
  {
    name: 'crdt.decodeDigest',
    codes: ['decode_error'],
    generate: (g: Gen): Digest => ({ namespace: g.string(64), context: contextFor(g, nodeIds(g)) }),
    encode: (v: Digest) => encodeDigest(v),
    decode: decodeDigest,
  } satisfies Target<Digest>,
] as Target[];
