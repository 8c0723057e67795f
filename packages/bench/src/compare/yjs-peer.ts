/**
 * One node of the Yjs propagation anchor, run as its own process by
 * ./yjs-propagation.ts: a Y.Doc behind a YjsSyncEndpoint. Over IPC it reports
 * its port, dials the neighbours it is given, and answers with the time each
 * key of the benchmark's map arrived (performance.timeOrigin + now, as the
 * Parley peers stamp watch events).
 *
 * argv[2]: JSON {dataDir}.
 */
import { YjsSyncEndpoint } from './yjs-sync.js';

export type YjsPeerTask =
  | { type: 'connect'; ports: number[] }
  | { type: 'arrivals'; prefix: string }
  /** CPU time (user + system, ms) this process has used so far. */
  | { type: 'cpu' }
  | { type: 'close' };

const { dataDir } = JSON.parse(process.argv[2] ?? '{}') as { dataDir: string };
const send = (msg: unknown) => process.send?.(msg);

const endpoint = await YjsSyncEndpoint.open(dataDir);
const arrivals = new Map<string, number>();
endpoint.doc.getMap('gossip').observe((ev) => {
  const t = performance.timeOrigin + performance.now();
  for (const key of ev.keysChanged) if (!arrivals.has(key)) arrivals.set(key, t);
});
const port = await endpoint.listen();

process.on('message', (task: YjsPeerTask) => {
  void (async () => {
    switch (task.type) {
      case 'connect':
        await Promise.all(task.ports.map((p) => endpoint.connect(p)));
        send({ type: 'connected' });
        break;
      case 'arrivals': {
        const out: Record<string, number> = {};
        for (const [k, t] of arrivals) if (k.startsWith(task.prefix)) out[k] = t;
        send({ type: 'arrivals', arrivals: out, connections: endpoint.connections, bytesOut: endpoint.bytesOut });
        break;
      }
      case 'cpu': {
        const u = process.cpuUsage();
        send({ type: 'cpu', cpuMs: (u.user + u.system) / 1000 });
        break;
      }
      case 'close':
        await endpoint.close();
        process.exit(0);
    }
  })().catch((err: unknown) => {
    send({ type: 'error', error: err instanceof Error ? err.message : String(err) });
  });
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', port });
