/**
 * The binary codec of @parley/crdt: deltas, full states and digests.
 * Deterministic (one abstract value, one byte string) and versioned.
 *
 * Tag table
 * ---------
 *   byte 0          format version: FORMAT_VERSION (1), or DEPS_VERSION (2) for a
 *                   DELTA that carries causal dependencies (a deps section follows
 *                   its context); a delta without deps is written as version 1
 *   byte 1          message tag:
 *                     0x01 DELTA    a local operation's delta or an anti-entropy reply
 *                     0x02 STATE    a replica's full state
 *                     0x03 DIGEST   a replica's seen-dot context
 *   state header    low two bits = key state type:
 *                     0b00 REGISTER   0b01 TOMBSTONE   0b10 COUNTER
 *                   flag bits (registers and tombstones):
 *                     0x04 SAME_NODE       node index equals the previous state's
 *                     0x08 NEXT_SEQ        seq = previous seq + 1 (implies SAME_NODE)
 *                     0x30 time mode:
 *                       0x00 TIME_FULL     wallDelta and logical (≥ 1) follow
 *                       0x10 TIME_WALL     wallDelta follows, logical is 0
 *                       0x20 TIME_NEXT     same wallMs as the previous state, logical = previous + 1
 *                       0x30               invalid
 *                     0x40 SAME_TTL        ttlSeconds equals the previous register's
 *                     0x80 CREATED_IS_WALL createdAt equals wallMs (else wallMs − createdAt follows)
 *
 * Layout (varint = unsigned LEB128, at most 8 bytes, canonical; zigzag for signed)
 * ------
 *   DELTA | STATE:  version tag ns:str nodes context [deps, version 2 only] states
 *   deps:           varint n (1..MAX_DEPS), per origin (ascending node index):
 *                     varint nodeIndex, varint seq (1..MAX_SEQ)
 *   DIGEST:         version tag ns:str nodes context
 *   str:            varint byteLength, UTF-8 bytes
 *   nodes:          varint n, n strings in strictly ascending code-unit order
 *   context:        varint origins, then per origin (ascending node index):
 *                     varint nodeIndex, varint rangeCount ≥ 1,
 *                     per range: varint (lo − previous hi − 1), varint (hi − lo)   [previous hi starts at 0]
 *   states:         varint nRegisterOrTombstone, those states in ascending (node, seq),
 *                   varint nCounter, counters in ascending key order; keys unique across both
 *   register:       header key:str [nodeIndex] [seq | seqDelta] [wallDelta:zigzag] [logical] [ttl]
 *                   [wall − createdAt] value:str (JSON text)
 *   tombstone:      the same without ttl, createdAt and value
 *   counter:        header(0b10) key:str wallDelta:zigzag logical baseNode (0 = zero stamp, else index+1)
 *                   createdAt:zigzag (relative to the base wallMs) varint nShares ≥ 1,
 *                   per share (ascending node index): nodeIndex inc dec wallDelta:zigzag logical seq ttl
 *   wallDelta is relative to the previous state's wallMs (0 at the start); a share's is
 *   relative to its counter's birth wallMs.
 *
 * Bounds (limits.ts): sequence numbers and context ranges 1..MAX_SEQ, wall times
 * 0..MAX_WALL_MS, logical counters 0..MAX_LOGICAL, TTLs 1..MAX_TTL_SECONDS, node ids
 * at most MAX_NODE_ID_BYTES, values nested at most MAX_VALUE_DEPTH deep.
 *
 * Decoders throw only DecodeError, allocate in proportion to the input, and
 * never loop longer than the input is long. Every encoding is canonical: the
 * decoders accept exactly the byte strings the encoders produce, so whatever
 * decodes re-encodes to the same bytes (value texts must be what JSON.stringify
 * prints, and every entry of the node table must be used).
 */
import { ByteReader, ByteWriter, DecodeError, jsonDepthExceeds } from '@parley/interface';
import { DotContext } from './context.js';
import { wellFormedUtf8Length } from './json.js';
import {
  MAX_DEPS,
  MAX_LOGICAL,
  MAX_NODE_ID_BYTES,
  MAX_SEQ,
  MAX_TTL_SECONDS,
  MAX_VALUE_DEPTH,
  MAX_WALL_MS,
} from './limits.js';
import { Register } from './register.js';
import type {
  CounterShare,
  CounterState,
  Delta,
  Deps,
  Digest,
  DotRanges,
  JsonValue,
  KeyState,
  RegisterState,
  TombstoneState,
} from './types.js';

