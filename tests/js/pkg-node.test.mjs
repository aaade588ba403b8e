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
const { Deduplicator, idempotencyKey, auditLine, isoTime, limits } = pkg;

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
    assert.equal(p.received, p.unique + p.duplicates_suppressed + p.rejected);
    assert.ok(!('pending' in p), 'pending is written only when provisional admissions are open');
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

// The documented use of provisional admission: a Node service whose store is
// asynchronous. While a burst's rows are being written (an await), another request
// with a copy must neither be admitted again nor be told "duplicate" of something
// that may yet fail to store; a failed store must let the retry through.
test('provisional admission: a service that stores asynchronously', async () => {
  const dedup = new Deduplicator();
  const rows = new Map();
  let failWrites = false;
  const write = async (unique) => {
    await new Promise((r) => setImmediate(r)); // the database round trip
    if (failWrites) throw new Error('disk full');
    for (const u of unique) rows.set(u.key, u);
  };
  async function handle(readings, now) {
    const out = dedup.processBurst(readings, now, true);
    try {
      await write(out.unique);
      dedup.confirm(out.ticket);
    } catch {
      dedup.release(out.ticket);
      return { status: 503, out };
    }
    // Copies whose first copy is still being written: the sender retries them.
    return { status: out.pending.length ? 503 : 200, out };
  }
  const burst = vectors.vectors.slice(0, 3).map((v) => v.reading);
  const [a, b] = await Promise.all([handle(burst, NOW), handle(burst, NOW)]);
  assert.deepEqual([a.status, a.out.unique.length], [200, 3]);
  assert.deepEqual([b.status, b.out.unique.length, b.out.pending], [503, 0, [0, 1, 2]]);
  assert.equal(b.out.audit.payload.pending, 3);
  const retry = await handle(burst, NOW + 1);
  assert.deepEqual([retry.status, retry.out.duplicates_suppressed], [200, 3], 'stored now: duplicates');
  const fresh = [{ device_id: 'svc-1', seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 40 }];
  failWrites = true;
  assert.equal((await handle(fresh, NOW + 2)).status, 503);
  failWrites = false;
  const again = await handle(fresh, NOW + 3);
  assert.deepEqual([again.status, again.out.unique.length], [200, 1], 'the failed store released the key');
  assert.equal(rows.size, 4);
});

test('admitKeys and fromKeys: keys derived once, decided without hashing the content', () => {
  const dedup = new Deduplicator({ ttlMs: 60_000 });
  const keys = vectors.vectors.slice(0, 4).map((v) => v.key);
  const out = dedup.admitKeys([...keys, keys[0]].join('\n'), NOW, 1, { device_id: 'x', burst_id: 'b1' });
  assert.ok(out.verdicts instanceof Uint8Array);
  // The 4th vector has the 1st one's device and seq with other content: a seq reuse.
  assert.deepEqual([...out.verdicts], [0, 0, 0, 1, 2]);
  assert.deepEqual(out.counts, { received: 6, unique: 4, duplicates_suppressed: 1, rejected: 1, seq_reuses: 1, evicted_before_ttl: 0 });
  const line = JSON.parse(out.line);
  assert.deepEqual([line.event, line.device_id, line.burst_id, line.payload], ['burst_deduplicated', 'x', 'b1', out.counts]);
  assert.throws(() => dedup.admitKeys(`${keys[1]}\nnot-a-key`, NOW), { code: 'invalid_key' });
  const rebuilt = Deduplicator.fromKeys(keys.join('\n'), Float64Array.from(keys, () => NOW), { ttlMs: 60_000 });
  assert.deepEqual([...rebuilt.admitKeys(keys.join('\n'), NOW + 59_999).verdicts], [2, 2, 2, 2]);
  assert.deepEqual([...rebuilt.admitKeys(keys[0], NOW + 60_000).verdicts], [0], 'expired at exactly admitted + ttl');
  assert.throws(() => Deduplicator.fromKeys(keys.join('\n'), new Float64Array(1)), { code: 'invalid_key' });
});

