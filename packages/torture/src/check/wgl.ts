/**
 * The harness's own linearizability checker, written apart from parley-check
 * (it shares no code with packages/check/src): Wing and Gong's search with
 * Lowe's just-in-time linearization and a memo of (linearized set, state), as
 * Porcupine does it, one key at a time.
 *
 * Calls and returns form a linked list in the order the harness recorded them.
 * The search takes the first call it can linearize (the model accepts it from
 * the current state and the configuration is new), removes it and its return
 * from the list, and goes on; reaching a return whose call is not linearized,
 * it backtracks. A call with an unknown outcome has no return: it may be
 * linearized anywhere after its call, or never, so the history is linearizable
 * once no return is left. Such a call whose step would leave the state as it is
 * is never linearized (the configuration without it can do everything the one
 * with it can). Two such calls with equal inputs can stand in for each other
 * wherever the later one may go (the earlier was called first, neither returns),
 * so the later one is tried only once the earlier one is linearized.
 */

export interface CheckOp<I> {
  /** Position of the call, then of the return (unknown outcome: no return), in recording order. */
  readonly call: number;
  readonly ret: number | null;
  readonly input: I;
  /** For the report. */
  readonly label: string;
}

export interface SeqModel<S, I> {
  init(): S;
  /** The state after `input` from `s`, or undefined when `s` cannot produce what the call observed. */
  step(s: S, input: I, known: boolean): S | undefined;
  key(s: S): string;
}

export type Verdict = 'linearizable' | 'not linearizable' | 'unknown';

export interface KeyResult {
  readonly verdict: Verdict;
  readonly steps: number;
  /** On `not linearizable`: the call the search could never place. */
  readonly stuck?: string;
}

interface Node<I> {
  op: CheckOp<I> | null;
  index: number;
  isCall: boolean;
  match: Node<I> | null;
  prev: Node<I> | null;
  next: Node<I> | null;
}

export function checkKey<S, I>(model: SeqModel<S, I>, ops: readonly CheckOp<I>[], maxSteps: number): KeyResult {
  const events: Array<{ at: number; node: Node<I> }> = [];
  const nodes: Node<I>[] = [];
  ops.forEach((op, index) => {
    const call: Node<I> = { op, index, isCall: true, match: null, prev: null, next: null };
    nodes.push(call);
    events.push({ at: op.call, node: call });
    if (op.ret !== null) {
      const ret: Node<I> = { op, index, isCall: false, match: call, prev: null, next: null };
      call.match = ret;
      events.push({ at: op.ret, node: ret });
    }
  });
  events.sort((a, b) => a.at - b.at);
  const head: Node<I> = { op: null, index: -1, isCall: false, match: null, prev: null, next: null };
  let tail = head;
  let returnsLeft = 0;
  for (const e of events) {
    e.node.prev = tail;
    tail.next = e.node;
    tail = e.node;
    if (!e.node.isCall) returnsLeft++;
  }

  const lift = (n: Node<I>) => {
    (n.prev as Node<I>).next = n.next;
    if (n.next) n.next.prev = n.prev;
    const m = n.match;
    if (m) {
      (m.prev as Node<I>).next = m.next;
      if (m.next) m.next.prev = m.prev;
      returnsLeft--;
    }
  };
  const unlift = (n: Node<I>) => {
    const m = n.match;
    if (m) {
      (m.prev as Node<I>).next = m;
      if (m.next) m.next.prev = m;
      returnsLeft++;
    }
    (n.prev as Node<I>).next = n;
    if (n.next) n.next.prev = n;
  };

  // For each call with an unknown outcome, the last earlier one with an equal input (-1: none).
  const twin = new Int32Array(ops.length).fill(-1);
  const lastByInput = new Map<string, number>();
  const byCall = [...ops.keys()].sort((a, b) => (ops[a] as CheckOp<I>).call - (ops[b] as CheckOp<I>).call);
  for (const i of byCall) {
    const op = ops[i] as CheckOp<I>;
    if (op.ret !== null) continue;
    const text = JSON.stringify(op.input);
    twin[i] = lastByInput.get(text) ?? -1;
    lastByInput.set(text, i);
  }
  const bits = new Uint8Array(Math.ceil(ops.length / 8));
  const placed = (i: number) => ((bits[i >> 3] as number) & (1 << (i & 7))) !== 0;
  const memo = new Set<string>();
  const stack: Array<{ node: Node<I>; state: S }> = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;
  // The return the search met with the most calls linearized: where the history goes wrong.
  let depth = -1;
  let stuck = '?';

  while (returnsLeft > 0) {
    if (++steps > maxSteps) return { verdict: 'unknown', steps };
    if (entry === null) {
      // Only calls without returns are left before the end: backtrack.
      const top = stack.pop();
      if (top === undefined) return { verdict: 'not linearizable', steps, stuck };
      ({ node: entry, state } = backtrack(top, bits, unlift));
      continue;
    }
    if (entry.isCall) {
      const op = entry.op as CheckOp<I>;
      const known = op.ret !== null;
      const t = twin[entry.index] as number;
      if (!known && t >= 0 && !placed(t)) {
        entry = entry.next;
        continue;
      }
      const next = model.step(state, op.input, known);
      if (next !== undefined && (known || model.key(next) !== model.key(state))) {
        bits[entry.index >> 3] = (bits[entry.index >> 3] as number) | (1 << (entry.index & 7));
        const k = `${model.key(next)}|${Buffer.from(bits).toString('latin1')}`;
        if (!memo.has(k)) {
          memo.add(k);
          stack.push({ node: entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        bits[entry.index >> 3] = (bits[entry.index >> 3] as number) & ~(1 << (entry.index & 7));
      }
      entry = entry.next;
    } else {
      if (stack.length > depth) {
        depth = stack.length;
        stuck = entry.op?.label ?? '?';
      }
      const top = stack.pop();
      if (top === undefined) return { verdict: 'not linearizable', steps, stuck };
      ({ node: entry, state } = backtrack(top, bits, unlift));
    }
  }
  return { verdict: 'linearizable', steps };
}

function backtrack<S, I>(
  top: { node: Node<I>; state: S },
  bits: Uint8Array,
  unlift: (n: Node<I>) => void,
): { node: Node<I> | null; state: S } {
  const n = top.node;
  bits[n.index >> 3] = (bits[n.index >> 3] as number) & ~(1 << (n.index & 7));
  unlift(n);
  return { node: n.next, state: top.state };
}
