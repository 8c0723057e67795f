/**
 * Every call Parley makes to etcd goes through here: bounded by the call's
 * deadline (a gRPC deadline and a timer of our own, so nothing hangs),
 * retried on transient failures (no leader, leader changed, connection lost,
 * a member down) until that deadline, and mapped to ParleyErrors:
 * `timeout` when the deadline passes, `unavailable` when etcd refuses for
 * good, `closed` after close().
 *
 * Transactions may be resent (by this loop and by the etcd3 client's own
 * retry policy) because a write carries a request id: the transaction
 * creates `<prefix>/x/<id>` (with the write's result) only if it does not
 * exist yet, and its failure branch reads it back. A resend of a transaction
 * that was applied before the connection dropped therefore fails its
 * compares and returns the first result (`replayed`) instead of applying
 * twice. Request records live on a short cleanup lease (cleanup.ts).
 */
import type { JsonValue } from '@parley/coord/shared';
import {
  type Clock,
  ClosedError,
  isParleyError,
  ParleyError,
  type Random,
  type Scheduler,
  StorageCorruptError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
} from '@parley/interface';
import type {
  Etcd3,
  ICompare,
  IKeyValue,
  IRangeRequest,
  IRangeResponse,
  IRequestOp,
  IResponseOp,
  ITxnResponse,
} from 'etcd3';
import type { KeyLayout } from './keys.js';
import { decodeRequestRecord, encodeRequestRecord } from './record.js';

/** The absolute deadline of one Parley call, on the backend's clock. */
export interface CallBound {
  deadlineMs: number;
  /**
   * A serializable read: ranges and read-only transactions are answered by
   * the etcd member the client reaches, from its own state (etcd's
   * `serializable` range option), with no quorum read.
   */
  serializable?: boolean;
  /** The header revisions of this call's answers, lowest and highest (for a caller's session; backend.ts). */
  seen?: { low: number; high: number };
}

/** One transaction: compares, what to do when they hold, what to read when they do not. */
export interface TxnSpec {
  compares: ICompare[];
  success: IRequestOp[];
  /** Reads (usually of the compared keys) to decide again from when a compare fails. */
  failure?: IRequestOp[];
  /**
   * Exactly-once: the request id (from `newRequestId`), its cleanup lease and
   * the result to remember. The record is created in the same transaction.
   */
  request?: { id: string; leaseId: string; result: JsonValue };
}

export interface TxnOutcome {
  succeeded: boolean;
  /** The revision the transaction ran at (the mod_revision of what it wrote, when it succeeded). */
  revision: number;
  /** Responses of `success` or `failure` (the request record's own op left out). */
  responses: IResponseOp[];
  /** The request id was already applied: its first result and the revision it was written at. */
  replayed?: { result: JsonValue; revision: number };
}

/** Longest pause between two attempts of one call. */
const MAX_BACKOFF_MS = 500;
const FIRST_BACKOFF_MS = 20;

const TRANSIENT =
  /leader|timed out|too many requests|stopped|unavailable|connect|ECONNREFUSED|ECONNRESET|circuit|cancel|closed the stream|not capable|GOAWAY|RST_STREAM|No connection/i;

/** Maps an etcd3 / gRPC failure to a ParleyError; `transient` ones may be retried within the call. */
export function mapEtcdError(err: unknown): { error: ParleyError; transient: boolean } {
  if (err instanceof ParleyError) return { error: err, transient: false };
  const name = err instanceof Error ? err.constructor.name : '';
  const message = err instanceof Error ? err.message : String(err);
  if (name === 'ClientClosedError') return { error: new ClosedError('etcd client'), transient: false };
  if (/compacted/i.test(message)) {
    return { error: new ParleyError('compacted', `etcd: ${message}`, { index: 0, firstIndex: 0 }), transient: false };
  }
  if (/request is too large|message larger than max/i.test(message)) {
    return {
      error: new ParleyError('value_too_large', `etcd refused the request as too large: ${message}`, {}),
      transient: false,
    };
  }
  if (/permission denied|authenticat|invalid auth token/i.test(message) || /Auth|Permission/.test(name)) {
    return { error: new UnauthorizedError(`etcd: ${message}`), transient: false };
  }
  if (/DeadlineExceeded/.test(name) || TRANSIENT.test(message) || /Unavailable|Cancelled|Internal/.test(name)) {
    return { error: new UnavailableError(`etcd: ${message}`, { backend: 'etcd' }), transient: true };
  }
  return { error: new UnavailableError(`etcd: ${message}`, { backend: 'etcd' }), transient: false };
}

