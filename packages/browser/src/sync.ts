/**
 * The sync session of one browser namespace with its node, over one WebSocket
 * to `<node>/sync/{namespace}` (the frames: wire.ts; the node's side:
 * @parley/server's sync door).
 *
 * - Connect: HELLO with this replica's digest; the node answers with what
 *   this replica lacks and its own digest, answered with what the node lacks
 *   (the writes made offline). Every sync period a DIGEST repeats the
 *   exchange, which also tells a dead connection from a quiet one (the node
 *   always answers: three periods without a frame close the socket).
 * - Live: each durable local write leaves at once as a DELTA with a sequence
 *   number, ACKed once durable on the node; the node sends what changes there.
 * - Reconnect with backoff (250 ms doubling up to maxReconnectMs, jittered);
 *   a refusal (close 4400 bad request, 4401 unauthorized) is final.
 * - Bounds: frames of at most maxFrameBytes both ways (deltas are split),
 *   no live send while the socket holds more than MAX_BUFFERED bytes (the next
 *   exchange carries them), at most MAX_UNACKED writes awaiting an ACK.
 */
import type { Delta, Digest } from '@parley/crdt';
import { isParleyError } from '@parley/interface';
import type { ResolvedBrowserOptions } from './options.js';
import { subprotocols } from './options.js';
import type { SyncState } from './types.js';
import {
  decodeFrame,
  encodeDeltaFrame,
  encodeDigestFrame,
  encodeHello,
  type Frame,
  SYNC_PATH,
  splitDelta,
  TAG_ACK,
  TAG_DELTA,
  TAG_DIGEST,
  TAG_ERROR,
  TAG_WELCOME,
} from './wire.js';

const MAX_BUFFERED = 8 * 1_048_576;
const MAX_UNACKED = 4096;
const CHUNK_BYTES = 256 * 1024;
const REFUSED = new Set([4400, 4401]);

/** What the session needs of its namespace. */
export interface SyncPort {
  readonly name: string;
  readonly maxTtlSeconds: number;
  replicaId(): string;
  digest(): Digest;
  deltaFor(digest: Digest): Delta;
  mergeRemote(delta: Delta, bytes: Uint8Array, origin: string): void;
  noteContact(): void;
}

export class SyncClient {
  state: SyncState = 'offline';
  /** The node's last ERROR frame, if any (a refusal says why here). */
  lastError: { code: string; message: string } | undefined;
  private ws: WebSocket | undefined;
  private welcomed = false;
  private exchanged = false;
  private nodeId = '';
  private maxFrame: number;
  private seq = 0;
  private readonly unacked = new Set<number>();
  private attempts = 0;
  private lastFrameAt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private periodTimer: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private readonly listeners = new Set<(state: SyncState) => void>();

  constructor(
    private readonly port: SyncPort,
    private readonly options: ResolvedBrowserOptions,
  ) {
    this.maxFrame = options.maxFrameBytes;
  }

  start(): void {
    if (this.stopped || this.ws) return;
    this.connect();
    this.periodTimer = setInterval(() => this.period(), this.options.syncIntervalMs);
  }

