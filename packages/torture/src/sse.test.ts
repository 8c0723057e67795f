import { describe, expect, it } from 'vitest';
import { SseReader } from './sse.js';
import { readWatchFrame } from './workloads/watch.js';

describe('watch streams as the harness reads them', () => {
  it('splits frames across chunks and skips comments', () => {
    const r = new SseReader();
    expect(r.push(': parley watch\n\nid: 7:0\nevent: put\nda')).toEqual([]);
    expect(r.pending).toBe(2);
    const frames = r.push('ta: {"key":"k","type":"put","revision":7}\n\n: ping\n\n');
    expect(frames).toEqual([{ event: 'put', id: '7:0', data: '{"key":"k","type":"put","revision":7}' }]);
    expect(readWatchFrame(frames[0]!)).toEqual({
      kind: 'change',
      event: { key: 'k', type: 'put', revision: 7 },
    });
  });

  it('an error frame ends the stream with its code and is no change', () => {
    // As a node whose stores failed ends its watches (server sse.ts `end`).
    const [frame] = new SseReader().push(
      'event: error\ndata: {"error":"storage_full","msg":"the disk is full: watch again"}\n\n',
    );
    expect(readWatchFrame(frame!)).toEqual({ kind: 'end', error: 'storage_full' });
  });
});
