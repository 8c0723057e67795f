/**
 * Session guarantees and causal consistency over a session history, in the
 * abstract-execution terms of Burckhardt's "Principles of Eventual Consistency"
 * (visibility `vis`, arbitration `ar`, session order `so`) with Terry et al.'s
 * four guarantees (Bayou, 1994):
 *
 * | guarantee              | rule                                                                 |
 * | ---------------------- | -------------------------------------------------------------------- |
 * | read-your-writes `ryw` | a session's acknowledged writes are visible to its later reads        |
 * | monotonic reads `mr`   | what a session's read saw stays visible to its later reads            |
 * | monotonic writes `mw`  | whoever sees a session's write sees its earlier ones, ordered before  |
 * | writes-follow-reads `wfr` | whoever sees a session's write sees what its earlier reads saw, ordered before |
 * | causal                 | all four, transitively: `hb = (so ∪ vis)+` is visible and arbitrated |
 *
 * A read returns the arbitration-greatest visible write of its key. Visibility is
 * not observed directly, but each rule only ever adds writes to what an
 * operation must see, so the checker computes the least visibility the enabled
 * rules force (a frontier per key: the greatest forced version) in an order
 * consistent with session order and reads-from, and a read is a violation
 * exactly when the least visibility already holds a write of its key that
 * beats the one it returned. Any larger visibility only makes that worse, so
 * the verdict is exact (`reference.ts` checks this against a search over every
 * visibility). Cost: O(operations × keys).
 *
 * Session order binds acknowledged calls only: an ambiguous write took effect
 * at some unknown time, so it follows its session's earlier calls but orders
 * none of the later ones (a failed read orders nothing).
 */

import { type CompareVersions, indexWrites, type SessionOp, type SessionWrite } from './history.js';

export type SessionGuarantee = 'ryw' | 'mr' | 'mw' | 'wfr';

export interface SessionCheckOptions<V> {
  /** The guarantees every session was promised. `causal` implies all four. */
  readonly guarantees: ReadonlySet<SessionGuarantee | 'causal'>;
  readonly compare: CompareVersions<V>;
  /** Keeps reports bounded. Default 100. */
  readonly maxViolations?: number;
}

export type SessionViolation =
  | {
      /**
       * A read returned a write beaten by one that had to be visible to it; the
       * type names the rule that first forced that write (under `causal`, always
       * `causal`). The four guarantees together are as strong as causal here.
       */
      readonly type: SessionGuarantee | 'causal';
      /** Index of the read in the history. */
      readonly op: number;
      readonly key: string;
      readonly saw: string | null;
      /** The write that had to be visible, and beats what the read returned. */
      readonly missed: string;
    }
  | {
      /** A write arbitrated before a write it had to follow (the rule says which). */
      readonly type: 'mw-order' | 'wfr-order' | 'causal-order';
      readonly op: number;
      readonly key: string;
      readonly write: string;
      readonly after: string;
    }
  | { readonly type: 'thin-air'; readonly op: number; readonly saw: string }
  | { readonly type: 'cycle'; readonly ops: readonly number[] };

export interface SessionCheckResult {
  readonly ok: boolean;
  readonly violations: readonly SessionViolation[];
  readonly truncated: boolean;
}

type Via = SessionGuarantee | 'causal';
interface Forced<V> {
  readonly version: V;
  readonly id: string;
  readonly via: Via;
}
/** The greatest forced-visible write per key. Frozen once built; merges copy. */
type Frontier<V> = ReadonlyMap<string, Forced<V>>;

const EMPTY: Frontier<never> = new Map();

function merge<V>(into: Map<string, Forced<V>>, from: Frontier<V>, compare: CompareVersions<V>, via?: Via): void {
  for (const [key, f] of from) {
    const cur = into.get(key);
    if (cur === undefined || compare(f.version, cur.version) > 0) into.set(key, via === undefined ? f : { ...f, via });
  }
}

/** A new frontier: `base` with `more` merged in (frontiers stay unchanged once built). */
function union<V>(base: Frontier<V>, more: readonly Frontier<V>[], compare: CompareVersions<V>): Frontier<V> {
  const out = new Map(base);
  for (const f of more) merge(out, f, compare);
  return out;
}

interface SessionState<V> {
  /** Acknowledged own writes with what seeing each forces (ryw; mw exports). */
  own: Frontier<V>;
  /** Greatest version of acknowledged own writes per key, bare (mw's order rule). */
  ownWrites: Frontier<V>;
  /** Union of what the session's acknowledged reads saw (mr; wfr exports). */
  reads: Frontier<V>;
  /** Everything before, transitively (causal). */
  hb: Frontier<V>;
}

