/**
 * The binary codec of @parley/crdt: deltas, full states and digests.
 * Deterministic (one abstract value, one byte string) and versioned.
 *
 * Tag table
 * ---------
 *   byte 0          FORMAT_VERSION (1)
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
 *   DELTA | STATE:  version tag ns:str nodes context states
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
 * Decoders throw only DecodeError, allocate in proportion to the input, and
 * never loop longer than the input is long.
 */
import { ByteReader, ByteWriter, DecodeError } from '@parley/interface';
import { DotContext } from './context.js';
import { Register } from './register.js';
import type {
  CounterShare,
  CounterState,
  Delta,
  Digest,
  DotRanges,
  JsonValue,
  KeyState,
  RegisterState,
  TombstoneState,
} from './types.js';

export const FORMAT_VERSION = 1;
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

const MAX_TTL_SECONDS_WIRE = 0xffff_ffff;

// ---------------------------------------------------------------- shared pieces

function compareStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function normalizeContext(ranges: DotRanges): Map<string, number[]> {
  const c = new DotContext();
  c.addAll(ranges);
  return c.snapshot();
}

function nodeTable(context: Map<string, number[]>, states: readonly KeyState[]): Map<string, number> {
  const names = new Set<string>(context.keys());
  for (const s of states) {
    if (s.node !== '') names.add(s.node);
    if (s.type === 'counter') for (const n of s.shares.keys()) names.add(n);
  }
  const sorted = [...names].sort(compareStr);
  return new Map(sorted.map((n, i) => [n, i]));
}

function writeHead(w: ByteWriter, tag: number, namespace: string, nodes: Map<string, number>): void {
  w.u8(FORMAT_VERSION);
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
  namespace: string;
  nodes: string[];
}

function readHead(r: ByteReader, expectedTag: number): Head {
  const version = r.u8();
  if (version !== FORMAT_VERSION) throw new DecodeError(`unsupported format version ${version}`, 0);
  const tag = r.u8();
  if (tag !== expectedTag) throw new DecodeError(`expected message tag ${expectedTag}, got ${tag}`, 1);
  const namespace = r.string();
  const n = r.count(1);
  const nodes: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = r.string();
    const prev = nodes[i - 1];
    if (prev !== undefined && !(prev < name)) throw new DecodeError('node table not strictly ascending', r.pos);
    if (name.length === 0) throw new DecodeError('empty node id', r.pos);
    nodes.push(name);
  }
  return { namespace, nodes };
}

function nodeAt(r: ByteReader, nodes: readonly string[]): string {
  const i = r.uint();
  const name = nodes[i];
  if (name === undefined) throw new DecodeError(`node index ${i} out of range`, r.pos);
  return name;
}

function readContext(r: ByteReader, nodes: readonly string[]): Map<string, number[]> {
  const origins = r.count(3);
  const out = new Map<string, number[]>();
  let prevIndex = -1;
  for (let o = 0; o < origins; o++) {
    const index = r.uint();
    if (index <= prevIndex || index >= nodes.length) throw new DecodeError('context origins not ascending', r.pos);
    prevIndex = index;
    const n = r.count(2);
    if (n === 0) throw new DecodeError('context origin without ranges', r.pos);
    const ranges: number[] = [];
    let prevHi = 0;
    for (let i = 0; i < n; i++) {
      const gap = r.uint();
      if (i > 0 && gap === 0) throw new DecodeError('adjacent context ranges', r.pos);
      const lo = prevHi + 1 + gap;
      const hi = lo + r.uint();
      if (hi > Number.MAX_SAFE_INTEGER) throw new DecodeError('sequence number out of range', r.pos);
      ranges.push(lo, hi);
      prevHi = hi;
    }
    out.set(nodes[index] as string, ranges);
  }
  return out;
}

