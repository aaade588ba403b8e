// Shared by the browser tests: Debian's Chromium through playwright-core (never a
// downloaded browser), a recorder of everything that should not happen on a page, and
// the demo page served from www/ for a test file (`servedPage`).
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { before, after } from 'node:test';
import { serveWww } from '../../scripts/serve-www.mjs';

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Records console errors, page errors, failed requests, HTTP errors and requests off `base`. */
export function watch(page, base) {
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) problems.push(`external request: ${r.url()}`);
  });
  return problems;
}

/** Listens on an ephemeral port of 127.0.0.1; resolves with the base URL. */
export async function listen(server) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${server.address().port}/`;
}

export async function closeAll(browser, server) {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
}

/** Where the browser tests write their screenshots. */
export const OUT = new URL('../../test-output/', import.meta.url);
/** How long a page may take to reach a state. */
export const WAIT = { timeout: 60_000 };

/**
 * Serves www/ and launches Chromium for the calling test file (its before/after hooks);
 * returns `open(viewport, query, context)`, which opens the page (`context`: more of
 * playwright's context options, `{ hasTouch: true, isMobile: true }` for a phone),
 * records what should not happen (`watch`) and the Wasm fetches, waits for each
 * selector of `ready`, and answers `{page, problems, wasmLoads, base}` (`base`: the
 * served URL).
 */
export function servedPage(ready) {
  assert.ok(
    fs.existsSync(new URL('../../www/pkg/reconnect_dedupe_bg.wasm', import.meta.url)),
    'www/pkg/ is missing: run `npm run build` first',
  );
  let server;
  let browser;
  let base;
  before(async () => {
    fs.mkdirSync(OUT, { recursive: true });
    server = serveWww();
    base = await listen(server);
    browser = await launchChromium();
  });
  after(async () => {
    await closeAll(browser, server);
  });
  return async function open(viewport, query = '', context = {}) {
    const page = await browser.newPage({ viewport, ...context });
    const problems = watch(page, base);
    const wasmLoads = [];
    page.on('request', (r) => r.url().endsWith('.wasm') && wasmLoads.push(r.url()));
    await page.goto(`${base}${query}`);
    for (const selector of ready) await page.waitForSelector(selector, WAIT);
    return { page, problems, wasmLoads, base };
  };
}
