/** The strong conformance suite on the built-in backend: a Raft group of one per node. */
import { raftBackend } from './backends.js';
import { strongConformance } from './suite/index.js';

strongConformance(raftBackend);
