/**
 * Rich values of an eventual namespace: Yjs documents (`ns.yjs(key)`) and
 * Automerge documents (`ns.automerge(key)`), replicated with their own
 * protocols rather than as LWW registers, so concurrent edits merge.
 *
 * - Persisted as a log of updates under `['evr', ns, 'y'|'a', key, <seq>]`
 *   (Yjs updates; Automerge incremental saves), folded into one record when a
 *   document is loaded with more than COMPACT_RECORDS of them.
 * - Local edits are persisted (group commit) and then gossiped on the
 *   namespace's rich topic `parley/evr/1/<ns>`.
 * - Sync with a peer (when a document is opened, on every new connection, and
 *   every anti-entropy period with one peer): Yjs exchanges state vectors
 *   (each side sends exactly the updates the other's vector lacks); Automerge
 *   runs its sync protocol (`generateSyncMessage` / `receiveSyncMessage`)
 *   over request/response rounds, at most MAX_SYNC_ROUNDS per sync.
 * - Undecodable or foreign input is dropped with a typed, counted error.
 */
import * as Automerge from '@automerge/automerge';
import {
  ByteReader,
  ByteWriter,
  type Cancel,
  DecodeError,
  InvalidArgumentError,
  isParleyError,
  type PeerId,
  type StorageOp,
  type Unsubscribe,
} from '@parley/interface';
import * as Y from 'yjs';
import type { AutomergeHandle } from '../api.js';
import type { CommitSource } from '../group-commit.js';
import type { RichPort } from './port.js';
import { encodeRequest, TAG_RICH } from './wire.js';

export const COMPACT_RECORDS = 64;
export const MAX_SYNC_ROUNDS = 16;
export const MAX_RICH_DOCS = 1024;

const REMOTE = Symbol('parley-remote');

type Kind = 'y' | 'a';
const OP_GOSSIP = 0;
const OP_SYNC_Y = 1;
const OP_PUSH = 2;
const OP_SYNC_A = 3;

const pad = (n: number) => n.toString().padStart(12, '0');

function encodeRich(op: number, kind: Kind, key: string, parts: Uint8Array[]): Uint8Array {
  const w = new ByteWriter(32 + key.length * 3 + parts.reduce((s, p) => s + p.length + 5, 0));
  w.u8(op);
  w.u8(kind === 'y' ? 1 : 2);
  w.string(key);
  w.uint(parts.length);
  for (const p of parts) w.bytes(p);
  return w.finish();
}

function decodeRich(bytes: Uint8Array): { op: number; kind: Kind; key: string; parts: Uint8Array[] } {
  try {
    const r = new ByteReader(bytes);
    const op = r.u8();
    if (op > OP_SYNC_A) throw new DecodeError(`unknown rich op ${op}`, 0);
    const k = r.u8();
    if (k !== 1 && k !== 2) throw new DecodeError(`unknown rich kind ${k}`, 1);
    const key = r.string();
    if (key.length === 0 || key.length > 1024) throw new DecodeError('bad rich key length', 2);
    const n = r.count(1);
    if (n > 4) throw new DecodeError('too many parts', 2);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < n; i++) parts.push(r.bytes());
    r.end();
    return { op, kind: k === 1 ? 'y' : 'a', key, parts };
  } catch (err) {
    if (err instanceof DecodeError) throw err;
    throw new DecodeError(`undecodable rich message: ${String(err)}`);
  }
}

/** Runs a third-party decoder on untrusted bytes: anything it throws becomes a DecodeError. */
function guarded<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new DecodeError(`${what}: ${String((err as Error)?.message ?? err)}`);
  }
}

/**
 * Applies a peer's Yjs update whole or not at all: Yjs applies an update as it reads
 * it, so one cut short in its delete set would leave its first half in the document
 * (persisted and passed on). Decoding it first refuses it before anything changes.
 */
