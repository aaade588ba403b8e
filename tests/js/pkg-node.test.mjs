// The built package (pkg/, from `npm run build`) through its generated JS glue in
// Node, as the worker and the demo load it. scripts/test.sh builds pkg/ first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
const vectors = JSON.parse(fs.readFileSync(new URL('../vectors/keys.json', import.meta.url)));
const rejections = JSON.parse(fs.readFileSync(new URL('../vectors/rejections.json', import.meta.url)));
const NOW = Date.parse('2026-07-16T09:00:11.204Z');

assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { Deduplicator, idempotencyKey } = pkg;

test('every key vector gives its seed key through the glue', () => {
  for (const v of vectors.vectors) {
    assert.equal(idempotencyKey(v.reading), v.key, v.name);
  }
});

test('every rejection vector throws an Error with its stable code', () => {
  for (const c of rejections.cases) {
    assert.throws(() => idempotencyKey(c.reading), (e) => e instanceof Error && e.code === c.code, c.name);
  }
});

test('a replay of a burst, sent as bytes, is suppressed and the audit reconciles', () => {
  const dedup = new Deduplicator();
  const body = new TextEncoder().encode(JSON.stringify({ readings: vectors.vectors.map((v) => v.reading) }));
  const first = JSON.parse(dedup.processBurstJson(body, NOW));
  const again = JSON.parse(dedup.processBurstJson(body, NOW + 1000));
  for (const out of [first, again]) {
    const p = out.audit.payload;
    assert.equal(p.received, p.unique + p.duplicates_suppressed + p.pending + p.rejected);
    assert.equal(p.received, vectors.vectors.length);
  }
  assert.equal(again.unique.length, 0);
  assert.equal(again.duplicates_suppressed, vectors.vectors.length);
  assert.ok(first.duplicates_suppressed > 0, "the vectors hold one instant written with two offsets");
  assert.equal(dedup.stats().keys, first.unique.length);
});

test('snapshot bytes restore into a deduplicator that keeps suppressing', () => {
  const dedup = new Deduplicator({ ttlMs: 60_000, maxKeys: 10 });
  const burst = [{ device_id: 'bin-A17', seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 50 }];
  dedup.processBurst(burst, NOW);
  const bytes = dedup.snapshot();
  assert.ok(bytes instanceof Uint8Array);
  const restored = Deduplicator.restore(bytes);
  assert.equal(restored.processBurst(burst, NOW + 1).duplicates_suppressed, 1);
  assert.equal(restored.stats().max_keys, 10);
  // The TTL still holds after a restore: at exactly admitted + ttl the key has expired.
  assert.equal(restored.processBurst(burst, NOW + 60_000).unique.length, 1);
  assert.throws(() => Deduplicator.restore(bytes.subarray(0, 20)), { code: 'invalid_snapshot' });
});
