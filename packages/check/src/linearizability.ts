/**
 * Linearizability checking: the Wing–Gong search with Lowe's just-in-time
 * linearization and memoization of (linearized set, state) pairs.
 *
 * Calls and returns form one doubly linked list in real-time order. Walking it,
 * the search tries to linearize the next call whose return has not been passed;
 * reaching a return whose call is not linearized means the current prefix is a
 * dead end, so it backtracks. A (set of linearized operations, model state) pair
 * already explored is never explored again — that prunes the search from
 * exponential to practical on real histories. The set's hash is kept
 * incrementally (Zobrist: one random word per operation, XORed in and out).
 *
 * Operations whose outcome is unknown (`info`, never completed) have their return
 * at +∞: they may take effect at any point after their invocation. They may also
 * never take effect: the search succeeds once every operation with a known
 * outcome is linearized.
 *
 * Where the model allows (`partitionByKey`), each key is checked on its own
 * (P-compositionality). A model may also rewrite a partition once it is known
 * (`preparePartition`) and name a dominance between states: a call with an unknown
 * outcome leading to a dominated state is then never linearized.
 */
import { InvalidArgumentError, SeededRandom } from '@parley/interface';
import type { History } from './history.js';
import { MemoTable } from './memo.js';
import { type Model, type ModelOp, type Operation, pairOperations, UNKNOWN } from './model.js';
import { canonicalText, StateInterner } from './value.js';

export type Verdict = 'linearizable' | 'not linearizable' | 'unknown';

export interface LinearizabilityOptions {
  /** Give up with `unknown` after this much wall-clock time. Default: no limit. */
  readonly timeoutMs?: number;
  /** Give up with `unknown` after this many search steps. Default: no limit. */
  readonly maxSteps?: number;
  /** Give up with `unknown` when the memo holds this many entries. Default: no limit but `maxMemoBytes`. */
  readonly maxMemoEntries?: number;
  /**
   * Give up with `unknown` when the memo of one partition (its configurations and
   * the distinct states they name) holds this many bytes. Default 512 MiB. The memo
   * grows with need: a history without concurrency needs a few words per call.
   */
  readonly maxMemoBytes?: number;
  /** Clock for `timeoutMs` (injectable for tests). Default `performance.now`. */
  readonly nowMs?: () => number;
}

/** Why a history is not linearizable: the partition that failed and how far the search got. */
export interface Counterexample {
  readonly key: string | undefined;
  /** The longest sequence of operations the search could linearize, in linearization order. */
  readonly linearized: readonly Operation[];
  /** An operation that had to take effect next and could not, after that prefix. */
  readonly blocked: Operation | undefined;
}

export interface LinearizabilityResult {
  readonly verdict: Verdict;
  /** Operations checked (after the model dropped those that changed and observed nothing). */
  readonly operations: number;
  readonly partitions: number;
  /** Search steps taken, over all partitions. */
  readonly steps: number;
  readonly elapsedMs: number;
  /** Set when the verdict is `not linearizable`. */
  readonly counterexample?: Counterexample;
  /** Set when the verdict is `unknown`: the limit that was hit. */
  readonly reason?: 'timeout' | 'max-steps' | 'max-memo';
}

type PartResult =
  | { kind: 'ok'; steps: number }
  | { kind: 'bad'; steps: number; counterexample: Counterexample }
  | { kind: 'unknown'; steps: number; reason: 'timeout' | 'max-steps' | 'max-memo' };

interface Budget {
  readonly deadlineMs: number;
  readonly maxSteps: number;
  readonly maxMemoEntries: number | undefined;
  readonly maxMemoBytes: number;
  readonly nowMs: () => number;
  stepsUsed: number;
}

/** Default memo budget per partition. */
export const DEFAULT_MAX_MEMO_BYTES = 512 * 1024 * 1024;
const CLOCK_CHECK_MASK = 0xfff;

/**
 * Checks a history (or already paired operations) against a model.
 *
 * @example
 * ```ts
 * const result = checkLinearizability(registerModel, history, { timeoutMs: 10_000 });
 * if (result.verdict === 'not linearizable') console.log(result.counterexample);
 * ```
 */
