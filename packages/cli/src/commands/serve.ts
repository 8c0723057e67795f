/**
 * `parley serve`: a node with its HTTP API, in the foreground until SIGINT or
 * SIGTERM. `npm start` runs it with the defaults (HTTP on 127.0.0.1:4000,
 * data in ./.parley).
 */
import { resolve } from 'node:path';
import type { NodeOptions } from '@parley/node';
import type { Command } from 'commander';
import { UsageError } from '../client.js';
import { type GlobalOptions, parseInteger } from '../context.js';
import { parseEndpoint } from '../endpoint.js';

export interface ServeOptions {
  dataDir: string;
  host: string;
  port: string;
  allowHost?: string[];
  listen?: string[];
  bootstrap?: string[];
  pskFile?: string;
  leanPort?: string;
  lean?: boolean;
  voters?: string;
  etcd?: string;
  etcdPrefix?: string;
  tlsCert?: string;
  tlsKey?: string;
}

/** `--tls-cert` and `--tls-key` read (both or neither), or undefined for plain HTTP. */
export async function tlsOptions(
  opts: Pick<ServeOptions, 'tlsCert' | 'tlsKey'>,
): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  if (opts.tlsCert === undefined && opts.tlsKey === undefined) return undefined;
  if (opts.tlsCert === undefined || opts.tlsKey === undefined) {
    throw new UsageError('--tls-cert and --tls-key go together (a PEM certificate and its private key)');
  }
  const { readFile } = await import('node:fs/promises');
  const read = async (flag: string, file: string) => {
    try {
      return await readFile(file);
    } catch (err) {
      throw new UsageError(`${flag}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  };
  return { cert: await read('--tls-cert', opts.tlsCert), key: await read('--tls-key', opts.tlsKey) };
}

/** Kept here so `parley --help` does not load the server. */
const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 4000;

/** Fails fast, before a node starts, when the HTTP port is taken (listen() would fail later anyway). */
async function assertPortFree(host: string, port: number): Promise<void> {
  const { createServer: createNetServer } = await import('node:net');
  await new Promise<void>((resolveFree, reject) => {
    const probe = createNetServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new UsageError(`${host}:${port} is in use (another parley serve?); pick another with --port`)
          : err,
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolveFree()));
  });
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run a node with its HTTP API (Ctrl-C stops it)')
    .option('-d, --data-dir <dir>', 'identity, cluster key and stores', './.parley')
    .option('--host <host>', 'HTTP address (a non-loopback one needs PARLEY_API_TOKEN)', DEFAULT_HOST)
    .option('-p, --port <port>', 'HTTP port (0 picks a free one)', String(DEFAULT_PORT))
    .option(
      '--allow-host <name>',
      'without a token, also answer requests addressed to this host name (repeatable; loopback names always)',
      collect,
    )
    .option('--listen <multiaddr>', 'peer-to-peer listen address (repeatable; default /ip4/127.0.0.1/tcp/0)', collect)
    .option('--bootstrap <multiaddr>', 'a peer to dial, /ip4/…/tcp/…/p2p/<peer id> (repeatable)', collect)
    .option('--psk-file <path>', "the cluster's pre-shared key (default <data-dir>/cluster.psk, created once)")
    .option('--lean-port <port>', 'TCP port of the lean channel for requests and Raft (default: any free one)')
    .option('--no-lean', 'carry requests and Raft on libp2p streams (no second port)')
    .option('--voters <peer ids>', 'comma-separated Raft voters when the group first forms (default: this node alone)')
    .option(
      '--etcd <urls>',
      'run strong namespaces, locks and leases on this etcd cluster (comma-separated client URLs)',
    )
    .option('--etcd-prefix <prefix>', 'prefix of the keys Parley writes in etcd (default /parley; with --etcd)')
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (chain); with --tls-key')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert')
    .action(async (opts: ServeOptions, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      await serve(opts, globals.output === 'json');
    });
}

/** `--etcd` and `--etcd-prefix` as `etcdStrong`'s options (undefined without `--etcd`). */
export function etcdOptions(
  opts: Pick<ServeOptions, 'etcd' | 'etcdPrefix' | 'voters'>,
): { endpoints: string[]; prefix?: string } | undefined {
  if (opts.etcd === undefined) {
    if (opts.etcdPrefix !== undefined) throw new UsageError('--etcd-prefix needs --etcd');
    return undefined;
  }
  if (opts.voters !== undefined) throw new UsageError('--voters configures the built-in Raft group: not with --etcd');
  const endpoints = opts.etcd
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '')
    .map((u) => {
      const url = parseEndpoint('--etcd', u); // a URL or host:port, as --endpoint
      if (new URL(url).pathname !== '/') throw new UsageError(`--etcd: '${u}' is not an http(s)://host:port URL`);
      return url;
    });
  if (endpoints.length === 0) throw new UsageError('--etcd needs at least one client URL, e.g. http://127.0.0.1:2379');
  if (opts.etcdPrefix !== undefined && (opts.etcdPrefix === '' || opts.etcdPrefix.endsWith('/'))) {
    throw new UsageError('--etcd-prefix must be non-empty and not end with /');
  }
  return opts.etcdPrefix === undefined ? { endpoints } : { endpoints, prefix: opts.etcdPrefix };
}

