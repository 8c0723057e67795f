#!/usr/bin/env node
// parley-check: linearizability checking of recorded histories (see docs/checkers.md).
import { main } from '../dist/cli/check.js';

await main();
