import type { ParleyNode } from '@parley/node';
import type { ServerMetrics } from '../metrics.js';
import type { SseLimits, SseStream } from '../sse.js';

/** What every route module receives. */
export interface RouteDeps {
  node: ParleyNode;
  metrics: ServerMetrics;
  /** Open watch streams, closed when the server stops. */
  streams: Set<SseStream>;
  maxWatchStreams: number;
  sse: SseLimits;
}
