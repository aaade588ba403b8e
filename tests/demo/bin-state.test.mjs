// The demo's bin-state panel logic (www/bin-state.js) in Node with the page's Wasm
// package: a hand-made stream through the core's Deduplicator and FillTracker (a
// replay arriving after a newer reading, a glitch, one real service) against what "the
// last reading received" would have shown; the threshold the worker's; and the default
// scenario, where the chart bin's collections are its real services and "last received"
// shows phantom ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { VARIABLES } from '../../src/worker/variables.js';

const pkg = await import('../../www/pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(new URL('../../www/pkg/reconnect_dedupe_bg.wasm', import.meta.url)) });
const { createBinState, THRESHOLD_PCT } = await import('../../www/bin-state.js');
const { simulate, telltaleBin, SERVICE_DROP, START_MS, TICK_MS } = await import('../../www/sim.js');
const { DEDUP_DEFAULTS } = await import('../../www/strategies.js');

const dedupOptions = { ttlMs: DEDUP_DEFAULTS.ttlMin * 60_000, maxKeys: DEDUP_DEFAULTS.maxKeys };
const at = (minute) => new Date(START_MS + minute * TICK_MS).toISOString().replace('.000Z', 'Z');

test('the threshold is the worker\'s COLLECTION_DROP_PCT default and the simulation\'s "serviced" drop', () => {
  assert.equal(THRESHOLD_PCT, VARIABLES.COLLECTION_DROP_PCT.default);
  assert.equal(THRESHOLD_PCT, SERVICE_DROP);
});

/**
 * One bin reading once a device-time minute (R0 … R11 at minutes 0 … 11, fill FILLS[i]).
 * Offline over minutes 2-4: R2-R4 arrive only at minute 6, after R5; R6 is a glitch
 * (one low reading between two high ones); the bin is serviced at minute 9 (R9).
 */
const FILLS = [40, 50, 60, 70, 80, 90, 20, 92, 93, 1, 2, 3];
const ARRIVALS = [[0], [1], [], [], [], [5], [2, 3, 4], [6], [7], [8], [9], [10], [11]];

function handmade() {
  const reading = (i) => ({ device_id: 'bin-000', seq: i, ts: at(i), fill_pct: FILLS[i] });
  const ticks = ARRIVALS.map((ids, m) => ({ nowMs: START_MS + (m + 1) * TICK_MS, uplinks: ids.map((i) => ({ dev: 0, rid: i, reading: reading(i) })) }));
  return { devices: ['bin-000'], ticks, trueServices: [[9]] };
}

test('a replay after a newer reading and a glitch are phantom collections to "last received"; the tracker reports only the service', () => {
  const bin = createBinState({ stream: handmade(), dev: 0, core: pkg, dedupOptions });
  let newest = -Infinity;
  while (bin.step()) {
    // The state never moves backwards by device time.
    const ts = bin.view().state.newest?.ts;
    if (ts) {
      assert.ok(Date.parse(ts) >= newest, `minute ${bin.view().minute}: ${ts}`);
      newest = Date.parse(ts);
    }
  }
  const v = bin.view();
  assert.deepEqual([v.admitted, v.late], [12, 3]); // R2, R3, R4 came after R5
  assert.deepEqual(v.glitches, [8]); // R7 back up: R6 was no collection
  // Exactly one collection, at the real service: from R8 (93 %) to R9 (1 %), confirmed by R10.
  assert.deepEqual(
    v.collections.map((c) => [c.before.ts, c.before.fill_pct, c.after.ts, c.after.fill_pct, c.minute, c.service]),
    [[`${at(8).slice(0, -1)}+00:00`, 93, `${at(9).slice(0, -1)}+00:00`, 1, 11, 9]], // whole seconds: no fraction,
  );
  // "Last received": R5 → R2 (a replay) and R4 → R6 (the glitch) look like collections too.
  assert.deepEqual(
    v.lastReceivedFalls.map((f) => [f.minute, f.from.fill_pct, f.to.fill_pct, f.late, f.service]),
    [[6, 90, 60, true, null], [7, 80, 20, false, null], [10, 93, 1, false, 9]],
  );
  assert.equal(v.phantoms, 2);
  assert.deepEqual([v.state.newest.fill_pct, v.state.previous.fill_pct, v.lastReceived.fill_pct], [3, 2, 3]);
  assert.deepEqual(v.services, [9]);
  bin.free();
});

test('a fall from a replayed level across a service already counted is a phantom: "last received" counts each service once', () => {
  // R0 80 %, R1 90 % (buffered), serviced at minute 2 (R2 5 %), R3 6 %; R1 arrives only
  // after R3, then R4 7 %: the fall R1 → R4 spans the service R0 → R2 already showed.
  const fills = [80, 90, 5, 6, 7];
  const arrivals = [[0], [], [2], [3], [1], [4]];
  const reading = (i) => ({ device_id: 'bin-000', seq: i, ts: at(i), fill_pct: fills[i] });
  const ticks = arrivals.map((ids, m) => ({ nowMs: START_MS + (m + 1) * TICK_MS, uplinks: ids.map((i) => ({ dev: 0, rid: i, reading: reading(i) })) }));
  const bin = createBinState({ stream: { devices: ['bin-000'], ticks, trueServices: [[2]] }, dev: 0, core: pkg, dedupOptions });
  while (bin.step());
  const v = bin.view();
  assert.deepEqual(
    v.lastReceivedFalls.map((f) => [f.minute, f.from.fill_pct, f.to.fill_pct, f.late, f.service, f.phantom]),
    [[2, 80, 5, false, 2, false], [5, 90, 7, false, null, true]],
  );
  assert.equal(v.phantoms, 1);
  bin.free();
});

test('a fall smaller than the threshold is none: at 95 points, no fall of this bin counts', () => {
  const bin = createBinState({ stream: handmade(), dev: 0, core: pkg, dedupOptions, thresholdPct: 95 });
  while (bin.step());
  const v = bin.view();
  assert.deepEqual([v.collections.length, v.lastReceivedFalls.length, v.thresholdPct], [0, 0, 95]);
  bin.free();
});

test('the default scenario: the chart bin\'s collections are its real services, each once; "last received" shows phantom ones', () => {
  const stream = simulate({});
  const dev = telltaleBin(stream);
  const bin = createBinState({ stream, dev, core: pkg, dedupOptions });
  while (bin.step());
  const v = bin.view();
  assert.ok(v.services.length > 0, 'the chart bin is serviced in the default run');
  // Each collection the tracker confirmed is a real service, none twice.
  assert.ok(v.collections.every((c) => c.service !== null), JSON.stringify(v.collections));
  const detected = v.collections.map((c) => c.service);
  assert.equal(new Set(detected).size, detected.length);
  // Every service is detected but one the run ended before a reading confirmed.
  const missed = v.services.filter((m) => !detected.includes(m));
  assert.ok(missed.every((m) => m === v.services.at(-1) && v.state.suspected !== null), `missed ${missed}`);
  // What a planner taking the last reading received would have counted: more, with phantoms.
  assert.ok(v.phantoms > 0, 'the default run shows phantom collections');
  assert.ok(v.late > 0);
  bin.free();
});
