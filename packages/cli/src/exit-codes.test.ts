import { ERROR_STATUS, RETRYABLE_CODES } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { EXIT, exitCodeOf } from './exit-codes.js';

describe('exit codes', () => {
  it('follow the error class of every code the node can raise', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      const exit = exitCodeOf(code);
      if (code === 'outcome_unknown') expect(exit, code).toBe(EXIT.outcomeUnknown);
      else if (RETRYABLE_CODES.has(code as keyof typeof ERROR_STATUS)) expect(exit, code).toBe(EXIT.unavailable);
      else if (['storage_full', 'storage_unwritable', 'storage_failed'].includes(code)) {
        expect(exit, code).toBe(EXIT.storage);
      } else if (status === 409) expect(exit, code).toBe(EXIT.conflict);
      else if (status === 404 || status === 410) expect(exit, code).toBe(EXIT.notFound);
      else if (status === 401) expect(exit, code).toBe(EXIT.unauthorized);
      else if (status === 400 || status === 413) expect(exit, code).toBe(EXIT.usage);
      else expect(exit, code).toBe(EXIT.failure);
    }
    expect(exitCodeOf('something_new')).toBe(EXIT.failure);
  });
});
