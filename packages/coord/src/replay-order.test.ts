import { describe, expect, it } from 'vitest';
import { CoordStateMachine } from './state-machine.js';
import type { Command, Operation } from './types.js';

/**
 * A replica restored from a snapshot holds its lock slots in key order; one that
 * applied the log holds them in insertion order. Results (including the
 * deliveries an `expire` emits) must not depend on that.
 */
describe('replica determinism after restore', () => {
  it('expire emits lock grants in the same order on a restored replica', () => {
    const t0 = 1_767_225_600_000;
    const live = new CoordStateMachine();
    let index = 0;
    const run = (sm: CoordStateMachine, command: Command) => sm.apply(command, { index: ++index, term: 1 });
    const session = (n: number) => {
      const r = run(live, { nowMs: t0, op: { type: 'register_session' } }).result;
      if (!r.ok || r.value.type !== 'session') throw new Error(`register ${n}`);
      return r.value.clientId;
    };
    const [a, b, c, d] = [session(1), session(2), session(3), session(4)];
    const acquire = (key: string, owner: string, waitSeconds?: number): Operation => ({
      type: 'lock_acquire',
      namespace: 'ns',
      key,
      owner,
      ttlSeconds: 1,
      ...(waitSeconds === undefined ? {} : { waitSeconds }),
    });
    // Slots inserted as 'z', then 'a': insertion order differs from key order.
    run(live, { nowMs: t0, clientId: a, seq: 1, op: acquire('z', 'A') });
    run(live, { nowMs: t0, clientId: b, seq: 1, op: acquire('a', 'B') });
    run(live, { nowMs: t0, clientId: c, seq: 1, op: acquire('z', 'C', 5) });
    run(live, { nowMs: t0, clientId: d, seq: 1, op: acquire('a', 'D', 5) });

    const restored = new CoordStateMachine();
    restored.restore(live.snapshot());
    const expire: Command = { nowMs: t0 + 1_500, op: { type: 'expire' } };
    const pos = { index: ++index, term: 1 };
    const x = live.apply(expire, pos);
    const y = restored.apply(expire, pos);
    expect(x.deliveries.map((e) => e.clientId)).toHaveLength(2);
    expect(y).toEqual(x);
    expect(restored.snapshot()).toEqual(live.snapshot());
  });
});
