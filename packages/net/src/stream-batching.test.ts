import { describe, expect, it } from 'vitest';
import type { RpcStream } from './rpc-stream.js';
import { FrameBatcher } from './stream-batching.js';

function recording(): { stream: RpcStream; sent: number[][] } {
  const sent: number[][] = [];
  const stream: RpcStream = {
    writable: true,
    bufferedBytes: 0,
    send: (data) => {
      sent.push([...data]);
    },
    abort() {},
    onData() {},
    onClose() {},
  };
  return { stream, sent };
}

/** A chain of `n` awaits, as a call's path through a few async layers. */
async function hops(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

describe('FrameBatcher', () => {
  it('sends the frames of one microtask burst as one write', async () => {
    const { stream, sent } = recording();
    const b = new FrameBatcher(stream, () => {});
    b.write(new Uint8Array([1]));
    b.write(new Uint8Array([2, 3]));
    await hops(1);
    expect(sent).toEqual([[1, 2, 3]]);
    // A frame written a few awaits later is its own write: the batch left a microtask after the first.
    b.write(new Uint8Array([4]));
    await hops(5);
    b.write(new Uint8Array([5]));
    await hops(1);
    expect(sent).toEqual([[1, 2, 3], [4], [5]]);
  });

  it('holds a lingering frame until the turn ends, so frames written awaits later join it', async () => {
    const { stream, sent } = recording();
    const b = new FrameBatcher(stream, () => {});
    b.write(new Uint8Array([1]), true);
    await hops(20);
    b.write(new Uint8Array([2]));
    await hops(1);
    expect(sent).toEqual([]);
    await nextTick();
    expect(sent).toEqual([[1, 2]]);
  });

  it("holds a batch already scheduled until the lingering frame's turn ends too", async () => {
    const { stream, sent } = recording();
    const b = new FrameBatcher(stream, () => {});
    b.write(new Uint8Array([1]));
    b.write(new Uint8Array([2]), true);
    await hops(3);
    expect(sent).toEqual([]);
    await nextTick();
    expect(sent).toEqual([[1, 2]]);
  });

  it('still flushes at once past 64 KiB', () => {
    const { stream, sent } = recording();
    const b = new FrameBatcher(stream, () => {});
    b.write(new Uint8Array([7]), true);
    b.write(new Uint8Array(64 * 1024));
    expect(sent.length).toBe(1);
    expect(sent[0]?.length).toBe(64 * 1024 + 1);
  });
});
