/**
 * `parley-lease` (epochs) and `parley-lock` (fence tokens): one holder at a time,
 * strictly increasing tokens, time-aware grants. Formats in docs/checkers.md.
 */
import {
  field,
  type Model,
  type ModelOp,
  type Operation,
  type PreparedPartition,
  UNKNOWN,
  unknownOp,
} from '../model.js';
import { int, str } from './fields.js';

/**
 * A fenced slot. `token` is the newest token granted when `exact`; otherwise a
 * grant whose reply was lost happened and `token` is a lower bound on it.
 */
export interface FencedState {
  readonly holder: string | null;
  readonly token: number;
  readonly exact: boolean;
  /**
   * Time-aware histories: the current grant certainly lasts until this instant (the
   * acquire's or renew's invocation + `ttlMs` − `skewMs`); -Infinity when unknown.
   */
  readonly until: number;
}

/**
 * `at`: the call's completion time (+Infinity when unknown): the latest moment it took effect.
 * `until`: for a grant or renewal carrying `ttlMs`, the earliest moment it may end.
 */
export type FencedInput =
  | { readonly f: 'acquire'; readonly holder: string; readonly at: number; readonly until: number }
  | {
      readonly f: 'renew' | 'release';
      readonly holder: string;
      readonly token: number;
      readonly at: number;
      readonly until: number;
    }
  | { readonly f: 'write'; readonly token: number; readonly at: number }
  | { readonly f: 'get'; readonly at: number };

export type FencedOutput =
  | { readonly type: 'granted'; readonly token: number }
  | { readonly type: 'done' }
  | { readonly type: 'free' }
  | { readonly type: 'held'; readonly holder: string; readonly token: number }
  /** `lock_held`: someone holds the slot. */
  | { readonly type: 'held-error' }
  /** `lease_lost` (or a release answering `released: false`): the caller no longer holds it. */
  | { readonly type: 'lost' }
  /** `fence_stale`: a newer token than the caller's was granted. */
  | { readonly type: 'stale' };

interface FencedNames {
  readonly model: string;
  /** Field naming the holder: `holder` (leases) or `owner` (locks). */
  readonly holder: string;
  /** Field naming the token: `epoch` (leases) or `fence` (locks). */
  readonly token: string;
}

/** A grant or renewal with `ttlMs` (and the clock bound `skewMs`) lasts at least until invoke + ttl − skew. */
function grantUntil(op: Operation): number {
  const ttl = field(op.input, 'ttlMs');
  if (ttl === undefined || ttl === null) return Number.NEGATIVE_INFINITY;
  const skew = field(op.input, 'skewMs');
  return op.callTimeMs + int(op, ttl, 'ttlMs') - (skew === undefined || skew === null ? 0 : int(op, skew, 'skewMs'));
}

function fencedPrepare(names: FencedNames, op: Operation): ModelOp<FencedInput, FencedOutput> | null {
  let input: FencedInput;
  const at = op.status === 'ok' || op.status === 'fail' ? op.returnTimeMs : Number.POSITIVE_INFINITY;
  switch (op.f) {
    case 'acquire':
      input = { f: 'acquire', holder: str(op, field(op.input, names.holder), names.holder), at, until: grantUntil(op) };
      break;
    case 'renew':
    case 'release':
      input = {
        f: op.f,
        holder: str(op, field(op.input, names.holder), names.holder),
        token: int(op, field(op.input, names.token), names.token),
        at,
        until: op.f === 'renew' ? grantUntil(op) : Number.NEGATIVE_INFINITY,
      };
      break;
    case 'write':
      input = { f: 'write', token: int(op, field(op.input, names.token), names.token), at };
      break;
    case 'get':
      input = { f: 'get', at };
      break;
    default:
      throw unknownOp(names.model, op);
  }
  if (op.status === 'info' || op.status === 'open') {
    // A read whose result is unknown observes nothing and changes nothing: drop it.
    return input.f === 'get' ? null : { input, output: UNKNOWN };
  }
  if (op.status === 'fail') {
    switch (op.error) {
      case 'lock_held':
      case 'lease_held':
        return { input, output: { type: 'held-error' } };
      case 'lease_lost':
        return { input, output: { type: 'lost' } };
      case 'fence_stale':
        return { input, output: { type: 'stale' } };
      default:
        return null;
    }
  }
  switch (input.f) {
    case 'acquire':
      return { input, output: { type: 'granted', token: int(op, field(op.output, names.token), names.token) } };
    case 'get': {
      const holder = op.output === null ? null : field(op.output, names.holder);
      if (holder === null || holder === undefined) return { input, output: { type: 'free' } };
      return {
        input,
        output: {
          type: 'held',
          holder: str(op, holder, names.holder),
          token: int(op, field(op.output, names.token), names.token),
        },
      };
    }
    case 'release':
      return { input, output: field(op.output, 'released') === false ? { type: 'lost' } : { type: 'done' } };
    default:
      return { input, output: { type: 'done' } };
  }
}

