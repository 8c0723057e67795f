/**
 * Tool arguments: each tool's schema is strict (an argument the tool does not
 * take is refused, never silently dropped), and a call whose arguments fail
 * the schema gets the same `{error, status, message, retryable, hint}` JSON as
 * every other failure (`invalid_argument`), not the SDK's plain text.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import { ToolError } from './errors.js';

/** A tool's input schema from its fields: unknown arguments are an error. */
export const strict = <S extends z.ZodRawShape>(shape: S) => z.object(shape).strict();

const VALIDATION = /^(?:MCP error -?\d+: )?Input validation error: Invalid arguments for tool ([\w-]+): ([\s\S]*)$/;

/** zod's wording of a bound or a type, as the HTTP door words it. */
function plain(text: string): string {
  const bound = /^Too (big|small): expected \w+ to (?:be|have) [<>]=?(\S+)( characters| items)?.*$/.exec(text);
  if (bound) return `must be at ${bound[1] === 'big' ? 'most' : 'least'} ${bound[2]}${bound[3] ?? ''}`;
  const type = /^Invalid input: expected (\w+), received (\w+)$/.exec(text);
  if (type) return `must be ${type[1] === 'int' ? 'an integer' : `a ${type[1]}`} (got ${type[2]})`;
  const option = /^Invalid option: expected one of (.*)$/.exec(text);
  if (option) return `must be one of ${option[1]!.split('|').join(', ')}`;
  return text;
}

/** One zod issue line (`Unrecognized key: "x"`, `Too big: … at ttl_seconds`) in the words of the HTTP door. */
function issueText(line: string): string {
  const unknown = /^Unrecognized keys?: (.*)$/.exec(line);
  if (unknown) return `unknown argument ${unknown[1]}`;
  const at = /^(.*) at (\S+)$/.exec(line);
  return at ? `${at[2]} ${plain(at[1]!)}` : plain(line);
}

/**
 * The tool error of a failed call, from the SDK's message: validation failures become
 * `invalid_argument` with the tool and argument named; anything else the SDK refuses
 * (an unknown tool) is `invalid_argument` as well.
 */
export function toolErrorOf(message: string): ToolError {
  const v = VALIDATION.exec(message);
  if (v) {
    const issues = v[2]!
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(issueText);
    return new ToolError('invalid_argument', 400, `${v[1]}: ${issues.join('; ')}`);
  }
  return new ToolError('invalid_argument', 400, message.replace(/^MCP error -?\d+: /, ''));
}

/**
 * Makes the server answer argument failures as tool errors in Parley's shape. The SDK builds
 * those results in `createToolError(message)` (its own errors only: Parley's tools answer
 * their failures themselves); this replaces it on this instance.
 */
export function typedArgumentErrors(server: McpServer): void {
  const target = server as unknown as { createToolError: (message: string) => unknown };
  if (typeof target.createToolError !== 'function') {
    throw new Error('@modelcontextprotocol/sdk changed: McpServer.createToolError is gone (see arguments.ts)');
  }
  target.createToolError = (message: string) => ({
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(toolErrorOf(message).toJSON()) }],
  });
}
