/**
 * End-of-run checks of the `coord-*` scenarios that read the voters' state directly: snapshot
 * agreement between voters, and durability of acknowledged writes on one voter's disk after a
 * crash and restart (the history checks — linearizability, fencing — run in ./coord-setup.ts).
 */

import { type AckedWrite, checkDurability, type DurabilityResult } from '@parley/check';
import { CoordStateMachine, decodeCommand } from '@parley/coord';
import type { PeerId } from '@parley/interface';
import { violation } from '@parley/sim';
import { ENTRY_KEYS, VERSION_KEY } from './config.js';
import type { CoordHost } from './host.js';

/** Every voter holds byte-identical state at the same applied index. */
export function checkSnapshotAgreement(voters: readonly PeerId[], app: (id: PeerId) => CoordHost | undefined): void {
  const snaps = voters.map((id) => {
    const a = app(id) as CoordHost;
    return { id, index: a.driver.appliedIndex, bytes: Buffer.from(a.sm.snapshot()).toString('base64') };
  });
  const ref = snaps[0] as (typeof snaps)[number];
  for (const s of snaps) {
    if (s.index === ref.index && s.bytes !== ref.bytes) {
      throw violation('coord/snapshot-agreement', `${s.id} and ${ref.id} differ at applied index ${s.index}`);
    }
  }
}

/** What the replicas applied, as the durability check needs it. */
export interface AppliedWrites {
  readonly acked: readonly AckedWrite[];
  /** Entry version → log index where it was first written. */
  readonly versionIndex: ReadonlyMap<string, number>;
  /** Key → log indexes of its deletes. */
  readonly deletesAt: ReadonlyMap<string, readonly number[]>;
  /** Log index → the write that first took effect there. */
  readonly writesAt: ReadonlyMap<number, { key: string; version: string; who: string }>;
}

/** Reads what a restarted voter recovered from its disk and checks every acknowledged write survived. */
export function checkVoterDurability(a: CoordHost, applied: AppliedWrites): DurabilityResult {
  const { acked, versionIndex, deletesAt, writesAt } = applied;
  const snap = a.storage.snapshot();
  const snapshotIndex = snap.meta.index;
  const snapshot = new Map<string, { version: string | null; index: number }>();
  if (snap.data.byteLength > 0) {
    const sm = new CoordStateMachine({ versionKey: VERSION_KEY });
    sm.restore(snap.data);
    for (const key of ENTRY_KEYS) {
      const got = sm.query({ type: 'get', namespace: 'kv', key }, sm.timeMs);
      if (got.ok && got.value.type === 'got') {
        const v = got.value.entry.version;
        snapshot.set(key, { version: v, index: versionIndex.get(v) ?? -1 });
      } else {
        // Absent: the snapshot holds the newest delete of that key it covers (none: nothing).
        let at = 0;
        for (const idx of deletesAt.get(key) ?? []) if (idx <= snapshotIndex) at = Math.max(at, idx);
        if (at > 0) snapshot.set(key, { version: null, index: at });
      }
    }
  }
  const entries = new Map<number, { key: string; version: string }>();
  const last = a.storage.lastIndex();
  const first = Math.max(snapshotIndex + 1, a.storage.firstIndex());
  for (const e of first <= last ? a.storage.entries(first, last + 1) : []) {
    const w = writesAt.get(e.index);
    if (!w || e.type !== 'normal' || e.data.byteLength === 0) continue;
    const cmd = decodeCommand(e.data);
    if (`${cmd.clientId}/${cmd.seq}` === w.who) entries.set(e.index, { key: w.key, version: w.version });
  }
  return checkDurability(acked, { snapshotIndex, snapshot, entries });
}
