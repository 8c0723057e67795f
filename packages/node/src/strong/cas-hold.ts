/**
 * A leader's hold on a CAS whose key has a write of this leader still in the
 * log's pipeline: the CAS waits until that write applies, then goes the way
 * again: failed at once when the write superseded its version (the replica's
 * `released`), else as any CAS goes (read point or log). On a hot key this
 * turns "sixteen entries, fifteen of them failing" into one entry and fifteen
 * failures with no entry.
 *
 * This module only delays and keeps the books; the answers and their rules are
 * the replica's (docs/guarantees.md, "A CAS that is sure to fail"). A held CAS
 * was never proposed: when this member stops leading, it fails `not_leader` as
 * unsent, and the client may send it again.
 */
import type { Command, CommandResult, Operation } from '@parley/coord';
import type { Pending } from './pending.js';

/** CASes held on one leader at most; past it a CAS is proposed at once. */
export const MAX_HELD_CAS = 1024;

type SetOp = Extract<Operation, { type: 'set' }>;

interface Held {
  /** Sends the CAS on (read point or log) once its key's writes applied. */
  release(): Pending<CommandResult>;
  resolve(r: CommandResult): void;
  reject(err: unknown): void;
  /** The release's pending answer, once released. */
  next?: Pending<CommandResult>;
}

/** Identity of an entry: its namespace and key, joined by a character neither may hold. */
function keyOf(op: Operation | undefined): string | undefined {
  if (op?.type !== 'set' && op?.type !== 'delete') return undefined;
  return `${op.namespace}\u0000${op.key}`;
}

/** A first attempt of a plain conditional set (the only command the hold takes). */
function casOf(command: Omit<Command, 'nowMs'>, retry: boolean): SetOp | undefined {
  const op = command.op;
  if (retry || command.clientId === undefined) return undefined;
  if (op?.type !== 'set' || op.ifVersion === undefined || op.fence !== undefined) return undefined;
  return op;
}

/** One leader's held CASes, and the writes of its own in flight they wait for, per key. */
export class CasHold {
  /** This leader's proposed writes not yet applied: log index → key. */
  private readonly proposed = new Map<number, string>();
  /** Per key, how many of them. */
  private readonly inFlight = new Map<string, number>();
  private readonly held = new Map<string, Set<Held>>();
  private heldCount = 0;
  /** CASes that waited here (a counter for tests and metrics). */
  holds = 0;

  /** Records a proposal of this leader at `index`. */
  noteProposed(index: number, op: Operation | undefined): void {
    const key = keyOf(op);
    if (key === undefined) return;
    this.proposed.set(index, key);
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
  }

  /** Whether `command` waits: a CAS first attempt whose key has a write of this leader in flight, with room. */
  wants(command: Omit<Command, 'nowMs'>, retry: boolean): boolean {
    const op = casOf(command, retry);
    if (op === undefined || this.heldCount >= MAX_HELD_CAS) return false;
    return this.inFlight.has(keyOf(op) as string);
  }

  /** Holds the CAS `command` (one `wants` took); `release` sends it on. */
  hold(command: Omit<Command, 'nowMs'>, release: () => Pending<CommandResult>): Pending<CommandResult> {
    const key = keyOf(command.op) as string;
    let h!: Held;
    const promise = new Promise<CommandResult>((resolve, reject) => {
      h = { release, resolve, reject };
    });
    let set = this.held.get(key);
    if (!set) {
      set = new Set();
      this.held.set(key, set);
    }
    set.add(h);
    this.heldCount++;
    this.holds++;
    return {
      promise,
      cancel: (err) => {
        if (this.held.get(key)?.delete(h)) this.heldCount--;
        h.next?.cancel(err);
        h.reject(err);
      },
    };
  }

  /**
   * The entry at `index` applied: returns the key whose last in-flight write
   * it was, if any. The caller releases that key (`release`) once the whole
   * batch is applied, so the CASes are judged on the state after it.
   */
  applied(index: number): string | undefined {
    const key = this.proposed.get(index);
    if (key === undefined) return undefined;
    this.proposed.delete(index);
    const n = (this.inFlight.get(key) ?? 1) - 1;
    if (n > 0) {
      this.inFlight.set(key, n);
      return undefined;
    }
    this.inFlight.delete(key);
    return key;
  }

  /** Sends on every CAS held on `key` (each judged again, from scratch). */
  release(key: string): void {
    const set = this.held.get(key);
    if (!set) return;
    this.held.delete(key);
    this.heldCount -= set.size;
    for (const h of set) {
      try {
        h.next = h.release();
        h.next.promise.then(h.resolve, h.reject);
      } catch (err) {
        h.reject(err);
      }
    }
  }

  /** This member stopped leading: every held CAS fails with `err` (unsent), and the books close. */
  dropAll(err: unknown): void {
    const all = [...this.held.values()].flatMap((s) => [...s]);
    this.held.clear();
    this.heldCount = 0;
    this.proposed.clear();
    this.inFlight.clear();
    for (const h of all) h.reject(err);
  }
}
