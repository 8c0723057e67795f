/**
 * Leases and locks an agent can keep an eye on without polling:
 *
 * - tools `lease_status {namespace, key}` and `lock_inspect {namespace, key}`:
 *   who holds it, until when, and a `status` (lease: `held`, `expired`,
 *   `released`, `absent`; lock: `held`, `free`);
 * - subscribable resources `parley://lease/{namespace}/{key}` and
 *   `parley://lock/{namespace}/{key}` (components percent-encoded): after
 *   `resources/subscribe`, this server checks each subscribed one every
 *   `pollMs` and sends `notifications/resources/updated` when it is lost,
 *   expires, is released or changes holder (its status, holder or
 *   epoch/fence changed) — a renewal alone is no news;
 * - a subscribable `parley://queue/{namespace}/{queue}` (its counts by
 *   status), news when a task arrives or comes back (ready or total up).
 *
 * The server speaks HTTP to the node like every tool, so it checks rather
 * than listens: the agent is told within `pollMs` (default 1 s) of a change.
 */
import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ErrorCode,
  McpError,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { NAMESPACE_NAME_RE } from '@parley/node';
import * as z from 'zod';
import { strict } from './arguments.js';
import { ToolError } from './errors.js';
import { type NodeClient, path } from './http.js';

export const DEFAULT_WATCH_POLL_MS = 1_000;
/** Subscriptions one MCP session may hold. */
export const MAX_SUBSCRIPTIONS = 100;

export interface WatchOptions {
  /** How often subscribed leases and locks are checked (default 1 s). */
  pollMs?: number;
}

const NAMESPACE = z
  .string()
  .regex(NAMESPACE_NAME_RE)
  .describe('Namespace: 1-128 letters, digits, ".", "_", "-", starting alphanumeric');
const KEY = z.string().min(1).max(1024).describe('Key: 1-1024 characters, no control characters');

type Kind = 'lease' | 'lock' | 'queue';

interface LeaseDoc {
  epoch: number;
  holder: string | null;
  /** ISO time. */
  deadline_at: string;
  state?: unknown;
}

interface LockDoc {
  held: boolean;
  holder: { owner: string; fence: number; expires_at: string } | null;
  last_fence: number;
  waiters: number;
}

interface QueueCounts {
  ready: number;
  taken: number;
  done: number;
  dead: number;
}

/** A lease or lock as an agent needs it, with a status; a queue's counts by status. */
export async function inspect(node: NodeClient, kind: Kind, ns: string, key: string, signal?: AbortSignal) {
  const opts = signal ? { signal } : {};
  if (kind === 'queue') {
    const counts = await node.call<QueueCounts>('GET', path('queues', ns, key), undefined, opts);
    return { ...counts, namespace: ns, queue: key };
  }
  if (kind === 'lease') {
    let doc: LeaseDoc;
    try {
      doc = await node.call<LeaseDoc>('GET', path('leases', ns, key), undefined, opts);
    } catch (err) {
      if (err instanceof ToolError && err.code === 'key_not_found') {
        return { namespace: ns, key, status: 'absent' as const, holder: null, epoch: null };
      }
      throw err;
    }
    const status = doc.holder === null ? 'released' : Date.parse(doc.deadline_at) > Date.now() ? 'held' : 'expired';
    return { namespace: ns, key, status, ...doc };
  }
  const lock = await node.call<LockDoc>('GET', path('locks', ns, key), undefined, opts);
  return { namespace: ns, key, status: lock.held ? ('held' as const) : ('free' as const), ...lock };
}

/**
 * What a subscriber is told about: of a lease or lock its status, holder, epoch or fence
 * (not a renewal); of a queue a task that arrived or came back (ready or total count up).
 */
function isNews(kind: Kind, before: Awaited<ReturnType<typeof inspect>>, now: Awaited<ReturnType<typeof inspect>>) {
  if (kind === 'queue') {
    const [b, n] = [before as unknown as QueueCounts, now as unknown as QueueCounts];
    const total = (c: QueueCounts) => c.ready + c.taken + c.done + c.dead;
    return n.ready > b.ready || total(n) > total(b);
  }
  return fingerprint(before) !== fingerprint(now);
}

function fingerprint(v: Awaited<ReturnType<typeof inspect>>): string {
  const r = v as Record<string, unknown>;
  const holder = r.holder as { owner?: string; fence?: number } | string | null;
  if (typeof holder === 'object' && holder !== null) return JSON.stringify([r.status, holder.owner, holder.fence]);
  return JSON.stringify([r.status, holder, r.epoch ?? null]);
}

function uriOf(kind: Kind, ns: string, key: string): string {
  return `parley://${kind}/${encodeURIComponent(ns)}/${encodeURIComponent(key)}`;
}

