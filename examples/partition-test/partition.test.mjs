/**
 * Run with `npx vitest run partition.test.mjs` (add PARLEY_SEED=<n> to replay a
 * failure; PARLEY_AGENT=broken runs the broken agent, which must fail).
 */
import { expect, test } from 'vitest';
import * as good from './agent.mjs';
import * as broken from './agent-broken.mjs';
import { checkAgentAcrossPartition } from './partition.mjs';

const agent = process.env.PARLEY_AGENT === 'broken' ? broken : good;

test('every task step is counted once, even when agents are cut off mid-task', async () => {
  // replayEnv: a failure's replay line then sets PARLEY_AGENT too, so copying it reruns this agent.
  const result = await checkAgentAcrossPartition(agent.startAgent, agent.STEPS, { replayEnv: ['PARLEY_AGENT'] });
  expect(result.simulatedMs).toBeGreaterThan(60_000);
}, 60_000);
