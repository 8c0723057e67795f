import { InvalidArgumentError, jsonDepthExceeds } from '@parley/interface';
import { MAX_VALUE_DEPTH } from './limits.js';
import type { JsonValue } from './types.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when `s` has no lone surrogate, so it survives a UTF-8 round trip unchanged. */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** UTF-8 length of `s`, or −1 when it has a lone surrogate (it would not survive UTF-8). One pass. */
export function wellFormedUtf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c < 0xd800 || c > 0xdfff) n += 3;
    else if (c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return -1;
      n += 4;
      i++;
    } else return -1;
  }
  return n;
}

/** UTF-8 length of a well-formed string. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** A private, normalized copy of a JSON value and the size of its UTF-8 JSON text. */
export interface NormalizedJson {
  value: JsonValue;
  text: string;
}

/**
 * Validates and copies a value the way every replica will see it after a
 * round trip through the codec (JSON text), so the writer's own copy and the
 * decoded copies are equal. Throws InvalidArgumentError for what JSON cannot
 * carry faithfully (undefined, functions, non-finite numbers at top level, BigInt,
 * cycles, nesting deeper than MAX_VALUE_DEPTH).
 */
export function normalizeJson(value: unknown): NormalizedJson {
  switch (typeof value) {
    case 'string':
      return { value, text: JSON.stringify(value) };
    case 'boolean':
      return { value, text: value ? 'true' : 'false' };
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidArgumentError(`value must be a finite number, got ${value}`);
      return { value: value === 0 ? 0 : value, text: JSON.stringify(value) };
    case 'object': {
      if (value === null) return { value: null, text: 'null' };
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch (err) {
        throw new InvalidArgumentError(`value is not JSON: ${(err as Error).message}`);
      }
      if (text === undefined) throw new InvalidArgumentError('value is not JSON');
      const copy = JSON.parse(text) as JsonValue;
      if (jsonDepthExceeds(copy, MAX_VALUE_DEPTH)) {
        throw new InvalidArgumentError(`value nested deeper than ${MAX_VALUE_DEPTH} levels`);
      }
      return { value: copy, text };
    }
    default:
      throw new InvalidArgumentError(`value of type ${typeof value} is not JSON`);
  }
}
