/** `mutex`: one mutex per key, acquire / release. */
import { type Model, UNKNOWN, unknownOp } from '../model.js';

/**
 * A mutex per key (one mutex when events carry no key), starting free:
 * `acquire` is legal only when free, `release` only when held. `fail`s are dropped.
 */
export const mutexModel: Model<boolean, 'acquire' | 'release', null> = {
  name: 'mutex',
  description: 'acquire/release, starts free; acquire needs free, release needs held',
  partitionByKey: true,
  init: () => false,
  prepare: (op) => {
    if (op.status === 'fail') return null;
    if (op.f !== 'acquire' && op.f !== 'release') throw unknownOp('mutex', op);
    return { input: op.f, output: op.status === 'ok' ? null : UNKNOWN };
  },
  step: (locked, input) => (input === 'acquire' ? (locked ? undefined : true) : locked ? false : undefined),
};
