/** Reads a watch stream and prints one JSON line per event until the server or the user ends it. */
import type { ApiClient } from './client.js';
import type { Out } from './output.js';

/** One event may not exceed this; a longer line means a broken stream. */
const MAX_EVENT_BYTES = 4 * 1_048_576;

export async function streamEvents(
  client: ApiClient,
  path: string,
  query: Record<string, string | number | undefined>,
  out: Out,
): Promise<void> {
  const response = await client.stream(path, query);
  if (response.body === null) return;
  const decoder = new TextDecoder();
  let buffer = '';
  let event = 'message';
  let id: string | undefined;
  let data = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    if (buffer.length > MAX_EVENT_BYTES) throw new Error('watch stream sent an over-long event');
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, '');
      buffer = buffer.slice(newline + 1);
      if (line === '') {
        if (data !== '') {
          const parsed = JSON.parse(data) as Record<string, unknown>;
          out.stdout(JSON.stringify(id === undefined ? { event, ...parsed } : { event, id, ...parsed }));
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
}
