/**
 * Eventual namespaces after the heal: every node holds the same entries; each
 * last-writer-wins key (written by one client through one home node) holds its
 * last acknowledged write or a later write of unknown outcome; each counter is
 * at least the sum of its acknowledged increments and at most that plus the
 * increments of unknown outcome.
 */
import type { Op } from '../history.js';
import { counterBounds, type EventualWorkload } from '../workloads/eventual.js';
import type { Violation } from './time.js';

export function checkEventual(w: EventualWorkload, ops: readonly Op[]): { violations: Violation[]; keys: number } {
  const out: Violation[] = [];
  const v = (key: string, message: string) =>
    out.push({ check: 'eventual', workload: 'eventual', key, atMs: 0, message });
  if (!w.converged) {
    v('*', `the nodes did not converge within 120 s of the heal (${w.snapshots.size} answered)`);
  }
  const snap = [...w.snapshots.values()][0];
  if (snap === undefined) return { violations: out, keys: 0 };
  const keys = new Map<string, Op[]>();
  for (const op of ops) {
    if (op.f === 'increment') continue;
    const l = keys.get(op.key) ?? [];
    l.push(op);
    keys.set(op.key, l);
  }
  for (const [key, list] of keys) {
    const done = list.filter((o) => o.type !== 'fail');
    const last = done.filter((o) => o.type === 'ok').at(-1);
    const after = done.filter(
      (o) => o.type === 'info' && (last === undefined || o.invokeMs > (last.completeMs as number)),
    );
    const writtenValue = (o: Op) => (o.f === 'delete' ? undefined : o.value);
    const allowed = new Set<unknown>([
      ...(last === undefined ? [undefined] : [writtenValue(last)]),
      ...after.map(writtenValue),
    ]);
    const got = snap.get(key);
    if (!allowed.has(got)) {
      v(
        key,
        `holds ${JSON.stringify(got) ?? 'nothing'}; expected the last acknowledged write (${last ? `op ${last.id} ${last.f} ${JSON.stringify(writtenValue(last))}` : 'none'}) or a later one of unknown outcome`,
      );
    }
  }
  for (const [key, b] of counterBounds(ops)) {
    const got = Number(snap.get(key) ?? 0);
    if (got < b.acked || got > b.acked + b.unknown) {
      v(key, `counter is ${got}; acknowledged increments sum to ${b.acked}, ${b.unknown} more of unknown outcome`);
    }
  }
  return { violations: out, keys: keys.size };
}