export function checkLinearizability<S, I, O>(
  model: Model<S, I, O>,
  history: History | readonly Operation[],
  options: LinearizabilityOptions = {},
): LinearizabilityResult {
  const nowMs = options.nowMs ?? (() => performance.now());
  const started = nowMs();
  const budget: Budget = {
    deadlineMs: options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : started + options.timeoutMs,
    maxSteps: options.maxSteps ?? Number.POSITIVE_INFINITY,
    maxMemoEntries: options.maxMemoEntries,
    maxMemoBytes: options.maxMemoBytes ?? DEFAULT_MAX_MEMO_BYTES,
    nowMs,
    stepsUsed: 0,
  };
  if (options.timeoutMs !== undefined && !(options.timeoutMs >= 0)) {
    throw new InvalidArgumentError('timeoutMs must be ≥ 0', { timeoutMs: options.timeoutMs });
  }
  if (options.maxMemoBytes !== undefined && !(options.maxMemoBytes > 0)) {
    throw new InvalidArgumentError('maxMemoBytes must be > 0', { maxMemoBytes: options.maxMemoBytes });
  }
  const all = isOperationList(history) ? history : pairOperations(history);

  // The model's view of each operation; dropped ones vanish.
  const kept: { op: Operation; mop: ModelOp<I, O> }[] = [];
  for (const op of all) {
    const mop = model.prepare(op);
    if (mop !== null) kept.push({ op, mop });
  }

  const groups = new Map<string | undefined, { op: Operation; mop: ModelOp<I, O> }[]>();
  for (const item of kept) {
    const k = model.partitionByKey ? item.op.key : undefined;
    let g = groups.get(k);
    if (g === undefined) groups.set(k, (g = []));
    g.push(item);
  }

  let unknownReason: 'timeout' | 'max-steps' | 'max-memo' | undefined;
  for (const [key, group] of groups) {
    let items = group;
    let dominates: ((a: S, b: S) => boolean) | undefined;
    if (model.preparePartition) {
      const p = model.preparePartition(group.map((x) => x.mop));
      if (p.ops.length !== group.length) throw new Error(`model '${model.name}': preparePartition changed the count`);
      items = group.map((x, i) => ({ op: x.op, mop: p.ops[i]! }));
      dominates = p.dominates;
    }
    const r = checkPartition(model, key, items, budget, dominates);
    if (r.kind === 'bad') {
      return {
        verdict: 'not linearizable',
        operations: kept.length,
        partitions: groups.size,
        steps: budget.stepsUsed,
        elapsedMs: nowMs() - started,
        counterexample: r.counterexample,
      };
    }
    if (r.kind === 'unknown') {
      unknownReason = r.reason;
      // A later partition may still prove the history not linearizable, but only within the budget.
      if (r.reason !== 'max-memo') break;
    }
  }
  const base = {
    operations: kept.length,
    partitions: groups.size,
    steps: budget.stepsUsed,
    elapsedMs: nowMs() - started,
  };
  return unknownReason === undefined
    ? { verdict: 'linearizable', ...base }
    : { verdict: 'unknown', ...base, reason: unknownReason };
}

/** One line describing a call: `process 3 cas key="k" [1,2] → fail version_mismatch (events 10..14)`. */
export function describeOperation(op: Operation): string {
  const key = op.key === undefined ? '' : ` key=${JSON.stringify(op.key)}`;
  const result =
    op.status === 'ok' ? showValue(op.output) : `${op.status}${op.error === undefined ? '' : ` ${op.error}`}`;
  const end = Number.isFinite(op.returnIndex) ? String(op.returnIndex) : 'end';
  return `process ${String(op.process)} ${op.f}${key} ${showValue(op.input)} → ${result} (events ${op.callIndex}..${end})`;
}

/** A few lines explaining a `not linearizable` verdict, for reports. */
export function formatCounterexample(ce: Counterexample, maxPrefix = 10): string {
  const lines = [
    `${ce.key === undefined ? '' : `key ${JSON.stringify(ce.key)}: `}linearized ${ce.linearized.length} calls, then stuck`,
  ];
  const shown = ce.linearized.slice(-maxPrefix);
  if (shown.length < ce.linearized.length) lines.push(`  … ${ce.linearized.length - shown.length} earlier calls`);
  for (const op of shown) lines.push(`  ${describeOperation(op)}`);
  if (ce.blocked !== undefined) lines.push(`cannot linearize: ${describeOperation(ce.blocked)}`);
  return lines.join('\n');
}

/** JSON for JSON values, EDN text for the values JSON cannot show (`:a`, `1.0`, `2N`, `#{1}`). */
function showValue(v: Operation['input']): string {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (Array.isArray(v)) return `[${v.map((x) => showValue(x as Operation['input'])).join(',')}]`;
  if (typeof v === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(v))) {
    const o = v as { readonly [k: string]: Operation['input'] };
    return `{${Object.keys(o)
      .map((k) => `${JSON.stringify(k)}:${showValue(o[k]!)}`)
      .join(',')}}`;
  }
  return canonicalText(v);
}

