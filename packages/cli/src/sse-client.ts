/**
 * Reads a watch stream and prints one JSON line per event until the user ends
 * it. A strong watch (`resume`) that the server or the network cuts opens
 * again with `Last-Event-ID` (an id names one change, so no change is lost or
 * printed twice, even inside a revision) and goes on; it ends on `compacted`
 * (the changes after the last id are gone: list, then watch again) or when it
 * cannot reconnect. A replicated watch has no ids: a cut ends it with
 * `unavailable`, since changes may have been missed.
 */
import { type ApiClient, ApiError, type StreamResponse } from './client.js';
import type { Out } from './output.js';

/** One event may not exceed this; a longer line means a broken stream. */
const MAX_EVENT_BYTES = 4 * 1_048_576;
/** Consecutive reconnects that deliver nothing before the watch gives up. */
const MAX_RECONNECTS = 8;
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 3_000;
/** Codes on which reopening the stream may succeed. */
const RETRY_CODES = new Set(['unavailable', 'not_leader', 'timeout', 'closed', 'too_many_streams']);

export interface StreamOptions {
  /** Reconnect with Last-Event-ID after a cut (strong watches). */
  resume: boolean;
  /** Resume after this event id or revision (the first connection's Last-Event-ID). */
  after?: string;
  /** Notes to the user (reconnects); stdout stays one JSON event per line. */
  note?: (text: string) => void;
}

interface Parsed {
  event: string;
  id: string | undefined;
  data: Record<string, unknown>;
}

/** Why one connection ended. */
type Ending = { kind: 'cut'; reason: string } | { kind: 'error'; code: string; msg: string };

export async function streamEvents(
  client: ApiClient,
  path: string,
  query: Record<string, string | number | undefined>,
  out: Out,
  options: StreamOptions = { resume: false },
): Promise<void> {
  let lastId = options.after;
  let failures = 0;
  for (;;) {
    let delivered = 0;
    let ending: Ending;
    try {
      const headers: Record<string, string> = lastId === undefined ? {} : { 'last-event-id': lastId };
      const response = await client.stream(path, query, headers);
      ending = await readEvents(response, (e) => {
        if (e.id !== undefined) lastId = e.id;
        delivered++;
        out.stdout(
          JSON.stringify(e.id === undefined ? { event: e.event, ...e.data } : { event: e.event, id: e.id, ...e.data }),
        );
      });
    } catch (err) {
      if (!(err instanceof ApiError) || !options.resume || !RETRY_CODES.has(err.body.error)) throw err;
      ending = { kind: 'error', code: err.body.error, msg: err.body.msg };
    }
    if (ending.kind === 'error' && !RETRY_CODES.has(ending.code)) {
      throw new ApiError({ status: ending.code === 'compacted' ? 410 : 0, msg: ending.msg, error: ending.code });
    }
    const why = ending.kind === 'cut' ? ending.reason : `${ending.code}: ${ending.msg}`;
    if (!options.resume) {
      throw new ApiError({
        status: 0,
        msg: `the watch stream ended (${why}); changes after it may have been missed: list, then watch again`,
        error: 'unavailable',
      });
    }
    failures = delivered > 0 ? 0 : failures + 1;
    if (failures > MAX_RECONNECTS) {
      throw new ApiError({ status: 0, msg: `the watch stream could not be resumed (${why})`, error: 'unavailable' });
    }
    options.note?.(`watch: stream ended (${why}); resuming after ${lastId ?? 'the start'}`);
    const backoff = failures === 0 ? 0 : Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (failures - 1));
    if (backoff > 0) await new Promise((resolve) => setTimeout(resolve, backoff));
  }
}

/** Parses the stream until it ends; a server-sent `error` event ends it with the server's reason. */
async function readEvents(response: StreamResponse, onEvent: (e: Parsed) => void): Promise<Ending> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = 'message';
  let id: string | undefined;
  let data = '';
  try {
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      if (buffer.length > MAX_EVENT_BYTES) throw new Error('watch stream sent an over-long event');
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        if (line === '') {
          if (data !== '') {
            const parsed = JSON.parse(data) as Record<string, unknown>;
            if (event === 'error') {
              return { kind: 'error', code: String(parsed.error ?? 'unavailable'), msg: String(parsed.msg ?? '') };
            }
            onEvent({ event, id, data: parsed });
          }
          event = 'message';
          id = undefined;
          data = '';
        } else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('data: ')) data += line.slice(6);
        newline = buffer.indexOf('\n');
      }
    }
  } catch (err) {
    if (err instanceof SyntaxError || (err as Error).message === 'watch stream sent an over-long event') throw err;
    return { kind: 'cut', reason: `connection lost: ${(err as Error).message}` };
  }
  return { kind: 'cut', reason: 'the server closed it' };
}
