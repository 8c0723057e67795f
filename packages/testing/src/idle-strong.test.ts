/**
 * An idle strong group on simulated time: the leader proposes `expire` only
 * when something may be due or state-machine time would otherwise fall
 * behind, and a TTL longer than `maxTimeStepMs` (5 s) still ends on time
 * after a quiet stretch. The shipped node, unchanged, on the simulator.
 */
import { describe, expect, it } from 'vitest';
import { simulate } from './index.js';

/** The leader's `expire` cadence (`expireEveryMs`) plus a tick and the simulator's clock skew. */
const LATE_MS = 1_500;

describe('an idle strong group', () => {
  it('appends about one entry per 2.5 s with nothing to expire, not one per second', async () => {
    await simulate({ nodes: 3, voters: 3, seed: 21 }, async (cluster) => {
      await cluster.run('10s');
      const before = await cluster.nodes[0]?.cluster.status();
      await cluster.run('60s');
      const after = await cluster.nodes[0]?.cluster.status();
      const appended = (after?.commitIndex ?? 0) - (before?.commitIndex ?? 0);
      // maxTimeStepMs / 2 = 2.5 s between `expire` proposals: 24 in a minute. The old cadence was 60.
      expect(appended).toBeGreaterThanOrEqual(20);
      expect(appended).toBeLessThanOrEqual(28);
    });
  });

  it('a TTL longer than maxTimeStepMs written into an idle group expires on time', async () => {
    await simulate({ nodes: 3, voters: 3, seed: 22 }, async (cluster) => {
      await cluster.run('10s');
      const ns = cluster.nodes[1]?.strong('idle');
      let written = -1;
      void ns?.set('k', 1, { ttl: 20 }).then(() => {
        written = cluster.now();
      });
      await cluster.runUntil(() => written >= 0, '5s');
      expect(written).toBeGreaterThanOrEqual(0);
      // Nothing else happens in the group while the TTL runs.
      await cluster.run('19s');
      const read = async () => {
        let value: unknown = 'pending';
        void ns?.get('k').then((e) => {
          value = e?.value;
        });
        await cluster.runUntil(() => value !== 'pending', '2s');
        return value;
      };
      expect(await read()).toBe(1);
      await cluster.run(`${20_000 - (cluster.now() - written) + LATE_MS}ms`);
      // A group whose state-machine time fell behind on the quiet stretch would still hold it
      // (each command moves that time at most 5 s): gone within LATE_MS of the deadline.
      expect(await read()).toBeUndefined();
      cluster.expectLinearizable();
    });
  });

  it('a lock that runs out on an idle leader goes to its waiter within the expire cadence', async () => {
    await simulate({ nodes: 3, voters: 3, seed: 23 }, async (cluster) => {
      await cluster.run('10s');
      const locks = cluster.nodes[0]?.locks('idle');
      const late: number[] = [];
      // Rounds at every phase of the leader's sleep between `expire` duties: each grant's
      // deadline must wake it, whenever in its sleep the grant came.
      for (let round = 0; round < 6; round++) {
        await cluster.run(`${round * 450}ms`);
        let heldAt = -1;
        let grantedAt = -1;
        void locks?.acquire(`l${round}`, { owner: 'a', ttl: 1 }).then(() => {
          heldAt = cluster.now();
        });
        await cluster.runUntil(() => heldAt >= 0, '5s');
        void locks?.acquire(`l${round}`, { owner: 'b', ttl: 5, wait: 10 }).then(() => {
          grantedAt = cluster.now();
        });
        await cluster.runUntil(() => grantedAt >= 0, '10s');
        expect(heldAt).toBeGreaterThanOrEqual(0);
        expect(grantedAt).toBeGreaterThanOrEqual(0);
        late.push(grantedAt - heldAt - 1_000);
      }
      // Never early beyond the clocks' skew; late by at most the duty's rate limit (`expireEveryMs`,
      // 1 s: one `expire` per second at most, as before the leader slept), a commit round and the skew.
      for (const ms of late) {
        expect(ms, `late by ${late.join(', ')} ms`).toBeGreaterThanOrEqual(-300);
        expect(ms, `late by ${late.join(', ')} ms`).toBeLessThan(1_400);
      }
    });
  });
});
