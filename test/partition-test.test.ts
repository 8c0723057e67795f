/**
 * examples/partition-test: the task-claiming agent passes its partition test;
 * the broken variant fails it with a seed whose replay fails the same way,
 * both in this process and when the example's own vitest file is run as a
 * user would run it (a child `vitest run` over the built packages).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testSeed } from '@parley/interface';
import { describe, expect, it } from 'vitest';
import * as good from '../examples/partition-test/agent.mjs';
import * as broken from '../examples/partition-test/agent-broken.mjs';
import { checkAgentAcrossPartition } from '../examples/partition-test/partition.mjs';

const example = fileURLToPath(new URL('../examples/partition-test/', import.meta.url));
const seed = testSeed(42);

function runExample(agent: 'good' | 'broken') {
  return spawnSync(
    process.execPath,
    [fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url)), 'run', '--root', example],
    {
      encoding: 'utf8',
      timeout: 90_000,
      env: { ...process.env, PARLEY_SEED: String(seed), PARLEY_AGENT: agent, NO_COLOR: '1' },
    },
  );
}

describe('examples/partition-test', () => {
  it('the agent counts every step at most once across a partition, and the checkers pass', async () => {
    const r = await checkAgentAcrossPartition(good.startAgent, good.STEPS, { seed });
    expect(r.history).toContain("strong('tasks').lease");
  }, 60_000);

  it('the broken agent fails with a replayable seed', async () => {
    const first = await checkAgentAcrossPartition(broken.startAgent, broken.STEPS, { seed }).catch((e: unknown) => e);
    expect(String(first)).toMatch(/step \d+ was counted twice/);
    expect(String(first)).toContain(`PARLEY_SEED=${seed}`);
    expect(String(first)).toContain(`replay: PARLEY_SEED=${seed} npx vitest run`);
    const again = await checkAgentAcrossPartition(broken.startAgent, broken.STEPS, { seed }).catch((e: unknown) => e);
    expect(String(again)).toBe(String(first));
  }, 60_000);

  it("the example's own test file passes with the agent and fails with the broken one, as a user runs it", () => {
    const ok = runExample('good');
    expect(`exit ${ok.status}\n${ok.stdout}${ok.stderr}`).toMatch(/^exit 0\n/);
    const bad = runExample('broken');
    expect(bad.status).toBe(1);
    expect(bad.stdout + bad.stderr).toMatch(/step \d+ was counted twice/);
    expect(bad.stdout + bad.stderr).toContain(`PARLEY_SEED=${seed}`);
    // The replay line sets what chose the broken agent: copied as it is, it fails again.
    expect(bad.stdout + bad.stderr).toContain(`replay: PARLEY_SEED=${seed} PARLEY_AGENT=broken npx vitest run`);
  }, 120_000);
});
