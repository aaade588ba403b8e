// A bin's fill by device time through the built package (pkg/): `FillTracker`, the
// core's src/dedupe/fill.rs. Which admitted reading is the bin's state, which arrived
// late and by how much, when the bin was emptied, and what it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url)) });
const { FillTracker, idempotencyKey } = pkg;

const THRESHOLD = 30;
/** A reading of bin-7 at `iso` with `fill`, and its real key. */
const reading = (seq, iso, fill) => ({ ts: iso, fill, key: idempotencyKey({ device_id: 'bin-7', seq, ts: iso, fill_pct: fill }) });
const observe = (t, r) => t.observe(r.ts, r.fill, r.key);

test('a replayed reading is late by how much, and never moves the bin back to its old fill', () => {
  const t = new FillTracker(THRESHOLD);
  const a = reading(1, '2026-07-16T08:00:00Z', 40);
  const b = reading(3, '2026-07-16T10:00:00Z', 90);
  const old = reading(2, '2026-07-16T09:00:00.5Z', 60);
  assert.deepEqual([observe(t, a), observe(t, b)].map((o) => [o.arrival, o.late_by_ms]), [['newest', null], ['newest', null]]);
  const late = observe(t, old);
  assert.deepEqual([late.arrival, late.late_by_ms, late.collection, late.glitch], ['late', 3_599_500, null, false]);
  const s = t.state();
  assert.deepEqual([s.newest.key, s.newest.fill_pct, s.newest.ts, s.previous.key], [b.key, 90, '2026-07-16T10:00:00+00:00', a.key]);
  assert.equal(s.period_s, 7200);
  t.free();
});

test('a fall confirmed by the next reading is one collection; a single low reading is a glitch', () => {
  const t = new FillTracker(THRESHOLD);
  const full = reading(1, '2026-07-16T08:00:00Z', 95);
  observe(t, full);
  const emptied = reading(2, '2026-07-16T08:10:00Z', 4);
  assert.equal(observe(t, emptied).collection, null, 'not before the next reading');
  assert.equal(t.state().suspected.key, full.key);
  const c = observe(t, reading(3, '2026-07-16T08:20:00Z', 6)).collection;
  assert.deepEqual([c.before.key, c.after.key, c.before.fill_pct, c.after.fill_pct], [full.key, emptied.key, 95, 4]);
  // Full again, then one low reading between two high ones.
  observe(t, reading(4, '2026-07-16T12:00:00Z', 80));
  observe(t, reading(5, '2026-07-16T12:10:00Z', 3));
  const back = observe(t, reading(6, '2026-07-16T12:20:00Z', 81));
  assert.deepEqual([back.glitch, back.collection, t.state().suspected], [true, null, null]);
  t.free();
});

test('the bytes carry the state, and a tracker read back goes on as the original', () => {
  const t = new FillTracker(THRESHOLD);
  observe(t, reading(1, '2026-07-16T08:00:00Z', 95));
  observe(t, reading(2, '2026-07-16T08:10:00Z', 4));
  const copy = FillTracker.fromBytes(t.toBytes(), THRESHOLD);
  assert.deepEqual(copy.state(), t.state());
  const next = reading(3, '2026-07-16T08:20:00Z', 6);
  assert.deepEqual(observe(copy, next), observe(t, next));
  assert.throws(() => FillTracker.fromBytes(new Uint8Array([9, 0, 0]), THRESHOLD), { code: 'invalid_snapshot' });
  assert.throws(() => FillTracker.fromBytes([1, 0, 0], THRESHOLD), { code: 'invalid_snapshot' });
  assert.throws(() => FillTracker.fromBytes(t.toBytes(), 0), { code: 'invalid_config' });
  t.free();
  copy.free();
});

test('what is not a reading is refused with its code, and the tracker is unchanged', () => {
  for (const bad of [0, -1, 100.5, NaN, '30', undefined]) assert.throws(() => new FillTracker(bad), { code: 'invalid_config' }, String(bad));
  const t = new FillTracker(THRESHOLD);
  const ok = reading(1, '2026-07-16T08:00:00Z', 50);
  observe(t, ok);
  const before = t.state();
  const cases = [
    [['2026-07-16 08:10', 50, ok.key], 'invalid_ts'],
    [[1784190000000, 50, ok.key], 'invalid_ts'],
    [['2026-07-16T08:10:00Z', 101, ok.key], 'invalid_fill_pct'],
    [['2026-07-16T08:10:00Z', '50', ok.key], 'invalid_fill_pct'],
    [['2026-07-16T08:10:00Z', 50, 'bin-7'], 'invalid_key'],
    [['2026-07-16T08:10:00Z', 50, 42], 'invalid_key'],
  ];
  for (const [args, code] of cases) assert.throws(() => t.observe(...args), { code }, JSON.stringify(args));
  assert.deepEqual(t.state(), before);
  t.free();
});
