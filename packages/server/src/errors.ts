/**
 * Every failure leaves the server as the seed's error envelope
 * `{status, msg, error}`, where `error` is a stable code. Node errors carry
 * their code (`ERROR_STATUS` in @parley/interface gives the status); the codes
 * below exist only at the HTTP door.
 */
import { ERROR_STATUS, isParleyError, type ParleyError } from '@parley/interface';

/** Codes that only the HTTP layer produces, with their statuses. */
export const HTTP_ERROR_STATUS = {
  /** A server without a token was addressed by a name that is not loopback (DNS rebinding). */
  forbidden_host: 403,
  /** A server without a token was called from a web origin that is not loopback. */
  forbidden_origin: 403,
  /** No route for this path. */
  not_found: 404,
  /** The path exists, not under this method (the `Allow` header lists those it takes). */
  method_not_allowed: 405,
  /** A route that takes a JSON body got another Content-Type, or none. */
  unsupported_media_type: 415,
  /** Too many concurrent watch streams, or the server is shutting down. */
  too_many_streams: 503,
  /** A bug: never on bad input. */
  internal: 500,
} as const;

export type HttpErrorCode = keyof typeof ERROR_STATUS | keyof typeof HTTP_ERROR_STATUS;

export interface ErrorEnvelope {
  status: number;
  msg: string;
  error: HttpErrorCode;
}

/** A typed failure raised by the HTTP layer itself (validation, auth, routing). */
export class HttpError extends Error {
  constructor(
    readonly code: HttpErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }

  get status(): number {
    return statusOf(this.code);
  }
}

export function statusOf(code: HttpErrorCode): number {
  return code in ERROR_STATUS
    ? ERROR_STATUS[code as keyof typeof ERROR_STATUS]
    : HTTP_ERROR_STATUS[code as keyof typeof HTTP_ERROR_STATUS];
}

/** Where a request was going, to word messages as the seed does. */
export interface RequestTarget {
  namespace?: string;
  key?: string;
}

/** Fastify's own errors (body parser, validation) carry these. */
interface FrameworkError {
  code?: string;
  statusCode?: number;
  validation?: unknown;
  message?: string;
}

/**
 * Maps anything thrown by a route to the envelope and extra headers. A client
 * mistake is a 4xx with a stable code; only an unexpected exception is a 500.
 */
export function toErrorEnvelope(
  err: unknown,
  target: RequestTarget,
): { envelope: ErrorEnvelope; headers: Record<string, string>; unexpected: boolean } {
  if (isParleyError(err)) return { envelope: fromParley(err, target), headers: parleyHeaders(err), unexpected: false };
  if (err instanceof HttpError) {
    return {
      envelope: { status: err.status, msg: err.message, error: err.code },
      headers: err.headers,
      unexpected: false,
    };
  }
  const fw = (typeof err === 'object' && err !== null ? err : {}) as FrameworkError;
  if (fw.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return {
      envelope: { status: 413, msg: 'request body exceeds the size limit', error: 'value_too_large' },
      headers: {},
      unexpected: false,
    };
  }
  if (
    fw.validation !== undefined ||
    (typeof fw.statusCode === 'number' && fw.statusCode >= 400 && fw.statusCode < 500)
  ) {
    const msg = typeof fw.message === 'string' && fw.message.length > 0 ? fw.message : 'invalid request';
    return { envelope: { status: 400, msg, error: 'invalid_argument' }, headers: {}, unexpected: false };
  }
  return { envelope: { status: 500, msg: 'internal error', error: 'internal' }, headers: {}, unexpected: true };
}

function fromParley(err: ParleyError, target: RequestTarget): ErrorEnvelope {
  const status = ERROR_STATUS[err.code];
  if (err.code === 'version_mismatch') {
    const expected = String(err.details.expected ?? '');
    const actual =
      err.details.actual === null || err.details.actual === undefined ? 'none' : String(err.details.actual);
    const key =
      target.namespace !== undefined && target.key !== undefined
        ? `${target.namespace}/${target.key}`
        : String(err.details.key ?? '');
    return { status, msg: `Version mismatch for key ${key}: expected ${expected}, got ${actual}`, error: err.code };
  }
  return { status, msg: err.message, error: err.code };
}

function parleyHeaders(err: ParleyError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (err.retryable) headers['retry-after'] = '1';
  const hint = err.details.leaderHint;
  if (typeof hint === 'string' && hint.length > 0) headers['x-parley-leader'] = hint;
  return headers;
}
