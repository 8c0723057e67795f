/**
 * Helpers for the checkers' own tests: a brute-force linearizability oracle and
 * random history generators. Not part of the public surface.
 */
import type { Random } from '@parley/interface';
import type { EventType, HistoryEvent, HistoryValue } from './history.js';
import { type Model, type Operation, pairOperations, UNKNOWN } from './model.js';

/**
 * Linearizability by exhaustive search over every order and every subset of
 * operations with unknown outcomes. Exponential: small histories only.
 */
export function bruteForceLinearizable<S, I, O>(model: Model<S, I, O>, history: readonly HistoryEvent[]): boolean {
  const ops = pairOperations(history);
  const groups = new Map<string | undefined, { op: Operation; input: I; output: O | typeof UNKNOWN }[]>();
  for (const op of ops) {
    const m = model.prepare(op);
    if (m === null) continue;
    const k = model.partitionByKey ? op.key : undefined;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push({ op, input: m.input, output: m.output });
  }
  for (const items of groups.values()) {
    const n = items.length;
    const used = new Array<boolean>(n).fill(false);
    const search = (state: S): boolean => {
      // Done when every operation with a known outcome is placed.
      let remainingKnown = 0;
      for (let i = 0; i < n; i++) if (!used[i] && items[i]!.output !== UNKNOWN) remainingKnown++;
      if (remainingKnown === 0) return true;
      for (let i = 0; i < n; i++) {
        if (used[i]) continue;
        // i may go next only if no unplaced operation returned before i was called.
        // (Operations with unknown outcomes return at +∞, so they never block.)
        let ok = true;
        for (let j = 0; j < n; j++) {
          if (j !== i && !used[j] && items[j]!.op.returnIndex < items[i]!.op.callIndex) ok = false;
        }
        if (!ok) continue;
        const next = model.step(state, items[i]!.input, items[i]!.output);
        if (next === undefined) continue;
        used[i] = true;
        if (search(next)) return true;
        used[i] = false;
      }
      return false;
    };
    if (!search(model.init())) return false;
  }
  return true;
}

export interface OpSpec {
  readonly f: string;
  readonly key?: string;
  readonly input: HistoryValue;
}

export interface Completion {
  readonly type: Exclude<EventType, 'invoke'>;
  readonly value: HistoryValue;
  readonly error?: string;
}

/**
 * A random interleaving of `processes` clients doing `opsPerProcess` calls each.
 * `invoke` picks the next call; `complete` picks how it ends (it may return
 * undefined to leave the call open forever).
 */
export function randomHistory(
  rng: Random,
  processes: number,
  opsPerProcess: number,
  invoke: (rng: Random, process: number) => OpSpec,
  complete: (rng: Random, call: OpSpec, process: number) => Completion | undefined,
): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  const left = new Array<number>(processes).fill(opsPerProcess);
  const open = new Map<number, OpSpec>();
  const dead = new Set<number>();
  let time = 0;
  for (;;) {
    const live = [...Array(processes).keys()].filter((p) => !dead.has(p) && (open.has(p) || left[p]! > 0));
    if (live.length === 0) break;
    const p = live[rng.int(live.length)]!;
    time += 1 + rng.int(3);
    const call = open.get(p);
    if (call === undefined) {
      const spec = invoke(rng, p);
      left[p]!--;
      open.set(p, spec);
      events.push({ type: 'invoke', process: p, timeMs: time, f: spec.f, value: spec.input, ...keyOf(spec) });
      continue;
    }
    const c = complete(rng, call, p);
    if (c === undefined) {
      dead.add(p);
      continue;
    }
    open.delete(p);
    events.push({
      type: c.type,
      process: p,
      timeMs: time,
      f: call.f,
      value: c.value,
      ...keyOf(call),
      ...(c.error === undefined ? {} : { error: c.error }),
    });
    if (c.type === 'info') dead.add(p);
  }
  return events;
}

function keyOf(spec: OpSpec): { key?: string } {
  return spec.key === undefined ? {} : { key: spec.key };
}

/** Pick one of `items`. */
export function pick<T>(rng: Random, items: readonly T[]): T {
  return items[rng.int(items.length)]!;
}

export { testSeed, withSeed } from '@parley/interface';
