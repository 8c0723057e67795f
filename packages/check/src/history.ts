/**
 * Histories: what clients asked for and what they were told, in real-time order.
 *
 * A history is a list of events. A client (a "process") `invoke`s an operation,
 * then the same process completes it with exactly one of:
 *
 * - `ok`   — it happened; `value` is the result (a read's value, a write's new version, ...).
 * - `fail` — it certainly did not change state. Some models read a `fail` as an
 *            observation (a compare-and-set whose compare failed, a `version_mismatch`);
 *            the others drop it.
 * - `info` — indeterminate (timeout, crash): it may have taken effect at any point
 *            after its invocation, or never.
 *
 * A process runs one operation at a time. An operation that is still open at the
 * end of the history is treated like `info`.
 *
 * The array order of events is the real-time order; `timeMs` is simulated time,
 * kept for reports and exports (Knossos histories carry times that are not monotonic,
 * so checkers never sort by it).
 */
import { InvalidArgumentError } from '@parley/interface';
import { EdnChar, EdnDecimal, EdnDouble, EdnMap, EdnRatio, EdnSet, EdnSymbol, EdnTagged, Keyword } from './edn.js';

export type EventType = 'invoke' | 'ok' | 'fail' | 'info';

/** A process: a client id. Numbers for Jepsen-style histories, strings for named clients. */
export type ProcessId = number | string;

/**
 * What an operation takes and returns: JSON-like values, plus the EDN values a
 * Jepsen history may carry (integers beyond 2^53 as `bigint`, keywords, symbols,
 * doubles read from EDN, characters, ratios, decimals, sets, maps with non-keyword
 * keys, tagged values). An object is a map with keyword keys. Values compare as
 * Clojure compares them (`sameValue` in value.ts): `1` ≠ `1.0`, `:a` ≠ `"a"`.
 */
export type HistoryValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | readonly HistoryValue[]
  | { readonly [field: string]: HistoryValue }
  | Keyword
  | EdnSymbol
  | EdnDouble
  | EdnChar
  | EdnRatio
  | EdnDecimal
  | EdnSet<HistoryValue>
  | EdnMap<HistoryValue>
  | EdnTagged<HistoryValue>;

export interface HistoryEvent {
  readonly type: EventType;
  readonly process: ProcessId;
  /** Simulated time of the event in milliseconds. */
  readonly timeMs: number;
  /** Operation name: `read`, `write`, `cas`, `get`, `put`, `append`, `acquire`, ... */
  readonly f: string;
  /** Argument on `invoke`, result on `ok`; on `fail`/`info` whatever the client knew. */
  readonly value: HistoryValue;
  /** The key (register, entry, lease or lock name) for models that split by key. */
  readonly key?: string;
  /** Error code on `fail`/`info` (`version_mismatch`, `timeout`, ...). */
  readonly error?: string;
}

export type History = readonly HistoryEvent[];

export interface HistoryRecorderOptions {
  /** Source of simulated time for events recorded without an explicit time. */
  readonly nowMs?: () => number;
  /** Upper bound on recorded events; recording beyond it throws. Default 1,000,000. */
  readonly maxEvents?: number;
}

/** Optional fields of a recorded event. */
export interface RecordOptions {
  readonly timeMs?: number;
  readonly error?: string;
}

const DEFAULT_MAX_EVENTS = 1_000_000;

/**
 * Records a history as it happens. Each process may have one open operation;
 * `ok`/`fail`/`info` complete it and repeat its `f` and `key`.
 *
 * Memory is explicit: at most `maxEvents` events are kept, and exceeding the bound
 * throws (a truncated history cannot be checked soundly).
 *
 * @example
 * ```ts
 * const rec = new HistoryRecorder({ nowMs: () => clock.nowMs() });
 * rec.invoke(1, 'write', 3);
 * rec.ok(1, 3);
 * rec.invoke(2, 'read', null);
 * rec.info(2, null, { error: 'timeout' });
 * toKnossosEdn(rec.events());
 * ```
 */
export class HistoryRecorder {
  private readonly log: HistoryEvent[] = [];
  private readonly open = new Map<ProcessId, { f: string; key: string | undefined }>();
  private readonly nowMs: () => number;
  private readonly maxEvents: number;

