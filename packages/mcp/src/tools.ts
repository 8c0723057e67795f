/**
 * The MCP tools: strong state (read, write, compare-and-swap, list), claims,
 * leases, locks and replicated (eventual) entries. Each has a JSON schema (from
 * zod) and answers either the node's JSON or a typed error (`errors.ts`).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { NAMESPACE_NAME_RE } from '@parley/node';
import * as z from 'zod';
import { strict } from './arguments.js';
import { ToolError } from './errors.js';
import { type NodeClient, path, query } from './http.js';
import { holderFor, mintSessionHolder } from './session.js';

const NAMESPACE = z
  .string()
  .regex(NAMESPACE_NAME_RE)
  .describe('Namespace: 1-128 letters, digits, ".", "_", "-", starting alphanumeric');
const KEY = z.string().min(1).max(1024).describe('Key: 1-1024 characters, no control characters');
const VALUE = z.unknown().describe('Any JSON value, at most 1 MiB');
const TTL = z.number().int().min(1).max(2_592_000).describe('Time to live in seconds (1 .. 30 days)');

/** How fresh a strong read must be: the HTTP query parameters of the same names (docs/mcp.md). */
const READ = {
  consistency: z
    .enum(['linearizable', 'serializable', 'bounded'])
    .optional()
    .describe(
      'linearizable (default: the leader confirms); serializable (the node answers from its copy, may be stale, never waits on the leader); bounded (with max_staleness_ms / max_lag_entries)',
    ),
  max_staleness_ms: z
    .number()
    .int()
    .min(0)
    .max(86_400_000)
    .optional()
    .describe('Bounded: the answer holds every write acknowledged this many ms before the call'),
  max_lag_entries: z
    .number()
    .int()
    .min(0)
    .max(1_000_000_000)
    .optional()
    .describe('Bounded: the answer misses at most this many log entries committed by then'),
};

/** The session argument of the tools whose node call takes one (docs/sessions.md); its result carries `session`. */
const SESSION = {
  session: z
    .string()
    .max(8192)
    .regex(/^[A-Za-z0-9_-]*$/)
    .optional()
    .describe(
      'A session token ("" to start one): read-your-writes and monotonic reads across calls and nodes. Pass the `session` of the previous result.',
    ),
};

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** While a call is in flight, a progress notification this often (when the client asked for progress). */
export const DEFAULT_PROGRESS_INTERVAL_MS = 10_000;

/** Options of the MCP tools (`createMcpServer(client, options)`). */
export interface ToolOptions {
  /** The holder (and lock owner) of calls that name none: the session's secret (`mintSessionHolder()`). */
  sessionHolder?: string;
  /** How often a long call sends a progress notification to a client that asked for progress; default DEFAULT_PROGRESS_INTERVAL_MS. */
  progressIntervalMs?: number;
}

/** A node call on behalf of one tool call: cancelled with it; `waitMs` is a blocking wait the node may hold. */
type Call = (method: string, path: string, body?: unknown, waitMs?: number) => Promise<unknown>;

/**
 * Runs a tool's node call and turns its answer or typed error into a tool result. The call is
 * aborted when the MCP client cancels the tool call (the node then ends its side: a lock granted
 * to a cancelled acquire is released). A client that sent a progress token gets a progress
 * notification every `progressIntervalMs` meanwhile, so one that resets its request timeout on
 * progress keeps waiting through a long lock wait.
 */
export async function answer(
  node: NodeClient,
  progressIntervalMs: number,
  extra: ToolExtra,
  fn: (call: Call) => Promise<unknown>,
  session?: string,
): Promise<CallToolResult> {
  // The token the node answered last, put in the result (also of a 404 read: what it saw counts).
  let answered: string | undefined;
  const onSession = (t: string) => {
    answered = t;
  };
  const token = extra._meta?.progressToken;
  let ticks = 0;
  const timer =
    token === undefined
      ? undefined
      : setInterval(() => {
          ticks++;
          void extra
            .sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: ticks, message: 'waiting for the node' },
            })
            .catch(() => {});
        }, progressIntervalMs);
  timer?.unref();
  try {
    const data = await fn((method, path, body, waitMs) =>
      node.call(method, path, body, {
        waitMs,
        signal: extra.signal,
        ...(session === undefined ? {} : { session: answered ?? session, onSession }),
      }),
    );
    const result = session === undefined ? data : { ...(data as object), session: answered ?? session };
    return { content: [{ type: 'text', text: JSON.stringify(result) }] };
  } catch (err) {
    const e = err instanceof ToolError ? err : new ToolError('internal', 500, (err as Error).message);
    const json = answered === undefined ? e.toJSON() : { ...e.toJSON(), session: answered };
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(json) }] };
  } finally {
    if (timer !== undefined) clearInterval(timer);
  }
}

