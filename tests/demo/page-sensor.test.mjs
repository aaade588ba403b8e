// The demo page's "Real sensor bytes" section (www/sensor.js) in Debian's headless
// Chromium: an EM500-UDL's vendor uplinks decoded, keyed and deduplicated, the same
// uplinks replayed after a rejoin (the history records come out as duplicates), and
// bad lines shown with their code while the page keeps working.
// Needs www/pkg/ (`npm run build`); never downloads a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUT, servedPage, WAIT } from '../support/browser.mjs';

const EM500 = 'milesight-iot/em500-udl';
const DEVICE = '24E124136B502217';
// tests/vectors/devices/milesight-em500-udl.json, the history vector: two 20 CE records
// (device time 1665561758 s, 1234 mm; 1665565242 s, 1232 mm). With the page's default
// bin (3000 mm deep, offset 0) they are 58.9 % full; seq is the device time.
const HISTORY_SEQS = [1665561758, 1665565242];
const LIVE_LINES = 3; // the vendor vectors without history, one live reading each

// Ready: the section, and the simulation beside it.
const open = servedPage(['#sensor[data-sensor="ready"]', 'body[data-run="idle"]']);

const count = async (page, name) => Number(await page.textContent(`[data-sensor-count="${name}"]`));

/** Every reading row shown: its line, key, verdict and whether it carries a device time. */
const rows = (page) =>
  page.$$eval('#sensor-results tbody tr', (trs) =>
    trs.map((tr) => ({
      line: Number(tr.closest('article').dataset.line),
      key: tr.querySelector('.key').textContent,
      verdict: tr.dataset.verdict,
      dated: tr.hasAttribute('data-dated'),
    })),
  );

test('an EM500-UDL: vendor uplinks admitted, the history replayed after a rejoin is duplicate', async () => {
  const { page, problems, wasmLoads, base } = await open({ width: 1280, height: 900 });
  const codecs = await page.$$eval('#sensor-codec option', (os) => os.map((o) => o.value));
  assert.equal(codecs.length, 7, 'every codec of limits() is offered');
  await page.selectOption('#sensor-codec', EM500);
  const lines = await page.inputValue('#sensor-lines');
  assert.match(lines, /^85 20CE9E744663D20420CE3A824663D004$/m, 'prefilled with the history vector');

  await page.click('#sensor-send');
  await page.waitForSelector('#sensor-results article', WAIT);
  const sent = await rows(page);
  assert.equal(sent.length, LIVE_LINES + HISTORY_SEQS.length);
  assert.ok(sent.every((r) => r.verdict === 'admitted'), JSON.stringify(sent));
  assert.equal(await count(page, 'admitted'), LIVE_LINES + HISTORY_SEQS.length);
  assert.equal(await count(page, 'duplicate'), 0);
  assert.equal(await count(page, 'keys'), LIVE_LINES + HISTORY_SEQS.length);
  // The keys shown are the core's: device:seq:16 hex; live readings take the frame
  // counter (100, 101, 103: the history uplink is f_cnt 102), history records their device time.
  for (const r of sent) assert.match(r.key, new RegExp(`^${DEVICE}:\\d+:[0-9a-f]{16}$`));
  const seqs = (rs) => rs.map((r) => Number(r.key.split(':')[1]));
  assert.deepEqual(seqs(sent.filter((r) => r.dated)), HISTORY_SEQS);
  assert.deepEqual(seqs(sent.filter((r) => !r.dated)), [100, 101, 103]);
  const battery = await page.textContent('#sensor-results article:first-child .small');
  assert.match(battery, /battery 100 %/);
  assert.ok(await page.isEnabled('#sensor-replay'));

  await page.click('#sensor-replay');
  await page.waitForFunction(() => /^Replayed/.test(document.getElementById('sensor-status').textContent), null, WAIT);
  const replayed = await rows(page);
  const history = replayed.filter((r) => r.dated);
  assert.equal(history.length, HISTORY_SEQS.length);
  assert.ok(history.every((r) => r.verdict === 'duplicate'), JSON.stringify(history));
  assert.deepEqual(history.map((r) => r.key), sent.filter((r) => r.dated).map((r) => r.key), 'the same keys as the first delivery');
  // Live readings have no device time: after the rejoin (f_cnt from 0) they key anew.
  assert.deepEqual(seqs(replayed.filter((r) => !r.dated)), [0, 1, 3]);
  assert.ok(replayed.filter((r) => !r.dated).every((r) => r.verdict === 'admitted'));
  assert.equal(await count(page, 'duplicate'), HISTORY_SEQS.length);
  assert.match(await page.textContent('#sensor-status'), /2 of 2 dated readings duplicate/);
  assert.match(await page.textContent('#sensor-why'), /device time/);
  assert.match(await page.textContent('#sensor-results'), /received 2026-07-16 14:/, 'replayed two hours later');

  // The simulation beside it is untouched: minute 0, nothing received.
  assert.equal(await page.evaluate(() => window.demo.snapshot().minute), 0);
  assert.equal(await page.textContent('[data-counter="received"]'), '0');
  await page.screenshot({ path: new URL('demo-sensor.png', OUT).pathname, fullPage: true });
  assert.deepEqual(wasmLoads, [`${base}pkg/reconnect_dedupe_bg.wasm`], 'the Wasm module is fetched once');
  assert.deepEqual(problems, []);
  await page.close();
});

