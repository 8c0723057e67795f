import { DecodeError } from '@parley/interface';

/**
 * Byte-level primitives shared by the Raft codecs: unsigned LEB128 varints
 * (up to 2^53 - 1), length-prefixed bytes and UTF-8 strings. The reader
 * checks every length against the bytes left, so a hostile length can never
 * make it allocate more than the input size.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export class Writer {
  private buf: Uint8Array;
  private pos = 0;

  constructor(initialBytes = 64) {
    this.buf = new Uint8Array(initialBytes);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
  }

  uint(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`wire: ${v} is not an unsigned safe integer`);
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  bool(v: boolean): void {
    this.u8(v ? 1 : 0);
  }

  bytes(v: Uint8Array): void {
    this.uint(v.byteLength);
    this.ensure(v.byteLength);
    this.buf.set(v, this.pos);
    this.pos += v.byteLength;
  }

  string(v: string): void {
    this.bytes(encoder.encode(v));
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

export class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  remaining(): number {
    return this.buf.length - this.pos;
  }

  u8(): number {
    if (this.pos >= this.buf.length) throw new DecodeError('unexpected end of input', this.pos);
    return this.buf[this.pos++] as number;
  }

  uint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(result)) throw new DecodeError('varint exceeds 2^53', this.pos);
        if (i > 0 && b === 0) throw new DecodeError('non-canonical varint', this.pos);
        return result;
      }
      scale *= 0x80;
    }
    throw new DecodeError('varint too long', this.pos);
  }

  bool(): boolean {
    const b = this.u8();
    if (b > 1) throw new DecodeError('invalid boolean', this.pos - 1);
    return b === 1;
  }

  bytes(): Uint8Array {
    const n = this.uint();
    if (n > this.remaining()) throw new DecodeError(`length ${n} exceeds remaining input`, this.pos);
    const out = this.buf.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  string(): string {
    const raw = this.bytes();
    try {
      return decoder.decode(raw);
    } catch {
      throw new DecodeError('invalid UTF-8', this.pos);
    }
  }

  /** A count of items that each take at least `minBytes`: bounded by the input left. */
  count(minBytes: number): number {
    const n = this.uint();
    if (n * minBytes > this.remaining()) throw new DecodeError(`count ${n} exceeds remaining input`, this.pos);
    return n;
  }

  end(): void {
    if (this.pos !== this.buf.length) throw new DecodeError('trailing bytes', this.pos);
  }
}