async function serve(opts: ServeOptions, json: boolean): Promise<void> {
  // Loaded on demand: the other commands start without libp2p, LevelDB and fastify.
  await import('@parley/net/polyfill');
  const { createNode } = await import('@parley/node');
  const { checkAllowedHosts, checkBind, createServer } = await import('@parley/server');
  const token = process.env.PARLEY_API_TOKEN === '' ? undefined : process.env.PARLEY_API_TOKEN;
  const port = parseInteger('--port', opts.port);
  if (port < 0 || port > 65_535) throw new UsageError('--port must be in 0..65535');
  checkBind(opts.host, token); // before any node starts
  const allowedHosts = checkAllowedHosts(opts.allowHost ?? []);
  const tls = await tlsOptions(opts);
  if (port !== 0) await assertPortFree(opts.host, port);
  const dataDir = resolve(opts.dataDir);
  const nodeOptions: NodeOptions = { dataDir };
  if (opts.listen !== undefined) nodeOptions.listen = opts.listen;
  if (opts.bootstrap !== undefined) nodeOptions.bootstrap = opts.bootstrap;
  if (opts.pskFile !== undefined) nodeOptions.psk = resolve(opts.pskFile);
  if (opts.lean === false) nodeOptions.lean = false;
  else if (opts.leanPort !== undefined) {
    const leanPort = parseInteger('--lean-port', opts.leanPort);
    if (leanPort < 0 || leanPort > 65_535) throw new UsageError('--lean-port must be in 0..65535');
    nodeOptions.lean = { port: leanPort };
  }
  if (opts.voters !== undefined) {
    const voters = opts.voters
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== '');
    if (voters.length === 0) throw new UsageError('--voters needs at least one peer id');
    nodeOptions.raft = { voters };
  }
  const etcd = etcdOptions(opts);
  if (etcd !== undefined) nodeOptions.strong = (await import('@parley/etcd')).etcdStrong(etcd); // etcd's client loads only when asked

  const node = await createNode(nodeOptions);
  let server: import('@parley/server').ParleyServer;
  let url: string;
  try {
    server = await createServer({ node, host: opts.host, port, token, allowedHosts, ...(tls ? { tls } : {}) });
    url = await server.listen();
  } catch (err) {
    await node.close();
    throw err;
  }

  if (json) {
    process.stdout.write(
      `${JSON.stringify({ url, dataDir, peerId: node.peerId, addresses: node.addresses, auth: token !== undefined, tls: tls !== undefined, strong: etcd === undefined ? 'raft' : 'etcd' })}\n`,
    );
  } else {
    process.stdout.write(
      banner({
        url,
        dataDir,
        peerId: node.peerId,
        addresses: node.addresses,
        strong:
          etcd === undefined
            ? 'built-in Raft group'
            : `etcd ${etcd.endpoints.join(',')} (prefix ${etcd.prefix ?? '/parley'})`,
        auth: token !== undefined,
        tlsCert: tls === undefined ? undefined : opts.tlsCert,
      }),
    );
  }

  await new Promise<void>((done) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        process.stderr.write(`parley: ${signal} again, exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      if (!json) process.stderr.write(`parley: ${signal}, stopping\n`);
      void (async () => {
        try {
          await server.close();
        } finally {
          await node.close();
          done();
        }
      })();
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

/** What the banner of `parley serve` shows. */
export interface BannerInfo {
  url: string;
  dataDir: string;
  peerId: string;
  addresses: string[];
  strong: string;
  auth: boolean;
  tlsCert?: string | undefined;
}

const DEFAULT_URL = `http://${DEFAULT_HOST}:${DEFAULT_PORT}`;

/** The lines `parley serve` prints for a person: where it serves, on which port, how to pick another and how to reach it. */
export function banner(b: BannerInfo): string {
  return [
    `Parley serving its HTTP API on ${b.url}`,
    `  data dir  ${b.dataDir}`,
    `  peer id   ${b.peerId}`,
    `  p2p       ${b.addresses.join(' ') || '-'}`,
    `  yjs       ${b.url.replace(/^http/, 'ws')}/yjs  (y-websocket rooms "{namespace}/{key}", docs/yjs.md)`,
    `  strong    ${b.strong}`,
    !b.auth
      ? '  auth      none (loopback only). To require a token: PARLEY_API_TOKEN=<secret> npm start; clients send "Authorization: Bearer <secret>"'
      : '  auth      bearer token from PARLEY_API_TOKEN',
    `  port      ${/:(\d+)$/.exec(b.url)?.[1] ?? '?'} (another: npm start -- -p 4100, or parley serve -p 4100; 0 picks a free one)`,
    `  clients   ${b.url === DEFAULT_URL ? 'the CLI default' : `npx parley -e ${b.url} …, or export PARLEY_ENDPOINT=${b.url}`}`,
    b.tlsCert === undefined
      ? '  tls       off (HTTPS: --tls-cert FILE --tls-key FILE)'
      : `  tls       certificate ${b.tlsCert} (clients of a private CA: --cacert FILE or PARLEY_CACERT)`,
    `  try       curl ${b.tlsCert === undefined ? '' : '--cacert <ca.pem> '}${b.url}/readyz   ·   npx parley${b.url === DEFAULT_URL ? '' : ` -e ${b.url}`} status   ·   ${b.url}/openapi.json`,
    'Ctrl-C stops it.',
    '',
  ].join('\n');
}
