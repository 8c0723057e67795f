/**
 * One HTTP call to a node, with a deadline, and what the caller can know of its
 * outcome: a reply (the node decided), `refused` (the connection was refused, so
 * the request was never sent: it certainly did nothing) or `lost` (sent, and no
 * reply: a reset, a timeout, a node killed or paused mid-call — the outcome is
 * unknown). Every call opens its own connection (no keep-alive): a pooled socket
 * to a node that was killed would turn a certain "nothing happened" into an
 * unknown outcome.
 */
import { request } from 'node:http';

export type HttpOutcome =
  | {
      readonly kind: 'reply';
      readonly status: number;
      readonly body: Envelope;
      readonly headers: Record<string, string>;
    }
  | { readonly kind: 'refused'; readonly error: string }
  | { readonly kind: 'lost'; readonly error: string };

/** Parley's envelope: `{status, msg, data}` or `{status, msg, error}`. */
export interface Envelope {
  readonly status?: number;
  readonly msg?: string;
  readonly data?: unknown;
  readonly error?: string;
}

/** Bytes of one reply at most (a list of a full namespace stays well below). */
const MAX_REPLY_BYTES = 16 << 20;

export interface CallOptions {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly body?: unknown;
  readonly timeoutMs: number;
}

export function call(baseUrl: string, path: string, options: CallOptions): Promise<HttpOutcome> {
  const url = new URL(path, baseUrl);
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: HttpOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const req = request(
      url,
      {
        method: options.method,
        agent: false,
        headers: {
          connection: 'close',
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': payload.length }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_REPLY_BYTES) req.destroy(new Error('reply too large'));
          else chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Envelope;
          try {
            body = text === '' ? {} : (JSON.parse(text) as Envelope);
          } catch {
            body = { msg: text.slice(0, 200) };
          }
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers[k] = v;
          done({ kind: 'reply', status: res.statusCode ?? 0, body, headers });
        });
        res.on('error', (err) => done({ kind: 'lost', error: err.message }));
      },
    );
    const timer = setTimeout(() => {
      done({ kind: 'lost', error: 'client-timeout' });
      req.destroy();
    }, options.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      done(
        err.code === 'ECONNREFUSED'
          ? { kind: 'refused', error: 'ECONNREFUSED' }
          : { kind: 'lost', error: err.code ?? err.message },
      );
    });
    req.end(payload);
  });
}

/** The error code of a reply that is not a success (`unavailable`, `version_mismatch`, …). */
export function errorCode(o: HttpOutcome): string {
  if (o.kind !== 'reply') return o.error;
  return o.body.error ?? `http_${o.status}`;
}

/** True for a 2xx reply. */
export function isOk(o: HttpOutcome): o is Extract<HttpOutcome, { kind: 'reply' }> {
  return o.kind === 'reply' && o.status >= 200 && o.status < 300;
}

/**
 * A definite failure: the node said the call did nothing (a 4xx), or the
 * request never left (refused). A 5xx (`unavailable`, `not_leader`, `timeout`,
 * `closed`, `internal`) is not definite: Parley documents that a write failing
 * with `timeout` or `unavailable` may still apply.
 */
export function isDefiniteFailure(o: HttpOutcome): boolean {
  if (o.kind === 'refused') return true;
  return o.kind === 'reply' && o.status >= 400 && o.status < 500;
}

/** Percent-encodes a namespace or key for a path. */
export const seg = (s: string): string => encodeURIComponent(s);
