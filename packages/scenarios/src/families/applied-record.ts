/**
 * Records what a coord member applied, the first time an index takes effect: which command took
 * effect where, the grants and fenced writes for the fencing check, and the kv writes and deletes
 * for the durability checks. Shared by the coord and node-strong scenarios.
 */

import type { FenceEvent } from '@parley/check';
import type { ApplyOutput, Command } from '@parley/coord';

export interface AppliedRecord {
  /** "clientId/seq" → index where it took effect. */
  readonly firstApply: Map<string, number>;
  readonly fenceEvents: FenceEvent[];
  /** Grant and fenced-write ids already recorded (a retried command is answered from the session table). */
  readonly seen: Set<string>;
  readonly writesAt: Map<number, { key: string; version: string; who: string }>;
  readonly versionIndex: Map<string, number>;
  readonly deletesAt: Map<string, number[]>;
}

/** Returns the first-apply callback that fills `rec`; `onDelivery` is called once per delivery. */
export function appliedRecorder(
  rec: AppliedRecord,
  onDelivery?: () => void,
): (index: number, command: Command, out: ApplyOutput) => void {
  const { firstApply, fenceEvents, seen, writesAt, versionIndex, deletesAt } = rec;
  return (index, command, out) => {
    const who = command.clientId === undefined ? undefined : `${command.clientId}/${command.seq}`;
    if (who !== undefined && !firstApply.has(who)) firstApply.set(who, index);
    const op = command.op;
    const r = out.result;
    const grant = (resource: string, fence: number, id: string) => {
      if (seen.has(id)) return; // a retried command answered from the session table
      seen.add(id);
      fenceEvents.push({ type: 'grant', resource, fence });
    };
    if (op.type === 'lock_acquire' && r.ok && r.value.type === 'lock' && who) {
      grant(`lock:${op.key}`, r.value.lock.fence, who);
    }
    for (const d of out.deliveries) {
      onDelivery?.();
      if (d.result.ok && d.result.value.type === 'lock') {
        grant(`lock:${d.result.value.lock.key}`, d.result.value.lock.fence, `${d.clientId}/${d.seq}`);
      }
    }
    if (op.type === 'lease_acquire' && r.ok && r.value.type === 'lease' && who) {
      grant(`lease:${op.key}`, r.value.lease.epoch, who);
    }
    if (op.type === 'lease_write' && who && !seen.has(`w${who}`)) {
      seen.add(`w${who}`);
      fenceEvents.push({ type: 'write', resource: `lease:${op.key}`, fence: op.epoch, accepted: r.ok });
    }
    if (op.type === 'set' && op.fence && who && !seen.has(`w${who}`)) {
      seen.add(`w${who}`);
      fenceEvents.push({ type: 'write', resource: `lock:${op.fence.key}`, fence: op.fence.token, accepted: r.ok });
    }
    if (op.type === 'delete' && op.namespace === 'kv' && r.ok && who && firstApply.get(who) === index) {
      let list = deletesAt.get(op.key);
      if (list === undefined) deletesAt.set(op.key, (list = []));
      list.push(index);
    }
    if (op.type === 'set' && op.namespace === 'kv' && r.ok && r.value.type === 'entry' && who) {
      const v = r.value.entry.version;
      if (!versionIndex.has(v)) {
        versionIndex.set(v, index);
        writesAt.set(index, { key: op.key, version: v, who });
      }
    }
  };
}
