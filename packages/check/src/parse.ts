/**
 * Parsers for recorded histories:
 *
 * - `knossos-edn`: one EDN vector or list of maps `{:process P, :type T, :f F, :value V}`.
 * - `edn-lines`: EDN maps one after another (Porcupine's kv logs, with `:key`), or
 *   Jepsen's newer `#jepsen.history.Op{…}` records.
 * - `jepsen-log`: Porcupine's etcd logs, lines `INFO  jepsen.util - P\t:type\t:f\tvalue`.
 *   Lines without `jepsen.util - ` are ignored; a `jepsen.util` line that starts like
 *   an event (a process, then a keyword) must parse, or the file is refused. On a
 *   `fail` or `info` line, a value that is a keyword (`:timed-out`) becomes `error`
 *   with a `null` value; elsewhere a keyword is a value.
 *
 * The format is chosen by the file's structure (its first form), never by a line
 * that merely looks like a log inside a string; `format` forces one.
 *
 * Every client entry needs `:process` (an integer or a string), `:type`
 * (invoke/ok/fail/info) and `:f`. `:value` is optional, as in Jepsen's own
 * histories (a mutex's `:acquire` carries none): an absent `:value` reads as
 * `nil`, unless the entry has a key that looks like a misspelling of it. An entry whose
 * `:process` is a keyword (`:nemesis`) is skipped. Anything else is refused with a
 * `DecodeError` naming the entry and the problem (a misspelled key is named too):
 * a history that cannot be read exactly is never checked.
 *
 * A file with no client operation at all (empty, blank, `[]`, only nemesis
 * entries) is refused too: "0 operations" is not a verdict.
 *
 * `:time` (nanoseconds), when present, becomes `timeMs`; it is never used for ordering.
 */
import { DecodeError } from '@parley/interface';
import {
  EdnChar,
  EdnDecimal,
  EdnDouble,
  EdnMap,
  EdnRatio,
  EdnSet,
  EdnSymbol,
  EdnTagged,
  type EdnValue,
  Keyword,
  readEdn,
  readEdnAll,
} from './edn.js';
import type { EventType, HistoryEvent, HistoryValue, ProcessId } from './history.js';
import { canonicalText } from './value.js';

export type HistoryFormat = 'jepsen-log' | 'knossos-edn' | 'edn-lines';

/** Every format `parseHistory` reads, for `--format`. */
export const HISTORY_FORMATS: readonly HistoryFormat[] = ['knossos-edn', 'edn-lines', 'jepsen-log'];

export interface ParseOptions {
  /** The file's format; `auto` (default) decides by the file's structure. */
  readonly format?: HistoryFormat | 'auto';
  /**
   * Jepsen's independent keys: every event's value is a tuple `[k v]`; the event
   * becomes `v` on key `k` (so models check each key on its own). Default false.
   */
  readonly independent?: boolean;
}

export interface ParsedHistory {
  readonly format: HistoryFormat;
  readonly events: HistoryEvent[];
}

const EVENT_TYPES: ReadonlySet<string> = new Set(['invoke', 'ok', 'fail', 'info']);
const JEPSEN_PREFIX = /jepsen\.util\s+-\s+/;
/** After the prefix, an event starts with a process (an integer or a keyword) and a keyword, or names an event type. */
const JEPSEN_EVENT_START = /^(\d+|:\S+)\s+:\S|(^|\s):(invoke|ok|fail|info)(\s|$)/;
const JEPSEN_EVENT = /^(\d+|:\S+)\s+:(invoke|ok|fail|info)\s+:(\S+)(?:\s+(.*?))?\s*$/;
/** Keys of a history entry, for naming a misspelling. */
const ENTRY_KEYS = ['process', 'type', 'f', 'value', 'key', 'time', 'error', 'index'];
/** Bound on the events of one history (a history this long cannot be searched anyway). */
export const MAX_HISTORY_EVENTS = 10_000_000;

/**
 * Decodes a history file's bytes: strict UTF-8 (invalid bytes are refused, never
 * replaced, so different byte strings never read as equal), a leading BOM dropped.
 */
