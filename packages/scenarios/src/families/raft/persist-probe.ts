/**
 * Persist before send, checked at the moment of sending. A probe wraps one
 * Raft member's log storage and transport (one host generation): it mirrors
 * what its disk holds durably (a save counts once its promise resolved), and
 * looks at every Raft message the member sends. An append acknowledgement
 * for index N while the disk holds less than N, or a vote granted in term T
 * while the disk does not record that vote, is a breach: a crash right then
 * would make the member forget what it promised (a leader counts a replica
 * that is not there; a member votes twice in one term).
 *
 * The probe also tells a nemesis when a member sent a reply while one of its
 * writes was still in flight: the moment a crash hurts most.
 */
import type { HardState, PeerId, RaftLogStorage, RaftLogUpdate, RequestOptions, Transport } from '@parley/interface';
import { decodeMessage, RAFT_PROTOCOL } from '@parley/raft';

/** Durable log terms remembered per member, at most (older ones are dropped). */
const MAX_TERMS = 100_000;

export interface PersistProbeHooks {
  /** A message left before the disk held what it promises. */
  breach(message: string): void;
  /** A reply (append or vote answer) left while a write was still in flight. */
  replyWithWriteInFlight?(): void;
}

export class PersistProbe {
  /** Last index on the disk (durable). */
  durableLast: number;
  hardState: HardState;
  /** Replies sent while a write was in flight (the crash nemesis's opportunities). */
  repliesWithWriteInFlight = 0;
  breaches = 0;
  private readonly terms = new Map<number, number>();
  private pending = 0;

  constructor(
    readonly host: PeerId,
    private readonly storage: RaftLogStorage,
    private readonly hooks: PersistProbeHooks,
  ) {
    // At boot the storage holds exactly what the disk kept.
    this.durableLast = storage.lastIndex();
    this.hardState = { ...storage.initialState().hardState };
  }

  /** The storage the driver must use: saves update the durable mirror when they resolve. */
  wrapStorage(): RaftLogStorage {
    const inner = this.storage;
    const save = (update: RaftLogUpdate): Promise<void> => {
      this.pending++;
      return inner.save(update).then(
        () => {
          this.pending--;
          this.mirror(update);
        },
        (err: unknown) => {
          this.pending--;
          throw err;
        },
      );
    };
    return proxy(inner, { save });
  }

  /** The transport the driver must use: every Raft message is checked as it leaves. */
  wrapTransport(transport: Transport): Transport {
    const request = (peer: PeerId, protocol: string, payload: Uint8Array, options?: RequestOptions) => {
      if (protocol === RAFT_PROTOCOL) this.inspect(payload);
      return transport.request(peer, protocol, payload, options);
    };
    const send = (peer: PeerId, protocol: string, payload: Uint8Array) => {
      if (protocol === RAFT_PROTOCOL) this.inspect(payload);
      return transport.send(peer, protocol, payload);
    };
    return proxy(transport, { request, send });
  }

  private inspect(payload: Uint8Array): void {
    let m: ReturnType<typeof decodeMessage>;
    try {
      m = decodeMessage(payload);
    } catch {
      return;
    }
    if (m.type === 'appResp' && !m.reject) {
      if (this.pending > 0) this.replied();
      const held = this.durableLast;
      if (m.index > held) {
        this.breach(`${this.host} acknowledged index ${m.index} to ${m.to} while its disk holds ${held}`);
        return;
      }
      // Same index, other entry: a truncated suffix whose replacement is not on the disk yet.
      const onDisk = this.terms.get(m.index);
      const inMemory = this.memTerm(m.index);
      if (onDisk !== undefined && inMemory !== undefined && onDisk !== inMemory) {
        this.breach(
          `${this.host} acknowledged index ${m.index} (term ${inMemory}) to ${m.to} while its disk holds term ${onDisk} there`,
        );
      }
    } else if (m.type === 'voteResp' && !m.reject) {
      if (this.pending > 0) this.replied();
      const hs = this.hardState;
      if (hs.term < m.term || (hs.term === m.term && hs.vote !== m.to)) {
        this.breach(
          `${this.host} granted its vote in term ${m.term} to ${m.to} while its disk records term ${hs.term}, vote '${hs.vote}'`,
        );
      }
    }
  }

  private memTerm(index: number): number | undefined {
    try {
      return this.storage.term(index);
    } catch {
      return undefined; // compacted
    }
  }

  private replied(): void {
    this.repliesWithWriteInFlight++;
    this.hooks.replyWithWriteInFlight?.();
  }

  private breach(message: string): void {
    this.breaches++;
    this.hooks.breach(message);
  }

  private mirror(u: RaftLogUpdate): void {
    if (u.snapshot) {
      // As the storage does: the entries after the snapshot stay only when the log agrees
      // with it at its index (a term not remembered, from before this generation, counts
      // as agreeing); otherwise the snapshot replaces the whole log.
      const { index, term } = u.snapshot.meta;
      const held = this.terms.get(index);
      if (index > this.durableLast || (held !== undefined && held !== term)) {
        this.terms.clear();
        this.durableLast = index;
      } else {
        for (const i of [...this.terms.keys()]) if (i < index) this.terms.delete(i);
      }
      this.terms.set(index, term);
    }
    const entries = u.entries ?? [];
    if (entries.length > 0) {
      const first = (entries[0] as { index: number }).index;
      for (let i = first; i <= this.durableLast; i++) this.terms.delete(i);
      for (const e of entries) this.terms.set(e.index, e.term);
      this.durableLast = (entries[entries.length - 1] as { index: number }).index;
      while (this.terms.size > MAX_TERMS) this.terms.delete(this.terms.keys().next().value as number);
    }
    if (u.hardState) this.hardState = { ...u.hardState };
  }
}

/** `target` with some methods replaced; every other member is the target's own (bound). */
function proxy<T extends object>(target: T, overrides: Record<string, unknown>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop === 'string' && prop in overrides) return overrides[prop];
      const v = Reflect.get(t, prop, t);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}