function isOperationList(h: History | readonly Operation[]): h is readonly Operation[] {
  return h.length > 0 && 'callIndex' in (h[0] as object);
}

function checkPartition<S, I, O>(
  model: Model<S, I, O>,
  key: string | undefined,
  items: readonly { op: Operation; mop: ModelOp<I, O> }[],
  budget: Budget,
  dominates: ((a: S, b: S) => boolean) | undefined,
): PartResult {
  const n = items.length;
  if (n === 0) return { kind: 'ok', steps: 0 };

  // Calls with a known outcome get a call and a return entry; calls with an unknown
  // outcome (return at +∞) only a call entry. Entry 0 is the head; the rest are in
  // real-time order.
  const outputs = items.map((x) => x.mop.output);
  const inputs = items.map((x) => x.mop.input);
  const known = new Uint8Array(n);
  const rank = new Int32Array(n); // index among known calls, or among unknown ones
  let knownCount = 0;
  let unknownCount = 0;
  type Raw = { at: number; tie: number; op: number; call: boolean };
  const raw: Raw[] = [];
  for (let i = 0; i < n; i++) {
    const { op } = items[i]!;
    raw.push({ at: op.callIndex, tie: i, op: i, call: true });
    if (outputs[i] !== UNKNOWN) {
      known[i] = 1;
      rank[i] = knownCount++;
      raw.push({ at: op.returnIndex, tie: i, op: i, call: false });
    } else {
      rank[i] = unknownCount++;
    }
  }
  if (knownCount === 0) return { kind: 'ok', steps: 0 };
  const twinBefore = unknownTwins(
    items.map((x) => x.op.callIndex),
    inputs,
    outputs,
  );
  raw.sort((a, b) => a.at - b.at || a.tie - b.tie);
  // Two doubly linked lists over the entries 1..raw.length (position = real-time
  // order): the main list (sentinel 0) holds the calls and returns of known calls,
  // the unknown list (sentinel `uHead`) the calls with an unknown outcome.
  const size = raw.length + 2;
  const uHead = size - 1;
  const next = new Int32Array(size).fill(-1);
  const prev = new Int32Array(size).fill(-1);
  const opOf = new Int32Array(size);
  const isCall = new Uint8Array(size);
  const returnOf = new Int32Array(n).fill(-1); // op → its return entry (-1: none)
  let mainTail = 0;
  let unknownTail = uHead;
  for (let e = 1; e < uHead; e++) {
    const r = raw[e - 1]!;
    opOf[e] = r.op;
    isCall[e] = r.call ? 1 : 0;
    if (!r.call) returnOf[r.op] = e;
    if (known[r.op]) {
      prev[e] = mainTail;
      next[mainTail] = e;
      mainTail = e;
    } else {
      prev[e] = unknownTail;
      next[unknownTail] = e;
      unknownTail = e;
    }
  }

  // Zobrist words for the known set; fixed seed so runs are repeatable.
  const rng = new SeededRandom(0x5eed);
  const zobrist = new Int32Array(n);
  for (let i = 0; i < n; i++) zobrist[i] = rng.nextU32() | 0;

  const states = new StateInterner<S>(model.stateKey ? (s: S) => model.stateKey!(s) : undefined);

  // The linearized sets: known calls as a bitset over their rank plus its full
  // prefix length; unknown calls as a bitset over theirs.
  const knownBits = new Uint32Array((knownCount + 31) >>> 5);
  const unknownBits = new Uint32Array((unknownCount + 31) >>> 5);
  let prefix = 0; // known ranks [0, prefix) are all linearized
  let linearizedKnown = 0;
  let linearizedUnknown = 0;
  const knownKey = new Int32Array(2 + knownCount);
  const unknownKey = new Int32Array(unknownCount);
  const memo = new MemoTable();
  const maxMemoEntries = budget.maxMemoEntries ?? Number.POSITIVE_INFINITY;

  const remember = (hash: number, sid: number): boolean => {
    // Known set: [prefix, extras, ...ranks beyond the prefix].
    const extras = linearizedKnown - prefix;
    knownKey[0] = prefix;
    knownKey[1] = extras;
    let found = 0;
    for (let r = prefix + 1; found < extras; r++) {
      if (knownBits[r >>> 5]! & (1 << (r & 31))) knownKey[2 + found++] = r;
    }
    found = 0;
    for (let w = 0; found < linearizedUnknown; w++) {
      let word = unknownBits[w]!;
      while (word !== 0) {
        const bit = 31 - Math.clz32(word & -word);
        unknownKey[found++] = (w << 5) | bit;
        word &= word - 1;
      }
    }
    return memo.insert((hash ^ Math.imul(sid + 1, 0x9e3779b1)) | 0, sid, knownKey, 2 + extras, unknownKey, found);
  };
  const mark = (op: number) => {
    const r = rank[op]!;
    if (known[op]) {
      knownBits[r >>> 5]! |= 1 << (r & 31);
      linearizedKnown++;
      if (r === prefix) {
        while (prefix < knownCount && knownBits[prefix >>> 5]! & (1 << (prefix & 31))) prefix++;
      }
    } else {
      unknownBits[r >>> 5]! |= 1 << (r & 31);
      linearizedUnknown++;
    }
  };
  const unmark = (op: number) => {
    const r = rank[op]!;
    if (known[op]) {
      knownBits[r >>> 5]! &= ~(1 << (r & 31));
      linearizedKnown--;
      if (r < prefix) prefix = r;
    } else {
      unknownBits[r >>> 5]! &= ~(1 << (r & 31));
      linearizedUnknown--;
    }
  };

  // Backtracking stack.
  const stackEntry = new Int32Array(n);
  const stackState: S[] = new Array(n);
  const stackSid = new Int32Array(n);
  let depth = 0;
  let state = model.init();
  let sid = states.intern(state);
  let hash = 0;
  let remainingKnown = knownCount;
  remember(hash, sid);

  // Counterexample bookkeeping: deepest prefix, and what blocked it.
  // The best prefix is copied lazily: its first `bestSame` entries still equal the stack's.
  let bestDepth = -1;
  const bestPrefix = new Int32Array(n);
  let bestSame = 0;
  let blockedAtBest = -1;

  // Removing a linearized call (and its return) from its list, and putting it back.
  const unlink = (e: number) => {
    next[prev[e]!] = next[e]!;
    if (next[e]! !== -1) prev[next[e]!] = prev[e]!;
  };
  const relink = (e: number) => {
    next[prev[e]!] = e;
    if (next[e]! !== -1) prev[next[e]!] = e;
  };
  const lift = (call: number) => {
    unlink(call);
    const ret = returnOf[opOf[call]!]!;
    if (ret >= 0) unlink(ret);
  };
  const unlift = (call: number) => {
    const ret = returnOf[opOf[call]!]!;
    if (ret >= 0) relink(ret);
    relink(call);
  };

  // The walk: first the known calls before the first pending return (in order),
  // then, once that return is reached, the unknown calls invoked before it. Trying
  // known calls first reaches configurations with fewer unknown calls first, which
  // then subsume the rest. Reaching the end of the unknown candidates is a dead end.
  let steps = 0;
  let entry = next[0]!;
  let inUnknown = false;
  let limit = 0; // while inUnknown: the position of the first pending return
  const stackUnknown = new Uint8Array(n);
  const stackLimit = new Int32Array(n);
  // With a dominance relation, an unknown call is not linearized where a configuration
  // that dominates the one it leads to is explored anyway: the current one (the call
  // would only lose options), or — when the last call linearized also has an unknown
  // outcome and nothing came between — the one where this call replaces that one:
  // the same candidates are open there (the same known set, so the same first
  // pending return), with one unknown call fewer used.
  const skipUnknown = (op: number, after: S): boolean => {
    if (dominates!(state, after)) return true;
    if (depth === 0 || !inUnknown) return false;
    const below = stackEntry[depth - 1]!;
    if (known[opOf[below]!]) return false;
    const alone = model.step(stackState[depth - 1]!, inputs[op]!, outputs[op]!);
    return alone !== undefined && dominates!(alone, after);
  };

  // An unknown call is tried only once its earlier twins are linearized (see `unknownTwins`).
  const twinPending = (op: number): boolean => {
    const t = twinBefore[op]!;
    return t >= 0 && (unknownBits[rank[t]! >>> 5]! & (1 << (rank[t]! & 31))) === 0;
  };

  for (;;) {
    steps++;
    if ((steps & CLOCK_CHECK_MASK) === 0) {
      if (budget.stepsUsed + steps > budget.maxSteps) {
        budget.stepsUsed += steps;
        return { kind: 'unknown', steps, reason: 'max-steps' };
      }
      if (budget.nowMs() > budget.deadlineMs) {
        budget.stepsUsed += steps;
        return { kind: 'unknown', steps, reason: 'timeout' };
      }
      if (memo.size > maxMemoEntries || memo.bytes + states.bytes > budget.maxMemoBytes) {
        budget.stepsUsed += steps;
        return { kind: 'unknown', steps, reason: 'max-memo' };
      }
    }
    if (!inUnknown && !isCall[entry]) {
      // The first pending return: now the unknown calls invoked before it.
      inUnknown = true;
      limit = entry;
      entry = next[uHead]!;
      continue;
    }
    if (!inUnknown || (entry !== -1 && entry < limit)) {
      const op = opOf[entry]!;
      const after = model.step(state, inputs[op]!, outputs[op]!);
      if (after !== undefined) {
        const afterSid = states.intern(after);
        // A call with an unknown outcome that would change nothing, or lead to a state
        // the current one dominates, is never worth linearizing: leaving it out keeps
        // every option open.
        if (
          known[op] ||
          (afterSid !== sid && !twinPending(op) && !(dominates !== undefined && skipUnknown(op, after)))
        ) {
          const newHash = known[op] ? hash ^ zobrist[op]! : hash;
          mark(op);
          if (remember(newHash, afterSid)) {
            stackEntry[depth] = entry;
            stackState[depth] = state;
            stackSid[depth] = sid;
            stackUnknown[depth] = inUnknown ? 1 : 0;
            stackLimit[depth] = limit;
            depth++;
            state = after;
            sid = afterSid;
            hash = newHash;
            lift(entry);
            if (known[op]) remainingKnown--;
            if (remainingKnown === 0) {
              budget.stepsUsed += steps;
              return { kind: 'ok', steps };
            }
            entry = next[0]!;
            inUnknown = false;
            continue;
          }
          unmark(op);
        }
      }
      entry = next[entry]!;
      continue;
    }
    // No candidate left before the first pending return: this prefix is a dead end.
    if (depth > bestDepth) {
      bestDepth = depth;
      bestPrefix.set(stackEntry.subarray(bestSame, depth), bestSame);
      bestSame = depth;
      blockedAtBest = opOf[limit]!;
    }
    if (depth === 0) break;
    depth--;
    if (depth < bestSame) bestSame = depth;
    const call = stackEntry[depth]!;
    const op = opOf[call]!;
    state = stackState[depth]!;
    sid = stackSid[depth]!;
    stackState[depth] = undefined as S; // let the state go
    inUnknown = stackUnknown[depth] === 1;
    limit = stackLimit[depth]!;
    if (known[op]) {
      hash ^= zobrist[op]!;
      remainingKnown++;
    }
    unmark(op);
    unlift(call);
    entry = next[call]!;
  }
  budget.stepsUsed += steps;
  return {
    kind: 'bad',
    steps,
    counterexample: {
      key,
      linearized: Array.from(bestPrefix.subarray(0, Math.max(bestDepth, 0)), (e) => items[opOf[e]!]!.op),
      blocked: blockedAtBest >= 0 ? items[blockedAtBest]!.op : undefined,
    },
  };
}

