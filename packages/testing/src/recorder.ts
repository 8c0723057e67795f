/**
 * Records every call the user's code makes through a node's API. The node
 * objects handed to the user are thin wrappers over the real ones: each strong
 * call is an operation in the history of its model (parley-entry,
 * parley-lease or parley-lock), each grant and fenced write a fencing event,
 * each eventual write a line of the eventual log; the result goes back to the
 * caller unchanged. Calls through the node of a crashed incarnation fail at
 * once with `unavailable` (the agent's process died with it) and are not recorded.
 */

import {
  entryClaim,
  entryDelete,
  entryGet,
  entrySet,
  FailedAnswer,
  HistoryRecorder,
  type HistoryValue,
  leaseAcquire,
  leaseGet,
  leaseOwn,
  lockAcquire,
  lockInspect,
  lockRelease,
  lockRenew,
  lockWrite,
  type ParleyModelName,
  type ParleyOperation,
} from '@parley/check';
import { type ReadConsistency, readConsistency } from '@parley/coord';
import { isParleyError, UnavailableError } from '@parley/interface';
import type {
  EventualEntry,
  EventualNamespace,
  EventualWriteOptions,
  JsonValue,
  Lease,
  Locks,
  ParleyNode,
  StrongEntry,
  StrongNamespace,
  StrongReadOptions,
  StrongWriteOptions,
} from '@parley/node';
import { strongDoc } from '@parley/node/backend';

export type ModelName = ParleyModelName;

/**
 * A call as the recorder records it: a model operation, or one in no model's history (an eventual
 * write, a serializable or bounded strong read).
 */
type RecordedOperation<T> =
  | ParleyOperation<T>
  | (Omit<ParleyOperation<T>, 'model'> & { readonly model: 'eventual' | 'strong-read' });

/** A strong `get` asked serializable or bounded: not in the linearizability history (`expectBoundedStaleness`). */
export interface StrongReadRecord {
  readonly key: string;
  readonly consistency: ReadConsistency;
  readonly call: RecordedCall;
}

/** One call as the user made it, for explanations and the timeline. */
export interface RecordedCall {
  readonly id: number;
  /** `n<node>` or `n<node>#<k>` when that node had k other calls of the model in flight. */
  readonly client: string;
  readonly node: number;
  readonly model: ModelName | 'eventual' | 'strong-read';
  /** The API method, e.g. `strong('jobs').set`. */
  readonly call: string;
  readonly key: string;
  readonly input: JsonValue;
  readonly startMs: number;
  endMs: number | undefined;
  outcome: 'ok' | 'fail' | 'info' | undefined;
  output: JsonValue | undefined;
  error: string | undefined;
}

export interface FenceObservation {
  readonly kind: 'grant' | 'write';
  readonly resource: string;
  readonly fence: number;
  readonly call: RecordedCall;
  readonly accepted: boolean;
}

export interface EventualWriteRecord {
  readonly node: number;
  readonly namespace: string;
  readonly key: string;
  readonly f: 'set' | 'delete' | 'increment';
  readonly version: string | undefined;
  readonly value: JsonValue | undefined;
  readonly call: RecordedCall;
}

/**
 * A call made with a `session` option (`expectSessionGuarantees`, `expectCausal`): the session is
 * named by its Session object (`s1`, `s2`, … in order of first use), the write or read by the
 * entry version it wrote or returned, so written values need not be unique.
 */
export interface SessionCallRecord {
  readonly session: string;
  readonly side: 'eventual' | 'strong';
  readonly namespace: string;
  readonly key: string;
  readonly kind: 'read' | 'write';
  readonly call: RecordedCall;
  /** The node answered (a read that found nothing too); false: it failed, or its outcome is unknown. */
  readonly answered: boolean;
  /** The version written or read; undefined for a read that found nothing, or a call that failed. */
  readonly version: string | undefined;
}

type After<T> = (rec: RecordedCall, outcome: { ok: true; value: T } | { ok: false; code: string }) => void;

/** Bound on recorded calls per simulation. */
const MAX_CALLS = 200_000;