function safeAdd(a: number, b: number, r: ByteReader): number {
  const x = a + b;
  if (x < 0 || x > Number.MAX_SAFE_INTEGER) throw new DecodeError('time out of range', r.pos);
  return x;
}

// ---------------------------------------------------------------- JSON values

const MAYBE_ODD_NUMBER = /-0|[eE]/;

function jsonText(value: JsonValue): string {
  return JSON.stringify(value);
}

/** Rewrites -0 to 0 in place and rejects non-finite numbers (1e400 parses to Infinity). */
function checkNumbers(v: JsonValue, r: ByteReader, depth: number): JsonValue {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new DecodeError('non-finite number in value', r.pos);
    return v === 0 ? 0 : v;
  }
  if (v === null || typeof v !== 'object') return v;
  if (depth > 10_000) throw new DecodeError('value nested too deeply', r.pos);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = checkNumbers(v[i] as JsonValue, r, depth + 1);
  } else {
    for (const k of Object.keys(v)) v[k] = checkNumbers(v[k] as JsonValue, r, depth + 1);
  }
  return v;
}

function readValue(r: ByteReader): JsonValue {
  const text = r.string();
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    throw new DecodeError('value is not JSON', r.pos);
  }
  if (MAYBE_ODD_NUMBER.test(text)) {
    try {
      value = checkNumbers(value, r, 0);
    } catch (err) {
      if (err instanceof DecodeError) throw err;
      throw new DecodeError('value is not decodable', r.pos);
    }
  }
  return value;
}

// ---------------------------------------------------------------- deltas and states

function compareDots(a: RegisterState | TombstoneState, b: RegisterState | TombstoneState): number {
  return a.node === b.node ? a.seq - b.seq : compareStr(a.node, b.node);
}

function writeBody(w: ByteWriter, tag: number, delta: Delta): void {
  const context = normalizeContext(delta.context);
  const nodes = nodeTable(context, delta.states);
  writeHead(w, tag, delta.namespace, nodes);
  writeContext(w, context, nodes);
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
  const context = readContext(r, nodes);
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
      node = nodeAt(r, nodes);
      if (i > 0 && !(node > prevNode)) throw new DecodeError('states not in dot order', r.pos);
    }
    let seq: number;
    if (nextSeq) seq = prevSeq + 1;
    else if (sameNode) {
      const d = r.uint();
      if (d === 0) throw new DecodeError('NEXT_SEQ not used for the next sequence number', r.pos);
      seq = prevSeq + 1 + d;
    } else seq = r.uint();
    if (seq < 1 || seq > Number.MAX_SAFE_INTEGER) throw new DecodeError('sequence number out of range', r.pos);
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
    if (type === T_REGISTER) {
      let ttlSeconds = prevTtl;
      if (header & F_SAME_TTL) {
        if (prevTtl < 0) throw new DecodeError('SAME_TTL on the first register', r.pos);
      } else {
        ttlSeconds = r.uint();
        if (ttlSeconds === prevTtl) throw new DecodeError('SAME_TTL not used for a repeated TTL', r.pos);
        if (ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS_WIRE) throw new DecodeError('ttl out of range', r.pos);
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
    const logical = r.uint();
    const baseIndex = r.uint();
    let node = '';
    if (baseIndex > 0) {
      const name = nodes[baseIndex - 1];
      if (name === undefined) throw new DecodeError(`node index ${baseIndex - 1} out of range`, r.pos);
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
      const inc = r.uint();
      const dec = r.uint();
      const shareWall = safeAdd(wallMs, r.int(), r);
      const shareLogical = r.uint();
      const seq = r.uint();
      if (seq < 1) throw new DecodeError('sequence number out of range', r.pos);
      const ttlSeconds = r.uint();
      if (ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS_WIRE) throw new DecodeError('ttl out of range', r.pos);
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
  return { namespace: head.namespace, states, context };
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
    const context = readContext(r, head.nodes);
    r.end();
    return { namespace: head.namespace, context };
  });
}