/** Checks the history against the enabled session guarantees (or causal consistency). */
export function checkSessionGuarantees<V>(
  ops: readonly SessionOp<V>[],
  options: SessionCheckOptions<V>,
): SessionCheckResult {
  const { compare } = options;
  const causal = options.guarantees.has('causal');
  const on = (g: SessionGuarantee) => causal || options.guarantees.has(g);
  const max = options.maxViolations ?? 100;
  const violations: SessionViolation[] = [];
  let truncated = false;
  const report = (v: SessionViolation) => {
    if (violations.length < max) violations.push(v);
    else truncated = true;
  };

  const writes = indexWrites(ops);
  const order = topologicalOrder(ops, writes.byId);
  if (order.cycle.length > 0) report({ type: 'cycle', ops: order.cycle });

  const sessions = new Map<string, SessionState<V>>();
  const stateOf = (s: string) => {
    let st = sessions.get(s);
    if (st === undefined) {
      st = { own: EMPTY, ownWrites: EMPTY, reads: EMPTY, hb: EMPTY };
      sessions.set(s, st);
    }
    return st;
  };
  /** What seeing a write forces, by write id. */
  const exports = new Map<string, Frontier<V>>();

  for (const index of order.order) {
    const op = ops[index] as SessionOp<V>;
    const st = stateOf(op.session);
    if (op.kind === 'write') {
      const w = writes.byId.get(op.id);
      if (w === undefined) continue;
      checkOrder(index, op, w.version, st, on, causal, compare, report);
      const e = new Map<string, Forced<V>>();
      if (on('mw')) merge(e, st.own, compare, 'mw');
      if (on('wfr')) merge(e, st.reads, compare, 'wfr');
      if (causal) merge(e, st.hb, compare, 'causal');
      exports.set(op.id, e);
      if (op.outcome !== 'ok') continue;
      const self: Frontier<V> = new Map([[op.key, { version: w.version, id: op.id, via: 'ryw' as Via }]]);
      st.own = union(st.own, [e, self], compare);
      st.ownWrites = union(st.ownWrites, [self], compare);
      if (causal) st.hb = union(st.hb, [self], compare);
      continue;
    }
    if (op.outcome !== 'ok') continue;
    let seen: { version: V; id: string } | undefined;
    if (op.saw !== null) {
      const w = writes.byId.get(op.saw);
      if (w === undefined || w.op.key !== op.key) {
        report({ type: 'thin-air', op: index, saw: op.saw });
        continue;
      }
      seen = { version: w.version, id: op.saw };
    }
    const vis = new Map<string, Forced<V>>();
    // Each forced write keeps the rule that first forced it, for the report.
    if (on('ryw')) merge(vis, st.own, compare);
    if (on('mr')) merge(vis, st.reads, compare);
    if (causal) merge(vis, st.hb, compare);
    if (seen !== undefined) merge(vis, exports.get(seen.id) ?? EMPTY, compare);
    const forced = vis.get(op.key);
    if (forced !== undefined && (seen === undefined || compare(forced.version, seen.version) > 0)) {
      report({ type: causal ? 'causal' : forced.via, op: index, key: op.key, saw: op.saw, missed: forced.id });
    }
    if (seen !== undefined) merge(vis, new Map([[op.key, { ...seen, via: 'mr' as Via }]]), compare);
    st.reads = union(st.reads, [vis], compare);
    if (causal) st.hb = union(st.hb, [vis], compare);
  }
  return { ok: violations.length === 0, violations, truncated };
}

/** The arbitration rules of mw, wfr and causal, for a write about to take its place. */
function checkOrder<V>(
  index: number,
  op: SessionWrite<V>,
  version: V,
  st: SessionState<V>,
  on: (g: SessionGuarantee) => boolean,
  causal: boolean,
  compare: CompareVersions<V>,
  report: (v: SessionViolation) => void,
): void {
  const rules: [boolean, Frontier<V>, 'mw-order' | 'wfr-order' | 'causal-order'][] = [
    [on('mw'), st.ownWrites, 'mw-order'],
    [on('wfr'), st.reads, 'wfr-order'],
    [causal, st.hb, 'causal-order'],
  ];
  for (const [enabled, frontier, type] of rules) {
    const before = enabled ? frontier.get(op.key) : undefined;
    if (before !== undefined && compare(before.version, version) >= 0) {
      report({ type: causal ? 'causal-order' : type, op: index, key: op.key, write: op.id, after: before.id });
      return;
    }
  }
}

/**
 * An order of the operations consistent with each session's order and with
 * reads-from, so each operation is reached with its session's state as of its
 * place (an ambiguous write included, though it orders nothing after it);
 * operations on a cycle are returned apart (a read that saw a write its own
 * session issued later, say).
 */
function topologicalOrder<V>(
  ops: readonly SessionOp<V>[],
  byId: ReadonlyMap<string, { readonly index: number }>,
): { order: number[]; cycle: number[] } {
  const successors: number[][] = ops.map(() => []);
  const indegree = new Array<number>(ops.length).fill(0);
  const edge = (a: number, b: number) => {
    (successors[a] as number[]).push(b);
    indegree[b] = (indegree[b] as number) + 1;
  };
  const last = new Map<string, number>();
  ops.forEach((op, i) => {
    const prev = last.get(op.session);
    if (prev !== undefined) edge(prev, i);
    if (op.kind === 'read' && op.outcome === 'ok' && op.saw !== null) {
      const w = byId.get(op.saw);
      if (w !== undefined) edge(w.index, i);
    }
    last.set(op.session, i);
  });
  const order: number[] = [];
  const ready: number[] = [];
  indegree.forEach((d, i) => {
    if (d === 0) ready.push(i);
  });
  for (let head = 0; head < ready.length; head++) {
    const i = ready[head] as number;
    order.push(i);
    for (const j of successors[i] as number[]) {
      indegree[j] = (indegree[j] as number) - 1;
      if (indegree[j] === 0) ready.push(j);
    }
  }
  const cycle: number[] = [];
  indegree.forEach((d, i) => {
    if (d > 0) cycle.push(i);
  });
  return { order, cycle };
}