export class Recorder {
  readonly histories: Record<ModelName, HistoryRecorder>;
  readonly calls: RecordedCall[] = [];
  readonly fences: FenceObservation[] = [];
  readonly eventualWrites: EventualWriteRecord[] = [];
  readonly strongReads: StrongReadRecord[] = [];
  readonly sessionCalls: SessionCallRecord[] = [];
  private readonly sessionNames = new WeakMap<object, string>();
  private sessionCount = 0;
  /** Keys the entry model cannot judge: leases, fenced writes, TTLs (`ns/key`). */
  readonly unmodelled = new Set<string>();
  readonly leaseKeys = new Set<string>();
  private readonly busy = new Map<string, Set<number>>();

  constructor(private readonly nowMs: () => number) {
    const opts = { nowMs, maxEvents: MAX_CALLS * 2 };
    this.histories = {
      entry: new HistoryRecorder(opts),
      lease: new HistoryRecorder(opts),
      lock: new HistoryRecorder(opts),
    };
  }

  /** Runs one call and records it; the caller gets the call's own outcome. */
  call<T>(
    node: number,
    call: string,
    key: string,
    op: RecordedOperation<NoInfer<T>>,
    run: () => Promise<T>,
    after?: (rec: RecordedCall, outcome: { ok: true; value: T } | { ok: false; code: string }) => void,
  ): Promise<T> {
    const { model, observed } = op;
    const input = op.input as JsonValue;
    if (this.calls.length >= MAX_CALLS)
      throw new UnavailableError(`the simulation recorded ${MAX_CALLS} calls (its bound)`);
    const slotKey = `${model}:${node}`;
    let used = this.busy.get(slotKey);
    if (used === undefined) this.busy.set(slotKey, (used = new Set()));
    let slot = 0;
    while (used.has(slot)) slot++;
    used.add(slot);
    const client = slot === 0 ? `n${node}` : `n${node}#${slot}`;
    const rec: RecordedCall = {
      id: this.calls.length,
      client,
      node,
      model,
      call,
      key,
      input,
      startMs: this.nowMs(),
      endMs: undefined,
      outcome: undefined,
      output: undefined,
      error: undefined,
    };
    this.calls.push(rec);
    const history = model === 'eventual' || model === 'strong-read' ? undefined : this.histories[model];
    const process = `${model}:${client}`;
    history?.invoke(process, op.f, op.input, key);
    const settle = (outcome: 'ok' | 'fail' | 'info', output: JsonValue | undefined, error: string | undefined) => {
      used.delete(slot);
      rec.endMs = this.nowMs();
      rec.outcome = outcome;
      rec.output = output;
      rec.error = error;
    };
    let promise: Promise<T>;
    try {
      promise = run();
    } catch (err) {
      promise = Promise.reject(err);
    }
    return promise.then(
      (value) => {
        const v = op.okValue(value);
        if (v instanceof FailedAnswer) {
          settle('fail', null, v.code);
          history?.fail(process, null, { error: v.code });
        } else {
          settle('ok', v as JsonValue, undefined);
          history?.ok(process, v);
        }
        after?.(rec, { ok: true, value });
        return value;
      },
      (err: unknown) => {
        const code = isParleyError(err) ? err.code : 'crash';
        const mapped = observed[code];
        if (mapped !== undefined) {
          settle('fail', null, mapped);
          history?.fail(process, null, { error: mapped });
        } else {
          settle('info', null, code);
          history?.info(process, null, { error: code });
        }
        after?.(rec, { ok: false, code });
        throw err;
      },
    );
  }

  /**
   * The `after` of a call made with `session` (none without one): records it as a session call
   * once it settles, then runs `after`. `versionOf` reads the version from the call's answer.
   */
  sessionAfter<T>(
    session: object | undefined,
    where: { side: 'eventual' | 'strong'; namespace: string; key: string; kind: 'read' | 'write' },
    versionOf: (value: T) => string | undefined,
    after?: After<T>,
  ): After<T> | undefined {
    if (session === undefined) return after;
    let named = this.sessionNames.get(session);
    if (named === undefined) {
      named = `s${++this.sessionCount}`;
      this.sessionNames.set(session, named);
    }
    const name = named;
    return (r, o) => {
      this.sessionCalls.push({
        session: name,
        ...where,
        call: r,
        answered: o.ok,
        version: o.ok ? versionOf(o.value) : undefined,
      });
      after?.(r, o);
    };
  }

