/**
 * Byte arenas and a columnar entry log: how the stores keep a million records in memory without a million
 * objects for the garbage collector to trace and promote.
 *
 * `ByteArena` copies byte strings into shared chunks and hands out views. `EntryColumns` keeps a Raft log as
 * parallel typed arrays (term, type, where the data lies) over an arena; a `RaftEntry` object exists only
 * while a caller holds one returned by a read.
 */
import type { EntryType, RaftEntry } from './raft-log.js';

/**
 * Copies `src[start..end)` to `dst` at `at`. Short runs go byte by byte: `subarray` of a Buffer builds a new
 * Buffer object, which costs more than copying a hundred bytes.
 */
export function copyBytes(dst: Uint8Array, at: number, src: Uint8Array, start: number, end: number): void {
  const n = end - start;
  if (n <= 128) {
    for (let i = 0; i < n; i++) dst[at + i] = src[start + i]!;
  } else {
    dst.set(new Uint8Array(src.buffer, src.byteOffset + start, n), at);
  }
}

/** Largest chunk of an arena; a record larger than a quarter of it gets a chunk of its own. */
export const ARENA_CHUNK_BYTES = 1 << 20;

/**
 * Copies byte strings into shared chunks and returns views of the copies. Chunks start small and double up to
 * ARENA_CHUNK_BYTES, so an arena used for three records does not hold a megabyte.
 */
export class ByteArena {
  private chunk: Uint8Array = new Uint8Array(0);
  private used = 0;
  private nextChunkBytes = 4096;

  /** Copies `src[start..end)` into the arena and returns a view of the copy. */
  copy(src: Uint8Array, start = 0, end = src.length): Uint8Array {
    const n = end - start;
    if (n > ARENA_CHUNK_BYTES >> 2) return src.slice(start, end);
    if (this.used + n > this.chunk.length) {
      this.chunk = new Uint8Array(Math.max(this.nextChunkBytes, n));
      this.nextChunkBytes = Math.min(this.nextChunkBytes * 2, ARENA_CHUNK_BYTES);
      this.used = 0;
    }
    const at = this.used;
    copyBytes(this.chunk, at, src, start, end);
    this.used += n;
    return this.chunk.subarray(at, at + n);
  }
}

const TYPE_NORMAL = 0;
const TYPE_CONF = 1;

/**
 * Entries `base + 1 .. base + length` of a Raft log as columns. Data bytes live in arena chunks; chunk ids
 * never decrease along the log, so dropping a prefix frees every chunk before the first one still used.
 */
export class EntryColumns {
  private terms = new Float64Array(1024);
  private types = new Uint8Array(1024);
  private chunkIds = new Uint32Array(1024);
  private offsets = new Uint32Array(1024);
  private lengths = new Uint32Array(1024);
  /** Position of the first live entry in the columns. */
  private head = 0;
  private count = 0;
  private readonly chunks = new Map<number, Uint8Array>();
  private chunk: Uint8Array = new Uint8Array(0);
  private chunkId = -1;
  private used = 0;
  /** Chunks start small and double up to `chunkBytes`: a short log does not hold a megabyte. */
  private nextChunkBytes = 4096;

  constructor(private readonly chunkBytes = ARENA_CHUNK_BYTES) {}

  get length(): number {
    return this.count;
  }

  /** Appends an entry whose data is `src[start..end)` (copied). */
  push(term: number, type: EntryType, src: Uint8Array, start = 0, end = src.length): void {
    const n = end - start;
    if (this.head + this.count === this.terms.length) this.grow();
    let id: number;
    let at: number;
    if (n > this.chunkBytes >> 2) {
      id = this.newChunk(n);
      at = 0;
      this.used = n;
    } else {
      if (this.used + n > this.chunk.length) {
        this.newChunk(Math.max(n, Math.min(this.nextChunkBytes, this.chunkBytes)));
        this.nextChunkBytes = Math.min(this.nextChunkBytes * 2, this.chunkBytes);
      }
      id = this.chunkId;
      at = this.used;
      this.used += n;
    }
    copyBytes(this.chunk, at, src, start, end);
    const i = this.head + this.count;
    this.terms[i] = term;
    this.types[i] = type === 'conf' ? TYPE_CONF : TYPE_NORMAL;
    this.chunkIds[i] = id;
    this.offsets[i] = at;
    this.lengths[i] = n;
    this.count++;
  }

  /** Term of the k-th live entry (0-based). */
  term(k: number): number {
    return this.terms[this.head + k]!;
  }

  dataBytes(k: number): number {
    return this.lengths[this.head + k]!;
  }

  /** The k-th live entry as an object; its data is a view into the arena. */
  entry(k: number, index: number): RaftEntry {
    const i = this.head + k;
    const n = this.lengths[i]!;
    const at = this.offsets[i]!;
    // An empty entry may name no chunk at all (none allocated yet, or all freed by clear()).
    const data = n === 0 ? new Uint8Array(0) : this.chunks.get(this.chunkIds[i]!)!.subarray(at, at + n);
    return { term: this.terms[i]!, index, type: this.types[i] === TYPE_CONF ? 'conf' : 'normal', data };
  }

  /** Keeps the first `n` live entries. Their bytes stay; new entries go after them in the arena. */
  truncate(n: number): void {
    if (n < this.count) this.count = Math.max(0, n);
  }

  /** Drops the first `n` live entries and frees the chunks only they used. */
  dropFront(n: number): void {
    const k = Math.min(n, this.count);
    this.head += k;
    this.count -= k;
    const firstLive = this.count > 0 ? this.chunkIds[this.head]! : this.chunkId;
    for (const id of this.chunks.keys()) if (id < firstLive) this.chunks.delete(id);
    if (this.count === 0) this.head = 0;
  }

  clear(): void {
    this.head = 0;
    this.count = 0;
    this.chunks.clear();
    this.chunk = new Uint8Array(0);
    this.used = 0;
  }

  private newChunk(bytes: number): number {
    this.chunkId++;
    this.chunk = new Uint8Array(bytes);
    this.used = 0;
    this.chunks.set(this.chunkId, this.chunk);
    return this.chunkId;
  }

  private grow(): void {
    // Reclaim a dropped prefix first; double only when the live part fills half the columns.
    if (this.head > 0 && this.count <= this.terms.length >> 1) {
      const end = this.head + this.count;
      this.terms.copyWithin(0, this.head, end);
      this.types.copyWithin(0, this.head, end);
      this.chunkIds.copyWithin(0, this.head, end);
      this.offsets.copyWithin(0, this.head, end);
      this.lengths.copyWithin(0, this.head, end);
      this.head = 0;
      return;
    }
    const size = this.terms.length * 2;
    const live = (a: Float64Array | Uint8Array | Uint32Array) => a.subarray(this.head, this.head + this.count);
    const terms = new Float64Array(size);
    terms.set(live(this.terms));
    const types = new Uint8Array(size);
    types.set(live(this.types));
    const chunkIds = new Uint32Array(size);
    chunkIds.set(live(this.chunkIds));
    const offsets = new Uint32Array(size);
    offsets.set(live(this.offsets));
    const lengths = new Uint32Array(size);
    lengths.set(live(this.lengths));
    this.terms = terms;
    this.types = types;
    this.chunkIds = chunkIds;
    this.offsets = offsets;
    this.lengths = lengths;
    this.head = 0;
  }
}
