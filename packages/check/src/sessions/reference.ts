/**
 * The brute-force reference for `guarantees.ts`: it searches every visibility
 * relation of a small history for one that satisfies the axioms as written
 * (Burckhardt's abstract executions; Terry et al.'s session guarantees), with
 * none of the checker's reasoning about least visibility. Exponential: for
 * tests on histories of a handful of operations only.
 */

import type { SessionCheckOptions, SessionGuarantee } from './guarantees.js';
import { indexWrites, type SessionOp } from './history.js';

/** Refuses histories whose search would not end in a test's time. */
const MAX_CHOICES = 1 << 16;

/** True when some visibility relation makes the history satisfy the enabled guarantees. */
export function referenceSessionGuarantees<V>(
  ops: readonly SessionOp<V>[],
  options: Pick<SessionCheckOptions<V>, 'guarantees' | 'compare'>,
): boolean {
  const { compare } = options;
  const causal = options.guarantees.has('causal');
  const on = (g: SessionGuarantee) => causal || options.guarantees.has(g);
  const table = indexWrites(ops);
  // The operations that took effect: writes that did, and acknowledged reads.
  const events = ops
    .map((op, index) => ({ op, index }))
    .filter(({ op, index }) => (op.kind === 'write' ? table.byId.get(op.id)?.index === index : op.outcome === 'ok'));
  for (const { op } of events) {
    if (op.kind !== 'read' || op.saw === null) continue;
    const w = table.byId.get(op.saw);
    if (w === undefined || w.op.key !== op.key) return false;
  }
  const n = events.length;
  const isWrite = events.map((e) => e.op.kind === 'write');
  const key = events.map((e) => e.op.key);
  const version = events.map((e) => (e.op.kind === 'write' ? table.byId.get(e.op.id)?.version : undefined));
  const idOf = events.map((e) => (e.op.kind === 'write' ? e.op.id : undefined));
  const before = (i: number, j: number) => compare(version[i] as V, version[j] as V) < 0;
  // Session order binds acknowledged calls only.
  const so = events.map((a, i) =>
    events.map((b, j) => i !== j && a.op.session === b.op.session && a.index < b.index && a.op.outcome === 'ok'),
  );
  const writeIdx = events.flatMap((_, i) => (isWrite[i] ? [i] : []));

  // The candidate visible sets of each event, after the return-value rule.
  const candidates: number[][][] = events.map((e, i) => {
    const forced: number[] = [];
    const free: number[] = [];
    const saw = e.op.kind === 'read' ? e.op.saw : null;
    const sawIdx = saw === null ? undefined : writeIdx.find((x) => idOf[x] === saw);
    for (const w of writeIdx) {
      if (w === i) continue;
      if (e.op.kind === 'read' && key[w] === e.op.key) {
        // A read sees what it returned, and no write of its key that beats it.
        if (w === sawIdx) forced.push(w);
        else if (sawIdx !== undefined && !before(sawIdx, w)) free.push(w);
      } else free.push(w);
    }
    const sets: number[][] = [];
    for (let mask = 0; mask < 1 << free.length; mask++) {
      sets.push([...forced, ...free.filter((_, b) => (mask >> b) & 1)]);
    }
    return sets;
  });
  const total = candidates.reduce((p, c) => p * c.length, 1);
  if (total > MAX_CHOICES) throw new RangeError(`reference search too large: ${total} visibility choices`);

  const vis: boolean[][] = events.map(() => new Array<boolean>(n).fill(false));
  const satisfies = (): boolean => {
    // hb = (so ∪ vis)+, by Floyd–Warshall on n events; acyclic.
    const hb = events.map((_, i) => events.map((_, j) => (so[i] as boolean[])[j] || (vis[j] as boolean[])[i]));
    for (let k = 0; k < n; k++)
      for (let i = 0; i < n; i++)
        if ((hb[i] as boolean[])[k])
          for (let j = 0; j < n; j++) if ((hb[k] as boolean[])[j]) (hb[i] as boolean[])[j] = true;
    for (let i = 0; i < n; i++) if ((hb[i] as boolean[])[i]) return false;
    const sees = (o: number, w: number) => (vis[o] as boolean[])[w] as boolean;
    for (let a = 0; a < n; a++) {
      for (let b = 0; b < n; b++) {
        if (!(so[a] as boolean[])[b]) continue;
        if (on('ryw') && isWrite[a] && !isWrite[b] && !sees(b, a)) return false;
        if (on('mr')) for (const w of writeIdx) if (sees(a, w) && !sees(b, w)) return false;
        if (on('mw') && isWrite[a] && isWrite[b]) {
          if (key[a] === key[b] && !before(a, b)) return false;
          for (let o = 0; o < n; o++) if (sees(o, b) && !sees(o, a)) return false;
        }
        if (on('wfr') && !isWrite[a] && isWrite[b]) {
          for (const w of writeIdx) {
            if (!sees(a, w)) continue;
            if (key[w] === key[b] && !before(w, b)) return false;
            for (let o = 0; o < n; o++) if (sees(o, b) && !sees(o, w)) return false;
          }
        }
      }
    }
    if (causal) {
      for (const w of writeIdx) {
        for (let o = 0; o < n; o++) {
          if (!(hb[w] as boolean[])[o]) continue;
          if (!sees(o, w)) return false;
          if (isWrite[o] && key[o] === key[w] && !before(w, o)) return false;
        }
      }
    }
    return true;
  };
  const search = (i: number): boolean => {
    if (i === n) return satisfies();
    for (const set of candidates[i] as number[][]) {
      const row = vis[i] as boolean[];
      row.fill(false);
      for (const w of set) row[w] = true;
      if (search(i + 1)) return true;
    }
    return false;
  };
  return search(0);
}
