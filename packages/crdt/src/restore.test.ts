/**
 * `restore` (bulk install of a replica's own records) against the general
 * merge it stands for: on random histories, the same records restored in bulk
 * and merged one by one (`merge(d, now, { checked: true, ignoreDeps: true })`)
 * must build the same replica: state, stats, digest, anti-entropy replies,
 * reads, clock, and the next local write.
 */
import { InvalidArgumentError, SeededRandom, testSeed, withSeed } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import {
  type Delta,
  type Digest,
  decodeDelta,
  decodeState,
  encodeDelta,
  encodeState,
  joinDeltas,
  type KeyState,
  NamespaceReplica,
} from './index.js';
import { maxWallOf } from './key-state.js';

const SEED = testSeed(20_261_202);
const NS = 'restore';
const T0 = 1_750_000_000_000;
const GRACE = 60_000;

function replica(id: string): NamespaceReplica {
  return new NamespaceReplica({
    namespace: NS,
    replicaId: id,
    maxTtlSeconds: 30,
    defaultTtlSeconds: 10,
    tombstoneGraceMs: GRACE,
    maxClockDriftMs: 5_000,
  });
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Registers and tombstones by (node, seq), counters after them by key: the order a node writes its snapshot in. */
function byDot(a: KeyState, b: KeyState): number {
  const ac = a.type === 'counter';
  const bc = b.type === 'counter';
  if (ac !== bc) return ac ? 1 : -1;
  if (a.type === 'counter' || b.type === 'counter') return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  if (a.node !== b.node) return a.node < b.node ? -1 : 1;
  return a.seq - b.seq;
}

/** A replica's state as snapshot chunks of `size` states (the last one with the context), through the codec. */
function chunks(r: NamespaceReplica, size: number, rnd: SeededRandom): Delta[] {
  const state = r.state();
  const all = [...state.states].sort(byDot);
  // Sometimes out of dot order, or a state repeated in a later chunk: restore must not rely on either.
  if (rnd.int(4) === 0) {
    for (let i = all.length - 1; i > 0; i--) {
      const j = rnd.int(i + 1);
      [all[i], all[j]] = [all[j] as KeyState, all[i] as KeyState];
    }
  }
  if (rnd.int(4) === 0 && all.length > 0) all.push(all[rnd.int(all.length)] as KeyState);
  const out: Delta[] = [];
  for (let i = 0; i < all.length || out.length === 0; i += size) {
    const last = i + size >= all.length;
    const part = all.slice(i, i + size);
    // A chunk holds each key once (the codec refuses duplicates).
    const seen = new Set<string>();
    const unique = part.filter((s) => !seen.has(s.key) && seen.add(s.key));
    out.push(decodeState(encodeState({ namespace: NS, states: unique, context: last ? state.context : new Map() })));
  }
  return out;
}

interface History {
  records: Delta[];
  /** How many of `records` are snapshot chunks (the rest is the log). */
  snapshotCount: number;
  /** The records that are replica a's own local writes. */
  own: Set<Delta>;
  nowMs: number;
}

/**
 * Three replicas write, delete, count, expire and exchange deltas; replica
 * a's records are then a snapshot of its state at some point plus a log of
 * everything it applied afterwards (its own writes and what it merged).
 */
function history(rnd: SeededRandom): History {
  const rs = [replica('a'), replica('b'), replica('c')];
  const a = rs[0] as NamespaceReplica;
  let now = T0;
  const keys = Array.from({ length: 3 + rnd.int(30) }, (_, i) => `k${i}`);
  let log: Delta[] = [];
  let snapshot: Delta[] = [];
  const steps = 20 + rnd.int(200);
  const snapAt = rnd.int(steps);
  const inFlight: Delta[] = [];
  const own = new Set<Delta>();
  for (let step = 0; step < steps; step++) {
    if (step === snapAt) {
      snapshot = chunks(a, 1 + rnd.int(8), rnd);
      log = [];
    }
    const r = rs[rnd.int(3)] as NamespaceReplica;
    const key = keys[rnd.int(keys.length)] as string;
    const op = rnd.int(10);
    now += rnd.int(5) === 0 ? rnd.int(2 * GRACE) : rnd.int(50);
    let d: Delta | undefined;
    try {
      if (op < 5)
        d = r.set(key, rnd.int(3) === 0 ? { n: rnd.int(100), s: 'x' } : rnd.int(1000), now, {
          ttlSeconds: 1 + rnd.int(30),
        });
      else if (op < 7) d = r.increment(key, rnd.int(7) - 3, now, { ttlSeconds: 1 + rnd.int(30) });
      else if (op < 8) d = r.delete(key, now);
      else if (op < 9) {
        // By the time rule alone, or once every peer has seen a state (then a late copy of it may
        // still reach a's log, and is not collectable by time when a restores).
        r.gc(now, rnd.int(2) === 0 ? {} : { peers: rs.filter((x) => x !== r).map((x) => x.digest()) });
      } else {
        const from = rs[rnd.int(3)] as NamespaceReplica;
        const to = rs[rnd.int(3)] as NamespaceReplica;
        d = from.deltaFor(to.digest());
        const merged = to.merge(decodeDelta(encodeDelta(d)), now);
        if (to === a && merged.changedKeys.length + d.context.size > 0) log.push(decodeDelta(encodeDelta(d)));
        d = undefined;
      }
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err; // a counter on a register, say
    }
    if (d === undefined) continue;
    const bytes = encodeDelta(d);
    if (r === a) {
      const mine = decodeDelta(bytes);
      log.push(mine);
      own.add(mine);
    }
    inFlight.push(decodeDelta(bytes));
    if (inFlight.length > 0 && rnd.int(3) === 0) {
      const late = inFlight.splice(rnd.int(inFlight.length), 1)[0] as Delta;
      const to = rs[rnd.int(3)] as NamespaceReplica;
      const merged = to.merge(late, now, { ignoreDeps: true });
      if (to === a && merged.changedKeys.length + late.context.size > 0) log.push(late);
    }
  }
  // Restored at the later of the clock and the records' stamps, sometimes much later (states collectable),
  // sometimes earlier than the records (states refused for drift).
  const choice = rnd.int(4);
  const nowMs = choice === 0 ? now + rnd.int(3 * GRACE) : choice === 1 ? now - rnd.int(20_000) : now;
  return { records: [...snapshot, ...log], snapshotCount: snapshot.length, own, nowMs };
}

function digestOf(r: NamespaceReplica, rnd: SeededRandom): Digest {
  // A peer that saw a random prefix of each origin.
  const context = new Map<string, number[]>();
  for (const [node, ranges] of r.digest().context) {
    const hi = ranges[ranges.length - 1] as number;
    const cut = rnd.int(hi + 1);
    if (cut > 0) context.set(node, [1, cut]);
  }
  return { namespace: NS, context };
}

function same(general: NamespaceReplica, bulk: NamespaceReplica, nowMs: number, rnd: SeededRandom): void {
  expect(hex(encodeState(bulk.state()))).toBe(hex(encodeState(general.state())));
  expect(bulk.stats()).toEqual(general.stats());
  expect(bulk.clock.peek()).toEqual(general.clock.peek());
  expect(bulk.entries(nowMs)).toEqual(general.entries(nowMs));
  const empty: Digest = { namespace: NS, context: new Map() };
  expect(hex(encodeDelta(bulk.deltaFor(empty)))).toBe(hex(encodeDelta(general.deltaFor(empty))));
  const partial = digestOf(general, rnd);
  expect(hex(encodeDelta(bulk.deltaFor(partial)))).toBe(hex(encodeDelta(general.deltaFor(partial))));
  // The next local write: same sequence number, same stamp.
  const later = nowMs + 1;
  expect(hex(encodeDelta(bulk.set('next', 1, later)))).toBe(hex(encodeDelta(general.set('next', 1, later))));
  expect(bulk.gc(later + 10 * GRACE)).toEqual(general.gc(later + 10 * GRACE));
  expect(hex(encodeState(bulk.state()))).toBe(hex(encodeState(general.state())));
}

describe(`restore builds what the general merge builds (PARLEY_SEED=${SEED})`, () => {
  it('on random histories: snapshots in and out of dot order, logs, collectable and drifting states', () => {
    withSeed(SEED, (seed) => {
      const rnd = new SeededRandom(seed);
      for (let round = 0; round < 150; round++) {
        const { records, nowMs } = history(rnd);
        const general = replica('a');
        for (const d of records) general.merge(d, nowMs, { checked: true, ignoreDeps: true });
        const bulk = replica('a');
        bulk.restore(records, nowMs);
        same(general, bulk, nowMs, rnd);
      }
    });
  });

  it('runs of own writes joined into one delta each (joinDeltas) restore what they restore one by one', () => {
    withSeed(SEED, (seed) => {
      const rnd = new SeededRandom(seed);
      for (let round = 0; round < 150; round++) {
        const h = history(rnd);
        // A node restores at the later of its clock and its records' stamps: no state is refused for
        // drift (a refusal keeps the context of its whole delta out, and a joined delta is bigger).
        let nowMs = h.nowMs;
        for (const d of h.records) for (const st of d.states) nowMs = Math.max(nowMs, maxWallOf(st));
        const general = replica('a');
        for (const d of h.records) general.merge(d, nowMs, { checked: true, ignoreDeps: true });
        // As a node logs a group commit: each run of its own local writes joined, merged deltas as they came.
        const joined = h.records.slice(0, h.snapshotCount);
        let run: Delta[] = [];
        let keys = new Set<string>();
        const endRun = () => {
          if (run.length > 0) joined.push(decodeDelta(encodeDelta(joinDeltas(NS, run))));
          run = [];
          keys = new Set();
        };
        for (const d of h.records.slice(h.snapshotCount)) {
          if (h.own.has(d)) {
            if (d.states.some((st) => keys.has(st.key)) || rnd.int(8) === 0) endRun();
            run.push(d);
            for (const st of d.states) keys.add(st.key);
          } else {
            endRun();
            joined.push(d);
          }
        }
        endRun();
        const bulk = replica('a');
        bulk.restore(joined, nowMs);
        same(general, bulk, nowMs, rnd);
      }
    });
  });

  it('joinDeltas refuses a delta of another namespace, and a key in two deltas, with InvalidArgumentError', () => {
    const r = replica('a');
    const d = r.set('k', 1, T0);
    expect(() => joinDeltas('other', [d])).toThrow(InvalidArgumentError);
    expect(() => joinDeltas(NS, [d, r.set('k', 2, T0 + 1)])).toThrow(InvalidArgumentError);
  });

  it('joinDeltas drops a state an earlier delta’s context holds, as merging them in turn skips it', () => {
    const b = replica('b');
    const late = b.set('x', 1, T0, { ttlSeconds: 30 }); // dot b:1
    const records: Delta[] = [{ namespace: NS, states: [], context: new Map([['b', [1, 1]]]) }, late];
    const general = replica('a');
    for (const d of records) general.merge(d, T0, { checked: true, ignoreDeps: true });
    const joined = replica('a');
    joined.restore([decodeDelta(encodeDelta(joinDeltas(NS, records)))], T0);
    expect(joined.stateOf('x')).toBeUndefined();
    same(general, joined, T0, new SeededRandom(SEED));
  });

  it('skips a state whose dot the context holds already (a late copy of a collected write), as merge does', () => {
    const b = replica('b');
    const old = b.set('k', 1, T0, { ttlSeconds: 30 });
    const records: Delta[] = [
      { namespace: NS, states: [], context: new Map([['b', [1, 1]]]) },
      decodeDelta(encodeDelta(old)),
    ];
    const general = replica('a');
    for (const d of records) general.merge(d, T0, { checked: true, ignoreDeps: true });
    const bulk = replica('a');
    bulk.restore(records, T0);
    expect(general.stateOf('k')).toBeUndefined();
    same(general, bulk, T0, new SeededRandom(SEED));
  });

  it('refuses a replica that is not empty, a bad time and another namespace, with InvalidArgumentError', () => {
    const r = replica('a');
    r.set('k', 1, T0);
    expect(() => r.restore([], T0)).toThrow(InvalidArgumentError);
    expect(() => replica('a').restore([], -1)).toThrow(InvalidArgumentError);
    const other = { namespace: 'other', states: [], context: new Map() };
    expect(() => replica('a').restore([other], T0)).toThrow(InvalidArgumentError);
  });
});
