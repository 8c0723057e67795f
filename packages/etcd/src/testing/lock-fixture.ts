/**
 * What the lease, lock and fence tests share: finding etcd (a missing etcd
 * fails under CI=true, and elsewhere is said loudly and skipped), a clock
 * the test moves by hand, backends on one cluster under fresh prefixes, and
 * coord's state machine run side by side on the same clock as the oracle.
 */
import { CoordStateMachine, type Operation, type OpResult } from '@parley/coord';
import { isParleyError, SeededRandom } from '@parley/interface';
import { EtcdBackend, type EtcdBackendOptions } from '../backend.js';
import { ETCD_MISSING, type EtcdCluster, findEtcd } from './etcd-cluster.js';

/** The etcd binary, or undefined after saying loudly why the tests skip (throws under CI=true). */
export function etcdForTests(suite: string): string | undefined {
  const bin = findEtcd();
  if (!bin) {
    if (process.env.CI === 'true') throw new Error(`CI needs etcd for ${suite}.\n${ETCD_MISSING}`);
    console.error(`\n*** SKIPPING ${suite}: ${ETCD_MISSING}\n`);
  }
  return bin;
}

/** A clock that moves only when the test says (ms since the epoch). */
export class ManualClock {
  constructor(public ms = Date.now()) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

let prefixCounter = 0;

/** A backend on `cluster` under a prefix of its own. */
export function backendOn(
  cluster: EtcdCluster,
  clock: { nowMs(): number },
  seed: number,
  extra: Partial<EtcdBackendOptions> = {},
): EtcdBackend {
  prefixCounter++;
  return new EtcdBackend({
    endpoints: cluster.endpoints,
    prefix: `/ll${process.pid}-${prefixCounter}`,
    clock,
    random: new SeededRandom(seed + prefixCounter),
    callTimeoutMs: 8_000,
    ...extra,
  });
}

/** The error code of a rejected call, or 'ok'. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (isParleyError(err)) return err.code;
    throw err;
  }
}

const READS = new Set(['get', 'list', 'lease_attach', 'lock_inspect', 'lock_list']);

/** coord's state machine on the test's clock (no time-step clamp: the test jumps its clock). */
export class CoordOracle {
  readonly sm: CoordStateMachine;
  private index = 0;
  constructor(
    private readonly clock: { nowMs(): number },
    limits: Record<string, number> = {},
  ) {
    this.sm = new CoordStateMachine({ versionKey: 'oracle', limits: { maxTimeStepMs: 1e15, ...limits } });
    this.sm.apply({ nowMs: clock.nowMs(), op: { type: 'noop' } }, { index: ++this.index, term: 1 });
  }

  /** Applies (or queries) `op` at the clock's time; the result, or the error code. */
  run(op: Operation): OpResult | string {
    const now = this.clock.nowMs();
    // Time moves in the machine as on a leader that proposes `expire` (the node does, every second).
    this.sm.apply({ nowMs: now, op: { type: 'expire' } }, { index: ++this.index, term: 1 });
    const r = READS.has(op.type)
      ? this.sm.query(op, now)
      : this.sm.apply({ nowMs: now, clientId: undefined, op }, { index: ++this.index, term: 1 }).result;
    return r.ok ? r.value : r.error.code;
  }
}

/** Runs `op` on an etcd backend: the result, or the error code. */
export async function runOn(b: EtcdBackend, op: Operation, waitMs = 0): Promise<OpResult | string> {
  try {
    return READS.has(op.type) ? await b.read(op) : await b.write(op, { waitMs });
  } catch (err) {
    if (isParleyError(err)) return err.code;
    throw err;
  }
}

/**
 * Maps per-side tokens (fences, epochs) to the order they first appeared in,
 * so two backends' results compare although their numbers differ (each
 * side's tokens strictly increase; the ranks must then agree).
 */
export class TokenRanks {
  private readonly ranks = new Map<number, number>();
  rank(token: number): number {
    let r = this.ranks.get(token);
    if (r === undefined) {
      r = this.ranks.size + 1;
      this.ranks.set(token, r);
    }
    return r;
  }
  /** The token of rank `r` (for sending it back in an operation), or a number never issued. */
  tokenOf(r: number): number {
    for (const [t, rr] of this.ranks) if (rr === r) return t;
    return 9_000_000_000_000 + r;
  }
}

/** A result with versions dropped and fences/epochs replaced by their ranks. */
export function normalized(r: OpResult | string, ranks: TokenRanks): unknown {
  if (typeof r === 'string') return r;
  return JSON.parse(
    JSON.stringify(r, (k, v) => {
      if (k === 'version') return undefined;
      if ((k === 'fence' || k === 'lastFence' || k === 'epoch') && typeof v === 'number' && v > 0) return ranks.rank(v);
      return v;
    }),
  );
}

/**
 * Makes the next `count` write transactions that carry a request id apply on
 * etcd and then lose their answer (a connection reset after the commit): the
 * backend resends, and must answer from the request record instead of
 * applying again. Returns how many answers were dropped so far.
 */
export function loseAnswers(b: EtcdBackend, count: number): () => number {
  const kv = b.client.kv;
  const original = kv.txn.bind(kv);
  let dropped = 0;
  const marker = Buffer.from(`${b.keys.prefix}/x/`, 'utf8');
  kv.txn = async (req, options) => {
    const res = await original(req, options);
    const carriesRequest = (req.success ?? []).some((op) => op.request_put?.key?.includes(marker));
    if (carriesRequest && res.succeeded && dropped < count) {
      dropped++;
      throw new Error('read ECONNRESET (answer lost after the commit)');
    }
    return res;
  };
  return () => dropped;
}
