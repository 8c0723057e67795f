/**
 * Node addresses as people type them: a URL (`http://127.0.0.1:4000`,
 * `https://parley.example/base`), or `host:port` (`127.0.0.1:4100`,
 * `localhost:4100`, `[::1]:4100`), which means plain http. Anything else is a
 * UsageError (exit 2) naming the flag, never a crash.
 */
import { UsageError } from './client.js';

const HAS_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** The base URL (no trailing slash) of `text`, given to `flag` (or read from `flag`'s variable). */
export function parseEndpoint(flag: string, text: string): string {
  const t = text.trim();
  const refuse = (why: string) =>
    new UsageError(`${flag}: '${text}' ${why} (e.g. http://127.0.0.1:4000, or 127.0.0.1:4000)`);
  if (t === '') throw refuse('is empty: give a URL or host:port');
  let url: URL;
  try {
    url = new URL(HAS_SCHEME.test(t) ? t : `http://${t}`);
  } catch {
    throw refuse('is not a URL or host:port');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('must be http:// or https://');
  if (url.hostname === '') throw refuse('names no host');
  if (url.username !== '' || url.password !== '') throw refuse('must not hold credentials (use PARLEY_API_TOKEN)');
  if (url.search !== '' || url.hash !== '') throw refuse('must not hold a query or a fragment');
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}
