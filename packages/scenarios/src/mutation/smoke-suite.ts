import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLANTS, type Plant } from './plants.js';
import { packagesDir, runPlant } from './smoke.js';

/**
 * The mutation smoke test: each planted bug, applied to a scratch copy of the
 * compiled packages, is caught by its scenario within its seed budget. It runs
 * on dist/ (npm test builds first): a stale build tests stale code. The plants
 * are split by the layer their scenario drives (`smoke-*.test.ts`), so the
 * suite's two workers share them instead of one file running last and alone.
 */
export const LAYERS = {
  protocol: (s: string) => s.startsWith('raft-') || s.startsWith('crdt-'),
  coord: (s: string) => s.startsWith('coord-'),
  node: (s: string) => s.startsWith('node-') || s.startsWith('queue-'),
} as const;

export function plantSuite(layer: keyof typeof LAYERS): void {
  const scenarioIn = LAYERS[layer];
  describe(`planted bugs are caught: ${layer}`, () => {
    it('runs on a build', () => {
      for (const p of ['interface', 'crdt', 'raft', 'coord', 'check', 'sim', 'scenarios', 'node', 'net', 'storage']) {
        expect(existsSync(join(packagesDir(), p, 'dist', 'index.js'))).toBe(true);
      }
    });

    for (const plant of PLANTS.filter((p: Plant) => !p.missed && scenarioIn(p.scenario))) {
      it(`${plant.name} (${plant.gap}): ${plant.scenario} catches it within ${plant.budget} seeds`, async () => {
        const r = await runPlant(plant);
        expect(r.caught, `${plant.name} survived ${r.seedsRun} seeds of ${plant.scenario}`).toBe(true);
        expect(r.kind).toBe('correctness');
      }, 120_000);
    }
  });
}
