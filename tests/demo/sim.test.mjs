// The demo's pure parts (www/sim.js, www/strategies.js) in Node, with the built
// Wasm package as strategy 3: reproducibility and the ground-truth accounting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { simulate, normalizeParams, PARAMS } from '../../www/sim.js';
import { createRun, compareWithWorker } from '../../www/strategies.js';

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
    none: { passes: 4, duplicatesPassed: 1, lost: 0, rejected: 2, falseServices: 0 },
    naive: { passes: 2, duplicatesPassed: 0, lost: 1, rejected: 2, falseServices: 0 }, // B shares A's second
    wasm: { passes: 3, duplicatesPassed: 0, lost: 0, rejected: 2, falseServices: 0 },
  });
  assert.deepEqual(run.core, { received: 6, unique: 3, duplicates_suppressed: 1, rejected: 2, seq_reuses: 0, evicted_before_ttl: 0 });
});

test('a full default run: strategy 3 loses nothing and passes no duplicate, naive loses', () => {
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