function parseUri(uri: string): { kind: Kind; ns: string; key: string } | undefined {
  const m = /^parley:\/\/(lease|lock|queue)\/([^/]+)\/([^/]+)$/.exec(uri);
  if (!m) return undefined;
  try {
    return { kind: m[1] as Kind, ns: decodeURIComponent(m[2] as string), key: decodeURIComponent(m[3] as string) };
  } catch {
    return undefined;
  }
}

function one(v: string | string[] | undefined): string {
  return decodeURIComponent((Array.isArray(v) ? v[0] : v) ?? '');
}

export function registerWatch(server: McpServer, node: NodeClient, options: WatchOptions = {}): void {
  const pollMs = options.pollMs ?? DEFAULT_WATCH_POLL_MS;
  const text = (data: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(data) }] });
  const failed = (err: unknown) => {
    const e = err instanceof ToolError ? err : new ToolError('internal', 500, (err as Error).message);
    return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(e.toJSON()) }] };
  };
  for (const kind of ['lease', 'lock'] as const) {
    const tool = kind === 'lease' ? 'lease_status' : 'lock_inspect';
    server.registerTool(
      tool,
      {
        description:
          kind === 'lease'
            ? 'Who holds a lease and until when: {status: held|expired|released|absent, holder, epoch, deadline_at, state}. ' +
              `Subscribe to ${uriOf('lease', '{namespace}', '{key}')} to be told when it is lost or changes holder.`
            : 'Who holds a lock: {status: held|free, holder: {owner, fence, expires_at}, last_fence, waiters}. ' +
              `Subscribe to ${uriOf('lock', '{namespace}', '{key}')} to be told when it is lost or changes holder.`,
        inputSchema: strict({ namespace: NAMESPACE, key: KEY }),
        annotations: { readOnlyHint: true },
      },
      async ({ namespace, key }, extra) => {
        try {
          return text(await inspect(node, kind, namespace, key, extra.signal));
        } catch (err) {
          return failed(err);
        }
      },
    );
    server.registerResource(
      kind,
      new ResourceTemplate(`parley://${kind}/{namespace}/{key}`, { list: undefined }),
      {
        description: `A ${kind} (subscribable: notifications/resources/updated when it is lost, expires or changes holder)`,
        mimeType: 'application/json',
      },
      async (uri, vars, extra) => {
        const data = await inspect(node, kind, one(vars.namespace), one(vars.key), extra.signal);
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(data) }] };
      },
    );
  }

  server.registerResource(
    'queue',
    new ResourceTemplate('parley://queue/{namespace}/{queue}', { list: undefined }),
    {
      description:
        'A work queue’s counts {ready, taken, done, dead} (subscribable: notifications/resources/updated when a task arrives or comes back)',
      mimeType: 'application/json',
    },
    async (uri, vars, extra) => {
      const data = await inspect(node, 'queue', one(vars.namespace), one(vars.queue), extra.signal);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(data) }] };
    },
  );

  // ------------------------------------------------------------ subscriptions
  type Seen = Awaited<ReturnType<typeof inspect>>;
  const subscribed = new Map<string, { kind: Kind; ns: string; key: string; seen: Seen }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const check = async () => {
    timer = undefined;
    for (const [uri, s] of subscribed) {
      try {
        const now = await inspect(node, s.kind, s.ns, s.key);
        if (!subscribed.has(uri)) continue;
        const news = isNews(s.kind, s.seen, now);
        s.seen = now;
        if (news) await server.server.sendResourceUpdated({ uri });
      } catch {
        // the node is unreachable for now: checked again next round
      }
    }
    schedule();
  };
  const schedule = () => {
    if (closed || timer !== undefined || subscribed.size === 0) return;
    timer = setTimeout(() => void check(), pollMs);
    timer.unref?.();
  };
  server.server.registerCapabilities({ resources: { subscribe: true } });
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const target = parseUri(request.params.uri);
    if (!target) {
      throw new McpError(
        ErrorCode.InvalidParams,
        'only parley://lease/{namespace}/{key}, parley://lock/{namespace}/{key} and parley://queue/{namespace}/{queue} can be subscribed',
      );
    }
    if (!subscribed.has(request.params.uri) && subscribed.size >= MAX_SUBSCRIPTIONS) {
      throw new McpError(ErrorCode.InvalidParams, `at most ${MAX_SUBSCRIPTIONS} subscriptions per session`);
    }
    const seen = await inspect(node, target.kind, target.ns, target.key);
    subscribed.set(request.params.uri, { ...target, seen });
    schedule();
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscribed.delete(request.params.uri);
    return {};
  });
  const previous = server.server.onclose;
  server.server.onclose = () => {
    closed = true;
    subscribed.clear();
    if (timer !== undefined) clearTimeout(timer);
    previous?.();
  };
}
