/**
 * The awareness states of one room on this node: who is in the document and
 * what they show (cursor, name, colour). Ephemeral: in memory only.
 *
 * Rules (those of y-protocols' applyAwarenessUpdate, so every provider of the
 * room agrees with this table):
 * - An entry is taken when its clock is above the known one, or equal with a
 *   null state while the client is present (a removal). A client never seen
 *   counts as clock 0.
 * - A null state removes the client; its clock is remembered (a tombstone) for
 *   one timeout, so a late copy of an older state cannot bring it back.
 * - A present client not renewed within the timeout is removed (clock kept).
 * - Each present client has an owner: the connection or peer its latest state
 *   came from; a connection that closes takes its clients with it.
 * - Bounds: at most `maxStates` present clients (a new one beyond is dropped),
 *   a state of at most `maxStateBytes` (a larger one is dropped), and at most
 *   as many tombstones (the oldest goes first).
 * Time is passed in (`now`), so the table itself reads no clock.
 */
import type { AwarenessEntry } from './protocol.js';

export interface AwarenessLimits {
  maxStates: number;
  maxStateBytes: number;
  timeoutMs: number;
}

interface Slot<Owner> {
  clock: number;
  /** JSON text; null once removed (a tombstone). */
  state: string | null;
  at: number;
  owner: Owner | undefined;
}

const NULL_STATE = 'null';

export class AwarenessTable<Owner> {
  private readonly slots = new Map<number, Slot<Owner>>();
  private present = 0;
  /** Entries refused by a bound since the table was made. */
  dropped = 0;

  constructor(private readonly limits: AwarenessLimits) {}

  get size(): number {
    return this.present;
  }

  /** Applies entries from `owner`; returns those taken (to pass on), each as received. */
  apply(entries: readonly AwarenessEntry[], owner: Owner, now: number): AwarenessEntry[] {
    const taken: AwarenessEntry[] = [];
    for (const e of entries) {
      const slot = this.slots.get(e.clientID);
      const known = slot?.clock ?? 0;
      const removal = e.state === NULL_STATE;
      const isPresent = slot !== undefined && slot.state !== null;
      if (!(known < e.clock || (known === e.clock && removal && isPresent))) continue;
      if (removal) {
        if (slot) this.tombstone(slot, e.clock, now);
        else this.slots.set(e.clientID, { clock: e.clock, state: null, at: now, owner: undefined });
      } else {
        if (Buffer.byteLength(e.state, 'utf8') > this.limits.maxStateBytes || (!isPresent && this.full())) {
          this.dropped++;
          continue;
        }
        if (!isPresent) this.present++;
        this.slots.set(e.clientID, { clock: e.clock, state: e.state, at: now, owner });
      }
      taken.push(e);
    }
    if (this.slots.size - this.present > this.limits.maxStates) this.pruneTombstones(now);
    return taken;
  }

  /** Removes every present client owned by `owner`; returns the removals to pass on. */
  removeOwned(owner: Owner, now: number): AwarenessEntry[] {
    const out: AwarenessEntry[] = [];
    for (const [clientID, slot] of this.slots) {
      if (slot.state !== null && slot.owner === owner) {
        this.tombstone(slot, slot.clock, now);
        out.push({ clientID, clock: slot.clock, state: NULL_STATE });
      }
    }
    return out;
  }

  /** Removes the clients not renewed within the timeout, and forgets old tombstones; returns the removals. */
  expire(now: number): AwarenessEntry[] {
    const out: AwarenessEntry[] = [];
    for (const [clientID, slot] of this.slots) {
      if (slot.state !== null && now - slot.at >= this.limits.timeoutMs) {
        this.tombstone(slot, slot.clock, now);
        out.push({ clientID, clock: slot.clock, state: NULL_STATE });
      }
    }
    this.pruneTombstones(now);
    return out;
  }

  /** Every present client's entry. */
  states(): AwarenessEntry[] {
    const out: AwarenessEntry[] = [];
    for (const [clientID, slot] of this.slots) {
      if (slot.state !== null) out.push({ clientID, clock: slot.clock, state: slot.state });
    }
    return out;
  }

  /** The present clients whose latest state came from `owner`. */
  ownedBy(predicate: (owner: Owner | undefined) => boolean): AwarenessEntry[] {
    return this.states().filter((e) => predicate(this.slots.get(e.clientID)?.owner));
  }

  private full(): boolean {
    return this.present >= this.limits.maxStates;
  }

  private tombstone(slot: Slot<Owner>, clock: number, now: number): void {
    if (slot.state !== null) this.present--;
    slot.clock = clock;
    slot.state = null;
    slot.at = now;
    slot.owner = undefined;
  }

  private pruneTombstones(now: number): void {
    let tombstones = this.slots.size - this.present;
    if (tombstones === 0) return;
    // Map order is insertion order, not removal order: one pass drops the expired ones,
    // and if the count is still over the bound, the oldest by removal time.
    for (const [clientID, slot] of this.slots) {
      if (slot.state === null && now - slot.at >= this.limits.timeoutMs) {
        this.slots.delete(clientID);
        tombstones--;
      }
    }
    if (tombstones <= this.limits.maxStates) return;
    const dead = [...this.slots].filter(([, s]) => s.state === null).sort((a, b) => a[1].at - b[1].at);
    for (const [clientID] of dead.slice(0, tombstones - this.limits.maxStates)) this.slots.delete(clientID);
  }
}
