/**
 * expectSessionGuarantees and expectCausal on hand-built recordings: calls
 * recorded as the node wrapper records them (a Session object per session,
 * each write and read named by its entry version). A correct history passes;
 * a planted violation fails naming the guarantee, the session and the calls.
 */
import { entryGet, entrySet, type HistoryValue } from '@parley/check';
import { describe, expect, it } from 'vitest';
import { SimulationExpectationError } from './checks.js';
import { Recorder } from './recorder.js';
import { expectCausal, expectSessionGuarantees } from './session-checks.js';

/** HLC versions as the eventual side writes them: `wall36.logical36.node`. */
const hlc = (wall: number, node = 'a') => `${wall.toString(36)}.0.${node}`;

function recorder() {
  let now = 0;
  const rec = new Recorder(() => now);
  const at = (t: number) => {
    now = t;
  };
  const op = (f: string) => ({
    model: 'eventual' as const,
    f,
    input: null,
    okValue: (v: unknown) => v as HistoryValue,
    observed: {},
  });
  /** An eventual set of `key` on `node` answering `version`, in `session` (or none). */
  const evSet = (node: number, session: object | undefined, key: string, version: string) =>
    rec.call(
      node,
      "eventual('ev').set",
      key,
      op('set'),
      async () => ({ version }),
      rec.sessionAfter(
        session,
        { side: 'eventual', namespace: 'ev', key, kind: 'write' },
        (e) => e.version,
        (r, o) => {
          if (o.ok) rec.eventualWrites.push({ node, namespace: 'ev', key, f: 'set', version, value: 1, call: r });
        },
      ),
    );
  /** An eventual get of `key` on `node` answering `version` (undefined: nothing). */
  const evGet = (node: number, session: object, key: string, version: string | undefined) =>
    rec.call(
      node,
      "eventual('ev').get",
      key,
      op('get'),
      async () => (version === undefined ? undefined : { version }),
      rec.sessionAfter(session, { side: 'eventual', namespace: 'ev', key, kind: 'read' }, (e) => e?.version),
    );
  const stSet = (node: number, session: object, key: string, version: string) =>
    rec.call(
      node,
      "strong('st').set",
      `st/${key}`,
      entrySet(1),
      async () => ({ version }),
      rec.sessionAfter(session, { side: 'strong', namespace: 'st', key, kind: 'write' }, (e) => e.version),
    );
  const stGet = (node: number, session: object, key: string, version: string | undefined) =>
    rec.call(
      node,
      "strong('st').get",
      `st/${key}`,
      entryGet(),
      async () => (version === undefined ? undefined : { value: 1, version }),
      rec.sessionAfter(session, { side: 'strong', namespace: 'st', key, kind: 'read' }, (e) => e?.version),
    );
  return { rec, at, evSet, evGet, stSet, stGet };
}

function failure(fn: () => unknown): SimulationExpectationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SimulationExpectationError) return e;
    throw e;
  }
  throw new Error('expected a violation');
}

describe('expectSessionGuarantees', () => {
  it('passes sessions that read their writes and never go back, across nodes', async () => {
    const { rec, at, evSet, evGet, stSet, stGet } = recorder();
    const s1 = {};
    const s2 = {};
    await evSet(0, s1, 'k', hlc(10));
    at(5);
    await evGet(1, s1, 'k', hlc(10));
    at(6);
    await evSet(2, undefined, 'k', hlc(20, 'b'));
    at(7);
    await evGet(2, s2, 'k', hlc(20, 'b'));
    at(8);
    await evGet(0, s2, 'k', hlc(20, 'b'));
    at(9);
    await stSet(0, s1, 'x', 'V1');
    at(10);
    await stGet(2, s1, 'x', 'V1');
    expect(expectSessionGuarantees(rec)).toEqual({ sessions: 2, operations: 7 });
    expect(expectCausal(rec, 'ev').operations).toBe(5);
  });

  it('names read-your-writes, the session and both calls when a read misses its own write', async () => {
    const { rec, at, evSet, evGet } = recorder();
    const s = {};
    await evSet(0, undefined, 'k', hlc(5, 'z'));
    at(10);
    await evSet(0, s, 'k', hlc(10));
    at(20);
    await evGet(1, s, 'k', hlc(5, 'z'));
    const err = failure(() => expectSessionGuarantees(rec));
    expect(err.check).toBe('session-guarantees');
    expect(err.message).toMatch(/^read-your-writes violated: session s1's read of "ev\/k" returned a write/);
    expect(err.message).toContain(`the call:       n1 eventual('ev').get("k")`);
    expect(err.message).toContain(`it had to see:  n0 eventual('ev').set("k")`);
    expect(err.message).toContain('The calls of session s1 (last 12):');
  });

  it('names monotonic reads when a session reads an older write after a newer one', async () => {
    const { rec, at, evSet, evGet } = recorder();
    const s = {};
    await evSet(0, undefined, 'k', hlc(5, 'z'));
    at(1);
    await evSet(1, undefined, 'k', hlc(9, 'y'));
    at(10);
    await evGet(1, s, 'k', hlc(9, 'y'));
    at(20);
    await evGet(0, s, 'k', hlc(5, 'z'));
    expect(failure(() => expectSessionGuarantees(rec)).message).toMatch(/^monotonic reads violated: session s1/);
  });

  it('a strong read that misses the session write acknowledged before it fails; a read that finds nothing too', async () => {
    const { rec, at, stSet, stGet } = recorder();
    const s = {};
    await stSet(0, s, 'x', 'V1');
    at(10);
    await stGet(2, s, 'x', undefined);
    expect(failure(() => expectSessionGuarantees(rec)).message).toMatch(
      /^read-your-writes violated: session s1's read of "st\/x" returned nothing, but it had to see a write\./,
    );
  });

  it('expectCausal sees through another session: what s1 read, s2 must see after reading s1', async () => {
    const { rec, at, evSet, evGet } = recorder();
    const s1 = {};
    const s2 = {};
    await evSet(0, undefined, 'a', hlc(5, 'z'));
    at(1);
    await evSet(0, s1, 'a', hlc(6));
    at(2);
    await evSet(0, s1, 'b', hlc(7));
    at(10);
    await evGet(1, s2, 'b', hlc(7));
    at(11);
    await evGet(1, s2, 'a', hlc(5, 'z'));
    // Each session alone kept its four guarantees; together they broke causality.
    expect(() => expectSessionGuarantees(rec)).toThrow(/monotonic writes|writes-follow-reads/);
    expect(failure(() => expectCausal(rec, 'ev')).message).toMatch(/^causal consistency violated: session s2/);
    expect(() => expectCausal(rec, 'other')).not.toThrow();
  });

  it('refuses a session whose calls overlap', async () => {
    const { rec, at, evSet, evGet } = recorder();
    const s = {};
    at(0);
    const w = evSet(0, s, 'k', hlc(1));
    const r = evGet(1, s, 'k', hlc(1));
    at(5);
    await Promise.all([w, r]);
    expect(() => expectSessionGuarantees(rec)).toThrow(/session s1 had overlapping calls/);
  });
});
