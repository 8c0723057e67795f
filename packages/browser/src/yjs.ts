/**
 * Yjs documents of a browser node (`ns.yjs(key)`), loaded on first use so a
 * page that never opens one does not load Yjs.
 *
 * - Kept in the browser's database as a log of updates (store.ts), folded into
 *   one when a document is opened with more than COMPACT_RECORDS of them.
 * - Synced with the node's own `yjs(key)` through its y-websocket door
 *   (`<node>/yjs/{namespace}/{key}`, docs/yjs.md) with the sync messages of
 *   y-protocols: step 1 (state vector) / step 2 (the missing updates), then
 *   updates both ways. Local edits made offline are kept and exchanged on
 *   reconnect. Awareness messages are not used (the door's keep-alive is one).
 */
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as Y from 'yjs';
import type { ReplicaDb, ResolvedBrowserOptions, WebSocketConstructor } from './options.js';
import { subprotocols } from './options.js';
import { docKey, docPrefix, readPrefix, type WriteQueue } from './store.js';

export const COMPACT_RECORDS = 64;
const LOADED = Symbol('parley-loaded');
const REMOTE = Symbol('parley-remote');
const REFUSED = new Set([4400, 4401]);

function randomTag(): string {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}

function syncMessage(step: number, payload: Uint8Array): Uint8Array {
  const e = encoding.createEncoder();
  encoding.writeVarUint(e, 0);
  encoding.writeVarUint(e, step);
  encoding.writeVarUint8Array(e, payload);
  return encoding.toUint8Array(e);
}

/** One document: its persistence and its sync with the node. */
export class BrowserDoc {
  private ws: WebSocket | undefined;
  private seq = 0;
  /** This opener's tag in record keys (store.ts). */
  private readonly tag = randomTag();
  private stopped = false;
  private attempts = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** True once the node's step 2 arrived in the current connection. */
  synced = false;

  private constructor(
    readonly doc: Y.Doc,
    private readonly ns: string,
    private readonly key: string,
    private readonly options: ResolvedBrowserOptions,
    private readonly queue: WriteQueue,
  ) {}

  static async open(
    ns: string,
    key: string,
    options: ResolvedBrowserOptions,
    db: ReplicaDb,
    queue: WriteQueue,
  ): Promise<BrowserDoc> {
    const doc = new Y.Doc();
    const d = new BrowserDoc(doc, ns, key, options, queue);
    const records = await readPrefix(db, docPrefix(ns, key));
    Y.transact(
      doc,
      () => {
        for (const [, update] of records) Y.applyUpdate(doc, update);
      },
      LOADED,
    );
    if (records.length > COMPACT_RECORDS) {
      const seq = ++d.seq;
      await queue.write([
        { type: 'put', key: docKey(ns, key, d.tag, seq), value: Y.encodeStateAsUpdate(doc) },
        ...records.map(([k]) => ({ type: 'del' as const, key: k })),
      ]);
    }
    doc.on('update', (update: Uint8Array, origin: unknown) => d.onUpdate(update, origin));
    d.connect();
    return d;
  }

  private onUpdate(update: Uint8Array, origin: unknown): void {
    if (origin === LOADED) return;
    const seq = ++this.seq;
    this.queue
      .write([{ type: 'put', key: docKey(this.ns, this.key, this.tag, seq), value: update }])
      .catch((err: unknown) => {
        console.warn(`parley: could not keep an update of ${this.ns}/${this.key}`, err);
      });
    if (origin !== REMOTE && this.ws?.readyState === 1) this.ws.send(syncMessage(2, update));
  }

  private connect(): void {
    if (this.stopped) return;
    const Ctor: WebSocketConstructor | undefined =
      this.options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Ctor) throw new Error('no WebSocket in this environment: pass options.WebSocket');
    const url = `${this.options.wsUrl}/yjs/${encodeURIComponent(this.ns)}/${encodeURIComponent(this.key)}`;
    const ws = new Ctor(url, subprotocols(this.options.token));
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let denied = false;
    ws.onopen = () => ws.send(syncMessage(0, Y.encodeStateVector(this.doc)));
    ws.onmessage = (event: MessageEvent) => {
      if (!(event.data instanceof ArrayBuffer)) return;
      try {
        const dec = decoding.createDecoder(new Uint8Array(event.data));
        while (decoding.hasContent(dec)) {
          const type = decoding.readVarUint(dec);
          if (type === 0) {
            const step = decoding.readVarUint(dec);
            const payload = decoding.readVarUint8Array(dec);
            if (step === 0) ws.send(syncMessage(1, Y.encodeStateAsUpdate(this.doc, payload)));
            else {
              Y.applyUpdate(this.doc, payload, REMOTE);
              if (step === 1) {
                this.synced = true;
                this.attempts = 0;
              }
            }
          } else if (type === 1) {
            decoding.readVarUint8Array(dec); // awareness: not used here
          } else if (type === 2) {
            decoding.readVarUint(dec);
            decoding.readVarString(dec);
            denied = true;
          } else if (type !== 3) {
            return;
          }
        }
      } catch {
        ws.close(4400, 'undecodable message');
      }
    };
    ws.onclose = (event: CloseEvent) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.synced = false;
      if (denied || REFUSED.has(event.code) || this.stopped) return;
      const base = Math.min(this.options.maxReconnectMs, 250 * 2 ** Math.min(this.attempts++, 16));
      this.timer = setTimeout(() => this.connect(), Math.floor(base / 2 + (Math.random() * base) / 2));
    };
    ws.onerror = () => {};
  }

  close(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, 'closed');
  }
}