test('bad lines show their code and the page keeps working', async () => {
  const { page, problems } = await open({ width: 375, height: 812 }, '?minutes=60');
  await page.selectOption('#sensor-codec', EM500);
  const good = '85 01756403821E00';
  await page.fill('#sensor-lines', [good, '85 0175', '85 0382FDFF', '10 01756403821E00', '85 zz', 'hello', good].join('\n'));
  await page.click('#sensor-send');
  await page.waitForSelector('#sensor-results article', WAIT);
  const codes = await page.$$eval('#sensor-results article', (arts) =>
    arts.map((a) => a.querySelector('[data-code]')?.dataset.code ?? [...a.querySelectorAll('tbody tr')].map((tr) => tr.dataset.verdict).join(',')),
  );
  assert.deepEqual(codes, ['admitted', 'invalid_payload', 'rejected', 'unsupported_port', 'invalid_line', 'invalid_line', 'admitted']);
  assert.match(await page.textContent('#sensor-results article[data-line="2"] .error'), /^invalid_payload /);
  assert.match(await page.textContent('#sensor-results article[data-line="3"] td.verdict'), /rejected \(no_reading\)/);
  assert.match(await page.textContent('#sensor-results article[data-line="3"]'), /none: Milesight distance 0xFFFD/);
  assert.equal(await count(page, 'lines'), 4);
  // The status line says how many lines made no reading, and why, not only the table.
  assert.equal(await page.textContent('#sensor-status'),
    'Sent: 7 uplinks, 2 admitted, 0 duplicate, 1 rejected; 4 lines with an error (invalid_payload, unsupported_port, invalid_line ×2).');
  assert.ok(await page.$eval('#sensor-status', (p) => p.classList.contains('bad')));
  assert.equal(await count(page, 'admitted'), 2, 'the same bytes a frame later are a new live reading');

  // Still working: a change of sensor starts a new device, and the simulation runs.
  await page.selectOption('#sensor-codec', 'decentlab/dl-mbx');
  assert.equal(await count(page, 'keys'), 0);
  await page.click('#sensor-send');
  await page.waitForFunction(() => /^Sent/.test(document.getElementById('sensor-status').textContent), null, WAIT);
  assert.equal(await count(page, 'admitted'), 1);
  assert.equal(await page.$eval('#sensor-status', (p) => p.classList.contains('bad')), false, 'a send without a bad line');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);
  assert.deepEqual(problems, []);
  await page.close();
});
