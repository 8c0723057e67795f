/**
 * Bearer-token authentication. The token comes from PARLEY_API_TOKEN (the CLI
 * passes it in). Without a token the server only binds to a loopback address,
 * and answers only requests addressed to a loopback name (or one of the
 * `allowedHosts`) from no origin or a loopback one: a web page that rebinds its
 * own name to 127.0.0.1 sends its own name as Host and Origin.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { InvalidArgumentError } from '@parley/interface';
import { HttpError } from './errors.js';

/** Routes a probe or a reader of the API description may call without a token. */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/openapi.json']);

export function isLoopbackHost(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h.startsWith('::ffff:127.');
  return false;
}

/** Refuses a bind that would expose an unauthenticated API beyond this machine. */
export function checkBind(host: string, token: string | undefined): void {
  if (token !== undefined && token.length === 0) {
    throw new InvalidArgumentError('PARLEY_API_TOKEN is set but empty');
  }
  if (token === undefined && !isLoopbackHost(host)) {
    throw new InvalidArgumentError(
      `refusing to listen on ${host} without a token: set PARLEY_API_TOKEN, or bind to 127.0.0.1`,
      { host },
    );
  }
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Returns a checker of the Authorization header; constant time in the token. */
export function bearerChecker(token: string): (header: string | undefined) => void {
  const expected = digest(token);
  return (header) => {
    if (header === undefined || header.length === 0) {
      throw new HttpError('unauthorized', 'missing bearer token (Authorization: Bearer $PARLEY_API_TOKEN)', {
        'www-authenticate': 'Bearer',
      });
    }
    const match = /^Bearer +(.+)$/i.exec(header);
    if (match === null || !timingSafeEqual(digest(match[1]!.trim()), expected)) {
      throw new HttpError('unauthorized', 'invalid bearer token', { 'www-authenticate': 'Bearer' });
    }
  };
}

/** Host names (no port) as the guard compares them: lower case, without IPv6 brackets. */
function normalizeName(name: string): string {
  const lower = name.toLowerCase();
  return lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
}

/** The name part of a Host header (`name`, `name:port`, `[v6]`, `[v6]:port`), or undefined if malformed. */
export function hostNameOf(header: string): string | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]@/\s]+)(?::(\d{1,5}))?$/.exec(header);
  return match === null ? undefined : normalizeName(match[1]!);
}

/** Checks the names given to `allowedHosts` (`--allow-host`): host names or addresses without a port. */
export function checkAllowedHosts(names: readonly string[]): string[] {
  return names.map((name) => {
    const bracketed = isIP(name) === 6 ? `[${name}]` : name;
    if (!/^(\[[0-9A-Fa-f:.]+\]|[^:[\]@/\s]+)$/.test(bracketed)) {
      throw new InvalidArgumentError(`allowed host '${name}' must be a host name or address without a port`, { name });
    }
    return normalizeName(bracketed);
  });
}

/**
 * The DNS-rebinding guard of a token-less server: a Host that is not a loopback
 * name (or one of `allowed`) is 403 `forbidden_host`; an Origin header, when
 * present, must be an http(s) origin on such a name too, else 403 `forbidden_origin`.
 */
export function rebindingGuard(
  allowed: readonly string[],
): (host: string | undefined, origin: string | undefined) => void {
  const extra = new Set(checkAllowedHosts(allowed));
  const accepts = (name: string): boolean => isLoopbackHost(name) || extra.has(name);
  return (host, origin) => {
    const name = host === undefined ? undefined : hostNameOf(host);
    if (name === undefined || !accepts(name)) {
      throw new HttpError(
        'forbidden_host',
        `Host ${host === undefined ? '(none)' : `'${host.slice(0, 256)}'`} is not a loopback name: a server without a token ` +
          'answers only localhost, 127.0.0.1 and [::1] (name others with --allow-host, or set PARLEY_API_TOKEN)',
      );
    }
    if (origin === undefined) return;
    let originName: string | undefined;
    try {
      const url = new URL(origin);
      if (url.protocol === 'http:' || url.protocol === 'https:') originName = normalizeName(url.hostname);
    } catch {
      originName = undefined;
    }
    if (originName === undefined || !accepts(originName)) {
      throw new HttpError(
        'forbidden_origin',
        `Origin '${origin.slice(0, 256)}' is not a loopback origin: a server without a token refuses requests from other web origins`,
      );
    }
  };
}
