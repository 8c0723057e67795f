/**
 * Server-sent events for watches. Bounded: a slow reader whose unsent bytes
 * pass `maxBufferedBytes` is disconnected (it resumes from its last event id);
 * the number of open streams is capped by the server; a comment line keeps
 * idle connections alive through proxies. A stream the server ends says why
 * in a last `error` event, `{error, msg}`: `unavailable` (cut: resume from
 * the last id) or `compacted` (the changes after it are gone: do not resume).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface SseLimits {
  maxBufferedBytes: number;
  heartbeatMs: number;
  /** Events a subscription may deliver before the stream opens (a replay); past it the stream ends and the reader resumes. */
  maxEarlyEvents: number;
}

export const DEFAULT_SSE_LIMITS: SseLimits = {
  maxBufferedBytes: 1_048_576,
  heartbeatMs: 15_000,
  maxEarlyEvents: 10_000,
};

export class SseStream {
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly onCloseCallbacks: Array<() => void> = [];

  constructor(
    request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly limits: SseLimits = DEFAULT_SSE_LIMITS,
    headers: Record<string, string> = {},
  ) {
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...headers,
    });
    reply.raw.write(': parley watch\n\n');
    this.heartbeat = setInterval(() => this.write(': ping\n\n'), limits.heartbeatMs);
    this.heartbeat.unref();
    request.raw.on('close', () => this.close());
    reply.raw.on('error', () => this.close());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  onClose(callback: () => void): void {
    if (this.closed) callback();
    else this.onCloseCallbacks.push(callback);
  }

  /** Sends one event; `data` is JSON-encoded on one line. */
  send(event: string, data: unknown, id?: string | number): void {
    const head = id === undefined ? '' : `id: ${id}\n`;
    this.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Sends a last `error` event (past the buffer bound: it is small) and closes the stream. */
  end(error: string, msg: string): void {
    if (this.closed) return;
    this.reply.raw.write(`event: error\ndata: ${JSON.stringify({ error, msg })}\n\n`);
    this.close();
  }

  private write(text: string): void {
    if (this.closed) return;
    if (this.reply.raw.writableLength > this.limits.maxBufferedBytes) {
      // The reader is not keeping up: drop it rather than buffer without bound.
      this.end('unavailable', `this reader fell ${this.limits.maxBufferedBytes} bytes behind: resume from the last id`);
      return;
    }
    this.reply.raw.write(text);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const callback of this.onCloseCallbacks.splice(0)) {
      try {
        callback();
      } catch {
        // a failing unsubscribe must not keep the stream open
      }
    }
    this.reply.raw.end();
  }
}
