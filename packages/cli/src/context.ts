/** What every command reads from the global options and the environment. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ApiClient, UsageError } from './client.js';
import { parseEndpoint } from './endpoint.js';
import { OUTPUT_FORMATS, type Out, type OutputFormat, processOut } from './output.js';
import { sessionFile } from './session-file.js';

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4000';

export interface GlobalOptions {
  output: OutputFormat;
  printValueOnly?: boolean;
  endpoint?: string;
  cacert?: string;
}

/** The CA certificates of `--cacert`, else PARLEY_CACERT (a PEM file); undefined if neither is set. */
export function caOf(flag: string | undefined): Buffer | undefined {
  const file = flag ?? (process.env.PARLEY_CACERT === '' ? undefined : process.env.PARLEY_CACERT);
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    const name = flag === undefined ? 'PARLEY_CACERT' : '--cacert';
    throw new UsageError(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

/** Commands whose answer holds entry values: the ones `--output value` applies to. */
const VALUE_COMMANDS = new Set([
  'distributed-state get',
  'distributed-state list',
  'replicated get',
  'replicated list',
]);

/** The output format of `command`, checked before any request (a write never runs under a format it cannot print). */
export function formatOf(command: Command): OutputFormat {
  const globals = command.optsWithGlobals<GlobalOptions>();
  const format = globals.printValueOnly === true ? 'value' : globals.output;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(format)) {
    throw new UsageError(`--output must be ${OUTPUT_FORMATS.join(', ')}, not '${format}'`);
  }
  const name = `${command.parent?.name() ?? ''} ${command.name()}`;
  if (format === 'value' && !VALUE_COMMANDS.has(name)) {
    throw new UsageError(
      `--output value (--print-value-only) applies to ${[...VALUE_COMMANDS].join(', ')}; not to ${name.trim()}`,
    );
  }
  return format;
}

export interface Ctx {
  client: ApiClient;
  out: Out;
}

export function ctxOf(command: Command): Ctx {
  const globals = command.optsWithGlobals<GlobalOptions>();
  const format = formatOf(command);
  const endpoint = endpointOf(globals.endpoint) ?? DEFAULT_ENDPOINT;
  // `--session` is an option of the commands whose calls take a session (session-file.ts).
  const file = command.opts<{ session?: string }>().session;
  return {
    client: new ApiClient({
      endpoint,
      token: process.env.PARLEY_API_TOKEN,
      ca: caOf(globals.cacert),
      ...(file === undefined ? {} : { session: sessionFile(file) }),
    }),
    out: processOut(format),
  };
}

/** The node's base URL from `--endpoint`, else PARLEY_ENDPOINT (a URL or host:port); undefined if neither is set. */
export function endpointOf(flag: string | undefined): string | undefined {
  if (flag !== undefined) return parseEndpoint('--endpoint', flag);
  const env = process.env.PARLEY_ENDPOINT;
  return env === undefined || env === '' ? undefined : parseEndpoint('PARLEY_ENDPOINT', env);
}

export function parseInteger(flag: string, text: string): number {
  if (!/^-?[0-9]{1,16}$/.test(text)) throw new UsageError(`${flag} must be an integer, not '${text}'`);
  return Number(text);
}
