/**
 * A leader's way for a CAS that is sure to fail (docs/guarantees.md, "A CAS
 * that is sure to fail"): held behind a write of its key in flight
 * (./cas-hold.ts), failed at once when that write superseded its version,
 * failed at a read point when this leader's state says it must fail, and
 * proposed as any write otherwise. Only first attempts take it: a retry may
 * be of a CAS that won and lost its answer, so it goes through the log and
 * the session table answers it.
 *
 * The member (./replica.ts) lends it the state machine, its clock stamp, its
 * read points and its proposals; the rules of this path are written here
 * once.
 */
import type { Command, CommandResult, CoordStateMachine, Operation } from '@parley/coord';
import { CasHold } from './cas-hold.js';
import type { Pending } from './pending.js';

type SetOp = Extract<Operation, { type: 'set' }>;

/** What the fast path borrows from its member. */
export interface FastPathMember {
  /** The member's state machine (a snapshot restore replaces it: asked at each use). */
  sm(): CoordStateMachine;
  /** Throws `not_leader` unless this member leads. */
  requireLeader(): void;
  /** The member's clock, as a command's stamp. */
  stampMs(): number;
  /** Whether a proposal of `command`'s session and seq is pending on this leader. */
  proposedHere(command: Omit<Command, 'nowMs'>): boolean;
  /** Whether the member's pending reads are at their limit. */
  readsFull(): boolean;
  /** `answer` on the member's state once a linearizable read point is confirmed and applied. */
  atReadPoint<T>(answer: () => T): Pending<T>;
  /** Proposes `command` and resolves with its result once applied. */
  propose(command: Omit<Command, 'nowMs'>): Pending<CommandResult>;
  /** A CAS answered as failed with no log entry. */
  onFailedFast?(command: Omit<Command, 'nowMs'>, result: CommandResult, how: 'read-point' | 'superseded'): void;
}

export class CasFastPath {
  /** Conditional writes answered as failed with no log entry. */
  fastFailed = 0;
  /** Of those, held CASes whose version a write ahead of them superseded, answered with no read point. */
  supersededFailed = 0;
  /** CASes waiting for a write of their key to apply. */
  readonly hold = new CasHold();

  constructor(
    private readonly m: FastPathMember,
    private readonly enabled: boolean,
  ) {}

  /** A command on its way to the log: held, failed fast or proposed. */
  submit(command: Omit<Command, 'nowMs'>, retry: boolean): Pending<CommandResult> {
    if (this.enabled && this.hold.wants(command, retry)) {
      const op = command.op as SetOp;
      const wasCurrent = this.m.sm().storedVersion(op.namespace, op.key) === op.ifVersion;
      return this.hold.hold(command, () => this.released(command, retry, wasCurrent));
    }
    return this.sendOn(command, retry);
  }

  /**
   * A held CAS goes on once the writes of its key ahead of it applied. When
   * its version was the key's stored version as it was held (minted at a
   * committed position) and is not the key's stored version now, it fails
   * at once, with no read point: that token is gone for good, at this
   * committed state and at every state after it, and the cluster's state
   * when this answer leaves is one of those. Else it goes as any CAS does.
   */
  private released(command: Omit<Command, 'nowMs'>, retry: boolean, wasCurrent: boolean): Pending<CommandResult> {
    this.m.requireLeader();
    const op = command.op as SetOp;
    if (
      wasCurrent &&
      !this.m.proposedHere(command) &&
      this.m.sm().storedVersion(op.namespace, op.key) !== op.ifVersion
    ) {
      const doomed = this.m.sm().doomed(command, { nowMs: this.m.stampMs(), retry });
      if (doomed !== undefined) {
        this.fastFailed++;
        this.supersededFailed++;
        this.m.onFailedFast?.(command, doomed, 'superseded');
        return { promise: Promise.resolve(doomed), cancel() {} };
      }
    }
    return this.sendOn(command, retry);
  }

  /** A command past the hold: failed at a read point when sure to fail, else proposed. */
  private sendOn(command: Omit<Command, 'nowMs'>, retry: boolean): Pending<CommandResult> {
    this.m.requireLeader();
    if (this.failsFast(command, retry)) return this.failFast(command, retry);
    return this.m.propose(command);
  }

  /**
   * Whether `command` may take the read point: a first attempt of a
   * conditional write this leader's state says is sure to fail (coord's
   * `doomed`: the session table does not know it), with no proposal of it
   * pending here and room for one more read. Only a filter: the answer is
   * judged again at the read point.
   */
  private failsFast(command: Omit<Command, 'nowMs'>, retry: boolean): boolean {
    if (!this.enabled || this.m.proposedHere(command) || this.m.readsFull()) return false;
    return this.m.sm().doomed(command, { nowMs: this.m.stampMs(), retry }) !== undefined;
  }

  /**
   * A CAS that is sure to fail, answered without a log entry: confirmed at a
   * read point exactly as a linearizable read is, then judged again on the
   * state applied through it. Still sure to fail there: that failure is the
   * answer (its `details.actual` the key's version at the read point). Else
   * it is proposed as any write.
   */
  private failFast(command: Omit<Command, 'nowMs'>, retry: boolean): Pending<CommandResult> {
    let settle!: { resolve(r: CommandResult): void; reject(err: unknown): void };
    const promise = new Promise<CommandResult>((resolve, reject) => {
      settle = { resolve, reject };
    });
    let cancelled = false;
    let stage: Pending<unknown> = this.m.atReadPoint(() =>
      this.m.sm().doomed(command, { nowMs: this.m.stampMs(), retry }),
    );
    (stage.promise as Promise<CommandResult | undefined>).then((doomed) => {
      if (cancelled) return;
      if (doomed !== undefined) {
        this.fastFailed++;
        this.m.onFailedFast?.(command, doomed, 'read-point');
        settle.resolve(doomed);
        return;
      }
      try {
        const proposal = this.m.propose(command);
        stage = proposal;
        proposal.promise.then(settle.resolve, settle.reject);
      } catch (err) {
        settle.reject(err);
      }
    }, settle.reject);
    return {
      promise,
      cancel: (err) => {
        cancelled = true;
        stage.cancel(err);
        settle.reject(err);
      },
    };
  }
}
