/**
 * Mutations of JSON text that keep it (mostly) well-formed, so they reach the
 * checks behind the parser: deep nesting injected inside a value, numbers at
 * the edges of float64 (-0, 1e400, 2^53 + 1), `__proto__` and duplicate keys,
 * lone surrogates, non-canonical whitespace and escapes.
 */
import type { Gen } from './gen.js';

/** Nesting depths injected: around the documented limits, and far past any stack. */
const DEPTHS = [9, 33, 63, 64, 65, 72, 73, 100, 1000];
const HUGE_DEPTHS = [10_001, 100_000, 300_000];

function depth(g: Gen): number {
  return g.bool(0.1) ? g.pick(HUGE_DEPTHS) : g.pick(DEPTHS);
}

const ODD_NUMBERS = [
  '-0',
  '-0.0',
  '0e0',
  '1e400',
  '-1e400',
  '1e-400',
  '9007199254740993',
  '-9007199254740993',
  '123456789012345678901234567890',
  '0.1e1',
  '1E2',
  '4294967296',
  '1.5',
  '-1',
  '1e21',
  '5e-324',
];

const ODD_STRINGS = ['"\\ud800"', '"\\udc00x"', '"\\u0000"', '"\u2028"', '"\\uFEFF"', '"__proto__"', '""'];

/** A chain of `depth` nested containers around a scalar. */
export function nested(depth: number, objects: boolean): string {
  if (objects) return `${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}`;
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** Index of the first occurrence of any char of `chars` at or after a random position (wrapping once). */
function findFrom(text: string, g: Gen, chars: string): number {
  if (text.length === 0) return -1;
  const start = g.int(text.length);
  for (let pass = 0; pass < 2; pass++) {
    const from = pass === 0 ? start : 0;
    const to = pass === 0 ? Math.min(text.length, start + 4096) : Math.min(start, 4096);
    for (let i = from; i < to; i++) if (chars.includes(text[i] as string)) return i;
  }
  return -1;
}

/** Inserts `member` (a value, or `"k":value` in an object) as the first member of a container. */
function insertMember(text: string, g: Gen, value: string): string {
  const at = findFrom(text, g, '[{');
  if (at < 0) return value;
  const open = text[at];
  const closing = text[at + 1] === (open === '[' ? ']' : '}');
  const member = open === '[' ? value : `"${g.bool(0.2) ? '__proto__' : g.pick(['a', 'k', 'type', 'value'])}":${value}`;
  return `${text.slice(0, at + 1)}${member}${closing ? '' : ','}${text.slice(at + 1)}`;
}

/** Replaces one number token with another. */
function swapNumber(text: string, g: Gen, replacement: string): string {
  const at = findFrom(text, g, '-0123456789');
  if (at < 0) return text;
  // Only a token start: the previous character cannot be part of a number or a string body.
  let end = at;
  while (end < text.length && '+-.0123456789eE'.includes(text[end] as string)) end++;
  return text.slice(0, at) + replacement + text.slice(end);
}

export function mutateJsonText(text: string, g: Gen): string {
  switch (g.int(10)) {
    case 0:
    case 1: {
      return insertMember(text, g, nested(depth(g), g.bool(0.3)));
    }
    case 2:
      return swapNumber(text, g, g.pick(ODD_NUMBERS));
    case 3:
      return insertMember(text, g, g.pick(ODD_NUMBERS));
    case 4:
      return insertMember(text, g, g.pick(ODD_STRINGS));
    case 5: {
      // A duplicate key in one object: the parser keeps the last one.
      const at = findFrom(text, g, '{');
      if (at < 0 || text[at + 1] !== '"') return text;
      const end = text.indexOf('":', at + 2);
      if (end < 0 || end - at > 256) return text;
      const key = text.slice(at + 1, end + 1);
      const value = g.bool(0.5) ? g.pick(ODD_NUMBERS) : g.pick(ODD_STRINGS);
      return `${text.slice(0, at + 1)}${key}:${value},${text.slice(at + 1)}`;
    }
    case 6: {
      // Non-canonical whitespace between tokens.
      const at = findFrom(text, g, ',:[]{}');
      if (at < 0) return ` ${text}`;
      return `${text.slice(0, at + 1)}${g.pick([' ', '\n', '\t', '\r\n  '])}${text.slice(at + 1)}`;
    }
    case 7: {
      // A character spelled as an escape.
      const at = findFrom(text, g, 'abcdefghijklmnopqrstuvwxyz');
      if (at < 0) return text;
      const code = (text.charCodeAt(at) as number).toString(16).padStart(4, '0');
      return `${text.slice(0, at)}\\u${code}${text.slice(at + 1)}`;
    }
    case 8:
      return nested(depth(g), g.bool(0.3));
    default: {
      // Grow the text: a long array of copies of itself.
      const piece = text.length > 10_000 ? '0' : text || '0';
      const copies = Math.max(2, Math.min(g.pick([2, 10, 100, 1000]), Math.floor(262_144 / piece.length)));
      return `[${new Array(copies).fill(piece).join(',')}]`;
    }
  }
}