/** Is `token` the newest grant? With an inexact state, any token at or above the bound may be. */
function isCurrent(s: FencedState, token: number): boolean {
  return s.exact ? token === s.token : token >= s.token;
}

function pin(s: FencedState, holder: string | null, token: number): FencedState {
  return s.exact && s.holder === holder ? s : { holder, token, exact: true, until: s.until };
}

/** May the current grant have ended by `at` (its TTL run out)? Always, in a history without TTLs. */
function mayHaveEnded(s: FencedState, at: number): boolean {
  return s.holder === null || at >= s.until;
}

function fencedStep(
  s: FencedState,
  input: FencedInput,
  output: FencedOutput | typeof UNKNOWN,
): FencedState | undefined {
  if (output !== UNKNOWN) {
    switch (output.type) {
      case 'held-error':
        // Refused because someone holds it: only possible while held.
        return input.f === 'acquire' && s.holder !== null ? s : undefined;
      case 'lost':
        // The caller's hold is gone. If the state says it still holds, its TTL ran out.
        if (input.f === 'renew' || input.f === 'release' || input.f === 'write') {
          if ('holder' in input && s.holder === input.holder && isCurrent(s, input.token)) {
            // Its grant is over: it expired, which it cannot have before its TTL ran out.
            if (!mayHaveEnded(s, input.at)) return undefined;
            return { holder: null, token: s.token, exact: s.exact, until: Number.NEGATIVE_INFINITY };
          }
          return s;
        }
        return undefined;
      case 'stale':
        // A newer token exists.
        if (input.f === 'get' || input.f === 'acquire') return undefined;
        return s.exact ? (input.token < s.token ? s : undefined) : s;
      default:
        break;
    }
  }
  switch (input.f) {
    case 'acquire': {
      // A held slot may be taken over once its TTL ran out (with TTLs in the history: not
      // before the grant's `until`), so holding is no obstacle; the token must still be
      // strictly newer (or the same grant repeated to its holder).
      if (output === UNKNOWN) return { holder: input.holder, token: s.token + 1, exact: false, until: input.until };
      if (output.type !== 'granted') return undefined;
      if (output.token > s.token) {
        if (s.holder !== input.holder && !mayHaveEnded(s, input.at)) return undefined;
        return { holder: input.holder, token: output.token, exact: true, until: input.until };
      }
      if (s.exact && s.holder === input.holder && output.token === s.token) return s;
      return undefined;
    }
    case 'renew': {
      if (s.holder !== input.holder || !isCurrent(s, input.token)) return output === UNKNOWN ? s : undefined;
      const p = pin(s, input.holder, input.token);
      // The renewal sets a new deadline (it may be shorter than the one it replaces).
      return p.until === input.until ? p : { ...p, until: input.until };
    }
    case 'release':
      if (s.holder !== input.holder || !isCurrent(s, input.token)) return output === UNKNOWN ? s : undefined;
      return { holder: null, token: input.token, exact: true, until: Number.NEGATIVE_INFINITY };
    case 'write':
      // Accepted only with the newest token granted.
      if (!isCurrent(s, input.token)) return output === UNKNOWN ? s : undefined;
      return s.exact ? s : { holder: s.holder, token: input.token, exact: true, until: s.until };
    case 'get':
      if (output === UNKNOWN) return s;
      if (output.type === 'free') {
        // Expiry is judged at the clock of whoever answers, and clocks differ (by up to ε, or
        // without bound in histories with clock jumps, which carry no TTLs): a read may find the
        // grant over while a later call, judged at a clock behind it, still finds it held — or a
        // renewal stamped before the deadline commits after the read (guarantees.md promises
        // "never early" and "never extended" within ε, not one instant of expiry for every
        // caller). So such a read shows that the grant may have ended (never before its lower
        // bound), not that it ended for every later call: the grant stays in the model.
        return mayHaveEnded(s, input.at) ? s : undefined;
      }
      if (output.type !== 'held' || s.holder !== output.holder || !isCurrent(s, output.token)) return undefined;
      return pin(s, output.holder, output.token);
  }
}

