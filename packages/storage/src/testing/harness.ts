import { afterEach } from 'vitest';

/** One storage location that can be opened, crashed and reopened. */
export interface StoreHarness<S> {
  /** Opens the store at this location: empty the first time, then whatever survived the last close or crash. */
  open(): Promise<S>;
  /**
   * Stops `store` the way a process crash would, without a clean close. Writes that resolved must survive;
   * a write still in flight must survive whole or not at all. After it resolves, `open()` may be called.
   */
  crash(store: S): Promise<void>;
  /** Frees the location (a temp directory, say) once the test is over. */
  dispose?(): Promise<void>;
}

export interface StoreComplianceOptions<S> {
  /** Shown in the suite's title. */
  name: string;
  /** A harness on a fresh, empty location; called once per test. */
  harness(): StoreHarness<S> | Promise<StoreHarness<S>>;
  /** Operations in the randomized model test (default 300). */
  randomSteps?: number;
  /** Seed of the randomized test (default: PARLEY_SEED from the environment, else a fixed one). */
  seed?: number;
}

/** A harness with its currently open store. */
export interface StoreSession<S> {
  h: StoreHarness<S>;
  s: S;
  /** Closes the store cleanly and opens it again. */
  reopen(): Promise<S>;
  /** Crashes the store and opens it again. */
  crashAndReopen(): Promise<S>;
}

/**
 * Call inside a `describe`: returns `setup()`, which opens a store on a fresh
 * harness; the store is closed and the harness disposed after each test.
 */
export function storeSessions<S extends { close(): Promise<void> }>(
  options: StoreComplianceOptions<S>,
): () => Promise<StoreSession<S>> {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });
  return async () => {
    const h = await options.harness();
    const session: StoreSession<S> = {
      h,
      s: await h.open(),
      async reopen() {
        await session.s.close();
        session.s = await h.open();
        return session.s;
      },
      async crashAndReopen() {
        await h.crash(session.s);
        session.s = await h.open();
        return session.s;
      },
    };
    cleanups.push(async () => {
      await session.s.close();
      await h.dispose?.();
    });
    return session;
  };
}
