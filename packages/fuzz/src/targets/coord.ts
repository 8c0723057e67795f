/**
 * @parley/coord: commands, results and snapshot bodies (codec.ts), and a
 * whole state machine's snapshot as `CoordStateMachine.restore` reads it.
 */
import {
  type Command,
  type CommandResult,
  CoordStateMachine,
  decodeCommand,
  decodeResult,
  encodeCommand,
  encodeResult,
  type Operation,
  type OperationType,
  type SortBy,
  type SortOrder,
} from '@parley/coord';
import { decodeSnapshotBody, encodeSnapshotBody } from '@parley/coord/codec';
import { decodeCursor, encodeCursor } from '@parley/coord/shared';
import { DecodeError, ERROR_STATUS, type ErrorCode } from '@parley/interface';
import type { Gen, Json } from '../gen.js';
import type { Target } from '../target.js';

/** The coord codec's JSON nesting limit (MAX_JSON_DEPTH); deeper values are refused by the encoder. */
const JSON_DEPTH = 64;

const OP_TYPES: readonly OperationType[] = [
  'register_session',
  'noop',
  'expire',
  'set',
  'get',
  'delete',
  'list',
  'delete_namespace',
  'claim',
  'lease_acquire',
  'lease_renew',
  'lease_write',
  'lease_release',
  'lease_cooperative_write',
  'lease_attach',
  'lock_acquire',
  'lock_renew',
  'lock_release',
  'lock_inspect',
  'lock_list',
];

function name(g: Gen): string {
  return g.bool(0.8) ? g.pick(['jobs', 'locks', 'cfg', 'a', 'b']) : g.string(64);
}

function value(g: Gen): Json {
  return g.json(JSON_DEPTH, 400);
}

/** Assigns the optional fields that `g` picks (never `undefined`: canonical JSON drops those). */
function opt(g: Gen, target: Record<string, unknown>, fields: Record<string, () => unknown>): void {
  for (const [k, make] of Object.entries(fields)) if (g.bool(0.4)) target[k] = make();
}

export function operation(g: Gen, type: OperationType = g.pick(OP_TYPES)): Operation {
  const ns = name(g);
  const key = name(g);
  const int = () => (g.bool(0.8) ? g.int(100_000) : g.uint());
  const o: Record<string, unknown> = { type };
  switch (type) {
    case 'register_session':
    case 'noop':
    case 'expire':
      break;
    case 'set':
      Object.assign(o, { namespace: ns, key, value: value(g) });
      opt(g, o, {
        ttlSeconds: int,
        ifNotExists: () => g.bool(),
        ifVersion: () => g.string(32),
        fence: () => ({ namespace: name(g), key: name(g), token: int() }),
      });
      break;
    case 'get':
    case 'lock_inspect':
      Object.assign(o, { namespace: ns, key });
      break;
    case 'delete':
      Object.assign(o, { namespace: ns, key });
      opt(g, o, { ifVersion: () => g.string(32), fence: () => ({ namespace: name(g), key: name(g), token: int() }) });
      break;
    case 'list':
      Object.assign(o, { namespace: ns });
      opt(g, o, {
        q: () => g.string(16),
        filter: () => g.string(64),
        sortBy: () => g.pick(['key', 'created_at', 'updated_at']),
        sortOrder: () => g.pick(['asc', 'desc']),
        limit: int,
        cursor: () => g.string(64),
      });
      break;
    case 'delete_namespace':
      Object.assign(o, { namespace: ns, confirm: g.bool() });
      opt(g, o, { pattern: () => g.string(16) });
      break;
    case 'claim':
      Object.assign(o, { namespace: ns, key, value: value(g) });
      opt(g, o, { ttlSeconds: int });
      break;
    case 'lease_acquire':
      Object.assign(o, { namespace: ns, key, holder: name(g), ttlSeconds: int() });
      opt(g, o, {
        stealIfExpired: () => g.bool(),
        state: () => value(g),
        ifVersion: () => g.string(32),
        ifNotExists: () => g.bool(),
      });
      break;
    case 'lease_renew':
      Object.assign(o, { namespace: ns, key, holder: name(g), epoch: int(), ttlSeconds: int() });
      break;
    case 'lease_write':
      Object.assign(o, { namespace: ns, key, holder: name(g), epoch: int(), state: value(g) });
      opt(g, o, { ifVersion: () => g.string(32) });
      break;
    case 'lease_release':
      Object.assign(o, { namespace: ns, key, holder: name(g), epoch: int() });
      opt(g, o, { state: () => value(g) });
      break;
    case 'lease_cooperative_write':
      Object.assign(o, { namespace: ns, key, state: value(g) });
      opt(g, o, { ifVersion: () => g.string(32), ifNotExists: () => g.bool() });
      break;
    case 'lease_attach':
      Object.assign(o, { namespace: ns, key, holder: name(g) });
      break;
    case 'lock_acquire':
      Object.assign(o, { namespace: ns, key, owner: name(g) });
      opt(g, o, { ttlSeconds: int, metadata: () => value(g), waitSeconds: int });
      break;
    case 'lock_renew':
      Object.assign(o, { namespace: ns, key, owner: name(g), fence: int() });
      opt(g, o, { ttlSeconds: int });
      break;
    case 'lock_release':
      Object.assign(o, { namespace: ns, key, owner: name(g), fence: int() });
      break;
    case 'lock_list':
      Object.assign(o, { namespace: ns });
      break;
  }
  return o as unknown as Operation;
}

export function command(g: Gen, op: Operation = operation(g)): Command {
  const c: Record<string, unknown> = { nowMs: g.bool(0.8) ? 1_700_000_000_000 + g.int(1e9) : g.uint(), op };
  opt(g, c, { clientId: () => g.string(40), seq: () => g.uint(), ackSeq: () => g.uint() });
  return c as unknown as Command;
}

