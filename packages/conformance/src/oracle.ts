/**
 * The oracle: one seeded workload of strong operations, without faults, run
 * in lockstep on two nodes with different backends. After each step the two
 * results must be equal once opaque tokens are mapped:
 *
 * - a version token seen for the first time is named after the step (and its
 *   place in the result) that revealed it, so two runs agree only if their
 *   versions are in bijection;
 * - fences and epochs are named the same way, and must strictly increase per
 *   lock or lease key on each backend: they are compared by order, not value;
 * - timestamps are dropped; errors compare by code.
 *
 * Later operations refer to tokens by name (`ifVersion` of step 12), and each
 * run substitutes its own token, so the same workload runs on both.
 */
import type { JsonValue } from '@parley/coord';
import { isParleyError, SeededRandom } from '@parley/interface';
import type { Lease } from '@parley/node';
import type { StrongNode } from './backends.js';
import type { JumpClock } from './clock.js';

/** Kinds of operation; `time` adds short TTLs (5 s) and steps of the runs' clocks. */
export type OracleKind = 'entry' | 'claim' | 'list' | 'lock' | 'lease' | 'time';

/** A token reference: the name of a token an earlier step revealed. */
type Ref = string;

export type OracleOp =
  | { f: 'get'; key: string }
  | {
      f: 'set';
      key: string;
      value: JsonValue;
      ttl: number;
      ifNotExists?: true;
      ifVersion?: Ref;
      fence?: { key: string; fence: Ref };
    }
  | { f: 'delete'; key: string; ifVersion?: Ref }
  | { f: 'claim'; key: string; value: JsonValue; ttl: number }
  | { f: 'list' }
  | { f: 'acquire'; key: string; owner: string; ttl: number }
  | { f: 'renew'; key: string; owner: string; fence: Ref; ttl: number }
  | { f: 'release'; key: string; owner: string; fence: Ref }
  | { f: 'inspect'; key: string }
  | { f: 'lease'; key: string; holder: string; state: JsonValue; ttl: number }
  | { f: 'lease-renew'; lease: Ref; ttl: number }
  | { f: 'lease-write'; lease: Ref; state: JsonValue; ifVersion?: Ref }
  | { f: 'lease-release'; lease: Ref; state: JsonValue }
  | { f: 'attach'; key: string; holder: string }
  /** Time passes: each run's clock moves forward by `ms`, and a write outside the workload's namespaces follows. */
  | { f: 'wait'; ms: number };

/** A step's outcome with tokens replaced by their names. */
export type Normalized = { ok: unknown } | { error: string };

const ENTRY_KEYS = ['k0', 'k1', 'k2'];
const CLAIM_KEYS = ['c0', 'c1'];
const LOCK_KEYS = ['m0', 'm1'];
const LEASE_KEYS = ['l0', 'l1'];
const OWNERS = ['a', 'b', 'c'];
/** A TTL that runs out within a few `wait` steps (seconds). */
const SHORT_TTL_S = 5;
/** One `wait` step: below the built-in's `maxTimeStepMs` (5 s). */
const WAIT_MS = 3_000;
const TIME_FIELDS = new Set(['createdAt', 'updatedAt', 'expiresAt', 'acquiredAt', 'deadlineAt']);
const NS = 'oracle';
const LOCK_NS = 'oracle-locks';

/** One backend's side of the lockstep run. */
export class OracleRun {
  private readonly names = new Map<string, Ref>();
  private readonly values = new Map<Ref, string | number>();
  private readonly leases = new Map<Ref, Lease>();
  /** Per lock or lease key: the last token granted (tokens must strictly increase). */
  private readonly lastToken = new Map<string, number>();
  readonly orderViolations: string[] = [];

  constructor(
    private readonly node: StrongNode,
    private readonly clock?: JumpClock,
  ) {}

