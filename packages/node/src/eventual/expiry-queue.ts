/**
 * When live entries expire: a min-heap of (expiresAt, key), so that an
 * `expire` change is reported once, at its time, without scanning the
 * namespace. Stale items (the key was written again) are skipped when popped;
 * the heap is rebuilt when they outnumber the live ones.
 */
export class ExpiryQueue {
  private times: number[] = [];
  private keys: string[] = [];

  get size(): number {
    return this.times.length;
  }

  push(atMs: number, key: string): void {
    const t = this.times;
    const k = this.keys;
    let i = t.length;
    t.push(atMs);
    k.push(key);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((t[p] as number) <= atMs) break;
      t[i] = t[p] as number;
      k[i] = k[p] as string;
      i = p;
    }
    t[i] = atMs;
    k[i] = key;
  }

  peekTime(): number | undefined {
    return this.times[0];
  }

  pop(): [number, string] | undefined {
    const t = this.times;
    const k = this.keys;
    if (t.length === 0) return undefined;
    const top: [number, string] = [t[0] as number, k[0] as string];
    const lt = t.pop() as number;
    const lk = k.pop() as string;
    if (t.length > 0) {
      let i = 0;
      const n = t.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && (t[r] as number) < (t[l] as number) ? r : l;
        if ((t[c] as number) >= lt) break;
        t[i] = t[c] as number;
        k[i] = k[c] as string;
        i = c;
      }
      t[i] = lt;
      k[i] = lk;
    }
    return top;
  }

  /** Keeps only the items `keep` accepts. */
  rebuild(keep: (atMs: number, key: string) => boolean): void {
    const t = this.times;
    const k = this.keys;
    this.times = [];
    this.keys = [];
    for (let i = 0; i < t.length; i++)
      if (keep(t[i] as number, k[i] as string)) this.push(t[i] as number, k[i] as string);
  }
}
