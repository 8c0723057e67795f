/**
 * The lean channel's records: each is a 4-byte big-endian length, then that
 * many bytes of ChaCha20-Poly1305 ciphertext and its 16-byte tag. The length
 * is the AEAD's associated data, so a changed length fails the tag; the nonce
 * is a per-direction record counter, so a dropped, replayed or reordered
 * record fails it too. Either way the link is closed: nothing is trusted.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { DecodeError } from '@parley/interface';

const ALGORITHM = 'chacha20-poly1305';
export const RECORD_HEADER_BYTES = 4;
export const RECORD_TAG_BYTES = 16;
export const RECORD_KEY_BYTES = 32;
const EMPTY = new Uint8Array(0);

/** Encrypts records in one direction of a link. */
export class RecordSealer {
  private counter = 0n;
  private readonly nonce = Buffer.alloc(12);

  constructor(private readonly key: Buffer) {}

  /** One record holding `head` then `body` (together at most the link's bound), header included. */
  seal(head: Uint8Array, body: Uint8Array = EMPTY): Buffer {
    const plainBytes = head.length + body.length;
    const out = Buffer.allocUnsafe(RECORD_HEADER_BYTES + plainBytes + RECORD_TAG_BYTES);
    const header = out.subarray(0, RECORD_HEADER_BYTES);
    header.writeUInt32BE(plainBytes + RECORD_TAG_BYTES, 0);
    const cipher = createCipheriv(ALGORITHM, this.key, this.nextNonce(), { authTagLength: RECORD_TAG_BYTES });
    cipher.setAAD(header, { plaintextLength: plainBytes });
    let at = RECORD_HEADER_BYTES;
    for (const part of [head, body]) {
      if (part.length === 0) continue;
      at += cipher.update(part).copy(out, at);
    }
    cipher.final();
    cipher.getAuthTag().copy(out, at);
    return out;
  }

  private nextNonce(): Buffer {
    this.nonce.writeBigUInt64BE(this.counter++, 4);
    return this.nonce;
  }
}

/**
 * Splits a byte stream into records and decrypts them. A record's length is
 * checked against `maxRecordBytes` on its header, before its body is waited
 * for, so at most one bounded record and one socket chunk are ever buffered.
 */
export class RecordOpener {
  private counter = 0n;
  private readonly nonce = Buffer.alloc(12);
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(
    private readonly key: Buffer,
    private maxRecordBytes: number,
  ) {}

  /** Buffers bytes read from the socket. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /** The next complete record's plaintext, or undefined; throws DecodeError on a bad record. */
  next(): Buffer | undefined {
    if (this.buffered < RECORD_HEADER_BYTES) return undefined;
    const length = this.peekHeader().readUInt32BE(0);
    if (length < RECORD_TAG_BYTES || length > this.maxRecordBytes + RECORD_TAG_BYTES) {
      throw new DecodeError(`lean record of ${length} bytes is out of bounds`);
    }
    if (this.buffered < RECORD_HEADER_BYTES + length) return undefined;
    return this.open(this.take(RECORD_HEADER_BYTES + length));
  }

  /** Raises the record bound (after the handshake, which keeps records small). */
  allow(maxRecordBytes: number): void {
    this.maxRecordBytes = maxRecordBytes;
  }

  private open(record: Buffer): Buffer {
    const header = record.subarray(0, RECORD_HEADER_BYTES);
    const tagAt = record.length - RECORD_TAG_BYTES;
    this.nonce.writeBigUInt64BE(this.counter++, 4);
    const decipher = createDecipheriv(ALGORITHM, this.key, this.nonce, { authTagLength: RECORD_TAG_BYTES });
    decipher.setAAD(header, { plaintextLength: tagAt - RECORD_HEADER_BYTES });
    decipher.setAuthTag(record.subarray(tagAt));
    const plain = decipher.update(record.subarray(RECORD_HEADER_BYTES, tagAt));
    try {
      decipher.final();
    } catch {
      throw new DecodeError('lean record failed authentication');
    }
    return plain;
  }

  private peekHeader(): Buffer {
    const first = this.chunks[0] as Buffer;
    if (first.length >= RECORD_HEADER_BYTES) return first;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    const first = this.chunks[0] as Buffer;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      const joined = Buffer.concat(this.chunks);
      out = joined.subarray(0, n);
      this.chunks = joined.length > n ? [joined.subarray(n)] : [];
    }
    this.buffered -= n;
    return out;
  }
}
