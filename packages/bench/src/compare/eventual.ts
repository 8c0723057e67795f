/**
 * Eventual side, measured here (the rest comes from @parley/node's own
 * benchmark program, see main.ts):
 *
 * - local set and get ops/s, 1 writer, sequential (each set awaited until
 *   durable): a Parley node's eventual namespace vs a Yjs Y.Map and an
 *   Automerge map, each update saved in LevelDB with fsync (the node's own
 *   storage, so the same persistence) before the set counts as done; CPU per
 *   set; reads both awaited (`get`) and synchronous (`peek`, the anchors' map
 *   reads); every side warmed up before it is timed;
 * - 1% of 100,000 keys changed on one side, synced over a real loopback TCP
 *   connection: Yjs state-vector sync (state vector one way, missing update
 *   back) and Automerge's sync protocol (messages until both are quiet):
 *   bytes on the wire and time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as Automerge from '@automerge/automerge';
import { createNode } from '@parley/node';
import { openLevelKV } from '@parley/storage';
import * as Y from 'yjs';
import { warmUp } from '../index.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export interface LocalRates {
  /** Durable sets/s, one sequential writer. */
  set: number;
  /** CPU (user + system, all threads of this process) per durable set, µs. */
  setCpuUs: number;
  /** Reads/s through the async call (`await ns.get`; the anchors' reads awaited the same way). */
  get: number;
  /** Reads/s, synchronous (`ns.peek`; the anchors' own map reads). */
  peek: number;
}

/** Every side runs WARM_UP (2,000 ops or 10 s) of each operation before it is timed. */
const warm = (op: (i: number) => Promise<void> | void) => warmUp(op);

/** Calls/s of `op`, each awaited: its promise (Parley's get) or its value (the anchors' map reads). */
async function timed(durationMs: number, op: (i: number) => unknown): Promise<number> {
  let n = 0;
  const t0 = performance.now();
  const end = t0 + durationMs;
  while (performance.now() < end) await op(n++);
  return n / ((performance.now() - t0) / 1000);
}

/** Like `timed` for a synchronous op: no await per call, the clock read once per 1,024 calls. */
function timedSync(durationMs: number, op: (i: number) => unknown): number {
  let n = 0;
  let live = 0;
  const t0 = performance.now();
  const end = t0 + durationMs;
  let now = t0;
  while (now < end) {
    for (let j = 0; j < 1024; j++) if (op(n++) !== undefined) live++;
    now = performance.now();
  }
  if (live === 0) throw new Error('bench sanity: every read missed');
  return n / ((now - t0) / 1000);
}

/** `timed`, with the CPU (user + system) each op cost in µs. */
async function timedCpu(
  durationMs: number,
  op: (i: number) => Promise<void> | void,
): Promise<{ rate: number; cpuUs: number }> {
  const c0 = process.cpuUsage();
  let n = 0;
  const t0 = performance.now();
  const end = t0 + durationMs;
  while (performance.now() < end) await op(n++);
  const rate = n / ((performance.now() - t0) / 1000);
  const c = process.cpuUsage(c0);
  return { rate, cpuUs: (c.user + c.system) / n };
}

/**
 * Local durable set and get rates of Parley, Yjs and Automerge, 1 sequential
 * writer; every side warmed with WARM_UP of each operation before it is timed.
 */
export async function localRates(
  durationMs: number,
): Promise<{ parley: LocalRates; yjs: LocalRates; automerge: LocalRates }> {
  const root = mkdtempSync(join(tmpdir(), 'parley-compare-local-'));
  const key = (i: number) => `k${i % 1000}`;
  try {
    const node = await createNode({
      dataDir: join(root, 'parley'),
      logger: quiet,
      eventual: { maxLiveKeys: 1_000_000 },
    });
    const ns = node.eventual('bench');
    await warm((i) => ns.set(key(i), { i }).then(() => undefined));
    const pSet = await timedCpu(durationMs, (i) => ns.set(key(i), { i }).then(() => undefined));
    await warm((i) => ns.get(key(i)).then(() => undefined));
    const pGet = await timed(durationMs, (i) => ns.get(key(i)));
    await warm((i) => void ns.peek(key(i)));
    const pPeek = timedSync(durationMs, (i) => ns.peek(key(i)));
    await node.close();

    const ykv = await openLevelKV({ path: join(root, 'yjs'), sync: true });
    const ydoc = new Y.Doc();
    const ymap = ydoc.getMap('m');
    let seq = 0;
    let pending: Promise<void> = Promise.resolve();
    ydoc.on('update', (u: Uint8Array) => {
      pending = ykv.save(['y', String(seq++).padStart(12, '0')], u);
    });
    const ySetOp = async (i: number) => {
      ymap.set(key(i), { i });
      await pending;
    };
    await warm(ySetOp);
    const ySet = await timedCpu(durationMs, ySetOp);
    await warm((i) => void ymap.get(key(i)));
    const yGet = await timed(durationMs, (i) => ymap.get(key(i)));
    const yPeek = timedSync(durationMs, (i) => ymap.get(key(i)));
    await ykv.close();

    const akv = await openLevelKV({ path: join(root, 'automerge'), sync: true });
    let adoc = Automerge.init<Record<string, { i: number }>>();
    let aseq = 0;
    const aSetOp = async (i: number) => {
      adoc = Automerge.change(adoc, (d) => {
        d[key(i)] = { i };
      });
      await akv.save(['a', String(aseq++).padStart(12, '0')], Automerge.saveIncremental(adoc));
    };
    await warm(aSetOp);
    const aSet = await timedCpu(durationMs, aSetOp);
    await warm((i) => void adoc[key(i)]);
    const aGet = await timed(durationMs, (i) => adoc[key(i)]);
    const aPeek = timedSync(durationMs, (i) => adoc[key(i)]);
    await akv.close();
    return {
      parley: { set: pSet.rate, setCpuUs: pSet.cpuUs, get: pGet, peek: pPeek },
      yjs: { set: ySet.rate, setCpuUs: ySet.cpuUs, get: yGet, peek: yPeek },
      automerge: { set: aSet.rate, setCpuUs: aSet.cpuUs, get: aGet, peek: aPeek },
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Length-prefixed frames over a socket. */
class Framed {
  private buf = Buffer.alloc(0);
  private readonly queue: Uint8Array[] = [];
  private wake?: () => void;
  bytes = 0;
  constructor(private readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 4) {
        const len = this.buf.readUInt32BE(0);
        if (len > 64 * 1024 * 1024) throw new Error('frame too large');
        if (this.buf.length < 4 + len) break;
        this.queue.push(new Uint8Array(this.buf.subarray(4, 4 + len)));
        this.buf = this.buf.subarray(4 + len);
      }
      this.wake?.();
    });
  }
  send(msg: Uint8Array): void {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(msg.length);
    this.bytes += msg.length;
    this.socket.write(Buffer.concat([head, msg]));
  }
  async next(): Promise<Uint8Array> {
    while (this.queue.length === 0) await new Promise<void>((r) => (this.wake = r));
    return this.queue.shift() as Uint8Array;
  }
}

