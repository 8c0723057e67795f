/**
 * The event queue of simulated time: a binary min-heap ordered by
 * (timeMs, seq). `seq` is a global insertion counter, so two events due at the
 * same millisecond always run in the order they were scheduled — the one rule
 * that makes a run a pure function of its seed.
 */

export interface QueuedEvent {
  readonly timeMs: number;
  readonly seq: number;
  /** Set by `cancel`; a cancelled event is skipped when it reaches the head. */
  cancelled: boolean;
  readonly run: () => void;
  /** Free-form label for traces (`timer`, `deliver`, `fault`...). */
  readonly label: string;
}

export class EventQueue {
  private readonly heap: QueuedEvent[] = [];
  private nextSeq = 0;
  private live = 0;

  /** Events still due (cancelled ones excluded). */
  get size(): number {
    return this.live;
  }

  push(timeMs: number, label: string, run: () => void): QueuedEvent {
    const ev: QueuedEvent = { timeMs, seq: this.nextSeq++, cancelled: false, run, label };
    this.heap.push(ev);
    this.up(this.heap.length - 1);
    this.live++;
    return ev;
  }

  cancel(ev: QueuedEvent): void {
    if (ev.cancelled) return;
    ev.cancelled = true;
    this.live--;
  }

  /** The next live event without removing it. */
  peek(): QueuedEvent | undefined {
    this.dropCancelled();
    return this.heap[0];
  }

  pop(): QueuedEvent | undefined {
    this.dropCancelled();
    const top = this.heap[0];
    if (!top) return undefined;
    this.removeTop();
    this.live--;
    top.cancelled = true; // a popped event can no longer be cancelled
    return top;
  }

  private dropCancelled(): void {
    while (this.heap.length > 0 && this.heap[0]!.cancelled) this.removeTop();
  }

  private removeTop(): void {
    const last = this.heap.pop()!;
    if (this.heap.length > 0) {
      this.heap[0] = last;
      this.down(0);
    }
  }

  private less(a: QueuedEvent, b: QueuedEvent): boolean {
    return a.timeMs < b.timeMs || (a.timeMs === b.timeMs && a.seq < b.seq);
  }

  private up(i: number): void {
    const h = this.heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}
