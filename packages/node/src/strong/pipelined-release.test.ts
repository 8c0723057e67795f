import { isParleyError, type Transport } from '@parley/interface';
import type { MemoryTransport } from '@parley/net';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST, interceptRequests, MemoryGroup, type TestMember } from './testing.js';

const VOTERS = ['v1', 'v2', 'v3'];

let group: MemoryGroup | undefined;
afterEach(async () => {
  await group?.stopAll();
  group = undefined;
});

/**
 * Counts forwarded writes by operation type. With `hold` set, the first
 * `lock_release` is held back: until the next write sent behind it has been
 * answered (`'answer'`), or until `open()` is called (`'manual'`), so that
 * the write overtakes it at the leader.
 */
class Gate {
  readonly sent = new Map<string, number>();
  private held = false;

  constructor(private readonly hold: 'answer' | 'manual' | undefined) {}

  count(type: string): number {
    return this.sent.get(type) ?? 0;
  }

  wrap(t: MemoryTransport): Transport {
    return interceptRequests(t, (send, op) => {
      if (op) this.sent.set(op.type, (this.sent.get(op.type) ?? 0) + 1);
      if (!this.hold || this.held || op?.type !== 'lock_release') {
        const answer = send();
        if (this.hold === 'answer' && op) answer.finally(() => this.open()).catch(() => {});
        return answer;
      }
      this.held = true;
      return new Promise<void>((resolve) => {
        this.opener = resolve;
      }).then(send);
    });
  }

  /** Sends the held release. */
  open(): void {
    this.opener?.();
    this.opener = undefined;
  }

  private opener: (() => void) | undefined;
}

async function clientOf(gate: Gate): Promise<TestMember> {
  group = new MemoryGroup(VOTERS, FAST);
  for (const id of VOTERS) await group.start(id);
  await group.waitForLeader();
  return group.start('client', {}, (t) => gate.wrap(t));
}

describe('pipelined lock release', () => {
  it('cycles without awaiting a release: every grant newer than the last, every release applied', async () => {
    const client = await clientOf(new Gate(undefined));
    const locks = client.module.locks('p');
    const releases: Promise<boolean>[] = [];
    let last = 0;
    for (let i = 0; i < 100; i++) {
      const grant = await locks.acquire('job', { owner: 'w', ttl: 10 });
      expect(grant.fence).toBeGreaterThan(last);
      last = grant.fence;
      releases.push(locks.release('job', { owner: 'w', fence: grant.fence, pipelined: true }));
    }
    expect(await Promise.all(releases)).toEqual(releases.map(() => true));
    expect((await locks.inspect('job')).holder).toBeNull();
    expect(client.module.pipelinedReleases.size).toBe(0);
  });

  it('sends an acquire that overtook its own release again once the release has applied', async () => {
    const gate = new Gate('answer');
    const client = await clientOf(gate);
    const locks = client.module.locks('p');
    const first = await locks.acquire('job', { owner: 'w', ttl: 10 });
    const before = gate.count('lock_acquire');
    const released = locks.release('job', { owner: 'w', fence: first.fence, pipelined: true });
    const second = await locks.acquire('job', { owner: 'w', ttl: 10 });
    expect(await released).toBe(true);
    expect(second.fence).toBeGreaterThan(first.fence);
    // The first send was refused as lock_held by its own owner (nothing applied); the second granted it.
    expect(gate.count('lock_acquire') - before).toBe(2);
    expect(client.module.pipelinedReleases.overtaken).toBe(1);
    expect((await locks.inspect('job')).holder?.fence).toBe(second.fence);
  });

  it('queues an acquire with a wait behind its own grant: granted when the release applies, sent once', async () => {
    const gate = new Gate('manual');
    const client = await clientOf(gate);
    const locks = client.module.locks('p');
    const first = await locks.acquire('job', { owner: 'w', ttl: 10 });
    const before = gate.count('lock_acquire');
    const released = locks.release('job', { owner: 'w', fence: first.fence, pipelined: true });
    const second = locks.acquire('job', { owner: 'w', ttl: 10, wait: 5 });
    // Queued behind its own grant at the leader; only then is the release let through.
    while ((await locks.inspect('job')).waiters === 0) await new Promise((r) => setTimeout(r, 5));
    gate.open();
    expect(await released).toBe(true);
    expect((await second).fence).toBeGreaterThan(first.fence);
    expect(gate.count('lock_acquire') - before).toBe(1);
    expect(client.module.pipelinedReleases.overtaken).toBe(0);
  });

  it('never hands the old grant back: a waiter of another owner comes first', async () => {
    const client = await clientOf(new Gate(undefined));
    const locks = client.module.locks('p');
    const first = await locks.acquire('job', { owner: 'w', ttl: 10 });
    const other = locks.acquire('job', { owner: 'x', ttl: 10, wait: 5 });
    while ((await locks.inspect('job')).waiters === 0) await new Promise((r) => setTimeout(r, 5));
    const released = locks.release('job', { owner: 'w', fence: first.fence, pipelined: true });
    const again = await locks.acquire('job', { owner: 'w', ttl: 10 }).catch((err: unknown) => err);
    expect(await released).toBe(true);
    const granted = await other;
    expect(granted.owner).toBe('x');
    expect(isParleyError(again, 'lock_held') && again.details.owner).toBe('x');
  });
});
