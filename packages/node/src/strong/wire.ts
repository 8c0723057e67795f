/**
 * The node's strong-call protocol: a member that does not lead (or a node
 * outside the group) sends the call to the leader on a direct
 * request/response stream, and the leader answers with the coord result.
 *
 * Request (ByteWriter varints and length-prefixed fields):
 *
 * | field        | type   | meaning                                                    |
 * | ------------ | ------ | ---------------------------------------------------------- |
 * | version      | u8     | 1                                                          |
 * | kind         | u8     | 1 write, 2 read, 3 register session, 4 admin, 5 changes, 6 local read |
 * | timeoutMs    | uint   | how long the leader may wait for the answer                |
 * | body         | bytes  | write/read: coord `encodeCommand` (nowMs 0: the leader stamps it), then for a write u8 1 when it is a retried attempt; admin: action string + peer string; changes: fromRevision uint, namespace string, prefix string, hasPrefix bool, limit uint, then skip uint when > 0; local read: the command, level u8 (1 serializable, 2 bounded), then for bounded maxStalenessMs uint, maxLagEntries uint, then minIndex uint when > 0 |
 *
 * A local read (serializable or bounded, ./local-reads.ts) is what a node
 * outside the group sends to a member: any member answers it, not only the
 * leader. Its `minIndex` is the caller's session token: the member answers
 * only from a state applied through it.
 *
 * Answer, for write, read, register and local read: u8 1 (answer format), the
 * index uint (the log index the answering member had applied through when it
 * answered: what a session observes), then coord `encodeResult` to the end.
 * Empty for admin; for changes, a JSON page `{changes, revision}`.
 * Failures travel as the transport's typed errors: `not_leader` carries the
 * hint in `details.leaderHint`.
 */
import {
  type Command,
  type CommandResult,
  decodeCommand,
  decodeResult,
  encodeCommand,
  encodeResult,
  MAX_JSON_DEPTH,
  MAX_LAG_ENTRIES,
  MAX_STALENESS_MS,
  type ReadConsistency,
} from '@parley/coord';
import { ByteReader, ByteWriter, DecodeError, jsonDepthExceeds, type PeerId } from '@parley/interface';
import type { StrongChange } from '../api.js';

export const STRONG_PROTOCOL = '/parley/strong/1';
const WIRE_VERSION = 1;
/** Longest any leader may be asked to wait (a blocking lock wait of an hour plus margin). */
export const MAX_WAIT_MS = 3_700_000;
/** Changes per page. */
export const MAX_CHANGES_PER_PAGE = 1000;

export type AdminAction = 'addVoter' | 'addLearner' | 'removeNode' | 'transferLeadership';
const ADMIN_ACTIONS: readonly AdminAction[] = ['addVoter', 'addLearner', 'removeNode', 'transferLeadership'];

export type StrongRequest =
  | {
      kind: 'write';
      timeoutMs: number;
      command: Omit<Command, 'nowMs'>;
      /** Not the call's first attempt: the leader sends it through the log (absent on the wire when false). */
      retry?: boolean;
    }
  | { kind: 'read'; timeoutMs: number; command: Omit<Command, 'nowMs'> }
  | { kind: 'register'; timeoutMs: number }
  | {
      kind: 'local-read';
      timeoutMs: number;
      command: Omit<Command, 'nowMs'>;
      consistency: Exclude<ReadConsistency, { level: 'linearizable' }>;
      /** Answer only from a state applied through this index (a session's token; absent on the wire when 0). */
      minIndex?: number;
    }
  | { kind: 'admin'; timeoutMs: number; action: AdminAction; peer: PeerId }
  | {
      kind: 'changes';
      timeoutMs: number;
      fromRevision: number;
      namespace: string;
      prefix: string | undefined;
      limit: number;
      /** Matching changes of revision `fromRevision + 1` the caller already has (absent on the wire when 0). */
      skip?: number;
    };

const KIND_CODES = { write: 1, read: 2, register: 3, admin: 4, changes: 5, 'local-read': 6 } as const;

