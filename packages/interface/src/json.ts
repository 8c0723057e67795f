/**
 * JSON values, and the guards shared by every decoder that parses JSON from
 * untrusted bytes.
 *
 * `JSON.parse` builds arbitrarily deep trees without recursion, but
 * `JSON.stringify` and any recursive walk overflow the stack on them; a
 * decoder checks the depth with this helper before anything recurses.
 */

/** A JSON value: what an entry holds (eventual registers, strong entries). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * True when `value` nests arrays and objects more than `maxDepth` levels deep
 * (a top-level array or object is level 1; scalars are level 0). Iterative, so
 * a hostile nesting never recurses on the stack; stops at the first container
 * past the limit, and its stack holds at most the containers it has yet to visit.
 */
export function jsonDepthExceeds(value: unknown, maxDepth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const items: object[] = [value];
  const depths: number[] = [1];
  while (items.length > 0) {
    const v = items.pop() as object;
    const d = depths.pop() as number;
    if (d > maxDepth) return true;
    const children: unknown[] = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) {
      if (c !== null && typeof c === 'object') {
        items.push(c);
        depths.push(d + 1);
      }
    }
  }
  return false;
}
