/**
 * @parley/node: the strong-call protocol (strong/wire.ts: requests and change
 * pages) and the eventual protocol (eventual/wire.ts: gossip batches and
 * requests; eventual/persist.ts: checksummed records).
 */
import { DecodeError } from '@parley/interface';
import {
  appendChecksum,
  type ChangesPage,
  decodeChanges,
  decodeGossip,
  decodeEventualRequest as decodeRequest,
  decodeStrongRequest,
  encodeChanges,
  encodeGossip,
  encodeEventualRequest as encodeRequest,
  encodeStrongRequest,
  MAX_CHANGES_PER_PAGE,
  MAX_WAIT_MS,
  type StrongRequest,
  stripChecksum,
} from '@parley/node/codec';
import type { Gen } from '../gen.js';
import type { Target } from '../target.js';
import { command } from './coord.js';

function strongRequest(g: Gen): StrongRequest {
  const timeoutMs = g.uintIn(0, MAX_WAIT_MS);
  switch (g.int(5)) {
    case 0:
    case 1: {
      const { nowMs: _stamped, ...rest } = command(g);
      return { kind: g.bool() ? 'write' : 'read', timeoutMs, command: rest };
    }
    case 2:
      return { kind: 'register', timeoutMs };
    case 3:
      return {
        kind: 'admin',
        timeoutMs,
        action: g.pick(['addVoter', 'addLearner', 'removeNode', 'transferLeadership'] as const),
        peer: g.id(g.bool(0.1) ? 256 : 52),
      };
    default:
      return {
        kind: 'changes',
        timeoutMs,
        fromRevision: g.uint(),
        namespace: g.string(64),
        prefix: g.bool() ? g.string(32) : undefined,
        limit: g.uintIn(0, MAX_CHANGES_PER_PAGE),
      };
  }
}

function changesPage(g: Gen): ChangesPage {
  const n = g.size(MAX_CHANGES_PER_PAGE);
  const changes = Array.from({ length: n }, () => {
    const type = g.pick(['set', 'delete', 'expire'] as const);
    const c: ChangesPage['changes'][number] = { namespace: g.string(32), key: g.string(32), type, revision: g.uint() };
    if (type === 'set') {
      c.entry = {
        namespace: c.namespace,
        key: c.key,
        value: g.json(64, 100),
        version: g.string(20),
        ttlSeconds: g.int(2_592_001),
        createdAt: g.uint(),
        updatedAt: g.uint(),
        expiresAt: g.uint(),
      } as NonNullable<typeof c.entry>;
    }
    return c;
  });
  return { changes, revision: g.uint() };
}

export const nodeTargets: Target[] = [
  {
    name: 'node.strong.decodeRequest',
    codes: ['decode_error'],
    generate: strongRequest,
    encode: (r: StrongRequest) => encodeStrongRequest(r),
    decode: decodeStrongRequest,
  } satisfies Target<StrongRequest>,
  {
    name: 'node.strong.decodeChanges',
    codes: ['decode_error'],
    jsonStart: 0,
    share: 0.15,
    generate: changesPage,
    encode: (p: ChangesPage) => encodeChanges(p),
    decode: decodeChanges,
  } satisfies Target<ChangesPage>,
  {
    name: 'node.eventual.decodeGossip',
    codes: ['decode_error'],
    generate: (g: Gen) => Array.from({ length: g.size(64) }, () => g.blob(g.bool(0.01) ? 1 << 18 : 512)),
    encode: (deltas: Uint8Array[]) => encodeGossip(deltas),
    decode: decodeGossip,
  } satisfies Target<Uint8Array[]>,
  {
    name: 'node.eventual.decodeRequest',
    codes: ['decode_error'],
    generate: (g: Gen) => ({ tag: g.pick([1, 2, 3]), body: g.blob(2048) }),
    encode: (r: { tag: number; body: Uint8Array }) => encodeRequest(r.tag, r.body),
    decode: decodeRequest,
  } satisfies Target<{ tag: number; body: Uint8Array }>,
  {
    name: 'node.eventual.stripChecksum',
    codes: ['decode_error'],
    generate: (g: Gen) => g.blob(4096),
    encode: (payload: Uint8Array) => appendChecksum(payload),
    decode: (b: Uint8Array) => {
      const payload = stripChecksum(b);
      // A failed checksum is reported as undefined (a torn write); this target calls that a typed rejection.
      if (payload === undefined) throw new DecodeError('checksum mismatch');
      return payload;
    },
  } satisfies Target<Uint8Array>,
];
