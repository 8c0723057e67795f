/**
 * A brute-force linearizability oracle for the differential test, written apart
 * from the checker and sharing none of its code: no parser, no value equality,
 * no models, no memo. Operations carry their values as equality classes (plain
 * strings decided by whoever wrote the history), and the oracle tries every
 * linearization order of a small history.
 *
 * A sequence of operations is a linearization when it
 * 1. holds every operation with a known outcome (`ok`, and `fail` where the model
 *    reads a failure as an observation), and any subset of those whose outcome
 *    is unknown (`info`, never completed) — an unknown call may never have happened;
 * 2. puts `a` before `b` whenever `a` returned before `b` was called;
 * 3. is legal for the sequential specification, started from its initial state,
 *    with one state per key.
 *
 * The search places one operation at a time: any unplaced operation that no
 * unplaced known operation returned before. Exponential: a handful of calls only.
 */

export type OracleModel = 'register' | 'cas-register' | 'mutex';

export interface OracleOp {
  readonly f: 'read' | 'write' | 'cas' | 'acquire' | 'release';
  /** Equality class of the key ('' = no key). */
  readonly key: string;
  /** read: the class read (`'nil'` = nil); write: the class written; cas: [from, to]. */
  readonly value: string | readonly [string, string] | null;
  readonly status: 'ok' | 'fail' | 'info' | 'open';
  /** Position of the call and of the completion in the history (completion: +∞ when unknown). */
  readonly call: number;
  readonly ret: number;
}

const NIL = 'nil';

/** Does the model read this operation at all? `fail`s are dropped except a register's failed cas. */
function kept(model: OracleModel, op: OracleOp): boolean {
  if (op.status !== 'fail') return true;
  return model === 'register' && op.f === 'cas';
}

function isKnown(model: OracleModel, op: OracleOp): boolean {
  return kept(model, op) && (op.status === 'ok' || op.status === 'fail');
}

/** The state of one key after `op`, or undefined when `op` cannot happen in `state`. */
function apply(model: OracleModel, state: string, op: OracleOp): string | undefined {
  const unknown = op.status === 'info' || op.status === 'open';
  switch (op.f) {
    case 'read':
      if (unknown) return state;
      if (model === 'cas-register' && op.value === NIL) return state; // Knossos: a nil read matches anything
      return op.value === state ? state : undefined;
    case 'write':
      return op.value as string;
    case 'cas': {
      const [from, to] = op.value as readonly [string, string];
      if (op.status === 'fail') return state !== from ? state : undefined; // it happened and the compare failed
      if (unknown) return state === from ? to : state; // happened: succeeded or failed
      return state === from ? to : undefined;
    }
    case 'acquire':
      return state === 'free' ? 'held' : undefined;
    case 'release':
      return state === 'held' ? 'free' : undefined;
  }
}

function initial(model: OracleModel): string {
  if (model === 'mutex') return 'free';
  return model === 'register' ? NIL : 'i0';
}

/** True when some order of the operations is a linearization (see the module comment). */
export function oracleLinearizable(model: OracleModel, history: readonly OracleOp[]): boolean {
  const ops = history.filter((op) => kept(model, op));
  const known = ops.map((op) => isKnown(model, op));
  const placed = ops.map(() => false);
  const state = new Map<string, string>();
  const get = (key: string) => state.get(key) ?? initial(model);

  const search = (): boolean => {
    if (ops.every((_, i) => placed[i] || !known[i])) return true;
    for (let i = 0; i < ops.length; i++) {
      if (placed[i]) continue;
      const blocked = ops.some((other, j) => !placed[j] && known[j] && j !== i && other.ret < ops[i]!.call);
      if (blocked) continue;
      const before = get(ops[i]!.key);
      const after = apply(model, before, ops[i]!);
      if (after === undefined) continue;
      placed[i] = true;
      state.set(ops[i]!.key, after);
      const found = search();
      state.set(ops[i]!.key, before);
      placed[i] = false;
      if (found) return true;
    }
    return false;
  };
  return search();
}
