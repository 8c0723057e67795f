/**
 * End-of-run checks that read the voters' state directly, shared by the `coord-*` and
 * `node-strong-*` scenarios: snapshot agreement between voters, and durability of acknowledged
 * writes on one voter's disk after a crash and restart (the history checks — linearizability,
 * fencing — run in each family's setup).
 */

import { type AckedWrite, checkDurability, type DurabilityResult } from '@parley/check';
import { CoordStateMachine, decodeCommand } from '@parley/coord';
import type { PeerId, RaftLogStorage } from '@parley/interface';
import { type Simulation, violation } from '@parley/sim';

/** What the agreement check reads of a voter: its applied index and its state machine. */
export interface VoterState {
  readonly driver: { readonly appliedIndex: number };
  readonly sm: { snapshot(): Uint8Array };
}

/**
 * Every voter holds byte-identical state at the same applied index; a voter down after healing
 * fails too. Violations are named `<family>/snapshot-agreement`.
 */
export function checkSnapshotAgreement(
  family: string,
  voters: readonly PeerId[],
  state: (id: PeerId) => VoterState | undefined,
): void {
  const snaps = voters.map((id) => {
    const r = state(id);
    if (!r) throw violation(`${family}/snapshot-agreement`, `${id} is down after healing`);
    return { id, index: r.driver.appliedIndex, bytes: Buffer.from(r.sm.snapshot()).toString('base64') };
  });
  const ref = snaps[0] as (typeof snaps)[number];
  for (const s of snaps) {
    if (s.index === ref.index && s.bytes !== ref.bytes) {
      throw violation(`${family}/snapshot-agreement`, `${s.id} and ${ref.id} differ at applied index ${s.index}`);
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

/** How the run's state machine was configured, and which keys of namespace `kv` the workload wrote. */
export interface WrittenKeys {
  readonly versionKey: string;
  readonly keys: readonly string[];
}

/** Reads what a restarted voter recovered from its Raft log and checks every acknowledged write survived. */
function checkVoterDurability(storage: RaftLogStorage, applied: AppliedWrites, written: WrittenKeys): DurabilityResult {
  const { acked, versionIndex, deletesAt, writesAt } = applied;
  const snap = storage.snapshot();
  const snapshotIndex = snap.meta.index;
  const snapshot = new Map<string, { version: string | null; index: number }>();
  if (snap.data.byteLength > 0) {
    const sm = new CoordStateMachine({ versionKey: written.versionKey });
    sm.restore(snap.data);
    for (const key of written.keys) {
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
  const last = storage.lastIndex();
  const first = Math.max(snapshotIndex + 1, storage.firstIndex());
  for (const e of first <= last ? storage.entries(first, last + 1) : []) {
    const w = writesAt.get(e.index);
    if (!w || e.type !== 'normal' || e.data.byteLength === 0) continue;
    const cmd = decodeCommand(e.data);
    if (`${cmd.clientId}/${cmd.seq}` === w.who) entries.set(e.index, { key: w.key, version: w.version });
  }
  return checkDurability(acked, { snapshotIndex, snapshot, entries });
}

/**
 * Durability: crashes every voter, restarts it from its disk, and checks that each recovered
 * every acknowledged write (`<family>/durability`). `logOf` is a booted voter's Raft log
 * (undefined while it is down). `counted` hears how many acknowledged writes each voter held
 * (as each passes, so a run that fails on a later voter still counts the earlier ones).
 */
export async function checkDurabilityAfterRestart(
  sim: Simulation,
  family: string,
  voters: readonly PeerId[],
  logOf: (id: PeerId) => RaftLogStorage | undefined,
  applied: AppliedWrites,
  written: WrittenKeys,
  counted: (writes: number) => void,
): Promise<void> {
  for (const id of voters) sim.host(id).crash();
  for (const id of voters) sim.host(id).restart();
  await sim.runUntil(() => voters.every((id) => logOf(id) !== undefined), 1_000);
  for (const id of voters) {
    const log = logOf(id);
    if (!log) throw violation(`${family}/durability`, `${id} did not boot from its disk`);
    const d = checkVoterDurability(log, applied, written);
    if (!d.ok) throw violation(`${family}/durability`, `${id}: ${JSON.stringify(d.violations.slice(0, 3))}`);
    counted(applied.acked.length);
  }
}