  private token(kind: 'v' | 'f', raw: string | number, step: number, place: string, key?: string): Ref {
    const id = kind === 'f' ? `f:${key}:${String(raw)}` : `v:${String(raw)}`;
    let name = this.names.get(id);
    if (name === undefined) {
      name = `${kind}@${step}.${place}`;
      this.names.set(id, name);
      this.values.set(name, raw);
      if (kind === 'f' && key !== undefined) {
        const last = this.lastToken.get(key) ?? 0;
        if (typeof raw === 'number' && raw <= last) {
          this.orderViolations.push(`step ${step}: token ${raw} for ${key} does not exceed ${last}`);
        }
        if (typeof raw === 'number') this.lastToken.set(key, Math.max(last, raw));
      }
    }
    return name;
  }

  private value<T extends string | number>(ref: Ref): T {
    const v = this.values.get(ref);
    if (v === undefined) throw new Error(`unknown token ${ref}`);
    return v as T;
  }

  /** Replaces versions, fences and epochs by names; drops times. */
  private normalize(x: unknown, step: number, place: string, tokenKey?: string): unknown {
    if (Array.isArray(x)) return x.map((v, i) => this.normalize(v, step, `${place}${i}.`, tokenKey));
    if (x === null || typeof x !== 'object') return x;
    const out: Record<string, unknown> = {};
    const obj = x as Record<string, unknown>;
    const key =
      typeof obj.key === 'string' && typeof obj.namespace === 'string' ? `${obj.namespace}/${obj.key}` : tokenKey;
    for (const k of Object.keys(obj).sort()) {
      const v = obj[k];
      if (TIME_FIELDS.has(k)) continue;
      if (k === 'version' && typeof v === 'string') out[k] = this.token('v', v, step, `${place}${k}`);
      else if ((k === 'fence' || k === 'epoch' || k === 'lastFence') && typeof v === 'number' && v > 0) {
        out[k] = this.token('f', v, step, `${place}${k}`, key);
      } else out[k] = this.normalize(v, step, `${place}${k}.`, key);
    }
    return out;
  }

  /** Runs one operation and returns its normalized outcome. */
  async step(op: OracleOp, step: number): Promise<Normalized> {
    try {
      const r = await this.run(op, step);
      return { ok: this.normalize(r, step, '') };
    } catch (err) {
      if (isParleyError(err)) return { error: err.code };
      throw err;
    }
  }

  private async run(op: OracleOp, step: number): Promise<unknown> {
    const ns = this.node.strong(NS);
    const locks = this.node.locks(LOCK_NS);
    switch (op.f) {
      case 'get':
        return (await ns.get(op.key)) ?? null;
      case 'set': {
        const r = await ns.set(op.key, op.value, {
          ttl: op.ttl,
          ...(op.ifNotExists ? { ifNotExists: true } : {}),
          ...(op.ifVersion ? { ifVersion: this.value<string>(op.ifVersion) } : {}),
          ...(op.fence
            ? { fence: { namespace: LOCK_NS, key: op.fence.key, fence: this.value<number>(op.fence.fence) } }
            : {}),
        });
        return r;
      }
      case 'delete':
        return {
          deleted: await ns.delete(op.key, op.ifVersion ? { ifVersion: this.value<string>(op.ifVersion) } : {}),
        };
      case 'claim': {
        const r = await ns.claim(op.key, op.value, { ttl: op.ttl });
        return { won: r.won, value: r.value, version: r.version, entry: r.entry };
      }
      case 'list':
        return await ns.list({ sortBy: 'key' });
      case 'acquire':
        return await locks.acquire(op.key, { owner: op.owner, ttl: op.ttl });
      case 'renew':
        return await locks.renew(op.key, { owner: op.owner, fence: this.value<number>(op.fence), ttl: op.ttl });
      case 'release':
        return { released: await locks.release(op.key, { owner: op.owner, fence: this.value<number>(op.fence) }) };
      case 'inspect':
        return await locks.inspect(op.key);
      case 'lease': {
        const l = await ns.lease(op.key, { ttl: op.ttl, holder: op.holder, state: op.state });
        this.leases.set(`lease@${step}`, l);
        return l.view;
      }
      case 'lease-renew':
        return await this.lease(op.lease).renew(op.ttl);
      case 'lease-write':
        return await this.lease(op.lease).updateState(
          op.state,
          op.ifVersion ? { ifVersion: this.value<string>(op.ifVersion) } : {},
        );
      case 'lease-release':
        await this.lease(op.lease).release(op.state);
        return { released: true };
      case 'wait': {
        if (!this.clock) throw new Error('a wait step needs the run to have a JumpClock');
        this.clock.advance(op.ms);
        await this.node.strong('oracle-clock').set('tick', step);
        return null;
      }
      case 'attach': {
        const l = await ns.attach(op.key, op.holder);
        if (l) this.leases.set(`lease@${step}`, l);
        return l ? l.view : null;
      }
    }
  }