const RESULT_TYPES = [
  'session',
  'noop',
  'expired',
  'entry',
  'got',
  'deleted',
  'list',
  'namespace_deleted',
  'claim',
  'lease',
  'lease_absent',
  'lock',
  'lock_waiting',
  'lock_released',
  'lock_info',
  'lock_list',
];

const CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

function result(g: Gen): CommandResult {
  if (g.bool(0.3)) {
    const details: Record<string, unknown> = {};
    opt(g, details, { namespace: () => name(g), key: () => name(g), leader: () => g.string(20), v: () => value(g) });
    return { ok: false, error: { code: g.pick(CODES), message: g.string(200), details } };
  }
  const v: Record<string, unknown> = { type: g.pick(RESULT_TYPES) };
  opt(g, v, {
    entry: () => ({ namespace: name(g), key: name(g), value: value(g), version: g.string(20), ttlSeconds: g.uint() }),
    items: () => Array.from({ length: g.size(100) }, () => ({ key: name(g), value: value(g) })),
    won: () => g.bool(),
    value: () => value(g),
    position: () => g.uint(),
    nextCursor: () => (g.bool() ? null : g.string(40)),
  });
  return { ok: true, value: v } as unknown as CommandResult;
}

/** A state machine after a random log of commands; its snapshot is the encoding. */
function stateMachine(g: Gen): CoordStateMachine {
  const sm = new CoordStateMachine();
  let nowMs = 1_700_000_000_000;
  const clients: string[] = [];
  const n = g.bool(0.01) ? g.int(2000) : g.size(64);
  for (let i = 1; i <= n; i++) {
    nowMs += g.int(5000);
    const op = operation(g, g.bool(0.1) ? 'register_session' : g.pick(OP_TYPES));
    const c: Command = { nowMs, op };
    if (clients.length > 0 && g.bool(0.7)) {
      c.clientId = g.pick(clients);
      c.seq = i;
    }
    const out = sm.apply(c, { index: i, term: 1 + (i >> 6) });
    if (out.result.ok && out.result.value.type === 'session') clients.push(out.result.value.clientId);
  }
  return sm;
}

function restored(bytes: Uint8Array): CoordStateMachine {
  const sm = new CoordStateMachine();
  sm.restore(bytes);
  return sm;
}

export const coordTargets: Target[] = [
  {
    name: 'coord.decodeCommand',
    codes: ['decode_error'],
    share: 0.15,
    jsonStart: 4,
    generate: (g: Gen) => command(g),
    encode: (c: Command) => encodeCommand(c),
    decode: decodeCommand,
  } satisfies Target<Command>,
  {
    name: 'coord.decodeResult',
    codes: ['decode_error'],
    share: 0.15,
    jsonStart: 4,
    generate: result,
    encode: (r: CommandResult) => encodeResult(r),
    decode: decodeResult,
  } satisfies Target<CommandResult>,
  {
    name: 'coord.decodeSnapshotBody',
    codes: ['decode_error'],
    share: 0.15,
    jsonStart: 4,
    generate: (g: Gen) => g.json(JSON_DEPTH, 2000),
    encode: (v: Json) => encodeSnapshotBody(v),
    decode: (b: Uint8Array) => decodeSnapshotBody(b) as Json,
  } satisfies Target<Json>,
  {
    name: 'coord.restoreSnapshot',
    codes: ['decode_error'],
    share: 0.15,
    jsonStart: 4,
    generate: stateMachine,
    encode: (sm: CoordStateMachine) => sm.snapshot(),
    decode: restored,
    // The log only holds commands a client may send: the state it leads to must snapshot and restore.
    strict: true,
    // Two state machines are equal when their snapshots are byte-identical.
    normalize: (sm: CoordStateMachine) => sm.snapshot(),
    bytesPerInputByte: 64,
  } satisfies Target<CoordStateMachine>,
];

// ------------------------------------------------------------------ list cursors

const SORTS: readonly [SortBy, SortOrder][] = [
  ['key', 'asc'],
  ['key', 'desc'],
  ['created_at', 'asc'],
  ['created_at', 'desc'],
  ['updated_at', 'asc'],
  ['updated_at', 'desc'],
];

/** A cursor with the sort it was issued for. */
export interface Cursor {
  sortBy: SortBy;
  sortOrder: SortOrder;
  sortValue: number | string;
  key: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `u8 sort index | cursor text (UTF-8)`: this target's framing of a cursor and the sort it is read with. */
export const cursorTarget: Target<Cursor> = {
  name: 'coord.decodeCursor',
  codes: ['invalid_argument', 'decode_error'],
  generate: (g: Gen): Cursor => {
    const [sortBy, sortOrder] = g.pick(SORTS);
    const sortValue = sortBy === 'key' ? name(g) : g.bool(0.8) ? 1_700_000_000_000 + g.int(1e9) : g.double();
    return { sortBy, sortOrder, sortValue, key: name(g) };
  },
  encode: (c: Cursor) => {
    const text = new TextEncoder().encode(encodeCursor(c.sortBy, c.sortOrder, c.sortValue, c.key));
    const i = SORTS.findIndex(([by, order]) => by === c.sortBy && order === c.sortOrder);
    return new Uint8Array([i, ...text]);
  },
  decode: (b: Uint8Array): Cursor => {
    const sort = SORTS[b[0] ?? 255];
    if (sort === undefined) throw new DecodeError('no such sort', 0);
    let text: string;
    try {
      text = utf8.decode(b.subarray(1));
    } catch {
      throw new DecodeError('cursor text is not UTF-8', 1);
    }
    return { sortBy: sort[0], sortOrder: sort[1], ...decodeCursor(text, sort[0], sort[1]) };
  },
};
