/**
 * @parley/browser in a real browser: the bundle (packages/browser/bundle.mjs, built
 * here with vite from the sources) loaded by a page in headless Chromium, against a
 * Parley node's sync and y-websocket doors. The page writes while the node is down
 * (an entry, a counter, a Yjs edit), the node comes back on the same port, and the
 * page converges with it both ways; after a reload, with the node down again, the
 * page reads its writes from IndexedDB under the same replica id.
 *
 * examples/browser-notes, built with vite as an app would be, is driven the same way
 * through its page: a note saved offline, the node's note, a reload with the node down.
 *
 * Chromium is Debian's (`/usr/bin/chromium`, `PARLEY_CHROMIUM` overrides); `.ci/run`
 * installs it. Without it: CI=true fails, a developer's run skips loudly.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { createNode, type ParleyNode } from '@parley/node';
import { silentNodeLogger } from '@parley/node/testing';
import { createServer, type ParleyServer } from '@parley/server';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './http-harness.js';

const CHROMIUM = process.env.PARLEY_CHROMIUM ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present) {
  const msg = `${CHROMIUM} is missing: the browser test of @parley/browser needs Debian's chromium (apt-get install chromium)`;
  if (process.env.CI === 'true') throw new Error(`CI=true: ${msg}`);
  console.warn(`SKIPPED: ${msg}`);
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript' };

const PAGE = `<!doctype html><meta charset="utf-8"><title>parley browser test</title>
<script type="module">
import { createBrowserNode } from './parley-browser.js';
window.createBrowserNode = createBrowserNode;
document.title = 'loaded';
</script>`;

async function staticServer(dir: string): Promise<{ server: Server; url: string }> {
  const server = createHttpServer((req, res) => {
    const path = normalize((req.url ?? '/').split('?', 1)[0] as string).replace(/^(\.\.[/\\])+/, '');
    const file = join(dir, path === '/' ? 'index.html' : path);
    if (!file.startsWith(dir) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

/** Page-side code (this file is not compiled with the DOM library): open the node and the namespace. */
const OPEN = `async (url) => {
  window.node = await window.createBrowserNode({ url, name: 'parley-test', syncIntervalMs: 200, maxReconnectMs: 400 });
  window.ns = window.node.eventual('tabs');
  await window.ns.get('nothing');
  return window.ns.replicaId;
}`;

