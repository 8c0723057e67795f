/**
 * A small EDN reader: enough of the Extensible Data Notation to read Jepsen,
 * Knossos and Porcupine histories (nil, booleans, numbers, strings, characters,
 * keywords, symbols, lists, vectors, maps, sets, `#_` discard, tagged values and
 * records such as `#jepsen.history.Op{…}`, `##Inf`/`##-Inf`/`##NaN`).
 *
 * Numbers keep the type Clojure reads them as: an integer is a `number` when it is
 * a safe integer and a `bigint` beyond (`9007199254740993`, `…N`); a float is an
 * `EdnDouble` (so `1.0` is not `1`), `1/2` an `EdnRatio`, `1.5M` an `EdnDecimal`;
 * `\a` is an `EdnChar` (not the string `"a"`).
 *
 * It reads untrusted text: malformed input throws `DecodeError` (with the offset),
 * nesting is bounded, and memory stays proportional to the input.
 */
import { DecodeError } from '@parley/interface';

/** `:name` — interned, so keywords compare with `===`. */
export class Keyword {
  private static readonly table = new Map<string, Keyword>();
  private constructor(readonly name: string) {}
  static of(name: string): Keyword {
    let k = Keyword.table.get(name);
    if (k === undefined) {
      k = new Keyword(name);
      Keyword.table.set(name, k);
    }
    return k;
  }
  toString(): string {
    return `:${this.name}`;
  }
}

export class EdnSymbol {
  constructor(readonly name: string) {}
}

/** A floating-point number (Clojure's double): `1.0`, `2.5e3`, `##Inf`, `##NaN`. Never equal to an integer. */
export class EdnDouble {
  constructor(readonly value: number) {}
}

/** A character literal `\a`: not equal to the one-character string. */
export class EdnChar {
  constructor(readonly char: string) {}
}

/** A ratio `n/d` in lowest terms, `d > 1` (a whole ratio reads as an integer, as in Clojure). */
export class EdnRatio {
  constructor(
    readonly numerator: bigint,
    readonly denominator: bigint,
  ) {}
}

/** A decimal `1.50M`, kept as `unscaled × 10^-scale` with trailing zeros removed (`1.5M = 1.50M`). */
export class EdnDecimal {
  constructor(
    readonly unscaled: bigint,
    readonly scale: number,
  ) {}
}

export class EdnMap<V = EdnValue> {
  constructor(readonly entries: ReadonlyArray<readonly [V, V]>) {}
  /** The value under keyword `:name`, or undefined. */
  get(name: string): V | undefined {
    const k = Keyword.of(name);
    for (const [key, value] of this.entries) if ((key as unknown) === k) return value;
    return undefined;
  }
}

export class EdnSet<V = EdnValue> {
  constructor(readonly items: readonly V[]) {}
}

/** `#tag value`, and records `#ns.Name{…}` (tag `ns.Name`, value the map). */
export class EdnTagged<V = EdnValue> {
  constructor(
    readonly tag: string,
    readonly value: V,
  ) {}
}

export type EdnValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Keyword
  | EdnSymbol
  | EdnDouble
  | EdnChar
  | EdnRatio
  | EdnDecimal
  | EdnMap
  | EdnSet
  | EdnTagged
  | readonly EdnValue[];

const MAX_DEPTH = 256;
/** Longest number token read (bounds bigint arithmetic on hostile input). */
const MAX_NUMBER_CHARS = 1000;
const SYMBOLIC: Record<string, number> = {
  Inf: Number.POSITIVE_INFINITY,
  '-Inf': Number.NEGATIVE_INFINITY,
  NaN: Number.NaN,
};

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An integer: a `number` when safe, a `bigint` beyond. */
function integer(n: bigint): number | bigint {
  return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

function rational(num: bigint, den: bigint, at: number): number | bigint | EdnRatio {
  if (den === 0n) throw new DecodeError('EDN ratio with a zero denominator', at);
  const g = gcd(num, den);
  const n = num / g;
  const d = den / g;
  return d === 1n ? integer(n) : new EdnRatio(n, d);
}

function decimal(negative: boolean, whole: string, frac: string, exponent: number, at: number): EdnDecimal {
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 10_000)
    throw new DecodeError('EDN decimal exponent out of range', at);
  let unscaled = BigInt(whole + frac);
  let scale = frac.length - exponent;
  while (unscaled !== 0n && unscaled % 10n === 0n) {
    unscaled /= 10n;
    scale--;
  }
  if (unscaled === 0n) scale = 0;
  return new EdnDecimal(negative ? -unscaled : unscaled, scale);
}

