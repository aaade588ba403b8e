// The demo's pure parts (www/sim.js, www/strategies.js) in Node, with the built
// Wasm package as strategy 4: reproducibility, the ground-truth accounting, and what
// each strategy's rule does to the simulated traffic (device + seq after a battery swap).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { simulate, normalizeParams, PARAMS, START_MS, TICK_MS } from '../../www/sim.js';
import { STRATEGIES, createRun, compareWithWorker, lostPoints } from '../../www/strategies.js';

const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url)) });
const { Deduplicator } = pkg;

const small = { seed: 7, fleet: 12, minutes: 120 };
const json = (s) => JSON.stringify(s.ticks);

test('the same parameters give the same stream; another seed another one', () => {
  assert.equal(json(simulate(small)), json(simulate(small)));
  assert.notEqual(json(simulate(small)), json(simulate({ ...small, seed: 8 })));
});

test('parameters are clamped into their ranges, unknown coarseness falls back', () => {
  const p = normalizeParams({ fleet: 10_000, minutes: -3, coarseSec: 7, seed: 'x' });
  assert.equal(p.fleet, PARAMS.fleet.max);
  assert.equal(p.minutes, PARAMS.minutes.min);
  assert.equal(p.coarseSec, PARAMS.coarseSec.def);
  assert.equal(p.seed, PARAMS.seed.def);
});

test('the stream has what the demo is about: replays, corruption, shared timestamps, seq resets', () => {
  const s = simulate({});
  const ups = s.ticks.flatMap((t) => t.uplinks);
  assert.ok(ups.some((u) => u.retransmit && !u.corrupted));
  assert.ok(ups.some((u) => u.corrupted && u.reading.fill_pct > 100));
  const seen = new Set();
  let shared = 0;
  for (const r of s.readings) {
    const k = `${r.reading.device_id} ${r.reading.ts}`;
    if (seen.has(k)) shared++;
    seen.add(k);
  }
  assert.ok(shared > 0, 'two real readings share a device and timestamp');
  const seqs = new Map();
  let resets = 0;
  for (const r of s.readings) {
    const prev = seqs.get(r.reading.device_id);
    if (prev !== undefined && r.reading.seq < prev) resets++;
    seqs.set(r.reading.device_id, r.reading.seq);
  }
  assert.ok(resets > 0, 'a battery swap reset a seq');
});

/** A hand-made stream: rid 0 and 1 share a second; rid 0 is replayed; rid 2 arrives
 *  corrupted, then intact; rid 3 only ever arrives corrupted. */
function handmade() {
  const r = (seq, ts, fill) => ({ device_id: 'bin-A17', seq, ts, fill_pct: fill });
  const A = r(41, '2026-07-16T09:00:00Z', 62.5);
  const B = r(42, '2026-07-16T09:00:00Z', 71);
  const C = r(43, '2026-07-16T09:00:15Z', 72);
  const D = r(44, '2026-07-16T09:00:30Z', 73);
  const up = (reading, rid, corrupted = false) => ({ reading: corrupted ? { ...reading, fill_pct: 255 } : reading, rid, dev: 0, retransmit: corrupted, corrupted });
  return {
    params: { minutes: 2 },
    devices: ['bin-A17'],
    trueFill: [new Float32Array(2)],
    trueServices: [[]],
    trueSwaps: [[]],
    ticks: [
      { nowMs: Date.parse('2026-07-16T09:01:00Z'), uplinks: [up(A, 0), up(B, 1), up(C, 2, true), up(D, 3, true)] },
      { nowMs: Date.parse('2026-07-16T09:02:00Z'), uplinks: [up(A, 0), up(C, 2)] },
    ],
  };
}