export function encodeRequest(req: StrongRequest): Uint8Array {
  const w = new ByteWriter();
  w.u8(WIRE_VERSION);
  w.u8(KIND_CODES[req.kind]);
  w.uint(Math.min(MAX_WAIT_MS, Math.max(0, Math.floor(req.timeoutMs))));
  switch (req.kind) {
    case 'write':
    case 'read':
      w.bytes(encodeCommand({ ...req.command, nowMs: 0 }));
      if (req.kind === 'write' && req.retry === true) w.u8(1);
      break;
    case 'register':
      break;
    case 'local-read':
      w.bytes(encodeCommand({ ...req.command, nowMs: 0 }));
      w.u8(req.consistency.level === 'serializable' ? 1 : 2);
      if (req.consistency.level === 'bounded') {
        w.uint(req.consistency.maxStalenessMs);
        w.uint(req.consistency.maxLagEntries);
      }
      if ((req.minIndex ?? 0) > 0) w.uint(req.minIndex as number);
      break;
    case 'admin':
      w.string(req.action);
      w.string(req.peer);
      break;
    case 'changes':
      w.uint(req.fromRevision);
      w.string(req.namespace);
      w.string(req.prefix ?? '');
      w.bool(req.prefix !== undefined);
      w.uint(req.limit);
      if ((req.skip ?? 0) > 0) w.uint(req.skip as number);
      break;
  }
  return w.finish();
}

/** Decodes untrusted bytes; throws only DecodeError. */
export function decodeRequest(bytes: Uint8Array): StrongRequest {
  const r = new ByteReader(bytes);
  const version = r.u8();
  if (version !== WIRE_VERSION) throw new DecodeError(`unsupported strong wire version ${version}`, 0);
  const kind = r.u8();
  const timeoutMs = r.uint();
  if (timeoutMs > MAX_WAIT_MS) throw new DecodeError(`timeout ${timeoutMs} ms exceeds ${MAX_WAIT_MS}`, 2);
  let req: StrongRequest;
  switch (kind) {
    case 1:
    case 2: {
      const { nowMs: _ignored, ...command } = decodeCommand(r.bytes());
      // Optional last field of a write: 1 for a retried attempt (older callers leave it out).
      let retry = false;
      if (kind === 1 && r.remaining() > 0) {
        if (r.u8() !== 1) throw new DecodeError('a write carries a bad retry flag');
        retry = true;
      }
      req = { kind: kind === 1 ? 'write' : 'read', timeoutMs, command, ...(retry ? { retry } : {}) };
      break;
    }
    case 3:
      req = { kind: 'register', timeoutMs };
      break;
    case 6: {
      const { nowMs: _ignored, ...command } = decodeCommand(r.bytes());
      const level = r.u8();
      if (level === 1) {
        req = { kind: 'local-read', timeoutMs, command, consistency: { level: 'serializable' } };
      } else if (level === 2) {
        const maxStalenessMs = r.uint();
        const maxLagEntries = r.uint();
        if (maxStalenessMs > MAX_STALENESS_MS || maxLagEntries > MAX_LAG_ENTRIES) {
          throw new DecodeError('read bound out of range');
        }
        req = {
          kind: 'local-read',
          timeoutMs,
          command,
          consistency: { level: 'bounded', maxStalenessMs, maxLagEntries },
        };
      } else {
        throw new DecodeError(`unknown read level ${level}`);
      }
      // Optional last field, as `skip` below: a minIndex of 0 is always left out.
      if (r.remaining() > 0) {
        const minIndex = r.uint();
        if (minIndex === 0) throw new DecodeError('a local read carries minIndex 0');
        req.minIndex = minIndex;
      }
      break;
    }
    case 4: {
      const action = r.string() as AdminAction;
      if (!ADMIN_ACTIONS.includes(action)) throw new DecodeError(`unknown admin action '${action}'`);
      const peer = r.string();
      if (peer === '' || peer.length > 256) throw new DecodeError('bad peer id');
      req = { kind: 'admin', timeoutMs, action, peer };
      break;
    }
    case 5: {
      const fromRevision = r.uint();
      const namespace = r.string();
      const prefix = r.string();
      const hasPrefix = r.bool();
      const limit = Math.min(MAX_CHANGES_PER_PAGE, r.uint());
      // Optional last field: older callers leave it out, and a skip of 0 is always left out.
      let skip = 0;
      if (r.remaining() > 0) {
        skip = r.uint();
        if (skip === 0) throw new DecodeError('a changes request carries skip 0');
      }
      req = {
        kind: 'changes',
        timeoutMs,
        fromRevision,
        namespace,
        prefix: hasPrefix ? prefix : undefined,
        limit,
        ...(skip > 0 ? { skip } : {}),
      };
      break;
    }
    default:
      throw new DecodeError(`unknown strong request kind ${kind}`, 1);
  }
  r.end();
  return req;
}

