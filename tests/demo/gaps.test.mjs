// The demo's gaps panel logic (www/gaps.js) in Node with the page's Wasm package:
// the history-retrieval downlink byte for byte, and a hand-made stream through the
// core's SeqWindow and Deduplicator: a gap the sensor can no longer backfill, closed
// by a replay; a clock reset; a gap the backfill closes after the bin was offline; and
// the default scenario, in which the chart bin gets a backfill.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const pkg = await import('../../www/pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(new URL('../../www/pkg/reconnect_dedupe_bg.wasm', import.meta.url)) });
const { historyDownlink, slotSeconds, slotOf, createBinHealth, PERIOD_S, GAP_PARAMS } = await import('../../www/gaps.js');
const { simulate, telltaleBin } = await import('../../www/sim.js');
const { DEDUP_DEFAULTS } = await import('../../www/strategies.js');

test("the downlink is the core's: fd 6c, then start and end unix seconds as u32 little-endian, on port 85", () => {
  // 2026-07-16T06:29:00Z … 06:29:59Z: 1784183340 = 0x6A587A2C, 1784183399 = 0x6A587A67.
  assert.deepEqual(slotSeconds(29736389, 29736389), { startS: 1784183340, endS: 1784183399 });
  assert.deepEqual(historyDownlink(pkg, 1784183340, 1784183399), { port: 85, hex: 'fd6c2c7a586a677a586a' });
  assert.deepEqual(slotSeconds(11, 13, 600), { startS: 6600, endS: 8399 });
  assert.deepEqual(historyDownlink(pkg, 0, 0xffffffff), { port: 85, hex: 'fd6c00000000ffffffff' });
  for (const [a, b] of [[-1, 5], [0, 2 ** 32], [1.5, 2], [9, 8], ['1', 2]]) {
    assert.throws(() => historyDownlink(pkg, a, b), (e) => e.code === 'invalid_burst', `${a}, ${b}`);
  }
  assert.equal(PERIOD_S, 60);
});

const START = Date.UTC(2026, 6, 16, 6);
const MIN = 60_000;
/** Device times of the readings the sensor makes, one a minute; R9 on a clock gone back to 1970. */
const TS = [
  '2026-07-16T06:00:30Z', '2026-07-16T06:01:30Z', '2026-07-16T06:02:30Z', '2026-07-16T06:03:30Z',
  '2026-07-16T06:04:30Z', '2026-07-16T06:05:30Z', '2026-07-16T06:06:30Z', '2026-07-16T06:07:30Z',
  '2026-07-16T06:08:30Z', '1970-01-01T00:10:30Z', '1970-01-01T00:11:30Z', '1970-01-01T00:12:30Z',
  '1970-01-01T00:13:30Z', '1970-01-01T00:14:30Z', '1970-01-01T00:15:30Z',
];
/** What arrives each minute: a reading's index, `r` a retransmitted copy, `x` a corrupted one. */
const ARRIVALS = ['0', '', '1x 2', '3', '4', '', '', '5r 6r 7', '1r 8', '9', '10x 11', '12', '13', '14'];

function handmade() {
  const readings = TS.map((ts, i) => ({ dev: 0, tMs: START + i * MIN + 30_000, reading: { device_id: 'bin-000', seq: 100 + i, ts, fill_pct: 40 + i } }));
  const ticks = ARRIVALS.map((line, m) => ({
    nowMs: START + (m + 1) * MIN,
    uplinks: line
      .split(' ')
      .filter(Boolean)
      .map((a) => {
        const rid = parseInt(a, 10);
        const corrupted = a.endsWith('x');
        const { reading } = readings[rid];
        return { reading: corrupted ? { ...reading, fill_pct: 255 } : reading, rid, dev: 0, retransmit: corrupted || a.endsWith('r'), corrupted };
      }),
  }));
  return { params: { minutes: ticks.length }, devices: ['bin-000'], ticks, readings };
}

