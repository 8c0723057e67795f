/**
 * Durability of registers: after every fault is healed, each key's final read
 * must show its last acknowledged write, or a write that was not over before
 * that one began (concurrent or later, acknowledged or of unknown outcome).
 * An acknowledged write that nothing can explain away is lost.
 */
import type { Op } from '../history.js';
import type { Violation } from './time.js';

const writtenValue = (op: Op): unknown => (op.f === 'delete' ? null : (op.value as { value: unknown }).value);

export function checkDurability(
  workload: string,
  ops: readonly Op[],
  finalFromMs: number,
): { violations: Violation[]; keys: number } {
  const out: Violation[] = [];
  const keys = new Map<string, Op[]>();
  for (const op of ops) {
    const l = keys.get(op.key) ?? [];
    l.push(op);
    keys.set(op.key, l);
  }
  let checked = 0;
  for (const [key, list] of keys) {
    const final = list
      .filter((o) => o.f === 'get' && o.invokeMs >= finalFromMs && (o.type === 'ok' || o.error === 'key_not_found'))
      .at(-1);
    if (final === undefined) continue;
    checked++;
    const seen = final.type === 'ok' ? (final.result as { value: unknown }).value : null;
    const writes = list.filter(
      (o) => (o.f === 'set' || o.f === 'delete') && o.type !== 'fail' && o.invokeMs < final.invokeMs,
    );
    const acked = writes
      .filter((o) => o.type === 'ok')
      .sort((a, b) => (a.completeMs as number) - (b.completeMs as number));
    const last = acked.at(-1);
    const allowed = new Set<unknown>(last === undefined ? [null] : [writtenValue(last)]);
    for (const w of writes) {
      if (
        last === undefined ||
        w.completeMs === undefined ||
        w.type === 'info' ||
        (w.completeMs as number) > last.invokeMs
      )
        allowed.add(writtenValue(w));
    }
    if (!allowed.has(seen)) {
      out.push({
        check: 'durability',
        workload,
        key,
        atMs: final.completeMs as number,
        message: `final read ${seen === null ? 'found nothing' : `found ${JSON.stringify(seen)}`}; the last acknowledged write (op ${last?.id}, ${last ? JSON.stringify(writtenValue(last)) : '-'}) or a write concurrent with or after it was expected`,
      });
    }
  }
  return { violations: out, keys: checked };
}