export const FORMAT_VERSION = 1;
/** The version of a DELTA that carries causal dependencies. */
export const DEPS_VERSION = 2;
export const TAG_DELTA = 0x01;
export const TAG_STATE = 0x02;
export const TAG_DIGEST = 0x03;

const T_REGISTER = 0b00;
const T_TOMBSTONE = 0b01;
const T_COUNTER = 0b10;
const F_SAME_NODE = 0x04;
const F_NEXT_SEQ = 0x08;
const TIME_MASK = 0x30;
const TIME_FULL = 0x00;
const TIME_WALL = 0x10;
const TIME_NEXT = 0x20;
const F_SAME_TTL = 0x40;
const F_CREATED_IS_WALL = 0x80;

// ---------------------------------------------------------------- shared pieces

function compareStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function normalizeContext(ranges: DotRanges): Map<string, number[]> {
  const c = new DotContext();
  c.addAll(ranges);
  return c.snapshot();
}

/** Deps without counter-0 entries, origins ascending (empty: none). */
function normalizeDeps(deps: Deps | undefined): Array<[string, number]> {
  if (deps === undefined) return [];
  return [...deps].filter(([, seq]) => seq > 0).sort((a, b) => compareStr(a[0], b[0]));
}

function nodeTable(
  context: Map<string, number[]>,
  states: readonly KeyState[],
  deps: ReadonlyArray<[string, number]> = [],
): Map<string, number> {
  const names = new Set<string>(context.keys());
  for (const [n] of deps) names.add(n);
  for (const s of states) {
    if (s.node !== '') names.add(s.node);
    if (s.type === 'counter') for (const n of s.shares.keys()) names.add(n);
  }
  const sorted = [...names].sort(compareStr);
  return new Map(sorted.map((n, i) => [n, i]));
}

function writeHead(
  w: ByteWriter,
  tag: number,
  namespace: string,
  nodes: Map<string, number>,
  version = FORMAT_VERSION,
): void {
  w.u8(version);
  w.u8(tag);
  w.string(namespace);
  w.uint(nodes.size);
  for (const n of nodes.keys()) w.string(n);
}

function writeContext(w: ByteWriter, context: Map<string, number[]>, nodes: Map<string, number>): void {
  w.uint(context.size);
  for (const [node, r] of context) {
    w.uint(nodes.get(node) as number);
    w.uint(r.length / 2);
    let prevHi = 0;
    for (let i = 0; i < r.length; i += 2) {
      const lo = r[i] as number;
      const hi = r[i + 1] as number;
      w.uint(lo - prevHi - 1);
      w.uint(hi - lo);
      prevHi = hi;
    }
  }
}

interface Head {
  version: number;
  namespace: string;
  nodes: string[];
  /** used[i] = 1 once the body names nodes[i]. */
  used: Uint8Array;
}

function readHead(r: ByteReader, expectedTag: number): Head {
  const version = r.u8();
  if (version !== FORMAT_VERSION && version !== DEPS_VERSION)
    throw new DecodeError(`unsupported format version ${version}`, 0);
  const tag = r.u8();
  if (tag !== expectedTag) throw new DecodeError(`expected message tag ${expectedTag}, got ${tag}`, 1);
  if (version === DEPS_VERSION && tag !== TAG_DELTA) throw new DecodeError('only a delta carries deps', 0);
  const namespace = r.string();
  const n = r.count(1);
  const nodes: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = r.string();
    const prev = nodes[i - 1];
    if (prev !== undefined && !(prev < name)) throw new DecodeError('node table not strictly ascending', r.pos);
    if (name.length === 0) throw new DecodeError('empty node id', r.pos);
    if (wellFormedUtf8Length(name) > MAX_NODE_ID_BYTES) throw new DecodeError('node id too long', r.pos);
    nodes.push(name);
  }
  return { version, namespace, nodes, used: new Uint8Array(n) };
}

