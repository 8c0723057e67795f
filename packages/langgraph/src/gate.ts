/**
 * A bound on the strong calls one saver has in flight: a put fans out over
 * channel values and payload chunks, and its calls queue here, in order,
 * rather than crowding the node's client sessions.
 */
import type {
  ClaimResult,
  FenceToken,
  JsonValue,
  Lease,
  ListPage,
  ListQuery,
  QueueOptions,
  StrongChange,
  StrongEntry,
  StrongNamespace,
  StrongSetResult,
  StrongWriteOptions,
  WatchOptions,
} from '@parley/node';

export const MAX_IN_FLIGHT = 16;

export class Gate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit = MAX_IN_FLIGHT) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/** `ns` with its reads and writes passed through `gate`. */
export class GatedNamespace implements StrongNamespace {
  constructor(
    private readonly ns: StrongNamespace,
    private readonly gate: Gate,
  ) {}

  get name(): string {
    return this.ns.name;
  }
  set(key: string, value: JsonValue, options?: StrongWriteOptions): Promise<StrongSetResult> {
    return this.gate.run(() => this.ns.set(key, value, options));
  }
  get(key: string): Promise<StrongEntry | undefined> {
    return this.gate.run(() => this.ns.get(key));
  }
  delete(key: string, options?: { ifVersion?: string; fence?: FenceToken }): Promise<boolean> {
    return this.gate.run(() => this.ns.delete(key, options));
  }
  list(query?: ListQuery): Promise<ListPage<StrongEntry>> {
    return this.gate.run(() => this.ns.list(query));
  }
  deleteNamespace(options: { confirm: boolean; pattern?: string }) {
    return this.gate.run(() => this.ns.deleteNamespace(options));
  }
  claim(key: string, value: JsonValue, options?: { ttl?: number }): Promise<ClaimResult> {
    return this.gate.run(() => this.ns.claim(key, value, options));
  }
  lease(key: string, options: { ttl: number; holder: string; state?: JsonValue }): Promise<Lease> {
    return this.gate.run(() => this.ns.lease(key, options));
  }
  attach(key: string, holder: string): Promise<Lease | undefined> {
    return this.gate.run(() => this.ns.attach(key, holder));
  }
  doc<T extends JsonValue>(key: string) {
    return this.ns.doc<T>(key);
  }
  queue(name: string, options?: QueueOptions) {
    return this.ns.queue(name, options);
  }
  watch(options: WatchOptions & { fromRevision?: number }, callback: (change: StrongChange) => void) {
    return this.ns.watch(options, callback);
  }
}
