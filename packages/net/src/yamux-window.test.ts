import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream';
import { describe, expect, it } from 'vitest';
import { halfWindowUpdates } from './yamux-window.js';

/** yamux frame types (the package does not export them): data 0, window update 1. */
const DATA = 0;
const WINDOW_UPDATE = 1;
const WINDOW = 256 * 1024;

interface SentFrame {
  type: number;
  length: number;
}

const log = Object.assign(() => {}, {
  trace: () => {},
  error: () => {},
  enabled: false,
  newScope: () => log,
});

/** A real yamux stream, established, whose frames are recorded instead of sent. */
function stream(): { s: YamuxStream; sent: SentFrame[] } {
  const sent: SentFrame[] = [];
  const s = new YamuxStream({
    id: '1',
    streamId: 1,
    state: StreamState.Established,
    direction: 'inbound',
    log: log as never,
    getRTT: () => -1,
    sendFrame: (header) => {
      sent.push({ type: header.type, length: header.length });
      return true;
    },
  });
  return { s, sent };
}

function receive(s: YamuxStream, bytes: number): void {
  s.handleData({
    header: { type: DATA, flag: 0, streamID: 1, length: bytes, version: 0 },
    data: new Uint8Array(bytes),
  } as never);
}

const updates = (sent: SentFrame[]) => sent.filter((f) => f.type === WINDOW_UPDATE);

describe('halfWindowUpdates', () => {
  it('the pinned yamux answers every data frame with a window update', () => {
    const { s, sent } = stream();
    for (let i = 0; i < 10; i++) receive(s, 300);
    expect(updates(sent)).toHaveLength(10);
  });

  it('sends one update per half window consumed, granting what was consumed', () => {
    const { s, sent } = stream();
    expect(halfWindowUpdates(s)).toBe(true);
    const frame = 1000;
    const perHalf = Math.ceil(WINDOW / 2 / frame);
    for (let i = 0; i < 3 * perHalf; i++) receive(s, frame);
    const u = updates(sent);
    expect(u).toHaveLength(3);
    for (const update of u) expect(update.length).toBe(perHalf * frame);
  });

  it('the sender never runs out of window: a full window in one frame is granted back at once', () => {
    const { s, sent } = stream();
    halfWindowUpdates(s);
    receive(s, WINDOW);
    expect(updates(sent)).toEqual([{ type: WINDOW_UPDATE, length: WINDOW }]);
  });

  it('leaves a stream it does not recognise alone', () => {
    const other = { sendWindowUpdate: () => {} };
    expect(halfWindowUpdates(other)).toBe(false);
    expect(halfWindowUpdates(null)).toBe(false);
  });
});