/**
 * The one name of every holder no other call observes: an acquire whose outcome is
 * unknown, by a holder that no other call of the key names (a client whose call timed
 * out is replaced, as Jepsen does). Only whether such a grant happened can matter, not
 * whose it was, so they share a name, and the grants they may have made become
 * comparable (below). Used only when no call of the key names it.
 */
export const ANONYMOUS_HOLDER = '\u0000anonymous';

function holderNamed(mop: ModelOp<FencedInput, FencedOutput>): string | undefined {
  const o = mop.output;
  return o !== UNKNOWN && o.type === 'held' ? o.holder : undefined;
}

/**
 * Gives the holders of unobserved unknown acquires one name. Then a state held by that
 * name dominates another held by it when both are exact with one token, or both are
 * lower bounds and its bound and its `until` are no higher: nothing can name the
 * holder (no renew, release or read can find it current), and a lower token bound
 * or an earlier `until` only lets more grants, writes and expiries through. The
 * search thus never stacks a second unobserved unknown acquire on one whose grant
 * lasts no longer — which would only raise the bound — and a key with many timed-out
 * acquires stays decidable. The relation holds only while every unknown acquire is
 * unobserved (a named one would end in states a lower bound does not dominate: a
 * `lease_lost` to a renewal naming a token above the bound), so it is offered only then.
 */
function fencedPreparePartition(
  ops: readonly ModelOp<FencedInput, FencedOutput>[],
): PreparedPartition<FencedState, FencedInput, FencedOutput> {
  const uses = new Map<string, number>();
  const count = (h: string | undefined) => {
    if (h !== undefined) uses.set(h, (uses.get(h) ?? 0) + 1);
  };
  for (const mop of ops) {
    count('holder' in mop.input ? mop.input.holder : undefined);
    count(holderNamed(mop));
  }
  if (uses.has(ANONYMOUS_HOLDER)) return { ops };
  let named = false;
  const out = ops.map((mop) => {
    if (mop.output !== UNKNOWN || mop.input.f !== 'acquire') return mop;
    if (uses.get(mop.input.holder) !== 1) {
      named = true;
      return mop;
    }
    const anonymous: ModelOp<FencedInput, FencedOutput> = {
      input: { ...mop.input, holder: ANONYMOUS_HOLDER },
      output: UNKNOWN,
    };
    return anonymous;
  });
  return named ? { ops: out } : { ops: out, dominates: anonymousDominates };
}

function anonymousDominates(a: FencedState, b: FencedState): boolean {
  if (a.holder !== ANONYMOUS_HOLDER || b.holder !== ANONYMOUS_HOLDER || a.exact !== b.exact) return false;
  return (a.exact ? a.token === b.token : a.token <= b.token) && a.until <= b.until;
}

function fencedModel(names: FencedNames, description: string): Model<FencedState, FencedInput, FencedOutput> {
  return {
    name: names.model,
    description,
    partitionByKey: true,
    init: () => ({ holder: null, token: 0, exact: true, until: Number.NEGATIVE_INFINITY }),
    prepare: (op) => fencedPrepare(names, op),
    step: fencedStep,
    preparePartition: fencedPreparePartition,
    stateKey: (s) =>
      `${s.exact ? '=' : '≥'}${s.token}:${s.holder === null ? '' : `+${s.holder}`}${s.until === Number.NEGATIVE_INFINITY ? '' : `@${s.until}`}`,
  };
}

/**
 * Leases per key: `acquire {holder}` → `{epoch}`, `renew`/`release`/`write {holder, epoch}`, `get`.
 * With `ttlMs` (and `skewMs`) on `acquire`/`renew`, time-aware: the grant cannot end
 * before invoke + ttlMs − skewMs (no takeover, no `free`, no `lease_lost` completing earlier).
 */
export const parleyLeaseModel = fencedModel(
  { model: 'parley-lease', holder: 'holder', token: 'epoch' },
  'leases per key: acquire/renew/release/write/get; epochs strictly increase; writes need the newest epoch',
);

/** Locks per key: `acquire {owner}` → `{fence}`, `renew`/`release {owner, fence}`, `write {fence}`, `get`; time-aware like leases. */
export const parleyLockModel = fencedModel(
  { model: 'parley-lock', holder: 'owner', token: 'fence' },
  'locks per key: acquire/renew/release/get and fenced writes; fences strictly increase; stale fences rejected',
);
