/**
 * Prometheus series of the sync door, on the server's registry: open
 * connections (read when scraped) and what the door refused or dropped, by
 * reason (a fixed set of labels).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** Registers the door's series; returns the counter of refusals to increment. */
export function syncMetrics(registry: Registry, connections: () => number): (reason: string) => void {
  const registers = [registry];
  new Gauge({
    name: 'parley_sync_connections',
    help: 'Open sync connections of browser replicas.',
    registers,
    collect() {
      this.set(connections());
    },
  });
  const refusals = new Counter({
    name: 'parley_sync_refusals_total',
    help: 'Connections or frames the sync door refused or dropped, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  return (reason) => refusals.inc({ reason });
}
