/**
 * One room of the y-websocket door on this node: the namespace's replicated
 * `yjs(key)` document, the connections editing it here, and its awareness.
 *
 * - Document: a client's update is checked whole (decoded) before it is
 *   applied, so a malformed one changes nothing; once applied, the node
 *   persists it and gossips it to the namespace's other replicas, and the room
 *   sends it to its other connections. Updates from peers reach every
 *   connection the same way (the document's 'update' event).
 * - Awareness: taken from connections and from the room's ephemeral channel
 *   (see relay.ts); what a connection changes goes to every connection of the
 *   room (the sender too, as y-websocket's own server does — the provider
 *   counts it as a sign of life) and to the other nodes; what a peer changes
 *   goes to this node's connections only.
 */
import { DecodeError, isParleyError, type Unsubscribe } from '@parley/interface';
import type { EphemeralChannel, ParleyNode } from '@parley/node';
import * as Y from 'yjs';
import { CLOSE, type Connection } from '../ws-connection.js';
import { AwarenessTable } from './awareness.js';
import type { ResolvedYjsDoorOptions } from './options.js';
import {
  type AwarenessEntry,
  type ClientMessage,
  decodeAwarenessUpdate,
  decodeClientMessages,
  encodeAwarenessMessage,
  encodeSyncStep1,
  encodeSyncStep2,
  encodeSyncUpdate,
} from './protocol.js';
import { awarenessChannel, decodeRelay, encodeRelay, RELAY_QUERY, relayUpdates } from './relay.js';

export interface RoomContext {
  readonly node: ParleyNode;
  readonly options: ResolvedYjsDoorOptions;
  now(): number;
  /** Counts what the door refused or dropped, by reason. */
  count(reason: string): void;
  onUnexpectedError(err: unknown, where: string): void;
}

type Owner = Connection | `peer:${string}`;

export class Room {
  readonly conns = new Set<Connection>();
  readonly awareness: AwarenessTable<Owner>;
  private doc: Y.Doc | undefined;
  private readonly pending = new Map<Connection, Uint8Array[]>();
  private channel: EphemeralChannel | undefined;
  private offChannel: Unsubscribe | undefined;
  private closed = false;

  constructor(
    readonly namespace: string,
    readonly key: string,
    private readonly ctx: RoomContext,
  ) {
    const o = ctx.options;
    this.awareness = new AwarenessTable<Owner>({
      maxStates: o.maxAwarenessStates,
      maxStateBytes: o.maxAwarenessStateBytes,
      timeoutMs: o.awarenessTimeoutMs,
    });
  }

  /** Loads the document and joins the awareness channel; rejects if the node refuses the document. */
  async open(): Promise<void> {
    const ns = this.ctx.node.eventual(this.namespace);
    const doc = await ns.yjs(this.key);
    if (this.closed) return;
    this.doc = doc;
    doc.on('update', this.onUpdate);
    this.channel = ns.ephemeral(awarenessChannel(this.key));
    this.offChannel = this.channel.subscribe((from, message) => this.onRelay(from, message));
    this.publish([encodeRelay({ op: RELAY_QUERY, key: this.key })]);
    // Every waiting connection is live before any queued message is handled: what one of them
    // sent while the document loaded must reach the others too.
    const waiting = [...this.pending];
    this.pending.clear();
    for (const [conn] of waiting) this.greet(conn);
    for (const [conn, messages] of waiting) for (const m of messages) this.receive(conn, m);
  }

  get isOpen(): boolean {
    return this.doc !== undefined;
  }

  join(conn: Connection): void {
    this.conns.add(conn);
    if (this.doc) this.greet(conn);
    else this.pending.set(conn, []);
  }

  /** Removes `conn`, and the awareness clients it owned (for everyone, here and on other nodes). */
  leave(conn: Connection): void {
    this.conns.delete(conn);
    this.pending.delete(conn);
    const removed = this.awareness.removeOwned(conn, this.ctx.now());
    if (removed.length > 0) {
      this.broadcast(encodeAwarenessMessage(removed));
      this.publish(relayUpdates(this.key, removed));
    }
  }

