/** `parley queue …` (the real binary against a real server): enqueue, take, heartbeat, complete once, fail, list. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parley, type Started, startParley } from './http-harness.js';

let p: Started;
let env: Record<string, string>;
const cli = (...args: string[]) => parley(args, env);
const json = async (...args: string[]) => {
  const r = await cli('--output', 'json', ...args);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
};
const Q = ['-n', 'work', '-q', 'emails'];

beforeAll(async () => {
  p = await startParley();
  env = { PARLEY_ENDPOINT: p.url, PARLEY_OWNER: 'worker-1' };
});
afterAll(async () => {
  await p?.close();
});

describe('parley queue', () => {
  it('enqueue, take, heartbeat, complete once (exit 4 the second time), fail, list, stats', async () => {
    const first = await json('queue', 'enqueue', ...Q, '-i', '{"to":"a"}', '-k', 'welcome-a');
    expect(first).toEqual({ id: '0', created: true });
    expect(await json('queue', 'enqueue', ...Q, '-i', '{"to":"a"}', '-k', 'welcome-a')).toEqual({
      id: '0',
      created: false,
    });
    await json('queue', 'enqueue', ...Q, '-i', '{"to":"b"}');
    const { task } = await json('queue', 'take', ...Q, '-t', '30');
    expect(task).toMatchObject({ id: '0', item: { to: 'a' }, attempt: 1, holder: 'worker-1' });
    const onIt = ['--id', task.id, '--fence', String(task.fence)];
    expect(await json('queue', 'heartbeat', ...Q, ...onIt, '-t', '60')).toMatchObject({ status: 'taken' });
    expect(await json('queue', 'complete', ...Q, ...onIt, '-r', '{"sent":true}')).toMatchObject({
      status: 'done',
      result: { sent: true },
    });
    const again = await cli('queue', 'complete', ...Q, ...onIt);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('lease_lost');

    const human = await cli('queue', 'take', ...Q, '--holder', 'worker-2');
    expect(human.stdout).toMatch(/^task 1 attempt 1 fence \d+ until .* item \{"to":"b"\}/);
    const fence = /fence (\d+)/.exec(human.stdout)?.[1] as string;
    const failed = await json(
      'queue',
      'fail',
      ...Q,
      '--id',
      '1',
      '--holder',
      'worker-2',
      '--fence',
      fence,
      '--reason',
      '"down"',
    );
    expect(failed).toMatchObject({ status: 'ready', error: 'down', attempts: 1 });
    expect((await cli('queue', 'stats', ...Q)).stdout.trim()).toBe('ready 1 taken 0 done 1 dead 0');
    const page = await json('queue', 'list', ...Q, '-s', 'done');
    expect(page.items.map((t: { id: string }) => t.id)).toEqual(['0']);
    expect((await cli('queue', 'take', '-n', 'work', '-q', 'empty')).stdout.trim()).toBe('none');
    expect((await cli('queue', 'take', ...Q, '-t', 'soon')).code).toBe(2);
  });
});
