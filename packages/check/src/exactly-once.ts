/**
 * Exactly-once, checked between what the state machine executed and what the
 * callers were told. Every call carries a tag of its own (in its value or its
 * lock metadata), so the applied command stream says how many commands
 * carried each call, and what each came to:
 *
 * - a call is executed by at most one command (`applied-twice`: a retry was
 *   re-issued as a new command, and ran again);
 * - a claim that won is told it won (`winner-told-lost`; also a claim told it
 *   lost to its own value);
 * - an answer from the state machine (a value, or an error code such as
 *   `key_already_exists` or `version_mismatch`) is the answer of the call's
 *   execution (`answer-mismatch`), and there is one (`answered-unapplied`) —
 *   except a `version_mismatch`, which a leader may give a CAS at a read
 *   point without logging it (docs/guarantees.md, "A CAS that is sure to
 *   fail"): a failure that changed nothing; the linearizability checkers
 *   judge whether it was right.
 *
 * Indeterminate answers (`timeout`, `outcome_unknown`, …) promise nothing
 * about the outcome and are not compared, but their calls still count for
 * `applied-twice`.
 */

/** What an execution or an answer came to, in comparable form. */
export type Outcome =
  | {
      readonly ok: true;
      readonly version?: string;
      readonly won?: boolean;
      /** A claim's winning value. */
      readonly value?: unknown;
      readonly fence?: number;
      /** A blocking lock acquire still in its queue (its grant or failure comes later). */
      readonly waiting?: true;
    }
  | { readonly ok: false; readonly code: string };

/** A command the state machine executed for a tagged call (its first application). */
export interface Execution {
  readonly tag: string;
  /** `clientId/seq` of the command. */
  readonly command: string;
  readonly index: number;
  /** The result, or the delivery that settled a queued lock acquire. */
  outcome: Outcome;
}

/** What a caller was told about its tagged call. */
export interface TaggedAnswer {
  readonly tag: string;
  readonly client: string;
  /** The call (`claim`, `create`, `cas`, `set`, `acquire`). */
  readonly f: string;
  readonly outcome: Outcome;
}

export type ExactlyOnceViolation =
  | { readonly type: 'applied-twice'; readonly tag: string; readonly commands: string[]; readonly indexes: number[] }
  | { readonly type: 'winner-told-lost'; readonly tag: string; readonly client: string; readonly answered: Outcome }
  | {
      readonly type: 'answer-mismatch';
      readonly tag: string;
      readonly client: string;
      readonly f: string;
      readonly answered: Outcome;
      readonly applied: Outcome;
    }
  | {
      readonly type: 'answered-unapplied';
      readonly tag: string;
      readonly client: string;
      readonly f: string;
      readonly answered: Outcome;
    };

export interface ExactlyOnceResult {
  readonly ok: boolean;
  readonly violations: readonly ExactlyOnceViolation[];
  /** Answers compared with their execution. */
  readonly compared: number;
  readonly truncated: boolean;
}

/** Error codes that say nothing of a write's outcome: the caller cannot tell whether it applied. */
export const INDETERMINATE_CODES: ReadonlySet<string> = new Set([
  'timeout',
  'unavailable',
  'not_leader',
  'closed',
  'outcome_unknown',
  'gave-up',
]);

/**
 * @example
 * ```ts
 * const executions = [{ tag: 't1', command: 's3/7', index: 40, outcome: { ok: true, won: true, version: 'v' } }];
 * checkExactlyOnce(executions, [
 *   { tag: 't1', client: 'c0', f: 'claim', outcome: { ok: true, won: false, value: 't1', version: 'v' } },
 * ]).violations[0]?.type; // 'winner-told-lost'
 * ```
 */
export function checkExactlyOnce(
  executions: readonly Execution[],
  answers: readonly TaggedAnswer[],
  maxViolations = 20,
): ExactlyOnceResult {
  const violations: ExactlyOnceViolation[] = [];
  let truncated = false;
  const add = (v: ExactlyOnceViolation) => {
    if (violations.length < maxViolations) violations.push(v);
    else truncated = true;
  };
  const byTag = new Map<string, Execution[]>();
  for (const e of executions) {
    const list = byTag.get(e.tag);
    if (list) list.push(e);
    else byTag.set(e.tag, [e]);
  }
  for (const [tag, list] of byTag) {
    if (list.length > 1) {
      add({ type: 'applied-twice', tag, commands: list.map((e) => e.command), indexes: list.map((e) => e.index) });
    }
  }
  let compared = 0;
  for (const a of answers) {
    const answered = a.outcome;
    if (answered.ok && answered.won === false && answered.value === a.tag) {
      add({ type: 'winner-told-lost', tag: a.tag, client: a.client, answered });
      continue;
    }
    if (!answered.ok && INDETERMINATE_CODES.has(answered.code)) continue;
    const applied = byTag.get(a.tag)?.[0]?.outcome;
    if (applied === undefined) {
      if (!answered.ok && answered.code === 'version_mismatch') continue; // failed at a read point, unlogged
      add({ type: 'answered-unapplied', tag: a.tag, client: a.client, f: a.f, answered });
      continue;
    }
    compared++;
    if (applied.ok && applied.won === true && answered.ok && answered.won === false) {
      add({ type: 'winner-told-lost', tag: a.tag, client: a.client, answered });
    } else if (!sameOutcome(answered, applied)) {
      add({ type: 'answer-mismatch', tag: a.tag, client: a.client, f: a.f, answered, applied });
    }
  }
  return { ok: violations.length === 0, violations, compared, truncated };
}

function sameOutcome(answered: Outcome, applied: Outcome): boolean {
  if (!answered.ok || !applied.ok) return !answered.ok && !applied.ok && answered.code === applied.code;
  if (applied.waiting) return false; // answered as settled, but the state machine never settled it
  return (
    (applied.version === undefined || applied.version === answered.version) &&
    (applied.won === undefined || applied.won === answered.won) &&
    (applied.fence === undefined || applied.fence === answered.fence)
  );
}
