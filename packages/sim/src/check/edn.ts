/**
 * A small EDN reader: enough of the Extensible Data Notation to read Jepsen,
 * Knossos and Porcupine histories (nil, booleans, numbers, strings, characters,
 * keywords, symbols, lists, vectors, maps, sets, `#_` discard and tagged values).
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

export class EdnMap {
  constructor(readonly entries: ReadonlyArray<readonly [EdnValue, EdnValue]>) {}
  /** The value under keyword `:name`, or undefined. */
  get(name: string): EdnValue | undefined {
    const k = Keyword.of(name);
    for (const [key, value] of this.entries) if (key === k) return value;
    return undefined;
  }
}

export class EdnSet {
  constructor(readonly items: readonly EdnValue[]) {}
}

export class EdnTagged {
  constructor(
    readonly tag: string,
    readonly value: EdnValue,
  ) {}
}

export type EdnValue =
  | null
  | boolean
  | number
  | string
  | Keyword
  | EdnSymbol
  | EdnMap
  | EdnSet
  | EdnTagged
  | readonly EdnValue[];

const MAX_DEPTH = 256;

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
      case ':':
        this.pos++;
        return Keyword.of(this.readToken());
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
    this.pos++;
    const tag = this.readToken();
    if (tag === '') throw new DecodeError("'#' without a tag", start);
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

  private readChar(): string {
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
      const m = /^([+-]?\d+)N?$/.exec(token);
      if (m) return Number(m[1]);
      const f = /^([+-]?\d+(\.\d*)?([eE][+-]?\d+)?)M?$/.exec(token);
      if (f) return Number(f[1]);
      const ratio = /^([+-]?\d+)\/(\d+)$/.exec(token);
      if (ratio) return Number(ratio[1]) / Number(ratio[2]);
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
