/**
 * What `merge`, `deltaFor` and `gc` check before they touch a replica. A delta
 * may come from the decoder, from a peer in the same process, or from a bug:
 * every field is checked against the bounds in limits.ts and the replica's own
 * limits before anything is applied, so a bad delta changes nothing and raises
 * InvalidArgumentError. The decoder enforces the same bounds on bytes.
 */
import { InvalidArgumentError, jsonDepthExceeds } from '@parley/interface';
import { wellFormedUtf8Length } from './json.js';
import { MAX_DEPS, MAX_LOGICAL, MAX_NODE_ID_BYTES, MAX_SEQ, MAX_VALUE_DEPTH, MAX_WALL_MS } from './limits.js';

/** The replica limits a delta must respect. */
export interface DeltaLimits {
  readonly maxKeyBytes: number;
  readonly maxValueBytes: number;
  readonly maxTtlSeconds: number;
}

function bad(what: string): never {
  throw new InvalidArgumentError(`invalid delta: ${what}`);
}

function intIn(v: unknown, min: number, max: number, what: string): void {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    bad(`${what} must be an integer in ${min}..${max}`);
  }
}

function nodeId(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.length === 0) bad(`${what} must be a non-empty string`);
  const n = v.length > MAX_NODE_ID_BYTES ? -2 : wellFormedUtf8Length(v);
  if (n < 0 || n > MAX_NODE_ID_BYTES) bad(`${what} must be well-formed and at most ${MAX_NODE_ID_BYTES} bytes`);
  return v;
}

function checkKey(v: unknown, maxKeyBytes: number): void {
  if (typeof v !== 'string' || v.length === 0) bad('key must be a non-empty string');
  const n = v.length > maxKeyBytes ? -2 : wellFormedUtf8Length(v);
  if (n < 0 || n > maxKeyBytes) bad(`key must be well-formed and at most ${maxKeyBytes} bytes`);
}

function isPlainObject(v: object): boolean {
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Checks that `value` is plain JSON (null, booleans, finite numbers, strings,
 * arrays without holes, plain objects without undefined members) nested at
 * most MAX_VALUE_DEPTH deep, and at most `maxBytes` as JSON text. Iterative.
 */
export function checkJsonValue(value: unknown, maxBytes: number): void {
  if (jsonDepthExceeds(value, MAX_VALUE_DEPTH)) bad(`value nested deeper than ${MAX_VALUE_DEPTH}`);
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
      case 'boolean':
        continue;
      case 'number':
        if (!Number.isFinite(v)) bad('value holds a non-finite number');
        continue;
      case 'object':
        if (v === null) continue;
        if (Array.isArray(v)) {
          for (let i = 0; i < v.length; i++) {
            if (!(i in v) || v[i] === undefined) bad('value holds an array hole or undefined');
            stack.push(v[i]);
          }
        } else {
          if (!isPlainObject(v)) bad('value holds an object that is not plain JSON');
          for (const c of Object.values(v)) {
            if (c === undefined) bad('value holds an undefined member');
            stack.push(c);
          }
        }
        continue;
      default:
        bad(`value holds a ${typeof v}`);
    }
  }
  const text = JSON.stringify(value);
  // One UTF-16 unit is at most three UTF-8 bytes: measure only when it may matter.
  if (text.length * 3 > maxBytes) {
    const n = wellFormedUtf8Length(text);
    if (n > maxBytes) bad(`value larger than ${maxBytes} bytes`);
  }
}

function checkStamp(s: Record<string, unknown>, what: string): void {
  intIn(s.wallMs, 0, MAX_WALL_MS, `${what} wallMs`);
  intIn(s.logical, 0, MAX_LOGICAL, `${what} logical`);
}

