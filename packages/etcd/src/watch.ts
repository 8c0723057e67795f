/**
 * Strong watches over etcd watches. A change's revision is the etcd revision
 * of the event (the entry's mod_revision for a write), so the numbers a
 * watcher sees are the same on every node of a Parley cluster, and resuming
 * with `fromRevision` asks etcd to replay from the next revision.
 *
 * - A put of an entry is a `set` change with the entry as written.
 * - A delete is `delete` when a Parley call removed the entry (delete or
 *   deleteNamespace), and `expire` when etcd's cleanup lease did (cleanup.ts),
 *   which runs some time after the deadline — one bucket plus a grace period,
 *   later if an etcd leader change restarted the lease (etcd issue 9888). So an
 *   `expire` change is never early, but it is late, and readers do not wait for
 *   it: an entry past its deadline is already absent from every read. An
 *   expired entry that is written again before its cleanup runs yields a `set`
 *   instead, and no `expire`.
 *   The label depends on what happened at the delete's revision, never on when
 *   the change is delivered (a replay long after the deadline labels it the
 *   same): a delete before the entry's deadline is a Parley call's (the cleanup
 *   lease outlives every deadline it serves); past the deadline, the revision is
 *   asked about — every Parley write transaction creates one request record
 *   (`<prefix>/x/<id>`, txn.ts) and a lease expiry only deletes, so the count of
 *   request records rising at that revision means a Parley call. Should etcd no
 *   longer keep that revision (compacted), the delivery time decides, as a
 *   fallback.
 * - A prefix is matched as the built-in backend matches it (`startsWith` on the
 *   key); the etcd range may be wider (keys.ts, `entryPrefix`).
 * - etcd keeps history until it is compacted. A resume point before the
 *   compaction fails: at once with `compacted` when this backend has already
 *   seen that compaction, otherwise (etcd only says so asynchronously) the
 *   watch delivers what it received and then ends with `compacted`
 *   (`onError`, else a warning), as the built-in backend's watches do. It
 *   never resumes at the head.
 *
 * A watch without `fromRevision` starts after the newest revision this
 * backend has seen in any answer, so no change acknowledged to this process
 * before the watch began is delivered, even when a lagging etcd member
 * serves the watch. A backend that has seen no revision yet learns one with
 * a linearizable read first, and holds back the calls issued meanwhile until
 * it answers, so a write made after `watch` returned is always delivered
 * (without it the watch would start at whatever head etcd had when the
 * watcher was created, and could miss such a write). No answer within 5 s
 * ends the watch with `unavailable`.
 *
 * Each change is delivered once, in revision order (changes of one
 * transaction, such as a deleteNamespace batch, share a revision and come in
 * etcd's order); etcd3 re-establishes a broken watch stream from the last
 * revision it delivered.
 */
import type { StrongChange, StrongWatchFilter } from '@parley/coord';
import { checkKey, checkNamespace } from '@parley/coord/shared';
import { InvalidArgumentError, isParleyError, ParleyError, UnavailableError } from '@parley/interface';
import type { IKeyValue, IWatchResponse, Watcher } from 'etcd3';
import type { EtcdContext } from './context.js';
import { decodeKv, entryView } from './entries.js';
import { prefixEnd } from './keys.js';

