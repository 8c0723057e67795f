/**
 * Raft's safety properties (Raft paper, Figure 3) as invariants over a neutral
 * view of a cluster, checked after every step by the simulator's scenarios and
 * by Raft's own randomized tests (the one copy of these rules):
 *
 * - `raft/election-safety`: at most one leader per term, over the whole run;
 * - `raft/log-matching`: two logs with an entry of the same index and term are
 *   identical up to that index;
 * - `raft/leader-completeness`: an entry committed in a term is in the log of
 *   every leader of a later term;
 * - `raft/state-machine-safety`: no two nodes commit or apply different entries
 *   at the same index.
 *
 * Entries are compared by term, and by content (type and data) wherever both
 * views offer `entryAt`. Callers adapt their nodes to `RaftNodeView` and call
 * `registerRaftInvariants(registry)`; the checks keep what they need across
 * observations (leaders per term, committed entries), so use one registry per run.
 */
import type { RaftEntry } from '@parley/interface';
import type { InvariantRegistry } from './invariants.js';

export interface RaftNodeView {
  readonly id: string;
  /** Current term. */
  readonly term: number;
  readonly isLeader: boolean;
  readonly commitIndex: number;
  /** Highest index applied to the state machine (defaults to `commitIndex`). */
  readonly lastApplied?: number;
  /** First index still in the log (entries before it are in a snapshot). */
  readonly firstIndex: number;
  /** Last index in the log (`firstIndex - 1` when empty). */
  readonly lastIndex: number;
  /** Term of the entry at `index`, for `firstIndex ≤ index ≤ lastIndex`. */
  termAt(index: number): number;
  /**
   * The entry at `index`, for `firstIndex ≤ index ≤ lastIndex`. When given, entries are also
   * compared by content (type and data), not only by term.
   */
  entryAt?(index: number): RaftEntry | undefined;
  /** A crashed node is skipped (its last view is not current). */
  readonly down?: boolean;
}

export interface RaftClusterView {
  readonly nodes: readonly RaftNodeView[];
}

/** Bounds what the checks remember; beyond it the oldest facts are forgotten. Default 1,000,000 entries. */
export interface RaftInvariantOptions {
  readonly maxRememberedEntries?: number;
}

/**
 * The content of an entry (type and data) as a 32-bit FNV-1a hash, remembered per index and
 * compared across nodes (a hash, so that what the checks remember stays small).
 */
function contentOf(e: RaftEntry | undefined): number | undefined {
  if (e === undefined) return undefined;
  let h = 0x811c9dc5;
  for (let i = 0; i < e.type.length; i++) h = Math.imul(h ^ e.type.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ 0xff, 0x01000193);
  for (let i = 0; i < e.data.length; i++) h = Math.imul(h ^ (e.data[i] as number), 0x01000193);
  return h >>> 0;
}

/** Whether two entries differ in content (type or data); false when either side offers none. */
function differ(a: RaftEntry | undefined, b: RaftEntry | undefined): boolean {
  if (a === undefined || b === undefined || a === b) return false;
  if (a.type !== b.type || a.data.length !== b.data.length) return true;
  for (let i = 0; i < a.data.length; i++) if (a.data[i] !== b.data[i]) return true;
  return false;
}

