import { describe, expect, it } from 'vitest';
import { HostClock } from './clock.js';
import { EventQueue } from './queue.js';
import { Simulation } from './simulation.js';

describe('EventQueue', () => {
  it('orders by time, then by insertion, and skips cancelled events', () => {
    const q = new EventQueue();
    const seen: string[] = [];
    q.push(5, 'x', () => seen.push('b'));
    q.push(1, 'x', () => seen.push('a'));
    const c = q.push(5, 'x', () => seen.push('cancelled'));
    q.push(5, 'x', () => seen.push('c'));
    q.push(9, 'x', () => seen.push('d'));
    q.cancel(c);
    q.cancel(c);
    expect(q.size).toBe(4);
    for (let ev = q.pop(); ev; ev = q.pop()) ev.run();
    expect(seen).toEqual(['a', 'b', 'c', 'd']);
    expect(q.size).toBe(0);
  });
});

describe('HostClock', () => {
  it('applies offset, linear drift, a periodic wobble and jumps', () => {
    let t = 0;
    const c = new HostClock(() => t, 1_000_000, { offsetMs: 50, driftPpm: 1_000 });
    expect(c.nowMs()).toBe(1_000_050);
    t = 10_000;
    expect(c.skewMs()).toBe(60); // 50 + 10 ms of drift
    c.jump(-100);
    expect(c.skewMs()).toBe(-40);
    expect(c.toGlobalDelay(1_001)).toBe(1_000);
    const p = new HostClock(() => t, 0, { periodic: { amplitudeMs: 20, periodMs: 1_000 } });
    t = 0;
    expect(p.skewMs()).toBe(20);
    t = 500;
    expect(p.skewMs()).toBe(-20);
    t = 250;
    expect(p.skewMs()).toBe(0);
  });
});

describe('Simulation scheduler', () => {
  it('runs timers on virtual time, in (time, sequence) order, without wall-clock waits', async () => {
    const sim = new Simulation({ seed: 1 });
    const seen: Array<[string, number]> = [];
    sim.addHost('a', (ctx) => {
      ctx.scheduler.after(100, () => seen.push(['a100', sim.nowMs()]));
      ctx.scheduler.after(10, () => seen.push(['a10', sim.nowMs()]));
      const cancel = ctx.scheduler.after(50, () => seen.push(['never', sim.nowMs()]));
      cancel();
      ctx.scheduler.after(10, () => seen.push(['a10b', sim.nowMs()]));
    });
    await sim.runFor(99);
    expect(seen).toEqual([
      ['a10', 10],
      ['a10b', 10],
    ]);
    expect(sim.nowMs()).toBe(99);
    await sim.runFor(1);
    expect(seen.at(-1)).toEqual(['a100', 100]);
  });

  it('drains promise chains before the next event', async () => {
    const sim = new Simulation({ seed: 2 });
    const seen: string[] = [];
    sim.addHost('a', (ctx) => {
      ctx.scheduler.after(5, async () => {
        await null;
        await Promise.resolve();
        await new Promise<void>((r) => queueMicrotask(r));
        seen.push(`chain@${sim.nowMs()}`);
      });
      ctx.scheduler.after(6, () => seen.push(`next@${sim.nowMs()}`));
    });
    await sim.runFor(10);
    expect(seen).toEqual(['chain@5', 'next@6']);
  });

  it('runUntil stops when the predicate holds, or at the bound', async () => {
    const sim = new Simulation({ seed: 3 });
    let ticks = 0;
    sim.addHost('a', (ctx) => {
      const tick = () => {
        ticks++;
        ctx.scheduler.after(10, tick);
      };
      tick();
    });
    expect(await sim.runUntil(() => ticks >= 5, 1_000)).toBe(true);
    expect(sim.nowMs()).toBe(40);
    expect(await sim.runUntil(() => ticks >= 1_000, 100)).toBe(false);
    expect(sim.nowMs()).toBe(140);
  });

  it('pause defers timers until resume; crash drops them; restart boots a new generation', async () => {
    const sim = new Simulation({ seed: 4 });
    const fired: Array<[number, number]> = [];
    const host = sim.addHost('a', (ctx) => {
      ctx.scheduler.after(10, () => fired.push([ctx.generation, sim.nowMs()]));
      return ctx.generation;
    });
    await sim.runFor(5);
    host.pause();
    await sim.runFor(20);
    expect(fired).toEqual([]);
    host.resume();
    await sim.runFor(1);
    expect(fired).toEqual([[0, 25]]);
    host.restart();
    await sim.runFor(5);
    host.crash();
    await sim.runFor(20);
    expect(fired).toEqual([[0, 25]]);
    expect(host.state).toBe('down');
    host.restart();
    await sim.runFor(20);
    expect(host.app).toBe(2);
    expect(fired.at(-1)).toEqual([2, 61]);
  });

  it('classifies a thrown exception in host code as a crash failure naming the seed', async () => {
    const sim = new Simulation({ seed: 99 });
    sim.addHost('a', (ctx) => {
      ctx.scheduler.after(3, () => {
        throw new Error('assertion failed');
      });
    });
    await sim.runFor(100);
    expect(sim.failure?.kind).toBe('crash');
    expect(sim.failure?.message).toContain('PARLEY_SEED=99');
    expect(sim.nowMs()).toBe(3);
  });
});
