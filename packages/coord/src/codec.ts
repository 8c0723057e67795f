/**
 * The coord wire and snapshot codec: canonical JSON inside a versioned binary
 * envelope.
 *
 * | offset | size | field                                                  |
 * | ------ | ---- | ------------------------------------------------------ |
 * | 0      | 2    | magic `0x50 0x43` ("PC": Parley coord)                 |
 * | 2      | 1    | format version, currently 1                            |
 * | 3      | 1    | kind tag: 1 command, 2 result, 3 snapshot              |
 * | 4      | n    | UTF-8 canonical JSON body (sorted keys, no whitespace) |
 *
 * Canonical JSON makes the bytes a pure function of the value, so snapshots
 * and encoded results are byte-identical on every replica. Decoding is strict:
 * wrong magic, version, kind, malformed UTF-8, malformed JSON, unknown
 * operation types, unknown or mistyped fields all raise DecodeError, and
 * nothing else is ever thrown. Allocation is bounded by the input length
 * (one string and one parsed tree); commands are also capped at
 * MAX_COMMAND_BYTES before any parsing.
 */
import { DecodeError, ERROR_STATUS, InvalidArgumentError, jsonDepthExceeds } from '@parley/interface';
import { canonicalJson, type JsonValue, MAX_JSON_DEPTH, utf8Decode, utf8Encode } from './json.js';
import type { Command, CommandResult, Operation, OperationType } from './types.js';

export const CODEC_VERSION = 1;
export const TAG_COMMAND = 1;
export const TAG_RESULT = 2;
export const TAG_SNAPSHOT = 3;
/** Largest encoded command: a 1 MiB value plus its envelope, with room to spare. */
export const MAX_COMMAND_BYTES = 4 * 1_048_576;
/** Largest encoded result (a list page can carry many values). */
export const MAX_RESULT_BYTES = 64 * 1_048_576;

/**
 * Deepest nesting of a whole command, result or snapshot body. A value may be MAX_JSON_DEPTH deep, and the
 * envelope around it adds up to 9 levels (a cached list result in a snapshot's session table), so the
 * encoder and the decoder share this one bound: whatever decodes re-encodes, and every state a value may
 * reach can be snapshotted.
 */
export const MAX_ENVELOPE_DEPTH = MAX_JSON_DEPTH + 16;

const MAGIC0 = 0x50;
const MAGIC1 = 0x43;

function frame(tag: number, body: string): Uint8Array {
  const text = utf8Encode(body);
  const out = new Uint8Array(4 + text.length);
  out[0] = MAGIC0;
  out[1] = MAGIC1;
  out[2] = CODEC_VERSION;
  out[3] = tag;
  out.set(text, 4);
  return out;
}

function unframe(bytes: Uint8Array, tag: number, maxBytes: number): unknown {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('input is not bytes');
  if (bytes.length > maxBytes) throw new DecodeError(`input of ${bytes.length} bytes exceeds ${maxBytes}`);
  if (bytes.length < 4) throw new DecodeError('truncated header', bytes.length);
  if (bytes[0] !== MAGIC0 || bytes[1] !== MAGIC1) throw new DecodeError('bad magic', 0);
  if (bytes[2] !== CODEC_VERSION) throw new DecodeError(`unsupported format version ${bytes[2]}`, 2);
  if (bytes[3] !== tag) throw new DecodeError(`expected kind ${tag}, found ${bytes[3]}`, 3);
  let text: string;
  try {
    text = utf8Decode(bytes.subarray(4));
  } catch {
    throw new DecodeError('malformed UTF-8', 4);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DecodeError('malformed JSON body', 4);
  }
  if (jsonDepthExceeds(value, MAX_ENVELOPE_DEPTH)) throw new DecodeError('JSON nesting too deep', 4);
  if (MAYBE_OVERFLOW.test(text) && hasNonFinite(value)) throw new DecodeError('JSON number out of range', 4);
  return value;
}

/** JSON.parse yields ±Infinity only for a literal with an exponent or 309+ digits: walk the tree only then. */
const MAYBE_OVERFLOW = /[eE]|\d{309}/;

