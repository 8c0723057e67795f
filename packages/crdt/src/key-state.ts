/**
 * The lattice of one key's state: the join of registers, tombstones and
 * PN-counter incarnations (LWW by birth stamp, shares joined per node), and
 * what a key state means to a reader (expiry, entry, latest stamp, dots).
 */
import type { DotContext } from './context.js';
import { type Hlc, hlcVersion } from './hlc.js';
import { Register } from './register.js';
import type { CounterShare, CounterState, Entry, KeyState, RegisterState, TombstoneState } from './types.js';

/** Stamp order of two key states by their (wallMs, logical, node) identity. */
function compareBorn(a: KeyState, b: KeyState): number {
  if (a.wallMs !== b.wallMs) return a.wallMs < b.wallMs ? -1 : 1;
  if (a.logical !== b.logical) return a.logical < b.logical ? -1 : 1;
  if (a.node === b.node) return 0;
  return a.node < b.node ? -1 : 1;
}

const TYPE_RANK = { register: 0, tombstone: 1, counter: 2 } as const;

/** Later of two shares of the same node: by stamp, then seq, then ttl (total, so the join is too). */
function laterShare(a: CounterShare, b: CounterShare): CounterShare {
  if (a.wallMs !== b.wallMs) return a.wallMs > b.wallMs ? a : b;
  if (a.logical !== b.logical) return a.logical > b.logical ? a : b;
  if (a.seq !== b.seq) return a.seq > b.seq ? a : b;
  return a.ttlSeconds >= b.ttlSeconds ? a : b;
}

function joinShares(a: CounterShare, b: CounterShare): CounterShare {
  const last = laterShare(a, b);
  const inc = Math.max(a.inc, b.inc);
  const dec = Math.max(a.dec, b.dec);
  if (inc === last.inc && dec === last.dec) return last;
  return { inc, dec, wallMs: last.wallMs, logical: last.logical, seq: last.seq, ttlSeconds: last.ttlSeconds };
}

function sameShare(a: CounterShare, b: CounterShare): boolean {
  return (
    a.inc === b.inc &&
    a.dec === b.dec &&
    a.wallMs === b.wallMs &&
    a.logical === b.logical &&
    a.seq === b.seq &&
    a.ttlSeconds === b.ttlSeconds
  );
}

/** Join of two incarnations with the same birth stamp: shares join per node. Returns `a` when b adds nothing. */
function joinCounters(a: CounterState, b: CounterState): CounterState {
  let shares: Map<string, CounterShare> | undefined;
  for (const [node, theirs] of b.shares) {
    const mine = a.shares.get(node);
    const joined = mine ? joinShares(mine, theirs) : theirs;
    if (mine && sameShare(mine, joined)) continue;
    shares ??= new Map(a.shares);
    shares.set(node, joined);
  }
  const createdAt = Math.min(a.createdAt, b.createdAt);
  if (!shares && createdAt === a.createdAt) return a;
  return {
    type: 'counter',
    key: a.key,
    wallMs: a.wallMs,
    logical: a.logical,
    node: a.node,
    createdAt,
    shares: shares ? sortShares(shares) : a.shares,
  };
}

export function sortShares(shares: Map<string, CounterShare>): Map<string, CounterShare> {
  if (shares.size < 2) return shares;
  return new Map([...shares].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)));
}

