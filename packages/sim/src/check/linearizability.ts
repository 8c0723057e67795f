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
 * (P-compositionality).
 */
import { InvalidArgumentError, SeededRandom } from '@parley/interface';
import type { History } from './history.js';
import { type Model, type ModelOp, type Operation, pairOperations, UNKNOWN } from './model.js';

export type Verdict = 'linearizable' | 'not linearizable' | 'unknown';

export interface LinearizabilityOptions {
  /** Give up with `unknown` after this much wall-clock time. Default: no limit. */
  readonly timeoutMs?: number;
  /** Give up with `unknown` after this many search steps. Default: no limit. */
  readonly maxSteps?: number;
  /** Give up with `unknown` when the memo holds this many entries. Default: as many as fit in 256 MiB. */
  readonly maxMemoEntries?: number;
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
  readonly nowMs: () => number;
  stepsUsed: number;
}

/** Default memo budget; an entry costs 16 bytes plus its bitset. */
const DEFAULT_MEMO_BYTES = 256 * 1024 * 1024;
const CLOCK_CHECK_MASK = 0xfff;

function defaultStateKey(state: unknown): string | number | boolean | null {
  if (state === null || typeof state === 'number' || typeof state === 'string' || typeof state === 'boolean') {
    return state;
  }
  return JSON.stringify(state);
}

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
    nowMs,
    stepsUsed: 0,
  };
  if (options.timeoutMs !== undefined && !(options.timeoutMs >= 0)) {
    throw new InvalidArgumentError('timeoutMs must be ≥ 0', { timeoutMs: options.timeoutMs });
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
  for (const [key, items] of groups) {
    const r = checkPartition(model, key, items, budget);
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
    op.status === 'ok' ? JSON.stringify(op.output) : `${op.status}${op.error === undefined ? '' : ` ${op.error}`}`;
  const end = Number.isFinite(op.returnIndex) ? String(op.returnIndex) : 'end';
  return `process ${String(op.process)} ${op.f}${key} ${JSON.stringify(op.input)} → ${result} (events ${op.callIndex}..${end})`;
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

function isOperationList(h: History | readonly Operation[]): h is readonly Operation[] {
  return h.length > 0 && 'callIndex' in (h[0] as object);
}

function checkPartition<S, I, O>(
  model: Model<S, I, O>,
  key: string | undefined,
  items: readonly { op: Operation; mop: ModelOp<I, O> }[],
  budget: Budget,
): PartResult {
  const n = items.length;
  if (n === 0) return { kind: 'ok', steps: 0 };

  // Entries: 0 is the head; 1..2n are calls and returns in real-time order.
  type Raw = { at: number; tie: number; op: number; call: boolean };
  const raw: Raw[] = [];
  for (let i = 0; i < n; i++) {
    const { op } = items[i]!;
    raw.push({ at: op.callIndex, tie: i, op: i, call: true });
    raw.push({ at: op.returnIndex, tie: i, op: i, call: false });
  }
  raw.sort((a, b) => a.at - b.at || a.tie - b.tie);
  const size = 2 * n + 1;
  const next = new Int32Array(size);
  const prev = new Int32Array(size);
  const opOf = new Int32Array(size);
  const isCall = new Uint8Array(size);
  const returnOf = new Int32Array(n); // op → its return entry
  for (let e = 1; e < size; e++) {
    const r = raw[e - 1]!;
    opOf[e] = r.op;
    isCall[e] = r.call ? 1 : 0;
    if (!r.call) returnOf[r.op] = e;
    prev[e] = e - 1;
    next[e - 1] = e;
  }
  next[size - 1] = -1;

  const inputs = items.map((x) => x.mop.input);
  const outputs = items.map((x) => x.mop.output);
  const known = new Uint8Array(n);
  let remainingKnown = 0;
  for (let i = 0; i < n; i++) {
    if (outputs[i] !== UNKNOWN) {
      known[i] = 1;
      remainingKnown++;
    }
  }
  if (remainingKnown === 0) return { kind: 'ok', steps: 0 };

  // Zobrist words for the linearized set; fixed seed so runs are repeatable.
  const rng = new SeededRandom(0x5eed);
  const zobrist = new Int32Array(n);
  for (let i = 0; i < n; i++) zobrist[i] = rng.nextU32() | 0;

  const keyOf = model.stateKey ? (s: S) => model.stateKey!(s) : defaultStateKey;
  const stateIds = new Map<string | number | boolean | null, number>();
  const intern = (s: S): number => {
    const k = keyOf(s);
    let id = stateIds.get(k);
    if (id === undefined) {
      id = stateIds.size;
      stateIds.set(k, id);
    }
    return id;
  };

  const words = (n + 31) >>> 5;
  const bits = new Uint32Array(words);
  const memo = new MemoTable(words);
  const maxMemoEntries = budget.maxMemoEntries ?? Math.floor(DEFAULT_MEMO_BYTES / (16 + 4 * words));
  const remember = (hash: number, sid: number): boolean =>
    memo.insert((hash ^ Math.imul(sid + 1, 0x9e3779b1)) | 0, sid, bits);

  // Backtracking stack.
  const stackEntry = new Int32Array(n);
  const stackState: S[] = new Array(n);
  let depth = 0;
  let state = model.init();
  let hash = 0;

  // Counterexample bookkeeping: deepest prefix, and what blocked it.
  let bestDepth = -1;
  let bestPrefix: number[] = [];
  let blockedAtBest = -1;

  const lift = (call: number) => {
    next[prev[call]!] = next[call]!;
    prev[next[call]!] = prev[call]!; // a call always has its return after it
    const ret = returnOf[opOf[call]!]!;
    next[prev[ret]!] = next[ret]!;
    if (next[ret]! !== -1) prev[next[ret]!] = prev[ret]!;
  };
  const unlift = (call: number) => {
    const ret = returnOf[opOf[call]!]!;
    next[prev[ret]!] = ret;
    if (next[ret]! !== -1) prev[next[ret]!] = ret;
    next[prev[call]!] = call;
    prev[next[call]!] = call;
  };

  let steps = 0;
  let entry = next[0]!;
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
      if (memo.size > maxMemoEntries) {
        budget.stepsUsed += steps;
        return { kind: 'unknown', steps, reason: 'max-memo' };
      }
    }
    if (isCall[entry]) {
      const op = opOf[entry]!;
      const after = model.step(state, inputs[op]!, outputs[op]!);
      if (after !== undefined) {
        const newHash = hash ^ zobrist[op]!;
        bits[op >>> 5]! |= 1 << (op & 31);
        if (remember(newHash, intern(after))) {
          stackEntry[depth] = entry;
          stackState[depth] = state;
          depth++;
          state = after;
          hash = newHash;
          lift(entry);
          if (known[op]) remainingKnown--;
          if (remainingKnown === 0) {
            budget.stepsUsed += steps;
            return { kind: 'ok', steps };
          }
          entry = next[0]!;
          continue;
        }
        bits[op >>> 5]! &= ~(1 << (op & 31));
      }
      entry = next[entry]!;
      continue;
    }
    // A return whose call is not linearized: this prefix is a dead end.
    if (depth > bestDepth) {
      bestDepth = depth;
      bestPrefix = Array.from(stackEntry.subarray(0, depth), (e) => opOf[e]!);
      blockedAtBest = opOf[entry]!;
    }
    if (depth === 0) break;
    depth--;
    const call = stackEntry[depth]!;
    const op = opOf[call]!;
    state = stackState[depth]!;
    stackState[depth] = undefined as S; // let the state go
    hash ^= zobrist[op]!;
    bits[op >>> 5]! &= ~(1 << (op & 31));
    if (known[op]) remainingKnown++;
    unlift(call);
    entry = next[call]!;
  }
  budget.stepsUsed += steps;
  return {
    kind: 'bad',
    steps,
    counterexample: {
      key,
      linearized: bestPrefix.map((i) => items[i]!.op),
      blocked: blockedAtBest >= 0 ? items[blockedAtBest]!.op : undefined,
    },
  };
}

