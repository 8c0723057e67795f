/**
 * Server-sent events as a watch stream carries them: frames of `event:`, `id:` and
 * `data:` lines ended by a blank line; comment lines (`: ping`) are skipped. A frame
 * without data is no frame.
 */
export interface SseFrame {
  readonly event: string | undefined;
  readonly id: string | undefined;
  readonly data: string;
}

export class SseReader {
  private buffer = '';
  private event: string | undefined;
  private id: string | undefined;
  private data = '';

  /** Characters received and not yet ended by a newline. */
  get pending(): number {
    return this.buffer.length;
  }

  /** The frames `chunk` completes. */
  push(chunk: string): SseFrame[] {
    this.buffer += chunk;
    const frames: SseFrame[] = [];
    for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      if (line === '') {
        if (this.data !== '') frames.push({ event: this.event, id: this.id, data: this.data });
        this.event = undefined;
        this.id = undefined;
        this.data = '';
      } else if (line.startsWith('event: ')) this.event = line.slice(7);
      else if (line.startsWith('id: ')) this.id = line.slice(4);
      else if (line.startsWith('data: ')) this.data += line.slice(6);
    }
    return frames;
  }
}
