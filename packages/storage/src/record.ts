/**
 * Checksummed record framing shared by the level stores.
 *
 * ```
 * byte 0      format tag (RECORD_V1)
 * bytes 1..4  CRC-32C, little-endian, over the record's key bytes then bytes 5..end
 * bytes 5..   body
 * ```
 *
 * Covering the key means a record that ends up under the wrong key is caught
 * as surely as a flipped bit.
 */
import { StorageCorruptError } from '@parley/interface';
import { crc32c } from './crc32c.js';

export const RECORD_V1 = 1;
export const RECORD_HEADER_BYTES = 5;

/** Allocates a record with room for `bodyBytes`; fill the body, then call `sealRecord`. */
export function allocRecord(bodyBytes: number): Buffer {
  const rec = Buffer.allocUnsafe(RECORD_HEADER_BYTES + bodyBytes);
  rec[0] = RECORD_V1;
  return rec;
}

export function sealRecord(key: Uint8Array, rec: Buffer): Buffer {
  const crc = crc32c(rec, crc32c(key), RECORD_HEADER_BYTES);
  rec.writeUInt32LE(crc, 1);
  return rec;
}

/**
 * Checks tag and checksum; returns the record (body at RECORD_HEADER_BYTES). `what` names the record in an
 * error from its key; it is called only on failure (a shared function, not a closure per record).
 */
export function openRecord(store: string, key: Uint8Array, rec: Uint8Array, what: (key: Uint8Array) => string): Buffer {
  const buf = Buffer.isBuffer(rec) ? rec : Buffer.from(rec.buffer, rec.byteOffset, rec.byteLength);
  if (buf.length < RECORD_HEADER_BYTES) {
    throw new StorageCorruptError(store, `${what(key)}: record of ${buf.length} bytes is shorter than its header`);
  }
  if (buf[0] !== RECORD_V1) throw new StorageCorruptError(store, `${what(key)}: unknown record format ${buf[0]}`);
  const want = buf.readUInt32LE(1);
  const got = crc32c(buf, crc32c(key), RECORD_HEADER_BYTES);
  if (want !== got) {
    throw new StorageCorruptError(store, `${what(key)}: checksum mismatch (stored ${hex(want)}, computed ${hex(got)})`);
  }
  return buf;
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

/** A plain Uint8Array over `buf[start..end)` (no copy): callers see the contract's type, not a Buffer. */
export function bytesView(buf: Uint8Array, start: number, end = buf.length): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset + start, end - start);
}