/** Every node in the table must be named by the body: the encoder writes no others. */
function checkAllUsed(r: ByteReader, head: Head): void {
  if (head.used.indexOf(0) >= 0) throw new DecodeError('node table names an unused node', r.pos);
}

function nodeAt(r: ByteReader, head: Head): string {
  const i = r.uint();
  const name = head.nodes[i];
  if (name === undefined) throw new DecodeError(`node index ${i} out of range`, r.pos);
  head.used[i] = 1;
  return name;
}

function logicalIn(r: ByteReader, logical: number): number {
  if (logical > MAX_LOGICAL) throw new DecodeError('logical counter out of range', r.pos);
  return logical;
}

function ttlIn(r: ByteReader, ttlSeconds: number): number {
  if (ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) throw new DecodeError('ttl out of range', r.pos);
  return ttlSeconds;
}

function seqIn(r: ByteReader, seq: number): number {
  if (seq < 1 || seq > MAX_SEQ) throw new DecodeError('sequence number out of range', r.pos);
  return seq;
}

function readContext(r: ByteReader, head: Head): Map<string, number[]> {
  const { nodes } = head;
  const origins = r.count(3);
  const out = new Map<string, number[]>();
  let prevIndex = -1;
  for (let o = 0; o < origins; o++) {
    const index = r.uint();
    if (index <= prevIndex || index >= nodes.length) throw new DecodeError('context origins not ascending', r.pos);
    prevIndex = index;
    head.used[index] = 1;
    const n = r.count(2);
    if (n === 0) throw new DecodeError('context origin without ranges', r.pos);
    const ranges: number[] = [];
    let prevHi = 0;
    for (let i = 0; i < n; i++) {
      const gap = r.uint();
      if (i > 0 && gap === 0) throw new DecodeError('adjacent context ranges', r.pos);
      const lo = prevHi + 1 + gap;
      const hi = lo + r.uint();
      if (hi > MAX_SEQ) throw new DecodeError('sequence number out of range', r.pos);
      ranges.push(lo, hi);
      prevHi = hi;
    }
    out.set(nodes[index] as string, ranges);
  }
  return out;
}

function readDeps(r: ByteReader, head: Head): Map<string, number> {
  const n = r.count(2);
  if (n === 0 || n > MAX_DEPS) throw new DecodeError(`deps must name 1..${MAX_DEPS} origins`, r.pos);
  const out = new Map<string, number>();
  let prevIndex = -1;
  for (let i = 0; i < n; i++) {
    const index = r.uint();
    if (index <= prevIndex || index >= head.nodes.length) throw new DecodeError('deps origins not ascending', r.pos);
    prevIndex = index;
    head.used[index] = 1;
    out.set(head.nodes[index] as string, seqIn(r, r.uint()));
  }
  return out;
}

function safeAdd(a: number, b: number, r: ByteReader): number {
  const x = a + b;
  if (x < 0 || x > MAX_WALL_MS) throw new DecodeError('time out of range', r.pos);
  return x;
}

// ---------------------------------------------------------------- JSON values

function jsonText(value: JsonValue): string {
  return JSON.stringify(value);
}

/**
 * A register's value: JSON text nested at most MAX_VALUE_DEPTH deep (checked
 * without recursion before anything recurses), and exactly the text
 * JSON.stringify prints for it. That one comparison rejects every other
 * spelling: whitespace, escapes, duplicate keys, -0, exponents, 1e400.
 */
function readValue(r: ByteReader): JsonValue {
  const at = r.pos;
  const int = readInteger(r);
  if (int !== undefined) return int;
  const text = r.string();
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    throw new DecodeError('value is not JSON', at);
  }
  if (jsonDepthExceeds(value, MAX_VALUE_DEPTH)) throw new DecodeError('value nested too deeply', at);
  if (JSON.stringify(value) !== text) throw new DecodeError('value is not in canonical JSON form', at);
  return value;
}

/**
 * A value whose text is an integer of at most 15 digits, exactly as
 * JSON.stringify prints it (no sign but a leading `-`, no leading zero, not
 * `-0`), read without making its text; else undefined with `r` where it was
 * (readValue then parses the text, and refuses what is not canonical).
 */