/**
 * The memo: a set of (linearized set, state id) pairs in flat typed arrays
 * (open addressing on the hash, bitsets in one pool), so millions of entries
 * cost tens of bytes each and no garbage.
 */
class MemoTable {
  private slots = new Int32Array(1 << 12); // entry index + 1, 0 = empty
  private hashes = new Int32Array(1 << 11);
  private sids = new Int32Array(1 << 11);
  private pool: Uint32Array;
  size = 0;

  constructor(private readonly words: number) {
    this.pool = new Uint32Array((1 << 11) * words);
  }

  /** Adds the pair; false if it was already there. */
  insert(hash: number, sid: number, bits: Uint32Array): boolean {
    const words = this.words;
    let mask = this.slots.length - 1;
    let i = hash & mask;
    for (;;) {
      const slot = this.slots[i]!;
      if (slot === 0) break;
      const e = slot - 1;
      if (this.hashes[e] === hash && this.sids[e] === sid) {
        let same = true;
        const base = e * words;
        for (let w = 0; w < words; w++) {
          if (this.pool[base + w] !== bits[w]) {
            same = false;
            break;
          }
        }
        if (same) return false;
      }
      i = (i + 1) & mask;
    }
    const e = this.size;
    if (e === this.hashes.length) this.growEntries();
    this.hashes[e] = hash;
    this.sids[e] = sid;
    this.pool.set(bits, e * words);
    this.size++;
    if (this.size * 2 > this.slots.length) {
      this.rehash();
      mask = this.slots.length - 1;
      i = hash & mask;
      while (this.slots[i] !== 0) i = (i + 1) & mask;
    }
    this.slots[i] = e + 1;
    return true;
  }

  private growEntries(): void {
    const cap = this.hashes.length * 2;
    const hashes = new Int32Array(cap);
    hashes.set(this.hashes);
    this.hashes = hashes;
    const sids = new Int32Array(cap);
    sids.set(this.sids);
    this.sids = sids;
    const pool = new Uint32Array(cap * this.words);
    pool.set(this.pool);
    this.pool = pool;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    // The entry being inserted (index size - 1) is placed by the caller.
    for (let e = 0; e < this.size - 1; e++) {
      let i = this.hashes[e]! & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = e + 1;
    }
    this.slots = slots;
  }
}
