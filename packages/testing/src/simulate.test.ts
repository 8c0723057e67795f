import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimulationExpectationError, simulate, toMs } from './index.js';

describe('simulate', () => {
  it('runs user timers, Date and performance.now on simulated time, and records strong calls', async () => {
    const realSetTimeout = globalThis.setTimeout;
    const realDate = Date;
    const result = await simulate({ nodes: 5, voters: 3, seed: 7 }, async (cluster) => {
      const t0 = Date.now();
      const p0 = performance.now();
      const fired: number[] = [];
      setTimeout(() => fired.push(Date.now() - t0), 1_500);
      const id = setInterval(() => fired.push(Date.now() - t0), 1_000);
      await cluster.run('3500ms');
      clearInterval(id);
      expect(fired).toEqual([1_000, 1_500, 2_000, 3_000]);
      expect(Math.round(performance.now() - p0)).toBe(3_500);
      const ns = cluster.nodes[3]?.strong('jobs');
      let done = false;
      void (async () => {
        await ns?.set('a', 1);
        const e = await ns?.get('a');
        expect(e?.value).toBe(1);
        done = true;
      })();
      await cluster.runUntil(() => done, '10s');
      expect(done).toBe(true);
      cluster.expectLinearizable();
      cluster.expectFencing();
    });
    expect(globalThis.setTimeout).toBe(realSetTimeout);
    expect(Date).toBe(realDate);
    expect(result.history).toContain(`strong('jobs').set`);
  });

  it('passes read options through; bounded and serializable reads are checked apart from linearizability', async () => {
    await simulate({ nodes: 3, voters: 3, seed: 11 }, async (cluster) => {
      let done = false;
      void (async () => {
        for (let i = 0; i < 10; i++) {
          await cluster.nodes[0]?.strong('jobs').set('a', i);
          expect((await cluster.nodes[1]?.strong('jobs').get('a', { maxStalenessMs: 0 }))?.value).toBe(i);
          await cluster.nodes[2]?.strong('jobs').get('a', { consistency: 'serializable' });
          await cluster.nodes[2]?.strong('jobs').get('a', { maxStalenessMs: 200 });
        }
        done = true;
      })();
      await cluster.runUntil(() => done, '30s');
      expect(done).toBe(true);
      cluster.expectLinearizable();
      expect(cluster.expectBoundedStaleness().reads).toBe(20);
    });
  });

  it('restores the real timers when the test throws, and drops the user timers', async () => {
    const realSetTimeout = globalThis.setTimeout;
    let late = false;
    await expect(
      simulate({ nodes: 1, seed: 3 }, async () => {
        setTimeout(() => {
          late = true;
        }, 1);
        throw new Error('boom');
      }),
    ).rejects.toThrow(/boom\nPARLEY_SEED=3\nreplay: PARLEY_SEED=3 npx vitest run/);
    expect(globalThis.setTimeout).toBe(realSetTimeout);
    // The variables a test reads to pick its run go into the replay line, quoted for a shell.
    process.env.PARLEY_TEST_PICK = "it's b";
    try {
      await expect(
        simulate({ nodes: 1, seed: 4, replayEnv: ['PARLEY_TEST_PICK', 'PARLEY_TEST_UNSET'] }, () => {
          throw new Error('picked');
        }),
      ).rejects.toThrow(/replay: PARLEY_SEED=4 PARLEY_TEST_PICK='it'\\''s b' npx vitest run/);
    } finally {
      delete process.env.PARLEY_TEST_PICK;
    }
    expect(Date.now()).toBeGreaterThan(Date.UTC(2026, 0, 1) + 86_400_000 * 300);
    await new Promise((r) => realSetTimeout(r, 20));
    expect(late).toBe(false);
  });
});

describe('simulate: faults, verdicts and guards', () => {
  it('runs a simulated minute of an idle 5-node cluster (its speed is measured by testing/bench.ts)', async () => {
    const r = await simulate({ nodes: 5, voters: 3, seed: 11 }, async (cluster) => {
      await cluster.run('60s');
    });
    expect(r.simulatedMs).toBeGreaterThanOrEqual(60_000);
    expect(r.steps).toBeGreaterThan(1_000);
  });

  it('expectConverged names the key, the nodes and the writes when a partition is never healed; a timeline is written', async () => {
    const out = mkdtempSync(join(tmpdir(), 'parley-sim-testing-'));
    process.env.PARLEY_SIM_OUT = out;
    try {
      const err = await simulate({ nodes: 3, seed: 5 }, async (cluster) => {
        cluster.partition([0], [1, 2]);
        void cluster.nodes[0]?.eventual('board').set('task', 'left');
        void cluster.nodes[1]?.eventual('board').set('task', 'right');
        void cluster.nodes[2]?.eventual('board').get('task');
        await cluster.run('5s');
        cluster.expectConverged('board');
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SimulationExpectationError);
      const e = err as SimulationExpectationError;
      expect(e.message).toMatch(/not converged: in eventual\('board'\), key "task" is "(left|right)"/);
      expect(e.message).toMatch(/n0 eventual\('board'\)\.set\("task", \{"options":null,"value":"left"\}\) → /);
      expect(e.message).toContain('PARLEY_SEED=5');
      expect(e.timeline).toBeDefined();
      expect(readFileSync(e.timeline as string, 'utf8')).toMatch(/^<svg[\s\S]*stroke="red"[\s\S]*<\/svg>\n$/);
    } finally {
      delete process.env.PARLEY_SIM_OUT;
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('crash loses the node and its handle; restart boots it from its disk; strong writes stay linearizable', async () => {
    await simulate({ nodes: 3, voters: 3, seed: 9 }, async (cluster) => {
      const old = cluster.nodes[2];
      let done = false;
      void (async () => {
        await cluster.nodes[0]?.strong('s').set('a', 1);
        done = true;
      })();
      await cluster.runUntil(() => done, '10s');
      cluster.crash(2);
      expect(cluster.state(2)).toBe('down');
      await expect(old?.strong('s').get('a')).rejects.toMatchObject({ code: 'unavailable' });
      cluster.restart(2);
      await cluster.run('2s');
      let got: unknown;
      void cluster.nodes[2]
        ?.strong('s')
        .get('a')
        .then((e) => {
          got = e?.value;
        });
      await cluster.runUntil(() => got !== undefined, '10s');
      expect(got).toBe(1);
      cluster.skew(1, '+400ms');
      cluster.jump(1, '-50ms');
      cluster.pause(1);
      await cluster.run('1s');
      cluster.resume(1);
      cluster.hold(0, 1);
      cluster.release(0, 1);
      cluster.isolate(0);
      cluster.bridge(0, 1, 2);
      cluster.partitionOneWay([0], [1]);
      cluster.duplicate(0.1);
      cluster.delay('30ms', { reorder: true });
      await cluster.run('2s');
      cluster.calm();
      await cluster.run('3s');
      cluster.expectLinearizable();
      cluster.expectFencing();
    });
  });

  it('refuses bad options and bad durations with invalid_argument, and nested simulations', async () => {
    await expect(simulate({ nodes: 0 }, () => {})).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(simulate({ nodes: 3, voters: 4 }, () => {})).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(
      simulate({ nodes: 1, seed: 1 }, async (cluster) => {
        await cluster.run('soon');
      }),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(
      simulate({ nodes: 1, seed: 1 }, async (cluster) => {
        cluster.loss(2);
      }),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(
      simulate({ nodes: 1, seed: 1 }, async (cluster) => {
        cluster.crash(7);
      }),
    ).rejects.toMatchObject({ code: 'invalid_argument' });
    await expect(
      simulate({ nodes: 1, seed: 1 }, async () => {
        await simulate({ nodes: 1 }, () => {});
      }),
    ).rejects.toThrow(/already running/);
    expect(toMs('+400ms', true)).toBe(400);
    expect(toMs('1.5s')).toBe(1_500);
    expect(toMs('2m')).toBe(120_000);
    expect(() => toMs('-1s')).toThrow(/out of range/);
  });

  it('a node call awaited outside cluster.run completes in simulated time; a promise that never settles hits awaitLimit', async () => {
    await simulate({ nodes: 3, seed: 12 }, async (cluster) => {
      const t0 = cluster.now();
      await cluster.nodes[1]?.strong('s').set('a', 'x');
      const e = await cluster.nodes[2]?.strong('s').get('a');
      expect(e?.value).toBe('x');
      expect(cluster.now()).toBeGreaterThan(t0);
    });
    await expect(
      simulate({ nodes: 1, seed: 12, awaitLimit: '2s' }, async () => {
        await new Promise(() => {});
      }),
    ).rejects.toThrow(/awaited for 2000 simulated ms outside cluster.run/);
  });

  it('onBoot starts the agent of every life of a node, restarts included', async () => {
    const boots: number[] = [];
    await simulate({ nodes: 3, seed: 13, onBoot: (_node, i) => boots.push(i) }, async (cluster) => {
      cluster.crash(1);
      cluster.restart(1);
      await cluster.run('2s');
      expect(cluster.state(1)).toBe('up');
    });
    expect([...boots].sort()).toEqual([0, 1, 1, 2]);
  });

  it('a user timer that throws fails the run with its seed', async () => {
    await expect(
      simulate({ nodes: 1, seed: 4 }, async (cluster) => {
        setTimeout(() => {
          throw new Error('agent bug');
        }, 100);
        await cluster.run('1s');
      }),
    ).rejects.toThrow(/agent bug[\s\S]*PARLEY_SEED=4/);
  });
});
