/**
 * examples/yjs-page in a real browser: the page is built with vite (as an app
 * would be), served from loopback, and opened in two headless Chromium contexts
 * (two browsers: no BroadcastChannel between them) against a Parley node's
 * y-websocket door; what one types appears in the other and on the node, and
 * each lists the other as present.
 *
 * Chromium is Debian's (`/usr/bin/chromium`, `PARLEY_CHROMIUM` overrides);
 * `.ci/run` installs it. Without it: CI=true fails, a developer's run skips loudly.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { memoryCluster } from '@parley/node/testing';
import { createServer } from '@parley/server';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './http-harness.js';

const CHROMIUM = process.env.PARLEY_CHROMIUM ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present) {
  const msg = `${CHROMIUM} is missing: the browser test of examples/yjs-page needs Debian's chromium (apt-get install chromium)`;
  if (process.env.CI === 'true') throw new Error(`CI=true: ${msg}`);
  console.warn(`SKIPPED: ${msg}`);
}

/** A page expression (this file is not compiled with the DOM library): the text area holds `text`. */
const valueIs = (text: string) => `document.querySelector('#body').value === ${JSON.stringify(text)}`;

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/** Serves a directory of built files on 127.0.0.1. */
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

describe.skipIf(!present)('examples/yjs-page in headless Chromium', () => {
  const out = mkdtempSync(join(tmpdir(), 'parley-yjs-page-'));
  const cleanups: Array<() => Promise<void> | void> = [];
  let browser: Browser;
  let pageUrl: string;
  let doorUrl: string;
  let node: Awaited<ReturnType<ReturnType<typeof memoryCluster>['start']>>;

  beforeAll(async () => {
    await build({
      root: join(ROOT, 'examples/yjs-page'),
      logLevel: 'silent',
      build: { outDir: out, emptyOutDir: true },
    });
    const page = await staticServer(out);
    cleanups.push(() => new Promise<void>((r) => page.server.close(() => r())));
    pageUrl = page.url;
    node = await memoryCluster().start('a');
    const server = await createServer({ node, port: 0, defaultMetrics: false });
    doorUrl = `${(await server.listen()).replace('http:', 'ws:')}/yjs`;
    cleanups.push(async () => {
      await server.close();
      await node.close();
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    cleanups.push(() => browser.close());
  }, 60_000);

  afterAll(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
    rmSync(out, { recursive: true, force: true });
  });

  async function open(name: string): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${pageUrl}/?room=pages/browser&name=${name}&node=${encodeURIComponent(doorUrl)}`);
    await page.waitForFunction("document.querySelector('#status')?.textContent === 'connected'", null, {
      timeout: 15_000,
    });
    expect(errors).toEqual([]);
    return page;
  }

  it('two browsers type into one page through the node, and see each other present', async () => {
    const ada = await open('Ada');
    const bo = await open('Bo');
    await ada.locator('#body').fill('Hello from Ada');
    await bo.waitForFunction(valueIs('Hello from Ada'));
    await bo.locator('#body').fill('Hello from Ada, and Bo');
    const both = 'Hello from Ada, and Bo';
    await ada.waitForFunction(valueIs(both));
    const onNode = await node.eventual('pages').yjs('browser');
    expect(onNode.getText('body').toString()).toBe(both);
    for (const page of [ada, bo]) {
      await page.waitForFunction("document.querySelectorAll('#people li').length === 2");
    }
    expect(await ada.locator('#people li').allTextContents()).toEqual(['Ada (you)', 'Bo']);
    expect(await bo.locator('#people li').allTextContents()).toEqual(['Bo (you)', 'Ada']);
    if (process.env.PARLEY_SCREENSHOT) await ada.screenshot({ path: process.env.PARLEY_SCREENSHOT });
  }, 60_000);
});
