/** Opening a watch stream: the stream cap, early events, and unsubscribing when the reader leaves. */
import type { Unsubscribe } from '@parley/interface';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../errors.js';
import { SseStream } from '../sse.js';
import type { RouteDeps } from './types.js';

export type Emit = (event: string, data: unknown, id?: string | number) => void;

export function openWatch(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RouteDeps,
  subscribe: (emit: Emit) => Unsubscribe,
): FastifyReply | undefined {
  // HEAD answers the headers a watch would have, and opens nothing: no body may follow.
  if (request.method === 'HEAD') return reply.code(200).type('text/event-stream; charset=utf-8').send();
  if (deps.streams.size >= deps.maxWatchStreams) {
    throw new HttpError('too_many_streams', `at most ${deps.maxWatchStreams} watch streams may be open`, {
      'retry-after': '5',
    });
  }
  let stream: SseStream | undefined;
  let overflow = false;
  const early: Array<Parameters<Emit>> = [];
  // Subscribe before the stream opens, so a node error is still a typed envelope.
  const unsubscribe = subscribe((event, data, id) => {
    if (stream !== undefined) stream.send(event, data, id);
    else if (early.length < deps.sse.maxEarlyEvents) early.push([event, data, id]);
    else overflow = true;
  });
  const opened = new SseStream(request, reply, deps.sse);
  deps.streams.add(opened);
  deps.metrics.watchStreams.set(deps.streams.size);
  opened.onClose(() => {
    unsubscribe();
    deps.streams.delete(opened);
    deps.metrics.watchStreams.set(deps.streams.size);
  });
  for (const [event, data, id] of early.splice(0)) opened.send(event, data, id);
  if (overflow) opened.close();
  else stream = opened;
  return undefined;
}
