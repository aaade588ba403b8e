// The demo page's bin-state panel (www/bin-state.js through app.js) in Debian's
// headless Chromium: the default run's chart bin as the route planner sees it from the
// worker (the core's FillTracker) against "the last reading received", checked against
// the same module run in Node on the same scenario; then another bin chosen. Needs
// www/pkg/ (`npm run build`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { OUT, servedPage, WAIT } from '../support/browser.mjs';

const pkg = await import('../../www/pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(new URL('../../www/pkg/reconnect_dedupe_bg.wasm', import.meta.url)) });
const { createBinState } = await import('../../www/bin-state.js');
const { simulate, telltaleBin } = await import('../../www/sim.js');
const { DEDUP_DEFAULTS } = await import('../../www/strategies.js');

const open = servedPage(['body[data-run="idle"]']);
const counter = async (page, name) => (await page.textContent(`[data-counter="state-${name}"]`)).replace(/,/g, '');
const rows = (page) =>
  page.$$eval('#collections tr', (trs) => trs.map((tr) => ({ seenBy: tr.dataset.seenBy, phantom: tr.dataset.phantom === 'true', cells: [...tr.children].map((c) => c.textContent) })));

/** The panel's figures as the module gives them for `dev` of the default run, in Node. */
function expected(dev) {
  const bin = createBinState({ stream: simulate({}), dev, core: pkg, dedupOptions: { ttlMs: DEDUP_DEFAULTS.ttlMin * 60_000, maxKeys: DEDUP_DEFAULTS.maxKeys } });
  while (bin.step());
  const v = bin.view();
  bin.free();
  return v;
}

async function figures(page) {
  const out = {};
  for (const k of ['late', 'services', 'collections', 'glitches', 'last-falls', 'phantoms']) out[k] = Number(await counter(page, k));
  return out;
}
const want = (v) => ({ late: v.late, services: v.services.length, collections: v.collections.length, glitches: v.glitches.length, 'last-falls': v.lastReceivedFalls.length, phantoms: v.phantoms });

test("the default run: the chart bin's collections are real services; \"last received\" shows phantom ones", async () => {
  const { page, problems } = await open({ width: 1280, height: 900 });
  const dev = Number(await page.inputValue('#bin'));
  assert.equal(await page.textContent('#state-bin'), `bin-${String(dev).padStart(3, '0')}`);
  assert.equal(await page.textContent('#state-threshold'), '30');
  assert.ok(await page.isVisible('#collections-none'));
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);

  const v = expected(dev);
  assert.deepEqual(await figures(page), want(v));
  assert.ok(v.phantoms > 0 && v.collections.length > 0, 'the default run shows both');
  const newest = v.state.newest;
  assert.equal(await counter(page, 'newest'), `${newest.fill_pct} % at ${newest.ts.slice(11, 19)}`);
  // The table: the tracker's rows are real services, each; the phantoms are "last received"'s.
  const shown = await rows(page);
  assert.ok(shown.length > 0 && shown.length <= 16);
  assert.ok(shown.filter((r) => r.seenBy === 'tracker').every((r) => !r.phantom && /^yes, at \d\d:\d\d$/.test(r.cells[4])), JSON.stringify(shown));
  const phantoms = shown.filter((r) => r.phantom);
  assert.ok(phantoms.length > 0 && phantoms.every((r) => r.seenBy === 'last' && /^no: phantom \(/.test(r.cells[4])));
  assert.equal(await page.getAttribute('[data-counter="state-phantoms"]', 'class'), 'bad');
  await page.evaluate(() => document.getElementById('bin-state').scrollIntoView());
  await page.screenshot({ path: new URL('demo-bin-state.png', OUT).pathname, fullPage: true });

  // Another bin: the panel is worked out for it, the run goes on where it was.
  const other = dev === 0 ? 1 : 0;
  await page.selectOption('#bin', String(other));
  assert.equal(await page.textContent('#state-bin'), `bin-${String(other).padStart(3, '0')}`);
  assert.deepEqual(await figures(page), want(expected(other)));
  assert.deepEqual(problems, []);
});
