/**
 * Watch streams: per watcher, revisions strictly increase across every resume
 * (no duplicates, no reordering); every watcher agrees on what each revision
 * holds; every acknowledged write of the namespace made while a watcher was
 * subscribed, and acknowledged before the final marker, reached that watcher
 * exactly once (no gaps), except where it had to start over without a resume
 * point; and nothing was seen that no call wrote.
 */
import type { Op } from '../history.js';
import type { WatchWorkload } from '../workloads/watch.js';
import { MARKER_KEY } from '../workloads/watch.js';
import type { Violation } from './time.js';

/** Writes acknowledged this long before a forced restart may not have reached the watcher yet. */
const RESTART_SLACK_MS = 10_000;

export function checkWatch(
  w: WatchWorkload,
  registerOps: readonly Op[],
): { violations: Violation[]; events: number; notCaughtUp: number } {
  const out: Violation[] = [];
  const v = (key: string, atMs: number, message: string) =>
    out.push({ check: 'watch', workload: 'watch', key, atMs, message });
  const byRevision = new Map<number, { key: string; type: string; version: string | null; watcher: number }>();
  const written = new Map<string, Set<unknown>>();
  for (const op of registerOps) {
    if (op.f !== 'set' || op.type === 'fail') continue;
    const s = written.get(op.key) ?? new Set();
    s.add((op.value as { value: unknown }).value);
    written.set(op.key, s);
  }
  let notCaughtUp = 0;
  for (let watcher = 0; watcher < w.watcherCount; watcher++) {
    const events = w.events.filter((e) => e.watcher === watcher);
    let last = -1;
    const seen = new Map<string, number>();
    for (const e of events) {
      if (e.revision <= last)
        v(
          e.key,
          e.atMs,
          `watcher ${watcher} got revision ${e.revision} after ${last} (stream ${e.stream}): a duplicate or out of order`,
        );
      last = Math.max(last, e.revision);
      const other = byRevision.get(e.revision);
      if (other === undefined) byRevision.set(e.revision, { key: e.key, type: e.type, version: e.version, watcher });
      else if (other.key !== e.key || other.type !== e.type || other.version !== e.version) {
        v(
          e.key,
          e.atMs,
          `revision ${e.revision}: watcher ${watcher} saw ${e.type} ${e.key} ${e.version}, watcher ${other.watcher} saw ${other.type} ${other.key} ${other.version}`,
        );
      }
      if (e.type === 'set' && e.key !== MARKER_KEY && !written.get(e.key)?.has(e.value)) {
        v(
          e.key,
          e.atMs,
          `watcher ${watcher} saw ${e.key} = ${JSON.stringify(e.value)} (revision ${e.revision}), which no call wrote`,
        );
      }
      if (e.version !== null) seen.set(`${e.key} ${e.version}`, (seen.get(`${e.key} ${e.version}`) ?? 0) + 1);
    }
    if (!w.caughtUp(watcher)) {
      notCaughtUp++;
      v(MARKER_KEY, w.markerWrittenMs ?? 0, `watcher ${watcher} did not see the final marker within 30 s`);
      continue;
    }
    const from = w.coverageStart(watcher);
    if (from === undefined) continue;
    const restarts = w.restarts.filter((r) => r.watcher === watcher);
    const excused = (op: Op) =>
      restarts.some((r) => {
        const resumed =
          w.streams.find((s) => s.watcher === watcher && s.openMs >= r.atMs && s.connectedMs !== null)?.connectedMs ??
          Number.POSITIVE_INFINITY;
        return (op.completeMs as number) > r.atMs - RESTART_SLACK_MS && op.invokeMs < resumed;
      });
    for (const op of registerOps) {
      if (
        op.f !== 'set' ||
        op.type !== 'ok' ||
        op.invokeMs < from ||
        (op.completeMs as number) > (w.markerWrittenMs ?? 0)
      )
        continue;
      const version = (op.result as { version: string }).version;
      const n = seen.get(`${op.key} ${version}`) ?? 0;
      if (n === 0 && !excused(op))
        v(
          op.key,
          op.completeMs as number,
          `watcher ${watcher} never saw the acknowledged write op ${op.id} (${op.key} version ${version})`,
        );
      if (n > 1) v(op.key, op.completeMs as number, `watcher ${watcher} saw op ${op.id}'s write ${n} times`);
    }
  }
  return { violations: out, events: w.events.length, notCaughtUp };
}