/** Deterministic order for two registers with the same stamp (only a faulty peer makes them). */
function compareRegisterPayload(a: RegisterState, b: RegisterState): number {
  if (a.seq !== b.seq) return a.seq - b.seq;
  if (a.ttlSeconds !== b.ttlSeconds) return a.ttlSeconds - b.ttlSeconds;
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  const ta = JSON.stringify(a.value);
  const tb = JSON.stringify(b.value);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/**
 * The join of two states of one key: the greater birth stamp wins (LWW); two
 * incarnations of one counter join their shares. Ties on the stamp, which only
 * a faulty peer produces, break deterministically. Returns `a` when it already
 * dominates `b`.
 */
export function joinKeyStates(a: KeyState, b: KeyState): KeyState {
  const c = compareBorn(a, b);
  if (c > 0) return a;
  if (c < 0) return b;
  if (a.type === 'counter' && b.type === 'counter') return joinCounters(a, b);
  // A counter sits just after the state its base names, so it wins that tie.
  if (a.type !== b.type) return TYPE_RANK[a.type] > TYPE_RANK[b.type] ? a : b;
  if (a.type === 'tombstone') return (a as TombstoneState).seq >= (b as TombstoneState).seq ? a : b;
  return compareRegisterPayload(a as RegisterState, b as RegisterState) >= 0 ? a : b;
}

/** Calls fn for every dot (node, seq) a key state carries. */
export function forEachDot(state: KeyState, fn: (node: string, seq: number) => void): void {
  if (state.type === 'counter') {
    for (const [node, share] of state.shares) fn(node, share.seq);
  } else {
    fn(state.node, state.seq);
  }
}

export function holdsDot(state: KeyState | undefined, node: string, seq: number): boolean {
  if (!state) return false;
  if (state.type === 'counter') return state.shares.get(node)?.seq === seq;
  return state.node === node && state.seq === seq;
}

/** The share with the latest stamp (it sets the counter's TTL, version and updatedAt). */
export function latestShare(state: CounterState): [string, CounterShare] {
  let bestNode = '';
  let best: CounterShare | undefined;
  for (const [node, share] of state.shares) {
    if (
      !best ||
      share.wallMs > best.wallMs ||
      (share.wallMs === best.wallMs &&
        (share.logical > best.logical || (share.logical === best.logical && node > bestNode)))
    ) {
      best = share;
      bestNode = node;
    }
  }
  return [bestNode, best as CounterShare];
}

/** When a key state reads as absent: tombstones always (−∞), entries at updatedAt + ttl. */
export function expiresAtOf(state: KeyState): number {
  switch (state.type) {
    case 'tombstone':
      return Number.NEGATIVE_INFINITY;
    case 'register':
      return state.wallMs + state.ttlSeconds * 1000;
    case 'counter': {
      if (state.shares.size === 0) return Number.NEGATIVE_INFINITY;
      const [, s] = latestShare(state);
      return s.wallMs + s.ttlSeconds * 1000;
    }
  }
}

/** The entry a reader sees for a register or counter state (ignoring expiry). */
export function entryOf(state: RegisterState | CounterState): Entry {
  if (state.type === 'register') return Register.from(state);
  const [node, last] = latestShare(state);
  let total = 0;
  for (const s of state.shares.values()) total += s.inc - s.dec;
  return {
    value: total,
    version: hlcVersion({ wallMs: last.wallMs, logical: last.logical, node }),
    ttlSeconds: last.ttlSeconds,
    createdAt: state.createdAt,
    updatedAt: last.wallMs,
    expiresAt: last.wallMs + last.ttlSeconds * 1000,
  };
}

/** The stamp of the latest write a key state holds. */
export function latestStampOf(state: KeyState): Hlc {
  if (state.type !== 'counter') return state;
  const [node, s] = latestShare(state);
  return { wallMs: s.wallMs, logical: s.logical, node };
}

export function seenBy(ctx: DotContext, state: KeyState): boolean {
  let all = true;
  forEachDot(state, (node, seq) => {
    if (!ctx.has(node, seq)) all = false;
  });
  return all;
}

export function maxWallOf(state: KeyState): number {
  let w = state.wallMs;
  if (state.type === 'counter') for (const s of state.shares.values()) if (s.wallMs > w) w = s.wallMs;
  return w;
}

export function maxLogicalAt(state: KeyState, wallMs: number): number {
  let l = state.wallMs === wallMs ? state.logical : 0;
  if (state.type === 'counter') {
    for (const s of state.shares.values()) if (s.wallMs === wallMs && s.logical > l) l = s.logical;
  }
  return l;
}
