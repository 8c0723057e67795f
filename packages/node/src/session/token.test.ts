import { isParleyError } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { Session } from './session.js';
import { decodeSessionToken, encodeSessionToken, SESSION_LIMITS } from './token.js';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isParleyError(err) ? err.code : 'untyped';
  }
  return undefined;
}

describe('session token', () => {
  it('is empty for a new session and round-trips a frontier', () => {
    const s = Session.from();
    expect(s.token).toBe('');
    s.observeStrong(42);
    s.observeEventual('notes', [
      ['node-b', 3],
      ['node-a', 7],
    ]);
    s.observeEventual('notes', [['node-a', 5]]);
    s.observeEventual('jobs', [['node-c', 1]]);
    const resumed = Session.from(s.token);
    expect(resumed.strong).toBe(42);
    expect([...(resumed.eventual('notes') ?? [])]).toEqual([
      ['node-a', 7],
      ['node-b', 3],
    ]);
    expect(resumed.token).toBe(s.token);
    expect(s.token).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('merges two sessions component by component', () => {
    const a = Session.from();
    a.observeStrong(5);
    a.observeEventual('ns', [['x', 2]]);
    const b = Session.from();
    b.observeStrong(3);
    b.observeEventual('ns', [
      ['x', 9],
      ['y', 1],
    ]);
    a.merge(b.token);
    expect(a.strong).toBe(5);
    expect(Object.fromEntries(a.eventual('ns') ?? [])).toEqual({ x: 9, y: 1 });
  });

  it('refuses what does not decode with invalid_argument', () => {
    const good = Session.from();
    good.observeEventual('ns', [['x', 2]]);
    const bytes = Buffer.from(good.token, 'base64url');
    for (const bad of [
      '!!',
      'AA', // version 0
      Buffer.from([...bytes, 0]).toString('base64url'), // trailing byte
      bytes.subarray(0, bytes.length - 1).toString('base64url'), // cut short
      Buffer.from([1, 0, 0xff, 0xff, 0xff, 0x7f]).toString('base64url'), // a huge count
      'A'.repeat(SESSION_LIMITS.maxTokenChars + 1),
    ]) {
      expect(
        code(() => decodeSessionToken(bad)),
        bad.slice(0, 20),
      ).toBe('invalid_argument');
    }
    expect(code(() => decodeSessionToken(42 as unknown as string))).toBe('invalid_argument');
  });

  it('refuses a frontier beyond the limits with invalid_argument', () => {
    const s = Session.from();
    for (let i = 0; i <= SESSION_LIMITS.maxNamespaces; i++) s.observeEventual(`ns${i}`, [['x', 1]]);
    expect(code(() => s.check())).toBe('invalid_argument');
    expect(code(() => s.token)).toBe('invalid_argument');
    const wide = new Map([['ns', new Map(Array.from({ length: 300 }, (_, i) => [`o${i}`, 1] as [string, number]))]]);
    expect(code(() => encodeSessionToken({ strong: 0, eventual: wide }))).toBe('invalid_argument');
  });
});