/** A holder or owner argument: optional, this session's secret when left out (session.ts). */
export const HOLDER = z
  .string()
  .min(1)
  .max(256)
  .optional()
  .describe('Leave out to act as this MCP session (a secret holder only it can use); name one to act for a relay');

export function registerTools(server: McpServer, node: NodeClient, options: ToolOptions = {}): void {
  const every = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  const session = options.sessionHolder ?? mintSessionHolder();
  const as = (named: string | undefined, argument = 'holder') => holderFor(session, named, argument);
  // ------------------------------------------------------------ strong state
  server.registerTool(
    'state_get',
    {
      description:
        'Read a strong entry: {namespace, key, value, version, ttl_seconds, ...}; linearizable unless consistency says otherwise. Error key_not_found if absent; staleness_exceeded when a bounded read cannot be proven fresh enough.',
      inputSchema: strict({ namespace: NAMESPACE, key: KEY, ...READ, ...SESSION }),
    },
    ({ namespace, key, session, ...read }, extra) =>
      answer(
        node,
        every,
        extra,
        (call) => call('GET', path('distributed-state', namespace, key) + query(read)),
        session,
      ),
  );
  server.registerTool(
    'state_set',
    {
      description:
        'Write a strong entry. With if_version_matches it is a compare-and-swap (error version_mismatch: re-read and retry); with if_not_exists it only creates (error key_already_exists).',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        value: VALUE,
        ttl_seconds: TTL.optional(),
        if_version_matches: z.string().min(1).optional().describe('Write only if the current version is this one'),
        if_not_exists: z.boolean().optional().describe('Write only if the key does not exist'),
        ...SESSION,
      }),
    },
    ({ namespace, key, value, session, ...rest }, extra) =>
      answer(
        node,
        every,
        extra,
        (call) => call('POST', path('distributed-state', namespace, key), { value: value ?? null, ...rest }),
        session,
      ),
  );
  server.registerTool(
    'state_delete',
    {
      description: 'Delete a strong entry (optionally only at a version). Error key_not_found if absent.',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        if_version_matches: z.string().min(1).optional(),
        ...SESSION,
      }),
    },
    ({ namespace, key, if_version_matches, session }, extra) =>
      answer(
        node,
        every,
        extra,
        (call) => call('DELETE', path('distributed-state', namespace, key) + query({ if_version_matches })),
        session,
      ),
  );
  server.registerTool(
    'state_list',
    {
      description:
        'List a strong namespace: {items, next_cursor}. prefix keeps keys that start with it, q is a case-insensitive substring match; filter uses the grammar `status = "open" and attempts >= 3`.',
      inputSchema: strict({
        namespace: NAMESPACE,
        prefix: z.string().max(1024).optional().describe('Only keys that start with this (case-sensitive)'),
        q: z.string().max(1024).optional(),
        filter: z.string().max(1024).optional(),
        limit: z.number().int().min(1).max(1000).optional(),
        cursor: z.string().optional().describe('next_cursor of the previous page'),
        ...READ,
        ...SESSION,
      }),
    },
    ({ namespace, session, ...q }, extra) =>
      answer(node, every, extra, (call) => call('GET', path('distributed-state', namespace) + query(q)), session),
  );

  // ------------------------------------------------------------ claims and leases
  server.registerTool(
    'claim',
    {
      description:
        'Claim a key: exactly one caller wins. Answers {won, value, version}; losers see the winner’s value.',
      inputSchema: strict({ namespace: NAMESPACE, key: KEY, value: VALUE, ttl_seconds: TTL.optional(), ...SESSION }),
    },
    ({ namespace, key, value, ttl_seconds, session }, extra) =>
      answer(
        node,
        every,
        extra,
        (call) => call('POST', path('claims', namespace, key), { value: value ?? null, ttl_seconds }),
        session,
      ),
  );
  server.registerTool(
    'lease_acquire',
    {
      description:
        'Acquire a fenced lease: answers {epoch, holder, deadline_at, state}. Keep the epoch: renew before the TTL ends; writes with an older epoch are refused (lease_lost). Error lock_held while someone else holds it.',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        holder: HOLDER,
        ttl_seconds: TTL,
        state: VALUE.optional().describe('Initial state (kept from the last holder if omitted)'),
      }),
    },
    ({ namespace, key, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', path('leases', namespace, key), { holder: as(holder), ...body }),
      ),
  );
  const LEASE = {
    namespace: NAMESPACE,
    key: KEY,
    holder: HOLDER,
    epoch: z.number().int().min(1).describe('The epoch lease_acquire answered'),
  };
  server.registerTool(
    'lease_renew',
    {
      description: 'Renew your lease (heartbeat). Error lease_lost if a newer epoch exists: stop working on it.',
      inputSchema: strict({ ...LEASE, ttl_seconds: TTL.optional() }),
    },
    ({ namespace, key, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', path('leases', namespace, key, '/renew'), { holder: as(holder), ...body }),
      ),
  );
  server.registerTool(
    'lease_write',
    {
      description:
        'Fenced write of the lease state: accepted only from the current holder and epoch (else lease_lost).',
      inputSchema: strict({ ...LEASE, state: VALUE, if_version_matches: z.string().min(1).optional() }),
    },
    ({ namespace, key, state, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', path('leases', namespace, key, '/write'), { state: state ?? null, holder: as(holder), ...body }),
      ),
  );
  server.registerTool(
    'lease_release',
    {
      description: 'Release your lease, optionally writing a final state. Error lease_lost if you no longer hold it.',
      inputSchema: strict({ ...LEASE, state: VALUE.optional() }),
    },
    ({ namespace, key, holder, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', path('leases', namespace, key, '/release'), { holder: as(holder), ...body }),
      ),
  );

  // ------------------------------------------------------------ locks
  server.registerTool(
    'lock_acquire',
    {
      description:
        'Acquire a fenced lock: answers {owner, fence, expires_at}. Pass fence to state_set-style writes as a fence; error lock_held if held (and not granted within wait_seconds).',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        owner: HOLDER,
        ttl_seconds: z.number().int().min(1).max(3600).optional(),
        wait_seconds: z.number().int().min(0).max(300).optional().describe('Wait in the FIFO queue this long'),
        metadata: VALUE.optional(),
      }),
    },
    ({ namespace, key, owner, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call(
          'POST',
          path('locks', namespace, key),
          { owner: as(owner, 'owner'), ...body },
          (body.wait_seconds ?? 0) * 1000,
        ),
      ),
  );
  server.registerTool(
    'lock_renew',
    {
      description:
        'Extend a lock you hold (heartbeat): answers {owner, fence, expires_at}. Renew before expires_at; error lease_lost once the grant ended (expired or released: acquire again), lock_held if another owner holds it.',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        owner: HOLDER,
        fence: z.number().int().min(1).describe('The fence lock_acquire answered'),
        ttl_seconds: z.number().int().min(1).max(3600).optional().describe('New TTL from now (default: the grant’s)'),
      }),
    },
    ({ namespace, key, owner, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', path('locks', namespace, key, '/renew'), { owner: as(owner, 'owner'), ...body }),
      ),
  );
  server.registerTool(
    'lock_release',
    {
      description: 'Release a lock you hold: answers {released}. A stale fence never frees a newer holder.',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        owner: HOLDER,
        fence: z.number().int().min(1),
      }),
    },
    ({ namespace, key, owner, ...body }, extra) =>
      answer(node, every, extra, (call) =>
        call('POST', path('locks', namespace, key, '/release'), { owner: as(owner, 'owner'), ...body }),
      ),
  );

  // ------------------------------------------------------------ replicated (eventual)
  server.registerTool(
    'replicated_set',
    {
      description:
        'Write a replicated entry (CRDT, last writer wins): accepted locally even when offline, spread by gossip.',
      inputSchema: strict({ namespace: NAMESPACE, key: KEY, value: VALUE, ttl_seconds: TTL.optional(), ...SESSION }),
    },
    ({ namespace, key, value, ttl_seconds, session }, extra) =>
      answer(
        node,
        every,
        extra,
        (call) => call('POST', path('replicated', namespace, key), { value: value ?? null, ttl_seconds }),
        session,
      ),
  );
  server.registerTool(
    'replicated_get',
    {
      description: 'Read a replicated entry from this node. Error key_not_found if absent.',
      inputSchema: strict({ namespace: NAMESPACE, key: KEY, ...SESSION }),
    },
    ({ namespace, key, session }, extra) =>
      answer(node, every, extra, (call) => call('GET', path('replicated', namespace, key)), session),
  );
  server.registerTool(
    'replicated_increment',
    {
      description: 'Add to a replicated counter (PN-counter: concurrent increments add up). Negative by decrements.',
      inputSchema: strict({
        namespace: NAMESPACE,
        key: KEY,
        by: z.number().int().optional(),
        ttl_seconds: TTL.optional(),
        ...SESSION,
      }),
    },
    ({ namespace, key, session, ...body }, extra) =>
      answer(
        node,
        every,
        extra,
        (call) => call('POST', path('replicated', namespace, key, '/increment'), body),
        session,
      ),
  );
  server.registerTool(
    'replicated_list',
    {
      description: 'List a replicated namespace on this node: {items, next_cursor}.',
      inputSchema: strict({
        namespace: NAMESPACE,
        prefix: z.string().max(1024).optional().describe('Only keys that start with this (case-sensitive)'),
        q: z.string().max(1024).optional(),
        filter: z.string().max(1024).optional(),
        limit: z.number().int().min(1).max(1000).optional(),
        cursor: z.string().optional(),
      }),
    },
    ({ namespace, ...q }, extra) =>
      answer(node, every, extra, (call) => call('GET', path('replicated', namespace) + query(q))),
  );
}
