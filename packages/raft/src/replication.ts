import type { PeerId, RaftEntry } from '@parley/interface';
import { entryBytes, type RaftLog } from './log.js';
import type { Progress } from './progress.js';
import type { Message, SnapRespMessage } from './types.js';

/** What the leader's replication needs of its Raft. */
export interface ReplicationContext {
  readonly id: PeerId;
  readonly log: RaftLog;
  readonly maxSizePerMsg: number;
  readonly maxSnapshotChunk: number;
  term(): number;
  progress(): ReadonlyMap<PeerId, Progress>;
  send(m: Message): void;
}

/**
 * Leader side of log replication: which peers are owed an append, and the
 * append and InstallSnapshot messages that pay them, within each peer's window.
 */
export class Replicator {
  /** Peers owed an append (true: even an empty one), flushed in one batch before the next Ready. */
  private readonly dirty = new Map<PeerId, boolean>();
  /** Every peer is owed an append (new entries) / a commit update. */
  private appendAll = false;
  private commitAll = false;

  constructor(private readonly ctx: ReplicationContext) {}

  clear(): void {
    this.dirty.clear();
    this.appendAll = false;
    this.commitAll = false;
  }

  /** New entries were appended: every peer is owed them. */
  bcastAppend(): void {
    this.appendAll = true;
  }

  /** Every peer is owed the new commit index. */
  bcastCommit(): void {
    this.commitAll = true;
  }

  /** `to` is owed an append (`ifEmpty`: even an empty one; an earlier such request stands). */
  owe(to: PeerId, ifEmpty = false): void {
    this.dirty.set(to, ifEmpty || (this.dirty.get(to) ?? false));
  }

  /** Sends pending appends, batching everything proposed since the last flush. */
  flush(leader: boolean): void {
    if (!leader) {
      this.dirty.clear();
      this.appendAll = false;
      this.commitAll = false;
      return;
    }
    if (this.appendAll || this.commitAll) {
      const force = this.commitAll;
      this.appendAll = false;
      this.commitAll = false;
      // Map order is insertion order: deterministic on every run.
      for (const to of this.ctx.progress().keys()) {
        if (to === this.ctx.id) continue;
        let ifEmpty = force || this.dirty.get(to) === true;
        this.dirty.delete(to);
        while (this.maybeSendAppend(to, ifEmpty)) ifEmpty = false;
      }
    }
    if (this.dirty.size === 0) return;
    const peers = [...this.dirty];
    this.dirty.clear();
    for (const [to, sendIfEmpty] of peers) {
      let ifEmpty = sendIfEmpty;
      while (this.maybeSendAppend(to, ifEmpty)) ifEmpty = false;
    }
  }

  /** Sends one append to `to` if the window allows; returns whether a message went out. */
  private maybeSendAppend(to: PeerId, sendIfEmpty: boolean): boolean {
    const pr = this.ctx.progress().get(to);
    if (!pr || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const last = this.ctx.log.lastIndex();
    let prevTerm: number;
    let ents: RaftEntry[] = [];
    try {
      prevTerm = this.ctx.log.term(prevIndex);
      if (pr.next <= last) ents = this.ctx.log.slice(pr.next, last + 1, this.ctx.maxSizePerMsg);
    } catch {
      // The entries the follower needs are compacted: install the snapshot instead.
      return this.sendSnapshot(to, pr);
    }
    if (ents.length === 0 && !sendIfEmpty && pr.sentCommit >= this.ctx.log.committed) return false;
    let bytes = 0;
    for (const e of ents) bytes += entryBytes(e);
    const commit = this.ctx.log.committed;
    this.ctx.send({
      type: 'app',
      from: this.ctx.id,
      to,
      term: this.ctx.term(),
      logTerm: prevTerm,
      index: prevIndex,
      entries: ents,
      commit,
    });
    pr.sentEntries(ents.length, prevIndex + ents.length, bytes);
    pr.sentCommit = Math.max(pr.sentCommit, commit);
    return ents.length > 0;
  }

  private sendSnapshot(to: PeerId, pr: Progress): boolean {
    if (!pr.recentActive) return false; // do not ship a snapshot into the void
    const snap = this.ctx.log.snapshot();
    if (snap.meta.index === 0) return false;
    pr.becomeSnapshot(snap.meta.index);
    this.sendSnapChunk(to, pr);
    return false;
  }

  sendSnapChunk(to: PeerId, pr: Progress): void {
    const snap = this.ctx.log.snapshot();
    if (snap.meta.index !== pr.pendingSnapshot) {
      if (snap.meta.index === 0) return;
      pr.becomeSnapshot(snap.meta.index); // a newer snapshot replaced the one in transfer
    }
    const total = snap.data.byteLength;
    const offset = Math.min(pr.snapshotOffset, total);
    const end = Math.min(total, offset + this.ctx.maxSnapshotChunk);
    this.ctx.send({
      type: 'snap',
      from: this.ctx.id,
      to,
      term: this.ctx.term(),
      meta: snap.meta,
      offset,
      totalBytes: total,
      data: snap.data.subarray(offset, end),
    });
    pr.snapshotAcked = false;
  }

  handleSnapResponse(m: SnapRespMessage, pr: Progress): void {
    if (pr.state !== 'snapshot' || m.index !== pr.pendingSnapshot) return;
    pr.snapshotAcked = true;
    pr.snapshotOffset = m.offset;
    if (m.offset < this.ctx.log.snapshot().data.byteLength) this.sendSnapChunk(m.from, pr);
  }
}
