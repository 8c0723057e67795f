/**
 * LangGraph's checkpoint conformance suite, unmodified, against ParleySaver on
 * a node of one voter. The suite is written for vitest's globals (its own CLI
 * runs vitest with `globals: true`), so they are provided before it loads.
 */

import type { ParleyNodeInternals } from '@parley/node/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ParleySaver } from './saver.js';
import { memoryNode } from './testing.js';

Object.assign(globalThis, { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it });
const { specTest, deltaChannelHistoryTests } = await import('@langchain/langgraph-checkpoint-validation');

let node: ParleyNodeInternals | undefined;
let instances = 0;

const initializer = {
  checkpointerName: '@parley/langgraph',
  beforeAllTimeout: 30_000,
  async beforeAll() {
    node = await memoryNode();
  },
  async afterAll() {
    await node?.close();
  },
  // Each saver gets namespaces of its own, so no saver reads another's threads.
  createCheckpointer() {
    if (!node) throw new Error('no node');
    return new ParleySaver({ node, namespace: `validation-${++instances}` });
  },
  async destroyCheckpointer(saver: ParleySaver) {
    await saver.close();
  },
};

specTest(initializer);
deltaChannelHistoryTests(initializer);