function applyYjs(doc: Y.Doc, update: Uint8Array): void {
  guarded('yjs update', () => {
    Y.decodeUpdate(update);
    Y.applyUpdate(doc, update, REMOTE);
  });
}

interface Stored {
  keys: string[][];
  nextSeq: number;
}

class YjsValue {
  constructor(
    readonly doc: Y.Doc,
    readonly stored: Stored,
  ) {}
}

class AutomergeValue<T = unknown> implements AutomergeHandle<T> {
  readonly listeners = new Set<(doc: Automerge.Doc<T>) => void>();
  /** Sync state towards each peer, for the requests this node starts and the ones it answers. */
  readonly syncStates = new Map<PeerId, Automerge.SyncState>();

  constructor(
    private current: Automerge.Doc<T>,
    readonly stored: Stored,
    private readonly onLocal: (v: AutomergeValue<T>, before: Automerge.Doc<T>) => Promise<void>,
  ) {}

  doc(): Automerge.Doc<T> {
    return this.current;
  }

  set(next: Automerge.Doc<T>): void {
    if (next === this.current) return;
    this.current = next;
    for (const l of [...this.listeners]) {
      try {
        l(next);
      } catch {
        // a throwing listener does not stop the others
      }
    }
  }

  async change(fn: (d: T) => void): Promise<void> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('change needs a function');
    const before = this.current;
    this.set(Automerge.change(this.current, fn as Automerge.ChangeFn<T>));
    if (this.current !== before) await this.onLocal(this, before);
  }

  onChange(callback: (doc: Automerge.Doc<T>) => void): Unsubscribe {
    this.listeners.add(callback);
    return () => {
      this.listeners.delete(callback);
    };
  }
}

export class RichValues implements CommitSource {
  readonly topic: string;
  private readonly yjsDocs = new Map<string, Promise<YjsValue>>();
  private readonly amDocs = new Map<string, Promise<AutomergeValue>>();
  private pending: StorageOp[] = [];
  private readonly offs: Unsubscribe[] = [];
  private timer: Cancel | undefined;
  private stopped = false;

  constructor(private readonly ns: RichPort) {
    this.topic = `parley/evr/1/${ns.name}`;
    const t = ns.ctx.transport;
    this.offs.push(t.subscribe(this.topic, (from, msg) => void this.onGossip(from, msg)));
    this.offs.push(
      t.on('peer:connect', (peer) => {
        for (const key of this.yjsDocs.keys()) void this.syncYjs(key, peer);
        for (const key of this.amDocs.keys()) void this.syncAutomerge(key, peer);
      }),
    );
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.();
    for (const off of this.offs) off();
  }

  collect(): StorageOp[] {
    const ops = this.pending;
    this.pending = [];
    return ops;
  }

  private persist(kind: Kind, key: string, stored: Stored, data: Uint8Array): Promise<void> {
    const k = ['evr', this.ns.name, kind, key, pad(stored.nextSeq++)];
    stored.keys.push(k);
    this.pending.push({ type: 'put', key: k, data });
    return this.ns.commitTo(this);
  }

  private async load(kind: Kind, key: string): Promise<{ records: Uint8Array[]; stored: Stored }> {
    const chunks = await this.ns.retryRead(() => this.ns.ctx.storage.kv.loadRange(['evr', this.ns.name, kind, key]));
    const stored: Stored = { keys: [], nextSeq: 0 };
    const records: Uint8Array[] = [];
    for (const c of chunks) {
      if (c.key.length !== 5) continue;
      stored.keys.push(c.key);
      stored.nextSeq = Math.max(stored.nextSeq, Number(c.key[4]) + 1);
      records.push(c.data);
    }
    return { records, stored };
  }

  /** Replaces a document's records with one (when loaded with too many). */
  private compact(kind: Kind, key: string, stored: Stored, data: Uint8Array): void {
    const old = stored.keys;
    stored.keys = [];
    for (const k of old) this.pending.push({ type: 'del', key: k });
    void this.persist(kind, key, stored, data).catch(() => {});
  }

