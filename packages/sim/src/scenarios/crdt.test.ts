import { describe, expect, it } from 'vitest';
import { runScenario } from '../scenario.js';
import { CRDT_SCENARIOS } from './crdt.js';

describe('crdt scenarios', () => {
  for (const scenario of CRDT_SCENARIOS) {
    it(`${scenario.name} passes a few seeds`, async () => {
      for (let seed = 1; seed <= 3; seed++) {
        const r = await runScenario(scenario, seed);
        expect(r.failure?.message).toBeUndefined();
      }
    });
  }
});
