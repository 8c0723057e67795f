/**
 * The verdicts on hand-made histories: a violation is reported in the user's
 * terms (client, call, key, values); a correct history passes.
 */
import { entryGet, entrySet } from '@parley/check';
import { describe, expect, it } from 'vitest';
import { expectBoundedStaleness, expectFencing, expectLinearizable, SimulationExpectationError } from './checks.js';
import { type RecordedCall, Recorder } from './recorder.js';

function recorder() {
  let now = 0;
  const rec = new Recorder(() => now);
  return { rec, at: (t: number) => (now = t) };
}

describe('expectLinearizable', () => {
  it('names the client, the key and the values of a read no order explains', async () => {
    const { rec, at } = recorder();
    const set = (value: number, version: string) =>
      rec.call(0, "strong('jobs').set", 'jobs/a', entrySet(value), async () => ({ version }));
    await set(1, 'v1');
    at(10);
    await set(2, 'v2');
    at(20);
    const stale = rec.call(2, "strong('jobs').get", 'jobs/a', entryGet(), async () => ({ value: 1, version: 'v1' }));
    await stale;
    let err: unknown;
    try {
      expectLinearizable(rec);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SimulationExpectationError);
    const msg = (err as Error).message;
    expect(msg).toContain('not linearizable: the strong entries on key "jobs/a"');
    expect(msg).toContain(`n2 strong('jobs').get("jobs/a") → {"value":1,"version":"v1"} [20ms..20ms]`);
    expect(msg).toContain(`n0 strong('jobs').set("jobs/a", {"value":2}) → {"version":"v2"}`);
  });

  it('passes a history whose reads follow the writes', async () => {
    const { rec, at } = recorder();
    await rec.call(0, "strong('jobs').set", 'jobs/a', entrySet(1), async () => ({ version: 'v1' }));
    at(5);
    await rec.call(1, "strong('jobs').get", 'jobs/a', entryGet(), async () => ({ value: 1, version: 'v1' }));
    expect(() => expectLinearizable(rec)).not.toThrow();
  });
});

describe('expectFencing', () => {
  const call = (id: number, client: string, startMs: number, endMs: number): RecordedCall => ({
    id,
    client,
    node: 0,
    model: 'lock',
    call: "locks('m').acquire",
    key: 'm/deploy',
    input: null,
    startMs,
    endMs,
    outcome: 'ok',
    output: null,
    error: undefined,
  });

  it('reports a write accepted with a fence older than a grant that ended before it', () => {
    const { rec } = recorder();
    rec.fences.push({ kind: 'grant', resource: 'lock:m/deploy', fence: 1, call: call(0, 'n0', 0, 1), accepted: true });
    rec.fences.push({ kind: 'grant', resource: 'lock:m/deploy', fence: 2, call: call(1, 'n1', 5, 6), accepted: true });
    expect(() => expectFencing(rec)).not.toThrow();
    rec.fences.push({
      kind: 'write',
      resource: 'lock:m/deploy',
      fence: 1,
      call: call(2, 'n0', 10, 11),
      accepted: true,
    });
    expect(() => expectFencing(rec)).toThrow(
      /stale fence 1 on lock:m\/deploy was accepted after fence 2 was granted\n {2}n1 /,
    );
  });

  it('reports the same fence granted twice, and a grant that went backwards', () => {
    const { rec } = recorder();
    rec.fences.push({ kind: 'grant', resource: 'lease:t/x', fence: 3, call: call(0, 'n0', 0, 1), accepted: true });
    rec.fences.push({ kind: 'grant', resource: 'lease:t/x', fence: 3, call: call(1, 'n1', 5, 6), accepted: true });
    expect(() => expectFencing(rec)).toThrow(/granted fence 3 twice/);
    const two = recorder().rec;
    two.fences.push({ kind: 'grant', resource: 'lease:t/x', fence: 3, call: call(0, 'n0', 0, 1), accepted: true });
    two.fences.push({ kind: 'grant', resource: 'lease:t/x', fence: 2, call: call(1, 'n1', 5, 6), accepted: true });
    expect(() => expectFencing(two)).toThrow(/granted fence 2 after fence 3 had been granted/);
  });
});

describe('expectBoundedStaleness', () => {
  async function history(boundMs: number) {
    const { rec, at } = recorder();
    const set = (value: number, version: string) =>
      rec.call(0, "strong('jobs').set", 'jobs/a', entrySet(value), async () => ({ version }));
    await set(1, 'v1');
    at(10);
    await set(2, 'v2');
    at(200);
    const consistency = { level: 'bounded' as const, maxStalenessMs: boundMs, maxLagEntries: 0 };
    await rec.call(
      1,
      "strong('jobs').get",
      'jobs/a',
      {
        model: 'strong-read',
        f: 'get',
        input: { maxStalenessMs: boundMs },
        okValue: (r: { value: number; version: string }) => r,
        observed: {},
      },
      async () => ({ value: 1, version: 'v1' }),
      (call) => rec.strongReads.push({ key: 'jobs/a', consistency, call }),
    );
    return rec;
  }

  it('reports a bounded read that missed a write acknowledged more than its bound before', async () => {
    const rec = await history(100);
    expect(() => expectLinearizable(rec)).not.toThrow(); // kept out of the linearizability history
    let err: unknown;
    try {
      expectBoundedStaleness(rec);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SimulationExpectationError);
    expect((err as Error).message).toContain('promised maxStalenessMs 100 missed a write acknowledged 190 ms before');
    expect((err as Error).message).toContain(`n0 strong('jobs').set("jobs/a", {"value":2})`);
  });

  it('passes the same read under a wider bound', async () => {
    expect(expectBoundedStaleness(await history(500))).toEqual({ reads: 1 });
  });
});
