/**
 * The Transport compliance suite. Every implementation (libp2p over TCP, the
 * in-memory network, the simulator's transport) runs these same tests:
 *
 * ```ts
 * import { transportCompliance } from '@parley/net/testing';
 * transportCompliance('memory', { create: async (n, limits) => ... });
 * ```
 *
 * The module imports vitest, so it is for test files only.
 */
import { isParleyError, ParleyError, type PeerId, type Transport, type TransportLimits } from '@parley/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

export interface ComplianceCluster {
  /** Started transports, each able to reach every other. */
  transports: Transport[];
  /**
   * Resolves once `condition()` holds; rejects after `maxMs`. Implementations
   * on virtual time advance it while waiting. Default: polls on real time.
   */
  waitFor?(condition: () => boolean, maxMs: number): Promise<void>;
  /**
   * Awaits `promise`; implementations on virtual time advance it until the
   * promise settles. Default: plain await.
   */
  settle?<T>(promise: Promise<T>): Promise<T>;
  /** Stops every transport and releases the cluster. */
  close(): Promise<void>;
}

export interface ComplianceTarget {
  /**
   * Creates `count` started transports that can all reach each other, with
   * these limits. `beforeStart`, when given, sees each transport before it starts.
   */
  create(
    count: number,
    limits: Partial<TransportLimits>,
    beforeStart?: (transport: Transport) => void,
  ): Promise<ComplianceCluster>;
}

/** The limits the suite runs under; `create` must apply them. */
export const COMPLIANCE_LIMITS: TransportLimits = {
  maxMessageBytes: 256 * 1024,
  maxInFlightPerPeer: 8,
  defaultTimeoutMs: 3_000,
};

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytes = (text: string) => encoder.encode(text);
const text = (data: Uint8Array) => decoder.decode(data);

