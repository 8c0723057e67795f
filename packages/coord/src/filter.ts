/**
 * The `list` filter grammar: a small boolean language over fields of an
 * entry's JSON value.
 *
 * ```
 * filter     := or
 * or         := and ( "or" and )*
 * and        := unary ( "and" unary )*
 * unary      := "not" unary | "(" or ")" | comparison
 * comparison := path op literal | path "exists"
 * path       := "$" | segment ( "." segment )*       segment: [A-Za-z_][A-Za-z0-9_-]* or digits
 * op         := "=" | "==" | "!=" | "<" | "<=" | ">" | ">="
 * literal    := number | "double-quoted" | 'single-quoted' | true | false | null
 * ```
 *
 * Keywords (`and`, `or`, `not`, `exists`, `true`, `false`, `null`) are
 * case-insensitive. `$` is the whole value; `a.b.0` walks object fields and
 * array indexes. `=` / `!=` compare for exact JSON equality (a missing field
 * is unequal to everything); `<`, `<=`, `>`, `>=` hold only when both sides
 * are numbers (numeric order) or both strings (UTF-16 code unit order), and
 * are false otherwise. Bounds: 1024 characters, 32 comparisons, nesting 16.
 *
 * Example: `status = "running" and (attempts >= 3 or not owner exists)`.
 */
import { InvalidArgumentError } from '@parley/interface';
import { type JsonValue, jsonEqual } from './json.js';

export const MAX_FILTER_LENGTH = 1024;
export const MAX_FILTER_COMPARISONS = 32;
export const MAX_FILTER_DEPTH = 16;

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type FilterNode =
  | { type: 'and'; left: FilterNode; right: FilterNode }
  | { type: 'or'; left: FilterNode; right: FilterNode }
  | { type: 'not'; operand: FilterNode }
  | { type: 'compare'; path: string[]; op: CompareOp; literal: JsonValue }
  | { type: 'exists'; path: string[] };

type Tok =
  | { t: 'word'; v: string; at: number }
  | { t: 'op'; v: CompareOp; at: number }
  | { t: 'lit'; v: JsonValue; at: number }
  | { t: 'paren'; v: '(' | ')'; at: number };

function fail(message: string, at: number): never {
  throw new InvalidArgumentError(`bad filter: ${message} at character ${at}`, { at });
}

function tokenize(src: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i] as string;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
    } else if (ch === '(' || ch === ')') {
      toks.push({ t: 'paren', v: ch, at: i });
      i++;
    } else if (ch === '=' || ch === '!' || ch === '<' || ch === '>') {
      const two = src.slice(i, i + 2);
      if (two === '==' || two === '!=' || two === '<=' || two === '>=') {
        toks.push({ t: 'op', v: two === '==' ? '=' : (two as CompareOp), at: i });
        i += 2;
      } else if (ch === '!') fail('expected != ', i);
      else {
        toks.push({ t: 'op', v: ch as CompareOp, at: i });
        i++;
      }
    } else if (ch === '"' || ch === "'") {
      let j = i + 1;
      let text = '';
      for (;;) {
        if (j >= src.length) fail('unterminated string', i);
        const c = src[j] as string;
        if (c === ch) break;
        if (c === '\\') {
          const n = src[j + 1];
          if (n === undefined) fail('unterminated string', i);
          text += n;
          j += 2;
        } else {
          text += c;
          j++;
        }
      }
      toks.push({ t: 'lit', v: text, at: i });
      i = j + 1;
    } else if (/[-0-9]/.test(ch)) {
      const m = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?/.exec(src.slice(i, i + 64));
      if (!m) fail('bad number', i);
      const n = Number(m[0]);
      if (!Number.isFinite(n)) fail('bad number', i);
      // A number directly followed by a path character is a path segment like `0` in `a.0`: handled as word below.
      const next = src[i + m[0].length];
      if (next !== undefined && /[A-Za-z_.]/.test(next)) fail('bad number', i);
      toks.push({ t: 'lit', v: n, at: i });
      i += m[0].length;
    } else if (/[A-Za-z_$]/.test(ch)) {
      const m = /^(?:\$|[A-Za-z_][A-Za-z0-9_-]*)(?:\.(?:[A-Za-z_][A-Za-z0-9_-]*|[0-9]+))*/.exec(src.slice(i));
      if (!m) fail('bad path', i);
      toks.push({ t: 'word', v: m[0], at: i });
      i += m[0].length;
    } else fail(`unexpected '${ch}'`, i);
  }
  return toks;
}

class Parser {
  private pos = 0;
  private comparisons = 0;
  constructor(
    private readonly toks: Tok[],
    private readonly end: number,
  ) {}

  private peek(): Tok | undefined {
    return this.toks[this.pos];
  }

