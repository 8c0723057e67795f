/**
 * `parley cluster up -n 3`: a local demo cluster of n voter processes, each a
 * `parley serve` with its own data dir under --dir, sharing one cluster key.
 * Peer ids are minted up front (the keys are written where each node looks
 * for them), so every process starts knowing the voters and its peers.
 * Ctrl-C stops every process and waits for them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { UsageError } from '../client.js';
import { type GlobalOptions, parseInteger } from '../context.js';
import { table } from '../output.js';

const BIN = fileURLToPath(new URL('../../bin/parley.js', import.meta.url));
const MAX_NODES = 7;
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

interface Member {
  index: number;
  dataDir: string;
  peerId: string;
  httpPort: number;
  p2pAddr: string;
  child?: ChildProcess;
  url?: string;
}

export function clusterCommands(program: Command): void {
  const cluster = program.command('cluster').description('local demo clusters');
  cluster
    .command('up')
    .description('start n voter processes on this machine and print their endpoints (Ctrl-C stops them)')
    .option('-n, --nodes <n>', `number of voters (1..${MAX_NODES})`, '3')
    .option('-d, --dir <dir>', 'parent of the nodes data dirs (kept across runs)', './.parley-cluster')
    .option('--base-port <port>', 'HTTP port of the first node; the others follow', '4001')
    .option('--p2p-base-port <port>', 'peer-to-peer port of the first node; the others follow', '4101')
    .action(async (opts: { nodes: string; dir: string; basePort: string; p2pBasePort: string }, command: Command) => {
      const json = command.optsWithGlobals<GlobalOptions>().output === 'json';
      await up(opts, json);
    });
}

async function up(opts: { nodes: string; dir: string; basePort: string; p2pBasePort: string }, json: boolean) {
  const n = parseInteger('--nodes', opts.nodes);
  if (n < 1 || n > MAX_NODES) throw new UsageError(`--nodes must be in 1..${MAX_NODES}`);
  const basePort = parseInteger('--base-port', opts.basePort);
  const p2pBase = parseInteger('--p2p-base-port', opts.p2pBasePort);
  for (const [flag, port] of [
    ['--base-port', basePort],
    ['--p2p-base-port', p2pBase],
  ] as const) {
    if (port < 1 || port + n - 1 > 65_535) throw new UsageError(`${flag} must leave room for ${n} ports below 65536`);
  }
  await import('@parley/net/polyfill');
  const { loadOrCreatePrivateKey, loadOrCreatePsk, peerIdOf } = await import('@parley/net');
  const dir = resolve(opts.dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const pskFile = join(dir, 'cluster.psk');
  await loadOrCreatePsk(pskFile);

  const members: Member[] = [];
  for (let i = 0; i < n; i++) {
    const dataDir = join(dir, `node-${i + 1}`);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const peerId = peerIdOf(await loadOrCreatePrivateKey(join(dataDir, 'peer.key')));
    members.push({
      index: i + 1,
      dataDir,
      peerId,
      httpPort: basePort + i,
      p2pAddr: `/ip4/127.0.0.1/tcp/${p2pBase + i}`,
    });
  }
  const voters = members.map((m) => m.peerId).join(',');

  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    await Promise.all(members.map((m) => stopChild(m.child)));
  };

  try {
    await Promise.all(
      members.map(async (m) => {
        const args = [BIN, '--output', 'json', 'serve', '--data-dir', m.dataDir, '--port', String(m.httpPort)];
        args.push('--listen', m.p2pAddr, '--psk-file', pskFile, '--voters', voters);
        for (const other of members) if (other !== m) args.push('--bootstrap', `${other.p2pAddr}/p2p/${other.peerId}`);
        const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
        m.child = child;
        child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(`[node-${m.index}] ${chunk}`));
        m.url = await readyUrl(m, child);
        child.on('exit', (code, signal) => {
          if (!stopping) process.stderr.write(`parley: node-${m.index} exited (${signal ?? code})\n`);
        });
      }),
    );
    // Ready means usable: the voters have elected a leader, so the first strong write works.
    await Promise.all(members.map((m) => untilReady(m)));
  } catch (err) {
    await stopAll();
    throw err;
  }

  if (json) {
    process.stdout.write(
      `${JSON.stringify({ nodes: members.map((m) => ({ url: m.url, peerId: m.peerId, dataDir: m.dataDir, p2p: m.p2pAddr, pid: m.child?.pid })) })}\n`,
    );
  } else {
    process.stdout.write(
      `${[
        `Parley cluster of ${n} voters (data under ${dir}):`,
        table(
          ['NODE', 'HTTP', 'PEER ID', 'P2P'],
          members.map((m) => [`node-${m.index}`, m.url, m.peerId, m.p2pAddr]),
        ),
        `try: npx parley --endpoint ${members[0]!.url} status`,
        'Ctrl-C stops every node.',
      ].join('\n')}\n`,
    );
  }

  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      if (stopping) return;
      if (!json) process.stderr.write(`parley: ${signal}, stopping ${n} nodes\n`);
      void stopAll().then(done);
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

/** Polls the node's `/readyz` (disk writable, a Raft leader known) until it answers 200, for at most the start timeout. */
async function untilReady(m: Member): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${m.url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`node-${m.index} was not ready within ${START_TIMEOUT_MS} ms (${last})`);
}

function readyUrl(m: Member, child: ChildProcess): Promise<string> {
  return new Promise((resolveUrl, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`node-${m.index} did not start within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      clearTimeout(timer);
      try {
        resolveUrl((JSON.parse(line) as { url: string }).url);
      } catch {
        reject(new Error(`node-${m.index} printed an unexpected line: ${line.slice(0, 200)}`));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`node-${m.index} exited with ${code} before it was ready`));
    });
  });
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