  /** The node object the user gets: the real `node`, every call recorded. */
  wrapNode(node: ParleyNode, index: number, alive: () => boolean): ParleyNode {
    const guard = () => {
      if (!alive()) throw new UnavailableError(`node ${index} crashed; this handle belongs to its previous life`);
    };
    return {
      get peerId() {
        return node.peerId;
      },
      get addresses() {
        return node.addresses;
      },
      get cluster() {
        return node.cluster;
      },
      get events() {
        return node.events;
      },
      eventual: (ns) => this.wrapEventual(node.eventual(ns), ns, index, guard),
      strong: (ns) => this.wrapStrong(node.strong(ns), ns, index, guard),
      locks: (ns) => this.wrapLocks(node.locks(ns), ns, index, guard),
      status: () => node.status(),
      health: () => node.health(),
      close: () => node.close(),
    };
  }

  private wrapStrong(inner: StrongNamespace, ns: string, node: number, guard: () => void): StrongNamespace {
    const rec = this;
    const g =
      <T>(fn: () => Promise<T>) =>
      () => {
        guard();
        return fn();
      };
    const fencedWrite = <T>(
      call: string,
      key: string,
      fence: NonNullable<StrongWriteOptions['fence']>,
      run: () => Promise<T>,
    ) => {
      const resource = `${fence.namespace}/${fence.key}`;
      rec.unmodelled.add(`${ns}/${key}`);
      return rec.call(node, call, resource, lockWrite(fence.fence) as ParleyOperation<T>, g(run), (r, o) => {
        if (o.ok || o.code === 'fence_stale') {
          rec.fences.push({
            kind: 'write',
            resource: `lock:${resource}`,
            fence: fence.fence,
            call: r,
            accepted: o.ok,
          });
        }
      });
    };
    const wrapped: StrongNamespace = {
      name: inner.name,
      set(key, value, options = {}) {
        const call = `strong('${ns}').set`;
        if (options.fence) return fencedWrite(call, key, options.fence, () => inner.set(key, value, options));
        const k = `${ns}/${key}`;
        if (options.ttl !== undefined) rec.unmodelled.add(k);
        return rec.call(
          node,
          call,
          k,
          entrySet(value, options),
          g(() => inner.set(key, value, options)),
          rec.sessionAfter(options.session, { side: 'strong', namespace: ns, key, kind: 'write' }, (e) => e.version),
        );
      },
      get(key, options = {}) {
        const k = `${ns}/${key}`;
        const consistency = readConsistency(options);
        const readAt = { side: 'strong', namespace: ns, key, kind: 'read' } as const;
        if (consistency.level !== 'linearizable') {
          // Not linearizable by design: kept out of the model's history, checked by expectBoundedStaleness.
          const read: RecordedOperation<StrongEntry | undefined> = {
            model: 'strong-read',
            f: 'get',
            // The Session object is no JSON: the session checks name it (`s1`, …) apart.
            input: readInput(options),
            okValue: (e) => (e === undefined ? null : { value: e.value as HistoryValue, version: e.version }),
            observed: {},
          };
          return rec.call(
            node,
            `strong('${ns}').get`,
            k,
            read,
            g(() => inner.get(key, options)),
            rec.sessionAfter(
              options.session,
              readAt,
              (e) => e?.version,
              (r) => rec.strongReads.push({ key: k, consistency, call: r }),
            ),
          );
        }
        if (rec.leaseKeys.has(k)) {
          return rec.call(
            node,
            `strong('${ns}').get`,
            k,
            leaseGet(),
            g(() => inner.get(key, options)),
          );
        }
        return rec.call(
          node,
          `strong('${ns}').get`,
          k,
          entryGet(),
          g(() => inner.get(key, options)),
          rec.sessionAfter(options.session, readAt, (e: StrongEntry | undefined) => e?.version),
        );
      },
      delete(key, options = {}) {
        const call = `strong('${ns}').delete`;
        if (options.fence) return fencedWrite(call, key, options.fence, () => inner.delete(key, options));
        return rec.call(
          node,
          call,
          `${ns}/${key}`,
          entryDelete(options),
          g(() => inner.delete(key, options)),
        );
      },
      claim(key, value, options = {}) {
        const k = `${ns}/${key}`;
        if (options.ttl !== undefined) rec.unmodelled.add(k);
        return rec.call(
          node,
          `strong('${ns}').claim`,
          k,
          entryClaim(value),
          g(() => inner.claim(key, value, options)),
        );
      },
      async lease(key, options) {
        const k = `${ns}/${key}`;
        rec.leaseKeys.add(k);
        rec.unmodelled.add(k);
        const lease = await rec.call(
          node,
          `strong('${ns}').lease`,
          k,
          leaseAcquire(options.holder),
          g(() => inner.lease(key, options)),
          (r, o) => {
            if (o.ok)
              rec.fences.push({ kind: 'grant', resource: `lease:${k}`, fence: o.value.epoch, call: r, accepted: true });
          },
        );
        return rec.wrapLease(lease, k, node, guard);
      },
      async attach(key, holder) {
        guard();
        const k = `${ns}/${key}`;
        rec.leaseKeys.add(k);
        rec.unmodelled.add(k);
        const lease = await inner.attach(key, holder);
        return lease === undefined ? undefined : rec.wrapLease(lease, k, node, guard);
      },
      list: (query) => {
        guard();
        return inner.list(query);
      },
      deleteNamespace: (options) => {
        guard();
        return inner.deleteNamespace(options);
      },
      // Over this wrapper's own get and set: each read and compare-and-swap of the loop is recorded.
      doc: <T extends JsonValue>(key: string) => strongDoc<T>(wrapped, key),
      watch: (options, callback) => inner.watch(options, callback),
      // Not recorded: a queue scenario records its own queue-level history.
      queue: (name, options) => inner.queue(name, options),
    };
    return wrapped;
  }

