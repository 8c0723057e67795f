/**
 * examples/agent-task-board: three agent processes with their own nodes; one is
 * paused mid-task, its task is taken over once its lease ends, its late write is
 * refused by its stale epoch, and every task is done exactly once.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../examples/agent-task-board/board.mjs';

describe('examples/agent-task-board', () => {
  it('takes a paused agent’s task over after its lease and refuses its late write', async () => {
    const r = await run({ agents: 3, tasks: 4, steps: 3, stepMs: 200, ttl: 2, freeze: true, timeoutMs: 40_000 });
    expect(r.tasksDone).toBe(4);
    expect(r.done.every((d: unknown) => d !== undefined)).toBe(true);
    expect(r.frozen?.phase).toBe('killed');
    const refusal = r.refused.find((x: { agent: string }) => x.agent === r.frozen?.name);
    expect(refusal).toMatchObject({ task: r.frozen?.task, epoch: r.frozen?.epoch, code: 'lease_lost' });
    const takeover = r.takeovers.find((t: { task: number }) => t.task === r.frozen?.task);
    expect(takeover?.to.epoch).toBeGreaterThan(r.frozen?.epoch ?? 0);
    // The frozen task was finished by another agent, under the newer epoch.
    const finished = r.done[r.frozen?.task ?? -1] as { by: string; epoch: number };
    expect(finished.by).not.toBe(r.frozen?.name);
    expect(finished.epoch).toBeGreaterThan(r.frozen?.epoch ?? 0);
  }, 60_000);
});