test('ground truth: a corrupted copy is never lost once its good copy arrives, and a reading never intact is owed to no one', () => {
  const run = createRun(handmade(), new Deduplicator());
  while (run.step());
  assert.equal(run.truth.intact.size, 3); // A, B, C; D never arrived intact
  assert.equal(run.truth.replays, 2); // A again, C again
  assert.deepEqual(run.summary(), {
    // C's good copy comes after D's (corrupted) one, but D never got through: C is not late.
    none: { passes: 4, duplicatesPassed: 1, lost: 0, rejected: 2, falseServices: 0, late: 0 },
    naive: { passes: 2, duplicatesPassed: 0, lost: 1, rejected: 2, falseServices: 0, late: 0 }, // B shares A's second
    seq: { passes: 3, duplicatesPassed: 0, lost: 0, rejected: 2, falseServices: 0, late: 0 },
    wasm: { passes: 3, duplicatesPassed: 0, lost: 0, rejected: 2, falseServices: 0, late: 0 },
  });
  // Where naive lost B: in the minute it arrived, at its fill.
  assert.deepEqual(lostPoints(run.tallies.naive, 0), [[0, 71]]);
  assert.deepEqual(run.core, { received: 6, unique: 3, duplicates_suppressed: 1, rejected: 2, seq_reuses: 0, evicted_before_ttl: 0 });
});

/** A bin whose battery is swapped after seq 12: the next readings count from 0 again. */
function batterySwap() {
  const r = (seq, hhmmss, fill) => ({ device_id: 'bin-B02', seq, ts: `2026-07-16T09:${hhmmss}Z`, fill_pct: fill });
  const before = [r(0, '00:05', 40), r(1, '01:05', 41), r(2, '02:05', 42)];
  const after = [r(0, '03:10', 2), r(1, '04:10', 3), r(2, '05:10', 4), r(3, '06:10', 5)];
  const ups = [...before, ...after].map((reading, rid) => ({ reading, rid, dev: 0, retransmit: false, corrupted: false }));
  const tick = (m, uplinks) => ({ nowMs: Date.parse('2026-07-16T09:00:00Z') + (m + 1) * 60_000, uplinks });
  return {
    params: { minutes: 7 },
    devices: ['bin-B02'],
    trueFill: [new Float32Array(7)],
    trueServices: [[3]],
    trueSwaps: [[3]],
    // Minute 3 the bin is emptied and its battery swapped; at minute 5 it replays 0 and 1 of
    // before the swap, which every keyed strategy rightly drops.
    ticks: [[ups[0]], [ups[1]], [ups[2]], [ups[3]], [ups[4]], [ups[5], { ...ups[0], retransmit: true }, { ...ups[1], retransmit: true }], [ups[6]]].map((u, m) => tick(m, u)),
  };
}

test('device + seq after a battery swap: the readings that reuse a seq are lost, where they arrived', () => {
  const run = createRun(batterySwap(), new Deduplicator());
  while (run.step());
  const s = run.summary();
  assert.equal(run.truth.swaps, 1);
  assert.equal(run.truth.intact.size, 7);
  // Seqs 0, 1, 2 after the swap were seen before it; seq 3 is new.
  assert.equal(s.seq.lost, 3);
  assert.deepEqual(lostPoints(run.tallies.seq, 0), [[3, 2], [4, 3], [5, 4]]);
  assert.equal(s.seq.duplicatesPassed, 0, 'the replayed copies are dropped too');
  // The timestamps differ, so naive keeps them all; the core keeps them and says a seq was reused.
  assert.equal(s.naive.lost, 0);
  assert.equal(s.wasm.lost, 0);
  assert.equal(s.wasm.duplicatesPassed, 0);
  assert.equal(run.core.seq_reuses, 3);
  assert.equal(s.none.duplicatesPassed, 2);
});

test('a late arrival: a reading whose first copy came corrupted, passed after a newer one', () => {
  const r = (seq, ts, fill) => ({ device_id: 'bin-C03', seq, ts: `2026-07-16T09:0${ts}Z`, fill_pct: fill });
  const A = r(7, '0:10', 50);
  const B = r(8, '1:10', 51);
  const up = (reading, rid, corrupted = false) => ({ reading: corrupted ? { ...reading, fill_pct: 255 } : reading, rid, dev: 0, retransmit: corrupted, corrupted });
  const stream = {
    params: { minutes: 2 }, devices: ['bin-C03'], trueFill: [new Float32Array(2)], trueServices: [[]], trueSwaps: [[]],
    ticks: [
      { nowMs: Date.parse('2026-07-16T09:02:00Z'), uplinks: [up(A, 0, true), up(B, 1)] },
      { nowMs: Date.parse('2026-07-16T09:03:00Z'), uplinks: [up(A, 0), up(B, 1)] },
    ],
  };
  const run = createRun(stream, new Deduplicator());
  while (run.step());
  for (const id of ['naive', 'seq', 'wasm']) {
    assert.deepEqual(run.tallies[id].series[0], [[0, 51, null], [1, 50, 'late']], id);
    assert.equal(run.summary()[id].late, 1);
  }
  assert.deepEqual(run.tallies.none.series[0], [[0, 51, null], [1, 50, 'late'], [1, 51, 'dup']]);
});

