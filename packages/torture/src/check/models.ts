/**
 * The independent checker's models, written from docs/guarantees.md and
 * docs/http-api.md (not from parley-check's models): a strong entry, and a
 * fenced grant (a lock's owner and fence, a lease's holder and epoch). Each
 * turns the harness's recorded calls into inputs for `wgl.ts`. Time plays no
 * part here: the time-aware properties are checked by `time.ts`.
 */
import type { Op } from '../history.js';
import type { CheckOp, SeqModel } from './wgl.js';

type Scalar = string | number | boolean | null;
const field = (v: unknown, k: string): Scalar | undefined =>
  v !== null && typeof v === 'object' ? ((v as Record<string, Scalar>)[k] ?? undefined) : undefined;

// ---------------------------------------------------------------------------
// Strong entry: absent, or a value with a version (null: written by a call whose reply was lost).

export type Entry = { readonly value: Scalar; readonly version: string | null } | null;

export type EntryCall =
  | { readonly f: 'get'; readonly seen: Entry; readonly code?: undefined }
  | {
      readonly f: 'set' | 'delete' | 'claim';
      readonly value: Scalar;
      readonly ifVersion: string | undefined;
      readonly ifNotExists: boolean;
      /** ok: the new version (set), the winner (claim); fail: the code. */
      readonly version?: string;
      readonly won?: boolean;
      readonly winner?: Entry;
      readonly code?: string;
    };

/** Does `e` (version possibly unknown) match an observed version? */
const versionFits = (e: Exclude<Entry, null>, v: string) => e.version === null || e.version === v;

export const entryModel: SeqModel<Entry, EntryCall> = {
  init: () => null,
  key: (s) => (s === null ? '-' : JSON.stringify([s.value, s.version])),
  step(s, c, known) {
    if (c.f === 'get') {
      if (c.seen === null) return s === null ? s : undefined;
      if (s === null || s.value !== c.seen.value || !versionFits(s, c.seen.version as string)) return undefined;
      return { value: s.value, version: c.seen.version };
    }
    if (!known) {
      // It may have happened: only where its condition could hold.
      if (c.f === 'claim') return s === null ? { value: c.value, version: null } : s;
      if (c.ifNotExists && s !== null) return s;
      if (c.ifVersion !== undefined && (s === null || !versionFits(s, c.ifVersion))) return s;
      if (c.f === 'delete') return null;
      return { value: c.value, version: null };
    }
    if (c.code !== undefined) {
      if (c.f === 'claim') return undefined; // a claim is never refused
      switch (c.code) {
        case 'key_not_found':
          return c.f === 'delete' && s === null ? s : undefined;
        case 'key_already_exists':
          return c.ifNotExists && s !== null ? s : undefined;
        case 'version_mismatch':
          // Legal when absent or when the version differs (an unknown version is not the one named).
          return c.ifVersion !== undefined && (s === null || s.version !== c.ifVersion) ? s : undefined;
        default:
          return undefined;
      }
    }
    if (c.f === 'claim') {
      if (c.won) return s === null ? { value: c.value, version: c.version as string } : undefined;
      const w = c.winner as Exclude<Entry, null>;
      if (s === null || s.value !== w.value || !versionFits(s, w.version as string)) return undefined;
      return { value: s.value, version: w.version };
    }
    if (c.ifNotExists && s !== null) return undefined;
    if (c.ifVersion !== undefined && (s === null || !versionFits(s, c.ifVersion))) return undefined;
    if (c.f === 'delete') return s === null ? undefined : null;
    if (s !== null && s.version === c.version) return undefined; // every write returns a fresh version
    return { value: c.value, version: c.version as string };
  },
};

