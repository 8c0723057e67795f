/**
 * examples/yjs-page against a real `parley serve` process: the page's collab.js
 * (stock y-websocket provider) in two "tabs" types, sees the other's text and
 * presence. (Restarts from disk: packages/server/src/yjs/libp2p.test.ts.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocket as NodeWebSocket } from 'ws';
import { applyEdit, joinRoom } from '../examples/yjs-page/collab.js';
import { PARLEY_BIN } from './http-harness.js';

/** `ws`, standing in for a browser's WebSocket. */
const WebSocket = NodeWebSocket as unknown as typeof globalThis.WebSocket;

const dataDir = mkdtempSync(join(tmpdir(), 'parley-examples-yjs-'));
const running: ChildProcess[] = [];

function serve(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [PARLEY_BIN, 'serve', '-p', '0', '-d', dataDir], {
    env: { ...process.env, PARLEY_API_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  running.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`parley serve did not start: ${out}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /\n {2}yjs {7}(ws:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
    child.once('exit', (code) => reject(new Error(`parley serve exited ${code}: ${out}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

afterAll(async () => {
  for (const c of running) await stop(c);
  rmSync(dataDir, { recursive: true, force: true });
});

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('examples/yjs-page', () => {
  it('two browsers share the page through parley serve: text and presence', async () => {
    const first = await serve();
    // Two browsers, not two tabs of one: no BroadcastChannel shortcut, everything goes through the node.
    const tab = (name: string) =>
      joinRoom({ serverUrl: first.url, room: 'pages/welcome', name, WebSocket, crossTab: false });
    const ada = tab('Ada');
    const bo = tab('Bo');
    try {
      await until('both synced', () => ada.provider.synced && bo.provider.synced);
      applyEdit(ada.text, 'Hello');
      await until('Bo sees Ada', () => bo.text.toString() === 'Hello');
      // Both type at once, each at a different end of the text.
      applyEdit(bo.text, `${bo.text.toString()}, world`);
      applyEdit(ada.text, `¡${ada.text.toString()}`);
      await until(
        'both converge',
        () => ada.text.toString() === '¡Hello, world' && bo.text.toString() === '¡Hello, world',
      );
      await until('both present', () => ada.people().length === 2 && bo.people().length === 2);
      expect(ada.people().map((p) => `${p.name}${p.self ? '*' : ''}`)).toEqual(['Ada*', 'Bo']);
    } finally {
      ada.leave();
      bo.leave();
    }
  }, 60_000);
});
