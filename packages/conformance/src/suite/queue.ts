/**
 * The fenced work queue (`strong(ns).queue(name)`, docs/queue.md): FIFO takes,
 * de-duplication by key, leases that run out and are taken over, completion
 * refused to a worker that lost its lease, retries, dead letters and bounds.
 */
import { describe, expect } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { JumpClock } from '../clock.js';
import { code, gate, passTime } from './support.js';

export function queueSuite(b: BackendUnderTest): void {
  const it = gate(b);
  describe('queue', () => {
    it('FIFO takes, each task to one worker, completion once', async () => {
      const q = (await b.node()).strong('work').queue('jobs');
      const ids = [];
      for (const n of [1, 2, 3]) ids.push((await q.enqueue({ n })).id);
      const a = await q.take({ holder: 'a', ttl: 30 });
      const c = await q.take({ holder: 'c', ttl: 30 });
      expect([a?.item, c?.item]).toEqual([{ n: 1 }, { n: 2 }]);
      expect(a?.attempt).toBe(1);
      expect(a?.fence).toBeGreaterThan(0);
      await a?.complete({ ok: 1 });
      await expect(a?.complete({ ok: 2 })).rejects.toSatisfy(code('lease_lost'));
      const d = await q.take({ holder: 'd', ttl: 30 });
      expect(d?.item).toEqual({ n: 3 });
      expect(await q.take({ holder: 'e', ttl: 30 })).toBeNull();
      expect(await q.get(ids[0] as string)).toMatchObject({ status: 'done', result: { ok: 1 }, attempts: 1 });
      expect(await q.stats()).toEqual({ ready: 0, taken: 2, done: 1, dead: 0 });
      expect((await q.list({ status: 'taken' })).items.map((t) => t.item)).toEqual([{ n: 2 }, { n: 3 }]);
    });

    it('enqueue with a key de-duplicates', async () => {
      const q = (await b.node()).strong('dedup').queue('jobs');
      const first = await q.enqueue({ job: 42 }, { key: 'job-42' });
      const again = await q.enqueue({ job: 42 }, { key: 'job-42' });
      expect(first.created).toBe(true);
      expect(again).toEqual({ id: first.id, created: false });
      expect((await q.stats()).ready).toBe(1);
    });

    it('an enqueue that claimed its key but wrote no task is completed by its retry', async () => {
      const ns = (await b.node()).strong('repair');
      // What an enqueue leaves when it fails between the claim and the task's write.
      await ns.claim('q/jobs/k/job-7', { id: '5' });
      const q = ns.queue('jobs');
      expect(await q.enqueue({ job: 7 }, { key: 'job-7' })).toEqual({ id: '5', created: false });
      expect(await q.get('5')).toMatchObject({ status: 'ready', item: { job: 7 }, key: 'job-7' });
      expect((await q.take({ holder: 'w', ttl: 30 }))?.id).toBe('5');
    });

    it('an expired lease goes back to the queue; the old holder is fenced out', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const q = node.strong('expiry').queue('jobs');
      await q.enqueue('x');
      const first = await q.take({ holder: 'w1', ttl: 5 });
      expect(await q.take({ holder: 'w2', ttl: 5 })).toBeNull();
      await passTime(node, clock, 6_000);
      const second = await q.take({ holder: 'w2', ttl: 5 });
      expect(second).toMatchObject({ id: first?.id, attempt: 2 });
      expect(second?.fence).toBeGreaterThan(first?.fence ?? 0);
      await expect(first?.heartbeat()).rejects.toSatisfy(code('lease_lost'));
      await expect(first?.complete('late')).rejects.toSatisfy(code('lease_lost'));
      // A rebuilt handle (HTTP, MCP) with the old fence is refused too.
      const stale = q.task(first?.id as string, { holder: 'w1', fence: first?.fence as number });
      await expect(stale.complete('late')).rejects.toSatisfy(code('lease_lost'));
      const current = q.task(second?.id as string, { holder: 'w2', fence: second?.fence as number });
      await current.heartbeat(10);
      await current.complete('on time');
      expect(await q.get(first?.id as string)).toMatchObject({
        status: 'done',
        result: 'on time',
        error: 'lease expired',
      });
    });

    it('fail: again at once, after retryAfter, and dead after maxAttempts', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const q = node.strong('retries').queue('jobs', { maxAttempts: 2 });
      const { id } = await q.enqueue('flaky');
      const t1 = await q.take({ holder: 'w', ttl: 30 });
      await t1?.fail('boom', { retryAfter: 5 });
      await expect(t1?.complete()).rejects.toSatisfy(code('lease_lost'));
      expect(await q.take({ holder: 'w', ttl: 30 })).toBeNull();
      await passTime(node, clock, 6_000);
      const t2 = await q.take({ holder: 'v', ttl: 30 });
      expect(t2).toMatchObject({ id, attempt: 2 });
      await t2?.fail('boom again');
      expect(await q.get(id)).toMatchObject({ status: 'dead', attempts: 2, error: 'boom again' });
      expect(await q.take({ holder: 'w', ttl: 30 })).toBeNull();
    });

    it('a task whose last attempt ran out is dead-lettered by the next take', async () => {
      const clock = new JumpClock();
      const node = await b.node({ clock });
      const q = node.strong('dead').queue('jobs', { maxAttempts: 1 });
      const { id } = await q.enqueue('hangs');
      await q.enqueue('next');
      const t = await q.take({ holder: 'w', ttl: 2 });
      await passTime(node, clock, 3_000);
      expect((await q.take({ holder: 'v', ttl: 30 }))?.item).toBe('next');
      expect(await q.get(id)).toMatchObject({ status: 'dead', error: 'lease expired' });
      await expect(t?.complete()).rejects.toSatisfy(code('lease_lost'));
    });

    it('bounds: queue length, item size, arguments', async () => {
      const q = (await b.node()).strong('bounds').queue('jobs', { maxLength: 2, maxItemBytes: 64 });
      await q.enqueue(1);
      await q.enqueue(2);
      await expect(q.enqueue(3)).rejects.toSatisfy(code('namespace_full'));
      await expect(q.enqueue('x'.repeat(100))).rejects.toSatisfy(code('value_too_large'));
      const t = await q.take({ holder: 'w', ttl: 30 });
      await t?.complete();
      await q.enqueue(3); // room again once the oldest is done
      await expect(q.take({ holder: '', ttl: 30 })).rejects.toSatisfy(code('invalid_argument'));
      await expect(q.take({ holder: 'w', ttl: 0 })).rejects.toSatisfy(code('invalid_argument'));
      expect(() => q.task('x1', { holder: 'w', fence: 1 })).toThrow(
        expect.objectContaining({ code: 'invalid_argument' }),
      );
      const node = await b.node();
      expect(() => node.strong('bounds').queue('a/b')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    });
  });
}
