import type { PeerId, RaftSnapshot } from '@parley/interface';
import type { SnapMessage } from './types.js';

interface IncomingSnapshot {
  from: PeerId;
  snapshot: RaftSnapshot['meta'];
  totalBytes: number;
  receivedBytes: number;
  chunks: Uint8Array[];
}

/** What to do with a snapshot chunk: nothing, acknowledge `offset`, or install the whole snapshot. */
export type ChunkOutcome =
  | { kind: 'drop' }
  | { kind: 'reply'; offset: number }
  | { kind: 'complete'; snapshot: RaftSnapshot };

/** Follower side of InstallSnapshot: reassembles the chunks of one snapshot from one leader. */
export class SnapshotAssembler {
  private incoming: IncomingSnapshot | undefined;

  reset(): void {
    this.incoming = undefined;
  }

  receive(m: SnapMessage, maxSnapshotBytes: number): ChunkOutcome {
    const meta = m.meta;
    if (m.totalBytes > maxSnapshotBytes || m.offset + m.data.byteLength > m.totalBytes) {
      this.incoming = undefined;
      return { kind: 'drop' };
    }
    let inc = this.incoming;
    const same =
      inc !== undefined &&
      inc.from === m.from &&
      inc.snapshot.index === meta.index &&
      inc.snapshot.term === meta.term &&
      inc.totalBytes === m.totalBytes;
    if (!same) {
      if (m.offset !== 0) {
        this.incoming = undefined;
        return { kind: 'reply', offset: 0 };
      }
      inc = { from: m.from, snapshot: meta, totalBytes: m.totalBytes, receivedBytes: 0, chunks: [] };
      this.incoming = inc;
    }
    if (!inc) return { kind: 'drop' };
    if (m.offset !== inc.receivedBytes) return { kind: 'reply', offset: inc.receivedBytes };
    inc.chunks.push(m.data.slice());
    inc.receivedBytes += m.data.byteLength;
    if (inc.receivedBytes < inc.totalBytes) return { kind: 'reply', offset: inc.receivedBytes };
    const data = new Uint8Array(inc.totalBytes);
    let at = 0;
    for (const c of inc.chunks) {
      data.set(c, at);
      at += c.byteLength;
    }
    this.incoming = undefined;
    return { kind: 'complete', snapshot: { meta, data } };
  }
}
