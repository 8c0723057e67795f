/**
 * A small driver for tests, benchmarks and simulator adapters: feeds
 * operations to a CoordStateMachine at increasing log indexes with a settable
 * leader clock, optionally through the binary codec.
 */
import { InvalidArgumentError } from '@parley/interface';
import { unwrap } from './client.js';
import { encodeCommand } from './codec.js';
import { CoordStateMachine, MAX_TIME_MS } from './state-machine.js';
import type { ApplyOutput, Command, CommandResult, CoordConfig, Operation, OpResult } from './types.js';

export interface SessionRef {
  clientId: string;
  seq: number;
}

export class CoordHarness {
  readonly sm: CoordStateMachine;
  index = 0;
  term = 1;
  nowMs: number;
  /** Every command applied, with its position, for replay. */
  readonly log: { command: Command; index: number; term: number }[] = [];

  constructor(
    config: CoordConfig = {},
    startMs = 1_700_000_000_000,
    readonly viaCodec = false,
  ) {
    // Tests move the leader clock in large steps on purpose: unless a test sets
    // maxTimeStepMs itself, the harness lets one command move time any distance.
    this.sm = new CoordStateMachine({
      ...config,
      limits: { maxTimeStepMs: MAX_TIME_MS, ...(config.limits ?? {}) },
    });
    this.nowMs = startMs;
  }

  advance(ms: number): void {
    this.nowMs += ms;
  }

  applyCommand(command: Command): ApplyOutput {
    const position = { index: ++this.index, term: this.term };
    this.log.push({ command, index: position.index, term: position.term });
    return this.viaCodec ? this.sm.applyBytes(encodeCommand(command), position) : this.sm.apply(command, position);
  }

  /** Applies `op` (with a session when given) and returns the full result. */
  run(op: Operation, session?: SessionRef, ackSeq?: number): CommandResult {
    const command: Command = { nowMs: this.nowMs, op };
    if (session) {
      command.clientId = session.clientId;
      command.seq = session.seq;
    }
    if (ackSeq !== undefined) command.ackSeq = ackSeq;
    return this.applyCommand(command).result;
  }

  /** Applies `op` and returns its value, throwing its typed error if it failed. */
  ok(op: Operation, session?: SessionRef): OpResult {
    return unwrap(this.run(op, session));
  }

  /** Applies `op` and returns its error code, throwing if it succeeded. */
  code(op: Operation, session?: SessionRef): string {
    const result = this.run(op, session);
    if (result.ok) throw new InvalidArgumentError(`${op.type} unexpectedly succeeded: ${JSON.stringify(result.value)}`);
    return result.error.code;
  }

  register(): string {
    const value = this.ok({ type: 'register_session' });
    if (value.type !== 'session') throw new InvalidArgumentError('register_session returned no session');
    return value.clientId;
  }
}
