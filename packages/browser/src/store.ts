/**
 * What a browser node keeps in its database (IndexedDB through browser-level),
 * and the one queue every write goes through.
 *
 * Keys (utf8), NUL-separated; values are bytes:
 *   m\0<ns>              the namespace's meta: JSON {replicaId, lastContactMs}
 *   l\0<ns>\0<seq:12>    a log record: an encoded delta (a local write, a merged
 *                        delta) or an encoded full state (after compaction)
 *   y\0<ns>\0<key>\0<tag>.<seq:12>   a Yjs update of the document `key` (key percent-encoded),
 *                        written by the document's opener `tag` (random per open: tabs never collide)
 * A namespace's keys are under its name, or `<ns>#<slot>` for a second tab's replica (slots.ts).
 *
 * Writes are batched: every write queued while a batch is being written goes
 * into the next one (IndexedDB's transaction is the unit of durability). A
 * batch that fails fails every write queued with it and after it.
 */
import { type Delta, decodeDelta, decodeState, TAG_STATE } from '@parley/crdt';
import { StorageFailedError } from '@parley/interface';
import type { ReplicaDb } from './options.js';

export type Op = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string };

export const SEP = '\u0000';
const pad = (n: number) => n.toString().padStart(12, '0');

export function metaKey(ns: string): string {
  return `m${SEP}${ns}`;
}
export function logPrefix(ns: string): string {
  return `l${SEP}${ns}${SEP}`;
}
export function logKey(ns: string, seq: number): string {
  return `${logPrefix(ns)}${pad(seq)}`;
}
export function docPrefix(ns: string, key: string): string {
  return `y${SEP}${ns}${SEP}${encodeURIComponent(key)}${SEP}`;
}
export function docKey(ns: string, key: string, tag: string, seq: number): string {
  return `${docPrefix(ns, key)}${tag}.${pad(seq)}`;
}

/** Every [key, value] under `prefix`, in key order. */
export async function readPrefix(db: ReplicaDb, prefix: string): Promise<Array<[string, Uint8Array]>> {
  const out: Array<[string, Uint8Array]> = [];
  for await (const [k, v] of db.iterator({ gte: prefix, lt: `${prefix}\uffff` })) out.push([k, v]);
  return out;
}

/** A log record back as a delta (a full state is a delta too). */
export function decodeRecord(bytes: Uint8Array): Delta {
  return bytes[1] === TAG_STATE ? decodeState(bytes) : decodeDelta(bytes);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
export const jsonBytes = (v: unknown): Uint8Array => encoder.encode(JSON.stringify(v));
export const bytesJson = (b: Uint8Array): unknown => JSON.parse(decoder.decode(b));

interface Waiter {
  ops: Op[];
  resolve(): void;
  reject(err: unknown): void;
}

/** The write queue of one database: batches, in order; a failure fails what is queued. */
export class WriteQueue {
  private queued: Waiter[] = [];
  private running = false;
  /** Called when a batch fails, before its writers hear of it (drop what they prepared). */
  onFailure: ((err: unknown) => void) | undefined;

  constructor(private readonly db: ReplicaDb) {}

  /** Resolves once `ops` are durable. */
  write(ops: Op[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ ops, resolve, reject });
      if (!this.running) void this.run();
    });
  }

  /** Resolves once everything queued so far is durable (or failed). */
  async idle(): Promise<void> {
    await this.write([]).catch(() => {});
  }

  private async run(): Promise<void> {
    this.running = true;
    // Let the writes of this turn join the batch.
    await Promise.resolve();
    while (this.queued.length > 0) {
      const batch = this.queued;
      this.queued = [];
      const ops = batch.flatMap((w) => w.ops);
      try {
        if (ops.length > 0) await this.db.batch(ops);
        for (const w of batch) w.resolve();
      } catch (cause) {
        const err = new StorageFailedError('indexeddb', `a write was refused: ${(cause as Error)?.message ?? cause}`);
        const failed = [...batch, ...this.queued];
        this.queued = [];
        this.onFailure?.(err);
        for (const w of failed) w.reject(err);
      }
    }
    this.running = false;
  }
}