  private isKeyword(tok: Tok | undefined, word: string): boolean {
    return tok?.t === 'word' && tok.v.toLowerCase() === word;
  }

  parse(): FilterNode {
    const node = this.or(0);
    const tok = this.peek();
    if (tok) fail('unexpected token', tok.at);
    return node;
  }

  private or(depth: number): FilterNode {
    let left = this.and(depth);
    while (this.isKeyword(this.peek(), 'or')) {
      this.pos++;
      left = { type: 'or', left, right: this.and(depth) };
    }
    return left;
  }

  private and(depth: number): FilterNode {
    let left = this.unary(depth);
    while (this.isKeyword(this.peek(), 'and')) {
      this.pos++;
      left = { type: 'and', left, right: this.unary(depth) };
    }
    return left;
  }

  private unary(depth: number): FilterNode {
    if (depth > MAX_FILTER_DEPTH) fail(`nesting deeper than ${MAX_FILTER_DEPTH}`, this.peek()?.at ?? this.end);
    const tok = this.peek();
    if (tok === undefined) fail('unexpected end', this.end);
    if (this.isKeyword(tok, 'not')) {
      this.pos++;
      return { type: 'not', operand: this.unary(depth + 1) };
    }
    if (tok.t === 'paren' && tok.v === '(') {
      this.pos++;
      const inner = this.or(depth + 1);
      const close = this.peek();
      if (close?.t !== 'paren' || close.v !== ')') fail("expected ')'", close?.at ?? this.end);
      this.pos++;
      return inner;
    }
    if (tok.t !== 'word') fail('expected a field path', tok.at);
    this.pos++;
    if (++this.comparisons > MAX_FILTER_COMPARISONS) fail(`more than ${MAX_FILTER_COMPARISONS} comparisons`, tok.at);
    const path = tok.v === '$' ? [] : tok.v.replace(/^\$\./, '').split('.');
    const next = this.peek();
    if (this.isKeyword(next, 'exists')) {
      this.pos++;
      return { type: 'exists', path };
    }
    if (next?.t !== 'op') fail('expected a comparison operator', next?.at ?? this.end);
    this.pos++;
    const lit = this.peek();
    let literal: JsonValue;
    if (lit?.t === 'lit') literal = lit.v;
    else if (lit?.t === 'word' && ['true', 'false', 'null'].includes(lit.v.toLowerCase())) {
      const w = lit.v.toLowerCase();
      literal = w === 'null' ? null : w === 'true';
    } else fail('expected a literal', lit?.at ?? this.end);
    this.pos++;
    return { type: 'compare', path, op: next.v, literal };
  }
}

/** Parses a filter; throws InvalidArgumentError on anything outside the grammar or its bounds. */
export function parseFilter(src: string): FilterNode {
  if (src.length > MAX_FILTER_LENGTH) {
    throw new InvalidArgumentError(`bad filter: longer than ${MAX_FILTER_LENGTH} characters`);
  }
  const toks = tokenize(src);
  if (toks.length === 0) fail('empty filter', 0);
  return new Parser(toks, src.length).parse();
}

const MISSING = Symbol('missing');

function lookup(value: JsonValue, path: readonly string[]): JsonValue | typeof MISSING {
  let cur: JsonValue = value;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return MISSING;
    if (Array.isArray(cur)) {
      if (!/^[0-9]+$/.test(seg)) return MISSING;
      const i = Number(seg);
      if (i >= cur.length) return MISSING;
      cur = cur[i] as JsonValue;
    } else {
      if (!Object.hasOwn(cur, seg)) return MISSING;
      cur = cur[seg] as JsonValue;
    }
  }
  return cur;
}

/** True when `value` satisfies the filter. */
export function evalFilter(node: FilterNode, value: JsonValue): boolean {
  switch (node.type) {
    case 'and':
      return evalFilter(node.left, value) && evalFilter(node.right, value);
    case 'or':
      return evalFilter(node.left, value) || evalFilter(node.right, value);
    case 'not':
      return !evalFilter(node.operand, value);
    case 'exists':
      return lookup(value, node.path) !== MISSING;
    case 'compare': {
      const field = lookup(value, node.path);
      if (node.op === '=') return field !== MISSING && jsonEqual(field, node.literal);
      if (node.op === '!=') return field === MISSING || !jsonEqual(field, node.literal);
      const lit = node.literal;
      const bothNumbers = typeof field === 'number' && typeof lit === 'number';
      const bothStrings = typeof field === 'string' && typeof lit === 'string';
      if (!bothNumbers && !bothStrings) return false;
      const a = field as number | string;
      const b = lit as number | string;
      switch (node.op) {
        case '<':
          return a < b;
        case '<=':
          return a <= b;
        case '>':
          return a > b;
        case '>=':
          return a >= b;
      }
    }
  }
}
