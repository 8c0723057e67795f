/**
 * The value Parley stores under an entry key (`<prefix>/e/<ns>/<key>`), and
 * under a request id (`<prefix>/x/<id>`): canonical JSON (sorted keys, no
 * whitespace), so the bytes are a pure function of the record.
 *
 * An entry record:
 *
 * | field        | type                          | meaning                                                     |
 * | ------------ | ----------------------------- | ----------------------------------------------------------- |
 * | `format`     | 1                             | record format version                                       |
 * | `kind`       | 'value' \| 'claim' \| 'lease' | coord's EntryKind (a lease entry's value is its document)   |
 * | `value`      | JSON                          | the value (canonical), or the LeaseDocument of a lease      |
 * | `valueBytes` | int ≥ 0                       | canonical UTF-8 size of `value` (list page bounds, usage)   |
 * | `ttlSeconds` | int ≥ 0                       | the TTL it was written with                                 |
 * | `createdAt`  | int ms                        | first write of this incarnation (writer's clock)            |
 * | `updatedAt`  | int ms                        | this write (writer's clock)                                 |
 * | `expiresAt`  | int ms                        | the deadline: past it the entry is absent on every read and |
 * |              |                               | conditional write, whatever etcd's cleanup lease says       |
 *
 * The entry's version is not stored: it is the key's etcd `mod_revision`
 * (version.ts). Decoding is strict and bounded: more than `maxBytes`,
 * malformed UTF-8 or JSON, nesting deeper than coord's bound, a number out of
 * range, a missing, unknown or mistyped field all raise DecodeError, and
 * nothing else is ever thrown. The backend reports a record that does not
 * decode as `storage_corrupt` (someone else wrote under Parley's prefix).
 */

import type { EntryKind } from '@parley/coord';
import { canonicalJson, deepFreeze, type JsonValue, MAX_JSON_DEPTH } from '@parley/coord/shared';
import { DecodeError, jsonDepthExceeds } from '@parley/interface';

export const RECORD_FORMAT = 1;
/** Room for a record's fields and escaping around its value, beyond the value limit. */
export const RECORD_OVERHEAD_BYTES = 64 * 1024;

/** A strong entry as stored in etcd (see the table above); its version is the key's mod_revision. */
export interface EntryRecord {
  kind: EntryKind;
  value: JsonValue;
  valueBytes: number;
  ttlSeconds: number;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

const FIELDS = ['createdAt', 'expiresAt', 'format', 'kind', 'ttlSeconds', 'updatedAt', 'value', 'valueBytes'];
const KINDS: ReadonlySet<string> = new Set(['value', 'claim', 'lease']);

/** Canonical JSON bytes of an entry record. */
export function encodeEntryRecord(r: EntryRecord): Buffer {
  return Buffer.from(
    canonicalJson({
      format: RECORD_FORMAT,
      kind: r.kind,
      value: r.value,
      valueBytes: r.valueBytes,
      ttlSeconds: r.ttlSeconds,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
      expiresAt: r.expiresAt,
    }),
    'utf8',
  );
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Bounded, strict JSON parse of untrusted bytes (DecodeError only). */
export function parseJsonBytes(bytes: Uint8Array, maxBytes: number, extraDepth: number): unknown {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('record is not bytes');
  if (bytes.length > maxBytes) throw new DecodeError(`record of ${bytes.length} bytes exceeds ${maxBytes}`);
  let text: string;
  try {
    text = fatalUtf8.decode(bytes);
  } catch {
    throw new DecodeError('record is not UTF-8', 0);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new DecodeError('record is not JSON', 0);
  }
  if (jsonDepthExceeds(parsed, MAX_JSON_DEPTH + extraDepth)) throw new DecodeError('record nesting too deep', 0);
  if (/[eE]|\d{309}/.test(text) && hasNonFinite(parsed)) throw new DecodeError('record number out of range', 0);
  return parsed;
}

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

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function nonNegativeInt(o: Record<string, unknown>, name: string): number {
  const v = o[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new DecodeError(`record ${name} is mistyped`);
  return v;
}

/**
 * Decodes an entry record from untrusted bytes (at most `maxBytes`; the
 * backend passes its value limit plus RECORD_OVERHEAD_BYTES). The value is
 * deeply frozen, as coord's state machine keeps its own.
 */
export function decodeEntryRecord(bytes: Uint8Array, maxBytes: number): EntryRecord {
  const o = parseJsonBytes(bytes, maxBytes, 1);
  if (!isObject(o)) throw new DecodeError('record is not an object');
  for (const name of Object.keys(o)) if (!FIELDS.includes(name)) throw new DecodeError(`record has field '${name}'`);
  for (const name of FIELDS) if (!Object.hasOwn(o, name)) throw new DecodeError(`record lacks '${name}'`);
  if (o.format !== RECORD_FORMAT) throw new DecodeError(`record format ${String(o.format)} is not ${RECORD_FORMAT}`);
  if (typeof o.kind !== 'string' || !KINDS.has(o.kind)) throw new DecodeError('record kind is mistyped');
  const record: EntryRecord = {
    kind: o.kind as EntryKind,
    value: deepFreeze(o.value as JsonValue),
    valueBytes: nonNegativeInt(o, 'valueBytes'),
    ttlSeconds: nonNegativeInt(o, 'ttlSeconds'),
    createdAt: nonNegativeInt(o, 'createdAt'),
    updatedAt: nonNegativeInt(o, 'updatedAt'),
    expiresAt: nonNegativeInt(o, 'expiresAt'),
  };
  return record;
}

/**
 * A request id's record: the first result of the write that carried it,
 * without the parts the retrying caller already holds (the written value:
 * the retry carries the same operation) or that etcd keeps (the revision:
 * the record is written in the same transaction, so its own mod_revision is
 * the write's).
 */
export function encodeRequestRecord(result: JsonValue): Buffer {
  return Buffer.from(canonicalJson({ format: RECORD_FORMAT, result }), 'utf8');
}

/** Largest request record: results are small summaries (no values). */
export const MAX_REQUEST_RECORD_BYTES = 64 * 1024;

export function decodeRequestRecord(bytes: Uint8Array): JsonValue {
  const o = parseJsonBytes(bytes, MAX_REQUEST_RECORD_BYTES, 1);
  if (!isObject(o) || Object.keys(o).length !== 2 || o.format !== RECORD_FORMAT || !Object.hasOwn(o, 'result')) {
    throw new DecodeError('request record is malformed');
  }
  return o.result as JsonValue;
}