test('the core writes every time and audit line: isoTime, auditLine, limits', () => {
  assert.equal(isoTime(NOW), '2026-07-16T09:00:11.204000+00:00');
  assert.equal(isoTime(Date.parse('2026-07-16T09:00:00Z')), '2026-07-16T09:00:00+00:00');
  assert.throws(() => isoTime(NaN), { code: 'invalid_time' });
  const counts = { received: 2, unique: 0, duplicates_suppressed: 0, rejected: 0, not_stored: 2, seq_reuses: 0, evicted_before_ttl: 0 };
  const line = JSON.parse(auditLine('burst_not_stored', counts, NOW, { device_id: 'd', error: 'device_unavailable' }));
  assert.deepEqual(line, { logged_at: '2026-07-16T09:00:11.204000+00:00', level: 'ERROR', event: 'burst_not_stored', payload: counts, device_id: 'd', error: 'device_unavailable' });
  assert.throws(() => auditLine('burst_not_stored', { ...counts, not_stored: 1 }, NOW), { code: 'invalid_burst' });
  assert.throws(() => auditLine('burst_lost', counts, NOW), { code: 'invalid_burst' });
  // A count not given is 0: the line is the same as with every count written out; an
  // unknown count, or one that is not a whole number, is refused.
  assert.equal(auditLine('burst_not_stored', { received: 2, not_stored: 2 }, NOW), auditLine('burst_not_stored', counts, NOW));
  assert.throws(() => auditLine('burst_not_stored', { received: 2, not_stored: 2, lost: 0 }, NOW), { code: 'invalid_burst', message: /lost/ });
  assert.throws(() => auditLine('burst_not_stored', { received: 2, not_stored: '2' }, NOW), { code: 'invalid_burst' });
  assert.throws(() => auditLine('burst_not_stored', { received: 2 }, NOW), { code: 'invalid_burst', message: /reconcile/ });
  // A misspelt member of the context is refused, not dropped from the line.
  assert.throws(() => auditLine('burst_not_stored', counts, NOW, { device: 'd' }), { code: 'invalid_burst', message: /unknown member "device"; expected device_id, route, burst_id, error/ });
  assert.throws(() => new Deduplicator().admitKeys('', NOW, 0, { devcie_id: 'd' }), { code: 'invalid_burst', message: /unknown member "devcie_id"/ });
  // An uplink parked until its device is configured: counted, and only when not zero.
  const parked = { received: 2, unique: 0, duplicates_suppressed: 0, rejected: 1, parked: 1, seq_reuses: 0, evicted_before_ttl: 0 };
  const parkedLine = auditLine('burst_deduplicated', parked, NOW);
  assert.ok(parkedLine.includes('"rejected":1,"parked":1,"seq_reuses":0'), parkedLine);
  assert.deepEqual(JSON.parse(parkedLine).payload, parked);
  assert.throws(() => auditLine('burst_deduplicated', { ...parked, parked: 2 }, NOW), { code: 'invalid_burst' });
  const l = limits();
  assert.deepEqual(l.ttlMs, { min: 1, max: 31 * 24 * 3600 * 1000, default: 6 * 3600 * 1000 });
  assert.deepEqual(l.formats, ['ttn', 'chirpstack', 'helium', 'loriot', 'readings']);
});

test("parseUplink's maxReadings is held to limits().maxReadings: beyond it, below 1 or not whole is invalid_config", () => {
  const { min, max } = limits().maxReadings;
  const body = JSON.stringify([{ device_id: 'd', seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 1 }]);
  for (const n of [min, max]) assert.equal(JSON.parse(pkg.parseUplink('readings', body, { maxReadings: n })).received, 1);
  for (const n of [0, max + 1, 1.5, 2 ** 64]) {
    assert.throws(() => pkg.parseUplink('readings', body, { maxReadings: n }), { code: 'invalid_config', message: new RegExp(`maxReadings must be a whole number ${min} … ${max}`) }, String(n));
    assert.throws(() => pkg.checkUplinkOptions({ maxReadings: n }), { code: 'invalid_config' }, String(n));
  }
});

test('an audit line is one JSON line whatever the device id or error text (no log injection)', () => {
  const counts = { received: 1, unique: 1, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0, evicted_before_ttl: 0 };
  // Ids a device may legally have (no control characters) that would break a naive
  // line format: quotes, backslashes, a forged member. The JS line separators are not
  // ids (U+2028/U+2029 are refused as invisible characters); they are tried in the
  // error text below.
  for (const device_id of ['line\u2028sep', 'para\u2029sep']) {
    assert.throws(() => idempotencyKey({ device_id, seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 1 }), { code: 'invalid_device_id' });
  }
  const ids = ['a","level":"INFO', 'back\\slash', '{"event":"x"}', '</script>'];
  for (const device_id of ids) {
    const dedup = new Deduplicator();
    const key = idempotencyKey({ device_id, seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 1 });
    const text = dedup.admitKeys(key, NOW, 0, { device_id, burst_id: 'b' }).line;
    assert.ok(!/[\n\r]/.test(text), `one line for ${JSON.stringify(device_id)}`);
    const line = JSON.parse(text);
    assert.equal(line.device_id, device_id);
    assert.equal(line.level, 'INFO');
    assert.deepEqual(Object.keys(line), ['logged_at', 'level', 'event', 'payload', 'device_id', 'burst_id']);
  }
  const error = 'origin said "ok"\n{"level":"INFO"}\u2028\u2029';
  const text = auditLine('burst_not_stored', { ...counts, unique: 0, not_stored: 1 }, NOW, { device_id: 'd', error });
  assert.ok(!/[\n\r]/.test(text));
  assert.equal(JSON.parse(text).error, error);
});