/**
 * For each call with an unknown outcome, its twin invoked last before it: the previous
 * call whose input is the same and whose outcome is also unknown (-1: none). Twins are
 * interchangeable: both run `step` alike and return at +∞, and the earlier one may
 * take effect anywhere the later one may. So any linearization that uses a later twin
 * while an earlier one is unused, or uses both in the other order, becomes one that
 * uses them earliest first by swapping them, and the search tries a call only once
 * its earlier twins are linearized. Then the twins a configuration uses are always the
 * first few, and a key with many alike calls that timed out (blind writes of values no
 * read returns, once a model gives those one name) stays decidable.
 */
function unknownTwins<I, O>(
  callIndex: readonly number[],
  inputs: readonly I[],
  outputs: readonly (O | typeof UNKNOWN)[],
): Int32Array {
  const before = new Int32Array(inputs.length).fill(-1);
  const order = Array.from(inputs.keys()).sort((a, b) => callIndex[a]! - callIndex[b]! || a - b);
  const last = new Map<string, number>();
  for (const i of order) {
    if (outputs[i] !== UNKNOWN) continue;
    const key = twinKey(inputs[i]);
    if (key === undefined) continue;
    before[i] = last.get(key) ?? -1;
    last.set(key, i);
  }
  return before;
}

/** A text equal for inputs `step` cannot tell apart (an absent field and `undefined` alike); undefined if none. */
function twinKey(input: unknown): string | undefined {
  try {
    if (input !== null && typeof input === 'object' && Object.getPrototypeOf(input) === Object.prototype) {
      const o = input as { readonly [k: string]: unknown };
      return `{${Object.keys(o)
        .filter((k) => o[k] !== undefined)
        .sort()
        .map((k) => `${JSON.stringify(k)} ${canonicalText(o[k] as Operation['input'])}`)
        .join(', ')}}`;
    }
    return canonicalText(input as Operation['input']);
  } catch {
    return undefined; // not a history value: no twin
  }
}