  receive(conn: Connection, data: Uint8Array): void {
    if (conn.closed || this.closed) return;
    const doc = this.doc;
    if (!doc) {
      const queue = this.pending.get(conn);
      if (queue && queue.length < this.ctx.options.maxPendingMessages) queue.push(data);
      else {
        this.ctx.count('pending_overflow');
        conn.close(CLOSE.tryAgainLater, 'too many messages before the document was open');
      }
      return;
    }
    let messages: ClientMessage[];
    try {
      messages = decodeClientMessages(data);
    } catch (err) {
      this.refuse(conn, err);
      return;
    }
    for (const m of messages) {
      try {
        this.handle(conn, doc, m);
      } catch (err) {
        this.refuse(conn, err);
        return;
      }
    }
  }

  private handle(conn: Connection, doc: Y.Doc, m: ClientMessage): void {
    const now = this.ctx.now();
    switch (m.type) {
      case 'sync-step1':
        conn.send(encodeSyncStep2(guarded('state vector', () => Y.encodeStateAsUpdate(doc, m.stateVector))), now);
        return;
      case 'sync-step2':
      case 'sync-update':
        // Checked whole first: Yjs applies an update as it reads it, and a bad tail would leave half.
        guarded('update', () => Y.decodeUpdate(m.update));
        Y.applyUpdate(doc, m.update, conn);
        return;
      case 'awareness': {
        const taken = this.awareness.apply(decodeAwarenessUpdate(m.update), conn, now);
        if (taken.length > 0) {
          this.broadcast(encodeAwarenessMessage(taken));
          this.publish(relayUpdates(this.key, taken));
        }
        return;
      }
      case 'query-awareness':
        conn.send(encodeAwarenessMessage(this.awareness.states()), now);
        return;
      case 'auth':
        return;
    }
  }

  /** Periodic duties: expire awareness clients not renewed in time. */
  tick(now: number): void {
    const expired = this.awareness.expire(now);
    if (expired.length > 0) this.broadcast(encodeAwarenessMessage(expired));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.doc?.off('update', this.onUpdate);
    this.offChannel?.();
    this.pending.clear();
  }

  private greet(conn: Connection): void {
    const doc = this.doc as Y.Doc;
    const now = this.ctx.now();
    conn.send(encodeSyncStep1(Y.encodeStateVector(doc)), now);
    const states = this.awareness.states();
    if (states.length > 0) conn.send(encodeAwarenessMessage(states), now);
  }

  private readonly onUpdate = (update: Uint8Array, origin: unknown): void => {
    if (this.conns.size === 0) return;
    const message = encodeSyncUpdate(update);
    const now = this.ctx.now();
    for (const c of this.conns) if (c !== origin && !this.pending.has(c)) c.send(message, now);
  };

  private broadcast(message: Uint8Array): void {
    const now = this.ctx.now();
    for (const c of this.conns) if (!this.pending.has(c)) c.send(message, now);
  }

  private publish(messages: Uint8Array[]): void {
    const channel = this.channel;
    if (!channel || this.closed) return;
    for (const m of messages) {
      channel.publish(m).catch((err: unknown) => {
        if (!isParleyError(err, 'closed')) this.ctx.count('relay_publish_failed');
      });
    }
  }

  private onRelay(from: string, message: Uint8Array): void {
    if (this.closed) return;
    try {
      const m = decodeRelay(message);
      if (m.key !== this.key) return;
      if (m.op === RELAY_QUERY) {
        const mine = this.awareness.ownedBy((o) => o !== undefined && typeof o !== 'string');
        if (mine.length > 0) this.publish(relayUpdates(this.key, mine));
        return;
      }
      const taken: AwarenessEntry[] = this.awareness.apply(
        decodeAwarenessUpdate(m.update),
        `peer:${from}`,
        this.ctx.now(),
      );
      if (taken.length > 0) this.broadcast(encodeAwarenessMessage(taken));
    } catch (err) {
      if (isParleyError(err, 'decode_error')) this.ctx.count('relay_decode_error');
      else this.ctx.onUnexpectedError(err, 'yjs awareness relay');
    }
  }

  /** A client's bad input closes its connection for good (4400); anything else is ours. */
  private refuse(conn: Connection, err: unknown): void {
    if (isParleyError(err, 'decode_error')) {
      this.ctx.count('decode_error');
      conn.close(CLOSE.badRequest, String((err as Error).message));
    } else {
      this.ctx.onUnexpectedError(err, 'yjs message');
      conn.close(CLOSE.internal, 'internal error');
    }
  }
}

/** Runs Yjs on a client's bytes: what it throws is the client's mistake (a DecodeError). */
function guarded<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new DecodeError(`malformed ${what}: ${(err as Error)?.message ?? String(err)}`);
  }
}
