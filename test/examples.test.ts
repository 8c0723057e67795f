import { describe, expect, it } from 'vitest';
import { run } from '../examples/offline-replicas.mjs';

describe('examples', () => {
  it('offline-replicas converges and exchanges only the difference', () => {
    const r = run();
    expect(r.converged).toBe(true);
    expect(r.restarts).toBe(5);
    expect(r.flag7).toEqual({ on: true, note: 'changed offline' });
    expect(r.flag8).toBeUndefined();
    // Four changed keys out of 1,001: far less than the whole namespace.
    expect(r.bytesExchanged).toBeLessThan(2_000);
  });
});
