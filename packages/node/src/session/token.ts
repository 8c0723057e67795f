/**
 * The session token: what a session has seen, as a caller carries it between
 * calls and between nodes (docs/guarantees.md, "Sessions"). It is a frontier,
 * never a list of operations, so its size is bounded by what it names:
 *
 * - `strong`: the highest log index (Raft index, or etcd revision) of a
 *   strong write the session made or a strong read it got. A member answers a
 *   serializable or bounded read for the session only from a state applied
 *   through it.
 * - `eventual`: per namespace, per origin replica, the highest write counter
 *   (the `seq` of a dot `(origin, seq)`) the session depends on. A replica
 *   covers the session when its dot context holds every dot `1..seq` of each
 *   origin named: it then holds each of those writes or something that wins
 *   over it. A per-origin prefix is stronger than the session strictly needs
 *   (it also waits for that origin's earlier writes to other keys), and it is
 *   what keeps the token at one number per origin.
 *
 * On the wire a token is base64url (no padding) of: version 1, the strong
 * index, then the namespaces in name order, each with its origins in id
 * order. The decoder bounds everything it allocates by the limits below and
 * throws `invalid_argument` (field `session`) for anything else.
 */
import { ByteReader, ByteWriter, InvalidArgumentError, isParleyError } from '@parley/interface';

export const SESSION_TOKEN_VERSION = 1;

/** Bounds of a token; a session that outgrows them fails its next call with `invalid_argument`. */
export const SESSION_LIMITS = {
  /** Encoded length, in characters (it travels in an HTTP header). */
  maxTokenChars: 8192,
  /** Eventual namespaces one token names. */
  maxNamespaces: 64,
  /** Origins per namespace. */
  maxOriginsPerNamespace: 256,
} as const;

/** What a session has seen: the decoded token. Maps are read-only to holders. */
export interface SessionFrontier {
  readonly strong: number;
  readonly eventual: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

export const EMPTY_FRONTIER: SessionFrontier = Object.freeze({ strong: 0, eventual: new Map() });

function invalid(message: string, details: Record<string, unknown> = {}): InvalidArgumentError {
  return new InvalidArgumentError(`session token: ${message}`, { field: 'session', ...details });
}

/** Throws `invalid_argument` when `frontier` is beyond the limits (checked before a call starts). */
export function checkFrontierLimits(frontier: SessionFrontier): void {
  if (frontier.eventual.size > SESSION_LIMITS.maxNamespaces)
    throw invalid(
      `names ${frontier.eventual.size} namespaces, more than ${SESSION_LIMITS.maxNamespaces}: start a new session`,
    );
  for (const [ns, origins] of frontier.eventual) {
    if (origins.size > SESSION_LIMITS.maxOriginsPerNamespace)
      throw invalid(
        `names ${origins.size} origins of namespace ${ns}, more than ${SESSION_LIMITS.maxOriginsPerNamespace}: start a new session`,
        { namespace: ns },
      );
  }
}

function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Encodes a frontier (throws `invalid_argument` beyond the limits). The empty frontier is the empty string. */
export function encodeSessionToken(frontier: SessionFrontier): string {
  checkFrontierLimits(frontier);
  if (frontier.strong === 0 && frontier.eventual.size === 0) return '';
  const w = new ByteWriter(64);
  w.uint(SESSION_TOKEN_VERSION);
  w.uint(frontier.strong);
  const names = [...frontier.eventual.keys()].sort();
  w.uint(names.length);
  for (const ns of names) {
    const origins = frontier.eventual.get(ns) as ReadonlyMap<string, number>;
    w.string(ns);
    const ids = [...origins.keys()].sort();
    w.uint(ids.length);
    for (const id of ids) {
      w.string(id);
      w.uint(origins.get(id) as number);
    }
  }
  const token = toBase64Url(w.finish());
  if (token.length > SESSION_LIMITS.maxTokenChars)
    throw invalid(`${token.length} characters, more than ${SESSION_LIMITS.maxTokenChars}: start a new session`);
  return token;
}

/** Decodes a token (the empty string, null or undefined is the empty frontier); throws `invalid_argument`. */
export function decodeSessionToken(token: string | null | undefined): SessionFrontier {
  if (token === undefined || token === null || token === '') return EMPTY_FRONTIER;
  if (typeof token !== 'string') throw invalid('must be a string');
  if (token.length > SESSION_LIMITS.maxTokenChars)
    throw invalid(`${token.length} characters, more than ${SESSION_LIMITS.maxTokenChars}`);
  if (!BASE64URL.test(token)) throw invalid('is not base64url');
  const r = new ByteReader(new Uint8Array(Buffer.from(token, 'base64url')));
  try {
    const version = r.uint();
    if (version !== SESSION_TOKEN_VERSION) throw invalid(`version ${version} is not ${SESSION_TOKEN_VERSION}`);
    const strong = r.uint();
    const nsCount = r.count(2);
    if (nsCount > SESSION_LIMITS.maxNamespaces)
      throw invalid(`names more than ${SESSION_LIMITS.maxNamespaces} namespaces`);
    const eventual = new Map<string, Map<string, number>>();
    let lastNs: string | undefined;
    for (let i = 0; i < nsCount; i++) {
      const ns = r.string();
      if (lastNs !== undefined && ns <= lastNs) throw invalid('namespaces out of order or repeated');
      lastNs = ns;
      const originCount = r.count(2);
      if (originCount === 0) throw invalid(`namespace ${ns} names no origin`);
      if (originCount > SESSION_LIMITS.maxOriginsPerNamespace)
        throw invalid(`names more than ${SESSION_LIMITS.maxOriginsPerNamespace} origins of one namespace`);
      const origins = new Map<string, number>();
      let lastId: string | undefined;
      for (let j = 0; j < originCount; j++) {
        const id = r.string();
        if (lastId !== undefined && id <= lastId) throw invalid('origins out of order or repeated');
        lastId = id;
        const seq = r.uint();
        if (seq === 0) throw invalid(`origin ${id} with counter 0`);
        origins.set(id, seq);
      }
      eventual.set(ns, origins);
    }
    r.end();
    return { strong, eventual };
  } catch (err) {
    if (isParleyError(err, 'invalid_argument')) throw err;
    throw invalid(err instanceof Error ? err.message : String(err));
  }
}
