#!/usr/bin/env node
// parley-sim: runs simulation scenarios over many seeds (see docs/simulation.md).
import { main } from '../dist/cli.js';

process.exitCode = await main();
