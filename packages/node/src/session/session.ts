/**
 * A session: the object a caller passes as `{ session }` to calls on any node
 * to get read-your-writes, monotonic reads, monotonic writes and
 * writes-follow-reads across those calls (docs/guarantees.md, "Sessions").
 * Every call that succeeds moves it forward to what the call wrote or saw; a
 * call that fails or whose outcome is unknown leaves it as it was. Its
 * `token` is the portable form: hand it to another process, or to the HTTP
 * API (`Parley-Session` header), the CLI (`--session`) or MCP (`session`), and
 * `Session.from(token)` resumes it. Concurrent calls on one session are
 * allowed: the frontier only ever grows (a per-component maximum).
 */
import { checkFrontierLimits, decodeSessionToken, encodeSessionToken, type SessionFrontier } from './token.js';

/** A session's frontier, carried from call to call (see the module comment; `Session.from(token)` to resume one). */
export class Session {
  private strongIndex: number;
  private readonly eventualSeen: Map<string, Map<string, number>>;

  private constructor(frontier: SessionFrontier) {
    this.strongIndex = frontier.strong;
    this.eventualSeen = new Map([...frontier.eventual].map(([ns, o]) => [ns, new Map(o)]));
  }

  /** A new session, or the one `token` carries (throws `invalid_argument` for a token that does not decode). */
  static from(token?: string | null): Session {
    return new Session(decodeSessionToken(token));
  }

  /** The token of what this session has seen so far ('' for a new session). */
  get token(): string {
    return encodeSessionToken({ strong: this.strongIndex, eventual: this.eventualSeen });
  }

  /** A snapshot of the frontier. */
  frontier(): SessionFrontier {
    return { strong: this.strongIndex, eventual: new Map([...this.eventualSeen].map(([ns, o]) => [ns, new Map(o)])) };
  }

  /** The strong log index a member must have applied to answer this session (0: any). */
  get strong(): number {
    return this.strongIndex;
  }

  /** Per origin, the write counter a replica of `ns` must cover for this session (undefined: nothing). */
  eventual(ns: string): ReadonlyMap<string, number> | undefined {
    return this.eventualSeen.get(ns);
  }

  /** Throws `invalid_argument` when the session has outgrown the token's limits (checked as a call starts). */
  check(): void {
    checkFrontierLimits({ strong: this.strongIndex, eventual: this.eventualSeen });
  }

  /** The session saw (or wrote) strong state through log index `index`. */
  observeStrong(index: number): void {
    if (index > this.strongIndex) this.strongIndex = index;
  }

  /** The session saw (or wrote) the writes `dots` of `ns`: each `[origin, seq]`. */
  observeEventual(ns: string, dots: Iterable<readonly [string, number]>): void {
    let origins = this.eventualSeen.get(ns);
    for (const [origin, seq] of dots) {
      if (seq <= 0) continue;
      if (origins === undefined) {
        origins = new Map();
        this.eventualSeen.set(ns, origins);
      }
      if (seq > (origins.get(origin) ?? 0)) origins.set(origin, seq);
    }
  }

  /** Takes in everything `other` has seen (a session merged from two, e.g. two agents' hand-off). */
  merge(other: Session | string): void {
    const f = typeof other === 'string' ? decodeSessionToken(other) : other.frontier();
    this.observeStrong(f.strong);
    for (const [ns, origins] of f.eventual) this.observeEventual(ns, origins);
  }
}
