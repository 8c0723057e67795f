import { HistoryRecorder, toKnossosEdn } from '@parley/check';
import { Simulation } from '@parley/sim';
import { describe, expect, it } from 'vitest';
import { CRDT_SCENARIOS } from './families/crdt/family.js';
import { runScenario } from './registry.js';

/** A small world with every fault on: its history and trace as one string. */
async function chaoticRun(seed: number): Promise<{ history: string; trace: string; fingerprint: string }> {
  const sim = new Simulation({
    seed,
    captureTrace: true,
    network: { lossRate: 0.2, duplicateRate: 0.2, reorder: true, latency: { minMs: 1, meanMs: 10, maxMs: 100 } },
  });
  const rec = new HistoryRecorder({ nowMs: () => sim.nowMs() });
  const ids = ['a', 'b', 'c'];
  for (const id of ids) {
    sim.addHost(
      id,
      async (ctx) => {
        const kv = ctx.kv();
        let count = Number(new TextDecoder().decode((await kv.load(['n'])) ?? new TextEncoder().encode('0')));
        ctx.transport.handle('inc', async () => {
          count++;
          await kv.save(['n'], new TextEncoder().encode(String(count)));
          return new Uint8Array([count & 0xff]);
        });
        await ctx.transport.start();
        const tick = () => {
          ctx.scheduler.after(5 + ctx.random.int(30), () => {
            const peers = ctx.transport.peers();
            if (peers.length > 0 && !rec.isOpen(id)) {
              const peer = peers[ctx.random.int(peers.length)]!;
              rec.invoke(id, 'inc', peer);
              ctx.transport.request(peer, 'inc', new Uint8Array(0), { timeoutMs: 100 }).then(
                (r) => rec.ok(id, r[0]!),
                (err: { code: string }) => rec.info(id, null, { error: err.code }),
              );
            }
            tick();
          });
        };
        tick();
      },
      { clock: { driftPpm: 100 * ids.indexOf(id) }, disk: { tornWriteRate: 0.5, readErrorRate: 0 } },
    );
  }
  for (let t = 0; t < 20; t++) {
    await sim.runFor(100);
    const victim = ids[sim.random.int(3)]!;
    const roll = sim.random.int(5);
    if (roll === 0) sim.host(victim).restart();
    else if (roll === 1) sim.network.isolate(victim);
    else if (roll === 2) sim.host(victim).pause();
    else sim.calm();
  }
  sim.calm();
  await sim.runFor(500);
  for (const id of ids) if (rec.isOpen(id)) rec.info(id, null, { error: 'end' });
  return { history: toKnossosEdn(rec.events()), trace: sim.traceLines().join('\n'), fingerprint: sim.fingerprint() };
}

describe('determinism', () => {
  it('runs the same seed twice to byte-identical histories and traces', async () => {
    const first = await chaoticRun(1234);
    const second = await chaoticRun(1234);
    expect(first.history.length).toBeGreaterThan(1_000);
    expect(second.history).toBe(first.history);
    expect(second.trace).toBe(first.trace);
    expect(second.fingerprint).toBe(first.fingerprint);
    const other = await chaoticRun(1235);
    expect(other.history).not.toBe(first.history);
  });

  it('replays a crdt scenario seed exactly (same fingerprint, trace and metrics)', async () => {
    const scenario = CRDT_SCENARIOS.find((s) => s.name === 'crdt-chaos')!;
    const a = await runScenario(scenario, 77, { captureTrace: true });
    const b = await runScenario(scenario, 77, { captureTrace: true });
    expect(a.failure).toBeUndefined();
    expect(b.fingerprint).toBe(a.fingerprint);
    expect(b.trace).toEqual(a.trace);
    expect(b.metrics).toEqual(a.metrics);
    expect(b.steps).toBe(a.steps);
    const c = await runScenario(scenario, 78);
    expect(c.fingerprint).not.toBe(a.fingerprint);
  });
});
