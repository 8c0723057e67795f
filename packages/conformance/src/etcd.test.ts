/** The strong conformance suite on etcd: a 3-member loopback cluster for the file, a prefix per node. */
import { describe } from 'vitest';
import { etcdBackend } from './backends.js';
import { etcdFixture } from './etcd-fixture.js';
import { strongConformance } from './suite/index.js';

const etcd = etcdFixture('the strong conformance suite on etcd');

describe.skipIf(!etcd.available)('on etcd', () => {
  strongConformance(() => etcdBackend(etcd));
});
