import { expect, it } from 'vitest';
import { PLANTS } from './plants.js';
import { LAYERS, plantSuite } from './smoke-suite.js';

plantSuite('protocol');

it('every plant is in one layer of the smoke test', () => {
  const layers = Object.values(LAYERS);
  const homeless = PLANTS.filter((p) => !p.missed && layers.filter((inLayer) => inLayer(p.scenario)).length !== 1);
  expect(homeless.map((p) => `${p.name}: ${p.scenario}`)).toEqual([]);
});