async function realWaitFor(condition: () => boolean, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${maxMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

class Harness {
  constructor(private readonly cluster: ComplianceCluster) {}

  get t(): Transport[] {
    return this.cluster.transports;
  }

  at(i: number): Transport {
    const transport = this.cluster.transports[i];
    if (!transport) throw new Error(`no transport #${i}`);
    return transport;
  }

  waitFor(condition: () => boolean, maxMs = 10_000): Promise<void> {
    return this.cluster.waitFor ? this.cluster.waitFor(condition, maxMs) : realWaitFor(condition, maxMs);
  }

  settle<T>(promise: Promise<T>): Promise<T> {
    return this.cluster.settle ? this.cluster.settle(promise) : promise;
  }

  /** The error `promise` rejects with (fails the test if it resolves). */
  async rejection(promise: Promise<unknown>): Promise<ParleyError> {
    const outcome = await this.settle(
      promise.then(
        (value) => ({ ok: true as const, value }),
        (err: unknown) => ({ ok: false as const, err }),
      ),
    );
    if (outcome.ok) throw new Error('expected a rejection, got a value');
    expect(outcome.err).toBeInstanceOf(ParleyError);
    return outcome.err as ParleyError;
  }

  /**
   * Publishes from `from` (a fresh payload each time) until `received()`
   * holds: gossip subscriptions take a moment to propagate.
   */
  async publishUntil(from: Transport, topic: string, payload: (i: number) => Uint8Array, received: () => boolean) {
    let i = 0;
    await this.waitFor(() => {
      if (received()) return true;
      if (i % 10 === 0) void from.publish(topic, payload(i));
      i++;
      return false;
    }, 15_000);
  }
}

/** Registers the compliance tests for one Transport implementation. */
export function transportCompliance(name: string, target: ComplianceTarget): void {
  describe(`Transport compliance: ${name}`, () => {
    let cluster: ComplianceCluster;
    let h: Harness;

    beforeAll(async () => {
      cluster = await target.create(3, COMPLIANCE_LIMITS);
      h = new Harness(cluster);
      const ids = h.t.map((t) => t.peerId);
      await h.waitFor(() => h.t.every((t) => ids.every((id) => id === t.peerId || t.peers().includes(id))));
    });

    afterAll(async () => {
      await cluster?.close();
    });

    it('gives every transport a distinct, non-empty peer id and lists connected peers', () => {
      const ids = h.t.map((t) => t.peerId);
      expect(new Set(ids).size).toBe(3);
      for (const id of ids) expect(id.length).toBeGreaterThan(0);
      expect(new Set(h.at(0).peers())).toEqual(new Set([ids[1], ids[2]]));
      expect(h.at(0).peers()).not.toContain(ids[0]);
    });

    it('answers a request with the handler’s bytes and tells the handler who asked', async () => {
      const seen: PeerId[] = [];
      h.at(1).handle('echo', (from, request) => {
        seen.push(from);
        return new Uint8Array([...request, 0xff]);
      });
      const response = await h.settle(h.at(0).request(h.at(1).peerId, 'echo', new Uint8Array([1, 2, 3])));
      expect([...response]).toEqual([1, 2, 3, 0xff]);
      expect(seen).toEqual([h.at(0).peerId]);
      const empty = await h.settle(h.at(2).request(h.at(1).peerId, 'echo', new Uint8Array(0)));
      expect([...empty]).toEqual([0xff]);
    });

    it('supports async handlers and matches out-of-order responses to their requests', async () => {
      const n = COMPLIANCE_LIMITS.maxInFlightPerPeer;
      const held: Array<() => void> = [];
      h.at(1).handle('reorder', async (_from, request) => {
        await new Promise<void>((resolve) => held.push(resolve));
        return request;
      });
      const sends = Array.from({ length: n }, (_, i) =>
        h.at(0).request(h.at(1).peerId, 'reorder', bytes(`payload-${i}`)),
      );
      await h.waitFor(() => held.length === n);
      // Answer in reverse order of arrival.
      for (const release of held.slice().reverse()) release();
      const responses = await h.settle(Promise.all(sends));
      responses.forEach((response, i) => {
        expect(text(response)).toBe(`payload-${i}`);
      });
    });

    it('keeps distinct protocols apart', async () => {
      h.at(2).handle('proto-a', () => bytes('a'));
      h.at(2).handle('proto-b', () => bytes('b'));
      const [a, b] = await h.settle(
        Promise.all([
          h.at(0).request(h.at(2).peerId, 'proto-a', bytes('')),
          h.at(0).request(h.at(2).peerId, 'proto-b', bytes('')),
        ]),
      );
      expect(text(a)).toBe('a');
      expect(text(b)).toBe('b');
    });

    it('carries payloads up to maxMessageBytes intact, both ways', async () => {
      h.at(1).handle('big', (_from, request) => request.slice().reverse());
      const payload = new Uint8Array(COMPLIANCE_LIMITS.maxMessageBytes);
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + 7) & 0xff;
      const response = await h.settle(h.at(0).request(h.at(1).peerId, 'big', payload));
      expect(response.length).toBe(payload.length);
      expect(response[0]).toBe(payload[payload.length - 1]);
      expect(response[payload.length - 1]).toBe(payload[0]);
      expect(Buffer.from(response).equals(Buffer.from(payload.slice().reverse()))).toBe(true);
    });

    it('rejects an oversized request with value_too_large before sending it', async () => {
      let calls = 0;
      h.at(1).handle('count', () => {
        calls++;
        return bytes('');
      });
      const err = await h.rejection(
        h.at(0).request(h.at(1).peerId, 'count', new Uint8Array(COMPLIANCE_LIMITS.maxMessageBytes + 1)),
      );
      expect(err.code).toBe('value_too_large');
      expect(calls).toBe(0);
    });

    it('turns an oversized response into value_too_large for the caller', async () => {
      h.at(1).handle('too-big', () => new Uint8Array(COMPLIANCE_LIMITS.maxMessageBytes + 1));
      const err = await h.rejection(h.at(0).request(h.at(1).peerId, 'too-big', bytes('')));
      expect(err.code).toBe('value_too_large');
    });

    it('hands a handler’s ParleyError to the caller with the same code, message and details', async () => {
      h.at(1).handle('fails', (_from, request) => {
        const mode = text(request);
        if (mode === 'sync') throw new ParleyError('version_mismatch', 'expected v1, found v2', { key: 'k' });
        return Promise.reject(new ParleyError('not_leader', 'not the leader; try n3', { leaderHint: 'n3' }));
      });
      const sync = await h.rejection(h.at(0).request(h.at(1).peerId, 'fails', bytes('sync')));
      expect(sync.code).toBe('version_mismatch');
      expect(sync.message).toBe('expected v1, found v2');
      expect(sync.details.key).toBe('k');
      const asyncErr = await h.rejection(h.at(0).request(h.at(1).peerId, 'fails', bytes('async')));
      expect(asyncErr.code).toBe('not_leader');
      expect(asyncErr.message).toBe('not the leader; try n3');
      // A caller follows the hint in the details (the strong router does).
      expect(asyncErr.details.leaderHint).toBe('n3');
      expect(isParleyError(asyncErr, 'not_leader')).toBe(true);
    });

    it('reports any other handler failure as unavailable', async () => {
      h.at(1).handle('crashes', () => {
        throw new TypeError('boom');
      });
      const err = await h.rejection(h.at(0).request(h.at(1).peerId, 'crashes', bytes('')));
      expect(err.code).toBe('unavailable');
    });

    it('rejects with unavailable when the peer has no handler, including after unhandle', async () => {
      const none = await h.rejection(h.at(0).request(h.at(1).peerId, 'nobody-home', bytes('')));
      expect(none.code).toBe('unavailable');
      h.at(1).handle('temporary', () => bytes('here'));
      expect(text(await h.settle(h.at(0).request(h.at(1).peerId, 'temporary', bytes(''))))).toBe('here');
      h.at(1).unhandle('temporary');
      const gone = await h.rejection(h.at(0).request(h.at(1).peerId, 'temporary', bytes('')));
      expect(gone.code).toBe('unavailable');
    });

    it('replaces a handler registered twice', async () => {
      h.at(1).handle('replace', () => bytes('first'));
      h.at(1).handle('replace', () => bytes('second'));
      expect(text(await h.settle(h.at(0).request(h.at(1).peerId, 'replace', bytes(''))))).toBe('second');
    });

    it('rejects with unavailable for an unknown peer', async () => {
      const err = await h.rejection(h.at(0).request('12D3KooWUnknownPeerThatDoesNotExist', 'echo', bytes('')));
      expect(err.code).toBe('unavailable');
    });

    it('times out with timeout, and a late answer does not leak into later requests', async () => {
      let release: (() => void) | undefined;
      h.at(1).handle('stall', async (_from, request) => {
        if (text(request) === 'hang') await new Promise<void>((resolve) => (release = resolve));
        return request;
      });
      const err = await h.rejection(h.at(0).request(h.at(1).peerId, 'stall', bytes('hang'), { timeoutMs: 150 }));
      expect(err.code).toBe('timeout');
      release?.();
      const next = await h.settle(h.at(0).request(h.at(1).peerId, 'stall', bytes('next')));
      expect(text(next)).toBe('next');
    });

    it('bounds the requests in flight to one peer, and frees the window as they finish', async () => {
      const releases: Array<() => void> = [];
      h.at(2).handle('hold', async (_from, request) => {
        await new Promise<void>((resolve) => releases.push(resolve));
        return request;
      });
      const target = h.at(2).peerId;
      const held = Array.from({ length: COMPLIANCE_LIMITS.maxInFlightPerPeer }, (_, i) =>
        h.at(0).request(target, 'hold', bytes(`h${i}`)),
      );
      const over = await h.rejection(h.at(0).request(target, 'hold', bytes('over')));
      expect(over.code).toBe('unavailable');
      // Another peer's window is separate.
      h.at(1).handle('free', () => bytes('ok'));
      expect(text(await h.settle(h.at(0).request(h.at(1).peerId, 'free', bytes(''))))).toBe('ok');
      await h.waitFor(() => releases.length === COMPLIANCE_LIMITS.maxInFlightPerPeer);
      for (const release of releases) release();
      const done = await h.settle(Promise.all(held));
      expect(done.map(text)).toEqual(held.map((_, i) => `h${i}`));
      h.at(2).handle('hold', (_from, request) => request);
      expect(text(await h.settle(h.at(0).request(target, 'hold', bytes('after'))))).toBe('after');
    });

    it('delivers one-way messages to the protocol’s handler in send order, ahead of a later request', async () => {
      const seen: Array<{ from: PeerId; message: string }> = [];
      h.at(1).handle('oneway', (from, message) => {
        seen.push({ from, message: text(message) });
        return bytes('discarded');
      });
      const sent = Array.from({ length: 40 }, (_, i) => `m-${i}`);
      // More than the in-flight window: one-way messages hold no slot of it.
      const sends = sent.map((m) => h.at(0).send(h.at(1).peerId, 'oneway', bytes(m)));
      await expect(h.settle(Promise.all(sends))).resolves.toHaveLength(sent.length);
      // A request on the same protocol travels behind them.
      expect(text(await h.settle(h.at(0).request(h.at(1).peerId, 'oneway', bytes('last'))))).toBe('discarded');
      expect(seen.map((s) => s.message)).toEqual([...sent, 'last']);
      for (const s of seen) expect(s.from).toBe(h.at(0).peerId);
    });

    it('carries a one-way message of maxMessageBytes intact, and rejects a larger one with value_too_large', async () => {
      const sizes: number[] = [];
      let last: Uint8Array | undefined;
      h.at(2).handle('oneway-big', (_from, message) => {
        sizes.push(message.length);
        last = message.slice();
        return bytes('');
      });
      const payload = new Uint8Array(COMPLIANCE_LIMITS.maxMessageBytes);
      for (let i = 0; i < payload.length; i++) payload[i] = (i * 17 + 3) & 0xff;
      const err = await h.rejection(
        h.at(0).send(h.at(2).peerId, 'oneway-big', new Uint8Array(COMPLIANCE_LIMITS.maxMessageBytes + 1)),
      );
      expect(err.code).toBe('value_too_large');
      await h.settle(h.at(0).send(h.at(2).peerId, 'oneway-big', payload));
      await h.waitFor(() => sizes.length > 0);
      await h.settle(h.at(0).request(h.at(2).peerId, 'oneway-big', bytes('flush')));
      expect(sizes).toEqual([payload.length, 5]);
      expect(last && Buffer.from(last).equals(Buffer.from('flush'))).toBe(true);
    });

    it('drops a one-way message the peer cannot take, and keeps serving the sender', async () => {
      let thrown = 0;
      h.at(1).handle('oneway-throws', () => {
        thrown++;
        throw new ParleyError('not_leader', 'no');
      });
      h.at(1).handle('oneway-rejects', () => {
        thrown++;
        return Promise.reject(new TypeError('boom'));
      });
      await h.settle(h.at(0).send(h.at(1).peerId, 'oneway-nobody', bytes('lost')));
      await h.settle(h.at(0).send(h.at(1).peerId, 'oneway-throws', bytes('x')));
      await h.settle(h.at(0).send(h.at(1).peerId, 'oneway-rejects', bytes('y')));
      await h.waitFor(() => thrown === 2);
      h.at(1).handle('oneway-after', (_from, message) => message);
      expect(text(await h.settle(h.at(0).request(h.at(1).peerId, 'oneway-after', bytes('still'))))).toBe('still');
      const unknown = await h.rejection(h.at(0).send('12D3KooWUnknownPeerThatDoesNotExist', 'oneway', bytes('')));
      expect(unknown.code).toBe('unavailable');
    });

    it('delivers gossip to every subscriber with the origin’s peer id, and not to the publisher', async () => {
      const got: Array<{ at: number; from: PeerId; message: string }> = [];
      const unsubs = [0, 1, 2].map((i) =>
        h.at(i).subscribe('topic-a', (from, message) => got.push({ at: i, from, message: text(message) })),
      );
      await h.publishUntil(
        h.at(0),
        'topic-a',
        (i) => bytes(`warmup-${i}`),
        () => got.some((g) => g.at === 1) && got.some((g) => g.at === 2),
      );
      got.length = 0;
      await h.settle(h.at(0).publish('topic-a', bytes('hello')));
      await h.waitFor(() => got.filter((g) => g.message === 'hello').length >= 2);
      const hello = got.filter((g) => g.message === 'hello');
      expect(hello.map((g) => g.at).sort()).toEqual([1, 2]);
      for (const g of hello) expect(g.from).toBe(h.at(0).peerId);
      expect(got.some((g) => g.at === 0)).toBe(false);
      for (const unsub of unsubs) unsub();
    });

    it('delivers identical payloads published twice as two messages', async () => {
      const got: string[] = [];
      const unsub = h.at(1).subscribe('topic-dup', (_from, message) => got.push(text(message)));
      await h.publishUntil(
        h.at(0),
        'topic-dup',
        (i) => bytes(`warmup-${i}`),
        () => got.length > 0,
      );
      got.length = 0;
      await h.settle(h.at(0).publish('topic-dup', bytes('same')));
      await h.settle(h.at(0).publish('topic-dup', bytes('same')));
      await h.waitFor(() => got.filter((m) => m === 'same').length >= 2);
      expect(got.filter((m) => m === 'same')).toEqual(['same', 'same']);
      unsub();
    });

    it('keeps topics apart and stops delivering after the last unsubscribe', async () => {
      const onB: string[] = [];
      const onOther: string[] = [];
      const unsubB = h.at(1).subscribe('topic-b', (_from, message) => onB.push(text(message)));
      const unsubOther = h.at(1).subscribe('topic-other', (_from, message) => onOther.push(text(message)));
      await h.publishUntil(
        h.at(2),
        'topic-b',
        (i) => bytes(`b-${i}`),
        () => onB.length > 0,
      );
      expect(onOther).toEqual([]);
      unsubB();
      // After unsubscribing, a marker on the still-subscribed topic proves later gossip was processed.
      await h.publishUntil(
        h.at(2),
        'topic-other',
        (i) => bytes(`marker-${i}`),
        () => onOther.length > 0,
      );
      const before = onB.length;
      await h.settle(h.at(2).publish('topic-b', bytes('after-unsubscribe')));
      await h.settle(h.at(2).publish('topic-other', bytes('final-marker')));
      await h.waitFor(() => onOther.includes('final-marker'));
      expect(onB.length).toBe(before);
      expect(onB).not.toContain('after-unsubscribe');
      unsubOther();
    });

    it('publishes without error when nobody subscribes, and rejects oversized gossip', async () => {
      await expect(h.settle(h.at(0).publish('topic-nobody', bytes('into the void')))).resolves.toBeUndefined();
      const err = await h.rejection(
        h.at(0).publish('topic-nobody', new Uint8Array(COMPLIANCE_LIMITS.maxMessageBytes + 1)),
      );
      expect(err.code).toBe('value_too_large');
    });

    it('keeps delivering to other handlers when one gossip handler throws', async () => {
      const got: string[] = [];
      const unsubA = h.at(1).subscribe('topic-throw', () => {
        throw new Error('handler bug');
      });
      const unsubB = h.at(1).subscribe('topic-throw', (_from, message) => got.push(text(message)));
      await h.publishUntil(
        h.at(0),
        'topic-throw',
        (i) => bytes(`m-${i}`),
        () => got.length > 0,
      );
      expect(got.length).toBeGreaterThan(0);
      unsubA();
      unsubB();
    });
  });

  describe(`Transport compliance: ${name} (lifecycle)`, () => {
    it('fails requests in flight to a peer that stops with unavailable, and reports the disconnect', async () => {
      const cluster = await target.create(2, COMPLIANCE_LIMITS);
      const h = new Harness(cluster);
      try {
        const [a, b] = [h.at(0), h.at(1)];
        await h.waitFor(() => a.peers().includes(b.peerId) && b.peers().includes(a.peerId));
        const disconnects: PeerId[] = [];
        a.on('peer:disconnect', (peer) => disconnects.push(peer));
        let entered = false;
        b.handle('never', () => {
          entered = true;
          return new Promise<Uint8Array>(() => {});
        });
        const stuck = a.request(b.peerId, 'never', bytes(''), { timeoutMs: 20_000 });
        stuck.catch(() => {}); // inspected below, after the stop
        await h.waitFor(() => entered);
        await h.settle(b.stop());
        const err = await h.rejection(stuck);
        expect(err.code).toBe('unavailable');
        await h.waitFor(() => disconnects.includes(b.peerId));
        expect(a.peers()).not.toContain(b.peerId);
        const after = await h.rejection(a.request(b.peerId, 'never', bytes('')));
        expect(after.code).toBe('unavailable');
      } finally {
        await cluster.close();
      }
    });

    it('rejects every operation with closed after stop, and fails its own pending requests', async () => {
      const cluster = await target.create(2, COMPLIANCE_LIMITS);
      const h = new Harness(cluster);
      try {
        const [a, b] = [h.at(0), h.at(1)];
        await h.waitFor(() => a.peers().includes(b.peerId));
        let entered = false;
        b.handle('never', () => {
          entered = true;
          return new Promise<Uint8Array>(() => {});
        });
        const stuck = a.request(b.peerId, 'never', bytes(''), { timeoutMs: 20_000 });
        stuck.catch(() => {}); // inspected below, after the stop
        await h.waitFor(() => entered);
        await h.settle(a.stop());
        expect((await h.rejection(stuck)).code).toBe('closed');
        expect((await h.rejection(a.request(b.peerId, 'never', bytes('')))).code).toBe('closed');
        expect((await h.rejection(a.publish('t', bytes('')))).code).toBe('closed');
        expect((await h.rejection(a.send(b.peerId, 'never', bytes('')))).code).toBe('closed');
        expect(a.peers()).toEqual([]);
      } finally {
        await cluster.close();
      }
    });

    it('emits peer:connect on both sides of every new connection', async () => {
      const seen = new Map<Transport, PeerId[]>();
      const cluster = await target.create(3, COMPLIANCE_LIMITS, (transport) => {
        const list: PeerId[] = [];
        seen.set(transport, list);
        transport.on('peer:connect', (peer) => list.push(peer));
      });
      const h = new Harness(cluster);
      try {
        const ids = h.t.map((t) => t.peerId);
        await h.waitFor(() =>
          h.t.every((t) => ids.filter((id) => id !== t.peerId).every((id) => seen.get(t)?.includes(id))),
        );
        for (const t of h.t) {
          expect(new Set(seen.get(t))).toEqual(new Set(ids.filter((id) => id !== t.peerId)));
        }
      } finally {
        await cluster.close();
      }
    });
  });
}