/** Iterative, like the depth check: a non-finite number would not re-encode (canonicalJson refuses it). */
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

// ------------------------------------------------------------------ commands

type FieldKind = 'str' | 'int' | 'bool' | 'json' | 'fence' | 'sortBy' | 'sortOrder';
type Schema = Record<string, [FieldKind, boolean]>;

const NS: Schema = { namespace: ['str', true] };
const NSK: Schema = { ...NS, key: ['str', true] };

const OPS: Record<OperationType, Schema> = {
  register_session: {},
  noop: {},
  expire: {},
  set: {
    ...NSK,
    value: ['json', true],
    ttlSeconds: ['int', false],
    ifNotExists: ['bool', false],
    ifVersion: ['str', false],
    fence: ['fence', false],
  },
  get: NSK,
  delete: { ...NSK, ifVersion: ['str', false], fence: ['fence', false] },
  list: {
    ...NS,
    q: ['str', false],
    prefix: ['str', false],
    filter: ['str', false],
    sortBy: ['sortBy', false],
    sortOrder: ['sortOrder', false],
    limit: ['int', false],
    cursor: ['str', false],
  },
  delete_namespace: {
    ...NS,
    pattern: ['str', false],
    confirm: ['bool', true],
    after: ['str', false],
    maxKeys: ['int', false],
  },
  claim: { ...NSK, value: ['json', true], ttlSeconds: ['int', false] },
  lease_acquire: {
    ...NSK,
    holder: ['str', true],
    ttlSeconds: ['int', true],
    stealIfExpired: ['bool', false],
    state: ['json', false],
    ifVersion: ['str', false],
    ifNotExists: ['bool', false],
  },
  lease_renew: { ...NSK, holder: ['str', true], epoch: ['int', true], ttlSeconds: ['int', true] },
  lease_write: {
    ...NSK,
    holder: ['str', true],
    epoch: ['int', true],
    state: ['json', true],
    ifVersion: ['str', false],
  },
  lease_release: { ...NSK, holder: ['str', true], epoch: ['int', true], state: ['json', false] },
  lease_cooperative_write: { ...NSK, state: ['json', true], ifVersion: ['str', false], ifNotExists: ['bool', false] },
  lease_attach: { ...NSK, holder: ['str', true] },
  lock_acquire: {
    ...NSK,
    owner: ['str', true],
    ttlSeconds: ['int', false],
    metadata: ['json', false],
    waitSeconds: ['int', false],
  },
  lock_renew: { ...NSK, owner: ['str', true], fence: ['int', true], ttlSeconds: ['int', false] },
  lock_release: { ...NSK, owner: ['str', true], fence: ['int', true] },
  lock_inspect: NSK,
  lock_list: NS,
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v);
}

function checkField(kind: FieldKind, v: unknown): boolean {
  switch (kind) {
    case 'str':
      return typeof v === 'string';
    case 'int':
      return isInt(v);
    case 'bool':
      return typeof v === 'boolean';
    case 'json':
      return v !== undefined;
    case 'sortBy':
      return v === 'key' || v === 'created_at' || v === 'updated_at';
    case 'sortOrder':
      return v === 'asc' || v === 'desc';
    case 'fence':
      return (
        isPlainObject(v) &&
        Object.keys(v).length === 3 &&
        typeof v.namespace === 'string' &&
        typeof v.key === 'string' &&
        isInt(v.token)
      );
  }
}

/**
 * A caller's operation checked before it is sent: validateOperation's
 * structural check, a mistyped operation (a TTL of 1.5 s, say) failing with
 * `invalid_argument` (a log's decoder would drop it unanswered, and the call
 * would hang until its timeout). Every backend runs it first.
 */
