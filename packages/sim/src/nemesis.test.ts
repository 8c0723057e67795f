import { describe, expect, it } from 'vitest';
import { Nemesis } from './nemesis.js';
import { Simulation } from './simulation.js';

describe('Nemesis', () => {
  it('injects every enabled fault class from the seed and undoes what is active on stop', async () => {
    const sim = new Simulation({ seed: 3, captureTrace: true });
    const ids = ['a', 'b', 'c', 'd', 'e'];
    for (const id of ids) sim.addHost(id, (ctx) => ctx.transport.start());
    const nemesis = new Nemesis(sim, ids, {
      partitions: ['symmetric', 'one-way', 'isolate', 'majority', 'bridge'],
      crashes: true,
      pauses: true,
      clogs: true,
      clockJumps: true,
      maxDown: 2,
    }).start();
    let maxDown = 0;
    sim.invariant('nemesis/max-down', () => {
      maxDown = Math.max(maxDown, sim.hosts().filter((h) => h.state === 'down').length);
    });
    await sim.runFor(60_000);
    nemesis.stop();
    sim.calm();
    await sim.runFor(100);
    const s = nemesis.stats;
    for (const n of [s.partitions, s.crashes, s.pauses, s.clogs, s.clockJumps]) expect(n).toBeGreaterThan(0);
    expect(maxDown).toBeLessThanOrEqual(2);
    const trace = sim.traceLines().join('\n');
    for (const kind of [
      'net partition',
      'net one-way',
      'net bridge',
      'net hold',
      'crash gen=',
      'pause',
      'clock-jump',
    ]) {
      expect(trace).toContain(kind);
    }
    expect(sim.hosts().every((h) => h.state === 'up')).toBe(true);
    expect(sim.network.peersOf('a')).toEqual(['b', 'c', 'd', 'e']);
  });

  it('with pauseLeaders: false, pauses only hosts that do not believe they lead', async () => {
    const sim = new Simulation({ seed: 5 });
    const ids = ['a', 'b', 'c', 'd', 'e'];
    for (const id of ids) sim.addHost(id, (ctx) => ctx.transport.start());
    // Two hosts believe they lead (a deposed leader and its successor): neither may be paused.
    const leaders = new Set(['a', 'b']);
    const nemesis = new Nemesis(sim, ids, { pauses: true, pauseLeaders: false, leads: (h) => leaders.has(h) }).start();
    const paused = new Set<string>();
    sim.invariant('nemesis/pause-followers', () => {
      for (const h of sim.hosts()) if (h.state === 'paused') paused.add(h.id);
    });
    await sim.runFor(60_000);
    nemesis.stop();
    expect(nemesis.stats.pauses).toBeGreaterThan(5);
    expect([...paused].sort()).toEqual(['c', 'd', 'e']);
  });
});
