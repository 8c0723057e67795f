/**
 * The `parley` command: every subcommand speaks to a node's HTTP API
 * (`--endpoint`, default http://127.0.0.1:4000, token from PARLEY_API_TOKEN),
 * except `serve` and `cluster up`, which start nodes. Exit codes: exit-codes.ts.
 */

import { isParleyError } from '@parley/interface';
import { Command, CommanderError } from 'commander';
import { ApiError, UsageError } from './client.js';
import { clusterCommands } from './commands/cluster.js';
import { coordinationCommands } from './commands/coordination.js';
import { lockCommands } from './commands/locks.js';
import { queueCommands } from './commands/queue.js';
import { replicatedCommands } from './commands/replicated.js';
import { serveCommand } from './commands/serve.js';
import { stateCommands } from './commands/state.js';
import { statusCommand } from './commands/status.js';
import { completionCommand } from './completion.js';
import { caOf, endpointOf } from './context.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { addExamples, HELP_CONFIG } from './help.js';

export function buildProgram(): Command {
  const program = new Command()
    .name('parley')
    .description('Replicated state for processes that share work: strong entries, locks, replicated entries.')
    .version('0.1.0')
    .configureHelp(HELP_CONFIG)
    .option('--output <format>', 'json, table, or value (get and list: the values alone)', 'table')
    .option('--print-value-only', 'the same as --output value')
    .option(
      '-e, --endpoint <url>',
      'the node HTTP API, a URL or host:port (default $PARLEY_ENDPOINT or http://127.0.0.1:4000)',
    )
    .option(
      '--cacert <file>',
      'trust this CA (PEM) for an https:// endpoint, e.g. a self-signed node (default $PARLEY_CACERT)',
    )
    .showHelpAfterError()
    .exitOverride();
  stateCommands(program);
  lockCommands(program);
  coordinationCommands(program);
  queueCommands(program);
  replicatedCommands(program);
  statusCommand(program);
  serveCommand(program);
  clusterCommands(program);
  program // `parley mcp` lives in @parley/mcp (docs/mcp.md), loaded on use: MCP over stdio; without --endpoint it embeds a node.
    .command('mcp')
    .description('serve the Model Context Protocol over stdio (a running node with --endpoint, else an embedded one)')
    .option('-d, --data-dir <dir>', 'data dir of the embedded node', './.parley')
    .action(async (o: { dataDir: string }) => {
      const globals = program.opts<{ endpoint?: string; cacert?: string }>();
      const endpoint = endpointOf(globals.endpoint);
      const ca = caOf(globals.cacert);
      const { runMcp } = await import('@parley/mcp');
      await runMcp({ endpoint, dataDir: o.dataDir, ...(ca ? { ca } : {}) });
    });
  completionCommand(program);
  addExamples(program);
  for (const command of program.commands) {
    command.exitOverride();
    for (const sub of command.commands) sub.exitOverride();
  }
  return program;
}

function wantsJson(argv: string[]): boolean {
  const i = argv.indexOf('--output');
  return (i >= 0 && argv[i + 1] === 'json') || argv.includes('--output=json');
}

/** Runs the command line; resolves to the exit code. */
export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') {
        return EXIT.ok;
      }
      return EXIT.usage;
    }
    if (err instanceof ApiError) {
      if (wantsJson(argv)) process.stderr.write(`${JSON.stringify(err.body)}\n`);
      else
        process.stderr.write(
          `error: ${err.body.status > 0 ? `${err.body.status} ` : ''}${err.body.error}: ${err.body.msg}\n`,
        );
      return err.exitCode;
    }
    if (isParleyError(err)) {
      // From `serve` or `cluster up`, which run a node in this process.
      process.stderr.write(`error: ${err.code}: ${err.message}\n`);
      return exitCodeOf(err.code);
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      return EXIT.usage;
    }
    process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    return EXIT.failure;
  }
}