export function checkOperationShape(op: Operation): void {
  try {
    validateOperation(op);
  } catch (err) {
    if (err instanceof DecodeError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}

/** Structural check of an operation; DecodeError names the first problem. */
export function validateOperation(op: unknown): Operation {
  if (!isPlainObject(op) || typeof op.type !== 'string' || !Object.hasOwn(OPS, op.type)) {
    throw new DecodeError('unknown operation');
  }
  const schema = OPS[op.type as OperationType];
  for (const name of Object.keys(op)) {
    if (name === 'type') continue;
    const spec = schema[name];
    if (!spec) throw new DecodeError(`operation '${op.type}' has unknown field '${name}'`);
    if (!checkField(spec[0], op[name])) throw new DecodeError(`operation '${op.type}' field '${name}' is mistyped`);
  }
  for (const [name, [, required]] of Object.entries(schema)) {
    if (required && !Object.hasOwn(op, name)) throw new DecodeError(`operation '${op.type}' lacks '${name}'`);
  }
  return op as unknown as Operation;
}

function validateCommand(v: unknown): Command {
  if (!isPlainObject(v)) throw new DecodeError('command is not an object');
  for (const name of Object.keys(v)) {
    if (!['nowMs', 'clientId', 'seq', 'ackSeq', 'op'].includes(name)) {
      throw new DecodeError(`command has unknown field '${name}'`);
    }
  }
  if (typeof v.nowMs !== 'number' || !Number.isFinite(v.nowMs)) throw new DecodeError('command nowMs is mistyped');
  if (v.clientId !== undefined && typeof v.clientId !== 'string') throw new DecodeError('command clientId is mistyped');
  if (v.seq !== undefined && !(isInt(v.seq) && v.seq >= 0)) throw new DecodeError('command seq is mistyped');
  if (v.ackSeq !== undefined && !(isInt(v.ackSeq) && v.ackSeq >= 0))
    throw new DecodeError('command ackSeq is mistyped');
  validateOperation(v.op);
  return v as unknown as Command;
}

/** Encodes a command for the Raft log. Throws InvalidArgumentError if it holds non-JSON data. */
export function encodeCommand(command: Command): Uint8Array {
  return frame(TAG_COMMAND, canonicalJson(command, MAX_ENVELOPE_DEPTH));
}

/** Decodes untrusted command bytes; throws only DecodeError. */
export function decodeCommand(bytes: Uint8Array): Command {
  return validateCommand(unframe(bytes, TAG_COMMAND, MAX_COMMAND_BYTES));
}

// ------------------------------------------------------------------ results

const RESULT_TYPES = new Set([
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
]);

export function encodeResult(result: CommandResult): Uint8Array {
  return frame(TAG_RESULT, canonicalJson(result, MAX_ENVELOPE_DEPTH));
}

/** Decodes untrusted result bytes (checks the envelope, result type and error code); throws only DecodeError. */
export function decodeResult(bytes: Uint8Array): CommandResult {
  const v = unframe(bytes, TAG_RESULT, MAX_RESULT_BYTES);
  if (!isPlainObject(v)) throw new DecodeError('result is not an object');
  if (v.ok === true) {
    if (!isPlainObject(v.value) || typeof v.value.type !== 'string' || !RESULT_TYPES.has(v.value.type)) {
      throw new DecodeError('result has an unknown type');
    }
  } else if (v.ok === false) {
    const e = v.error;
    if (
      !isPlainObject(e) ||
      typeof e.code !== 'string' ||
      !Object.hasOwn(ERROR_STATUS, e.code) ||
      typeof e.message !== 'string' ||
      !isPlainObject(e.details)
    ) {
      throw new DecodeError('result error is malformed');
    }
  } else throw new DecodeError('result lacks ok');
  return v as unknown as CommandResult;
}

// ------------------------------------------------------------------ snapshots

export function encodeSnapshotBody(body: JsonValue): Uint8Array {
  return frame(TAG_SNAPSHOT, canonicalJson(body, MAX_ENVELOPE_DEPTH));
}

/** The parsed (not yet validated) snapshot body; the state machine validates its shape. */
export function decodeSnapshotBody(bytes: Uint8Array): unknown {
  return unframe(bytes, TAG_SNAPSHOT, Number.MAX_SAFE_INTEGER);
}
