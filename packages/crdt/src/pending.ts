/**
 * Deltas held for their causal dependencies (INTERNALS §7): a delta whose
 * `deps` the replica does not cover yet waits here, invisible — not applied,
 * its dots not in the context, so anti-entropy still asks for them (I1) — and
 * the replica applies it once its context covers the deps. The buffer is
 * bounded in deltas and in states; beyond either bound the oldest delta is
 * dropped (anti-entropy brings its states back later, closed under their
 * dependencies), and the drop is counted.
 */
import { DotContext } from './context.js';
import { forEachDot } from './key-state.js';
import type { Delta } from './types.js';

/** Deltas held for their causal dependencies, at most, by default (the oldest is dropped beyond). */
export const DEFAULT_MAX_PENDING_DELTAS = 512;
/** Key states in the held deltas, at most, by default. */
export const DEFAULT_MAX_PENDING_STATES = 8192;

export class PendingDeltas {
  /** In arrival order (the oldest first). */
  private readonly held = new Set<Delta>();
  private states = 0;
  dropped = 0;

  constructor(
    private readonly maxDeltas: number,
    private readonly maxStates: number,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** Holds `delta`, dropping the oldest held deltas while a bound is passed (a delta over the state bound alone is dropped). */
  hold(delta: Delta): void {
    if (this.held.has(delta)) return;
    if (delta.states.length > this.maxStates) {
      this.dropped++;
      return;
    }
    this.held.add(delta);
    this.states += delta.states.length;
    while (this.held.size > this.maxDeltas || this.states > this.maxStates) {
      const [oldest] = this.held;
      if (oldest === undefined) break;
      this.remove(oldest);
      this.dropped++;
    }
  }

  remove(delta: Delta): void {
    if (this.held.delete(delta)) this.states -= delta.states.length;
  }

  /** A snapshot of the held deltas, oldest first. */
  list(): Delta[] {
    return [...this.held];
  }

  /** The keys of the held states (for a caller that reports changes). */
  keys(): Set<string> {
    const out = new Set<string>();
    for (const d of this.held) for (const s of d.states) out.add(s.key);
    return out;
  }

  clear(): void {
    this.held.clear();
    this.states = 0;
  }
}

/**
 * Whether a delta's deps are covered by `ctx` together with the dots the
 * delta brings itself (its states' and its extra context's): an overwrite
 * depends on its writer's prefix frontier, which names the very write it
 * supersedes, and must not wait for a copy of that write (its causal past
 * is in the deps too).
 */
export function depsCovered(ctx: DotContext, delta: Delta): boolean {
  if (delta.deps === undefined) return true;
  for (const [origin, seq] of delta.deps) {
    if (ctx.coversPrefix(origin, seq)) continue;
    const c = new DotContext();
    const mine = ctx.rangesOf(origin);
    for (let i = 0; i < mine.length; i += 2) c.addRange(origin, mine[i] as number, mine[i + 1] as number);
    const extra = delta.context.get(origin) ?? [];
    for (let i = 0; i < extra.length; i += 2) c.addRange(origin, extra[i] as number, extra[i + 1] as number);
    for (const s of delta.states)
      forEachDot(s, (node, dot) => {
        if (node === origin) c.add(node, dot);
      });
    if (!c.coversPrefix(origin, seq)) return false;
  }
  return true;
}