  constructor(options: HistoryRecorderOptions = {}) {
    this.nowMs = options.nowMs ?? (() => 0);
    this.maxEvents = options.maxEvents ?? DEFAULT_MAX_EVENTS;
    if (!Number.isInteger(this.maxEvents) || this.maxEvents < 1) {
      throw new InvalidArgumentError('maxEvents must be a positive integer', { maxEvents: this.maxEvents });
    }
  }

  /** Opens an operation of `process`. Throws if that process already has one open. */
  invoke(process: ProcessId, f: string, value: HistoryValue, key?: string, options: RecordOptions = {}): void {
    if (this.open.has(process)) {
      throw new InvalidArgumentError(`process ${String(process)} already has an open operation`, { process });
    }
    this.push({ type: 'invoke', process, timeMs: options.timeMs ?? this.nowMs(), f, value, key, error: undefined });
    this.open.set(process, { f, key });
  }

  /** Completes the open operation of `process`: it happened, with result `value`. */
  ok(process: ProcessId, value: HistoryValue, options: RecordOptions = {}): void {
    this.complete('ok', process, value, options);
  }

  /** Completes the open operation of `process`: it certainly did not happen. */
  fail(process: ProcessId, value: HistoryValue = null, options: RecordOptions = {}): void {
    this.complete('fail', process, value, options);
  }

  /** Completes the open operation of `process`: outcome unknown (it may or may not have happened). */
  info(process: ProcessId, value: HistoryValue = null, options: RecordOptions = {}): void {
    this.complete('info', process, value, options);
  }

  /** True when `process` has an operation in flight. */
  isOpen(process: ProcessId): boolean {
    return this.open.has(process);
  }

  /** Number of recorded events. */
  get size(): number {
    return this.log.length;
  }

  /** The recorded events, in order (a copy). */
  events(): HistoryEvent[] {
    return this.log.slice();
  }

  private complete(type: 'ok' | 'fail' | 'info', process: ProcessId, value: HistoryValue, options: RecordOptions) {
    const op = this.open.get(process);
    if (op === undefined) {
      throw new InvalidArgumentError(`process ${String(process)} has no open operation to complete`, { process });
    }
    this.push({
      type,
      process,
      timeMs: options.timeMs ?? this.nowMs(),
      f: op.f,
      value,
      key: op.key,
      error: options.error,
    });
    this.open.delete(process);
  }

  private push(event: {
    type: EventType;
    process: ProcessId;
    timeMs: number;
    f: string;
    value: HistoryValue;
    key: string | undefined;
    error: string | undefined;
  }): void {
    if (this.log.length >= this.maxEvents) {
      throw new InvalidArgumentError(`history exceeds maxEvents (${this.maxEvents})`, { maxEvents: this.maxEvents });
    }
    const e: { -readonly [K in keyof HistoryEvent]: HistoryEvent[K] } = {
      type: event.type,
      process: event.process,
      timeMs: event.timeMs,
      f: event.f,
      value: event.value,
    };
    if (event.key !== undefined) e.key = event.key;
    if (event.error !== undefined) e.error = event.error;
    this.log.push(e);
  }
}

// ---------------------------------------------------------------------------
// Export: Knossos EDN and Porcupine logs.