function readInteger(r: ByteReader): number | undefined {
  const at = r.pos;
  const len = r.uint();
  if (len === 0 || len > 16 || len > r.remaining()) {
    r.pos = at;
    return undefined;
  }
  let c = r.u8();
  const negative = c === 0x2d;
  const digits = negative ? len - 1 : len;
  if (negative && digits > 0) c = r.u8();
  let n = c - 0x30;
  if (digits < 1 || digits > 15 || n < 0 || n > 9 || (n === 0 && (digits > 1 || negative))) {
    r.pos = at;
    return undefined;
  }
  for (let i = 1; i < digits; i++) {
    const d = r.u8() - 0x30;
    if (d < 0 || d > 9) {
      r.pos = at;
      return undefined;
    }
    n = n * 10 + d;
  }
  return negative ? -n : n;
}

// ---------------------------------------------------------------- deltas and states

function compareDots(a: RegisterState | TombstoneState, b: RegisterState | TombstoneState): number {
  return a.node === b.node ? a.seq - b.seq : compareStr(a.node, b.node);
}

function writeBody(w: ByteWriter, tag: number, delta: Delta): void {
  const context = normalizeContext(delta.context);
  const deps = tag === TAG_DELTA ? normalizeDeps(delta.deps) : [];
  const nodes = nodeTable(context, delta.states, deps);
  writeHead(w, tag, delta.namespace, nodes, deps.length > 0 ? DEPS_VERSION : FORMAT_VERSION);
  writeContext(w, context, nodes);
  if (deps.length > 0) {
    w.uint(deps.length);
    for (const [node, seq] of deps) {
      w.uint(nodes.get(node) as number);
      w.uint(seq);
    }
  }
  const plain: Array<RegisterState | TombstoneState> = [];
  const counters: CounterState[] = [];
  for (const s of delta.states) {
    if (s.type === 'counter') counters.push(s);
    else plain.push(s);
  }
  plain.sort(compareDots);
  counters.sort((a, b) => compareStr(a.key, b.key));
  w.uint(plain.length);
  let prevNode = '';
  let prevSeq = 0;
  let prevWall = 0;
  let prevTtl = -1;
  let prevLogical = 0;
  for (const s of plain) {
    let header = s.type === 'register' ? T_REGISTER : T_TOMBSTONE;
    const sameNode = s.node === prevNode;
    if (sameNode) header |= F_SAME_NODE;
    if (sameNode && s.seq === prevSeq + 1) header |= F_NEXT_SEQ;
    const time =
      s.wallMs === prevWall && s.logical === prevLogical + 1 ? TIME_NEXT : s.logical === 0 ? TIME_WALL : TIME_FULL;
    header |= time;
    if (s.type === 'register') {
      if (s.ttlSeconds === prevTtl) header |= F_SAME_TTL;
      if (s.createdAt === s.wallMs) header |= F_CREATED_IS_WALL;
    }
    w.u8(header);
    w.string(s.key);
    if (!sameNode) w.uint(nodes.get(s.node) as number);
    if (!(header & F_NEXT_SEQ)) w.uint(sameNode ? s.seq - prevSeq - 1 : s.seq);
    if (time !== TIME_NEXT) w.int(s.wallMs - prevWall);
    if (time === TIME_FULL) w.uint(s.logical);
    if (s.type === 'register') {
      if (s.ttlSeconds !== prevTtl) w.uint(s.ttlSeconds);
      if (s.createdAt !== s.wallMs) w.uint(s.wallMs - s.createdAt);
      w.string(jsonText(s.value));
      prevTtl = s.ttlSeconds;
    }
    prevNode = s.node;
    prevSeq = s.seq;
    prevWall = s.wallMs;
    prevLogical = s.logical;
  }
  w.uint(counters.length);
  for (const c of counters) {
    w.u8(T_COUNTER);
    w.string(c.key);
    w.int(c.wallMs - prevWall);
    w.uint(c.logical);
    w.uint(c.node === '' ? 0 : (nodes.get(c.node) as number) + 1);
    w.int(c.createdAt - c.wallMs);
    const shares = [...c.shares].sort((a, b) => compareStr(a[0], b[0]));
    w.uint(shares.length);
    for (const [node, s] of shares) {
      w.uint(nodes.get(node) as number);
      w.uint(s.inc);
      w.uint(s.dec);
      w.int(s.wallMs - c.wallMs);
      w.uint(s.logical);
      w.uint(s.seq);
      w.uint(s.ttlSeconds);
    }
    prevWall = c.wallMs;
  }
}

