/**
 * Watch streams on the register namespace: each watcher holds a stream through
 * a random node for 3–15 s (or until the node dies), then resumes through
 * another node from the last revision it saw (`from_revision`). Every event
 * is recorded. After the faults, a marker write is watched for, so every
 * watcher has caught up before the checks: no revision twice or out of order,
 * every watcher agreeing on what each revision holds, every acknowledged write
 * of the namespace seen once, nothing seen that nobody wrote.
 */
import { type ClientRequest, request } from 'node:http';
import { call, seg } from '../http.js';
import type { ParleyNode } from '../parley-node.js';
import type { Random } from '../random.js';
import { type SseFrame, SseReader } from '../sse.js';
import { type Context, sleep, type Workload } from '../workload.js';
import { REGISTER_NS } from './register.js';

export interface WatchEvent {
  readonly watcher: number;
  readonly stream: number;
  readonly atMs: number;
  readonly revision: number;
  readonly type: string;
  readonly key: string;
  readonly version: string | null;
  readonly value: unknown;
}

export interface WatchStream {
  readonly watcher: number;
  readonly stream: number;
  readonly node: string;
  readonly fromRevision: number | null;
  readonly openMs: number;
  /** When the headers arrived (the subscription is in place), or null if it never opened. */
  connectedMs: number | null;
  status: number | null;
  endMs?: number;
  end?: string;
}

/** A change as a watch event's data carries it. */
export interface WireChange {
  readonly key: string;
  readonly type: string;
  readonly revision?: number;
  readonly entry?: { version?: string; value?: unknown } | null;
}

/**
 * What a frame of a watch stream says: a change, or the stream's end with the
 * fault's code (`event: error`, as a node whose stores failed ends its watches).
 * An error frame is never a change: read as one, it was a revision-less event.
 */
export function readWatchFrame(
  frame: SseFrame,
): { readonly kind: 'change'; readonly event: WireChange } | { readonly kind: 'end'; readonly error: string } {
  const data = JSON.parse(frame.data) as Record<string, unknown>;
  if (frame.event === 'error') return { kind: 'end', error: String(data.error ?? 'unknown') };
  return { kind: 'change', event: data as unknown as WireChange };
}

export const MARKER_KEY = '__torture-marker';
const MAX_EVENT_BYTES = 4 << 20;

export class WatchWorkload implements Workload {
  readonly name = 'watch';
  readonly events: WatchEvent[] = [];
  readonly streams: WatchStream[] = [];
  /** Watchers that had to start over without a resume point (their coverage has a hole there). */
  readonly restarts: Array<{ watcher: number; atMs: number; lastRevision: number }> = [];
  private readonly lastRevision = new Map<number, number>();
  /** Versions of the marker each watcher saw (the event may arrive before the write's reply). */
  private readonly markerSeen = new Map<number, Set<string>>();
  private markerVersion: string | undefined;
  /** When the marker was acknowledged: writes acknowledged before it must have reached every watcher. */
  markerWrittenMs: number | undefined;
  private closing = false;
  private readonly open = new Set<ClientRequest>();

  constructor(private readonly watchers = 2) {}

  async run(ctx: Context): Promise<void> {
    await Promise.all(
      Array.from({ length: this.watchers }, (_, w) => this.watcher(ctx, w, ctx.rnd.fork(`watch-${w}`))),
    );
  }

  private async watcher(ctx: Context, w: number, rnd: Random): Promise<void> {
    let stream = 0;
    while (!this.closing) {
      const node = rnd.pick(ctx.cluster.gateways);
      const from = this.lastRevision.get(w) ?? null;
      const s: WatchStream = {
        watcher: w,
        stream: stream++,
        node: node.name,
        fromRevision: from,
        openMs: ctx.rec.now(),
        connectedMs: null,
        status: null,
      };
      this.streams.push(s);
      await this.follow(ctx, node, s, rnd.int(3_000, 15_000));
      if (s.status === 400) {
        // The resume point is older than what this node keeps: try the others before starting over.
        const elsewhere = await this.resumeElsewhere(ctx, w, node, from, rnd);
        if (!elsewhere) {
          this.restarts.push({ watcher: w, atMs: ctx.rec.now(), lastRevision: from ?? 0 });
          this.lastRevision.delete(w);
        }
      }
      if (s.connectedMs === null) await sleep(rnd.int(100, 500));
    }
  }

