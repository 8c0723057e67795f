/**
 * Bearer-token authentication. The token comes from PARLEY_API_TOKEN (the CLI
 * passes it in). Without a token the server only binds to a loopback address.
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
