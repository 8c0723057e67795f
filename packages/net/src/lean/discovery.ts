/**
 * How a node learns where a peer's lean channel listens: over the libp2p
 * connection they already share (which the PSK and noise secure), the peer
 * answers `LEAN_PROTOCOL` with its lean port (u16, big-endian); the host is
 * the one that libp2p connection reaches.
 */
import type { Libp2p, PeerId as Libp2pPeerId, Stream } from '@libp2p/interface';
import { multiaddr } from '@multiformats/multiaddr';
import { DecodeError, TimeoutError, UnavailableError } from '@parley/interface';

/** The libp2p protocol that answers with the lean port. */
export const LEAN_PROTOCOL = '/parley/lean/1.0.0';

/** Writes the port and closes. */
export function servePort(stream: Stream, port: number): void {
  const answer = new Uint8Array(2);
  new DataView(answer.buffer).setUint16(0, port);
  stream.send(answer);
  stream.close().catch(() => stream.abort(new Error('lean port answer not closed')));
}

/** Asks `peer` for its lean port over libp2p. */
export async function askPort(node: Libp2p, peer: Libp2pPeerId, timeoutMs: number): Promise<number> {
  const signal = AbortSignal.timeout(timeoutMs);
  const stream = await node.dialProtocol(peer, LEAN_PROTOCOL, { signal });
  return new Promise<number>((resolve, reject) => {
    let got = new Uint8Array();
    const done = (err: Error | undefined, port?: number) => {
      signal.removeEventListener('abort', onAbort);
      stream.abort(new Error('done'));
      if (err) reject(err);
      else resolve(port as number);
    };
    const onAbort = () => done(new TimeoutError('no lean port answer'));
    signal.addEventListener('abort', onAbort);
    stream.addEventListener('message', (evt) => {
      const data = evt.data instanceof Uint8Array ? evt.data : evt.data.subarray();
      const joined = new Uint8Array(got.length + data.length);
      joined.set(got);
      joined.set(data, got.length);
      got = joined;
      if (got.length > 2) done(new DecodeError('lean port answer too long'));
      else if (got.length === 2) {
        const port = new DataView(got.buffer).getUint16(0);
        if (port === 0) done(new UnavailableError('peer has no lean channel'));
        else done(undefined, port);
      }
    });
    stream.addEventListener('close', () => {
      if (got.length < 2) done(new UnavailableError('peer closed before answering its lean port'));
    });
  });
}

/** The host the node's open libp2p connection to `peer` reaches, if any. */
export function remoteHost(node: Libp2p, peer: Libp2pPeerId): string | undefined {
  for (const connection of node.getConnections(peer)) {
    if (connection.status !== 'open') continue;
    const ip = connection.remoteAddr.getComponents().find((c) => c.name === 'ip4' || c.name === 'ip6');
    if (ip?.value) return ip.value;
  }
  return undefined;
}

/** The host the lean listener binds: the first listen multiaddr's address. */
export function leanListenHost(listen: readonly string[]): string {
  for (const address of listen) {
    try {
      const ip = multiaddr(address)
        .getComponents()
        .find((c) => c.name === 'ip4' || c.name === 'ip6');
      if (ip?.value) return ip.value;
    } catch {
      // not a multiaddr: libp2p reports it at start
    }
  }
  return '127.0.0.1';
}
