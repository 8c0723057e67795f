// Two agents share feature flags as an eventual namespace. One of them works
// offline for a while; when they meet again, anti-entropy sends only what the
// other lacks, and both converge to the same state.
//
// Run after `npm ci && npm run build`:  node examples/offline-replicas.mjs
import { decodeDelta, decodeDigest, encodeDelta, encodeDigest, NamespaceReplica } from '@parley/crdt';

export function run(startMs = Date.UTC(2026, 0, 1)) {
  let now = startMs;
  const laptop = new NamespaceReplica({ namespace: 'flags', replicaId: 'laptop' });
  const server = new NamespaceReplica({ namespace: 'flags', replicaId: 'server' });

  // Online: every write's delta is gossiped at once.
  for (let i = 0; i < 1_000; i++) server.merge(laptop.set(`flag-${i}`, { on: i % 2 === 0 }, now), now);

  // Offline for an hour: both sides keep writing.
  now += 3_600_000;
  laptop.set('flag-7', { on: true, note: 'changed offline' }, now);
  laptop.increment('restarts', 2, now);
  server.delete('flag-8', now + 1);
  server.increment('restarts', 3, now + 2);

  // Reconnect: exchange digests, then exactly the missing entries, in both directions.
  now += 10;
  const toServer = encodeDelta(laptop.deltaFor(decodeDigest(encodeDigest(server.digest()))));
  const toLaptop = encodeDelta(server.deltaFor(decodeDigest(encodeDigest(laptop.digest()))));
  server.merge(decodeDelta(toServer), now);
  laptop.merge(decodeDelta(toLaptop), now);

  const same = JSON.stringify(laptop.entries(now)) === JSON.stringify(server.entries(now));
  return {
    converged: same,
    restarts: server.get('restarts', now)?.value,
    flag7: server.get('flag-7', now)?.value,
    flag8: laptop.get('flag-8', now),
    bytesExchanged: toServer.byteLength + toLaptop.byteLength,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(run());
}