  onState(listener: (state: SyncState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sends a durable local write now if the session is up (else the next exchange carries it). */
  sendLocal(encodedDelta: Uint8Array): void {
    const ws = this.ws;
    if (!ws || !this.welcomed || ws.readyState !== 1) return;
    if (ws.bufferedAmount > MAX_BUFFERED || this.unacked.size >= MAX_UNACKED) return;
    if (encodedDelta.length + 16 > this.maxFrame) return;
    const seq = ++this.seq;
    this.unacked.add(seq);
    ws.send(encodeDeltaFrame(seq, encodedDelta));
    this.setState('syncing');
  }

  private connect(): void {
    if (this.stopped) return;
    const Ctor = this.options.WebSocket ?? (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
    if (!Ctor) throw new Error('no WebSocket in this environment: pass options.WebSocket');
    this.setState('connecting');
    const url = `${this.options.wsUrl}${SYNC_PATH}/${encodeURIComponent(this.port.name)}`;
    let ws: WebSocket;
    try {
      ws = new Ctor(url, subprotocols(this.options.token));
    } catch {
      this.scheduleReconnect();
      return;
    }
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => {
      this.lastFrameAt = Date.now();
      ws.send(encodeHello(this.port.replicaId(), this.port.digest()));
    };
    ws.onmessage = (event: MessageEvent) => {
      if (this.ws !== ws) return;
      this.lastFrameAt = Date.now();
      if (!(event.data instanceof ArrayBuffer)) return;
      let frame: Frame;
      try {
        frame = decodeFrame(new Uint8Array(event.data), this.maxFrame);
      } catch (err) {
        this.lastError = { code: 'decode_error', message: String((err as Error)?.message ?? err) };
        ws.close(4400, 'undecodable frame');
        return;
      }
      this.handle(ws, frame);
    };
    ws.onclose = (event: CloseEvent) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.welcomed = false;
      this.exchanged = false;
      this.unacked.clear();
      if (REFUSED.has(event.code) && this.lastError !== undefined) {
        this.setState('refused');
        return;
      }
      this.scheduleReconnect();
    };
    ws.onerror = () => {};
  }

  private handle(ws: WebSocket, frame: Frame): void {
    switch (frame.tag) {
      case TAG_WELCOME:
        if (frame.maxTtlSeconds !== this.port.maxTtlSeconds) {
          this.lastError = {
            code: 'invalid_argument',
            message: `the node's maxTtlSeconds is ${frame.maxTtlSeconds}, this replica's ${this.port.maxTtlSeconds}`,
          };
          this.stopped = true;
          ws.close(4400, 'maxTtlSeconds differs');
          return;
        }
        this.options.observeNodeTime(frame.nowMs);
        this.welcomed = true;
        this.nodeId = frame.nodeId;
        this.maxFrame = Math.min(this.options.maxFrameBytes, frame.maxFrameBytes);
        this.attempts = 0;
        this.setState('syncing');
        return;
      case TAG_DELTA:
        try {
          this.port.mergeRemote(frame.delta, frame.bytes, this.nodeId);
        } catch (err) {
          this.lastError = { code: isParleyError(err) ? err.code : 'invalid_argument', message: String(err) };
          ws.close(4400, 'delta refused');
        }
        return;
      case TAG_DIGEST: {
        const missing = this.port.deltaFor(frame.digest);
        if (missing.states.length > 0 || missing.context.size > 0) {
          for (const part of splitDelta(missing, Math.min(CHUNK_BYTES, this.maxFrame))) {
            const seq = ++this.seq;
            this.unacked.add(seq);
            ws.send(encodeDeltaFrame(seq, part));
          }
        }
        this.exchanged = true;
        this.port.noteContact();
        this.settle();
        return;
      }
      case TAG_ACK:
        this.unacked.delete(frame.seq);
        this.settle();
        return;
      case TAG_ERROR:
        this.lastError = { code: frame.code, message: frame.message };
        return;
      default:
        ws.close(4400, 'unexpected frame');
    }
  }

  private settle(): void {
    this.setState(this.exchanged && this.unacked.size === 0 ? 'synced' : 'syncing');
  }

  private period(): void {
    const ws = this.ws;
    if (ws?.readyState !== 1) return;
    if (Date.now() - this.lastFrameAt > 3 * this.options.syncIntervalMs) {
      ws.close(4000, 'no frame for three sync periods');
      return;
    }
    if (this.welcomed) ws.send(encodeDigestFrame(this.port.digest()));
  }

  private scheduleReconnect(): void {
    this.setState('offline');
    if (this.stopped || this.reconnectTimer !== undefined) return;
    const base = Math.min(this.options.maxReconnectMs, 250 * 2 ** Math.min(this.attempts, 16));
    this.attempts++;
    this.reconnectTimer = setTimeout(
      () => {
        this.reconnectTimer = undefined;
        this.connect();
      },
      Math.floor(base / 2 + (Math.random() * base) / 2),
    );
  }

  private setState(state: SyncState): void {
    if (this.state === state) return;
    this.state = state;
    for (const l of [...this.listeners]) l(state);
  }

  /** Closes the socket and stops reconnecting. */
  stop(): void {
    this.stopped = true;
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer);
    if (this.periodTimer !== undefined) clearInterval(this.periodTimer);
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, 'closed');
    this.setState('offline');
  }
}
