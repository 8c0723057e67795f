/** The API examples (the HTTP and CLI contract) against `parley serve --etcd` on a 3-member loopback etcd. */
import { describe } from 'vitest';
import { apiExamplesSuite } from './api-examples.js';
import { etcdBackend } from './backends.js';
import { etcdFixture } from './etcd-fixture.js';

const etcd = etcdFixture('the seed-000 examples on parley serve --etcd');

describe.skipIf(!etcd.available)('seed 000 on parley serve --etcd', () => {
  apiExamplesSuite(() => etcdBackend(etcd));
});
