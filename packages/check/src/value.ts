/**
 * Equality of history values, as Clojure's `=` decides it, and the canonical text
 * that the checker keys its memo and its partitions on.
 *
 * - Types matter: `1` ≠ `1.0` (integer, double), `:a` ≠ `"a"` ≠ `a` (keyword,
 *   string, symbol), `\a` ≠ `"a"`, `"[1]"` ≠ `[1]`, `#{1}` ≠ `[1]`, `1/2` ≠ `0.5`.
 * - Within a category, numbers compare by value: `1 = 1N`, `0.0 = -0.0`,
 *   `1.5M = 1.50M`; integers beyond 2^53 compare exactly (they are `bigint`s).
 * - Lists and vectors with equal items are equal (`[1 2] = (1 2)`); maps compare by
 *   entries whatever their order; a JavaScript object is a map with keyword keys.
 * - `##NaN` equals nothing, itself included (as in Clojure).
 *
 * A JavaScript `number` is an integer when `Number.isInteger`, else a double;
 * `EdnDouble` carries a double read from EDN (so `1.0` stays a double).
 *
 * The canonical text is EDN: equal values have the same text, and values with the
 * same text are equal (NaN aside, which behaves the same wherever it is).
 */
import { DecodeError } from '@parley/interface';
import { EdnChar, EdnDecimal, EdnDouble, EdnMap, EdnRatio, EdnSet, EdnSymbol, EdnTagged, Keyword } from './edn.js';
import type { HistoryValue } from './history.js';

