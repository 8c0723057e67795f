/**
 * Watch streams: the stream cap, early events, ending a stream with a reason,
 * unsubscribing when the reader leaves, and the event ids of strong watches.
 *
 * A strong change's event id is `revision:offset` — the offset is its place
 * among the stream's changes at that revision (a deleteNamespace puts
 * up to 1,000 at one), counted from 0 — so `Last-Event-ID` names one change
 * and a stream cut inside a revision resumes after exactly the changes the
 * reader has. A plain revision (`42`, what ids were before, and
 * `from_revision`) resumes after the whole revision. Offsets hold for the
 * same namespace and prefix: every node replays a revision's changes in the
 * order they were applied.
 */
import { isParleyError, ParleyError, type Unsubscribe } from '@parley/interface';
import type { StrongChange } from '@parley/node';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../errors.js';
import { SseStream } from '../sse.js';
import { wireEntry } from '../wire.js';
import { checkWatchQuery, intInRange, type ListQueryText } from './query.js';
import type { RouteDeps } from './types.js';

export type Emit = (event: string, data: unknown, id?: string | number) => void;
/** Ends the stream with an `error` event `{error, msg}` (after what was emitted before). */
export type End = (error: string, msg: string) => void;

export function openWatch(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: RouteDeps,
  subscribe: (emit: Emit, end: End) => Unsubscribe,
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
  let ended: [string, string] | undefined;
  const early: Array<Parameters<Emit>> = [];
  // Subscribe before the stream opens, so a node error is still a typed envelope.
  const unsubscribe = subscribe(
    (event, data, id) => {
      if (stream !== undefined) stream.send(event, data, id);
      else if (early.length < deps.sse.maxEarlyEvents) early.push([event, data, id]);
      else overflow = true;
    },
    (error, msg) => {
      if (stream !== undefined) stream.end(error, msg);
      else ended ??= [error, msg];
    },
  );
  const opened = new SseStream(request, reply, deps.sse);
  deps.streams.add(opened);
  deps.metrics.watchStreams.set(deps.streams.size);
  opened.onClose(() => {
    unsubscribe();
    deps.streams.delete(opened);
    deps.metrics.watchStreams.set(deps.streams.size);
  });
  for (const [event, data, id] of early.splice(0)) opened.send(event, data, id);
  if (overflow)
    opened.end('unavailable', `more than ${deps.sse.maxEarlyEvents} events to replay: resume from the last id`);
  else if (ended) opened.end(...ended);
  else stream = opened;
  return undefined;
}

/** Where a strong watch resumes: after revision `after`, and after the first `skip` changes of revision `after + 1`. */
export interface ResumePoint {
  after: number;
  skip: number;
}

const EVENT_ID = /^(\d{1,16})(?::(\d{1,9}))?$/;

/** `42` (after all of revision 42) or `42:3` (after the change at offset 3 of revision 42). */
export function parseEventId(text: string): ResumePoint {
  const m = EVENT_ID.exec(text.trim());
  const revision = m ? Number(m[1]) : Number.NaN;
  if (!m || !Number.isSafeInteger(revision)) {
    throw new HttpError('invalid_argument', 'Last-Event-ID must be a revision (42) or an event id (42:3)');
  }
  if (m[2] === undefined) return { after: revision, skip: 0 };
  if (revision < 1) throw new HttpError('invalid_argument', 'an event id names a revision ≥ 1');
  return { after: revision - 1, skip: Number(m[2]) + 1 };
}

/** `GET /api/v1/distributed-state/{ns}?watch=true`: resumes from `from_revision` or `Last-Event-ID`. */
export function watchStrong(
  request: FastifyRequest,
  reply: FastifyReply,
  ns: string,
  query: ListQueryText,
  deps: RouteDeps,
): FastifyReply | undefined {
  checkWatchQuery(query);
  const lastEventId = request.headers['last-event-id'];
  let resume: ResumePoint | undefined;
  if (query.from_revision !== undefined) {
    resume = { after: intInRange('from_revision', query.from_revision, 0, Number.MAX_SAFE_INTEGER), skip: 0 };
  } else if (typeof lastEventId === 'string' && lastEventId !== '') resume = parseEventId(lastEventId);
  return openWatch(request, reply, deps, (emit, end) => {
    // The node replays whole revisions: count each revision's changes to name them and to skip what the reader has.
    let revision = 0;
    let offset = 0;
    const onChange = (change: StrongChange) => {
      if (change.revision !== revision) {
        revision = change.revision;
        offset = 0;
      } else offset++;
      if (resume && change.revision === resume.after + 1 && offset < resume.skip) return;
      emit(
        change.type,
        {
          namespace: change.namespace,
          key: change.key,
          type: change.type,
          revision: change.revision,
          entry: change.entry === undefined ? null : wireEntry(change.entry),
        },
        `${change.revision}:${offset}`,
      );
    };
    const onError = (err: ParleyError) =>
      end(err.code, `${err.message}: watch again without a resume point, then list`);
    try {
      return deps.node
        .strong(ns)
        .watch({ prefix: query.prefix, ...(resume ? { fromRevision: resume.after } : {}), onError }, onChange);
    } catch (err) {
      // A resume point older than the kept history is the caller's to handle (watch again, then list): 410, not 500.
      if (isParleyError(err, 'compacted')) {
        throw new ParleyError(
          'compacted',
          `changes after revision ${resume?.after} are no longer kept: watch without a resume point, then list the namespace`,
          err.details,
        );
      }
      throw err;
    }
  });
}
