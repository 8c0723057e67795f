import { describe, expect, it } from 'vitest';
import { KNOWN_BAD, runKnownBad } from './known-bad.js';

describe('checker self-test', () => {
  it('every checker refuses every known-bad history', () => {
    expect(KNOWN_BAD.length).toBeGreaterThanOrEqual(8);
    expect(runKnownBad()).toEqual([]);
  });

  it('a case that throws counts as accepted (a malformed case must not pass silently)', () => {
    expect(
      runKnownBad([
        {
          name: 'throws',
          accepts: () => {
            throw new Error('boom');
          },
        },
      ]),
    ).toEqual(['throws (threw boom)']);
  });
});