const DELIMITERS = new Set(['(', ')', '[', ']', '{', '}', '"', ';', '\\']);
const NAMED_CHARS: Record<string, string> = { newline: '\n', return: '\r', space: ' ', tab: '\t' };

function isWhitespace(c: number): boolean {
  // space, tab, newline, return, form feed, comma
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 44;
}

class Reader {
  pos = 0;
  constructor(private readonly text: string) {}

  skipSpace(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (isWhitespace(c)) this.pos++;
      else if (c === 59) {
        // ';' comment to end of line
        while (this.pos < t.length && t.charCodeAt(this.pos) !== 10) this.pos++;
      } else break;
    }
  }

  atEnd(): boolean {
    this.skipSpace();
    return this.pos >= this.text.length;
  }

  read(depth: number): EdnValue {
    if (depth > MAX_DEPTH) throw new DecodeError(`EDN nested deeper than ${MAX_DEPTH}`, this.pos);
    this.skipSpace();
    const t = this.text;
    if (this.pos >= t.length) throw new DecodeError('unexpected end of EDN', this.pos);
    const c = t[this.pos]!;
    switch (c) {
      case '(':
        this.pos++;
        return this.readSeq(')', depth);
      case '[':
        this.pos++;
        return this.readSeq(']', depth);
      case '{': {
        const start = this.pos++;
        const items = this.readSeq('}', depth);
        if (items.length % 2 !== 0) throw new DecodeError('EDN map with an odd number of forms', start);
        const entries: [EdnValue, EdnValue][] = [];
        for (let i = 0; i < items.length; i += 2) entries.push([items[i]!, items[i + 1]!]);
        return new EdnMap(entries);
      }
      case ')':
      case ']':
      case '}':
        throw new DecodeError(`unexpected '${c}'`, this.pos);
      case '"':
        return this.readString();
      case ':': {
        const start = this.pos++;
        const name = this.readToken();
        if (name === '' || name.startsWith(':')) throw new DecodeError('bad EDN keyword', start);
        return Keyword.of(name);
      }
      case '\\':
        return this.readChar();
      case '#':
        return this.readDispatch(depth);
      default:
        return this.readAtom();
    }
  }

  private readSeq(close: string, depth: number): EdnValue[] {
    const items: EdnValue[] = [];
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.text.length) throw new DecodeError(`missing '${close}'`, this.pos);
      if (this.text[this.pos] === close) {
        this.pos++;
        return items;
      }
      if (this.text.startsWith('#_', this.pos)) {
        this.pos += 2;
        this.read(depth + 1);
        continue;
      }
      items.push(this.read(depth + 1));
    }
  }

  private readDispatch(depth: number): EdnValue {
    const start = this.pos;
    const next = this.text[this.pos + 1];
    if (next === '{') {
      this.pos += 2;
      return new EdnSet(this.readSeq('}', depth));
    }
    if (next === '_') {
      this.pos += 2;
      this.read(depth + 1);
      return this.read(depth);
    }
    if (next === '#') {
      // Symbolic values: ##Inf, ##-Inf, ##NaN.
      this.pos += 2;
      const name = this.readToken();
      const value = SYMBOLIC[name];
      if (value === undefined) throw new DecodeError(`unknown symbolic value ##${name}`, start);
      return new EdnDouble(value);
    }
    this.pos++;
    const tag = this.readToken();
    if (tag === '' || !/^[A-Za-z]/.test(tag)) throw new DecodeError("'#' without a tag", start);
    return new EdnTagged(tag, this.read(depth + 1));
  }

  private readToken(): string {
    const t = this.text;
    const start = this.pos;
    while (this.pos < t.length) {
      const ch = t[this.pos]!;
      if (isWhitespace(ch.charCodeAt(0)) || DELIMITERS.has(ch)) break;
      this.pos++;
    }
    return t.slice(start, this.pos);
  }

  private readString(): string {
    const t = this.text;
    const start = this.pos++;
    let out = '';
    let chunk = this.pos;
    while (this.pos < t.length) {
      const ch = t[this.pos]!;
      if (ch === '"') {
        out += t.slice(chunk, this.pos);
        this.pos++;
        return out;
      }
      if (ch === '\\') {
        out += t.slice(chunk, this.pos);
        const esc = t[this.pos + 1];
        this.pos += 2;
        switch (esc) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case '"':
          case '\\':
          case '/':
            out += esc;
            break;
          case 'u': {
            const hex = t.slice(this.pos, this.pos + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new DecodeError('bad \\u escape in EDN string', this.pos);
            out += String.fromCharCode(Number.parseInt(hex, 16));
            this.pos += 4;
            break;
          }
          default:
            throw new DecodeError('bad escape in EDN string', this.pos - 1);
        }
        chunk = this.pos;
        continue;
      }
      this.pos++;
    }
    throw new DecodeError('unterminated EDN string', start);
  }

  private readChar(): EdnChar {
    return new EdnChar(this.readCharText());
  }

  private readCharText(): string {
    const start = this.pos++;
    if (this.pos >= this.text.length) throw new DecodeError('unexpected end after \\', start);
    // A character literal is at least one character, even a delimiter.
    const first = this.text[this.pos]!;
    this.pos++;
    const rest = this.readToken();
    if (rest === '') return first;
    const name = first + rest;
    const named = NAMED_CHARS[name];
    if (named !== undefined) return named;
    if (/^u[0-9a-fA-F]{4}$/.test(name)) return String.fromCharCode(Number.parseInt(name.slice(1), 16));
    throw new DecodeError(`unknown EDN character \\${name}`, start);
  }

  private readAtom(): EdnValue {
    const start = this.pos;
    const token = this.readToken();
    if (token === '') throw new DecodeError(`unexpected '${this.text[this.pos]}'`, start);
    if (token === 'nil') return null;
    if (token === 'true') return true;
    if (token === 'false') return false;
    if (/^[+-]?\d/.test(token)) {
      if (token.length > MAX_NUMBER_CHARS) throw new DecodeError('EDN number too long', start);
      const m = /^[+-]?\d+N?$/.exec(token);
      if (m) {
        const digits = token.endsWith('N') ? token.slice(0, -1) : token;
        // A decimal integer parses exactly to a safe Number iff its value is safe.
        const n = Number(digits);
        return Number.isSafeInteger(n) ? n : BigInt(digits);
      }
      const dec = /^([+-]?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?M$/.exec(token);
      if (dec) return decimal(dec[1] === '-', dec[2]!, dec[3] ?? '', Number(dec[4] ?? '0'), start);
      const f = /^[+-]?\d+(\.\d*)?([eE][+-]?\d+)?$/.exec(token);
      if (f) return new EdnDouble(Number(token));
      const ratio = /^([+-]?\d+)\/(\d+)$/.exec(token);
      if (ratio) return rational(BigInt(ratio[1]!), BigInt(ratio[2]!), start);
      throw new DecodeError(`bad EDN number '${token}'`, start);
    }
    return new EdnSymbol(token);
  }
}

/** Reads every top-level form of an EDN text. */
export function readEdnAll(text: string): EdnValue[] {
  const reader = new Reader(text);
  const forms: EdnValue[] = [];
  while (!reader.atEnd()) {
    if (text.startsWith('#_', reader.pos)) {
      reader.pos += 2;
      reader.read(1);
      continue;
    }
    forms.push(reader.read(0));
  }
  return forms;
}

/** Reads exactly one EDN form. */
export function readEdn(text: string): EdnValue {
  const forms = readEdnAll(text);
  if (forms.length !== 1) throw new DecodeError(`expected one EDN form, found ${forms.length}`);
  return forms[0]!;
}
