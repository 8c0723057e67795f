/**
 * Strong watches over etcd watches. A change's revision is the etcd revision
 * of the event (the entry's mod_revision for a write), so the numbers a
 * watcher sees are the same on every node of a Parley cluster, and resuming
 * with `fromRevision` asks etcd to replay from the next revision.
 *
 * - A put of an entry is a `set` change with the entry as written.
 * - A delete is `delete` when the entry was live when it was deleted (a
 *   Parley delete or deleteNamespace), and `expire` when its deadline had
 *   passed: that is etcd's cleanup lease removing it (cleanup.ts), which runs
 *   some time after the deadline — one bucket plus a grace period, later if an
 *   etcd leader change restarted the lease (etcd issue 9888). So an `expire`
 *   change is never early, but it is late, and readers do not wait for it:
 *   an entry past its deadline is already absent from every read. An expired
 *   entry that is written again before its cleanup runs yields a `set`
 *   instead, and no `expire`.
 * - etcd keeps history until it is compacted. A resume point before the
 *   compaction fails: at once with `compacted` when this backend has already
 *   seen that compaction, otherwise (etcd only says so asynchronously) the
 *   watch logs a warning and continues from the current revision, as the
 *   built-in backend's polling watch does.
 *
 * A watch without `fromRevision` starts after the newest revision this
 * backend has seen in any answer, so no change acknowledged to this process
 * before the watch began is delivered, even when a lagging etcd member
 * serves the watch.
 *
 * Each change is delivered once, in revision order (changes of one
 * transaction, such as a deleteNamespace batch, share a revision and come in
 * etcd's order); etcd3 re-establishes a broken watch stream from the last
 * revision it delivered.
 */
import type { StrongChange, StrongWatchFilter } from '@parley/coord';
import { checkKey, checkNamespace } from '@parley/coord/validate';
import { InvalidArgumentError, isParleyError, ParleyError } from '@parley/interface';
import type { IKeyValue, IWatchResponse, Watcher } from 'etcd3';
import type { EtcdContext } from './context.js';
import { decodeKv, entryView } from './entries.js';

/** Pause before a cancelled watch is created again. */
const REWATCH_DELAY_MS = 200;

export interface WatchLogger {
  warn(obj: object, msg: string): void;
}

export class EtcdWatches {
  /** Revisions at or below this were compacted (learned from etcd's answers). */
  private compactedThrough = 0;
  private readonly active = new Set<() => void>();

  constructor(
    private readonly ctx: EtcdContext,
    private readonly logger: WatchLogger,
  ) {}

  close(): void {
    for (const stop of [...this.active]) stop();
  }

  watch(
    filter: StrongWatchFilter,
    fromRevision: number | undefined,
    callback: (change: StrongChange) => void,
  ): () => void {
    const namespace = checkNamespace(this.ctx.limits, filter.namespace);
    if (filter.prefix !== undefined && filter.prefix !== '') checkKey(this.ctx.limits, filter.prefix);
    if (fromRevision !== undefined && (!Number.isSafeInteger(fromRevision) || fromRevision < 0)) {
      throw new InvalidArgumentError('fromRevision must be a non-negative integer');
    }
    if (fromRevision !== undefined && fromRevision < this.compactedThrough) {
      throw new ParleyError('compacted', `changes after revision ${fromRevision} are no longer kept by etcd`, {
        index: fromRevision,
        firstIndex: this.compactedThrough + 1,
      });
    }
    const start = this.ctx.keys.entryPrefix(namespace, filter.prefix ?? '');
    let stopped = false;
    let watcher: Watcher | undefined;
    // "From now on": after every change this process has been told of, not after whatever the
    // (possibly lagging) member that serves the watch has applied so far.
    const startAfter = fromRevision ?? (this.ctx.calls.lastRevision > 0 ? this.ctx.calls.lastRevision : undefined);
    /** Changes at or below this revision are not this watch's (before its start). */
    const floor = startAfter ?? 0;
    let lastRevision = floor;
    let deliveredAtLast = new Set<string>();
    let timer: (() => void) | undefined;

    const deliver = (res: IWatchResponse) => {
      for (const ev of res.events) {
        if (stopped) return;
        const revision = Number(ev.kv.mod_revision);
        const id = ev.kv.key.toString('latin1');
        if (revision <= floor || revision < lastRevision) continue;
        if (revision === lastRevision && deliveredAtLast.has(id)) continue;
        if (revision > lastRevision) {
          lastRevision = revision;
          deliveredAtLast = new Set();
        }
        deliveredAtLast.add(id);
        const change = this.toChange(ev.type, ev.kv, ev.prev_kv, revision);
        if (change && change.namespace === namespace) callback(change);
      }
    };

    const open = (from: number | undefined) => {
      if (stopped) return;
      let builder = this.ctx.calls.client.watch().prefix(start).withPreviousKV();
      if (from !== undefined) builder = builder.startRevision(String(from + 1));
      const w = builder.watcher();
      watcher = w;
      w.on('data', deliver);
      w.on('error', (err: Error) => {
        if (stopped || watcher !== w) return;
        watcher = undefined;
        const resumeFrom: number | undefined = lastRevision > 0 ? lastRevision : from;
        // etcd cancels a watch whose start revision was compacted, often with no reason given: ask.
        void this.isCompacted(resumeFrom).then((compacted) => {
          if (stopped) return;
          if (compacted) {
            this.compactedThrough = Math.max(this.compactedThrough, (resumeFrom ?? 0) + 1);
            this.logger.warn(
              { namespace, fromRevision: resumeFrom ?? null },
              'strong watch (etcd): changes compacted, resuming at the head',
            );
          } else {
            this.logger.warn({ namespace, err: err.message }, 'strong watch (etcd): watch cancelled, re-watching');
          }
          timer = this.ctx.calls.scheduler.after(REWATCH_DELAY_MS, () => open(compacted ? undefined : resumeFrom));
        });
      });
    };
    open(startAfter);

    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.active.delete(stop);
      timer?.();
      const w = watcher;
      watcher = undefined;
      if (w) void w.cancel().catch(() => {});
    };
    this.active.add(stop);
    return stop;
  }

  /** True when etcd no longer keeps the revision after `from` (a range at it fails as compacted). */
  private async isCompacted(from: number | undefined): Promise<boolean> {
    if (from === undefined) return false;
    try {
      await this.ctx.calls.range(
        { key: this.ctx.keys.entriesRoot(), count_only: true, revision: from + 1 },
        { deadlineMs: this.ctx.clock.nowMs() + 5_000 },
      );
      return false;
    } catch (err) {
      return isParleyError(err, 'compacted') || /compacted/i.test(String(err));
    }
  }

  private toChange(
    type: string,
    kv: IKeyValue,
    prev: IKeyValue | undefined,
    revision: number,
  ): StrongChange | undefined {
    const name = this.ctx.keys.parseEntry(kv.key);
    if (!name) return undefined;
    try {
      if (type === 'Put') {
        return {
          ...name,
          type: 'set',
          entry: entryView(name.namespace, name.key, kv, decodeKv(this.ctx, kv)),
          revision,
        };
      }
      if (prev && prev.value.length > 0) {
        const record = decodeKv(this.ctx, prev);
        if (record.expiresAt <= this.ctx.clock.nowMs()) {
          return { ...name, type: 'expire', entry: entryView(name.namespace, name.key, prev, record), revision };
        }
      }
      return { ...name, type: 'delete', revision };
    } catch (err) {
      this.logger.warn({ key: kv.key.toString('utf8'), err: String(err) }, 'strong watch (etcd): undecodable entry');
      return undefined;
    }
  }
}
