/** The API examples (the HTTP and CLI contract) against `parley serve` on the built-in Raft backend. */
import { describe } from 'vitest';
import { apiExamplesSuite } from './api-examples.js';
import { raftBackend } from './backends.js';

describe('seed 000 on the built-in backend', () => {
  apiExamplesSuite(raftBackend);
});
