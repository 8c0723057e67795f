/**
 * The client side of the API's paths, for every client that builds URLs from
 * keys (the CLI, the MCP server, the test harness).
 *
 * A key is one percent-encoded path segment. Keys `.` and `..` are the hard
 * case: every WHATWG URL parser — `fetch`, `new URL`, browsers — removes them as
 * dot segments, and removes their encodings `%2E` and `%2E%2E` as well, so
 * `/api/v1/distributed-state/ns/..` would reach `/api/v1/distributed-state`.
 * The server reads `%2E` as `.` (the router decodes each segment), so a client
 * writes those keys as `%2E` / `%2E%2E` (`pathSegment`) and sends the path as
 * it is, not through a URL parser (`requestAsIs`, over node:http).
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** One path segment of the API: percent-encoded, a key `.` or `..` as `%2E` or `%2E%2E`. */
export function pathSegment(text: string): string {
  const encoded = encodeURIComponent(text);
  return encoded === '.' || encoded === '..' ? encoded.replaceAll('.', '%2E') : encoded;
}

/** Characters a request target may hold as they are (RFC 3986's, `%` included: escapes stay escapes). */
const TARGET_CHAR = /[A-Za-z0-9\-._~!$&'()*+,;=:@/?%[\]]/;

/**
 * `path` with every character a request target may not hold percent-encoded as UTF-8 (a lone
 * surrogate as U+FFFD, as URL parsers do), and nothing else changed: no dot segment is removed.
 */
export function escapeTarget(path: string): string {
  let out = '';
  for (const ch of path) {
    if (TARGET_CHAR.test(ch)) out += ch;
    else {
      try {
        out += encodeURIComponent(ch);
      } catch {
        out += '%EF%BF%BD';
      }
    }
  }
  return out;
}

/** The default bound on a response body. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1_048_576;

export interface RequestAsIs {
  method: string;
  /**
   * Path (and query) after the base URL's own path, sent as is (build it with `pathSegment`);
   * only characters a request target cannot hold are percent-encoded (`escapeTarget`).
   */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Aborts the request; the promise rejects with the signal's reason (a `TimeoutError` for AbortSignal.timeout). */
  signal?: AbortSignal;
  /** A longer response body rejects (default DEFAULT_MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
  /** For an https base: the CA certificates (PEM) to trust besides the system's, e.g. a self-signed node's. */
  ca?: string | Buffer;
}

export interface ResponseAsIs {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One HTTP(S) request to `base` (e.g. http://127.0.0.1:4000) whose path reaches the server
 * byte for byte. Network failures reject with node's error (`code`: ECONNREFUSED, …).
 */
export function requestAsIs(base: string, init: RequestAsIs): Promise<ResponseAsIs> {
  const limit = init.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  return new Promise((resolve, reject) => {
    openAsIs(base, init).then((res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      const fail = (err: unknown) => {
        res.destroy();
        reject(err);
      };
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > limit) fail(new RangeError(`response larger than ${limit} bytes`));
        else chunks.push(chunk);
      });
      res.on('error', fail); // an abort destroys the response with the signal's reason (openAsIs)
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? '',
          headers: res.headers,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    }, reject);
  });
}

/**
 * Sends the request as requestAsIs does and resolves with the response as it starts (status and
 * headers read, the body still streaming: a watch). The signal also aborts the body.
 */
export function openAsIs(base: string, init: RequestAsIs): Promise<IncomingMessage> {
  const url = new URL(base);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(new TypeError(`not an http(s) URL: ${base}`));
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const signal = init.signal;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      req.destroy();
      reject(err);
    };
    const onAbort = () => fail(signal?.reason);
    const req = send(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port,
        method: init.method,
        path: url.pathname.replace(/\/+$/, '') + escapeTarget(init.path),
        ...(url.protocol === 'https:' && init.ca !== undefined ? { ca: init.ca } : {}),
        // Content-Length always (node frames an OPTIONS or DELETE body otherwise not at all).
        headers: {
          host: url.host,
          ...init.headers,
          ...(init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) }),
        },
      },
      (res) => {
        if (settled) {
          res.destroy();
          return;
        }
        settled = true;
        if (signal !== undefined) {
          signal.removeEventListener('abort', onAbort);
          signal.addEventListener('abort', () => res.destroy(signal.reason as Error), { once: true });
        }
        resolve(res);
      },
    );
    req.on('error', fail);
    signal?.addEventListener('abort', onAbort, { once: true });
    req.end(init.body);
  });
}
