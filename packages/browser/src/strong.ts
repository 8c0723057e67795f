/**
 * Strong calls from a browser go through the node it is connected to, over
 * the node's HTTP API (`/api/v1/distributed-state/{ns}/{key}`, docs/http-api.md):
 * the browser is a client of the Raft group, never a voter. The page must be
 * allowed to call the node: same origin (the node serves it, or a reverse
 * proxy), since the HTTP API sends no CORS headers.
 */
import { ERROR_STATUS, type ErrorCode, InvalidArgumentError, type JsonValue, ParleyError } from '@parley/interface';
import type { ResolvedBrowserOptions } from './options.js';

/** A strong entry as the HTTP API answers it (docs/http-api.md: snake_case, ISO 8601 times). */
export interface StrongEntry {
  namespace: string;
  key: string;
  value: JsonValue;
  version: string;
  ttl_seconds: number;
  created_at: string;
  updated_at: string;
  expires_at: string;
  [field: string]: unknown;
}

export interface StrongWriteOptions {
  ttl?: number;
  ifVersion?: string;
  ifNotExists?: boolean;
}

function segment(key: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError('key must be a non-empty string');
  // A browser's URL parser removes '.' and '..' segments, encoded or not: those keys cannot travel.
  if (key === '.' || key === '..') throw new InvalidArgumentError(`key '${key}' cannot be sent from a browser`);
  return encodeURIComponent(key);
}

/** The strong namespace `ns`, through the node's HTTP API. */
export class BrowserStrong {
  constructor(
    readonly name: string,
    private readonly options: ResolvedBrowserOptions,
  ) {}

  private async call(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = {};
    if (this.options.token !== undefined) headers.authorization = `Bearer ${this.options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(
      `${this.options.httpUrl}/api/v1/distributed-state/${encodeURIComponent(this.name)}/${path}`,
      {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      },
    );
    const answer: unknown = await res.json().catch(() => null);
    // Success is {status, msg, data}; failure {status, msg, error}.
    const json = res.ok ? (answer as { data?: unknown } | null)?.data : answer;
    return { status: res.status, json };
  }

  private fail(status: number, json: unknown): never {
    const env = (json ?? {}) as { error?: string; msg?: string };
    const code = (env.error && env.error in ERROR_STATUS ? env.error : 'unavailable') as ErrorCode;
    throw new ParleyError(code, env.msg ?? `HTTP ${status}`, { status });
  }

  async get(key: string): Promise<StrongEntry | undefined> {
    const { status, json } = await this.call('GET', segment(key));
    if (status === 404 && (json as { error?: string })?.error === 'key_not_found') return undefined;
    if (status !== 200) this.fail(status, json);
    return json as StrongEntry;
  }

  async set(
    key: string,
    value: JsonValue,
    options: StrongWriteOptions = {},
  ): Promise<StrongEntry & { operation: string }> {
    const body: Record<string, unknown> = { value };
    if (options.ttl !== undefined) body.ttl_seconds = options.ttl;
    if (options.ifVersion !== undefined) body.if_version_matches = options.ifVersion;
    if (options.ifNotExists !== undefined) body.if_not_exists = options.ifNotExists;
    const { status, json } = await this.call('POST', segment(key), body);
    if (status !== 200 && status !== 201) this.fail(status, json);
    return json as StrongEntry & { operation: string };
  }

  /** Resolves true if the key was deleted, false if it was absent. */
  async delete(key: string, options: { ifVersion?: string } = {}): Promise<boolean> {
    const q = options.ifVersion === undefined ? '' : `?if_version_matches=${encodeURIComponent(options.ifVersion)}`;
    const { status, json } = await this.call('DELETE', `${segment(key)}${q}`);
    if (status === 404 && (json as { error?: string })?.error === 'key_not_found') return false;
    if (status !== 200) this.fail(status, json);
    return true;
  }
}
