// The demo page's gaps panel (www/gaps.js through app.js) in Debian's headless
// Chromium: the chart bin's slots fed into the core's SeqWindow, two gaps opening at
// once, a backfill request the sensor can no longer answer, one it answers, and the
// unanswered gap closed later by a second replay; then the same run reworked with a
// larger sensor history and for another bin. Needs www/pkg/ (`npm run build`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUT, servedPage, WAIT } from '../support/browser.mjs';

// A fixed scenario of the page's own simulation. Its most telling bin, bin-003 (index
// 3, the chart's default), has two slots whose copies all come corrupted in the
// reconnect replay of minute 47: 06:29 and 06:42 (device time). With a gap backfilled
// after 20 minutes and a sensor that keeps its last 30 records, 06:29 is gone from
// the sensor by then, 06:42 is not; a second replay at minute 117 brings 06:29.
const SCENARIO = '?seed=8&fleet=8&minutes=180&corruptPct=25&backfillMin=20&historyRecords=30';
const PERIOD_S = 60; // the simulation's reporting period: one slot a minute
const slotAt = (hhmm) => Date.parse(`2026-07-16T${hhmm}:00Z`) / 1000 / PERIOD_S;
const EARLY = slotAt('06:29'); // 29736389
const LATE = slotAt('06:42'); // 29736402

/** The history-retrieval downlink for slots from..=to, written out independently of the page. */
function downlink(from, to) {
  const b = Buffer.alloc(10);
  b.set([0xfd, 0x6c]);
  b.writeUInt32LE(from * PERIOD_S, 2);
  b.writeUInt32LE((to + 1) * PERIOD_S - 1, 6);
  return b.toString('hex');
}

const open = servedPage(['body[data-run="idle"]']);

const runTo = (page, minute) => page.evaluate((m) => window.demo.runTo(m), minute);
const counter = async (page, name) => (await page.textContent(`[data-counter="gaps-${name}"]`)).replace(/,/g, '');
async function counters(page) {
  const out = {};
  for (const k of ['open', 'missing', 'by-replay', 'by-backfill', 'resets', 'requests', 'unanswered']) out[k] = Number(await counter(page, k));
  return out;
}
const openGaps = (page) =>
  page.$$eval('#gaps-open tr', (trs) => trs.map((tr) => [tr.dataset.gap, ...[...tr.children].map((td) => td.textContent)]));
const requests = (page) =>
  page.$$eval('#backfill li', (lis) =>
    lis.map((li) => ({ id: li.dataset.request, status: li.dataset.status, hex: li.querySelector('.hex').textContent, text: li.textContent })),
  );
const log = (page) => page.$$eval('#gap-log li', (lis) => lis.map((li) => li.textContent));