  private async resumeElsewhere(
    ctx: Context,
    w: number,
    tried: ParleyNode,
    from: number | null,
    rnd: Random,
  ): Promise<boolean> {
    for (const node of ctx.cluster.gateways) {
      if (node === tried || this.closing) continue;
      const s: WatchStream = {
        watcher: w,
        stream: this.streams.length,
        node: node.name,
        fromRevision: from,
        openMs: ctx.rec.now(),
        connectedMs: null,
        status: null,
      };
      this.streams.push(s);
      await this.follow(ctx, node, s, rnd.int(3_000, 15_000));
      if (s.status !== 400) return true;
    }
    return false;
  }

  /** Follows one stream until `lifetimeMs` (a deliberate reconnect), its end, an error, or the end of the run. */
  private follow(ctx: Context, node: ParleyNode, s: WatchStream, lifetimeMs: number): Promise<void> {
    const q = s.fromRevision === null ? '' : `&from_revision=${s.fromRevision}`;
    const url = new URL(`/api/v1/distributed-state/${REGISTER_NS}?watch=true${q}`, node.url);
    return new Promise((resolve) => {
      let done = false;
      const finish = (why: string) => {
        if (done) return;
        done = true;
        clearTimeout(lifetime);
        clearTimeout(connectTimer);
        s.endMs = ctx.rec.now();
        s.end = why;
        this.open.delete(req);
        req.destroy();
        resolve();
      };
      const req = request(url, { method: 'GET', agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
        s.status = res.statusCode ?? 0;
        if (s.status !== 200) {
          res.resume();
          finish(`status ${s.status}`);
          return;
        }
        s.connectedMs = ctx.rec.now();
        clearTimeout(connectTimer);
        const reader = new SseReader();
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          for (const frame of reader.push(chunk)) {
            if (done) return;
            const read = readWatchFrame(frame);
            if (read.kind === 'end') return finish(`error ${read.error}`);
            this.onEvent(ctx, s, read.event);
          }
          if (reader.pending > MAX_EVENT_BYTES) finish('over-long event');
        });
        res.on('end', () => finish('ended by the server'));
        res.on('error', (e) => finish(e.message));
      });
      this.open.add(req);
      req.on('error', (e: NodeJS.ErrnoException) => finish(e.code ?? e.message));
      // A paused node accepts the connection and never answers: give up on it.
      const connectTimer = setTimeout(() => finish('no headers in 5 s'), 5_000);
      const lifetime = setTimeout(() => finish('reconnect'), lifetimeMs);
      req.end();
    });
  }

  private onEvent(ctx: Context, s: WatchStream, e: WireChange): void {
    const revision = e.revision ?? -1;
    this.events.push({
      watcher: s.watcher,
      stream: s.stream,
      atMs: ctx.rec.now(),
      revision,
      type: e.type,
      key: e.key,
      version: e.entry?.version ?? null,
      value: e.entry?.value ?? null,
    });
    if (revision > (this.lastRevision.get(s.watcher) ?? -1)) this.lastRevision.set(s.watcher, revision);
    if (e.key === MARKER_KEY && e.entry?.version) {
      const seen = this.markerSeen.get(s.watcher) ?? new Set<string>();
      seen.add(e.entry.version);
      this.markerSeen.set(s.watcher, seen);
    }
  }

  /** Writes the marker and waits (at most 30 s) until every watcher has seen it, then closes the streams. */
  async final(ctx: Context): Promise<void> {
    for (let attempt = 0; attempt < 20 && this.markerVersion === undefined; attempt++) {
      const node = ctx.rnd.pick(ctx.cluster.gateways);
      const o = await call(node.url, `/api/v1/distributed-state/${REGISTER_NS}/${seg(MARKER_KEY)}`, {
        method: 'POST',
        body: { value: 'marker' },
        timeoutMs: 12_000,
      });
      if (o.kind === 'reply' && o.status < 300) this.markerVersion = (o.body.data as { version: string }).version;
      else await sleep(500);
    }
    this.markerWrittenMs = ctx.rec.now();
    const end = ctx.rec.now() + 30_000;
    while (ctx.rec.now() < end && [...Array(this.watchers).keys()].some((w) => !this.caughtUp(w))) await sleep(200);
    this.closing = true;
    for (const r of this.open) r.destroy();
  }

  /** Watchers that saw the marker (the others are reported as not caught up). */
  caughtUp(watcher: number): boolean {
    return this.markerVersion !== undefined && this.markerSeen.get(watcher)?.has(this.markerVersion) === true;
  }

  get watcherCount(): number {
    return this.watchers;
  }
}
