#!/usr/bin/env node
// parley: the command line of a Parley node (docs/cli.md), as the `parley` package installs it.
import { main } from '@parley/cli';

process.exitCode = await main(process.argv);