test('two gaps open; the backfill closes one, the other stays unanswered until a replay closes it', async () => {
  const { page, problems, wasmLoads, base } = await open({ width: 1280, height: 900 }, SCENARIO);
  assert.equal(await page.inputValue('#bin'), '3');
  assert.equal(await page.textContent('#gaps-bin'), 'bin-003');
  assert.equal(await page.textContent('#gaps-after'), '20 simulated minutes');
  assert.equal(downlink(EARLY, EARLY), 'fd6c2c7a586a677a586a', 'the known range: 06:29:00–06:29:59 UTC, unix 1784183340–1784183399');

  // The bin has been offline since 06:27; its reconnect replay (minute 47), with the two
  // corrupted copies the core rejects, has not come yet.
  await runTo(page, 47);
  assert.equal(await counter(page, 'highest'), '06:26 (slot 29736386)');
  assert.deepEqual(await openGaps(page), []);
  assert.ok(await page.isVisible('#gaps-none'));
  assert.ok(await page.isVisible('#backfill-none'));

  // It came: both slots are missing, noticed at the burst's time (06:48).
  await runTo(page, 48);
  assert.deepEqual(await openGaps(page), [
    [`${EARLY}-${EARLY}`, '06:29', `slot ${EARLY}`, '1', '06:48', '0 min', 'due in 20 min'],
    [`${LATE}-${LATE}`, '06:42', `slot ${LATE}`, '1', '06:48', '0 min', 'due in 20 min'],
  ]);
  assert.deepEqual(await log(page), [
    `06:48 gap opened: 06:29 (slot ${EARLY}), 1 slot missing`,
    `06:48 gap opened: 06:42 (slot ${LATE}), 1 slot missing`,
  ]);
  assert.deepEqual(await counters(page), { open: 2, missing: 2, 'by-replay': 0, 'by-backfill': 0, resets: 0, requests: 0, unanswered: 0 });
  assert.ok(await page.isHidden('#gaps-none'));

  // 20 minutes on (the burst of 07:08): one request, for the lowest gap; the other waits.
  await runTo(page, 68);
  let reqs = await requests(page);
  assert.equal(reqs.length, 1);
  assert.deepEqual([reqs[0].id, reqs[0].status, reqs[0].hex], ['1', 'waiting', downlink(EARLY, EARLY)]);
  assert.match(reqs[0].text, /^#1 · 07:08 · fPort 85 fd6c2c7a586a677a586a/);
  assert.match(reqs[0].text, /device time 06:29:00–06:29:59 UTC \(start 1784183340, end 1784183399,/);
  assert.deepEqual((await openGaps(page)).map((g) => g.at(-1)), [
    "requested (#1 at 07:08), waiting for the bin's next uplink",
    'due: after the open request',
  ]);

  // The sensor's answers: 06:29 is no longer among its last 30 records; 06:42 is, and closes its gap.
  await runTo(page, 70);
  reqs = await requests(page);
  assert.deepEqual(reqs.map((r) => [r.id, r.status, r.hex]), [
    ['1', 'unanswered', downlink(EARLY, EARLY)],
    ['2', 'answered', downlink(LATE, LATE)],
  ]);
  assert.equal(reqs[1].hex, 'fd6c387d586a737d586a');
  assert.match(reqs[0].text, /unanswered: the sensor answered at 07:09 with 0 records; 1 gone from the sensor \(it keeps its last 30\); closed nothing; 1 slot of the range still missing$/);
  assert.match(reqs[1].text, /answered: the sensor answered at 07:10 with 1 record \(06:42:00 59\.6 % admitted\); closed 06:42$/);
  assert.deepEqual(await openGaps(page), [
    [`${EARLY}-${EARLY}`, '06:29', `slot ${EARLY}`, '1', '06:48', '22 min', 'unanswered (#1): the sensor no longer holds 1 slot of it'],
  ]);
  assert.equal((await log(page)).at(-1), `07:10 recovered 06:42 (slot ${LATE}) by the backfill, 22 min after the gap was noticed`);
  assert.deepEqual(await counters(page), { open: 1, missing: 1, 'by-replay': 0, 'by-backfill': 1, resets: 0, requests: 2, unanswered: 1 });

  // To the end: the bin's second replay (07:58) brings the copy of 06:29 the sensor no longer had.
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', WAIT);
  assert.deepEqual(await log(page), [
    `06:48 gap opened: 06:29 (slot ${EARLY}), 1 slot missing`,
    `06:48 gap opened: 06:42 (slot ${LATE}), 1 slot missing`,
    `07:10 recovered 06:42 (slot ${LATE}) by the backfill, 22 min after the gap was noticed`,
    `07:58 recovered 06:29 (slot ${EARLY}) by a replayed copy, 70 min after the gap was noticed`,
  ]);
  assert.deepEqual(await openGaps(page), []);
  assert.deepEqual(await counters(page), { open: 0, missing: 0, 'by-replay': 1, 'by-backfill': 1, resets: 0, requests: 2, unanswered: 1 });
  assert.equal((await requests(page)).length, 2, 'no request again for a range already asked for');
  await page.evaluate(() => document.getElementById('gaps').scrollIntoView());
  await page.screenshot({ path: new URL('demo-gaps.png', OUT).pathname, fullPage: true });

  // A sensor that keeps 120 records: the panel is worked out again, the run is not restarted,
  // and now the backfill answers both.
  await page.fill('#historyRecords', '120');
  await page.press('#historyRecords', 'Enter');
  await page.waitForFunction(() => document.querySelector('#backfill li')?.dataset.status === 'answered', null, WAIT);
  assert.equal(await page.evaluate(() => window.demo.snapshot().minute), 180, 'the run went on');
  assert.deepEqual((await requests(page)).map((r) => [r.id, r.status, r.hex]), [
    ['1', 'answered', downlink(EARLY, EARLY)],
    ['2', 'answered', downlink(LATE, LATE)],
  ]);
  assert.deepEqual(await counters(page), { open: 0, missing: 0, 'by-replay': 0, 'by-backfill': 2, resets: 0, requests: 2, unanswered: 0 });
  assert.equal((await log(page)).at(-2), `07:09 recovered 06:29 (slot ${EARLY}) by the backfill, 21 min after the gap was noticed`);

  // Another chart bin gets its own panel; back to bin-003, the same as before.
  const before = await page.textContent('#gaps');
  await page.selectOption('#bin', '0');
  await page.waitForFunction(() => document.getElementById('gaps-bin').textContent === 'bin-000', null, WAIT);
  assert.notEqual(await page.textContent('#gaps'), before);
  await page.selectOption('#bin', '3');
  await page.waitForFunction(() => document.getElementById('gaps-bin').textContent === 'bin-003', null, WAIT);
  assert.equal(await page.textContent('#gaps'), before);

  assert.deepEqual(wasmLoads, [`${base}pkg/reconnect_dedupe_bg.wasm`], 'the Wasm module is fetched once');
  assert.deepEqual(problems, []);
  await page.close();
});
