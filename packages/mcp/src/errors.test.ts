import { ERROR_STATUS } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import { ERROR_HINTS, ToolError } from './errors.js';

describe('tool error hints', () => {
  it('tell the agent to read before writing again after an unknown outcome, and never to retry it as is', () => {
    const json = new ToolError('outcome_unknown', ERROR_STATUS.outcome_unknown, 'answer lost').toJSON();
    expect(json).toMatchObject({ error: 'outcome_unknown', status: 504, retryable: false });
    expect(json.hint).toMatch(/applied once or not at all/);
    expect(json.hint).toMatch(/state_get/);
  });

  it('do not call a retry after timeout exactly-once', () => {
    expect(ERROR_HINTS.timeout).not.toMatch(/exactly-once|safe/i);
    expect(ERROR_HINTS.timeout).toMatch(/re-read/);
  });
});
