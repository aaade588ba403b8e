// A clock going backwards, on the path the worker's device objects use: `admitKeys`
// (and the cold rebuild `fromKeys`) of the built package in Node, with `nowMs`
// earlier than a time already seen. docs/semantics.md "Semantics of the seen-set": "Its clock
// never runs backwards: an earlier nowMs counts as the latest seen."
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { Deduplicator, idempotencyKey } = pkg;

const T = Date.parse('2026-07-16T09:00:00Z');
const HOUR = 3600_000;
const TTL = 6 * HOUR;
const key = (seq) => idempotencyKey({ device_id: 'bin-C1', seq, ts: '2026-07-16T09:00:00Z', fill_pct: 10 });
const verdict = (d, k, now) => d.admitKeys(k, now).verdicts[0];
const [ADMITTED, DUPLICATE] = [0, 2];

test('a replay arriving with a clock stepped back an hour is still a duplicate', () => {
  const d = new Deduplicator({ ttlMs: TTL });
  assert.equal(verdict(d, key(1), T), ADMITTED);
  assert.equal(verdict(d, key(1), T - HOUR), DUPLICATE);
  assert.equal(verdict(d, key(1), 0), DUPLICATE, 'even at the epoch');
});

test('a key admitted while the clock is behind expires a TTL after the latest time seen, not earlier, not later', () => {
  const d = new Deduplicator({ ttlMs: TTL });
  verdict(d, key(1), T);
  assert.equal(verdict(d, key(2), T - HOUR), ADMITTED, 'admitted at T - 1 h, counted as T');
  // Had it been held at T - 1 h, it would expire at T + 5 h.
  assert.equal(verdict(d, key(2), T + TTL - 1), DUPLICATE, 'still held a TTL after T, less 1 ms');
  assert.equal(verdict(d, key(1), T + TTL), ADMITTED, 'the key admitted at T expires at exactly T + TTL');
  assert.equal(verdict(d, key(2), T + TTL), ADMITTED, 'and so does the one admitted while the clock was behind');
});

test('a cold rebuild at a now earlier than its stored times keeps every key', () => {
  // The worker's case: rows stored by a clock that was ahead, rebuilt after it stepped back.
  const keys = [key(1), key(2)];
  const d = Deduplicator.fromKeys(keys.join('\n'), Float64Array.from([T, T + 1]), { ttlMs: TTL });
  const out = d.admitKeys(keys.join('\n'), T - 10 * 24 * HOUR);
  assert.deepEqual([...out.verdicts], [DUPLICATE, DUPLICATE]);
  assert.equal(d.stats().keys, 2);
});
