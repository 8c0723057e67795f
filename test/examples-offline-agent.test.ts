/**
 * examples/offline-agent: two nodes edit a Yjs document and LWW settings while apart,
 * reconnect and converge; only the difference crosses.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../examples/offline-agent/offline-agent.mjs';

describe('examples/offline-agent', () => {
  it('keeps both devices’ offline edits and converges after reconnecting', async () => {
    const r = await run();
    expect(r.phoneNotes).toBe(r.notes);
    expect(r.notes).toContain('- book train (laptop, offline)');
    expect(r.notes).toContain('- call the bank (phone, offline)');
    expect(r.phoneSettings).toEqual(r.settings);
    expect(r.settings).toEqual({ 'settings/font-size': 14, 'settings/model': 'large', 'settings/theme': 'light' });
    expect(r.bytes.phone.antiEntropy + r.bytes.laptop.antiEntropy).toBeGreaterThan(0);
    expect(r.bytes.notesDiff.toPhone).toBeLessThan(r.bytes.notesDiff.wholeDoc);
  }, 30_000);
});
