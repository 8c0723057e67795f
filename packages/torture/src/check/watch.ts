/**
 * Watch streams: per watcher, revisions strictly increase across every resume
 * (no duplicates, no reordering); every watcher agrees on what each revision
 * holds; every acknowledged write of the namespace made while a watcher was
 * subscribed, and acknowledged before the final marker, reached that watcher
 * exactly once (no gaps); and nothing was seen that no call wrote.
 *
 * A watcher resumes from the last revision it saw; one that has seen none yet
 * (or whose resume point is no longer kept) subscribes afresh, as a client
 * must, and what was written before that moment may have passed it by. So its
 * coverage is a series of intervals, each from a fresh subscription to the
 * next: a write must have reached it when it was invoked and acknowledged
 * (plus a delivery slack) within one interval.
 */
import type { Op } from '../history.js';
import type { WatchWorkload } from '../workloads/watch.js';
import { MARKER_KEY } from '../workloads/watch.js';
import type { Violation } from './time.js';

/** A write acknowledged this long before a fresh subscription may not have reached the watcher yet. */
const DELIVERY_SLACK_MS = 10_000;

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
    // Fresh subscriptions: [when it was in place, when the next fresh one was asked for].
    const fresh = w.streams.filter((x) => x.watcher === watcher && x.fromRevision === null);
    const intervals = fresh
      .map((x, i) => [x.connectedMs, fresh[i + 1]?.openMs ?? Number.POSITIVE_INFINITY] as const)
      .filter((iv): iv is readonly [number, number] => iv[0] !== null);
    const covered = (op: Op) =>
      intervals.some(([a, b]) => op.invokeMs >= a && (op.completeMs as number) + DELIVERY_SLACK_MS <= b);
    for (const op of registerOps) {
      if (op.f !== 'set' || op.type !== 'ok' || (op.completeMs as number) > (w.markerWrittenMs ?? 0)) continue;
      if (!covered(op)) continue;
      const version = (op.result as { version: string }).version;
      const n = seen.get(`${op.key} ${version}`) ?? 0;
      if (n === 0)
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