  private lease(ref: Ref): Lease {
    const l = this.leases.get(ref);
    if (!l) throw new Error(`unknown lease ${ref}`);
    return l;
  }
}

/** What the workload generator knows: token names revealed so far, per key. */
interface Known {
  versions: Map<string, Ref[]>;
  fences: Map<string, { owner: string; fence: Ref }[]>;
  leases: { key: string; ref: Ref }[];
}

function pick<T>(rng: SeededRandom, xs: readonly T[]): T {
  return xs[rng.int(xs.length)] as T;
}

/** The next operation, from the seed and the token names revealed so far. */
function nextOp(rng: SeededRandom, kinds: readonly OracleKind[], known: Known, step: number): OracleOp {
  const kind = pick(rng, kinds);
  const value = { step, n: rng.int(100) };
  // With `time`, one TTL in three is short enough to run out during the workload.
  const timed = kinds.includes('time');
  const ttl = () => (timed && rng.int(3) === 0 ? SHORT_TTL_S : 600);
  const someVersion = (key: string): Ref | undefined => {
    const own = known.versions.get(key) ?? [];
    // Mostly the newest version of the key; sometimes a stale one, or another key's.
    const r = rng.int(10);
    if (r < 6 && own.length > 0) return own[own.length - 1];
    if (r < 8 && own.length > 0) return pick(rng, own);
    const all = [...known.versions.values()].flat();
    return all.length > 0 ? pick(rng, all) : undefined;
  };
  switch (kind) {
    case 'entry': {
      const key = pick(rng, ENTRY_KEYS);
      const r = rng.int(10);
      if (r < 2) return { f: 'get', key };
      if (r < 4) return { f: 'set', key, value, ttl: ttl() };
      if (r < 5) return { f: 'set', key, value, ttl: ttl(), ifNotExists: true };
      if (r < 7) {
        const v = someVersion(key);
        return v ? { f: 'set', key, value, ttl: ttl(), ifVersion: v } : { f: 'set', key, value, ttl: ttl() };
      }
      if (r < 8) {
        const v = someVersion(key);
        return v ? { f: 'delete', key, ifVersion: v } : { f: 'delete', key };
      }
      return { f: 'delete', key };
    }
    case 'claim':
      return { f: 'claim', key: pick(rng, CLAIM_KEYS), value, ttl: ttl() };
    case 'list':
      return { f: 'list' };
    case 'lock': {
      const key = pick(rng, LOCK_KEYS);
      const grants = known.fences.get(key) ?? [];
      const r = rng.int(10);
      if (r < 3 || grants.length === 0) return { f: 'acquire', key, owner: pick(rng, OWNERS), ttl: ttl() };
      const g = rng.int(3) === 0 ? pick(rng, grants) : (grants[grants.length - 1] as { owner: string; fence: Ref });
      if (r < 5) return { f: 'release', key, owner: g.owner, fence: g.fence };
      if (r < 6) return { f: 'renew', key, owner: g.owner, fence: g.fence, ttl: ttl() };
      if (r < 7) return { f: 'inspect', key };
      return { f: 'set', key: pick(rng, ENTRY_KEYS), value, ttl: ttl(), fence: { key, fence: g.fence } };
    }
    case 'lease': {
      const key = pick(rng, LEASE_KEYS);
      const mine = known.leases.filter((l) => l.key === key);
      const r = rng.int(10);
      if (r < 3 || mine.length === 0) return { f: 'lease', key, holder: pick(rng, OWNERS), state: value, ttl: ttl() };
      const l = rng.int(3) === 0 ? pick(rng, mine) : (mine[mine.length - 1] as { key: string; ref: Ref });
      if (r < 5) return { f: 'lease-renew', lease: l.ref, ttl: ttl() };
      if (r < 7) {
        const v = someVersion(`lease:${key}`);
        return { f: 'lease-write', lease: l.ref, state: value, ...(v && rng.int(2) === 0 ? { ifVersion: v } : {}) };
      }
      if (r < 8) return { f: 'attach', key, holder: pick(rng, OWNERS) };
      return { f: 'lease-release', lease: l.ref, state: value };
    }
    case 'time':
      return { f: 'wait', ms: WAIT_MS };
  }
}