  private wrapLease(lease: Lease, k: string, node: number, guard: () => void): Lease {
    const g =
      <T>(fn: () => Promise<T>) =>
      () => {
        guard();
        return fn();
      };
    const { holder, epoch } = lease;
    return {
      get namespace() {
        return lease.namespace;
      },
      get key() {
        return lease.key;
      },
      get holder() {
        return lease.holder;
      },
      get epoch() {
        return lease.epoch;
      },
      get view() {
        return lease.view;
      },
      renew: (ttl) =>
        this.call(
          node,
          'lease.renew',
          k,
          leaseOwn('renew', holder, epoch),
          g(() => lease.renew(ttl)),
        ),
      updateState: (state, options) =>
        this.call(
          node,
          'lease.updateState',
          k,
          leaseOwn('write', holder, epoch),
          g(() => lease.updateState(state, options)),
          (r, o) => {
            if (o.ok || o.code === 'lease_lost') {
              this.fences.push({ kind: 'write', resource: `lease:${k}`, fence: epoch, call: r, accepted: o.ok });
            }
          },
        ),
      release: (state) =>
        this.call(
          node,
          'lease.release',
          k,
          leaseOwn('release', holder, epoch),
          g(() => lease.release(state)),
        ),
    };
  }

  private wrapLocks(inner: Locks, ns: string, node: number, guard: () => void): Locks {
    const g =
      <T>(fn: () => Promise<T>) =>
      () => {
        guard();
        return fn();
      };
    return {
      name: inner.name,
      acquire: (key, options) =>
        this.call(
          node,
          `locks('${ns}').acquire`,
          `${ns}/${key}`,
          lockAcquire(options.owner),
          g(() => inner.acquire(key, options)),
          (r, o) => {
            if (o.ok)
              this.fences.push({
                kind: 'grant',
                resource: `lock:${ns}/${key}`,
                fence: o.value.fence,
                call: r,
                accepted: true,
              });
          },
        ),
      renew: (key, options) =>
        this.call(
          node,
          `locks('${ns}').renew`,
          `${ns}/${key}`,
          lockRenew(options.owner, options.fence),
          g(() => inner.renew(key, options)),
        ),
      release: (key, options) =>
        this.call(
          node,
          `locks('${ns}').release`,
          `${ns}/${key}`,
          lockRelease(options.owner, options.fence),
          g(() => inner.release(key, options)),
        ),
      inspect: (key) =>
        this.call(
          node,
          `locks('${ns}').inspect`,
          `${ns}/${key}`,
          lockInspect(),
          g(() => inner.inspect(key)),
        ),
    };
  }