export function decodeHistoryBytes(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new DecodeError('the file is not valid UTF-8');
  }
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Converts an EDN value to a history value: a map with keyword keys becomes an object; everything else keeps its type. */
export function ednToValue(v: EdnValue, depth = 0): HistoryValue {
  if (depth > 256) throw new DecodeError('value nested too deeply');
  if (v === null || typeof v !== 'object') return v;
  if (
    v instanceof Keyword ||
    v instanceof EdnSymbol ||
    v instanceof EdnDouble ||
    v instanceof EdnChar ||
    v instanceof EdnRatio ||
    v instanceof EdnDecimal
  ) {
    return v;
  }
  if (v instanceof EdnTagged) return new EdnTagged<HistoryValue>(v.tag, ednToValue(v.value, depth + 1));
  if (v instanceof EdnSet) {
    const items = v.items.map((x) => ednToValue(x, depth + 1));
    const seen = new Set<string>();
    for (const x of items) {
      const k = canonicalText(x);
      if (seen.has(k)) throw new DecodeError(`set with duplicate item ${k}`);
      seen.add(k);
    }
    return new EdnSet<HistoryValue>(items);
  }
  if (v instanceof EdnMap) {
    const seen = new Set<string>();
    const entries: [HistoryValue, HistoryValue][] = [];
    for (const [k, x] of v.entries) {
      const key = ednToValue(k, depth + 1);
      const text = canonicalText(key);
      if (seen.has(text)) throw new DecodeError(`map with duplicate key ${text}`);
      seen.add(text);
      entries.push([key, ednToValue(x, depth + 1)]);
    }
    if (entries.every(([k]) => k instanceof Keyword)) {
      const out: Record<string, HistoryValue> = Object.create(null);
      for (const [k, x] of entries) out[(k as Keyword).name] = x;
      return out;
    }
    return new EdnMap<HistoryValue>(entries);
  }
  return v.map((x) => ednToValue(x, depth + 1));
}

function nameOf(v: EdnValue | undefined): string | undefined {
  if (v instanceof Keyword || v instanceof EdnSymbol) return v.name;
  if (typeof v === 'string') return v;
  return undefined;
}

/** Edit distance with transpositions (optimal string alignment); names are short. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** A keyword of the entry that looks like a misspelling of `name` (none for one-letter names). */
function nearMiss(m: EdnMap, name: string, maxDistance: number): string | undefined {
  if (name.length <= 2) return undefined;
  for (const [k] of m.entries) {
    if (k instanceof Keyword && !ENTRY_KEYS.includes(k.name) && distance(k.name, name) <= maxDistance) return k.name;
  }
  return undefined;
}

/** Why `name` is missing from an entry: a misspelled key, or string keys (JSON-style). */
function missing(index: number, m: EdnMap, name: string): DecodeError {
  if (m.entries.some(([k]) => k === name)) {
    return new DecodeError(`entry ${index}: keys are strings ("${name}"), not keywords (:${name}): is this JSON?`);
  }
  const miss = nearMiss(m, name, 2);
  if (miss !== undefined) return new DecodeError(`entry ${index} has :${miss} but no :${name} (misspelled?)`);
  return new DecodeError(`entry ${index} has no :${name}`);
}

/** The map of an entry: a map, or a record such as `#jepsen.history.Op{…}`. */
function entryMap(form: EdnValue, index: number): EdnMap {
  if (form instanceof EdnMap) return form;
  if (form instanceof EdnTagged && form.value instanceof EdnMap) return form.value;
  throw new DecodeError(`entry ${index} is not a map`);
}