/** Remembers the token names a step revealed, for later operations to use. */
function learn(known: Known, op: OracleOp, out: Normalized, step: number): void {
  if (!('ok' in out) || out.ok === null || typeof out.ok !== 'object') return;
  const r = out.ok as Record<string, unknown>;
  const addVersion = (key: string, v: unknown) => {
    if (typeof v !== 'string') return;
    const list = known.versions.get(key) ?? [];
    if (!list.includes(v)) list.push(v);
    known.versions.set(key, list);
  };
  const entry = (r.entry ?? r) as Record<string, unknown>;
  if ((op.f === 'set' || op.f === 'get') && 'key' in op) addVersion(op.key, entry.version);
  if (op.f === 'claim') addVersion(op.key, r.version);
  if (op.f === 'acquire' && typeof r.fence === 'string') {
    const list = known.fences.get(op.key) ?? [];
    list.push({ owner: op.owner, fence: r.fence });
    known.fences.set(op.key, list);
  }
  if ((op.f === 'lease' || op.f === 'attach') && typeof r.key === 'string') {
    known.leases.push({ key: r.key, ref: `lease@${step}` });
    addVersion(`lease:${r.key}`, r.version);
  }
  if ((op.f === 'lease-write' || op.f === 'lease-renew') && typeof r.key === 'string')
    addVersion(`lease:${r.key}`, r.version);
}

export interface OracleDifference {
  step: number;
  op: OracleOp;
  a: Normalized;
  b: Normalized;
}

export interface OracleReport {
  steps: number;
  /** The first step where the backends disagree, if any. */
  difference?: OracleDifference;
  /** Tokens that did not strictly increase per key, per backend. */
  orderViolations: { a: string[]; b: string[] };
  /** Outcomes per operation and result (`set:ok`, `set:version_mismatch`, ...): what the run exercised. */
  coverage: Record<string, number>;
}

/** A node under the oracle, with the clock it was started with (needed for the `time` kind). */
export interface OracleSide {
  node: StrongNode;
  clock?: JumpClock;
}

/** Runs `steps` seeded operations on `a` and `b` in lockstep; stops at the first difference. */
export async function runOracle(
  seed: number,
  steps: number,
  kinds: readonly OracleKind[],
  a: OracleSide,
  b: OracleSide,
): Promise<OracleReport> {
  const rng = new SeededRandom(seed);
  const known: Known = { versions: new Map(), fences: new Map(), leases: [] };
  const runA = new OracleRun(a.node, a.clock);
  const runB = new OracleRun(b.node, b.clock);
  const coverage: Record<string, number> = {};
  for (let step = 1; step <= steps; step++) {
    const op = nextOp(rng, kinds, known, step);
    const outA = await runA.step(op, step);
    const outB = await runB.step(op, step);
    const label = `${op.f}:${'error' in outA ? outA.error : 'ok'}`;
    coverage[label] = (coverage[label] ?? 0) + 1;
    if (JSON.stringify(outA) !== JSON.stringify(outB)) {
      return {
        steps: step,
        difference: { step, op, a: outA, b: outB },
        orderViolations: { a: runA.orderViolations, b: runB.orderViolations },
        coverage,
      };
    }
    learn(known, op, outA, step);
  }
  return { steps, orderViolations: { a: runA.orderViolations, b: runB.orderViolations }, coverage };
}
