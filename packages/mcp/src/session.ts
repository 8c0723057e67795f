/**
 * Holders bound to the MCP session: each `parley mcp` session mints a secret
 * holder name (`mcp:` and 144 random bits) that its lease, lock and queue
 * tools use when the agent names none. Another agent cannot renew, release or
 * complete what this session holds by guessing a name, and a name of the
 * `mcp:` form that is not this session's own is refused, so one read from
 * `lease_status` cannot be replayed through MCP either. An explicit holder of
 * any other form still works (a relay that attaches to a lease by name).
 */
import { randomBytes } from 'node:crypto';
import { ToolError } from './errors.js';

export const SESSION_HOLDER_PREFIX = 'mcp:';

/** A fresh secret holder name for one MCP session. */
export function mintSessionHolder(): string {
  return `${SESSION_HOLDER_PREFIX}${randomBytes(18).toString('base64url')}`;
}

/** The holder a tool call acts as: the one it names, else the session's own. */
export function holderFor(session: string, named: string | undefined, argument = 'holder'): string {
  if (named === undefined) return session;
  if (named.startsWith(SESSION_HOLDER_PREFIX) && named !== session) {
    throw new ToolError(
      'invalid_argument',
      400,
      `${argument} names another MCP session's holder; leave ${argument} out to act as this session`,
    );
  }
  return named;
}