/** Checks a dot context: origins are node ids, ranges flat [lo, hi] pairs within 1..MAX_SEQ. */
export function checkContext(context: unknown): void {
  if (!(context instanceof Map)) bad('context must be a Map');
  for (const [node, ranges] of context as Map<unknown, unknown>) {
    nodeId(node, 'context origin');
    if (!Array.isArray(ranges) || ranges.length % 2 !== 0) bad('context ranges must be [lo, hi] pairs');
    for (let i = 0; i < ranges.length; i += 2) {
      intIn(ranges[i], 1, MAX_SEQ, 'context range start');
      intIn(ranges[i + 1], ranges[i] as number, MAX_SEQ, 'context range end');
    }
  }
}

function checkState(s: unknown, limits: DeltaLimits): void {
  if (s === null || typeof s !== 'object') bad('key state must be an object');
  const state = s as Record<string, unknown>;
  checkKey(state.key, limits.maxKeyBytes);
  checkStamp(state, 'state');
  switch (state.type) {
    case 'register':
      nodeId(state.node, 'node');
      intIn(state.seq, 1, MAX_SEQ, 'seq');
      intIn(state.ttlSeconds, 1, limits.maxTtlSeconds, 'ttlSeconds');
      intIn(state.createdAt, 0, state.wallMs as number, 'createdAt');
      checkJsonValue(state.value, limits.maxValueBytes);
      return;
    case 'tombstone':
      nodeId(state.node, 'node');
      intIn(state.seq, 1, MAX_SEQ, 'seq');
      return;
    case 'counter': {
      if (state.node === '') {
        if (state.wallMs !== 0 || state.logical !== 0) bad('counter base without a node must be the zero stamp');
      } else nodeId(state.node, 'node');
      intIn(state.createdAt, 0, MAX_WALL_MS, 'createdAt');
      const shares = state.shares;
      if (!(shares instanceof Map) || shares.size === 0) bad('counter shares must be a non-empty Map');
      for (const [node, share] of shares as Map<unknown, unknown>) {
        nodeId(node, 'share node');
        if (share === null || typeof share !== 'object') bad('counter share must be an object');
        const sh = share as Record<string, unknown>;
        intIn(sh.inc, 0, Number.MAX_SAFE_INTEGER, 'share inc');
        intIn(sh.dec, 0, Number.MAX_SAFE_INTEGER, 'share dec');
        checkStamp(sh, 'share');
        intIn(sh.seq, 1, MAX_SEQ, 'share seq');
        intIn(sh.ttlSeconds, 1, limits.maxTtlSeconds, 'share ttlSeconds');
      }
      return;
    }
    default:
      bad('key state type must be register, tombstone or counter');
  }
}

/** Checks a whole delta; throws InvalidArgumentError naming the first problem. */
export function checkDelta(delta: unknown, limits: DeltaLimits): void {
  if (delta === null || typeof delta !== 'object') bad('delta must be an object');
  const d = delta as Record<string, unknown>;
  if (typeof d.namespace !== 'string') bad('namespace must be a string');
  if (!Array.isArray(d.states)) bad('states must be an array');
  for (const s of d.states) checkState(s, limits);
  checkContext(d.context);
  if (d.deps !== undefined) checkDeps(d.deps);
}

/** Checks causal dependencies: a Map of at most MAX_DEPS node ids to counters in 0..MAX_SEQ. */
export function checkDeps(deps: unknown): void {
  if (!(deps instanceof Map)) bad('deps must be a Map');
  if (deps.size > MAX_DEPS) bad(`deps name more than ${MAX_DEPS} origins`);
  for (const [node, seq] of deps as Map<unknown, unknown>) {
    nodeId(node, 'deps origin');
    intIn(seq, 0, MAX_SEQ, 'deps counter');
  }
}

/** Checks a digest (a namespace and a context). */
export function checkDigest(digest: unknown): void {
  if (digest === null || typeof digest !== 'object') bad('digest must be an object');
  const d = digest as Record<string, unknown>;
  if (typeof d.namespace !== 'string') bad('namespace must be a string');
  checkContext(d.context);
}
