/**
 * `doomed`: a CAS the state machine is sure to fail, judged without applying
 * it — only on a first attempt the session table does not know.
 */
import { describe, expect, it } from 'vitest';
import { CoordStateMachine } from './state-machine.js';
import type { Command, CommandResult } from './types.js';

const NOW = 1_700_000_000_000;

function setup() {
  const sm = new CoordStateMachine();
  let index = 0;
  const apply = (c: Omit<Command, 'nowMs'>): CommandResult =>
    sm.apply({ ...c, nowMs: NOW }, { index: ++index, term: 1 }).result;
  const reg = apply({ op: { type: 'register_session' } });
  const clientId = reg.ok && reg.value.type === 'session' ? reg.value.clientId : '';
  const version = (r: CommandResult) => (r.ok && r.value.type === 'entry' ? r.value.entry.version : '');
  const v1 = version(apply({ clientId, seq: 1, op: { type: 'set', namespace: 'n', key: 'k', value: 1 } }));
  const v2 = version(
    apply({ clientId, seq: 2, op: { type: 'set', namespace: 'n', key: 'k', value: 2, ifVersion: v1 } }),
  );
  return { sm, apply, clientId, v1, v2 };
}

describe('doomed', () => {
  it('a first attempt with a stale version: the failure apply would give, with the current version', () => {
    const { sm, apply, clientId, v1, v2 } = setup();
    const cas: Omit<Command, 'nowMs'> = {
      clientId,
      seq: 3,
      op: { type: 'set', namespace: 'n', key: 'k', value: 3, ifVersion: v1 },
    };
    const fast = sm.doomed(cas, { nowMs: NOW, retry: false });
    expect(fast).toMatchObject({
      ok: false,
      error: { code: 'version_mismatch', details: { expected: v1, actual: v2 } },
    });
    const before = sm.snapshot();
    expect(apply(cas)).toEqual(fast);
    expect(sm.snapshot()).not.toEqual(before); // apply remembers it; doomed did not
  });

  it('never for a retry, a seq the table knows, a right version, or anything but a plain CAS', () => {
    const { sm, clientId, v1, v2 } = setup();
    const op = { type: 'set', namespace: 'n', key: 'k', value: 3, ifVersion: v1 } as const;
    const at = { nowMs: NOW, retry: false };
    expect(sm.doomed({ clientId, seq: 3, op }, { nowMs: NOW, retry: true })).toBeUndefined();
    // seq 2 applied (it won with v1): its retry is answered from the table, never "doomed".
    expect(sm.doomed({ clientId, seq: 2, op }, at)).toBeUndefined();
    expect(sm.doomed({ clientId: 'nobody', seq: 3, op }, at)).toBeUndefined();
    expect(sm.doomed({ op }, at)).toBeUndefined();
    expect(sm.doomed({ clientId, seq: 3, op: { ...op, ifVersion: v2 } }, at)).toBeUndefined();
    expect(
      sm.doomed({ clientId, seq: 3, op: { ...op, fence: { namespace: 'n', key: 'l', token: 1 } } }, at),
    ).toBeUndefined();
    expect(
      sm.doomed({ clientId, seq: 3, op: { type: 'delete', namespace: 'n', key: 'k', ifVersion: v1 } }, at),
    ).toBeUndefined();
  });
});