/** Registers the four Raft safety invariants on `registry`; returns a function that removes them. */
export function registerRaftInvariants(
  registry: InvariantRegistry<RaftClusterView>,
  options: RaftInvariantOptions = {},
): () => void {
  const maxRemembered = options.maxRememberedEntries ?? 1_000_000;
  const leaders = new Map<number, string>();
  // index → { entry term, its content if known, an upper bound on the term in which it was committed }
  const committed = new Map<number, { term: number; content: number | undefined; commitTerm: number }>();
  const committedUpTo = new Map<string, number>();
  const applied = new Map<number, { term: number; content: number | undefined; node: string }>();
  const appliedUpTo = new Map<string, number>();
  const leaderCheckedUpTo = new Map<string, number>(); // `${id}@${term}` → index
  // a → b → the highest shared entry of their logs last found equal in content
  const comparedTop = new Map<string, Map<string, { index: number; term: number }>>();

  const trim = <K, V>(m: Map<K, V>) => {
    while (m.size > maxRemembered) m.delete(m.keys().next().value as K);
  };
  const live = (view: RaftClusterView) => view.nodes.filter((n) => !n.down);

  const removers = [
    registry.registerInvariant(
      'raft/election-safety',
      (view) => {
        const out: string[] = [];
        for (const n of live(view)) {
          if (!n.isLeader) continue;
          const seen = leaders.get(n.term);
          if (seen === undefined) leaders.set(n.term, n.id);
          else if (seen !== n.id) out.push(`term ${n.term} has two leaders: ${seen} and ${n.id}`);
        }
        trim(leaders);
        return out;
      },
      'at most one leader per term',
    ),

    registry.registerInvariant(
      'raft/log-matching',
      (view) => {
        const nodes = live(view);
        const out: string[] = [];
        for (let a = 0; a < nodes.length; a++) {
          for (let b = a + 1; b < nodes.length; b++) {
            const x = nodes[a]!;
            const y = nodes[b]!;
            const lo = Math.max(x.firstIndex, y.firstIndex);
            let i = Math.min(x.lastIndex, y.lastIndex);
            // The highest common entry with equal terms: everything below must match too.
            while (i >= lo && x.termAt(i) !== y.termAt(i)) i--;
            // The entry both logs hold at (i, term) is one entry: same content. Below it, terms are
            // compared here on every observation and contents as they commit (state-machine safety).
            if (i >= lo && x.entryAt && y.entryAt) {
              let tops = comparedTop.get(x.id);
              if (tops === undefined) comparedTop.set(x.id, (tops = new Map()));
              const term = x.termAt(i);
              const last = tops.get(y.id);
              if (last === undefined || last.index !== i || last.term !== term) {
                if (differ(x.entryAt(i), y.entryAt(i))) {
                  out.push(`${x.id} and ${y.id} hold different entries at index ${i} of term ${term}`);
                } else if (last === undefined) tops.set(y.id, { index: i, term });
                else {
                  last.index = i;
                  last.term = term;
                }
              }
            }
            for (let j = i - 1; j >= lo; j--) {
              if (x.termAt(j) !== y.termAt(j)) {
                out.push(
                  `${x.id} and ${y.id} agree at index ${i} (term ${x.termAt(i)}) but differ at ${j}: terms ${x.termAt(j)} and ${y.termAt(j)}`,
                );
                break;
              }
            }
          }
        }
        return out;
      },
      'logs that share an (index, term) entry are identical up to it',
    ),

    registry.registerInvariant(
      'raft/state-machine-safety',
      (view) => {
        const out: string[] = [];
        for (const n of live(view)) {
          // Committed entries never change.
          let from = Math.max(committedUpTo.get(n.id) ?? 0, n.firstIndex - 1);
          if (n.commitIndex < from) from = Math.max(n.firstIndex - 1, 0); // restarted: recheck what it holds
          for (let i = from + 1; i <= Math.min(n.commitIndex, n.lastIndex); i++) {
            const t = n.termAt(i);
            const content = n.entryAt ? contentOf(n.entryAt(i)) : undefined;
            const c = committed.get(i);
            if (c === undefined) committed.set(i, { term: t, content, commitTerm: n.term });
            else if (c.term !== t)
              out.push(`${n.id} committed term ${t} at index ${i}, where term ${c.term} was committed`);
            else if (c.content === undefined) c.content = content;
            else if (content !== undefined && content !== c.content)
              out.push(`${n.id} committed a different entry at index ${i} (term ${t}) than was committed there`);
          }
          committedUpTo.set(n.id, n.commitIndex);
          // Applied entries agree across nodes.
          const last = n.lastApplied ?? n.commitIndex;
          let a = Math.max(appliedUpTo.get(n.id) ?? 0, n.firstIndex - 1);
          if (last < a) a = Math.max(n.firstIndex - 1, 0);
          for (let i = a + 1; i <= Math.min(last, n.lastIndex); i++) {
            const t = n.termAt(i);
            const content = n.entryAt ? contentOf(n.entryAt(i)) : undefined;
            const prev = applied.get(i);
            if (prev === undefined) applied.set(i, { term: t, content, node: n.id });
            else if (prev.term !== t) {
              out.push(`${n.id} applied term ${t} at index ${i}, ${prev.node} applied term ${prev.term}`);
            } else if (prev.content === undefined) prev.content = content;
            else if (content !== undefined && content !== prev.content) {
              out.push(`${n.id} applied a different entry at index ${i} (term ${t}) than ${prev.node} applied`);
            }
          }
          appliedUpTo.set(n.id, last);
        }
        trim(committed);
        trim(applied);
        return out;
      },
      'no two nodes commit or apply different entries at one index',
    ),

    registry.registerInvariant(
      'raft/leader-completeness',
      (view) => {
        const out: string[] = [];
        for (const n of live(view)) {
          if (!n.isLeader) continue;
          const tag = `${n.id}@${n.term}`;
          const from = leaderCheckedUpTo.get(tag) ?? 0;
          let upTo = from;
          for (const [i, c] of committed) {
            if (i <= from || c.commitTerm >= n.term || i < n.firstIndex) continue;
            if (i > n.lastIndex)
              out.push(`leader ${n.id} of term ${n.term} lacks committed index ${i} (term ${c.term})`);
            else if (n.termAt(i) !== c.term) {
              out.push(
                `leader ${n.id} of term ${n.term} has term ${n.termAt(i)} at committed index ${i} (term ${c.term})`,
              );
            } else if (n.entryAt && c.content !== undefined && contentOf(n.entryAt(i)) !== c.content) {
              out.push(
                `leader ${n.id} of term ${n.term} holds a different entry at committed index ${i} (term ${c.term})`,
              );
            } else upTo = Math.max(upTo, i);
          }
          if (out.length === 0) leaderCheckedUpTo.set(tag, upTo);
        }
        trim(leaderCheckedUpTo);
        return out;
      },
      'every leader holds every entry committed in an earlier term',
    ),
  ];
  return () => {
    for (const remove of removers) remove();
  };
}
