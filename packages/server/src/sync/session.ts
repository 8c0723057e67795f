/**
 * One client replica's session on the sync door (the protocol: @parley/browser/wire).
 *
 * The node keeps `known`, the dots the client is known to hold: its HELLO
 * and DIGEST frames, the deltas it pushed, and everything this node sent it
 * (a client that merges `deltaFor(known)` holds `known` ∪ the node's digest).
 * On every change of the namespace the session sends `deltaFor(known)` —
 * exactly what the client lacks, O(difference) — coalesced per turn.
 * The client's periodic DIGEST repairs whatever that misses (a frame it
 * refused, a drop).
 */

import {
  decodeFrame,
  encodeAck,
  encodeDeltaFrame,
  encodeDigestFrame,
  encodeError,
  encodeWelcome,
  type Frame,
  splitDelta,
  TAG_DELTA,
  TAG_DIGEST,
  TAG_HELLO,
} from '@parley/browser/wire';
import type { Delta, Digest } from '@parley/crdt';
import { DotContext, forEachDot } from '@parley/crdt';
import { isParleyError, type Unsubscribe } from '@parley/interface';
import type { ClientReplication } from '@parley/node';
import { CLOSE, type Connection } from '../ws-connection.js';
import type { ResolvedSyncDoorOptions } from './options.js';

export interface SessionContext {
  readonly nodeId: string;
  readonly options: ResolvedSyncDoorOptions;
  count(reason: string): void;
  onUnexpectedError(err: unknown, where: string): void;
}

export class SyncSession {
  private readonly known = new DotContext();
  private replicaId: string | undefined;
  private open = false;
  private readonly pending: Uint8Array[] = [];
  private unacked = 0;
  private flushScheduled = false;
  private offChange: Unsubscribe | undefined;
  private ended = false;

  constructor(
    private readonly conn: Connection,
    private readonly port: ClientReplication,
    private readonly ctx: SessionContext,
  ) {
    port.ready.then(
      () => {
        if (this.ended) return;
        this.open = true;
        for (const bytes of this.pending.splice(0)) this.receive(bytes);
      },
      (err: unknown) => this.fail('unavailable', `namespace failed to open: ${(err as Error)?.message ?? err}`),
    );
  }

  /** One binary message from the client. */
  receive(bytes: Uint8Array): void {
    if (this.ended) return;
    if (!this.open) {
      if (this.pending.length >= this.ctx.options.maxPendingFrames) {
        this.ctx.count('too_many_pending');
        this.end(CLOSE.tryAgainLater, 'too many frames before the namespace opened');
        return;
      }
      this.pending.push(bytes);
      return;
    }
    let frame: Frame;
    try {
      frame = decodeFrame(bytes, this.ctx.options.maxFrameBytes);
    } catch (err) {
      this.ctx.count('decode_error');
      this.fail('decode_error', (err as Error).message);
      return;
    }
    try {
      this.handle(frame);
    } catch (err) {
      if (!isParleyError(err)) this.ctx.onUnexpectedError(err, 'sync frame');
      this.fail(isParleyError(err) ? err.code : 'internal', (err as Error)?.message ?? String(err));
    }
  }

  private handle(frame: Frame): void {
    if (this.replicaId === undefined) {
      if (frame.tag !== TAG_HELLO) {
        this.ctx.count('no_hello');
        this.fail('invalid_argument', 'the first frame must be HELLO');
        return;
      }
      this.replicaId = frame.replicaId;
      this.send(
        encodeWelcome(this.ctx.nodeId, this.ctx.options.maxFrameBytes, this.port.maxTtlSeconds, this.port.now()),
      );
      this.answerDigest(frame.digest);
      this.offChange = this.port.onChange(() => this.scheduleFlush());
      return;
    }
    if (frame.tag === TAG_DIGEST) {
      this.answerDigest(frame.digest);
      return;
    }
    if (frame.tag === TAG_DELTA) {
      this.push(frame.seq, frame.delta, frame.bytes);
      return;
    }
    this.ctx.count('bad_frame');
    this.fail('invalid_argument', `a client does not send frame tag ${frame.tag}`);
  }

  /** What a client's digest lacks, then this node's digest (the client answers with what the node lacks). */
  private answerDigest(digest: Digest): void {
    this.known.addAll(digest.context);
    this.sendDelta(this.port.deltaFor(digest));
    this.send(encodeDigestFrame(this.port.digest()));
  }

  private push(seq: number, delta: Delta, bytes: Uint8Array): void {
    if (this.unacked >= this.ctx.options.maxUnackedDeltas) {
      this.ctx.count('too_many_unacked');
      this.end(CLOSE.tryAgainLater, `more than ${this.ctx.options.maxUnackedDeltas} deltas awaiting durability`);
      return;
    }
    this.unacked++;
    // The client holds what it sent: never send it back.
    this.known.addAll(delta.context);
    for (const s of delta.states) forEachDot(s, (node, n) => this.known.add(node, n));
    this.port.push(bytes, this.replicaId as string).then(
      () => {
        this.unacked--;
        if (seq > 0) this.send(encodeAck(seq));
      },
      (err: unknown) => {
        this.unacked--;
        this.ctx.count('delta_refused');
        this.fail(isParleyError(err) ? err.code : 'internal', `delta refused: ${(err as Error)?.message ?? err}`);
      },
    );
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.ended) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.ended) return;
      try {
        const delta = this.port.deltaFor({ namespace: this.port.namespace, context: this.known.snapshot() });
        if (delta.states.length > 0 || delta.context.size > 0) this.sendDelta(delta);
      } catch (err) {
        this.ctx.onUnexpectedError(err, 'sync flush');
      }
    });
  }

  /** Sends a delta in frames of about chunkBytes; the client then holds the node's digest too. */
  private sendDelta(delta: Delta): void {
    for (const part of splitDelta(delta, this.ctx.options.chunkBytes)) this.send(encodeDeltaFrame(0, part));
    this.known.addAll(this.port.digest().context);
  }

  private send(frame: Uint8Array): void {
    this.conn.send(frame, Date.now());
  }

  /** An ERROR frame, then close 4400 (a decision: the client does not retry as is). */
  private fail(code: string, message: string): void {
    if (this.ended) return;
    this.send(encodeError(code, message));
    this.end(code === 'unavailable' || code === 'closed' ? CLOSE.tryAgainLater : CLOSE.badRequest, message);
  }

  end(code?: number, reason?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.offChange?.();
    this.pending.length = 0;
    if (code !== undefined) this.conn.close(code, reason ?? '');
  }
}
