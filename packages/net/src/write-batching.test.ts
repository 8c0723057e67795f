import type { MessageStream } from '@libp2p/interface';
import { describe, expect, it } from 'vitest';
import { batchWrites } from './write-batching.js';

/** A recording stand-in for a libp2p connection: only what batchWrites touches. */
class RecordingStream {
  status: 'open' | 'closing' | 'closed' | 'aborted' = 'open';
  writableNeedsDrain = false;
  readonly sent: number[][] = [];
  readonly log = Object.assign(() => {}, { trace: () => 'traced' });
  #closedBy = '';

  send(data: Uint8Array): boolean {
    if (this.status !== 'open') throw new Error(`stream is ${this.status}`);
    this.sent.push([...data]);
    return true;
  }

  async close(): Promise<void> {
    this.#closedBy = 'close';
    this.status = 'closed';
  }

  abort(): void {
    this.status = 'aborted';
  }

  closedBy(): string {
    return this.#closedBy;
  }
}

const nextIteration = () => new Promise((resolve) => setImmediate(resolve));

function wrap(): { raw: RecordingStream; batched: RecordingStream } {
  const raw = new RecordingStream();
  const batched = batchWrites(raw as unknown as MessageStream) as unknown as RecordingStream;
  return { raw, batched };
}

describe('batchWrites', () => {
  it('sends the writes of one event-loop iteration as one write, in order', async () => {
    const { raw, batched } = wrap();
    batched.send(new Uint8Array([1]));
    await Promise.resolve();
    batched.send(new Uint8Array([2, 3]));
    expect(raw.sent).toEqual([]);
    await nextIteration();
    expect(raw.sent).toEqual([[1, 2, 3]]);
    batched.send(new Uint8Array([4]));
    await nextIteration();
    expect(raw.sent).toEqual([[1, 2, 3], [4]]);
  });

  it('flushes at once past 64 KiB, and before closing', async () => {
    const { raw, batched } = wrap();
    batched.send(new Uint8Array(64 * 1024));
    expect(raw.sent.length).toBe(1);
    batched.send(new Uint8Array([9]));
    await batched.close();
    expect(raw.sent.at(-1)).toEqual([9]);
    expect(raw.closedBy()).toBe('close'); // ran on the real object: private fields work
  });

  it('drops queued bytes once the stream is aborted, and throws on send after close', async () => {
    const { raw, batched } = wrap();
    batched.send(new Uint8Array([1]));
    batched.abort();
    await nextIteration();
    expect(raw.sent).toEqual([]);
    expect(() => batched.send(new Uint8Array([2]))).toThrow(/aborted/);
  });

  it('passes own function-valued properties through untouched', () => {
    const { raw, batched } = wrap();
    expect(batched.log).toBe(raw.log);
    expect(batched.log.trace()).toBe('traced');
    batched.writableNeedsDrain = true;
    expect(raw.writableNeedsDrain).toBe(true);
    expect(batched.send(new Uint8Array([1]))).toBe(false);
  });
});