function eventFromMap(m: EdnMap, index: number): HistoryEvent | undefined {
  const seen = new Set<EdnValue>();
  for (const [k] of m.entries) {
    if (k instanceof Keyword) {
      if (seen.has(k)) throw new DecodeError(`entry ${index} has :${k.name} twice`);
      seen.add(k);
    }
  }
  const p = m.get('process');
  if (p === undefined) throw missing(index, m, 'process');
  if (p instanceof Keyword) return undefined; // :nemesis and friends
  if (!(typeof p === 'number' && Number.isSafeInteger(p)) && typeof p !== 'string') {
    throw new DecodeError(`entry ${index}: :process must be an integer, a string or a keyword`);
  }
  const typeForm = m.get('type');
  if (typeForm === undefined) throw missing(index, m, 'type');
  const type = nameOf(typeForm);
  if (type === undefined || !EVENT_TYPES.has(type)) {
    throw new DecodeError(`entry ${index}: :type must be one of :invoke :ok :fail :info`);
  }
  const fForm = m.get('f');
  if (fForm === undefined) throw missing(index, m, 'f');
  const f = nameOf(fForm);
  if (f === undefined || f === '') throw new DecodeError(`entry ${index}: :f must be a keyword`);
  const valueForm = m.get('value') ?? null;
  const time = m.get('time');
  const key = m.get('key');
  const error = m.get('error');
  // Optional keys that change a verdict: a misspelling would silently move the call to
  // another key, or turn an observed error into one that is dropped.
  for (const [name, present, maxDistance] of [
    ['value', m.get('value'), 2],
    ['key', key, 1],
    ['error', error, 1],
  ] as const) {
    const miss = present === undefined ? nearMiss(m, name, maxDistance) : undefined;
    if (miss !== undefined) throw new DecodeError(`entry ${index} has :${miss} but no :${name} (misspelled?)`);
  }
  const event: { -readonly [K in keyof HistoryEvent]: HistoryEvent[K] } = {
    type: type as EventType,
    process: p as ProcessId,
    timeMs: typeof time === 'number' ? time / 1_000_000 : index,
    f,
    value: ednToValue(valueForm),
  };
  if (key !== undefined && key !== null) (event as { keyValue?: HistoryValue }).keyValue = ednToValue(key);
  if (error !== undefined && error !== null) {
    const e = error instanceof Keyword ? error.name : ednToValue(error);
    event.error = typeof e === 'string' ? e : canonicalText(e);
  }
  return event;
}

/** Keys as strings: as they are when every key is a string, else each key's canonical EDN text. */
function assignKeys(events: (HistoryEvent & { keyValue?: HistoryValue })[]): HistoryEvent[] {
  const allStrings = events.every((e) => e.keyValue === undefined || typeof e.keyValue === 'string');
  return events.map((e) => {
    if (!('keyValue' in e)) return e;
    const { keyValue, ...rest } = e;
    return { ...rest, key: allStrings ? (keyValue as string) : canonicalText(keyValue as HistoryValue) };
  });
}

function eventsFromForms(forms: readonly EdnValue[]): HistoryEvent[] {
  if (forms.length > MAX_HISTORY_EVENTS) throw new DecodeError(`more than ${MAX_HISTORY_EVENTS} entries`);
  const events: HistoryEvent[] = [];
  for (let i = 0; i < forms.length; i++) {
    const e = eventFromMap(entryMap(forms[i]!, i), i);
    if (e !== undefined) events.push(e);
  }
  return assignKeys(events);
}

/**
 * Parses a Jepsen/Porcupine etcd log. Lines without `jepsen.util - ` are ignored;
 * a `jepsen.util` line that starts like an event must be one.
 */
export function parseJepsenLog(text: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  const lines = stripBom(text).split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    const prefix = JEPSEN_PREFIX.exec(line);
    if (!prefix) continue;
    const rest = line.slice(prefix.index + prefix[0].length);
    if (!JEPSEN_EVENT_START.test(rest)) continue; // another jepsen.util message
    const m = JEPSEN_EVENT.exec(rest);
    if (!m) throw new DecodeError(`line ${n + 1}: not a history event: ${JSON.stringify(line.slice(0, 120))}`);
    if (m[1]!.startsWith(':')) continue; // :nemesis
    let raw: EdnValue;
    try {
      raw = m[4] === undefined || m[4] === '' ? null : readEdn(m[4]);
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
      throw new DecodeError(`line ${n + 1}: unreadable value ${JSON.stringify(m[4]!.slice(0, 80))}: ${err.message}`);
    }
    const process = Number(m[1]);
    if (!Number.isSafeInteger(process)) throw new DecodeError(`line ${n + 1}: process out of range`);
    // On a fail or info line, a keyword (`:timed-out`) is the error; elsewhere it is a value.
    const isError = raw instanceof Keyword && (m[2] === 'fail' || m[2] === 'info');
    const event: { -readonly [K in keyof HistoryEvent]: HistoryEvent[K] } = {
      type: m[2] as EventType,
      process,
      timeMs: events.length,
      f: m[3]!,
      value: isError ? null : ednToValue(raw),
    };
    if (isError) event.error = (raw as Keyword).name;
    events.push(event);
    if (events.length > MAX_HISTORY_EVENTS) throw new DecodeError(`more than ${MAX_HISTORY_EVENTS} events`);
  }
  return events;
}