const KEYWORD_NAME = /^[A-Za-z*+!_?<>=-][A-Za-z0-9*+!_?<>=.#'-]*(\/[A-Za-z0-9*+!_?<>=.#'-]+)?$/;

function keywordText(name: string): string {
  return KEYWORD_NAME.test(name) ? `:${name}` : `:${JSON.stringify(name)}`;
}

function doubleText(x: number): string {
  if (Number.isNaN(x)) return '##NaN';
  if (x === Number.POSITIVE_INFINITY) return '##Inf';
  if (x === Number.NEGATIVE_INFINITY) return '##-Inf';
  if (x === 0) return '0.0'; // -0.0 = 0.0
  const s = String(x);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

function integerText(n: number | bigint): string {
  return typeof n === 'bigint' || !Number.isSafeInteger(n) ? BigInt(n).toString() : String(n);
}

function decimalText(d: EdnDecimal): string {
  return `${d.unscaled}E${-d.scale}M`;
}

function isPlainObject(v: unknown): v is { readonly [field: string]: HistoryValue } {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * The canonical EDN text of a value: maps and sets sorted, numbers in one form per
 * value. Throws `DecodeError` on something that is not a history value.
 */
export function canonicalText(value: HistoryValue | undefined): string {
  const v = value as unknown;
  if (v === null || v === undefined) return 'nil';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      return Number.isInteger(v) ? integerText(v) : doubleText(v);
    case 'bigint':
      return v.toString();
    case 'string':
      return JSON.stringify(v);
    case 'object':
      break;
    default:
      throw new DecodeError(`not a history value: ${typeof v}`);
  }
  if (Array.isArray(v)) return `[${v.map((x) => canonicalText(x as HistoryValue)).join(' ')}]`;
  if (v instanceof Keyword) return keywordText(v.name);
  if (v instanceof EdnSymbol) return v.name;
  if (v instanceof EdnDouble) return doubleText(v.value);
  if (v instanceof EdnChar) return `\\${JSON.stringify(v.char)}`;
  if (v instanceof EdnRatio) return `${v.numerator}/${v.denominator}`;
  if (v instanceof EdnDecimal) return decimalText(v);
  if (v instanceof EdnSet) {
    return `#{${(v.items as HistoryValue[])
      .map((x) => canonicalText(x))
      .sort()
      .join(' ')}}`;
  }
  if (v instanceof EdnMap) {
    return mapText((v.entries as [HistoryValue, HistoryValue][]).map(([k, x]) => [canonicalText(k), x]));
  }
  if (v instanceof EdnTagged) return `#${v.tag} ${canonicalText(v.value as HistoryValue)}`;
  if (isPlainObject(v)) return mapText(Object.keys(v).map((k) => [keywordText(k), v[k]!]));
  throw new DecodeError(`not a history value: ${Object.prototype.toString.call(v)}`);
}

function mapText(entries: [string, HistoryValue][]): string {
  const parts = entries.map(([k, x]) => `${k} ${canonicalText(x)}`);
  parts.sort();
  return `{${parts.join(', ')}}`;
}

/** True when `v` holds a NaN anywhere (NaN is equal to nothing). */
function holdsNaN(text: string): boolean {
  return text.includes('##NaN');
}

/** Clojure's `=` on history values (see the module comment). */
export function sameValue(a: HistoryValue, b: HistoryValue): boolean {
  // Fast paths for the common scalar cases.
  const ta = typeof a;
  if (ta === typeof b && ta !== 'object') {
    if (ta === 'number') return a === b; // same number: same category (NaN !== NaN)
    if (ta === 'bigint') return a === b;
    return a === b;
  }
  if (a === null || b === null) return a === b;
  const ka = canonicalText(a);
  if (ka !== canonicalText(b)) return false;
  return !holdsNaN(ka) || !mayHoldNaNValue(a);
}

function mayHoldNaNValue(v: HistoryValue): boolean {
  // The text `##NaN` may come from a string; only a real NaN makes values unequal.
  const x = v as unknown;
  if (typeof x === 'number') return Number.isNaN(x);
  if (x instanceof EdnDouble) return Number.isNaN(x.value);
  if (Array.isArray(x)) return x.some((i) => mayHoldNaNValue(i as HistoryValue));
  if (x instanceof EdnSet) return (x.items as HistoryValue[]).some((i) => mayHoldNaNValue(i));
  if (x instanceof EdnMap) {
    return (x.entries as [HistoryValue, HistoryValue][]).some(([k, i]) => mayHoldNaNValue(k) || mayHoldNaNValue(i));
  }
  if (x instanceof EdnTagged) return mayHoldNaNValue(x.value as HistoryValue);
  if (isPlainObject(x)) return Object.values(x).some((i) => mayHoldNaNValue(i));
  return false;
}

/**
 * A memo key for a value: the value itself when a JavaScript primitive can stand
 * for it without colliding with another type, its canonical text otherwise. The
 * two kinds must be kept in separate tables (see `StateInterner`).
 */
export function primitiveKey(v: unknown): number | string | boolean | null | undefined {
  switch (typeof v) {
    case 'number':
      return v; // integers and doubles are distinct numbers; Map keys treat -0 as 0 and NaN as NaN
    case 'string':
    case 'boolean':
      return v;
    case 'object':
      if (v === null) return null;
      if (v instanceof EdnDouble && !Number.isInteger(v.value)) return v.value;
      return undefined;
    default:
      return undefined;
  }
}

/** Interns states to small integers: equal ids mean equal states. */
export class StateInterner<S> {
  private readonly primitives = new Map<unknown, number>();
  private readonly composites = new Map<string, number>();
  private count = 0;
  private keyBytes = 0;

  constructor(private readonly key?: (s: S) => string | number | boolean | null) {}

  get size(): number {
    return this.count;
  }

  /** An estimate of the bytes the table holds (keys and entries), for memory caps. */
  get bytes(): number {
    return this.keyBytes + 48 * this.count;
  }

  intern(state: S): number {
    let table: Map<unknown, number>;
    let k: unknown;
    if (this.key !== undefined) {
      table = this.primitives;
      k = this.key(state);
    } else {
      k = primitiveKey(state);
      if (k === undefined) {
        table = this.composites;
        k = canonicalText(state as HistoryValue);
      } else {
        table = this.primitives;
      }
    }
    let id = table.get(k);
    if (id === undefined) {
      id = this.count++;
      table.set(k, id);
      if (typeof k === 'string') this.keyBytes += 2 * k.length;
    }
    return id;
  }
}