function readBody(r: ByteReader, tag: number): Delta {
  const head = readHead(r, tag);
  const { nodes } = head;
  const context = readContext(r, head);
  const deps = head.version === DEPS_VERSION ? readDeps(r, head) : undefined;
  const states: KeyState[] = [];
  const keys = new Set<string>();
  const addKey = (key: string) => {
    if (key.length === 0) throw new DecodeError('empty key', r.pos);
    if (keys.has(key)) throw new DecodeError('duplicate key', r.pos);
    keys.add(key);
  };
  const nPlain = r.count(3);
  let prevNode = '';
  let prevSeq = 0;
  let prevWall = 0;
  let prevTtl = -1;
  let prevLogical = 0;
  for (let i = 0; i < nPlain; i++) {
    const header = r.u8();
    const type = header & 0b11;
    if (type !== T_REGISTER && type !== T_TOMBSTONE) throw new DecodeError('expected a register or tombstone', r.pos);
    const time = header & TIME_MASK;
    if (time === TIME_MASK) throw new DecodeError('invalid time mode', r.pos);
    if (type === T_TOMBSTONE && header & (F_SAME_TTL | F_CREATED_IS_WALL)) {
      throw new DecodeError('register flag on a tombstone', r.pos);
    }
    const sameNode = (header & F_SAME_NODE) !== 0;
    const nextSeq = (header & F_NEXT_SEQ) !== 0;
    if (i === 0 && sameNode) throw new DecodeError('first state cannot repeat a node', r.pos);
    if (nextSeq && !sameNode) throw new DecodeError('NEXT_SEQ without SAME_NODE', r.pos);
    const key = r.string();
    addKey(key);
    let node = prevNode;
    if (!sameNode) {
      node = nodeAt(r, head);
      if (i > 0 && !(node > prevNode)) throw new DecodeError('states not in dot order', r.pos);
    }
    let seq: number;
    if (nextSeq) seq = prevSeq + 1;
    else if (sameNode) {
      const d = r.uint();
      if (d === 0) throw new DecodeError('NEXT_SEQ not used for the next sequence number', r.pos);
      seq = prevSeq + 1 + d;
    } else seq = r.uint();
    seqIn(r, seq);
    let wallMs = prevWall;
    let logical = prevLogical + 1;
    if (time !== TIME_NEXT) {
      wallMs = safeAdd(prevWall, r.int(), r);
      logical = 0;
      if (time === TIME_FULL) {
        logical = r.uint();
        if (logical === 0) throw new DecodeError('TIME_WALL not used for a zero logical counter', r.pos);
        if (wallMs === prevWall && logical === prevLogical + 1) throw new DecodeError('TIME_NEXT not used', r.pos);
      }
    }
    logicalIn(r, logical);
    if (type === T_REGISTER) {
      let ttlSeconds = prevTtl;
      if (header & F_SAME_TTL) {
        if (prevTtl < 0) throw new DecodeError('SAME_TTL on the first register', r.pos);
      } else {
        ttlSeconds = r.uint();
        if (ttlSeconds === prevTtl) throw new DecodeError('SAME_TTL not used for a repeated TTL', r.pos);
        ttlIn(r, ttlSeconds);
      }
      let createdAt = wallMs;
      if (!(header & F_CREATED_IS_WALL)) {
        const back = r.uint();
        if (back === 0 || back > wallMs) throw new DecodeError('createdAt out of range', r.pos);
        createdAt = wallMs - back;
      }
      const value = readValue(r);
      states.push(new Register(key, wallMs, logical, node, seq, ttlSeconds, createdAt, value));
      prevTtl = ttlSeconds;
    } else {
      states.push({ type: 'tombstone', key, wallMs, logical, node, seq });
    }
    prevNode = node;
    prevSeq = seq;
    prevWall = wallMs;
    prevLogical = logical;
  }
  const nCounters = r.count(13);
  let prevKey: string | undefined;
  for (let i = 0; i < nCounters; i++) {
    if (r.u8() !== T_COUNTER) throw new DecodeError('expected a counter', r.pos);
    const key = r.string();
    if (prevKey !== undefined && !(prevKey < key)) throw new DecodeError('counters not in key order', r.pos);
    prevKey = key;
    addKey(key);
    const wallMs = safeAdd(prevWall, r.int(), r);
    const logical = logicalIn(r, r.uint());
    const baseIndex = r.uint();
    let node = '';
    if (baseIndex > 0) {
      const name = nodes[baseIndex - 1];
      if (name === undefined) throw new DecodeError(`node index ${baseIndex - 1} out of range`, r.pos);
      head.used[baseIndex - 1] = 1;
      node = name;
    } else if (wallMs !== 0 || logical !== 0) {
      throw new DecodeError('counter base without a node', r.pos);
    }
    const createdAt = safeAdd(wallMs, r.int(), r);
    const n = r.count(7);
    if (n === 0) throw new DecodeError('counter without shares', r.pos);
    const shares = new Map<string, CounterShare>();
    let prevIndex = -1;
    for (let j = 0; j < n; j++) {
      const index = r.uint();
      if (index <= prevIndex || index >= nodes.length) throw new DecodeError('shares not in node order', r.pos);
      prevIndex = index;
      head.used[index] = 1;
      const inc = r.uint();
      const dec = r.uint();
      const shareWall = safeAdd(wallMs, r.int(), r);
      const shareLogical = logicalIn(r, r.uint());
      const seq = seqIn(r, r.uint());
      const ttlSeconds = ttlIn(r, r.uint());
      shares.set(nodes[index] as string, {
        inc,
        dec,
        wallMs: shareWall,
        logical: shareLogical,
        seq,
        ttlSeconds,
      });
    }
    states.push({ type: 'counter', key, wallMs, logical, node, createdAt, shares });
    prevWall = wallMs;
  }
  r.end();
  checkAllUsed(r, head);
  return deps === undefined
    ? { namespace: head.namespace, states, context }
    : { namespace: head.namespace, states, context, deps };
}