export function entryCall(op: Op): EntryCall | null {
  const known = op.type === 'ok' || op.type === 'fail';
  if (op.f === 'get') {
    if (!known) return null; // a read with no answer observes nothing
    if (op.type === 'fail') return op.error === 'key_not_found' ? { f: 'get', seen: null } : null;
    const r = op.result;
    return {
      f: 'get',
      seen: r === null ? null : { value: field(r, 'value') ?? null, version: field(r, 'version') as string },
    };
  }
  const arg = op.value;
  const base = {
    f: op.f as 'set' | 'delete' | 'claim',
    value: field(arg, 'value') ?? null,
    ifVersion: (field(arg, 'ifVersion') as string | undefined) ?? undefined,
    ifNotExists: field(arg, 'ifNotExists') === true,
  };
  if (op.type === 'fail') {
    const observed = ['key_not_found', 'key_already_exists', 'version_mismatch'];
    return op.error !== undefined && observed.includes(op.error) ? { ...base, code: op.error } : null;
  }
  if (op.type !== 'ok') return base;
  const r = op.result;
  if (op.f === 'claim') {
    const won = field(r, 'won') === true;
    return {
      ...base,
      won,
      version: field(r, 'version') as string,
      winner: { value: field(r, 'value') ?? null, version: field(r, 'version') as string },
    };
  }
  return { ...base, version: (field(r, 'version') as string | undefined) ?? undefined };
}

// ---------------------------------------------------------------------------
// A fenced grant: the current holder and the newest token granted — exact, or only a lower
// bound when the newest grant came from a call whose reply was lost (any token at or above
// the bound may be its token; the first call that shows it pins it).

export interface Grant {
  readonly holder: string | null;
  readonly token: number;
  readonly exact: boolean;
}

export type GrantCall =
  | { readonly f: 'acquire'; readonly holder: string; readonly token?: number; readonly code?: string }
  | {
      readonly f: 'renew' | 'release' | 'write';
      readonly holder: string | undefined;
      readonly token: number;
      readonly code?: string;
    }
  | { readonly f: 'get'; readonly seen: { holder: string; token: number } | null };

/** Can `token` be the newest grant's? */
const fits = (s: Grant, token: number) => (s.exact ? s.token === token : token >= s.token);
const pinned = (s: Grant, token: number): Grant => (s.exact ? s : { holder: s.holder, token, exact: true });

export const grantModel: SeqModel<Grant, GrantCall> = {
  init: () => ({ holder: null, token: 0, exact: true }),
  key: (s) => `${s.holder ?? ''}/${s.exact ? '' : '>='}${s.token}`,
  step(s, c, known) {
    switch (c.f) {
      case 'get':
        if (c.seen === null) return s; // a grant may have run out unseen; it stays in place
        return s.holder === c.seen.holder && fits(s, c.seen.token) ? pinned(s, c.seen.token) : undefined;
      case 'acquire': {
        if (!known) return { holder: c.holder, token: s.token + 1, exact: false };
        if (c.code === 'lock_held') return s.holder !== null ? s : undefined;
        if (c.code !== undefined) return undefined;
        const t = c.token as number;
        if (s.exact && s.holder === c.holder && s.token === t) return s; // its own grant, answered again
        // A held grant may have run out (TTL): only the order of tokens is checked.
        return t > s.token ? { holder: c.holder, token: t, exact: true } : undefined;
      }
      case 'renew':
      case 'release':
      case 'write': {
        const mine = c.f === 'write' || s.holder === c.holder;
        const current = mine && fits(s, c.token);
        if (c.code === 'lease_lost') {
          if (c.f === 'write') return s;
          // Always possible; when it names the current grant, that grant is over.
          return current ? { holder: null, token: s.token, exact: s.exact } : s;
        }
        if (c.code === 'fence_stale') return !s.exact || c.token < s.token ? s : undefined;
        if (c.code !== undefined) return undefined;
        if (!current) return known ? undefined : s;
        if (c.f === 'release') return { holder: null, token: c.token, exact: true };
        return pinned(s, c.token);
      }
    }
  },
};

