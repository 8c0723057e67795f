/**
 * The kernel's TCP keep-alive finds a peer whose host vanished without closing
 * its sockets: two libp2p transports on loopback with `keepAliveMs: 1000` and
 * libp2p's pings off stay connected while idle (no inactivity timeout closes a
 * quiet connection), then iptables drops every packet between them and each
 * side sees `peer:disconnect` within the keep-alive's bound (1 s of quiet, then
 * 10 probes a second apart). With the system's default keep-alive (2 hours) the
 * connection would stay up, which the bound catches.
 *
 * Needs root and iptables: without them the test is skipped, except under
 * CI=true, where it fails (CI never passes by skipping a fault).
 */
import { execFileSync } from 'node:child_process';
import { createLibp2pTransport, generatePsk, type Libp2pTransport, silentLogger } from '@parley/net';
import { afterAll, describe, expect, it } from 'vitest';

function iptables(args: string[]): void {
  execFileSync('iptables', ['-w', '5', ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 15_000 });
}

function firewallUsable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  try {
    iptables(['-L', 'INPUT', '-n']);
    return undefined;
  } catch (err) {
    return `iptables failed: ${String(err)}`;
  }
}

const unusable = firewallUsable();
if (unusable && process.env.CI === 'true')
  throw new Error(`net-keepalive: needs root and iptables under CI=true (${unusable})`);

const portOf = (addr: string): string => {
  const m = /\/tcp\/(\d+)/.exec(addr);
  if (!m) throw new Error(`no tcp port in ${addr}`);
  return m[1] as string;
};

async function waitFor(condition: () => boolean, maxMs: number, what: string): Promise<number> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > maxMs) throw new Error(`${what}: not within ${maxMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now() - start;
}

const running: Libp2pTransport[] = [];
const rules: string[][] = [];

afterAll(async () => {
  for (const r of rules.splice(0)) iptables(['-D', ...r]);
  await Promise.all(running.splice(0).map((t) => t.stop()));
});

describe.skipIf(unusable !== undefined)('TCP keep-alive of libp2p connections', { timeout: 60_000 }, () => {
  it('keeps a quiet connection, and sees a vanished peer go within keepAliveMs + 10 probes', async () => {
    const psk = generatePsk();
    const limits = { keepAliveMs: 1_000, pingIntervalMs: 0 };
    const a = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, limits, logger: silentLogger });
    await a.start();
    running.push(a);
    const b = await createLibp2pTransport({ listen: ['/ip4/127.0.0.1/tcp/0'], psk, limits, logger: silentLogger });
    await b.start();
    running.push(b);
    const gone = { a: false, b: false };
    a.on('peer:disconnect', (p) => {
      if (p === b.peerId) gone.a = true;
    });
    b.on('peer:disconnect', (p) => {
      if (p === a.peerId) gone.b = true;
    });
    await b.connect(a.addresses()[0] as string);
    await waitFor(() => a.peers().includes(b.peerId) && b.peers().includes(a.peerId), 10_000, 'connected');

    // Quiet for several keep-alive periods: the probes are answered, nothing closes it.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(gone).toEqual({ a: false, b: false });

    // The peer's host vanishes: every packet to or from either listening port is dropped.
    for (const port of [portOf(a.addresses()[0] as string), portOf(b.addresses()[0] as string)]) {
      for (const dir of ['--dport', '--sport']) {
        const rule = ['INPUT', '-i', 'lo', '-p', 'tcp', dir, port, '-j', 'DROP'];
        iptables(['-I', ...rule]);
        rules.push(rule);
      }
    }
    // 1 s of quiet, then 10 unanswered probes a second apart: about 11 s; 25 s allows a loaded machine.
    const ms = await waitFor(() => gone.a && gone.b, 25_000, 'both sides saw the peer go');
    expect(ms).toBeGreaterThan(5_000); // the keep-alive's probes, not something faster
  });
});