const ANSWER_FORMAT = 1;

/** A coord result and the index its answering member had applied through. */
export interface IndexedResult {
  result: CommandResult;
  index: number;
}

export function encodeIndexedResult(a: IndexedResult): Uint8Array {
  const w = new ByteWriter();
  w.u8(ANSWER_FORMAT);
  w.uint(a.index);
  const head = w.finish();
  const body = encodeResult(a.result);
  const out = new Uint8Array(head.length + body.length);
  out.set(head, 0);
  out.set(body, head.length);
  return out;
}

/** Decodes an answer from a member (untrusted bytes; coord bounds the result's size); throws only DecodeError. */
export function decodeIndexedResult(bytes: Uint8Array): IndexedResult {
  const r = new ByteReader(bytes);
  const format = r.u8();
  if (format !== ANSWER_FORMAT) throw new DecodeError(`unsupported answer format ${format}`, 0);
  const index = r.uint();
  const result = decodeResult(bytes.subarray(bytes.length - r.remaining()));
  return { result, index };
}

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

/** A page of the change feed and the revision the answering member has applied through. */
export interface ChangesPage {
  changes: StrongChange[];
  revision: number;
}

export function encodeChanges(page: ChangesPage): Uint8Array {
  return enc.encode(JSON.stringify(page));
}

/** A page nests an entry's value (at most MAX_JSON_DEPTH deep) four levels down; the rest is slack. */
const MAX_PAGE_DEPTH = MAX_JSON_DEPTH + 16;
/** JSON.parse yields ±Infinity only for a literal with an exponent or 309+ digits: walk the page only then. */
const MAYBE_OVERFLOW = /[eE]|\d{309}/;

function hasNonFinite(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return true;
    } else if (v !== null && typeof v === 'object') {
      for (const c of Array.isArray(v) ? v : Object.values(v)) stack.push(c);
    }
  }
  return false;
}

/**
 * Decodes a changes page (from a member answering our request; the transport bounds its size). A page
 * nested past MAX_PAGE_DEPTH or holding a number past float64 (it would parse to ±Infinity and re-encode
 * as null) is malformed: what decodes re-encodes to the same page.
 */
export function decodeChanges(bytes: Uint8Array): ChangesPage {
  let page: { changes?: unknown; revision?: unknown };
  let text: string;
  try {
    text = dec.decode(bytes);
    page = JSON.parse(text);
  } catch {
    throw new DecodeError('malformed changes page');
  }
  if (jsonDepthExceeds(page, MAX_PAGE_DEPTH) || (MAYBE_OVERFLOW.test(text) && hasNonFinite(page))) {
    throw new DecodeError('malformed changes page');
  }
  const parsed = page?.changes;
  if (!Array.isArray(parsed) || parsed.length > MAX_CHANGES_PER_PAGE || !Number.isSafeInteger(page.revision)) {
    throw new DecodeError('malformed changes page');
  }
  for (const c of parsed) {
    if (
      c === null ||
      typeof c !== 'object' ||
      typeof c.namespace !== 'string' ||
      typeof c.key !== 'string' ||
      !['set', 'delete', 'expire'].includes(c.type) ||
      !Number.isSafeInteger(c.revision)
    ) {
      throw new DecodeError('malformed change');
    }
  }
  return { changes: parsed as StrongChange[], revision: page.revision as number };
}
