/**
 * CRC-32C (Castagnoli), slicing-by-8 over eight 256-entry tables. Every stored
 * record carries one; a mismatch on read means the bytes on disk are not the
 * bytes that were written.
 */

const POLY = 0x82f63b78;

const TABLES: Int32Array = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[k * 256 + n] = c;
    }
  }
  return t;
})();

/**
 * CRC-32C of `bytes[start..end)`, continuing from `previous` (the result of an
 * earlier call over the bytes just before), so a record can be checked over
 * its key and body without concatenating them.
 */
export function crc32c(bytes: Uint8Array, previous = 0, start = 0, end = bytes.length): number {
  const t = TABLES;
  let crc = ~previous;
  let i = start;
  const end8 = end - ((end - start) & 7);
  while (i < end8) {
    const lo = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[1792 + (lo & 0xff)]! ^
      t[1536 + ((lo >>> 8) & 0xff)]! ^
      t[1280 + ((lo >>> 16) & 0xff)]! ^
      t[1024 + (lo >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^
      t[512 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
    i += 8;
  }
  while (i < end) crc = t[(crc ^ bytes[i++]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}
