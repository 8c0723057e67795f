/**
 * A Yjs document synced with its neighbours through y-protocols' sync
 * protocol over loopback TCP: the propagation anchor of bench:compare.
 *
 * Each connection starts with sync step 1 both ways (state vector), is
 * answered with step 2 (the missing update), then carries `update` messages.
 * Every update that changes the local document is relayed to every
 * connection but the one it came from (y-websocket's server rule, applied at
 * every node); an update already known changes nothing and is not relayed,
 * so flooding stops by itself. Each update is also saved in LevelDB with
 * fsync, in the background, as y-leveldb does beside a provider.
 *
 * Frames on the wire: a 4-byte big-endian length, then one y-protocols sync
 * message (no awareness, no y-websocket outer message type).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { type LevelKVStorage, openLevelKV } from '@parley/storage';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';

/** Bound of one frame (a sync step 2 of this benchmark's document is far smaller). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

class Connection {
  private buf: Buffer = Buffer.alloc(0);
  bytesOut = 0;

  constructor(
    readonly socket: Socket,
    private readonly onFrame: (c: Connection, frame: Uint8Array) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      while (this.buf.length >= 4) {
        const len = this.buf.readUInt32BE(0);
        if (len > MAX_FRAME_BYTES) {
          socket.destroy(new Error(`frame of ${len} bytes is over ${MAX_FRAME_BYTES}`));
          return;
        }
        if (this.buf.length < 4 + len) break;
        const frame = new Uint8Array(this.buf.subarray(4, 4 + len));
        this.buf = this.buf.subarray(4 + len);
        this.onFrame(this, frame);
      }
    });
    socket.on('error', () => {});
  }

  send(msg: Uint8Array): void {
    if (this.socket.destroyed) return;
    const head = Buffer.alloc(4);
    head.writeUInt32BE(msg.length);
    this.bytesOut += msg.length + 4;
    this.socket.write(Buffer.concat([head, msg]));
  }
}

export class YjsSyncEndpoint {
  readonly doc = new Y.Doc();
  private readonly conns = new Set<Connection>();
  private server: Server | undefined;
  private seq = 0;
  private saving: Promise<void> = Promise.resolve();

  private constructor(private readonly kv: LevelKVStorage) {
    this.doc.on('update', (update: Uint8Array, origin: unknown) => {
      const key = ['y', String(this.seq++).padStart(12, '0')];
      this.saving = this.saving.then(() => this.kv.save(key, update)).catch(() => {});
      const enc = encoding.createEncoder();
      syncProtocol.writeUpdate(enc, update);
      const msg = encoding.toUint8Array(enc);
      for (const c of this.conns) if (c !== origin) c.send(msg);
    });
  }

  /** Opens the endpoint with its LevelDB store (fsync on) at `path`. */
  static async open(path: string): Promise<YjsSyncEndpoint> {
    return new YjsSyncEndpoint(await openLevelKV({ path, sync: true }));
  }

  /** Listens on loopback; resolves with the port. */
  listen(): Promise<number> {
    const server = createServer((s) => this.attach(s));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });
  }

  /** Dials a neighbour and starts the sync handshake. */
  connect(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1');
      s.once('error', reject);
      s.once('connect', () => {
        this.attach(s);
        resolve();
      });
    });
  }

  get connections(): number {
    return this.conns.size;
  }

  /** Bytes this endpoint has written to its connections. */
  get bytesOut(): number {
    let n = 0;
    for (const c of this.conns) n += c.bytesOut;
    return n;
  }

  private attach(socket: Socket): void {
    const c = new Connection(socket, (conn, frame) => this.onFrame(conn, frame));
    this.conns.add(c);
    socket.once('close', () => this.conns.delete(c));
    const enc = encoding.createEncoder();
    syncProtocol.writeSyncStep1(enc, this.doc);
    c.send(encoding.toUint8Array(enc));
  }

  private onFrame(c: Connection, frame: Uint8Array): void {
    const reply = encoding.createEncoder();
    try {
      // Applies step 2 and updates with the connection as origin (so they are not sent back).
      syncProtocol.readSyncMessage(decoding.createDecoder(frame), reply, this.doc, c);
    } catch (err) {
      c.socket.destroy(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (encoding.length(reply) > 0) c.send(encoding.toUint8Array(reply));
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.socket.destroy();
    this.conns.clear();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    await this.saving;
    await this.kv.close();
    this.doc.destroy();
  }
}
