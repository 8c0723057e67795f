#!/usr/bin/env node
// parley: the command line of a Parley node (see docs/cli.md). Runs the built package (npm ci builds it).
import { main } from '../dist/main.js';

process.exitCode = await main(process.argv);