/** Parses Knossos EDN (one vector/list of maps) or EDN lines (one map or record per form). */
export function parseEdnHistory(text: string): { format: 'knossos-edn' | 'edn-lines'; events: HistoryEvent[] } {
  const forms = readEdnAll(stripBom(text));
  if (forms.length === 1 && Array.isArray(forms[0])) {
    return { format: 'knossos-edn', events: eventsFromForms(forms[0] as readonly EdnValue[]) };
  }
  if (forms.some((f) => Array.isArray(f)))
    throw new DecodeError('a history holds one vector, or maps one after another');
  return { format: 'edn-lines', events: eventsFromForms(forms) };
}

/**
 * The format of a history text, from its structure: its first form (after
 * white space and `;` comments) is a vector or list (`knossos-edn`), a map or a
 * tagged record (`edn-lines`); otherwise a text with `jepsen.util` event lines is
 * a `jepsen-log`. Throws `DecodeError` when it is none of these.
 */
export function detectFormat(text: string): HistoryFormat {
  const t = stripBom(text);
  let i = 0;
  while (i < t.length) {
    const c = t[i]!;
    if (c === ';') {
      while (i < t.length && t[i] !== '\n') i++;
    } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === ',' || c === '\f') {
      i++;
    } else {
      break;
    }
  }
  if (i >= t.length) throw new DecodeError('the file is empty: it holds no history');
  const c = t[i]!;
  if (c === '[' || c === '(') return 'knossos-edn';
  if (c === '{' || c === '#') return 'edn-lines';
  if (/jepsen\.util\s+-\s+/.test(t)) return 'jepsen-log';
  throw new DecodeError(`not a history: expected an EDN vector, EDN maps or a Jepsen log (found ${JSON.stringify(c)})`);
}

/**
 * Detects the format of a history text (or takes the one given) and parses it.
 * Throws `DecodeError` on malformed input and on a history with no client operation.
 * The second argument is the format, or options.
 */
export function parseHistory(text: string, options: HistoryFormat | 'auto' | ParseOptions = 'auto'): ParsedHistory {
  const opts: ParseOptions = typeof options === 'string' ? { format: options } : options;
  const wanted = opts.format ?? 'auto';
  let format = wanted === 'auto' ? detectFormat(text) : wanted;
  let events: HistoryEvent[];
  if (format === 'jepsen-log') {
    events = parseJepsenLog(text);
  } else {
    const parsed = parseEdnHistory(text);
    if (wanted !== 'auto' && parsed.format !== format)
      throw new DecodeError(`expected ${format}, found ${parsed.format}`);
    format = parsed.format; // a leading `#_` discard or tag may hide a vector
    events = parsed.events;
  }
  if (events.length === 0) throw new DecodeError(`no client operations in this ${format} history`);
  if (opts.independent) events = splitIndependentKeys(events);
  return { format, events };
}

/**
 * Jepsen's independent keys: each event's value is `[k v]`; returns the events with
 * `key` = k (its text when every k is a string, else its canonical EDN text) and
 * `value` = v. Throws `DecodeError` when a value is not a pair, or a completion
 * names another key than its call.
 */
export function splitIndependentKeys(events: readonly HistoryEvent[]): HistoryEvent[] {
  const open = new Map<ProcessId, { key: HistoryValue; text: string }>();
  const split: (HistoryEvent & { keyValue: HistoryValue })[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const v = e.value;
    const called = e.type === 'invoke' ? undefined : open.get(e.process);
    let k: HistoryValue;
    let inner: HistoryValue;
    if (Array.isArray(v) && v.length === 2) {
      k = v[0] as HistoryValue;
      inner = v[1] as HistoryValue;
    } else if (called !== undefined && v === null && e.type !== 'ok') {
      // A failed or crashed call that reports no value stays on its call's key.
      k = called.key;
      inner = null;
    } else {
      throw new DecodeError(`event ${i}: an independent history needs values [key value], got ${canonicalText(v)}`);
    }
    const text = canonicalText(k);
    if (e.type === 'invoke') {
      open.set(e.process, { key: k, text });
    } else {
      if (called !== undefined && called.text !== text) {
        throw new DecodeError(`event ${i}: completes a call on key ${called.text} with key ${text}`);
      }
      open.delete(e.process);
    }
    const { key: _ignored, ...rest } = e;
    split.push({ ...rest, value: inner, keyValue: k });
  }
  return assignKeys(split);
}
