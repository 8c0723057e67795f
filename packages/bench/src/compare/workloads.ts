/**
 * The strong workloads, written once against a small adapter so that Parley
 * (inside its client process) and etcd (through the etcd3 client) run the
 * very same loops: same keys, same values, same concurrency, unbatched.
 */

export interface StrongAdapter {
  /** One durable write of `value` to `key`. */
  put(key: string, value: string): Promise<void>;
  /** The key's current version token (Parley version / etcd mod_revision), creating it when absent. */
  version(key: string): Promise<string>;
  /**
   * Compare-and-swap: won with the new version, or lost with the key's
   * version the loss carried (Parley's `details.actual`, etcd's else-branch
   * get in the same transaction), so that a retry needs no read.
   */
  cas(key: string, value: string, version: string): Promise<{ won: boolean; version: string }>;
  /** Create-only: true when this call created the key. */
  claim(key: string, value: string): Promise<boolean>;
  /**
   * One lock acquire + release by `owner`; `contended` = others want the same
   * lock. With `pipelined` (a side that has a pipelined release), the cycle
   * ends once the release is sent and answers its outcome (boxed: an async
   * function would wait for a promise it returns): the next acquire does not
   * wait for it.
   */
  lockCycle(
    key: string,
    owner: string,
    contended: boolean,
    pipelined: boolean,
  ): Promise<{ released: Promise<boolean> } | undefined>;
}

/**
 * `maxMs` (writes) and `maxOps` (rate loops) bound a warm-up: the loop stops
 * at whichever of its two bounds comes first.
 */
export type StrongTask =
  | { kind: 'writes'; count: number; prefix: string; maxMs?: number }
  | { kind: 'cas'; clients: number; hot: boolean; durationMs: number; prefix: string; maxOps?: number }
  | { kind: 'locks'; clients: number; durationMs: number; prefix: string; maxOps?: number; pipelined?: boolean }
  | { kind: 'claims'; clients: number; durationMs: number; prefix: string; maxOps?: number }
  | { kind: 'steady'; durationMs: number; prefix: string };

/**
 * The warm-up of `task`: the same workload (same kind, clients and keys
 * pattern, its own prefix) for `ops` operations or `seconds`, whichever comes
 * first, so that every process of a side has run the code the timed loop runs.
 */
export function warmupOf(task: StrongTask, ops: number, seconds: number): StrongTask {
  const ms = seconds * 1000;
  const prefix = `warm-${task.prefix}`;
  switch (task.kind) {
    case 'writes':
    case 'steady':
      return { kind: 'writes', count: ops, maxMs: ms, prefix };
    default:
      return { ...task, durationMs: ms, maxOps: ops, prefix };
  }
}

export type StrongTaskResult =
  | { kind: 'writes'; latencies: number[] }
  | { kind: 'rate'; ops: number; retries: number; seconds: number }
  | { kind: 'steady'; acks: number[]; sentAt: number[]; errors: number };

const VALUE = JSON.stringify({ pad: 'x'.repeat(40) });

export async function runStrongTask(a: StrongAdapter, t: StrongTask): Promise<StrongTaskResult> {
  switch (t.kind) {
    case 'writes': {
      const latencies: number[] = [];
      const end = performance.now() + (t.maxMs ?? Number.POSITIVE_INFINITY);
      for (let i = 0; i < t.count && performance.now() < end; i++) {
        const t0 = performance.now();
        await a.put(`${t.prefix}/w${i % 64}`, VALUE);
        latencies.push(performance.now() - t0);
      }
      return { kind: 'writes', latencies };
    }
    case 'cas': {
      let ops = 0;
      let retries = 0;
      const keys = Array.from({ length: t.clients }, (_, c) => `${t.prefix}/cas${t.hot ? 0 : c}`);
      const max = t.maxOps ?? Number.POSITIVE_INFINITY;
      const versions = await Promise.all([...new Set(keys)].map((k) => a.version(k)));
      void versions;
      const end = performance.now() + t.durationMs;
      const t0 = performance.now();
      await Promise.all(
        keys.map(async (key, c) => {
          let version = await a.version(key);
          let n = 0;
          while (performance.now() < end && ops + retries < max) {
            const next = await a.cas(key, `${c}:${++n}`, version);
            if (next.won) ops++;
            else retries++;
            version = next.version;
          }
        }),
      );
      return { kind: 'rate', ops, retries, seconds: (performance.now() - t0) / 1000 };
    }
    case 'locks': {
      let ops = 0;
      const max = t.maxOps ?? Number.POSITIVE_INFINITY;
      const end = performance.now() + t.durationMs;
      const t0 = performance.now();
      let unreleased = 0;
      await Promise.all(
        Array.from({ length: t.clients }, async (_, c) => {
          let last: Promise<boolean> | undefined;
          while (performance.now() < end && ops < max) {
            const release = (await a.lockCycle(`${t.prefix}/lock`, `owner${c}`, t.clients > 1, t.pipelined === true))
              ?.released;
            // A pipelined release is counted when it settles; one that did not release fails the run.
            release?.then(
              (released) => {
                if (!released) unreleased++;
              },
              () => unreleased++,
            );
            last = release ?? last;
            ops++;
          }
          await last?.catch(() => {});
        }),
      );
      if (unreleased > 0) throw new Error(`${unreleased} pipelined lock releases did not release`);
      return { kind: 'rate', ops, retries: 0, seconds: (performance.now() - t0) / 1000 };
    }
    case 'claims': {
      let ops = 0;
      let lost = 0;
      const max = t.maxOps ?? Number.POSITIVE_INFINITY;
      const end = performance.now() + t.durationMs;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: t.clients }, async (_, c) => {
          let n = 0;
          while (performance.now() < end && ops + lost < max) {
            if (await a.claim(`${t.prefix}/claim${c}-${n++}`, VALUE)) ops++;
            else lost++;
          }
        }),
      );
      return { kind: 'rate', ops, retries: lost, seconds: (performance.now() - t0) / 1000 };
    }
    case 'steady': {
      // A steady sequential write load; the wall-clock time (ms) of each acknowledged write, and when it was sent.
      const acks: number[] = [];
      const sentAt: number[] = [];
      let errors = 0;
      const end = Date.now() + t.durationMs;
      let i = 0;
      while (Date.now() < end) {
        try {
          const sent = Date.now();
          await a.put(`${t.prefix}/steady${i++ % 16}`, VALUE);
          acks.push(Date.now());
          sentAt.push(sent);
        } catch {
          errors++;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      return { kind: 'steady', acks, sentAt, errors };
    }
  }
}