describe.skipIf(!present)('@parley/browser in headless Chromium', () => {
  const out = mkdtempSync(join(tmpdir(), 'parley-browser-bundle-'));
  const exampleOut = mkdtempSync(join(tmpdir(), 'parley-browser-notes-'));
  let exampleUrl: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-browser-node-'));
  const cleanups: Array<() => Promise<void> | void> = [];
  let browser: Browser;
  let pageUrl: string;
  let node: ParleyNode;
  let sizes: Array<{ file: string; gzipBytes: number }>;

  beforeAll(async () => {
    const { buildBundle, sourceAliases } = await import(join(ROOT, 'packages/browser/bundle.mjs'));
    sizes = await buildBundle(out);
    await build({
      root: join(ROOT, 'examples/browser-notes'),
      configFile: false,
      logLevel: 'silent',
      resolve: { alias: sourceAliases() },
      build: { outDir: exampleOut, emptyOutDir: true, target: 'es2022' },
    });
    const example = await staticServer(exampleOut);
    cleanups.push(() => new Promise<void>((r) => example.server.close(() => r())));
    exampleUrl = example.url;
    writeFileSync(join(out, 'index.html'), PAGE);
    const site = await staticServer(out);
    cleanups.push(() => new Promise<void>((r) => site.server.close(() => r())));
    pageUrl = site.url;
    node = await createNode({ dataDir, listen: ['/ip4/127.0.0.1/tcp/0'], logger: silentNodeLogger });
    cleanups.push(() => node.close());
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    cleanups.push(() => browser.close());
  }, 60_000);

  afterAll(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
    rmSync(out, { recursive: true, force: true });
    rmSync(exampleOut, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function serve(port: number): Promise<ParleyServer & { url: string; port: number }> {
    const server = await createServer({ node, port, defaultMetrics: false });
    const url = await server.listen();
    return Object.assign(server, { url, port: Number(new URL(url).port) });
  }

  async function load(page: Page): Promise<void> {
    await page.goto(pageUrl);
    await page.waitForFunction("document.title === 'loaded'", null, { timeout: 15_000 });
  }

  it('writes offline, converges with the node on reconnect, and keeps its state across a reload', async () => {
    const first = await serve(0);
    await first.close(); // the node's HTTP side is down: the page starts offline
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await load(page);
    const id = await page.evaluate(`(${OPEN})(${JSON.stringify(first.url)})`);
    expect(String(id)).toMatch(/^browser-[0-9a-f]{24}$/);
    await page.evaluate(`(async () => {
      await ns.set('draft', { text: 'written offline' }, { ttl: 600 });
      await ns.increment('visits', 2);
      const doc = await ns.yjs('pad');
      doc.getText('body').insert(0, 'typed offline');
    })()`);
    expect(await page.evaluate('ns.syncState')).not.toBe('synced');

    const back = await serve(first.port);
    await page.waitForFunction("ns.syncState === 'synced'", null, { timeout: 15_000 });
    const tabs = node.eventual('tabs');
    expect((await tabs.get('draft'))?.value).toEqual({ text: 'written offline' });
    expect((await tabs.get('visits'))?.value).toBe(2);
    const pad = await tabs.yjs('pad');
    const deadline = Date.now() + 15_000;
    while (pad.getText('body').toString() !== 'typed offline') {
      if (Date.now() > deadline) throw new Error(`the node's pad holds '${pad.getText('body').toString()}'`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // The node's writes reach the page (live, without a reload).
    await tabs.set('fromNode', 'hello tab');
    await tabs.increment('visits', 3);
    pad.getText('body').insert(0, '> ');
    await page.waitForFunction(
      `(async () => (await ns.get('fromNode'))?.value === 'hello tab' && (await ns.get('visits'))?.value === 5)()`,
      null,
      { timeout: 15_000, polling: 100 },
    );
    await page.waitForFunction(
      `(async () => (await ns.yjs('pad')).getText('body').toString() === '> typed offline')()`,
      null,
      { timeout: 15_000, polling: 100 },
    );
    await page.evaluate('node.close()');

    // A reload with the node down: the state comes from IndexedDB, under the same replica id.
    await back.close();
    await page.reload();
    await page.waitForFunction("document.title === 'loaded'", null, { timeout: 15_000 });
    expect(await page.evaluate(`(${OPEN})(${JSON.stringify(first.url)})`)).toBe(id);
    const after = await page.evaluate(`(async () => ({
      draft: (await ns.get('draft'))?.value,
      fromNode: (await ns.get('fromNode'))?.value,
      visits: (await ns.get('visits'))?.value,
      pad: (await ns.yjs('pad')).getText('body').toString(),
      state: ns.syncState,
    }))()`);
    expect(after).toEqual({
      draft: { text: 'written offline' },
      fromNode: 'hello tab',
      visits: 5,
      pad: '> typed offline',
      state: expect.not.stringMatching(/^synced$/),
    });
    await page.evaluate('node.close()');
    expect(errors).toEqual([]);
    const gz = (prefix: string) => sizes.filter((s) => s.file.startsWith(prefix)).reduce((n, s) => n + s.gzipBytes, 0);
    const total = sizes.reduce((n, s) => n + s.gzipBytes, 0);
    console.info(
      `@parley/browser bundle, gzipped: ${(total / 1024).toFixed(1)} KB in all; Yjs chunk ${(gz('yjs') / 1024).toFixed(1)} KB; IndexedDB store chunk ${(gz('browser-level') / 1024).toFixed(1)} KB`,
    );
  }, 60_000);

  it('two tabs of one profile share IndexedDB but are two replicas (Web Locks slots), and converge', async () => {
    const server = await serve(0);
    const context = await browser.newContext();
    const [a, b] = [await context.newPage(), await context.newPage()];
    for (const page of [a, b]) await load(page);
    const idA = await a.evaluate(`(${OPEN})(${JSON.stringify(server.url)})`);
    const idB = await b.evaluate(`(${OPEN})(${JSON.stringify(server.url)})`);
    expect(idA).not.toBe(idB);
    await a.evaluate("ns.increment('hits', 1)");
    await b.evaluate("ns.increment('hits', 10)");
    for (const page of [a, b]) {
      await page.waitForFunction(`(async () => (await ns.get('hits'))?.value === 11)()`, null, {
        timeout: 15_000,
        polling: 100,
      });
    }
    expect((await node.eventual('tabs').get('hits'))?.value).toBe(11);
    for (const page of [a, b]) await page.evaluate('node.close()');
    await context.close();
    await server.close();
  }, 60_000);

  it("examples/browser-notes: a note saved offline reaches the node, the node's appears, a reload keeps both", async () => {
    const first = await serve(0);
    await first.close();
    const page = await (await browser.newContext()).newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${exampleUrl}/?ns=board&node=${encodeURIComponent(first.url)}`);
    const listed = (line: string) =>
      page.waitForFunction(
        `[...document.querySelectorAll('#notes li')].some((li) => li.textContent === ${JSON.stringify(line)})`,
        null,
        { timeout: 15_000 },
      );
    await page.waitForFunction("['offline', 'connecting'].includes(document.querySelector('#status').textContent)");
    await page.locator('#key').fill('milk');
    await page.locator('#text').fill('buy milk');
    await page.locator('#add button').click();
    await listed('milk: buy milk');

    const back = await serve(first.port);
    await page.waitForFunction("document.querySelector('#status').textContent === 'synced'", null, { timeout: 15_000 });
    expect((await node.eventual('board').get('milk'))?.value).toBe('buy milk');
    await node.eventual('board').set('eggs', 'six eggs');
    await listed('eggs: six eggs');

    await back.close();
    await page.reload();
    await listed('milk: buy milk');
    await listed('eggs: six eggs');
    expect(await page.locator('#status').textContent()).not.toBe('synced');
    expect(errors).toEqual([]);
  }, 60_000);
});
