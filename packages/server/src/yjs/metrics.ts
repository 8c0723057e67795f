/**
 * Prometheus series of the y-websocket door, on the server's registry: open
 * connections, rooms and awareness clients (read when scraped), and what the
 * door refused or dropped, by reason (a fixed set of labels).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface DoorGauges {
  connections(): number;
  rooms(): number;
  awarenessStates(): number;
}

/** Registers the door's series; returns the counter of refusals to increment. */
export function doorMetrics(registry: Registry, read: DoorGauges): (reason: string) => void {
  const registers = [registry];
  new Gauge({
    name: 'parley_yjs_connections',
    help: 'Open y-websocket connections.',
    registers,
    collect() {
      this.set(read.connections());
    },
  });
  new Gauge({
    name: 'parley_yjs_rooms',
    help: 'Rooms with at least one y-websocket connection on this node.',
    registers,
    collect() {
      this.set(read.rooms());
    },
  });
  new Gauge({
    name: 'parley_yjs_awareness_states',
    help: 'Present awareness clients over all open rooms.',
    registers,
    collect() {
      this.set(read.awarenessStates());
    },
  });
  const refusals = new Counter({
    name: 'parley_yjs_refusals_total',
    help: 'Connections or messages the y-websocket door refused or dropped, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  return (reason) => refusals.inc({ reason });
}
