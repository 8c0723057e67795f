/** The HTTP client the commands share: the envelope in, typed failures out. */
import { pathSegment, type ResponseAsIs, requestAsIs } from '@parley/server/request-as-is';
import { exitCodeOf } from './exit-codes.js';

export interface ErrorBody {
  status: number;
  msg: string;
  error: string;
}

/** A failure the server reported (or the network produced), with the CLI exit code it maps to. */
export class ApiError extends Error {
  readonly exitCode: number;
  constructor(readonly body: ErrorBody) {
    super(body.msg);
    this.exitCode = exitCodeOf(body.error);
  }
}

/** A failure of the command line itself (bad flag value, refused confirmation). */
export class UsageError extends Error {}

export interface ClientOptions {
  endpoint: string;
  token?: string;
  /** Per request; a blocking lock acquire adds its wait. Default 30 s. */
  timeoutMs?: number;
}

export class ApiClient {
  private readonly base: string;
  constructor(private readonly options: ClientOptions) {
    this.base = options.endpoint.replace(/\/+$/, '');
  }

  /** Opens a server-sent-event stream; failures before the stream opens are ApiErrors. */
  async stream(
    path: string,
    query: Record<string, string | number | undefined>,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const url = new URL(this.base + path);
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) url.searchParams.set(name, String(value));
    let response: Response;
    try {
      response = await fetch(url, { headers: { ...headers, ...this.authHeader(), accept: 'text/event-stream' } });
    } catch (err) {
      throw this.unreachable(err);
    }
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as Partial<ErrorBody>;
      throw new ApiError({
        status: response.status,
        msg: body.msg ?? response.statusText,
        error: body.error ?? 'internal',
      });
    }
    return response;
  }

  private authHeader(): Record<string, string> {
    const token = this.options.token;
    return token === undefined || token === '' ? {} : { authorization: `Bearer ${token}` };
  }

  private unreachable(err: unknown): ApiError {
    const e = err as { code?: unknown; cause?: { code?: unknown }; name?: string };
    const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const cause = text(e.code) ?? text(e.cause?.code) ?? e.name ?? 'Error';
    return new ApiError({
      status: 0,
      msg: `cannot reach ${this.base} (${cause}); is \`parley serve\` running? (--endpoint, PARLEY_ENDPOINT)`,
      error: cause === 'TimeoutError' ? 'timeout' : 'unavailable',
    });
  }

  async call<T>(
    method: string,
    path: string,
    init: {
      body?: unknown;
      query?: Record<string, string | number | boolean | undefined>;
      extraTimeoutMs?: number;
    } = {},
  ): Promise<{ status: number; data: T }> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined) query.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...this.authHeader() };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let response: ResponseAsIs;
    try {
      // Not fetch: it would drop a key `.` or `..` (even encoded) as a dot segment (request-as-is.ts).
      response = await requestAsIs(this.base, {
        method,
        path: query.size > 0 ? `${path}?${query}` : path,
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: AbortSignal.timeout((this.options.timeoutMs ?? 30_000) + (init.extraTimeoutMs ?? 0)),
      });
    } catch (err) {
      throw this.unreachable(err);
    }
    const text = response.text;
    const ok = response.status >= 200 && response.status < 300;
    let body: { status?: number; msg?: string; data?: T; error?: string };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new ApiError({
        status: response.status,
        msg: `unexpected response: ${text.slice(0, 200)}`,
        error: 'internal',
      });
    }
    if (!ok || typeof body.error === 'string') {
      throw new ApiError({
        status: response.status,
        msg: body.msg ?? response.statusText,
        error: body.error ?? 'internal',
      });
    }
    return { status: response.status, data: body.data as T };
  }
}

/** `/{ns}/{key}` with each segment encoded (keys may hold "/"; `.` and `..` become `%2E`, `%2E%2E`). */
export function path(...segments: string[]): string {
  return segments.map((s) => `/${pathSegment(s)}`).join('');
}
