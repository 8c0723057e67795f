import { hlcVersion } from './hlc.js';
import type { Entry, JsonValue, RegisterState } from './types.js';

/**
 * A register write as held by a replica. It is at once the key state (what
 * replicates) and the entry a reader sees: `get` returns it as is, with no
 * allocation. `version`, `updatedAt` and `expiresAt` are accessors derived from
 * the stamp and TTL, so an object spread (`{...entry}`) does not copy them:
 * use `toJSON()` (or `JSON.stringify`) for a plain envelope.
 */
export class Register implements RegisterState, Entry {
  readonly type = 'register' as const;
  /** What `view` made (a private field: not a property, so not in `{...entry}`, JSON or equality). */
  #view: unknown = undefined;

  constructor(
    readonly key: string,
    readonly wallMs: number,
    readonly logical: number,
    readonly node: string,
    readonly seq: number,
    readonly ttlSeconds: number,
    readonly createdAt: number,
    readonly value: JsonValue,
  ) {}

  get version(): string {
    return hlcVersion(this);
  }

  /**
   * `make(this, arg)`, made on the first call and kept with this register (a
   * register never changes): the layer above keeps its own read-only view of
   * the entry here, so a read that finds it allocates nothing. The CRDT never
   * reads it. One view per register: later calls return the first one made.
   */
  view<T, A>(make: (r: Register, arg: A) => T, arg: A): T {
    if (this.#view === undefined) this.#view = make(this, arg);
    return this.#view as T;
  }

  get updatedAt(): number {
    return this.wallMs;
  }

  get expiresAt(): number {
    return this.wallMs + this.ttlSeconds * 1000;
  }

  toJSON(): Entry {
    return {
      value: this.value,
      version: this.version,
      ttlSeconds: this.ttlSeconds,
      createdAt: this.createdAt,
      updatedAt: this.wallMs,
      expiresAt: this.expiresAt,
    };
  }

  static from(s: RegisterState): Register {
    return s instanceof Register
      ? s
      : new Register(s.key, s.wallMs, s.logical, s.node, s.seq, s.ttlSeconds, s.createdAt, s.value);
  }
}
