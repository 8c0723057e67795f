// A desktop agent keeps notes (a Yjs document) and settings (LWW entries) in the
// eventual namespace `agent`, on two devices: a laptop and a phone, each a Parley node
// with its own data dir. They sync, the phone goes offline, both edit, the phone comes
// back; both converge, and the program prints the bytes the two nodes exchanged.
//
// Run after `npm ci`:  node examples/offline-agent/offline-agent.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNode } from '@parley/node';
import * as Y from 'yjs';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** Resolves once `check()` holds, re-checking on every change of the namespaces and docs given; bounded. */
function until(check, { namespaces = [], docs = [], timeoutMs = 10_000, what = 'condition' }) {
  return new Promise((resolve, reject) => {
    const stops = [];
    const done = (err) => {
      clearTimeout(timer);
      for (const stop of stops) stop();
      err ? reject(err) : resolve();
    };
    const timer = setTimeout(() => done(new Error(`${what} not reached within ${timeoutMs} ms`)), timeoutMs);
    const test = async () => {
      try {
        if (await check()) done();
      } catch (err) {
        done(err);
      }
    };
    for (const ns of namespaces) stops.push(ns.watch({}, test));
    for (const doc of docs) {
      doc.on('update', test);
      stops.push(() => doc.off('update', test));
    }
    test();
  });
}

/** Counts the replication bytes a node sends and receives (the node's own events). */
function meter(node) {
  const m = { gossipIn: 0, gossipOut: 0, antiEntropy: 0 };
  node.events.on('gossip:bytes', (e) => {
    if (e.direction === 'in') m.gossipIn += e.bytes;
    else m.gossipOut += e.bytes;
  });
  node.events.on('antientropy:round', (e) => {
    m.antiEntropy += e.bytes;
  });
  return m;
}

const settingsOf = async (ns) =>
  Object.fromEntries(
    (await ns.list({ q: '' })).items.filter((e) => e.key.startsWith('settings/')).map((e) => [e.key, e.value]),
  );

export async function run({ print = () => {} } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'parley-offline-agent-'));
  const laptopDir = join(root, 'laptop');
  const phoneDir = join(root, 'phone');
  const laptop = await createNode({ dataDir: laptopDir, logger: quiet });
  const psk = join(laptopDir, 'cluster.psk'); // copy this file to every device of the cluster
  let phone;
  try {
    const la = laptop.eventual('agent');
    const laNotes = await la.yjs('notes');
    laNotes.getText('body').insert(0, 'Notes\n- buy milk\n');
    await la.set('settings/theme', 'dark');
    await la.set('settings/model', 'small');

    // 1. Online: the phone joins and pulls everything.
    phone = await createNode({ dataDir: phoneDir, psk, bootstrap: laptop.addresses, logger: quiet });
    let ph = phone.eventual('agent');
    let phNotes = await ph.yjs('notes');
    await until(
      async () =>
        phNotes.getText('body').toString() === laNotes.getText('body').toString() &&
        (await ph.get('settings/model')) !== undefined,
      {
        namespaces: [ph],
        docs: [phNotes],
        what: 'first sync',
      },
    );
    print(`online: phone has ${JSON.stringify(phNotes.getText('body').toString())}`);

    // 2. Offline: the phone's node stops (no network); both devices keep editing.
    await phone.close();
    phone = await createNode({ dataDir: phoneDir, psk, bootstrap: [], logger: quiet });
    ph = phone.eventual('agent');
    phNotes = await ph.yjs('notes');
    phNotes.getText('body').insert(phNotes.getText('body').length, '- call the bank (phone, offline)\n');
    await ph.set('settings/font-size', 14);
    laNotes.getText('body').insert(laNotes.getText('body').length, '- book train (laptop, offline)\n');
    await la.set('settings/model', 'large');
    await ph.set('settings/theme', 'light'); // written last: last writer wins
    print(`offline laptop: ${JSON.stringify(laNotes.getText('body').toString())}`);
    print(`offline phone:  ${JSON.stringify(phNotes.getText('body').toString())}`);

    // What Yjs's state-vector exchange has to carry each way: only the missing edits.
    const notesDiff = {
      toPhone: Y.encodeStateAsUpdate(laNotes, Y.encodeStateVector(phNotes)).byteLength,
      toLaptop: Y.encodeStateAsUpdate(phNotes, Y.encodeStateVector(laNotes)).byteLength,
      wholeDoc: Y.encodeStateAsUpdate(laNotes).byteLength,
    };

    // 3. Reconnect: the phone comes back online and dials the laptop.
    await phone.close();
    phone = await createNode({ dataDir: phoneDir, psk, bootstrap: laptop.addresses, logger: quiet });
    const phoneBytes = meter(phone);
    const laptopBytes = meter(laptop);
    ph = phone.eventual('agent');
    phNotes = await ph.yjs('notes');
    const converged = async () =>
      phNotes.getText('body').toString() === laNotes.getText('body').toString() &&
      JSON.stringify(await settingsOf(ph)) === JSON.stringify(await settingsOf(la));
    await until(converged, { namespaces: [ph, la], docs: [phNotes, laNotes], what: 'convergence after reconnect' });
    const result = {
      notes: laNotes.getText('body').toString(),
      phoneNotes: phNotes.getText('body').toString(),
      settings: await settingsOf(la),
      phoneSettings: await settingsOf(ph),
      bytes: { phone: phoneBytes, laptop: laptopBytes, notesDiff },
    };
    print(`converged notes: ${JSON.stringify(result.notes)}`);
    print(`converged settings: ${JSON.stringify(result.settings)}`);
    print(
      `replication bytes after reconnect (node events): phone ${JSON.stringify(phoneBytes)}, laptop ${JSON.stringify(laptopBytes)}`,
    );
    print(
      `notes: Yjs updates missing on each side ${notesDiff.toPhone} B to the phone, ${notesDiff.toLaptop} B to the laptop (whole document ${notesDiff.wholeDoc} B)`,
    );
    return result;
  } finally {
    await phone?.close();
    await laptop.close();
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await run({ print: (line) => console.log(line) });
}
