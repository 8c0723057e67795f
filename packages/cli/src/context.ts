/** What every command reads from the global options and the environment. */
import type { Command } from 'commander';
import { ApiClient, UsageError } from './client.js';
import { parseEndpoint } from './endpoint.js';
import { type Out, type OutputFormat, processOut } from './output.js';

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4000';

export interface GlobalOptions {
  output: OutputFormat;
  endpoint?: string;
}

export interface Ctx {
  client: ApiClient;
  out: Out;
}

export function ctxOf(command: Command): Ctx {
  const globals = command.optsWithGlobals<GlobalOptions>();
  if (globals.output !== 'json' && globals.output !== 'table') {
    throw new UsageError(`--output must be json or table, not '${globals.output}'`);
  }
  const endpoint = endpointOf(globals.endpoint) ?? DEFAULT_ENDPOINT;
  return {
    client: new ApiClient({ endpoint, token: process.env.PARLEY_API_TOKEN }),
    out: processOut(globals.output),
  };
}

/** The node's base URL from `--endpoint`, else PARLEY_ENDPOINT (a URL or host:port); undefined if neither is set. */
export function endpointOf(flag: string | undefined): string | undefined {
  if (flag !== undefined) return parseEndpoint('--endpoint', flag);
  const env = process.env.PARLEY_ENDPOINT;
  return env === undefined || env === '' ? undefined : parseEndpoint('PARLEY_ENDPOINT', env);
}

/** Parses a JSON flag value (values are JSON: a string is written '"text"'). */
export function parseJson(flag: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${flag} must be JSON (a string is written as '"text"'): ${text.slice(0, 80)}`);
  }
}

export function parseInteger(flag: string, text: string): number {
  if (!/^-?[0-9]{1,16}$/.test(text)) throw new UsageError(`${flag} must be an integer, not '${text}'`);
  return Number(text);
}
