/**
 * Where Parley keeps its strong state in etcd's flat key space. Every key
 * starts with the backend's prefix (default `/parley`):
 *
 * | key                                  | holds                                                         |
 * | ------------------------------------ | ------------------------------------------------------------- |
 * | `<prefix>/e/<ns>/<key>`              | a strong entry (value, claim or lease document): record.ts    |
 * | `<prefix>/l/<ns>/<key>`              | a lock slot (holder, last fence): locks.ts                    |
 * | `<prefix>/w/<ns>/<key>/<suffix>`     | a queued lock waiter, ordered by create_revision: locks.ts    |
 * | `<prefix>/x/<id>`                    | a request id: the first result of a write, for exactly-once   |
 *
 * Namespaces and keys are escaped one character at a time (`%` → `%25`,
 * `/` → `%2F`, a lone UTF-16 surrogate → `%uXXXX`), so a `/` inside a key can
 * never reach into the next level (`w/ns/a/…` is only ever key `a`'s waiters),
 * two distinct strings never map to the same bytes (UTF-8 would turn every
 * lone surrogate into U+FFFD), and the escape of a prefix is a prefix of the
 * escape of every key that starts with it (watch prefixes stay range reads)
 * — except for a prefix that ends in a high surrogate: alone it escapes to
 * `%uXXXX`, but a key that goes on with a low surrogate holds the raw pair.
 * `entryPrefix` therefore leaves such a last code unit out of the range, and
 * the caller keeps only the keys that start with the prefix (`startsWith`,
 * as the built-in backend matches). Namespaces cannot hold `/` or `%`
 * (coord's grammar), so their escape is the identity, but they go through
 * the same function.
 */
import { DecodeError } from '@parley/interface';

/** The key prefix when none is given. */
export const DEFAULT_PREFIX = '/parley';

/** Escapes one namespace or key (see the file comment). */
export function escapeSegment(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25) out += '%25';
    else if (c === 0x2f) out += '%2F';
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += text.slice(i, i + 2);
        i++;
      } else out += `%u${c.toString(16).toUpperCase()}`;
    } else if (c >= 0xdc00 && c <= 0xdfff) out += `%u${c.toString(16).toUpperCase()}`;
    else out += text[i];
  }
  return out;
}

/** Inverse of escapeSegment; throws DecodeError on anything escapeSegment cannot produce. */
export function unescapeSegment(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === '/') throw new DecodeError('unescaped / in a key segment', i);
    if (ch !== '%') {
      out += ch;
      continue;
    }
    if (text.startsWith('%25', i)) {
      out += '%';
      i += 2;
    } else if (text.startsWith('%2F', i)) {
      out += '/';
      i += 2;
    } else if (text[i + 1] === 'u' && /^[0-9A-F]{4}$/.test(text.slice(i + 2, i + 6))) {
      const c = Number.parseInt(text.slice(i + 2, i + 6), 16);
      if (c < 0xd800 || c > 0xdfff) throw new DecodeError('escaped code unit is not a surrogate', i);
      out += String.fromCharCode(c);
      i += 5;
    } else throw new DecodeError('bad escape in a key segment', i);
  }
  return out;
}

/** The first key after every key that starts with `prefix` (etcd's range_end for a prefix read). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // all 0xff: to the end of the key space
}

/** A namespace and key read back from an entry key. */
export interface EntryName {
  namespace: string;
  key: string;
}

/** The key layout under one prefix. */
export class KeyLayout {
  readonly prefix: string;

  constructor(prefix: string = DEFAULT_PREFIX) {
    if (typeof prefix !== 'string' || prefix.length === 0 || prefix.length > 256 || prefix.endsWith('/')) {
      throw new RangeError('the etcd prefix must be 1..256 characters, not ending with /');
    }
    this.prefix = prefix;
  }

  private key(text: string): Buffer {
    return Buffer.from(text, 'utf8');
  }

  /** `<prefix>/e/`: every entry of every namespace. */
  entriesRoot(): Buffer {
    return this.key(`${this.prefix}/e/`);
  }

  /** `<prefix>/e/<ns>/`: every entry of one namespace. */
  namespaceEntries(namespace: string): Buffer {
    return this.key(`${this.prefix}/e/${escapeSegment(namespace)}/`);
  }

  /**
   * `<prefix>/e/<ns>/<key prefix>`: a byte prefix of every entry of a namespace whose key starts
   * with `keyPrefix`. It may hold more (a `keyPrefix` ending in a high surrogate is shortened by
   * that code unit, see the file comment): filter the keys read with `startsWith(keyPrefix)`.
   */
  entryPrefix(namespace: string, keyPrefix: string): Buffer {
    const last = keyPrefix.charCodeAt(keyPrefix.length - 1);
    const covered = last >= 0xd800 && last <= 0xdbff ? keyPrefix.slice(0, -1) : keyPrefix;
    return this.key(`${this.prefix}/e/${escapeSegment(namespace)}/${escapeSegment(covered)}`);
  }

  entry(namespace: string, key: string): Buffer {
    return this.key(`${this.prefix}/e/${escapeSegment(namespace)}/${escapeSegment(key)}`);
  }

  /** Reads namespace and key back from an entry key; undefined when the key is not one. */
  parseEntry(raw: Buffer): EntryName | undefined {
    const text = raw.toString('utf8');
    const root = `${this.prefix}/e/`;
    if (!text.startsWith(root)) return undefined;
    const rest = text.slice(root.length);
    const slash = rest.indexOf('/');
    if (slash <= 0) return undefined;
    try {
      return { namespace: unescapeSegment(rest.slice(0, slash)), key: unescapeSegment(rest.slice(slash + 1)) };
    } catch {
      return undefined;
    }
  }

  /** `<prefix>/l/<ns>/`: every lock slot of one namespace. */
  namespaceLocks(namespace: string): Buffer {
    return this.key(`${this.prefix}/l/${escapeSegment(namespace)}/`);
  }

  lock(namespace: string, key: string): Buffer {
    return this.key(`${this.prefix}/l/${escapeSegment(namespace)}/${escapeSegment(key)}`);
  }

  /** `<prefix>/w/<ns>/<key>/`: the queued waiters of one lock (their own suffixes follow). */
  lockWaiters(namespace: string, key: string): Buffer {
    return this.key(`${this.prefix}/w/${escapeSegment(namespace)}/${escapeSegment(key)}/`);
  }

  /** `<prefix>/x/`: every request record (each Parley write transaction creates one). */
  requestsRoot(): Buffer {
    return this.key(`${this.prefix}/x/`);
  }

  /** `<prefix>/x/<id>`: a request id's record. `id` is [0-9a-z-] only (txn.ts makes it). */
  request(id: string): Buffer {
    if (!/^[0-9a-z-]{1,80}$/.test(id)) throw new RangeError('a request id is 1..80 of [0-9a-z-]');
    return this.key(`${this.prefix}/x/${id}`);
  }
}
