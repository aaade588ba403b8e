// The demo's "against the worker" switch in headless Chromium: the page and
// /v1/readings on one origin, as `npm start` serves them. www/ comes from the static
// handler, /v1/ goes to the real worker in workerd (tests/support/harness.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { launchChromium, watch, listen, closeAll } from '../support/browser.mjs';
import { wwwHandler } from '../../scripts/serve-www.mjs';
import { start, TOKEN } from '../support/harness.mjs';

const WAIT = { timeout: 120_000 };
let worker;
let server;
let browser;
let base;

before(async () => {
  worker = await start();
  const www = wwwHandler();
  server = http.createServer(async (req, res) => {
    if (!req.url.startsWith('/v1/')) return www(req, res);
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = {};
    for (const h of ['authorization', 'content-type']) if (req.headers[h]) headers[h] = req.headers[h];
    const reply = await worker.call(req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    res.writeHead(reply.status, { 'content-type': reply.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await reply.arrayBuffer()));
  });
  base = await listen(server);
  browser = await launchChromium();
});

after(async () => {
  await closeAll(browser, server);
  await worker?.mf.dispose();
});

test('with the switch on, every burst gets the same verdict from the worker as in the browser', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = watch(page, base);

  const minutes = 60;
  await page.goto(`${base}?seed=4242&fleet=12&minutes=${minutes}&corruptPct=30&outagePerHour=90&replayTwicePct=100`);
  await page.waitForSelector('body[data-run="idle"]', WAIT);
  assert.equal(await page.inputValue('#token'), 'dev-token', 'prefilled with the local dev token');
  await page.fill('#token', TOKEN); // the harness's token
  await page.check('#useWorker');
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);

  const s = await page.evaluate(() => window.demo.snapshot());
  assert.equal(s.workerDiffer, 0, await page.textContent('#worker-log'));
  assert.equal(s.workerAgree, minutes, 'one agreeing reply per burst');
  assert.ok(s.core.rejected > 0 && s.core.duplicates_suppressed > 0, 'the bursts had rejections and duplicates to agree on');
  assert.equal(await page.isChecked('#useWorker'), true, 'the switch stayed on (no failed request)');
  assert.match(await page.textContent('#worker-status'), new RegExp(`^${minutes} bursts agree, 0 differ`));
  await page.evaluate(() => window.scrollTo(0, 0)); // the toolbar is sticky
  await page.screenshot({ path: new URL('../../test-output/demo-worker.png', import.meta.url).pathname, fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});
