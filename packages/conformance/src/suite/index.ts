/**
 * The strong-side conformance suite: every behaviour a user relies on,
 * written once and registered against one backend per call.
 */
import { afterEach, describe } from 'vitest';
import type { BackendUnderTest } from '../backends.js';
import { entriesSuite } from './entries.js';
import { leasesSuite } from './leases.js';
import { limitsSuite } from './limits.js';
import { listSuite } from './list.js';
import { locksSuite } from './locks.js';
import { queueSuite } from './queue.js';
import { ttlSuite } from './ttl.js';
import { unreachableSuite } from './unreachable.js';
import { watchSuite } from './watch.js';

/** Registers the whole suite for `backend` (call it from a test file). */
export function strongConformance(backend: () => BackendUnderTest): void {
  describe(`strong conformance`, () => {
    const b = lazy(backend);
    afterEach(async () => {
      await b.closeAll();
    });
    entriesSuite(b);
    listSuite(b);
    limitsSuite(b);
    ttlSuite(b);
    locksSuite(b);
    leasesSuite(b);
    queueSuite(b);
    watchSuite(b);
    unreachableSuite(b);
  });
}

/** A backend made on first use (after the file's beforeAll started what it needs). */
function lazy(make: () => BackendUnderTest): BackendUnderTest {
  let b: BackendUnderTest | undefined;
  const get = () => (b ??= make());
  return {
    get kind() {
      return get().kind;
    },
    get gaps() {
      return get().gaps;
    },
    node: (o) => get().node(o),
    unreachableNode: () => get().unreachableNode(),
    nodeOptions: (o) => get().nodeOptions(o),
    serveArgs: () => get().serveArgs(),
    closeAll: () => (b ? b.closeAll() : Promise.resolve()),
  };
}
