/**
 * Records every call the user's code makes through a node's API. The node
 * objects handed to the user are thin wrappers over the real ones: each strong
 * call is an operation in the history of its model (parley-entry,
 * parley-lease or parley-lock), each grant and fenced write a fencing event,
 * each eventual write a line of the eventual log; the result goes back to the
 * caller unchanged. Calls through the node of a crashed incarnation fail at
 * once with `unavailable` (the agent's process died with it) and are not recorded.
 */

import { HistoryRecorder, type HistoryValue } from '@parley/check';
import { isParleyError, UnavailableError } from '@parley/interface';
import type {
  EventualEntry,
  EventualNamespace,
  EventualWriteOptions,
  JsonValue,
  Lease,
  Locks,
  ParleyNode,
  StrongNamespace,
  StrongWriteOptions,
} from '@parley/node';
import { strongDoc } from '@parley/node/backend';

export type ModelName = 'entry' | 'lease' | 'lock';

/** One call as the user made it, for explanations and the timeline. */
export interface RecordedCall {
  readonly id: number;
  /** `n<node>` or `n<node>#<k>` when that node had k other calls of the model in flight. */
  readonly client: string;
  readonly node: number;
  readonly model: ModelName | 'eventual';
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

/** An answer the model reads as a failure with this code (an absent key, a delete of nothing). */
class Failed {
  constructor(readonly code: string) {}
}

/** Bound on recorded calls per simulation. */
const MAX_CALLS = 200_000;

export class Recorder {
  readonly histories: Record<ModelName, HistoryRecorder>;
  readonly calls: RecordedCall[] = [];
  readonly fences: FenceObservation[] = [];
  readonly eventualWrites: EventualWriteRecord[] = [];
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
    model: ModelName | 'eventual',
    node: number,
    call: string,
    key: string,
    input: JsonValue,
    run: () => Promise<T>,
    okValue: (r: T) => HistoryValue | Failed,
    observed: Record<string, string> = {},
    after?: (rec: RecordedCall, outcome: { ok: true; value: T } | { ok: false; code: string }) => void,
  ): Promise<T> {
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
    const history = model === 'eventual' ? undefined : this.histories[model];
    const process = `${model}:${client}`;
    history?.invoke(process, fName(call, model), input as HistoryValue, key);
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
        const v = okValue(value);
        if (v instanceof Failed) {
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
      return rec.call(
        'lock',
        node,
        call,
        resource,
        { fence: fence.fence },
        g(run),
        () => ({}),
        { fence_stale: 'fence_stale' },
        (r, o) => {
          if (o.ok || o.code === 'fence_stale') {
            rec.fences.push({
              kind: 'write',
              resource: `lock:${resource}`,
              fence: fence.fence,
              call: r,
              accepted: o.ok,
            });
          }
        },
      );
    };
    const wrapped: StrongNamespace = {
      name: inner.name,
      set(key, value, options = {}) {
        const call = `strong('${ns}').set`;
        if (options.fence) return fencedWrite(call, key, options.fence, () => inner.set(key, value, options));
        const k = `${ns}/${key}`;
        if (options.ttl !== undefined) rec.unmodelled.add(k);
        const input: Record<string, JsonValue> = { value };
        const observed: Record<string, string> = {};
        if (options.ifVersion !== undefined) {
          input.ifVersion = options.ifVersion;
          observed.version_mismatch = 'version_mismatch';
          observed.key_not_found = 'version_mismatch';
        }
        if (options.ifNotExists) {
          input.ifNotExists = true;
          observed.key_already_exists = 'key_already_exists';
        }
        return rec.call(
          'entry',
          node,
          call,
          k,
          input,
          g(() => inner.set(key, value, options)),
          (r) => ({ version: r.version }),
          observed,
        );
      },
      get(key) {
        const k = `${ns}/${key}`;
        if (rec.leaseKeys.has(k)) {
          return rec.call(
            'lease',
            node,
            `strong('${ns}').get`,
            k,
            null,
            g(() => inner.get(key)),
            (e): HistoryValue => {
              if (e === undefined) return null;
              const doc = e.value as { holder: string | null; epoch: number };
              return doc.holder === null ? { holder: null } : { holder: doc.holder, epoch: doc.epoch };
            },
          );
        }
        return rec.call(
          'entry',
          node,
          `strong('${ns}').get`,
          k,
          null,
          g(() => inner.get(key)),
          (e) =>
            e === undefined ? new Failed('key_not_found') : { value: e.value as HistoryValue, version: e.version },
        );
      },
      delete(key, options = {}) {
        const call = `strong('${ns}').delete`;
        if (options.fence) return fencedWrite(call, key, options.fence, () => inner.delete(key, options));
        const input = options.ifVersion !== undefined ? { ifVersion: options.ifVersion } : null;
        return rec.call(
          'entry',
          node,
          call,
          `${ns}/${key}`,
          input,
          g(() => inner.delete(key, options)),
          (existed) => (existed ? { existed: true } : new Failed('key_not_found')),
          { key_not_found: 'key_not_found', version_mismatch: 'version_mismatch' },
        );
      },
      claim(key, value, options = {}) {
        const k = `${ns}/${key}`;
        if (options.ttl !== undefined) rec.unmodelled.add(k);
        return rec.call(
          'entry',
          node,
          `strong('${ns}').claim`,
          k,
          { value },
          g(() => inner.claim(key, value, options)),
          (r): HistoryValue =>
            r.won
              ? { won: true, version: r.version }
              : { won: false, value: r.value as HistoryValue, version: r.version },
        );
      },
      async lease(key, options) {
        const k = `${ns}/${key}`;
        rec.leaseKeys.add(k);
        rec.unmodelled.add(k);
        const lease = await rec.call(
          'lease',
          node,
          `strong('${ns}').lease`,
          k,
          { holder: options.holder },
          g(() => inner.lease(key, options)),
          (l) => ({ epoch: l.epoch }),
          { lock_held: 'lock_held' },
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
    const base = { holder: lease.holder, epoch: lease.epoch };
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
          'lease',
          node,
          'lease.renew',
          k,
          base,
          g(() => lease.renew(ttl)),
          () => ({}),
          { lease_lost: 'lease_lost' },
        ),
      updateState: (state, options) =>
        this.call(
          'lease',
          node,
          'lease.updateState',
          k,
          base,
          g(() => lease.updateState(state, options)),
          () => ({}),
          { lease_lost: 'lease_lost' },
          (r, o) => {
            if (o.ok || o.code === 'lease_lost') {
              this.fences.push({ kind: 'write', resource: `lease:${k}`, fence: base.epoch, call: r, accepted: o.ok });
            }
          },
        ),
      release: (state) =>
        this.call(
          'lease',
          node,
          'lease.release',
          k,
          base,
          g(() => lease.release(state)),
          () => ({}),
          { lease_lost: 'lease_lost' },
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
          'lock',
          node,
          `locks('${ns}').acquire`,
          `${ns}/${key}`,
          { owner: options.owner },
          g(() => inner.acquire(key, options)),
          (grant) => ({ fence: grant.fence }),
          { lock_held: 'lock_held' },
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
          'lock',
          node,
          `locks('${ns}').renew`,
          `${ns}/${key}`,
          { owner: options.owner, fence: options.fence },
          g(() => inner.renew(key, options)),
          () => ({}),
          { fence_stale: 'fence_stale', lease_lost: 'lease_lost' },
        ),
      release: (key, options) =>
        this.call(
          'lock',
          node,
          `locks('${ns}').release`,
          `${ns}/${key}`,
          { owner: options.owner, fence: options.fence },
          g(() => inner.release(key, options)),
          (released) => ({ released }),
        ),
      inspect: (key) =>
        this.call(
          'lock',
          node,
          `locks('${ns}').inspect`,
          `${ns}/${key}`,
          null,
          g(() => inner.inspect(key)),
          (info) => (info.holder === null ? null : { owner: info.holder.owner, fence: info.holder.fence }),
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
          'eventual',
          node,
          `eventual('${ns}').set`,
          key,
          { value, options: opts(options) },
          g(() => inner.set(key, value, options)),
          (e) => ({ version: e.version }),
          {},
          write('set'),
        ),
      delete: (key, options) =>
        this.call(
          'eventual',
          node,
          `eventual('${ns}').delete`,
          key,
          null,
          g(() => inner.delete(key, options)),
          (existed) => ({ existed }),
          {},
          write('delete'),
        ),
      increment: (key, by, options) =>
        this.call(
          'eventual',
          node,
          `eventual('${ns}').increment`,
          key,
          { by: by ?? 1 },
          g(() => inner.increment(key, by, options)),
          (e) => ({ value: e.value as HistoryValue, version: e.version }),
          {},
          write('increment'),
        ),
      get: (key, options) => {
        guard();
        return inner.get(key, options);
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

/** The model's operation name of an API call. */
function fName(call: string, model: ModelName | 'eventual'): string {
  const m = call.slice(call.lastIndexOf('.') + 1);
  if (model === 'lock' && (m === 'set' || m === 'delete')) return 'write'; // a fenced write
  switch (m) {
    case 'lease':
      return 'acquire';
    case 'updateState':
      return 'write';
    case 'inspect':
      return 'get';
    default:
      return m;
  }
}