function ednDouble(x: number): string {
  if (Number.isNaN(x)) return '##NaN';
  if (x === Number.POSITIVE_INFINITY) return '##Inf';
  if (x === Number.NEGATIVE_INFINITY) return '##-Inf';
  if (Object.is(x, -0)) return '-0.0';
  const s = String(x);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

/**
 * Writes a value as EDN: null → nil, arrays → vectors, objects → maps with keyword
 * keys, a non-integer number → a float (`##Inf`, `##NaN` included), a `bigint` → an
 * integer; EDN values read from a history are written back as read.
 */
export function toEdnValue(value: HistoryValue): string {
  const v = value as unknown;
  if (v === null) return 'nil';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      if (!Number.isInteger(v)) return ednDouble(v);
      return Number.isSafeInteger(v) ? String(v) : BigInt(v).toString();
    case 'bigint':
      return v.toString();
    case 'string':
      return JSON.stringify(v);
    case 'object':
      break;
    default:
      throw new InvalidArgumentError(`EDN cannot carry a ${typeof v}`);
  }
  if (Array.isArray(v)) return `[${v.map((x) => toEdnValue(x as HistoryValue)).join(' ')}]`;
  if (v instanceof Keyword) return `:${v.name}`;
  if (v instanceof EdnSymbol) return v.name;
  if (v instanceof EdnDouble) return ednDouble(v.value);
  if (v instanceof EdnChar) return ednChar(v.char);
  if (v instanceof EdnRatio) return `${v.numerator}/${v.denominator}`;
  if (v instanceof EdnDecimal) return `${v.unscaled}E${-v.scale}M`;
  if (v instanceof EdnSet) return `#{${v.items.map((x) => toEdnValue(x)).join(' ')}}`;
  if (v instanceof EdnMap) return `{${v.entries.map(([k, x]) => `${toEdnValue(k)} ${toEdnValue(x)}`).join(', ')}}`;
  if (v instanceof EdnTagged) return `#${v.tag} ${toEdnValue(v.value)}`;
  const fields = Object.entries(v as { readonly [field: string]: HistoryValue });
  return `{${fields.map(([k, x]) => `${ednKeyword(k)} ${toEdnValue(x)}`).join(', ')}}`;
}

const CHAR_NAMES: Record<string, string> = { '\n': 'newline', '\r': 'return', ' ': 'space', '\t': 'tab' };

function ednChar(c: string): string {
  const named = CHAR_NAMES[c];
  if (named !== undefined) return `\\${named}`;
  if (c.length === 1 && c >= '!' && c <= '~') return `\\${c}`;
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

const KEYWORD_NAME = /^[A-Za-z*+!_?<>=-][A-Za-z0-9*+!_?<>=.-]*(\/[A-Za-z0-9*+!_?<>=.-]+)?$/;

function ednKeyword(name: string): string {
  if (!KEYWORD_NAME.test(name)) throw new InvalidArgumentError(`'${name}' cannot be written as an EDN keyword`);
  return `:${name}`;
}

function ednProcess(process: ProcessId): string {
  return typeof process === 'number' ? String(process) : JSON.stringify(process);
}

/** One event as an EDN map in the Knossos / Jepsen shape. Times are written as `:time` in nanoseconds. */
export function toEdnEvent(event: HistoryEvent): string {
  const parts = [
    `:process ${ednProcess(event.process)}`,
    `:type :${event.type}`,
    `:f ${ednKeyword(event.f)}`,
    ...(event.key === undefined ? [] : [`:key ${JSON.stringify(event.key)}`]),
    `:value ${toEdnValue(event.value)}`,
    ...(event.error === undefined ? [] : [`:error ${ednKeyword(event.error)}`]),
    `:time ${Math.round(event.timeMs * 1_000_000)}`,
  ];
  return `{${parts.join(', ')}}`;
}

/** A history as a Knossos EDN vector, one map per line. */
export function toKnossosEdn(history: History): string {
  if (history.length === 0) return '[]\n';
  return `[${history.map((e) => toEdnEvent(e)).join('\n ')}]\n`;
}

export type PorcupineLogStyle = 'lines' | 'jepsen';

/**
 * A history as a Porcupine test log.
 *
 * - `lines` (default): one EDN map per line, the shape of Porcupine's kv logs
 *   (`{:process 9, :type :invoke, :f :append, :key "0", :value "x"}`); any model.
 * - `jepsen`: `INFO  jepsen.util - P\t:type\t:f\tvalue` lines, the shape of Porcupine's etcd
 *   logs; keys are not carried, so use it for single-register histories.
 */
export function toPorcupineLog(history: History, style: PorcupineLogStyle = 'lines'): string {
  if (style === 'lines') return history.map((e) => `${toEdnEvent(e)}\n`).join('');
  return history
    .map((e) => {
      const value = e.type === 'info' || (e.type === 'fail' && e.f === 'read') ? ':timed-out' : toEdnValue(e.value);
      return `INFO  jepsen.util - ${String(e.process)}\t:${e.type}\t${ednKeyword(e.f)}\t${value}\n`;
    })
    .join('');
}
