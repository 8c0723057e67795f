import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Long files first. On a clean clone vitest has no timings, so it runs larger
 * files first, and the longest ones here are small files that loop over
 * scenarios, plants or child processes: left to the end they run alone on one
 * worker while the other sits idle. These patterns (measured in CI, 10–45 s a
 * file) start first, in this order; every other file keeps vitest's order.
 */
const LONG_FIRST: readonly RegExp[] = [
  /\/packages\/scenarios\/src\/mutation\/smoke-/,
  /\/test\/cli-parley\.test\.ts$/,
  /\/test\/[^/]*multiprocess\.test\.ts$/,
  /\/packages\/scenarios\/src\/families\//,
  /\/test\/partition-test\.test\.ts$/,
  /\/packages\/etcd\/src\//,
  /\/packages\/conformance\/src\//,
  /\/packages\/scenarios\/src\/sweep\.test\.ts$/,
];

function rank(spec: TestSpecification): number {
  const i = LONG_FIRST.findIndex((re) => re.test(spec.moduleId));
  return i === -1 ? LONG_FIRST.length : i;
}

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const position = new Map(sorted.map((f, i) => [f, i]));
    // Projects keep their order (groupOrder first); within one, long files lead.
    return [...sorted].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        (a.project.name === b.project.name ? rank(a) - rank(b) : 0) ||
        (position.get(a) as number) - (position.get(b) as number),
    );
  }
}