async function pair(): Promise<{ a: Framed; b: Framed; close(): void }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const client = connect(port, '127.0.0.1');
  await new Promise<void>((r) => client.once('connect', r));
  const srv = await accepted;
  return {
    a: new Framed(client),
    b: new Framed(srv),
    close() {
      client.destroy();
      srv.destroy();
      server.close();
    },
  };
}

export interface SyncCost {
  bytes: number;
  ms: number;
}

/** 1% of `n` keys changed on A; B catches up over loopback TCP. */
export async function antiEntropyAnchors(
  n = 100_000,
): Promise<{ yjs: SyncCost; automerge: SyncCost; changedBytes: number }> {
  const changed = n / 100;
  let changedBytes = 0;
  for (let i = 0; i < changed; i++) changedBytes += Buffer.byteLength(`key-${i * 100}`) + Buffer.byteLength(String(-i));

  // Yjs: B sends its state vector, A answers with the update B lacks.
  const ya = new Y.Doc();
  ya.transact(() => {
    const m = ya.getMap('m');
    for (let i = 0; i < n; i++) m.set(`key-${i}`, i);
  });
  const yb = new Y.Doc();
  Y.applyUpdate(yb, Y.encodeStateAsUpdate(ya));
  // The 1% change in one transaction / one change: each anchor at its most compact.
  ya.transact(() => {
    for (let i = 0; i < changed; i++) ya.getMap('m').set(`key-${i * 100}`, -i);
  });
  const yc = await pair();
  const yt0 = performance.now();
  yc.b.send(Y.encodeStateVector(yb));
  const sv = await yc.a.next();
  yc.a.send(Y.encodeStateAsUpdate(ya, sv));
  Y.applyUpdate(yb, await yc.b.next());
  const yms = performance.now() - yt0;
  const ybytes = yc.a.bytes + yc.b.bytes;
  yc.close();
  if (yb.getMap('m').get(`key-${(changed - 1) * 100}`) !== -(changed - 1)) throw new Error('Yjs sync did not converge');

  // Automerge: both sides run the sync protocol until neither has a message.
  let aa = Automerge.change(Automerge.init<Record<string, number>>(), (d) => {
    for (let i = 0; i < n; i++) d[`key-${i}`] = i;
  });
  let ab = Automerge.merge(Automerge.init<Record<string, number>>(), aa);
  let sa = Automerge.initSyncState();
  let sb = Automerge.initSyncState();
  // Bring the sync states up to date first (a long-lived connection has them).
  for (let r = 0; r < 20; r++) {
    const [nsa, ma] = Automerge.generateSyncMessage(aa, sa);
    sa = nsa;
    if (ma) [ab, sb] = Automerge.receiveSyncMessage(ab, sb, ma);
    const [nsb, mb] = Automerge.generateSyncMessage(ab, sb);
    sb = nsb;
    if (mb) [aa, sa] = Automerge.receiveSyncMessage(aa, sa, mb);
    if (!ma && !mb) break;
  }
  aa = Automerge.change(aa, (d) => {
    for (let i = 0; i < changed; i++) d[`key-${i * 100}`] = -i;
  });
  const ac = await pair();
  const at0 = performance.now();
  const EMPTY = new Uint8Array(0);
  for (let round = 0; round < 50; round++) {
    const [nsa, ma] = Automerge.generateSyncMessage(aa, sa);
    sa = nsa;
    ac.a.send(ma ?? EMPTY);
    const ra = await ac.b.next();
    if (ra.length > 0) [ab, sb] = Automerge.receiveSyncMessage(ab, sb, ra);
    const [nsb, mb] = Automerge.generateSyncMessage(ab, sb);
    sb = nsb;
    ac.b.send(mb ?? EMPTY);
    const rb = await ac.a.next();
    if (rb.length > 0) [aa, sa] = Automerge.receiveSyncMessage(aa, sa, rb);
    if (!ma && !mb) break;
  }
  const ams = performance.now() - at0;
  const abytes = ac.a.bytes + ac.b.bytes;
  ac.close();
  if (ab[`key-${(changed - 1) * 100}`] !== -(changed - 1)) throw new Error('Automerge sync did not converge');
  return { yjs: { bytes: ybytes, ms: yms }, automerge: { bytes: abytes, ms: ams }, changedBytes };
}
