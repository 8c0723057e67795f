/**
 * The MCP server's way to a node: its HTTP API (docs/http-api.md), so the same
 * server works against a running node (`--endpoint`) and an embedded one.
 */
import { ToolError } from './errors.js';

/** Bound on one HTTP call. */
const CALL_TIMEOUT_MS = 30_000;

/** Where the node's HTTP API is, and how to authenticate to it. */
export interface NodeClientOptions {
  /** Base URL, e.g. http://127.0.0.1:4000. */
  endpoint: string;
  /** Bearer token (PARLEY_API_TOKEN). */
  token?: string;
}

/** Calls the node's HTTP API; answers the envelope's `data`, or throws a {@link ToolError}. */
export class NodeClient {
  readonly endpoint: string;
  private readonly token: string | undefined;
  private inflight = 0;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(options: NodeClientOptions) {
    this.endpoint = options.endpoint.replace(/\/+$/, '');
    this.token = options.token;
  }

  /** Resolves once no call is in flight (so answers are not cut off at shutdown), or after `timeoutMs`. */
  idle(timeoutMs = CALL_TIMEOUT_MS): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    this.inflight++;
    try {
      return await this.send<T>(method, path, body);
    } finally {
      if (--this.inflight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  private async send<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(this.endpoint + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
    } catch (err) {
      throw new ToolError('transport', 0, `${method} ${this.endpoint}${path}: ${(err as Error).message}`);
    }
    const text = await response.text();
    let envelope: { data?: unknown; error?: string; msg?: string } = {};
    try {
      envelope = JSON.parse(text) as typeof envelope;
    } catch {
      throw new ToolError('internal', response.status, `not JSON from the node: ${text.slice(0, 200)}`);
    }
    if (!response.ok || envelope.error !== undefined) {
      throw new ToolError(envelope.error ?? 'internal', response.status, envelope.msg ?? response.statusText);
    }
    return envelope.data as T;
  }
}

/** `/api/v1/<kind>/<ns>/<key>` with both parts percent-encoded. */
export const path = (kind: string, namespace: string, key?: string, suffix = ''): string =>
  `/api/v1/${kind}/${encodeURIComponent(namespace)}${key === undefined ? '' : `/${encodeURIComponent(key)}`}${suffix}`;

/** `?a=1&b=x` from the defined fields. */
export const query = (params: Record<string, string | number | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};