  private wrapEventual(inner: EventualNamespace, ns: string, node: number, guard: () => void): EventualNamespace {
    const g =
      <T>(fn: () => Promise<T>) =>
      () => {
        guard();
        return fn();
      };
    const write =
      (f: 'set' | 'delete' | 'increment') =>
      (r: RecordedCall, o: { ok: true; value: EventualEntry | boolean } | { ok: false; code: string }) => {
        if (!o.ok) return;
        const entry = typeof o.value === 'boolean' ? undefined : o.value;
        this.eventualWrites.push({
          node,
          namespace: ns,
          key: r.key,
          f,
          version: entry?.version,
          value: entry?.value,
          call: r,
        });
      };
    const opts = (o: EventualWriteOptions | undefined): JsonValue => (o?.ttl !== undefined ? { ttl: o.ttl } : null);
    return {
      name: inner.name,
      set: (key, value, options) =>
        this.call(
          node,
          `eventual('${ns}').set`,
          key,
          eventual('set', { value, options: opts(options) }, (e: EventualEntry) => ({ version: e.version })),
          g(() => inner.set(key, value, options)),
          this.sessionAfter(
            options?.session,
            { side: 'eventual', namespace: ns, key, kind: 'write' },
            (e: EventualEntry) => e.version,
            write('set'),
          ),
        ),
      delete: (key, options) =>
        this.call(
          node,
          `eventual('${ns}').delete`,
          key,
          eventual('delete', null, (existed: boolean) => ({ existed })),
          g(() => inner.delete(key, options)),
          write('delete'),
        ),
      increment: (key, by, options) =>
        this.call(
          node,
          `eventual('${ns}').increment`,
          key,
          eventual('increment', { by: by ?? 1 }, (e: EventualEntry) => ({
            value: e.value as HistoryValue,
            version: e.version,
          })),
          g(() => inner.increment(key, by, options)),
          write('increment'),
        ),
      get: (key, options) => {
        guard();
        // A get is recorded only with a session (the session checks read it); without one it is not judged.
        if (options?.session === undefined) return inner.get(key, options);
        return this.call(
          node,
          `eventual('${ns}').get`,
          key,
          eventual('get', null, (e: EventualEntry | undefined) =>
            e === undefined ? null : { value: e.value as HistoryValue, version: e.version },
          ),
          () => inner.get(key, options),
          this.sessionAfter(
            options.session,
            { side: 'eventual', namespace: ns, key, kind: 'read' },
            (e: EventualEntry | undefined) => e?.version,
          ),
        );
      },
      peek: (key) => {
        guard();
        return inner.peek(key);
      },
      list: (query) => {
        guard();
        return inner.list(query);
      },
      watch: (options, callback) => inner.watch(options, callback),
      changes: (options) => inner.changes(options),
      yjs: (key) => {
        guard();
        return inner.yjs(key);
      },
      automerge: <T>(key: string) => {
        guard();
        return inner.automerge<T>(key);
      },
      ephemeral: (channel) => inner.ephemeral(channel),
    };
  }
}

/** A strong read's options as recorded: all but the session. */
function readInput(options: StrongReadOptions): HistoryValue {
  const { session: _session, ...rest } = options;
  return rest as HistoryValue;
}

/** An eventual call: recorded as a call, in no model's history. */
function eventual<T>(f: string, input: JsonValue, okValue: (r: T) => HistoryValue): RecordedOperation<T> {
  return { model: 'eventual', f, input: input as HistoryValue, okValue, observed: {} };
}
