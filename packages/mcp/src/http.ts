/**
 * The MCP server's way to a node: its HTTP API (docs/http-api.md), so the same
 * server works against a running node (`--endpoint`) and an embedded one.
 */
import { pathSegment, type ResponseAsIs, requestAsIs } from '@parley/server/client';
import { ToolError } from './errors.js';

/** Default bound on one HTTP call (a blocking lock acquire adds its wait to it). */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/** Where the node's HTTP API is, and how to authenticate to it. */
export interface NodeClientOptions {
  /** Base URL, e.g. http://127.0.0.1:4000. */
  endpoint: string;
  /** Bearer token (PARLEY_API_TOKEN). */
  token?: string;
  /**
   * Bound on one call, in ms (default 30 s): longer than the node's own call timeout (10 s), so
   * the node answers `timeout` itself. A call that waits on the node (`waitMs`) gets that much more.
   */
  callTimeoutMs?: number;
  /** CA certificates (PEM) to trust for an https endpoint, besides the system's (`parley --cacert`). */
  ca?: string | Buffer;
}

/** Per call: time the node may hold it on purpose, and the caller's cancellation. */
export interface CallOptions {
  /** A blocking lock acquire's wait, in ms: added to the call's bound. */
  waitMs?: number;
  /** Aborts the HTTP request (the MCP client cancelled the tool call); the node then ends its side. */
  signal?: AbortSignal;
  /** A session token to send as `Parley-Session` ('' starts a session; docs/sessions.md). */
  session?: string;
  /** Called with the token the node answers in `Parley-Session` (on success, and on a 404 of a read). */
  onSession?: (token: string) => void;
}

/** The session header, in and out (docs/http-api.md, "Sessions"). */
const SESSION_HEADER = 'parley-session';

/** Calls the node's HTTP API; answers the envelope's `data`, or throws a {@link ToolError}. */
export class NodeClient {
  readonly endpoint: string;
  private readonly token: string | undefined;
  private readonly callTimeoutMs: number;
  private readonly ca: string | Buffer | undefined;
  private inflight = 0;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(options: NodeClientOptions) {
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    this.token = options.token;
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.ca = options.ca;
  }

  /** Resolves once no call is in flight (so answers are not cut off at shutdown), or after `timeoutMs`. */
  idle(timeoutMs = this.callTimeoutMs): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async call<T = unknown>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<T> {
    this.inflight++;
    try {
      return await this.send<T>(method, path, body, options);
    } finally {
      if (--this.inflight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  private async send<T>(method: string, path: string, body: unknown, options: CallOptions): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.session !== undefined) headers[SESSION_HEADER] = options.session;
    const boundMs = this.callTimeoutMs + Math.max(0, options.waitMs ?? 0);
    const bound = AbortSignal.timeout(boundMs);
    const signal = options.signal === undefined ? bound : AbortSignal.any([bound, options.signal]);
    let response: ResponseAsIs;
    try {
      // Not fetch: it would drop a key `.` or `..` (even encoded) as a dot segment (request-as-is.ts).
      response = await requestAsIs(this.endpoint, {
        method,
        path,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        ...(this.ca === undefined ? {} : { ca: this.ca }),
      });
    } catch (err) {
      if (bound.aborted)
        throw new ToolError('timeout', 0, `${method} ${this.endpoint}${path}: no answer within ${boundMs} ms`);
      const why = options.signal?.aborted ? 'cancelled by the client' : (err as Error).message;
      throw new ToolError('transport', 0, `${method} ${this.endpoint}${path}: ${why}`);
    }
    const answered = response.headers[SESSION_HEADER];
    if (options.session !== undefined && typeof answered === 'string') options.onSession?.(answered);
    const text = response.text;
    let envelope: { data?: unknown; error?: string; msg?: string } = {};
    try {
      envelope = JSON.parse(text) as typeof envelope;
    } catch {
      throw new ToolError('internal', response.status, `not JSON from the node: ${text.slice(0, 200)}`);
    }
    if (response.status < 200 || response.status >= 300 || envelope.error !== undefined) {
      throw new ToolError(envelope.error ?? 'internal', response.status, envelope.msg ?? response.statusText);
    }
    return envelope.data as T;
  }
}

/** `/api/v1/<kind>/<ns>/<key>` with both parts percent-encoded (a key `.` or `..` as `%2E`, `%2E%2E`). */
export const path = (kind: string, namespace: string, key?: string, suffix = ''): string =>
  `/api/v1/${kind}/${pathSegment(namespace)}${key === undefined ? '' : `/${pathSegment(key)}`}${suffix}`;

/** `?a=1&b=x` from the defined fields. */
export const query = (params: Record<string, string | number | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};