test('gaps open and close; the backfill goes out after an uplink, answers with what the sensor still holds', () => {
  const health = createBinHealth({
    stream: handmade(),
    dev: 0,
    core: pkg,
    dedupOptions: { ttlMs: 3600_000, maxKeys: 1000 },
    backfillMin: 2,
    historyRecords: 5,
  });
  const at = (hhmm) => Date.parse(`2026-07-16T${hhmm}:00Z`);
  const s1 = slotOf({ ts: TS[1] });
  const s8 = slotOf({ ts: TS[8] });
  assert.equal(s1, 29736361);

  for (let m = 0; m < 5; m++) health.step();
  let v = health.view();
  assert.deepEqual(v.gaps, [{ from: s1, to: s1, first_noticed_ms: at('06:03'), request: v.requests[0] }]);
  assert.equal(v.requests.length, 1, 'the gap open 2 minutes got a request at 06:05');
  assert.equal(v.requests[0].status, 'waiting');

  while (health.step());
  v = health.view();
  assert.equal(v.minute, ARRIVALS.length);
  assert.equal(v.nowMs, at('06:14'));
  assert.deepEqual(v.events, [
    { kind: 'opened', from: s1, to: s1, minute: 2, atMs: at('06:03') },
    { kind: 'recovered', from: s1, to: s1, by: 'replay', delayMs: 6 * MIN, minute: 8, atMs: at('06:09') },
    { kind: 'reset', from: s8, to: 10, minute: 9, atMs: at('06:10') },
    { kind: 'opened', from: 11, to: 11, minute: 10, atMs: at('06:11') },
    { kind: 'recovered', from: 11, to: 11, by: 'backfill', delayMs: 3 * MIN, minute: 13, atMs: at('06:14') },
  ]);
  const [first, second] = v.requests;
  // Queued at 06:05; the bin was offline until 06:08, so it went out then. Of the 8
  // readings made by then the sensor keeps 5 (R3…R7): R1 is gone.
  assert.deepEqual(first, {
    id: 1, minute: 4, atMs: at('06:05'), from: s1, to: s1, noticedMs: at('06:03'),
    startS: 1784181660, endS: 1784181719, port: 85, hex: 'fd6c9c73586ad773586a', status: 'unanswered',
    answer: { minute: 7, atMs: at('06:08'), records: [], gone: 1, closed: [], stillMissing: 1 },
  });
  assert.deepEqual(second, {
    id: 2, minute: 12, atMs: at('06:13'), from: 11, to: 11, noticedMs: at('06:11'),
    startS: 660, endS: 719, port: 85, hex: 'fd6c94020000cf020000', status: 'answered',
    answer: { minute: 13, atMs: at('06:14'), records: [{ slot: 11, ts: TS[10], fill: 50, verdict: 'admitted' }], gone: 0, closed: [11], stillMissing: 0 },
  });
  assert.deepEqual(v.gaps, []);
  assert.deepEqual(v.recoveredBy, { live: 0, replay: 1, backfill: 1 });
  const t = v.totals;
  assert.deepEqual([t.missing, t.recovered, t.resets, t.closed_by_reset], [0, 2, 1, 0]);
  // 17 copies: 2 corrupted (rejected), 2 retransmitted intact (R5, R6 first seen), R1's copy
  // intact; plus the backfill's R10. Nothing duplicate: each reading admitted once.
  assert.deepEqual(v.verdicts, { admitted: 15, duplicate: 0, rejected: 2 });
  health.free();
});

test("the default scenario: the most telling bin's gap is closed by a backfill the sensor answers", async () => {
  const stream = simulate({});
  const defaults = Object.fromEntries(Object.entries(GAP_PARAMS).map(([k, spec]) => [k, spec.def]));
  const { ttlMin, maxKeys } = DEDUP_DEFAULTS;
  const health = createBinHealth({ stream, dev: telltaleBin(stream), core: pkg, dedupOptions: { ttlMs: ttlMin * 60_000, maxKeys }, ...defaults });
  while (health.step());
  const v = health.view();
  // A request may also be answered with a record a replay brought first (a duplicate, closing nothing).
  const closing = v.requests.filter((r) => r.status === 'answered' && r.answer.closed.length > 0);
  assert.ok(closing.length > 0, `requests: ${v.requests.map((r) => r.status).join(', ') || 'none'}`);
  for (const r of closing) assert.ok(r.answer.records.some((x) => x.verdict === 'admitted'), `#${r.id}: its record admitted`);
  assert.equal(v.recoveredBy.backfill, closing.reduce((n, r) => n + r.answer.closed.length, 0));
  assert.ok(v.events.some((e) => e.kind === 'recovered' && e.by === 'backfill'));
  health.free();
});