/** The etcd calls of one backend: ranges and transactions, bounded, retried and mapped (see the file comment). */
export class EtcdCalls {
  private closed = false;
  /** Attempts re-sent after a transient failure (observability, tests). */
  retries = 0;
  /** Key and value bytes of every key-value etcd returned to ranges and transactions (observability, tests). */
  bytesRead = 0;
  /**
   * The newest etcd revision any answer to this backend carried: every change
   * acknowledged to this process is at or below it (a watch "from now on"
   * starts after it, whichever member serves the watch).
   */
  lastRevision = 0;
  /**
   * While a watch "from now on" learns its start point (this backend had seen
   * no revision yet), every call waits for that read's answer before it is
   * sent, so each write issued after the watch began lands after its start.
   */
  private startPoint: Promise<number | undefined> | undefined;

  private count(kvs: readonly IKeyValue[] | undefined): void {
    for (const kv of kvs ?? []) this.bytesRead += kv.key.length + kv.value.length;
  }

  private note(revision: string | undefined, bound: CallBound): void {
    const r = Number(revision);
    if (!Number.isSafeInteger(r)) return;
    if (r > this.lastRevision) this.lastRevision = r;
    const seen = bound.seen;
    if (seen === undefined) return;
    if (r < seen.low) seen.low = r;
    if (r > seen.high) seen.high = r;
  }

  constructor(
    readonly client: Etcd3,
    readonly keys: KeyLayout,
    readonly clock: Clock,
    readonly scheduler: Scheduler,
    private readonly random: Random,
  ) {}