  private checkKey(key: string): void {
    if (typeof key !== 'string' || key.length === 0 || key.length > 1024) {
      throw new InvalidArgumentError('key must be a string of 1..1024 characters');
    }
    if (this.yjsDocs.size + this.amDocs.size >= MAX_RICH_DOCS && !this.yjsDocs.has(key) && !this.amDocs.has(key)) {
      throw new InvalidArgumentError(`at most ${MAX_RICH_DOCS} rich documents per namespace may be open`);
    }
  }

  // ---------------------------------------------------------------- yjs

  yjs(key: string): Promise<Y.Doc> {
    this.checkKey(key);
    let p = this.yjsDocs.get(key);
    if (!p) {
      p = this.openYjs(key);
      this.yjsDocs.set(key, p);
      p.catch(() => this.yjsDocs.delete(key));
    }
    return p.then((v) => v.doc);
  }

  private async openYjs(key: string): Promise<YjsValue> {
    const { records, stored } = await this.load('y', key);
    const doc = new Y.Doc();
    // Yjs draws a client id from the platform's randomness; the node's own seeded random gives one
    // of the same size, so a simulated run replays exactly (the id only has to differ between the
    // writers of one document; Yjs itself renews it on a collision it sees).
    doc.clientID = this.ns.ctx.random.nextU32();
    let bad = 0;
    for (const r of records) {
      try {
        Y.applyUpdate(doc, r, REMOTE);
      } catch {
        bad++;
      }
    }
    if (bad > 0) this.ns.ctx.logger.warn({ namespace: this.ns.name, key, bad }, 'eventual: unreadable yjs records');
    const value = new YjsValue(doc, stored);
    if (records.length > COMPACT_RECORDS) this.compact('y', key, stored, Y.encodeStateAsUpdate(doc));
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (this.stopped) return;
      this.persist('y', key, stored, update).then(
        () => {
          if (origin !== REMOTE) this.publish(encodeRich(OP_GOSSIP, 'y', key, [update]));
        },
        () => {},
      );
    });
    for (const peer of this.ns.ctx.transport.peers()) void this.syncYjs(key, peer);
    return value;
  }

  /** Exchanges state vectors with `peer`: each side receives exactly what it lacks. */
  private async syncYjs(key: string, peer: PeerId): Promise<void> {
    try {
      const { doc } = await (this.yjsDocs.get(key) as Promise<YjsValue>);
      const reply = await this.request(peer, encodeRich(OP_SYNC_Y, 'y', key, [Y.encodeStateVector(doc)]));
      const r = decodeRich(reply);
      const [missing, theirVector] = r.parts;
      if (!missing || !theirVector) throw new DecodeError('yjs sync reply lacks its parts');
      applyYjs(doc, missing);
      const theirs = guarded('yjs state vector', () => Y.encodeStateAsUpdate(doc, theirVector));
      if (theirs.length > 2) await this.request(peer, encodeRich(OP_PUSH, 'y', key, [theirs]));
    } catch (err) {
      this.failed(peer, err);
    }
  }

  // ---------------------------------------------------------------- automerge

  automerge<T>(key: string): Promise<AutomergeHandle<T>> {
    this.checkKey(key);
    let p = this.amDocs.get(key);
    if (!p) {
      p = this.openAutomerge(key);
      this.amDocs.set(key, p);
      p.catch(() => this.amDocs.delete(key));
    }
    return p as unknown as Promise<AutomergeHandle<T>>;
  }

  private async openAutomerge(key: string): Promise<AutomergeValue> {
    const { records, stored } = await this.load('a', key);
    let doc = Automerge.init<unknown>();
    for (const r of records) {
      try {
        doc = Automerge.loadIncremental(doc, r);
      } catch (err) {
        this.ns.ctx.logger.warn(
          { namespace: this.ns.name, key, err: String(err) },
          'eventual: unreadable automerge record',
        );
      }
    }
    const value = new AutomergeValue<unknown>(doc, stored, async (v, before) => {
      const changes = Automerge.getChanges(before, v.doc());
      const bytes = concatChanges(changes);
      await this.persist('a', key, stored, bytes);
      this.publish(encodeRich(OP_GOSSIP, 'a', key, [bytes]));
    });
    if (records.length > COMPACT_RECORDS) this.compact('a', key, stored, Automerge.save(doc));
    for (const peer of this.ns.ctx.transport.peers()) void this.syncAutomerge(key, peer);
    return value;
  }

  /** Applies remote Automerge bytes (changes or a save) to `value`, persisting them. */
  private applyAutomerge(key: string, value: AutomergeValue, bytes: Uint8Array): void {
    const before = value.doc();
    const next = guarded('automerge changes', () => Automerge.loadIncremental(before, bytes));
    if (next !== before && Automerge.getHeads(next).join() !== Automerge.getHeads(before).join()) {
      value.set(next);
      void this.persist('a', key, value.stored, bytes).catch(() => {});
    }
  }

  /** Runs Automerge's sync protocol with `peer` until both sides have nothing more to say. */
  private async syncAutomerge(key: string, peer: PeerId): Promise<void> {
    try {
      const value = await (this.amDocs.get(key) as Promise<AutomergeValue>);
      let s = Automerge.initSyncState();
      for (let round = 0; round < MAX_SYNC_ROUNDS; round++) {
        const [next, msg] = Automerge.generateSyncMessage(value.doc(), s);
        s = next;
        // The first round tells the peer to start from a fresh sync state too.
        const parts = round === 0 ? [msg ?? new Uint8Array(0), new Uint8Array([1])] : msg ? [msg] : [];
        const reply = decodeRich(await this.request(peer, encodeRich(OP_SYNC_A, 'a', key, parts)));
        const answer = reply.parts[0];
        if (answer) {
          const before = value.doc();
          const [doc, after] = guarded('automerge sync message', () => Automerge.receiveSyncMessage(before, s, answer));
          s = after;
          if (doc !== before) {
            value.set(doc);
            void this.persist('a', key, value.stored, concatChanges(Automerge.getChanges(before, doc))).catch(() => {});
          }
        }
        if (!msg && !answer) return;
      }
    } catch (err) {
      this.failed(peer, err);
    }
  }

  // ---------------------------------------------------------------- network

  private publish(msg: Uint8Array): void {
    if (this.stopped) return;
    this.ns.counters.gossipBytesOut += msg.length;
    this.ns.ctx.events.emit('gossip:bytes', { direction: 'out', bytes: msg.length, namespace: this.ns.name });
    this.ns.ctx.transport.publish(this.topic, msg).catch((err: unknown) => {
      this.ns.ctx.logger.warn({ err: String(err), namespace: this.ns.name }, 'eventual: rich gossip failed');
    });
  }

  private request(peer: PeerId, body: Uint8Array): Promise<Uint8Array> {
    return this.ns.ctx.transport.request(peer, this.ns.protocol, encodeRequest(TAG_RICH, body), {
      timeoutMs: this.ns.options.requestTimeoutMs,
    });
  }

  private failed(peer: PeerId, err: unknown): void {
    if (isParleyError(err, 'decode_error')) this.ns.reject(peer, err);
    else this.ns.ctx.logger.debug({ err: String(err), peer, namespace: this.ns.name }, 'eventual: rich sync failed');
  }

  private async onGossip(from: PeerId, msg: Uint8Array): Promise<void> {
    if (this.stopped || from === this.ns.ctx.peerId) return;
    this.ns.counters.gossipBytesIn += msg.length;
    this.ns.ctx.events.emit('gossip:bytes', { direction: 'in', bytes: msg.length, namespace: this.ns.name });
    try {
      const m = decodeRich(msg);
      const [data] = m.parts;
      if (m.op !== OP_GOSSIP || !data) throw new DecodeError('not a rich gossip message');
      await this.applyRemote(m.kind, m.key, data);
    } catch (err) {
      if (isParleyError(err, 'decode_error') || isParleyError(err, 'invalid_argument')) {
        this.ns.reject(from, err);
      } else this.failed(from, err);
    }
  }

  private async applyRemote(kind: Kind, key: string, data: Uint8Array): Promise<void> {
    if (kind === 'y') {
      await this.yjs(key);
      const { doc } = await (this.yjsDocs.get(key) as Promise<YjsValue>);
      applyYjs(doc, data);
    } else {
      await this.automerge(key);
      const value = await (this.amDocs.get(key) as Promise<AutomergeValue>);
      this.applyAutomerge(key, value, data);
    }
  }

  /** Answers a peer's rich request (sync round or push). */
  async handleRequest(from: PeerId, body: Uint8Array): Promise<Uint8Array> {
    let m: ReturnType<typeof decodeRich>;
    try {
      m = decodeRich(body);
    } catch (err) {
      this.ns.reject(from, err);
      throw err;
    }
    try {
      if (m.op === OP_SYNC_Y && m.kind === 'y') {
        const doc = await this.yjs(m.key);
        const vector = m.parts[0] ?? new Uint8Array([0]);
        const missing = guarded('yjs state vector', () => Y.encodeStateAsUpdate(doc, vector));
        await this.ns.commitTo(this); // never hand out what is not on disk yet
        return encodeRich(OP_SYNC_Y, 'y', m.key, [missing, Y.encodeStateVector(doc)]);
      }
      if (m.op === OP_PUSH && m.parts[0]) {
        await this.applyRemote(m.kind, m.key, m.parts[0]);
        await this.ns.commitTo(this);
        return new Uint8Array(0);
      }
      if (m.op === OP_SYNC_A && m.kind === 'a') {
        await this.automerge(m.key);
        const value = await (this.amDocs.get(m.key) as Promise<AutomergeValue>);
        let s = m.parts[1] ? Automerge.initSyncState() : (value.syncStates.get(from) ?? Automerge.initSyncState());
        const incoming = m.parts[0];
        if (incoming && incoming.length > 0) {
          const before = value.doc();
          const [doc, after] = guarded('automerge sync message', () =>
            Automerge.receiveSyncMessage(before, s, incoming),
          );
          s = after;
          if (doc !== before) {
            value.set(doc);
            await this.persist('a', m.key, value.stored, concatChanges(Automerge.getChanges(before, doc)));
          }
        }
        const [next, reply] = Automerge.generateSyncMessage(value.doc(), s);
        value.syncStates.set(from, next);
        await this.ns.commitTo(this);
        return encodeRich(OP_SYNC_A, 'a', m.key, reply ? [reply] : []);
      }
      throw new DecodeError(`rich op ${m.op} does not apply to kind ${m.kind}`);
    } catch (err) {
      if (isParleyError(err, 'decode_error')) this.ns.reject(from, err);
      throw err;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    const base = this.ns.options.antiEntropyMs;
    this.timer = this.ns.ctx.scheduler.after(Math.floor(base / 2) + this.ns.ctx.random.int(base + 1), () => {
      if (this.stopped) return;
      const peers = this.ns.ctx.transport.peers();
      if (peers.length > 0) {
        const peer = peers[this.ns.ctx.random.int(peers.length)] as PeerId;
        for (const key of this.yjsDocs.keys()) void this.syncYjs(key, peer);
        for (const key of this.amDocs.keys()) void this.syncAutomerge(key, peer);
      }
      this.schedule();
    });
  }
}

/** Automerge changes as one byte string that `loadIncremental` accepts. */
function concatChanges(changes: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of changes) n += c.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of changes) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