/** Each strategy's real readings lost, counted from the traffic alone: the intact readings grouped by the strategy's key, all but one of each group. */
function lostByKey(stream, key) {
  const groups = new Map();
  for (const t of stream.ticks) {
    for (const u of t.uplinks) {
      if (u.corrupted) continue;
      const k = key(u.reading);
      if (!groups.has(k)) groups.set(k, new Set());
      groups.get(k).add(u.rid);
    }
  }
  return [...groups.values()].filter((g) => g.size > 1);
}

test('a full default run: device + seq loses exactly the readings that reuse a seq after a battery swap', () => {
  const stream = simulate({});
  const run = createRun(stream, new Deduplicator());
  while (run.step());
  const s = run.summary();
  const seqKey = STRATEGIES.find((x) => x.id === 'seq').key;
  const collisions = lostByKey(stream, seqKey);
  assert.ok(collisions.length > 0);
  assert.equal(s.seq.lost, collisions.reduce((n, g) => n + g.size - 1, 0));
  assert.ok(s.seq.lost > 100, `a visible loss, got ${s.seq.lost}`);
  assert.equal(s.seq.duplicatesPassed, 0);
  // Every collision is a reading made after one of its bin's battery swaps, on a seq the bin had sent before it.
  for (const g of collisions) {
    const made = [...g].map((rid) => stream.readings[rid]).sort((a, b) => a.tMs - b.tMs);
    const swaps = stream.trueSwaps[made[0].dev].map((m) => START_MS + m * TICK_MS);
    for (let i = 1; i < made.length; i++) {
      assert.ok(swaps.some((at) => made[i - 1].tMs < at && at <= made[i].tMs), `${made[i].reading.device_id} seq ${made[i].reading.seq}: no swap between`);
    }
  }
  // The core sees the same reuses, and keeps both readings: their content differs.
  assert.equal(run.core.seq_reuses, s.seq.lost);
  const naiveKey = STRATEGIES.find((x) => x.id === 'naive').key;
  assert.equal(s.naive.lost, lostByKey(stream, naiveKey).reduce((n, g) => n + g.size - 1, 0));
  // Each lost reading is marked once, on its bin's chart.
  for (const id of Object.keys(s)) {
    const marked = stream.devices.reduce((n, _, dev) => n + lostPoints(run.tallies[id], dev).length, 0);
    assert.equal(marked, s[id].lost, id);
  }
});

test('a full default run: strategy 4 loses nothing and passes no duplicate, naive loses', () => {
  const run = createRun(simulate({}), new Deduplicator());
  while (run.step());
  const s = run.summary();
  assert.equal(s.wasm.lost, 0);
  assert.equal(s.wasm.duplicatesPassed, 0);
  assert.ok(s.naive.lost > 0);
  assert.ok(s.none.duplicatesPassed > 0);
  const c = run.core;
  assert.equal(c.received, c.unique + c.duplicates_suppressed + c.rejected);
});

test('the worker comparison names every difference and ignores details a reply leaves out', () => {
  const run = createRun(handmade(), new Deduplicator());
  const { out } = run.step();
  const same = { received: 4, unique: 2, duplicates_suppressed: 0, duplicates: [], rejected: out.rejected };
  assert.deepEqual(compareWithWorker(out, same), []);
  assert.deepEqual(compareWithWorker(out, { received: 4, unique: 3, duplicates_suppressed: 0 }), ['unique: browser 2, worker 3']);
  assert.deepEqual(compareWithWorker(out, { received: 4, unique: 2 }), ['duplicates_suppressed: browser 0, worker undefined']);
});