  close(): void {
    this.closed = true;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** A fresh request id: 128 random bits, after the (cluster-unique) id of its cleanup lease. */
  newRequestId(leaseId: string): string {
    let id = `${BigInt(leaseId).toString(36)}-`;
    for (let i = 0; i < 4; i++) id += this.random.nextU32().toString(16).padStart(8, '0');
    return id;
  }

  /**
   * Runs `fn` with gRPC call options bounded by the call, retrying transient
   * failures with backoff until the deadline. Never outlives the deadline.
   */
  async run<T>(what: string, bound: CallBound, fn: (options: { deadline: Date }) => Promise<T>): Promise<T> {
    if (this.startPoint) await this.startPoint;
    return this.attempt(what, bound, fn);
  }

  /**
   * For a watch "from now on" on a backend that has seen no revision yet:
   * the revision of one linearizable read, which calls issued meanwhile wait
   * for (`startPoint`; watches starting meanwhile share it). Undefined when
   * etcd gave no answer within `timeoutMs`.
   */
  watchStart(timeoutMs: number): Promise<number | undefined> {
    if (this.startPoint) return this.startPoint;
    const bound: CallBound = { deadlineMs: this.clock.nowMs() + timeoutMs };
    this.startPoint = this.attempt('range', bound, (o) =>
      this.client.kv.range({ key: this.keys.entriesRoot(), count_only: true }, o),
    ).then(
      (res) => {
        this.startPoint = undefined;
        this.note(res.header?.revision, bound);
        return this.lastRevision > 0 ? this.lastRevision : undefined;
      },
      () => {
        this.startPoint = undefined;
        return undefined;
      },
    );
    return this.startPoint;
  }

  private async attempt<T>(
    what: string,
    bound: CallBound,
    fn: (options: { deadline: Date }) => Promise<T>,
  ): Promise<T> {
    let backoffMs = FIRST_BACKOFF_MS;
    let last: ParleyError | undefined;
    for (let _attempt = 0; ; _attempt++) {
      if (this.closed) throw new ClosedError('etcd backend');
      const remainingMs = bound.deadlineMs - this.clock.nowMs();
      if (remainingMs <= 0) {
        throw new TimeoutError(`etcd ${what}: no answer within the call's bound`, {
          backend: 'etcd',
          lastError: last?.message ?? null,
        });
      }
      try {
        return await this.bounded(remainingMs, fn({ deadline: new Date(Date.now() + remainingMs) }), what);
      } catch (err) {
        if (isParleyError(err, 'timeout')) throw err;
        const mapped = mapEtcdError(err);
        if (!mapped.transient || this.closed) throw mapped.error;
        last = mapped.error;
      }
      this.retries++;
      const pause = Math.min(backoffMs, Math.max(0, bound.deadlineMs - this.clock.nowMs()));
      backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
      await new Promise<void>((r) => this.scheduler.after(pause, r));
    }
  }

  private bounded<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const cancel = this.scheduler.after(ms, () =>
        reject(new TimeoutError(`etcd ${what}: no answer within ${Math.round(ms)} ms`, { backend: 'etcd' })),
      );
      p.then(
        (v) => {
          cancel();
          resolve(v);
        },
        (e) => {
          cancel();
          reject(e);
        },
      );
    });
  }

  /** A range read: linearizable, or serializable when the bound says so. */
  async range(req: IRangeRequest, bound: CallBound): Promise<IRangeResponse> {
    const sent = bound.serializable === true ? { ...req, serializable: true } : req;
    const res = await this.run('range', bound, (o) => this.client.kv.range(sent, o));
    this.note(res.header?.revision, bound);
    this.count(res.kvs);
    return res;
  }

  /** One key's current key-value, or undefined. */
  async get(key: Buffer, bound: CallBound): Promise<IKeyValue | undefined> {
    return (await this.range({ key }, bound)).kvs[0];
  }

  /** Runs one transaction (see TxnSpec); resent on transient failures, applied at most once when it carries a request id. */
  async txn(spec: TxnSpec, bound: CallBound): Promise<TxnOutcome> {
    const compares = [...spec.compares];
    // A read-only transaction whose every range is serializable is answered by the member reached (etcd's rule).
    const readOnly =
      bound.serializable === true &&
      compares.length === 0 &&
      !spec.request &&
      spec.success.every((op) => op.request_range !== undefined);
    const success: IRequestOp[] = readOnly
      ? spec.success.map((op) => ({ request_range: { ...op.request_range, serializable: true } }))
      : [...spec.success];
    const failure = [...(spec.failure ?? [])];
    let requestKey: Buffer | undefined;
    if (spec.request) {
      requestKey = this.keys.request(spec.request.id);
      compares.unshift({ key: requestKey, target: 'Create', result: 'Equal', create_revision: 0 });
      success.push({
        request_put: { key: requestKey, value: encodeRequestRecord(spec.request.result), lease: spec.request.leaseId },
      });
      failure.push({ request_range: { key: requestKey } });
    }
    const res: ITxnResponse = await this.run('txn', bound, (o) =>
      this.client.kv.txn({ compare: compares, success, failure }, o),
    );
    const revision = Number(res.header.revision);
    this.note(res.header.revision, bound);
    for (const r of res.responses) this.count(r.response_range?.kvs);
    const responses = [...res.responses];
    if (requestKey === undefined) return { succeeded: res.succeeded, revision, responses };
    const own = responses.pop();
    if (!res.succeeded) {
      const kv = own?.response_range?.kvs?.[0];
      if (kv) {
        let result: JsonValue;
        try {
          result = decodeRequestRecord(kv.value);
        } catch (err) {
          throw new StorageCorruptError('etcd', `request record ${spec.request?.id}: ${(err as Error).message}`);
        }
        return { succeeded: false, revision, responses, replayed: { result, revision: Number(kv.mod_revision) } };
      }
    }
    return { succeeded: res.succeeded, revision, responses };
  }
}
