/** The seed-000 examples against `parley serve --etcd` on a 3-member loopback etcd. */
import { describe } from 'vitest';
import { etcdBackend } from './backends.js';
import { etcdFixture } from './etcd-fixture.js';
import { seed000Suite } from './seed000.js';

const etcd = etcdFixture('the seed-000 examples on parley serve --etcd');

describe.skipIf(!etcd.available)('seed 000 on parley serve --etcd', () => {
  seed000Suite(() => etcdBackend(etcd));
});
