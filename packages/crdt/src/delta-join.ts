/**
 * Several deltas of one namespace, no key in two of them, as one delta: their
 * states, less any whose dots an earlier delta's context already holds, and
 * the union of their contexts. Merging it builds
 * exactly what merging each delta in turn builds when causal dependencies are
 * not waited for (`ignoreDeps`: the result carries none) and no state is
 * refused for clock drift (a refusal keeps its whole delta's context out):
 * per key there is one state either way, so the same states are joined, in
 * the same clock observations and collections. Two states of one key would
 * not do: joined ahead of time, the loser never reaches the replica, though
 * merged in turn it could win once the other is collectable.
 *
 * For a replica's own records (a node logs each group commit's local writes
 * as one: persist.ts), never for deltas still to be delivered causally.
 */
import { InvalidArgumentError } from '@parley/interface';
import { DotContext } from './context.js';
import type { Delta, KeyState } from './types.js';

/** `deltas` (at least one; all of `namespace`; each key in one of them at most) as one delta, without deps. */
export function joinDeltas(namespace: string, deltas: readonly Delta[]): Delta {
  const keys = new Set<string>();
  const states: KeyState[] = [];
  const context = new DotContext();
  for (const d of deltas) {
    if (d.namespace !== namespace) {
      throw new InvalidArgumentError(`delta of namespace '${d.namespace}' joined into '${namespace}'`);
    }
    for (const s of d.states) {
      if (keys.has(s.key)) throw new InvalidArgumentError(`key '${s.key}' in two of the deltas joined`);
      keys.add(s.key);
      // Dots of states themselves need no context entry: a merge adds them as it joins the state.
      if (!context.seenAll(s)) states.push(s);
    }
    context.addAll(d.context);
  }
  return { namespace, states, context: context.snapshot() };
}