export function grantCall(op: Op, names: { holder: string; token: string }): GrantCall | null {
  const known = op.type === 'ok' || op.type === 'fail';
  const arg = op.value;
  if (op.f === 'get') {
    if (op.type !== 'ok') return null;
    const r = op.result;
    const h = field(r, names.holder);
    return {
      f: 'get',
      seen: h === null || h === undefined ? null : { holder: h as string, token: field(r, names.token) as number },
    };
  }
  const observed = ['lock_held', 'lease_lost', 'fence_stale'];
  if (op.type === 'fail' && (op.error === undefined || !observed.includes(op.error))) return null;
  const code = op.type === 'fail' ? op.error : undefined;
  if (op.f === 'acquire') {
    const token = known && code === undefined ? (field(op.result, names.token) as number) : undefined;
    return {
      f: 'acquire',
      holder: field(arg, names.holder) as string,
      ...(token === undefined ? {} : { token }),
      ...(code ? { code } : {}),
    };
  }
  const f = op.f as 'renew' | 'release' | 'write';
  const released = f === 'release' && op.type === 'ok' && field(op.result, 'released') === false;
  return {
    f,
    holder: (field(arg, names.holder) as string | undefined) ?? undefined,
    token: field(arg, names.token) as number,
    ...(released ? { code: 'lease_lost' } : code ? { code } : {}),
  };
}

// ---------------------------------------------------------------------------
// Names nothing observes. Before a key's search, the writes whose value no read and no
// claim shows write one value, and the acquires whose outcome is unknown by a holder no
// other call names take one holder: nothing compares them with anything, so which value
// or which holder it was cannot matter, and the calls become equal inputs (wgl.ts).

/** The one value and the one holder nothing observes (a key whose calls use it keeps its names). */
export const UNSEEN = '\u0000unseen';

export function unseenValues(ops: readonly CheckOp<EntryCall>[]): readonly CheckOp<EntryCall>[] {
  const shown = new Set<Scalar>();
  for (const { input: c } of ops) {
    if (c.f === 'get' && c.seen !== null) shown.add(c.seen.value);
    if (c.f === 'claim' && c.winner !== undefined && c.winner !== null) shown.add(c.winner.value);
  }
  if (shown.has(UNSEEN)) return ops;
  return ops.map((op) =>
    op.input.f === 'set' && !shown.has(op.input.value) ? { ...op, input: { ...op.input, value: UNSEEN } } : op,
  );
}

export function unseenHolders(ops: readonly CheckOp<GrantCall>[]): readonly CheckOp<GrantCall>[] {
  const named = new Map<string, number>();
  const name = (h: string | undefined) => {
    if (h !== undefined) named.set(h, (named.get(h) ?? 0) + 1);
  };
  for (const { input: c } of ops) name(c.f === 'get' ? c.seen?.holder : c.holder);
  if (named.has(UNSEEN)) return ops;
  return ops.map((op) =>
    op.ret === null && op.input.f === 'acquire' && named.get(op.input.holder) === 1
      ? { ...op, input: { ...op.input, holder: UNSEEN } }
      : op,
  );
}

/** The calls of one workload as the checker's input, per key, in recording order. */
export function toCheckOps<I>(
  ops: readonly Op[],
  order: ReadonlyMap<Op, [number, number | null]>,
  convert: (op: Op) => I | null,
): Map<string, CheckOp<I>[]> {
  const out = new Map<string, CheckOp<I>[]>();
  for (const op of ops) {
    const input = convert(op);
    if (input === null) continue;
    const [call, ret] = order.get(op) as [number, number | null];
    const list = out.get(op.key) ?? [];
    list.push({
      call,
      ret: op.type === 'info' ? null : ret,
      input,
      label: `op ${op.id} ${op.f} ${JSON.stringify(op.value)} → ${op.type} ${JSON.stringify(op.result ?? null)}${op.error ? ` ${op.error}` : ''}`,
    });
    out.set(op.key, list);
  }
  return out;
}
