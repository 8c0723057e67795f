/**
 * One lean-channel connection to a peer after its handshake: a TCP socket
 * carrying sealed records (seal.ts), each holding one piece of one logical
 * stream. Record plaintext: u8 kind, u32 stream id, then the stream's bytes
 * (kind 1, data) or nothing (kind 2, the stream is closed by the sender).
 *
 * Streams are opened by the dialer only: a link serves the requests and
 * one-way messages of the node that dialed it and carries the answers back,
 * as a libp2p connection's outbound streams do. The listener learns a stream
 * from its first data record; ids only grow, so a closed stream never comes
 * back. Bounds: `maxStreams` open streams (a further one is closed at once)
 * and `maxBufferedBytes` unsent on the socket (the peer is not reading: the
 * link is closed).
 */
import type { Socket } from 'node:net';
import { DecodeError, type PeerId, UnavailableError } from '@parley/interface';
import type { RpcStream } from '../rpc-stream.js';
import type { Role } from './handshake.js';
import type { RecordOpener, RecordSealer } from './seal.js';

const DATA = 1;
const CLOSE = 2;
const HEADER_BYTES = 5;

export interface LinkOptions {
  readonly role: Role;
  readonly peer: PeerId;
  readonly maxStreams: number;
  readonly maxBufferedBytes: number;
  /** Listener side: a new stream opened by the peer. */
  readonly onStream?: (stream: RpcStream) => void;
  /** Called once when the link fails or closes, with the reason. */
  readonly onClose: (link: LeanLink, reason: Error | undefined) => void;
}

class LeanStream implements RpcStream {
  open = true;
  private dataListeners: Array<(chunk: Uint8Array) => void> = [];
  private closeListeners: Array<() => void> = [];

  constructor(
    private readonly link: LeanLink,
    readonly id: number,
  ) {}

  get writable(): boolean {
    return this.open && this.link.open;
  }

  get bufferedBytes(): number {
    return this.link.bufferedBytes;
  }

  send(data: Uint8Array): void {
    if (!this.writable)
      throw new UnavailableError(`lean stream to ${this.link.peer} is closed`, { peer: this.link.peer });
    this.link.write(DATA, this.id, data);
  }

  abort(_err: Error): void {
    if (!this.open) return;
    if (this.link.open) this.link.write(CLOSE, this.id, EMPTY);
    this.link.forget(this.id);
    this.ended();
  }

  onData(listener: (chunk: Uint8Array) => void): void {
    this.dataListeners.push(listener);
  }

  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  deliver(chunk: Uint8Array): void {
    for (const listener of this.dataListeners) listener(chunk);
  }

  ended(): void {
    if (!this.open) return;
    this.open = false;
    const listeners = this.closeListeners;
    this.closeListeners = [];
    this.dataListeners = [];
    for (const listener of listeners) listener();
  }
}

const EMPTY = new Uint8Array();

export class LeanLink {
  open = true;
  private readonly streams = new Map<number, LeanStream>();
  private nextStreamId = 1;
  private highestSeen = 0;

  constructor(
    private readonly socket: Socket,
    private readonly sealer: RecordSealer,
    private readonly opener: RecordOpener,
    private readonly o: LinkOptions,
  ) {
    socket.on('data', (chunk: Buffer) => {
      opener.push(chunk);
      this.drain();
    });
    socket.on('error', (err) => this.close(new UnavailableError(`lean link to ${o.peer} failed: ${err.message}`)));
    socket.on('close', () => this.close(undefined));
    this.drain(); // records that arrived with the handshake
    socket.resume();
  }

  get peer(): PeerId {
    return this.o.peer;
  }

  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  /** Streams open now. */
  get streamCount(): number {
    return this.streams.size;
  }

  /** Opens a stream (dialer side). */
  openStream(): RpcStream {
    if (!this.open) throw new UnavailableError(`lean link to ${this.o.peer} is closed`, { peer: this.o.peer });
    if (this.o.role !== 'dialer') throw new UnavailableError('only the dialer opens lean streams');
    if (this.streams.size >= this.o.maxStreams) {
      throw new UnavailableError(`too many streams to ${this.o.peer}`, { peer: this.o.peer });
    }
    const stream = new LeanStream(this, this.nextStreamId++);
    this.streams.set(stream.id, stream);
    return stream;
  }

  /** Closes the link and every stream on it. */
  close(reason: Error | undefined): void {
    if (!this.open) return;
    this.open = false;
    this.socket.destroy();
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const stream of streams) stream.ended();
    this.o.onClose(this, reason);
  }

  write(kind: number, id: number, data: Uint8Array): void {
    const head = Buffer.allocUnsafe(HEADER_BYTES);
    head[0] = kind;
    head.writeUInt32BE(id, 1);
    this.socket.write(this.sealer.seal(head, data));
    if (this.socket.writableLength > this.o.maxBufferedBytes) {
      this.close(new UnavailableError(`lean link to ${this.o.peer}: the peer is not reading`, { peer: this.o.peer }));
    }
  }

  forget(id: number): void {
    this.streams.delete(id);
  }

  private drain(): void {
    try {
      for (let plain = this.opener.next(); plain && this.open; plain = this.opener.next()) this.receive(plain);
    } catch (err) {
      this.close(err instanceof Error ? err : new DecodeError(String(err)));
    }
  }

  private receive(plain: Buffer): void {
    if (plain.length < HEADER_BYTES) throw new DecodeError('lean record too short');
    const kind = plain[0];
    const id = plain.readUInt32BE(1);
    if (kind !== DATA && kind !== CLOSE) throw new DecodeError(`unknown lean record kind ${kind}`);
    let stream = this.streams.get(id);
    if (kind === CLOSE) {
      if (stream) {
        this.streams.delete(id);
        stream.ended();
      }
      return;
    }
    if (!stream) {
      if (this.o.role === 'dialer' || id <= this.highestSeen) return; // a stream closed here already
      this.highestSeen = id;
      if (this.streams.size >= this.o.maxStreams) {
        this.write(CLOSE, id, EMPTY);
        return;
      }
      stream = new LeanStream(this, id);
      this.streams.set(id, stream);
      this.o.onStream?.(stream);
    }
    stream.deliver(plain.subarray(HEADER_BYTES));
  }
}