/** How long a watch waits to learn its start point (no revision seen yet) before it fails. */
const START_TIMEOUT_MS = 5_000;

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
    onError?: (err: ParleyError) => void,
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
    const prefix = filter.prefix ?? '';
    const start = this.ctx.keys.entryPrefix(namespace, prefix);
    let stopped = false;
    let watcher: Watcher | undefined;
    // "From now on": after every change this process has been told of, not after whatever the
    // (possibly lagging) member that serves the watch has applied so far.
    // With no revision seen yet, one read learns it first (calls issued meanwhile wait for it: txn.ts).
    const known = fromRevision ?? (this.ctx.calls.lastRevision > 0 ? this.ctx.calls.lastRevision : undefined);
    const learning = known === undefined ? this.ctx.calls.watchStart(START_TIMEOUT_MS) : undefined;
    /** Changes at or below this revision are not this watch's (before its start). */
    let floor = known ?? 0;
    let lastRevision = floor;
    let deliveredAtLast = new Set<string>();
    let timer: (() => void) | undefined;
    /** Set once the watch cannot go on (its history is gone, or no start point): it ends once what it received is delivered. */
    let ending: ParleyError | undefined;

    // Events are handled one at a time, in order: labelling a delete may have to ask etcd.
    let pending: IWatchResponse['events'] = [];
    let next = 0;
    let pumping = false;
    const pump = async () => {
      pumping = true;
      try {
        while (next < pending.length && !stopped) {
          const ev = pending[next++] as IWatchResponse['events'][number];
          const revision = Number(ev.kv.mod_revision);
          const id = ev.kv.key.toString('latin1');
          if (revision <= floor || revision < lastRevision) continue;
          if (revision === lastRevision && deliveredAtLast.has(id)) continue;
          if (revision > lastRevision) {
            lastRevision = revision;
            deliveredAtLast = new Set();
          }
          deliveredAtLast.add(id);
          const made = this.toChange(ev.type, ev.kv, ev.prev_kv, revision);
          const change = made instanceof Promise ? await made : made;
          if (stopped) return;
          if (change && change.namespace === namespace && change.key.startsWith(prefix)) callback(change);
        }
        pending = [];
        next = 0;
      } finally {
        pumping = false;
        if (ending && !stopped) finish();
      }
    };
    const deliver = (res: IWatchResponse) => {
      if (stopped) return;
      pending.push(...res.events);
      if (!pumping) {
        void pump().catch((err: unknown) =>
          this.logger.warn({ namespace, err: String(err) }, 'strong watch (etcd): a change callback threw'),
        );
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
            // Never resume at the head: that would skip what was compacted without a word.
            ending = new ParleyError('compacted', `changes after revision ${resumeFrom} are no longer kept by etcd`, {
              index: resumeFrom ?? 0,
              firstIndex: this.compactedThrough + 1,
            });
            if (!pumping) finish();
            return;
          }
          this.logger.warn({ namespace, err: err.message }, 'strong watch (etcd): watch cancelled, re-watching');
          timer = this.ctx.calls.scheduler.after(REWATCH_DELAY_MS, () => open(resumeFrom));
        });
      });
    };
    if (learning === undefined) open(known);
    else {
      void learning.then((start) => {
        if (stopped) return;
        if (start === undefined) {
          // Opening at whatever head etcd has by then could skip a write made meanwhile: fail loudly.
          ending = new UnavailableError('etcd: no answer to learn where the watch starts', { backend: 'etcd' });
          finish();
          return;
        }
        floor = start;
        lastRevision = start;
        open(start);
      });
    }

    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.active.delete(stop);
      timer?.();
      const w = watcher;
      watcher = undefined;
      if (w) void w.cancel().catch(() => {});
    };
    const finish = () => {
      const err = ending as ParleyError;
      stop();
      if (onError) onError(err);
      else this.logger.warn({ namespace, err: err.message }, 'strong watch (etcd): changes compacted, the watch ended');
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

  /** The change of one etcd event; a promise when labelling a delete needs to ask etcd (see the file comment). */
  private toChange(
    type: string,
    kv: IKeyValue,
    prev: IKeyValue | undefined,
    revision: number,
  ): StrongChange | undefined | Promise<StrongChange | undefined> {
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
      const deleted: StrongChange = { ...name, type: 'delete', revision };
      if (!prev || prev.value.length === 0) return deleted;
      const record = decodeKv(this.ctx, prev);
      // Before the deadline only a Parley call deletes: the cleanup lease outlives the deadline.
      if (record.expiresAt > this.ctx.clock.nowMs()) return deleted;
      const expired: StrongChange = {
        ...name,
        type: 'expire',
        entry: entryView(name.namespace, name.key, prev, record),
        revision,
      };
      return this.removedByParley(revision).then((byParley) => {
        if (byParley === undefined) return expired; // revision compacted: judged at delivery
        return byParley ? deleted : expired;
      });
    } catch (err) {
      this.logger.warn({ key: kv.key.toString('utf8'), err: String(err) }, 'strong watch (etcd): undecodable entry');
      return undefined;
    }
  }

  /** The last revision asked about (a deleteNamespace batch is many deletes at one revision). */
  private asked: { revision: number; answer: Promise<boolean | undefined> } | undefined;

  /**
   * Whether a Parley write transaction ran at `revision`: the request records counted at it
   * exceed those at the revision before (a transaction creates one; a lease expiry only
   * deletes). Undefined when etcd cannot say (compacted, or no answer within 5 s).
   */
  private removedByParley(revision: number): Promise<boolean | undefined> {
    if (this.asked?.revision === revision) return this.asked.answer;
    const root = this.ctx.keys.requestsRoot();
    const count = async (at: number) => {
      const res = await this.ctx.calls.range(
        { key: root, range_end: prefixEnd(root), count_only: true, revision: at },
        { deadlineMs: this.ctx.clock.nowMs() + 5_000 },
      );
      return Number(res.count);
    };
    const answer = Promise.all([count(revision), count(revision - 1)]).then(
      ([at, before]) => at > before,
      (err: unknown) => {
        this.logger.warn({ revision, err: String(err) }, 'strong watch (etcd): cannot tell a delete from an expiry');
        return undefined;
      },
    );
    this.asked = { revision, answer };
    return answer;
  }
}
