/** The HTTP client the commands share: the envelope in, typed failures out. */
import { openAsIs, pathSegment, type ResponseAsIs, requestAsIs } from '@parley/server/client';
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

/** The session a command carries: the token it sends, and what to do with the one the node answers. */
export interface SessionCarrier {
  /** The token to send ('' for a new session). */
  token(): Promise<string>;
  /** Keeps the token the node answered. */
  update(token: string): Promise<void>;
}

export interface ClientOptions {
  endpoint: string;
  token?: string;
  /** Per request; a blocking lock acquire adds its wait. Default 30 s. */
  timeoutMs?: number;
  /** CA certificates (PEM) to trust for an https endpoint, besides the system's (`--cacert`). */
  ca?: string | Buffer;
  /** `--session`: every call sends its token as `Parley-Session` and keeps the one the node answers. */
  session?: SessionCarrier;
}

/** The session header, in and out (docs/http-api.md, "Sessions"). */
const SESSION_HEADER = 'parley-session';

/** A watch response as it starts: its status, then its body as it streams. */
export interface StreamResponse {
  status: number;
  body: AsyncIterable<Uint8Array>;
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
  ): Promise<StreamResponse> {
    const q = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) q.set(name, String(value));
    let response: Awaited<ReturnType<typeof openAsIs>>;
    try {
      response = await openAsIs(this.base, {
        method: 'GET',
        path: q.size > 0 ? `${path}?${q}` : path,
        headers: { ...headers, ...this.authHeader(), accept: 'text/event-stream' },
        ...(this.options.ca === undefined ? {} : { ca: this.options.ca }),
      });
    } catch (err) {
      throw this.unreachable(err);
    }
    const status = response.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      let text = '';
      for await (const chunk of response) {
        text += String(chunk);
        if (text.length > 65_536) break;
      }
      response.destroy();
      let body: Partial<ErrorBody> = {};
      try {
        body = JSON.parse(text) as Partial<ErrorBody>;
      } catch {}
      throw new ApiError({
        status,
        msg: body.msg ?? response.statusMessage ?? '',
        error: body.error ?? 'internal',
      });
    }
    return { status, body: response };
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
    const session = this.options.session;
    if (session !== undefined) headers[SESSION_HEADER] = await session.token();
    let response: ResponseAsIs;
    try {
      // Not fetch: it would drop a key `.` or `..` (even encoded) as a dot segment (request-as-is.ts).
      response = await requestAsIs(this.base, {
        method,
        path: query.size > 0 ? `${path}?${query}` : path,
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: AbortSignal.timeout((this.options.timeoutMs ?? 30_000) + (init.extraTimeoutMs ?? 0)),
        ...(this.options.ca === undefined ? {} : { ca: this.options.ca }),
      });
    } catch (err) {
      throw this.unreachable(err);
    }
    // The node answers a token only when the call happened (also a 404 of a read): keep it.
    const answered = response.headers[SESSION_HEADER];
    if (session !== undefined && typeof answered === 'string') await session.update(answered);
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
