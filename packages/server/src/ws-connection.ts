/**
 * One client connection of a WebSocket door (y-websocket or sync): sends with
 * a bound on what may queue unsent, and keeps the line alive (the door's
 * keepalive message when it has been quiet — y-websocket's is an empty
 * awareness message —, a ping whose pong must come back before the next one).
 */
import type { WebSocket } from 'ws';

/** Close codes. 4400–4499 tell the stock provider not to reconnect (a decision, not a failure). */
export const CLOSE = {
  goingAway: 1001,
  tooBig: 1009,
  internal: 1011,
  tryAgainLater: 1013,
  badRequest: 4400,
  unauthorized: 4401,
} as const;

export class Connection {
  lastSentAt: number;
  private lastPingAt: number;
  private awaitingPong = false;
  closed = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly maxBufferedBytes: number,
    now: number,
    private readonly onDrop: (why: 'slow' | 'silent') => void,
  ) {
    this.lastSentAt = now;
    this.lastPingAt = now;
    ws.on('pong', () => {
      this.awaitingPong = false;
    });
  }

  send(message: Uint8Array, now: number): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    if (this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.onDrop('slow');
      this.terminate();
      return;
    }
    this.ws.send(message);
    this.lastSentAt = now;
  }

  /** Closes with a code and a reason (cut to the 123 bytes a close frame holds). */
  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    let r = reason;
    while (Buffer.byteLength(r, 'utf8') > 123) r = r.slice(0, -1);
    this.ws.close(code, r);
  }

  terminate(): void {
    this.closed = true;
    this.ws.terminate();
  }

  /** Keep-alive duties at `now`: the quiet-line message and the ping. */
  tick(now: number, keepAliveMs: number, pingIntervalMs: number, keepAlive: Uint8Array): void {
    if (this.closed) return;
    if (now - this.lastPingAt >= pingIntervalMs) {
      if (this.awaitingPong) {
        this.onDrop('silent');
        this.terminate();
        return;
      }
      this.awaitingPong = true;
      this.lastPingAt = now;
      this.ws.ping();
    }
    if (now - this.lastSentAt >= keepAliveMs) this.send(keepAlive, now);
  }
}
