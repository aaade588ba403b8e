// The demo page (www/) in Debian's headless Chromium through playwright-core: the
// default run to the end, scored against the simulator's ground truth, its charts'
// marks against the traffic, its backfill; a small seen-set; a phone.
// Needs www/pkg/ (`npm run build`); never downloads a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { OUT, servedPage, WAIT } from '../support/browser.mjs';
import { PARAMS, START_MS, TICK_MS, simulate, telltaleBin } from '../../www/sim.js';
import { STRATEGIES } from '../../www/strategies.js';
import { MARKS } from '../../www/chart.js';

const SEED = PARAMS.seed.def; // the page's default; any fixed seed works for the other tests
const hhmm = (ms) => new Date(ms).toISOString().slice(11, 16);

/**
 * The chart bin's readings a keyed strategy loses, from the traffic alone: of the intact
 * readings that share a key, all but the first to arrive, each at the minute its first
 * intact copy came, as the chart titles its mark.
 */
function expectedLost(stream, dev, key) {
  const first = new Map(); // key -> the rid that arrived intact first
  const lost = new Map(); // rid -> its mark's title
  stream.ticks.forEach((t, m) => {
    for (const u of t.uplinks) {
      if (u.dev !== dev || u.corrupted) continue;
      const k = key(u.reading);
      if (!first.has(k)) first.set(k, u.rid);
      else if (first.get(k) !== u.rid && !lost.has(u.rid)) lost.set(u.rid, `lost: ${hhmm(START_MS + (m + 1) * TICK_MS)}, ${u.reading.fill_pct} %`);
    }
  });
  return [...lost.values()].sort();
}

const open = servedPage(['body[data-run="idle"]']);

const num = async (page, sel) => Number((await page.textContent(sel)).replace(/,/g, ''));

test('the default run: reconnect-dedupe loses nothing and passes no duplicate, naive and device + seq lose, drawn where they lose', async () => {
  const { page, problems, wasmLoads, base } = await open({ width: 1280, height: 900 });
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
  assert.ok((await num(page, '[data-stat="seq-lost"]')) > 0, 'device + seq should lose readings after battery swaps');
  assert.equal(await num(page, '[data-stat="seq-dups"]'), 0);
  assert.ok((await num(page, '[data-stat="none-dups"]')) > 0, 'no dedupe should pass duplicates');
  assert.equal(await num(page, '[data-stat="none-lost"]'), 0);
  // The README's picture is this run (`npm run screenshot` makes it): its caption quotes it.
  const caption = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    .match(/!\[The demo after a default run: no dedupe passes ([\d,]+) duplicates, naive device\+timestamp dedupe loses ([\d,]+) real readings, device\+seq dedupe ([\d,]+) after battery swaps, reconnect-dedupe none/);
  assert.ok(caption, 'the README shows the demo with its caption');
  assert.deepEqual(caption.slice(1).map((n) => Number(n.replace(/,/g, ''))),
    [await num(page, '[data-stat="none-dups"]'), await num(page, '[data-stat="naive-lost"]'), await num(page, '[data-stat="seq-lost"]')]);

  // The chart bin's lost readings are marked where they were lost: each keyed strategy's
  // marks are the readings its key merges, at the minute and fill they arrived with.
  const stream = simulate({});
  const dev = telltaleBin(stream);
  assert.equal(await page.inputValue('#bin'), String(dev));
  const titles = (id, mark) => page.$$eval(`[data-chart="${id}"] .${mark} title`, (ts) => ts.map((t) => t.textContent).sort());
  for (const s of STRATEGIES.filter((x) => x.key)) {
    const want = expectedLost(stream, dev, s.key);
    assert.ok(want.length > 0, `${s.id} loses readings of the chart bin`);
    assert.deepEqual(await titles(s.id, 'lost'), want, s.id);
    assert.match(await page.textContent(`[data-stat="${s.id}-bin"]`), new RegExp(`^On ${stream.devices[dev]}: ${want.length} real readings? lost \\(×\\)`));
    assert.deepEqual(await titles(s.id, 'dup'), [], `${s.id} passes no duplicate`);
  }
  assert.deepEqual(await titles('wasm', 'lost'), []);
  assert.deepEqual(await titles('none', 'lost'), []);
  assert.ok((await titles('none', 'dup')).length > 0, 'no dedupe marks the duplicates it passes');
  const svg = (id) => page.innerHTML(`[data-chart="${id}"]`);
  assert.notEqual(await svg('naive'), await svg('wasm'), 'the most telling bin: naive and reconnect-dedupe differ');
  // The legend names every line and mark, drawn as the charts draw them.
  assert.deepEqual(await page.$$eval('#legend [data-mark]', (xs) => xs.map((x) => x.dataset.mark)), Object.keys(MARKS));
  const drawn = await page.$$eval('.chart svg > circle, .chart svg > path', (xs) => [...new Set(xs.map((x) => x.getAttribute('class')))].sort());
  assert.deepEqual(drawn, ['dup', 'late', 'lost'], 'a default run has each kind of mark');
  for (const kind of drawn) assert.equal(await page.locator(`#legend [data-mark="${kind}"] svg .${kind}`).count(), 1, kind);

  // The default run has a backfill: the chart bin's sensor answers a history request and it closes a gap.
  assert.ok((await num(page, '[data-counter="gaps-by-backfill"]')) > 0, 'a slot recovered by the backfill');
  assert.ok((await page.locator('#backfill li[data-status="answered"]').count()) > 0, 'an answered request');

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

/** In the page: whether `sel` is within the viewport and what a tap at its centre reaches (nothing over it). */
function shownIn(sel) {
  const el = document.querySelector(sel);
  const r = el.getBoundingClientRect();
  return r.top >= 0 && r.bottom <= window.innerHeight && el.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2));
}
const onScreen = (page, sel) => page.evaluate(shownIn, sel);

test('on a phone the scenario is one tap away, and the run one tap back', async () => {
  const { page, problems } = await open({ width: 390, height: 844 }, `?seed=${SEED}&minutes=60`, { hasTouch: true, isMobile: true });
  assert.equal(await onScreen(page, '#to-controls'), true, 'the link to the scenario is on the first screen');
  assert.equal(await onScreen(page, '#seed'), false, 'the scenario itself is not: the panels come first');
  await page.tap('#to-controls');
  await page.waitForFunction(shownIn, '#seed', WAIT);
  assert.equal(await onScreen(page, '#controls-h'), true);
  // A change there restarts the run; one tap goes back to it.
  await page.fill('#seed', '7');
  await page.press('#seed', 'Enter');
  await page.waitForFunction(() => window.demo.snapshot().params.seed === 7, null, WAIT);
  await page.tap('#to-run');
  await page.waitForFunction(shownIn, '#play', WAIT);
  await page.tap('#play');
  await page.waitForSelector('body[data-run="playing"]', WAIT);
  await page.tap('#play');
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
