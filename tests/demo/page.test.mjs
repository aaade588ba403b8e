// The demo page (www/) in Debian's headless Chromium through playwright-core: a
// fixed-seed run to the end, scored against the simulator's ground truth.
// Needs www/pkg/ (`npm run build`); never downloads a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { OUT, servedPage, WAIT } from '../support/browser.mjs';

const SEED = 20260716; // the page's default; any fixed seed works

const open = servedPage(['body[data-run="idle"]']);

const num = async (page, sel) => Number((await page.textContent(sel)).replace(/,/g, ''));

test('a fixed-seed run: reconnect-dedupe loses nothing and passes no duplicate, naive loses', async () => {
  const { page, problems, wasmLoads, base } = await open({ width: 1280, height: 900 }, `?seed=${SEED}`);
  assert.equal(await page.inputValue('#seed'), String(SEED));

  // Step once by hand, then run the rest through the page's own button.
  await page.click('#step');
  await page.waitForFunction(() => document.getElementById('clock').textContent.startsWith('minute 1 '), null, WAIT);
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);
  const minutes = Number(await page.inputValue('#minutes'));
  assert.match(await page.textContent('#clock'), new RegExp(`^minute ${minutes} / ${minutes} `));

  // Big numbers against the ground truth.
  assert.equal(await num(page, '[data-stat="wasm-lost"]'), 0, 'reconnect-dedupe lost a real reading');
  assert.equal(await num(page, '[data-stat="wasm-dups"]'), 0, 'reconnect-dedupe passed a duplicate');
  assert.ok((await num(page, '[data-stat="naive-lost"]')) > 0, 'naive dedupe should lose same-timestamp readings');
  assert.ok((await num(page, '[data-stat="none-dups"]')) > 0, 'no dedupe should pass duplicates');
  assert.equal(await num(page, '[data-stat="none-lost"]'), 0);
  // The README's picture is this run (`npm run screenshot` makes it): its caption quotes it.
  const caption = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    .match(/!\[The demo after a default run: no dedupe passes ([\d,]+) duplicates, naive device\+timestamp dedupe loses ([\d,]+) real readings/);
  assert.ok(caption, 'the README shows the demo with its caption');
  assert.deepEqual(caption.slice(1).map((n) => Number(n.replace(/,/g, ''))), [await num(page, '[data-stat="none-dups"]'), await num(page, '[data-stat="naive-lost"]')]);

  // The core's counters reconcile, and agree with the ground truth.
  const c = {};
  for (const k of ['received', 'unique', 'duplicates_suppressed', 'rejected', 'keys', 'memory_bytes', 'copies', 'corrupted', 'intact']) {
    c[k] = await num(page, `[data-counter="${k}"]`);
  }
  assert.ok(c.received > 1000, `a real run, got ${c.received} readings`);
  assert.equal(c.received, c.unique + c.duplicates_suppressed + c.rejected);
  assert.equal(c.received, c.copies, 'the core received every delivered copy');
  assert.equal(c.rejected, c.corrupted, 'exactly the corrupted copies are rejected');
  assert.ok(c.corrupted > 0, 'the scenario includes corrupted retransmissions');
  assert.equal(c.unique, c.intact, 'one admission per real reading that arrived intact');
  assert.equal(c.keys, c.unique, 'nothing expired or evicted with the default limits');
  assert.ok(c.memory_bytes > 0);
  assert.match(await page.textContent('#reconcile'), /^✓ /);

  // The audit lines are the core's JSON, one per burst, reconciling on their own.
  const lines = await page.$$eval('#audit li', (items) => items.map((li) => li.textContent));
  assert.equal(lines.length, 8);
  for (const line of lines) {
    const a = JSON.parse(line);
    assert.equal(a.event, 'burst_deduplicated');
    const p = a.payload;
    assert.equal(p.received, p.unique + p.duplicates_suppressed + p.rejected);
  }
  assert.equal(JSON.parse(lines.at(-1)).logged_at, '2026-07-16T10:00:00+00:00', 'simulated time is the core clock');

  // Reset reproduces the same run from the same seed.
  const first = await page.evaluate(() => window.demo.snapshot().summary);
  await page.click('#reset');
  await page.waitForSelector('body[data-run="idle"]', WAIT);
  assert.equal(await num(page, '[data-counter="received"]'), 0);
  const again = await page.evaluate(() => window.demo.runToEnd().then((s) => s.summary));
  assert.deepEqual(again, first);

  await page.evaluate(() => window.scrollTo(0, 0)); // the toolbar is sticky
  await page.screenshot({ path: new URL('demo.png', OUT).pathname, fullPage: true });
  assert.deepEqual(wasmLoads, [`${base}pkg/reconnect_dedupe_bg.wasm`], 'the Wasm module is fetched once');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a max keys cap too small lets duplicates through and counts evictions', async () => {
  const { page, problems } = await open({ width: 1280, height: 900 }, `?seed=${SEED}&minutes=60`);
  await page.fill('#maxKeys', '200');
  await page.press('#maxKeys', 'Enter'); // change event: a new deduplicator, minute 0
  await page.waitForFunction(() => window.demo.snapshot().stats.max_keys === 200, null, WAIT);
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);
  assert.ok((await num(page, '[data-stat="wasm-dups"]')) > 0, 'evicted keys let replays through');
  assert.ok((await num(page, '[data-counter="evicted_before_ttl"]')) > 0);
  assert.equal(await num(page, '[data-counter="keys"]'), 200);
  assert.equal(await num(page, '[data-stat="wasm-lost"]'), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the page fits a 375 px wide screen and its controls are labelled', async () => {
  const { page, problems } = await open({ width: 375, height: 812 }, `?seed=${SEED}&minutes=90`);
  // Keyboard: the first Tab lands on the play button, and Space starts the run.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'play');
  await page.keyboard.press('Space');
  await page.waitForSelector('body[data-run="playing"]', WAIT);
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll('input, select, button')]
      .filter((el) => !(el.labels?.length || el.textContent.trim() || el.getAttribute('aria-label')))
      .map((el) => el.id || el.outerHTML),
  );
  assert.deepEqual(unlabelled, []);
  await page.evaluate(() => window.scrollTo(0, 0)); // the toolbar is sticky
  await page.screenshot({ path: new URL('demo-375.png', OUT).pathname, fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});
