/**
 * Structural equality and a size estimate for decoded values, both iterative
 * so a value nested 300,000 deep cannot overflow the stack of the checker.
 *
 * Equality: primitives by SameValueZero (NaN equals NaN, and −0 equals 0:
 * JSON text cannot tell them apart, and binary fields are compared byte for
 * byte by the re-encoding check anyway), byte arrays by content, Maps by key → value regardless of insertion
 * order, arrays element-wise, objects by prototype and own enumerable keys
 * regardless of key order (key order is covered by the byte-exact
 * re-encoding check instead).
 */

export function deepEqual(a: unknown, b: unknown): boolean {
  return firstDifference(a, b) === undefined;
}

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' && Object.is(v, -0)) return '-0';
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? `array(${v.length})` : (Object.getPrototypeOf(v)?.constructor?.name ?? 'object');
}

/** A path as a linked list from the leaf up (building strings per step would be quadratic in depth). */
interface PathStep {
  parent: PathStep | undefined;
  step: string;
}

function render(path: PathStep | undefined): string {
  const steps: string[] = [];
  let depth = 0;
  for (let p = path; p !== undefined; p = p.parent, depth++) if (depth < 12) steps.push(p.step);
  if (steps.length === 0) return '(root)';
  return (depth > 12 ? `…(${depth - 12} more)` : '') + steps.reverse().join('');
}

/** Where `a` and `b` first differ (a path like `.states[3].value` and both sides), or undefined when equal. */
export function firstDifference(a: unknown, b: unknown): string | undefined {
  const stack: [unknown, unknown, PathStep | undefined][] = [[a, b, undefined]];
  while (stack.length > 0) {
    const [x, y, path] = stack.pop() as [unknown, unknown, PathStep | undefined];
    const differ = () => `${render(path)}: ${show(x)} ≠ ${show(y)}`;
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') return differ();
    if (Object.getPrototypeOf(x) !== Object.getPrototypeOf(y)) return differ();
    if (ArrayBuffer.isView(x)) {
      const u = x as Uint8Array;
      const v = y as Uint8Array;
      if (u.byteLength !== v.byteLength) return differ();
      for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) return differ();
      continue;
    }
    if (x instanceof Map) {
      const m = y as Map<unknown, unknown>;
      if (x.size !== m.size) return differ();
      for (const [k, v] of x) {
        if (!m.has(k)) return differ();
        stack.push([v, m.get(k), { parent: path, step: `<${show(k)}>` }]);
      }
      continue;
    }
    if (x instanceof Set) {
      const s = y as Set<unknown>;
      if (x.size !== s.size) return differ();
      for (const k of x) if (!s.has(k)) return differ();
      continue;
    }
    if (Array.isArray(x)) {
      const arr = y as unknown[];
      if (x.length !== arr.length) return differ();
      for (let i = 0; i < x.length; i++) stack.push([x[i], arr[i], { parent: path, step: `[${i}]` }]);
      continue;
    }
    const kx = Object.keys(x);
    const ky = Object.keys(y);
    if (kx.length !== ky.length) return differ();
    const yo = y as Record<string, unknown>;
    const xo = x as Record<string, unknown>;
    for (const k of kx) {
      if (!Object.hasOwn(yo, k)) return differ();
      stack.push([xo[k], yo[k], { parent: path, step: `.${k}` }]);
    }
  }
  return undefined;
}

/** Bytes per allocation header and per slot, roughly as V8 lays them out (64-bit, compressed pointers off). */
const OBJECT_BYTES = 32;
const SLOT_BYTES = 8;

/**
 * An estimate of the heap a decoded value holds, in bytes: objects and arrays
 * by their slots, strings by two bytes a character, byte arrays by their
 * length unless they are views into the input itself. Shared objects count once.
 */
export function footprint(value: unknown, input: Uint8Array): number {
  let total = 0;
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      total += 16 + v.length * 2;
      continue;
    }
    if (v === null || typeof v !== 'object') {
      total += SLOT_BYTES;
      continue;
    }
    if (seen.has(v)) continue;
    seen.add(v);
    total += OBJECT_BYTES;
    if (ArrayBuffer.isView(v)) {
      if (v.buffer !== input.buffer) total += v.byteLength;
    } else if (v instanceof Map) {
      for (const [k, x] of v) {
        total += 3 * SLOT_BYTES;
        stack.push(k, x);
      }
    } else if (Array.isArray(v)) {
      total += v.length * SLOT_BYTES;
      for (const x of v) stack.push(x);
    } else {
      for (const x of Object.values(v)) {
        total += 2 * SLOT_BYTES;
        stack.push(x);
      }
    }
  }
  return total;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function hex(bytes: Uint8Array, max = 256): string {
  let s = '';
  const n = Math.min(bytes.length, max);
  for (let i = 0; i < n; i++) s += (bytes[i] as number).toString(16).padStart(2, '0');
  return bytes.length > max ? `${s}… (${bytes.length} bytes)` : s;
}
