/**
 * Ephemeral channels of an eventual namespace: best-effort messages among the
 * nodes that have the same channel open, on a gossip topic of its own
 * (`parley/eph/1/<namespace>/<channel>`). Nothing is persisted, acknowledged
 * or repaired by anti-entropy: a node that is apart when a message leaves
 * never sees it. Yjs awareness (who is in a document, their cursors) rides on
 * this between the nodes of a y-websocket room.
 *
 * Bounds: a channel name is 1..128 of `A-Z a-z 0-9 . _ : -`; a message is at
 * most MAX_EPHEMERAL_BYTES (a larger publish fails with `value_too_large`, a
 * larger incoming message is dropped). A node never receives its own messages.
 */
import { InvalidArgumentError, type PeerId, type Unsubscribe, ValueTooLargeError } from '@parley/interface';
import type { EphemeralChannel } from '../api.js';
import type { NodeContext } from '../context.js';

export const MAX_EPHEMERAL_BYTES = 256 * 1024;
const CHANNEL_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export function ephemeralTopic(namespace: string, channel: string): string {
  return `parley/eph/1/${namespace}/${channel}`;
}

export function openEphemeralChannel(ctx: NodeContext, namespace: string, channel: string): EphemeralChannel {
  if (typeof channel !== 'string' || !CHANNEL_RE.test(channel)) {
    throw new InvalidArgumentError('an ephemeral channel name is 1..128 letters, digits, ".", "_", ":" or "-"', {
      channel: typeof channel === 'string' ? channel.slice(0, 64) : null,
    });
  }
  const topic = ephemeralTopic(namespace, channel);
  return {
    name: channel,
    async publish(message: Uint8Array): Promise<void> {
      if (!(message instanceof Uint8Array)) throw new InvalidArgumentError('an ephemeral message is a Uint8Array');
      if (message.length > MAX_EPHEMERAL_BYTES) throw new ValueTooLargeError(message.length, MAX_EPHEMERAL_BYTES);
      await ctx.transport.publish(topic, message);
    },
    subscribe(handler: (from: PeerId, message: Uint8Array) => void): Unsubscribe {
      if (typeof handler !== 'function') throw new InvalidArgumentError('subscribe needs a function');
      return ctx.transport.subscribe(topic, (from, message) => {
        if (from === ctx.peerId || message.length > MAX_EPHEMERAL_BYTES) return;
        try {
          handler(from, message);
        } catch (err) {
          ctx.logger.warn({ err: String(err), namespace, channel }, 'eventual: ephemeral handler threw');
        }
      });
    },
  };
}
