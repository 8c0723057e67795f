import { DecodeError } from './errors.js';

/**
 * The byte-level primitives every Parley binary codec is built from: unsigned
 * LEB128 varints (up to 2^53 − 1), zigzag signed integers, length-prefixed
 * bytes and UTF-8 strings. The reader checks every length and count against
 * the bytes left, so hostile input can never make it allocate more than the
 * input's size, and it throws nothing but DecodeError.
 */

const textEncoder = new TextEncoder();
// `ignoreBOM`: a string that starts with U+FEFF must survive a round trip.
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class ByteWriter {
  private buf: Uint8Array;
  pos = 0;

  constructor(initialBytes = 256) {
    this.buf = new Uint8Array(Math.max(16, initialBytes));
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

  /** Unsigned varint; `v` must be a safe non-negative integer. */
  uint(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${v} is not an unsigned safe integer`);
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  /** Signed safe integer, zigzag-encoded so small magnitudes stay short. */
  int(v: number): void {
    this.uint(v >= 0 ? v * 2 : -v * 2 - 1);
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

  string(s: string): void {
    const n = s.length;
    if (n < 0x80) {
      // Short ASCII strings (keys, node ids, small values) without TextEncoder.
      this.ensure(n + 1);
      const buf = this.buf;
      let p = this.pos + 1;
      let ascii = true;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) {
          ascii = false;
          break;
        }
        buf[p++] = c;
      }
      if (ascii) {
        buf[this.pos] = n;
        this.pos = p;
        return;
      }
    }
    this.ensure(n * 3 + 8);
    // Reserve one length byte; move the bytes along when the length needs more.
    const start = this.pos + 1;
    const { written } = textEncoder.encodeInto(s, this.buf.subarray(start));
    if (written < 0x80) {
      this.buf[this.pos] = written;
      this.pos = start + written;
      return;
    }
    const bytes = this.buf.slice(start, start + written);
    this.uint(written);
    this.ensure(written);
    this.buf.set(bytes, this.pos);
    this.pos += written;
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

export class ByteReader {
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
    let n = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      n += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) throw new DecodeError('non-canonical varint', this.pos - 1);
        if (n > Number.MAX_SAFE_INTEGER) throw new DecodeError('varint beyond the safe integer range', this.pos);
        return n;
      }
      scale *= 0x80;
    }
    throw new DecodeError('varint longer than 8 bytes', this.pos);
  }

  int(): number {
    const z = this.uint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  bool(): boolean {
    const b = this.u8();
    if (b > 1) throw new DecodeError('invalid boolean', this.pos - 1);
    return b === 1;
  }

  /** A copy of the next length-prefixed bytes. */
  bytes(): Uint8Array {
    const n = this.uint();
    if (n > this.remaining()) throw new DecodeError(`length ${n} exceeds the remaining input`, this.pos);
    const out = this.buf.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  string(): string {
    const len = this.uint();
    if (len > this.remaining()) throw new DecodeError('string runs past the end of input', this.pos);
    const start = this.pos;
    this.pos += len;
    if (len <= 32) {
      // Short ASCII strings without TextDecoder (its call overhead dominates for them).
      let out = '';
      let i = start;
      for (; i < this.pos; i++) {
        const c = this.buf[i] as number;
        if (c >= 0x80) break;
        out += String.fromCharCode(c);
      }
      if (i === this.pos) return out;
    }
    try {
      return textDecoder.decode(this.buf.subarray(start, this.pos));
    } catch {
      throw new DecodeError('invalid UTF-8', start);
    }
  }

  /** A count of items that take at least `minBytes` each: bounded by the input left. */
  count(minBytes: number): number {
    const n = this.uint();
    if (n * minBytes > this.remaining()) throw new DecodeError(`count ${n} exceeds the remaining input`, this.pos);
    return n;
  }

  end(): void {
    if (this.pos !== this.buf.length) throw new DecodeError('trailing bytes', this.pos);
  }
}
