/** The seed-000 examples against `parley serve` on the built-in Raft backend. */
import { describe } from 'vitest';
import { raftBackend } from './backends.js';
import { seed000Suite } from './seed000.js';

describe('seed 000 on the built-in backend', () => {
  seed000Suite(raftBackend);
});
