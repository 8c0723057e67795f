/**
 * Replaying randomized tests: every randomized test takes its seed from
 * `testSeed` and runs under `withSeed`, so a failure names `PARLEY_SEED=<n>`
 * and running with that variable set replays it exactly.
 */

/** The seed for a randomized test: `PARLEY_SEED` from the environment when set, else `fallback`. */
export function testSeed(fallback: number): number {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.PARLEY_SEED;
  return env === undefined || env === '' ? fallback : Number(env);
}

function tag(seed: number, err: unknown): unknown {
  const label = `PARLEY_SEED=${seed}`;
  if (err instanceof Error) {
    if (!err.message.startsWith(label)) err.message = `${label}: ${err.message}`;
  } else {
    console.error(label);
  }
  return err;
}

/**
 * Runs `body` (synchronous or async) with `seed`; a failure is rethrown with
 * `PARLEY_SEED=<seed>` at the start of its message.
 */
export function withSeed<T>(seed: number, body: (seed: number) => T): T {
  let result: T;
  try {
    result = body(seed);
  } catch (err) {
    throw tag(seed, err);
  }
  if (result instanceof Promise) {
    return result.catch((err: unknown) => {
      throw tag(seed, err);
    }) as T;
  }
  return result;
}
