/**
 * Parsers for recorded histories:
 *
 * - `jepsen-log`: Porcupine's etcd logs, lines `INFO  jepsen.util - P\t:type\t:f\tvalue`.
 *   Lines of any other shape are ignored. A value that is a keyword (`:timed-out`)
 *   becomes `error` with a `null` value.
 * - `knossos-edn`: one EDN vector or list of maps `{:process P, :type T, :f F, :value V}`.
 * - `edn-lines`: EDN maps one after another (Porcupine's kv logs, with `:key`).
 *
 * Entries whose `:process` is not a number or string (`:nemesis`) are skipped.
 * `:time` (nanoseconds), when present, becomes `timeMs`; it is never used for ordering.
 */
import { DecodeError } from '@parley/interface';
import { EdnMap, EdnSet, EdnSymbol, EdnTagged, type EdnValue, Keyword, readEdn, readEdnAll } from './edn.js';
import type { EventType, HistoryEvent, HistoryValue, ProcessId } from './history.js';

export type HistoryFormat = 'jepsen-log' | 'knossos-edn' | 'edn-lines';

export interface ParsedHistory {
  readonly format: HistoryFormat;
  readonly events: HistoryEvent[];
}

const EVENT_TYPES: ReadonlySet<string> = new Set(['invoke', 'ok', 'fail', 'info']);
const JEPSEN_LINE = /^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:([^\s]+)\s+(.*?)\s*$/;

/** Converts an EDN value to a history value: keywords and symbols become their names, sets arrays. */
export function ednToValue(v: EdnValue, depth = 0): HistoryValue {
  if (depth > 256) throw new DecodeError('value nested too deeply');
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
  if (v instanceof Keyword) return v.name;
  if (v instanceof EdnSymbol) return v.name;
  if (v instanceof EdnTagged) return ednToValue(v.value, depth + 1);
  if (v instanceof EdnSet) return v.items.map((x) => ednToValue(x, depth + 1));
  if (v instanceof EdnMap) {
    const out: Record<string, HistoryValue> = {};
    for (const [k, x] of v.entries) {
      const name = k instanceof Keyword || k instanceof EdnSymbol ? k.name : String(ednToValue(k, depth + 1));
      out[name] = ednToValue(x, depth + 1);
    }
    return out;
  }
  return v.map((x) => ednToValue(x, depth + 1));
}

function nameOf(v: EdnValue | undefined): string | undefined {
  if (v instanceof Keyword || v instanceof EdnSymbol) return v.name;
  if (typeof v === 'string') return v;
  return undefined;
}

function eventFromMap(m: EdnMap, index: number): HistoryEvent | undefined {
  const p = m.get('process');
  if (typeof p !== 'number' && typeof p !== 'string') return undefined; // :nemesis and friends
  const type = nameOf(m.get('type'));
  if (type === undefined || !EVENT_TYPES.has(type)) {
    throw new DecodeError(`event ${index} has no :type among invoke/ok/fail/info`);
  }
  const f = nameOf(m.get('f'));
  if (f === undefined) throw new DecodeError(`event ${index} has no :f`);
  const time = m.get('time');
  const key = m.get('key');
  const error = m.get('error');
  const event: { -readonly [K in keyof HistoryEvent]: HistoryEvent[K] } = {
    type: type as EventType,
    process: p as ProcessId,
    timeMs: typeof time === 'number' ? time / 1_000_000 : index,
    f,
    value: ednToValue(m.get('value') ?? null),
  };
  if (key !== undefined && key !== null) {
    event.key = typeof key === 'string' ? key : JSON.stringify(ednToValue(key));
  }
  if (error !== undefined && error !== null) {
    const e = ednToValue(error);
    event.error = typeof e === 'string' ? e : JSON.stringify(e);
  }
  return event;
}

function eventsFromForms(forms: readonly EdnValue[]): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const form of forms) {
    if (!(form instanceof EdnMap)) throw new DecodeError(`history entry ${events.length} is not a map`);
    const e = eventFromMap(form, events.length);
    if (e !== undefined) events.push(e);
  }
  return events;
}

/** Parses a Jepsen/Porcupine etcd log. Lines that are not history events are ignored. */
export function parseJepsenLog(text: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const line of text.split('\n')) {
    const m = JEPSEN_LINE.exec(line);
    if (!m) continue;
    const raw = m[4] === '' ? null : readEdnValueOrUndefined(m[4]!);
    if (raw === undefined) continue; // not a value we understand: not a history line
    const event: { -readonly [K in keyof HistoryEvent]: HistoryEvent[K] } = {
      type: m[2] as EventType,
      process: Number(m[1]),
      timeMs: events.length,
      f: m[3]!,
      value: raw instanceof Keyword ? null : ednToValue(raw),
    };
    if (raw instanceof Keyword) event.error = raw.name;
    events.push(event);
  }
  return events;
}

function readEdnValueOrUndefined(text: string): EdnValue | undefined {
  try {
    return readEdn(text);
  } catch (err) {
    if (err instanceof DecodeError) return undefined;
    throw err;
  }
}

/** Parses Knossos EDN (one vector/list of maps) or EDN lines (one map per form). */
export function parseEdnHistory(text: string): { format: 'knossos-edn' | 'edn-lines'; events: HistoryEvent[] } {
  const forms = readEdnAll(text);
  if (forms.length === 1 && Array.isArray(forms[0])) {
    return { format: 'knossos-edn', events: eventsFromForms(forms[0] as readonly EdnValue[]) };
  }
  return { format: 'edn-lines', events: eventsFromForms(forms) };
}

/** Detects the format of a history text and parses it. Throws `DecodeError` on malformed input. */
export function parseHistory(text: string, format: HistoryFormat | 'auto' = 'auto'): ParsedHistory {
  if (format === 'jepsen-log' || (format === 'auto' && /^\s*INFO\s+jepsen\.util\b/m.test(text))) {
    return { format: 'jepsen-log', events: parseJepsenLog(text) };
  }
  const parsed = parseEdnHistory(text);
  if (format !== 'auto' && parsed.format !== format) {
    throw new DecodeError(`expected ${format}, found ${parsed.format}`);
  }
  return parsed;
}
