/**
 * @parley/cli — the `parley` command (bin/parley.js) and its pieces, for
 * programs that want to run it in-process.
 *
 * @example
 * ```ts
 * import { main } from '@parley/cli';
 * process.exitCode = await main(['node', 'parley', '--output', 'json', 'distributed-state', 'get', '-n', 'deploy', '-k', 'status']);
 * ```
 */
export { ApiClient, ApiError, UsageError } from './client.js';
export { EXIT, exitCodeOf } from './exit-codes.js';
export { commandPath, EXAMPLES } from './help.js';
export { buildProgram, main } from './main.js';