function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`undecodable input: ${(err as Error)?.message ?? String(err)}`);
  }
}

function asBytes(bytes: Uint8Array): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('input is not a Uint8Array');
  return bytes;
}

/** Encodes a delta (a local operation's, or an anti-entropy reply). */
export function encodeDelta(delta: Delta): Uint8Array {
  const w = new ByteWriter(64 + delta.states.length * 32);
  writeBody(w, TAG_DELTA, delta);
  return w.finish();
}

/** Decodes a delta; throws only DecodeError. */
export function decodeDelta(bytes: Uint8Array): Delta {
  return guard(() => readBody(new ByteReader(asBytes(bytes)), TAG_DELTA));
}

/** Encodes a full state (`replica.state()`); converged replicas encode to identical bytes. */
export function encodeState(state: Delta): Uint8Array {
  const w = new ByteWriter(64 + state.states.length * 32);
  writeBody(w, TAG_STATE, state);
  return w.finish();
}

/** Decodes a full state; throws only DecodeError. Merge it into a replica to load it. */
export function decodeState(bytes: Uint8Array): Delta {
  return guard(() => readBody(new ByteReader(asBytes(bytes)), TAG_STATE));
}

export function encodeDigest(digest: Digest): Uint8Array {
  const context = normalizeContext(digest.context);
  const nodes = nodeTable(context, []);
  const w = new ByteWriter();
  writeHead(w, TAG_DIGEST, digest.namespace, nodes);
  writeContext(w, context, nodes);
  return w.finish();
}

/** Decodes a digest; throws only DecodeError. */
export function decodeDigest(bytes: Uint8Array): Digest {
  return guard(() => {
    const r = new ByteReader(asBytes(bytes));
    const head = readHead(r, TAG_DIGEST);
    const context = readContext(r, head);
    r.end();
    checkAllUsed(r, head);
    return { namespace: head.namespace, context };
  });
}
