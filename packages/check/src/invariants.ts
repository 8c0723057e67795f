/**
 * Invariants: named safety properties the simulator checks continuously during
 * the safety phase (after every delivered message, tick or fault).
 *
 * A protocol registers its own, typed by what it inspects (`C`, e.g. a view of
 * the Raft cluster). A check returns nothing when the property holds, and a
 * message (or several) when it does not. Checks may keep state in closures
 * (e.g. every leader seen per term) — create one registry per run.
 */
import { InvalidArgumentError } from '@parley/interface';

/** What a check returns: `undefined`/`true` when it holds; `false`, a message or messages when it does not. */
// biome-ignore lint/suspicious/noConfusingVoidType: a check that returns nothing has passed.
export type InvariantOutcome = void | undefined | boolean | string | readonly string[];

export type InvariantCheck<C> = (context: C) => InvariantOutcome;

export interface Invariant<C> {
  readonly name: string;
  readonly description: string;
  readonly check: InvariantCheck<C>;
}

export interface InvariantViolation {
  readonly invariant: string;
  readonly message: string;
}

/** Thrown by `assertInvariants`: a correctness failure. */
export class InvariantViolationError extends Error {
  readonly violations: readonly InvariantViolation[];
  constructor(violations: readonly InvariantViolation[]) {
    super(violations.map((v) => `${v.invariant}: ${v.message}`).join('; '));
    this.name = 'InvariantViolationError';
    this.violations = violations;
  }
}

const MAX_INVARIANTS = 256;
const NAME = /^[a-z0-9][a-z0-9-]*(\/[a-z0-9][a-z0-9-]*)*$/;

/**
 * @example
 * ```ts
 * const invariants = new InvariantRegistry<RaftClusterView>();
 * const leaders = new Map<number, string>();
 * invariants.registerInvariant('raft/election-safety', (view) => {
 *   for (const n of view.nodes) {
 *     if (n.role !== 'leader') continue;
 *     const seen = leaders.get(n.term);
 *     if (seen !== undefined && seen !== n.id) return `term ${n.term} has leaders ${seen} and ${n.id}`;
 *     leaders.set(n.term, n.id);
 *   }
 * }, 'at most one leader per term');
 * invariants.assertInvariants(view); // throws InvariantViolationError on a violation
 * ```
 */
export class InvariantRegistry<C> {
  private readonly invariants = new Map<string, Invariant<C>>();

  /**
   * Adds an invariant; returns a function that removes it. Names are lowercase
   * words with dashes, optionally namespaced (`raft/log-matching`), and unique.
   */
  registerInvariant(name: string, check: InvariantCheck<C>, description = ''): () => void {
    if (!NAME.test(name)) throw new InvalidArgumentError(`invalid invariant name '${name}'`, { name });
    if (this.invariants.has(name))
      throw new InvalidArgumentError(`invariant '${name}' is already registered`, { name });
    if (this.invariants.size >= MAX_INVARIANTS) {
      throw new InvalidArgumentError(`at most ${MAX_INVARIANTS} invariants per registry`);
    }
    const invariant: Invariant<C> = { name, description, check };
    this.invariants.set(name, invariant);
    return () => {
      if (this.invariants.get(name) === invariant) this.invariants.delete(name);
    };
  }

  /** Registered invariants, in registration order. */
  list(): Invariant<C>[] {
    return [...this.invariants.values()];
  }

  get size(): number {
    return this.invariants.size;
  }

  /** Runs every invariant on `context`. A check that throws counts as a violation. */
  checkInvariants(context: C): InvariantViolation[] {
    const out: InvariantViolation[] = [];
    for (const inv of this.invariants.values()) {
      let outcome: InvariantOutcome;
      try {
        outcome = inv.check(context);
      } catch (err) {
        out.push({ invariant: inv.name, message: `check threw: ${err instanceof Error ? err.message : String(err)}` });
        continue;
      }
      if (outcome === undefined || outcome === true) continue;
      if (outcome === false) out.push({ invariant: inv.name, message: inv.description || 'violated' });
      else if (typeof outcome === 'string') out.push({ invariant: inv.name, message: outcome });
      else for (const message of outcome) out.push({ invariant: inv.name, message });
    }
    return out;
  }

  /** Runs every invariant; throws `InvariantViolationError` if any is violated. */
  assertInvariants(context: C): void {
    const violations = this.checkInvariants(context);
    if (violations.length > 0) throw new InvariantViolationError(violations);
  }
}
