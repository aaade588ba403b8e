// Hostile inputs against the Wasm API of the built package (pkg/) in Node, as one
// table. Each row names a call on one shared deduplicator (or a free function), the
// error code it must throw or the result it must give, and what the deduplicator
// holds afterwards: `unchanged` (snapshot bytes, stats and the held keys exactly as
// before the row) or a check of what it holds now. After the table the same
// instance still processes a valid burst correctly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import vm from 'node:vm';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { Deduplicator, idempotencyKey, checkDeviceId, isoTime, auditLine } = pkg;

const NOW = Date.parse('2026-07-16T09:00:11.204Z');
const TS = '2026-07-16T09:00:00Z';
const MAX_SAFE = 2 ** 53 - 1;
const r = (device_id, seq = 1, fill_pct = 50, ts = TS) => ({ device_id, seq, ts, fill_pct });

// What the shared deduplicator holds before the table: two confirmed keys and one
// key pending under ticket 1.
const HELD = [r('bin-held', 1), r('bin-held', 2)];
const PENDING = r('bin-pending', 1);
const dedup = new Deduplicator({ ttlMs: 60_000, maxKeys: 1000 });
dedup.processBurst(HELD, NOW);
const { ticket } = dedup.processBurst([PENDING], NOW, true);
assert.equal(ticket, 1);
const HELD_KEYS = HELD.map((x) => idempotencyKey(x));

// A snapshot to craft from: the key of bin-held:1 confirmed at NOW.
const base = (() => {
  const d = new Deduplicator({ ttlMs: 60_000, maxKeys: 1000 });
  d.processBurst([HELD[0]], NOW);
  return d.snapshot();
})();
// RDDS v1 offsets (src/dedupe/seen/snapshot.rs): u64 fields from byte 8.
const AT = { ttl: 8, maxKeys: 16, clock: 24, admitted: 48, duplicates: 56, evicted: 72, expired: 80, released: 88, reserved: 104, count: 112 };
const ENTRY = 120; // the first entry: id, tag, admitted_ms
/** `base` with `edit(view)` applied to its body and the checksum recomputed. */
function craft(edit) {
  const body = base.slice(0, base.length - 8);
  edit(new DataView(body.buffer));
  const sum = createHash('sha256').update(body).digest().subarray(0, 8);
  return Uint8Array.from([...body, ...sum]);
}
const setU64 = (at, v) => (view) => view.setBigUint64(at, BigInt.asUintN(64, v), true);
const setI64 = (at, v) => (view) => view.setBigInt64(at, v, true);

function state(d) {
  return {
    snapshot: Buffer.from(d.snapshot()).toString('hex'),
    stats: JSON.stringify(d.stats()),
    held: HELD.map((x) => d.contains(x, NOW)),
  };
}

function codeOf(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof Error, `throws an Error, got ${e}`);
    return e.code;
  }
  return undefined;
}

const S = 'unchanged';
const rejectedAs = (code, re) => (out) => {
  assert.deepEqual(out.rejected.map((x) => x.code), [code]);
  assert.equal(out.unique.length, 0);
  if (re) assert.match(out.rejected[0].message, re);
};
const LONE = /not valid Unicode \(lone surrogate\)/;

// [name, call(d), expected: { code } | { result(out) }, after: 'unchanged' | check(d)]
const rows = [
  // Lone surrogates: rejected, never mapped to U+FFFD.
  ['processBurst: device_id "dev\\uD800"', (d) => d.processBurst([r('dev\uD800')], NOW), { result: rejectedAs('invalid_device_id', LONE) }, S],
  ['processBurst: device_id "dev\\uDBFF"', (d) => d.processBurst([r('dev\uDBFF')], NOW), { result: rejectedAs('invalid_device_id', LONE) }, S],
  ['processBurst: device_id "dev\\uDC00" (lone low)', (d) => d.processBurst([r('dev\uDC00')], NOW), { result: rejectedAs('invalid_device_id', LONE) }, S],
  ['processBurst: device_id "\\uDC00\\uD800dev" (pair reversed)', (d) => d.processBurst([r('\uDC00\uD800dev')], NOW), { result: rejectedAs('invalid_device_id', LONE) }, S],
  ['processBurst: ts with a lone surrogate', (d) => d.processBurst([r('bin-ts', 1, 50, '2026-07-16T09:00:00Z\uD800')], NOW), { result: rejectedAs('invalid_ts') }, S],
  ['processBurst {readings}: "bin-held\uD800" and "bin-held\uDBFF" do not collide', (d) => d.processBurst({ readings: [r('bin-held\uD800'), r('bin-held\uDBFF')] }, NOW),
    { result: (o) => assert.deepEqual([o.unique, o.duplicates, o.rejected.map((x) => [x.index, x.code])], [[], [], [[0, 'invalid_device_id'], [1, 'invalid_device_id']]]) }, S],
  ['idempotencyKey: "dev\\uD800"', () => idempotencyKey(r('dev\uD800')), { code: 'invalid_device_id' }, S],
  ['idempotencyKey: "dev\\uDBFF"', () => idempotencyKey(r('dev\uDBFF')), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: "dev\\uD800"', () => checkDeviceId('dev\uD800'), { code: 'invalid_device_id' }, S],
  ['contains: "dev\\uD800"', (d) => d.contains(r('dev\uD800'), NOW), { code: 'invalid_device_id' }, S],
  ['admitKeys: key of "dev\\uD800"', (d) => d.admitKeys('dev\uD800:1:0123456789abcdef', NOW), { code: 'invalid_key' }, S],
  ['processBurstJson: text with a raw lone surrogate', (d) => d.processBurstJson(JSON.stringify([r('dev\uD800')]).replace('\\ud800', '\uD800'), NOW), { code: 'invalid_json' }, S],
  ['processBurstJson: the error says where the lone surrogate is', (d) => { try { d.processBurstJson('[\n {"device_id":"dév\uDBFF"}]', NOW); } catch (e) { return e.message; } },
    { result: (m) => assert.match(m, /lone surrogate\) at line 2 column 19$/) }, S],
  ['processBurstJson: escaped \\ud800 in the text', (d) => d.processBurstJson('[{"device_id":"dev\\ud800","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":5}]', NOW), { code: 'invalid_json' }, S],
  ['auditLine: context device_id with a lone surrogate', () => auditLine('burst_deduplicated', { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0, evicted_before_ttl: 0 }, NOW, { device_id: 'dev\uD800' }), { code: 'invalid_burst' }, S],
  ['idempotencyKey: a valid pair "\\uD83D\\uDDD1" keys as UTF-8', () => idempotencyKey(r('bin-\uD83D\uDDD1')), { result: (k) => assert.ok(k.startsWith('bin-🗑:1:')) }, S],
  ['idempotencyKey: a real U+FFFD is valid Unicode', () => idempotencyKey(r('dev\uFFFD')), { result: (k) => assert.ok(k.startsWith('dev\uFFFD:1:')) }, S],

  // A JS exception inside a call (a throwing getter, a Proxy whose traps throw) is
  // caught: invalid_burst naming it, nothing admitted, and the instance keeps working
  // (before: the exception unwound through Wasm with the instance borrowed, and every
  // later call threw "recursive use of an object detected").
  ['processBurst: a getter that throws in reading 1', (d) => d.processBurst([r('bin-g', 1), { get device_id() { throw new Error('boom'); } }], NOW), { code: 'invalid_burst' }, S],
  ['processBurst: the error names the thrown error and the reading', (d) => { try { d.processBurst([r('bin-g', 1), { get seq() { throw new TypeError('boom'); } }], NOW); } catch (e) { return e.message; } },
    { result: (m) => assert.equal(m, 'reading 1 could not be read: reading it threw TypeError: boom') }, S],
  ['processBurst: a Proxy array whose get trap throws', (d) => d.processBurst(new Proxy([r('bin-g', 1)], { get() { throw new Error('trap'); } }), NOW), { code: 'invalid_burst' }, S],
  ['processBurst: a Proxy reading whose ownKeys trap throws', (d) => d.processBurst([new Proxy(r('bin-g', 1), { ownKeys() { throw new Error('trap'); } })], NOW), { code: 'invalid_burst' }, S],
  ['processBurst: a revoked Proxy as the burst', (d) => { const p = Proxy.revocable([], {}); p.revoke(); return d.processBurst(p.proxy, NOW); }, { code: 'invalid_burst' }, S],
  ['processBurst {readings}: a readings getter that throws', (d) => d.processBurst({ get readings() { throw new Error('boom'); } }, NOW), { code: 'invalid_burst' }, S],
  ['processBurst: a throwing getter in an ignored nested member is never run', (d) => d.processBurst([{ ...HELD[0], extra: { get x() { throw new Error('boom'); } } }], NOW),
    { result: (o) => assert.deepEqual([o.duplicates, o.rejected], [[0], []]) }, (d) => assert.deepEqual(HELD.map((x) => d.contains(x, NOW)), [true, true])],
  ['processBurst: a benign Proxy array and reading are read as usual', (d) => d.processBurst(new Proxy([new Proxy(HELD[0], {})], {}), NOW), { result: (o) => assert.deepEqual(o.duplicates, [0]) }, (d) => assert.deepEqual(HELD.map((x) => d.contains(x, NOW)), [true, true])],
  ['processBurst: a thrown non-Error value', (d) => { try { d.processBurst([{ get ts() { throw 42; } }], NOW); } catch (e) { return [e.code, e.message]; } },
    { result: (v) => assert.deepEqual(v, ['invalid_burst', 'reading 0 could not be read: reading it threw 42']) }, S],
  ['contains: a getter that throws', (d) => d.contains({ get device_id() { throw new Error('boom'); } }, NOW), { code: 'invalid_burst' }, S],
  ['idempotencyKey: a getter that throws', () => idempotencyKey({ get device_id() { throw new Error('boom'); } }), { code: 'invalid_burst' }, S],
  ['admitKeys: a context getter that throws', (d) => d.admitKeys(HELD_KEYS[0], NOW, 0, { get route() { throw new Error('boom'); } }), { code: 'invalid_burst' }, S],
  ['new Deduplicator: an options getter that throws', () => new Deduplicator({ get ttlMs() { throw new Error('boom'); } }), { code: 'invalid_config' }, S],
  ['restore: options getter that throws', () => Deduplicator.restore(base, { get maxKeys() { throw new Error('boom'); } }), { code: 'invalid_config' }, S],
  ['processBurstJson: a Proxy of bytes whose get trap throws', (d) => d.processBurstJson(new Proxy(new TextEncoder().encode('[]'), { get() { throw new Error('trap'); } }), NOW), { code: 'invalid_burst' }, S],
  // A Proxy of a Uint8Array cannot be read as one even without traps (its `length`
  // getter refuses a Proxy as `this`): a coded error, never an uncaught one.
  ['processBurstJson: a trapless Proxy of bytes', (d) => d.processBurstJson(new Proxy(new TextEncoder().encode(JSON.stringify([HELD[0]])), {}), NOW), { code: 'invalid_burst' }, S],
  ['readingsFromPayload: an EM500 history uplink is two keyed readings', () => pkg.readingsFromPayload('24e124136b502217', { codec: 'milesight-iot/em500-udl', bin_depth_mm: 1500 }, 85, Uint8Array.from(Buffer.from('20CE9E744663D20420CE3A824663D004', 'hex')), { received_at: '2026-07-16T09:00:00Z', f_cnt: 3 }),
    { result: (v) => assert.deepEqual(v.readings.map((r) => [r.index, r.seq, r.key.split(':')[0]]), [[0, 1665561758, '24E124136B502217'], [1, 1665565242, '24E124136B502217']]) }, S],
  ['readingsFromPayload: a device id that is a number', () => pkg.readingsFromPayload(7, { codec: 'dingtek/df703', bin_depth_mm: 1 }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z' }), { code: 'invalid_device_id' }, S],
  ['readingsFromPayload: a config without bin_depth_mm', () => pkg.readingsFromPayload('d', { codec: 'dingtek/df703' }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z' }), { code: 'invalid_burst' }, S],
  ['readingsFromPayload: a config with an unknown member', () => pkg.readingsFromPayload('d', { codec: 'dingtek/df703', bin_depth_mm: 1, depth: 2 }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z' }), { code: 'invalid_burst' }, S],
  ['readingsFromPayload: bin_depth_mm 0', () => pkg.readingsFromPayload('d', { codec: 'dingtek/df703', bin_depth_mm: 0 }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z' }), { code: 'invalid_config' }, S],
  ['readingsFromPayload: a config getter that throws', () => pkg.readingsFromPayload('d', { get codec() { throw new Error('boom'); }, bin_depth_mm: 1 }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z' }), { code: 'invalid_burst' }, S],
  ['readingsFromPayload: a frame identity in upper case', () => pkg.readingsFromPayload('d', { codec: 'dingtek/df703', bin_depth_mm: 1 }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z', frame: '0123456789ABCDEF' }), { code: 'invalid_burst' }, S],
  ['readingsFromPayload: a frame identity that is a number', () => pkg.readingsFromPayload('d', { codec: 'dingtek/df703', bin_depth_mm: 1 }, 3, new Uint8Array(17), { received_at: '2026-07-16T09:00:00Z', frame: 81985529216486895 }), { code: 'invalid_burst' }, S],
  ['readingsFromPayload: a received_at that is not RFC 3339', () => pkg.readingsFromPayload('d', { codec: 'dingtek/df703', bin_depth_mm: 1 }, 3, new Uint8Array(17), { received_at: 'yesterday' }), { code: 'invalid_ts' }, S],
  ['readingsFromPayload: Tekelek without a reporting period', () => pkg.readingsFromPayload('d', { codec: 'tekelek/tek766', bin_depth_mm: 1000 }, 16, Uint8Array.from(Buffer.from('10000000001b180000001b180000001b1800000000', 'hex').subarray(0, 20)), { received_at: '2026-07-16T09:00:00Z' }), { code: 'missing_reporting_period' }, S],
  ['parseUplink: a format that is a number, not a name', () => pkg.parseUplink(5, '{}'), { code: 'unknown_format' }, S],
  ['parseUplink: a format that is an object whose toString throws', () => pkg.parseUplink({ toString() { throw new Error('boom'); } }, '{}'), { code: 'unknown_format' }, S],
  ['auditLine: an event that is a number', () => auditLine(5, { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0, evicted_before_ttl: 0 }, NOW), { code: 'invalid_burst' }, S],
  // Bytes from another realm (node:vm, an iframe, what Jest hands a test): before,
  // refused as "must be a Uint8Array" (instanceof fails across realms).
  ['decodePayload: a Uint8Array of another realm', () => pkg.decodePayload('milesight-iot/em500-udl', 85, vm.runInNewContext('Uint8Array.of(0x20, 0xCE, 0x9E, 0x74, 0x46, 0x63, 0xD2, 0x04)')),
    { result: (v) => assert.deepEqual(v.samples.map((x) => x.distance_mm), [1234]) }, S],
  ['parseUplink: a body of another realm', () => pkg.parseUplink('readings', vm.runInNewContext('Uint8Array.of(0x5b, 0x5d)')), { result: (v) => assert.equal(JSON.parse(v).received, 0) }, S],
  ['processBurstJson: bytes of another realm', (d) => d.processBurstJson(vm.runInNewContext('Uint8Array.from(bytes)', { bytes: [...Buffer.from(JSON.stringify([HELD[0]]))] }), NOW),
    { result: (o) => assert.equal(JSON.parse(o).duplicates_suppressed, 1) }, (d) => assert.deepEqual(HELD.map((x) => d.contains(x, NOW)), [true, true])],
  ['Deduplicator.restore: a snapshot of another realm', () => Deduplicator.restore(vm.runInNewContext('Uint8Array.from(bytes)', { bytes: [...base] })),
    { result: (d) => assert.equal(d.contains(HELD[0], NOW), true) }, S],
  ['SeqWindow.fromBytes: bytes of another realm', () => pkg.SeqWindow.fromBytes(vm.runInNewContext('Uint8Array.from(bytes)', { bytes: [...(() => { const w = new pkg.SeqWindow(); w.observe(41, NOW); return w.toBytes(); })()] })),
    { result: (w) => assert.equal(w.highest, 41) }, S],
  ['Deduplicator.fromKeys: admission times in a Float64Array of another realm', () => Deduplicator.fromKeys(HELD_KEYS[0], vm.runInNewContext(`Float64Array.of(${NOW})`)),
    { result: (d) => assert.equal(d.contains(HELD[0], NOW), true) }, S],
  ['decodePayload: an Int8Array of another realm is no Uint8Array', () => pkg.decodePayload('milesight-iot/em500-udl', 85, vm.runInNewContext('new Int8Array(8)')), { code: 'invalid_burst' }, S],
  ['decodePayload: an object that claims the Uint8Array tag is none', () => pkg.decodePayload('milesight-iot/em500-udl', 85, { [Symbol.toStringTag]: 'Uint8Array', length: 0 }), { code: 'invalid_burst' }, S],
  ['historyRequest: NaN, -1, 1.5, 2^32, a BigInt and a string as a bound', () => ['NaN', -1, 1.5, 2 ** 32, 5n, '5'].map((b) => { try { pkg.historyRequest('milesight-iot/em500-udl', 0, b === 'NaN' ? NaN : b); } catch (e) { return e.code; } }),
    { result: (codes) => assert.deepEqual(codes, Array(6).fill('invalid_burst')) }, S],
  ['historyRequest: -0 is 0; a codec that is no string; an unknown one; a sensor that answers none', () => [
    [...pkg.historyRequest('milesight-iot/em500-udl', -0, 0)].join(','),
    (() => { try { pkg.historyRequest({ toString: () => 'milesight-iot/em500-udl' }, 0, 1); } catch (e) { return e.code; } })(),
    (() => { try { pkg.historyRequest('acme/bin', 0, 1); } catch (e) { return e.code; } })(),
    pkg.historyRequest('dingtek/df703', 0, 1),
  ], { result: (v) => assert.deepEqual(v, ['253,108,0,0,0,0,0,0,0,0', 'invalid_burst', 'unknown_codec', undefined]) }, S],
  ['readObject: a body that is no Uint8Array, members that are no array of names', () => [() => pkg.readObject('{}', []), () => pkg.readObject(new Uint8Array(2), 'key')].map((f) => { try { f(); } catch (e) { return e.code; } }),
    { result: (codes) => assert.deepEqual(codes, ['invalid_burst', 'invalid_burst']) }, S],
  ['parseUplink: a Proxy of bytes whose get trap throws', () => pkg.parseUplink('readings', new Proxy(new Uint8Array(2), { get() { throw new Error('trap'); } })), { code: 'invalid_burst' }, S],
  ['restore: a Proxy of bytes whose get trap throws', () => Deduplicator.restore(new Proxy(base, { get() { throw new Error('trap'); } })), { code: 'invalid_burst' }, S],
  ['fromKeys: admission times as a Proxy whose get trap throws', () => Deduplicator.fromKeys(HELD_KEYS[0], new Proxy([NOW], { get() { throw new Error('trap'); } })), { code: 'invalid_burst' }, S],
  ['fromKeys: a Float64Array Proxy whose get trap throws', () => Deduplicator.fromKeys(HELD_KEYS[0], new Proxy(Float64Array.of(NOW), { get() { throw new Error('trap'); } })), { code: 'invalid_burst' }, S],
  // decodePayload reads its arguments without running caller code it cannot catch:
  // a coded error (invalid_burst for an argument of the wrong kind), never a bare
  // TypeError, and never the value's Rust debug text or stack in the message.
  ['decodePayload: a trapless Proxy of bytes', () => pkg.decodePayload('milesight-iot/em500-udl', 85, new Proxy(Uint8Array.of(1, 0x75, 90), {})), { code: 'invalid_burst' }, S],
  ['decodePayload: a Proxy of bytes whose get trap throws', () => pkg.decodePayload('milesight-iot/em500-udl', 85, new Proxy(Uint8Array.of(1, 0x75, 90), { get() { throw new Error('trap'); } })), { code: 'invalid_burst' }, S],
  ['decodePayload: bytes of a detached buffer', () => { const buf = new ArrayBuffer(3); const view = new Uint8Array(buf); structuredClone(buf, { transfer: [buf] }); return pkg.decodePayload('milesight-iot/em500-udl', 85, view); }, { code: 'invalid_burst' }, S],
  ['decodePayload: a codec Proxy whose traps throw', () => pkg.decodePayload(new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); } }), 85, Uint8Array.of(1, 0x75, 90)), { code: 'invalid_burst' }, S],
  ['decodePayload: a codec that is not a string says what it is', () => { try { pkg.decodePayload(new Error('secret stack'), 85, Uint8Array.of(1, 0x75, 90)); } catch (e) { return [e.code, e.message]; } },
    { result: ([code, m]) => { assert.equal(code, 'invalid_burst'); assert.match(m, /codec must be a string/); assert.doesNotMatch(m, /JsValue|secret stack|at file:/); } }, S],
  ['decodePayload: an unknown codec id of 1 MB is not echoed whole', () => { try { pkg.decodePayload('x'.repeat(1_000_000), 85, Uint8Array.of(1)); } catch (e) { return [e.code, e.message.length]; } },
    { result: ([code, n]) => { assert.equal(code, 'unknown_codec'); assert.ok(n < 200, `${n} characters`); } }, S],
  ['auditLine: a counts getter that throws', () => auditLine('burst_deduplicated', { get received() { throw new Error('boom'); } }, NOW), { code: 'invalid_burst' }, S],

  // One seq range everywhere: ±(2^53−1).
  ['processBurst: seq -(2n**63n) beside a valid reading', (d) => d.processBurst([r('bin-s1', 5), r('bin-s1', -(2n ** 63n))], NOW),
    { result: (o) => assert.deepEqual([o.unique.map((u) => u.index), o.rejected.map((x) => [x.index, x.code])], [[0], [[1, 'invalid_seq']]]) },
    (d) => assert.equal(d.contains(r('bin-s1', 5), NOW), true)],
  ['processBurst: seq 2n**63n - 1n', (d) => d.processBurst([r('bin-s2', 2n ** 63n - 1n)], NOW), { result: rejectedAs('invalid_seq') }, S],
  ['processBurst: seq 2n**64n - 1n', (d) => d.processBurst([r('bin-s2', 2n ** 64n - 1n)], NOW), { result: rejectedAs('invalid_seq') }, S],
  ['processBurst: seq 2n**53n', (d) => d.processBurst([r('bin-s2', 2n ** 53n)], NOW), { result: rejectedAs('invalid_seq') }, S],
  ['processBurst: seq -(2n**53n)', (d) => d.processBurst([r('bin-s2', -(2n ** 53n))], NOW), { result: rejectedAs('invalid_seq') }, S],
  ['processBurst: seq 2**53 (number)', (d) => d.processBurst([r('bin-s2', 2 ** 53)], NOW), { result: rejectedAs('invalid_seq') }, S],
  ['processBurst: seq 2n**53n - 1n is the largest', (d) => d.processBurst([r('bin-s3', 2n ** 53n - 1n)], NOW),
    { result: (o) => assert.equal(o.unique[0].seq, MAX_SAFE) }, (d) => assert.equal(d.contains(r('bin-s3', MAX_SAFE), NOW), true)],
  ['processBurst: seq -(2**53 - 1) is the smallest', (d) => d.processBurst([r('bin-s3', -MAX_SAFE)], NOW),
    { result: (o) => assert.equal(o.unique[0].seq, -MAX_SAFE) }, (d) => assert.equal(d.contains(r('bin-s3', -MAX_SAFE), NOW), true)],
  ['processBurst: seq "41"', (d) => d.processBurst([r('bin-s2', '41')], NOW), { result: rejectedAs('invalid_seq') }, S],
  ['processBurst: seq 41.5, NaN, Infinity', (d) => d.processBurst([r('b', 41.5), r('b', NaN), r('b', Infinity)], NOW),
    { result: (o) => assert.deepEqual(o.rejected.map((x) => x.code), ['invalid_seq', 'invalid_seq', 'invalid_seq']) }, S],
  ['processBurst: seq 2n**64n (beyond 64 bits) beside a held key', (d) => d.processBurst([HELD[0], r('bin-s2', 2n ** 64n), { ...r('bin-s2', 2), rssi: -(2n ** 70n) }], NOW),
    { result: (o) => assert.deepEqual([o.duplicates, o.rejected.map((x) => [x.index, x.code]), o.unique.map((u) => u.index)], [[0], [[1, 'invalid_seq']], [2]]) },
    (d) => assert.equal(d.contains(r('bin-s2', 2), NOW), true)],
  ['processBurst {readings}: seq -(2n**64n)', (d) => d.processBurst({ readings: [r('bin-s2', -(2n ** 64n))] }, NOW), { result: rejectedAs('invalid_seq') }, S],
  ['idempotencyKey: seq 2n**64n', () => idempotencyKey(r('bin-k', 2n ** 64n)), { code: 'invalid_seq' }, S],
  ['contains: seq 2n**64n', (d) => d.contains(r('bin-k', 2n ** 64n), NOW), { code: 'invalid_seq' }, S],
  ['processBurstJson: seq -9223372036854775808', (d) => JSON.parse(d.processBurstJson('[{"device_id":"bin-j","seq":-9223372036854775808,"ts":"2026-07-16T09:00:00Z","fill_pct":5}]', NOW)),
    { result: rejectedAs('invalid_seq') }, S],
  ['processBurstJson: seq 9223372036854775807', (d) => JSON.parse(d.processBurstJson('[{"device_id":"bin-j","seq":9223372036854775807,"ts":"2026-07-16T09:00:00Z","fill_pct":5}]', NOW)),
    { result: rejectedAs('invalid_seq') }, S],
  ['processBurstJson: seq 9007199254740992', (d) => JSON.parse(d.processBurstJson('[{"device_id":"bin-j","seq":9007199254740992,"ts":"2026-07-16T09:00:00Z","fill_pct":5}]', NOW)),
    { result: rejectedAs('invalid_seq') }, S],
  ['idempotencyKey: seq -(2n**63n)', () => idempotencyKey(r('bin-k', -(2n ** 63n))), { code: 'invalid_seq' }, S],
  ['idempotencyKey: seq 2**53', () => idempotencyKey(r('bin-k', 2 ** 53)), { code: 'invalid_seq' }, S],
  ['admitKeys: key with seq -9223372036854775808', (d) => d.admitKeys('bin-k:-9223372036854775808:0123456789abcdef', NOW), { code: 'invalid_key' }, S],

  // Device ids.
  ['processBurst: device_id "."', (d) => d.processBurst([r('.')], NOW), { result: rejectedAs('invalid_device_id', /must not be "\." or "\.\."/) }, S],
  ['processBurst: device_id ".."', (d) => d.processBurst([r('..')], NOW), { result: rejectedAs('invalid_device_id', /must not be "\." or "\.\."/) }, S],
  ['checkDeviceId: ".."', () => checkDeviceId('..'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: "..." is an ordinary id', () => checkDeviceId('...'), { result: (v) => assert.equal(v, '...') }, S],
  ['checkDeviceId: 129 bytes', () => checkDeviceId('a'.repeat(129)), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: 128 bytes', () => checkDeviceId('a'.repeat(128)), { result: (v) => assert.equal(v, 'a'.repeat(128)) }, S],
  ['checkDeviceId: a lower-case DevEUI is the upper-case one', () => checkDeviceId('70b3d52dd600035a'), { result: (v) => assert.equal(v, '70B3D52DD600035A') }, S],
  ['checkDeviceId: 15 hex digits are kept as given', () => checkDeviceId('70b3d52dd600035'), { result: (v) => assert.equal(v, '70b3d52dd600035') }, S],
  ['checkDeviceId: 10 kB', () => checkDeviceId('x'.repeat(10_000)), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: NUL inside', () => checkDeviceId('a\0b'), { code: 'invalid_device_id' }, S],
  // Ids that print the same are one id or refused (src/dedupe/reading.rs): in Wasm the
  // normal form is the JS engine's String.prototype.normalize, natively the crate's.
  ...['\u034F', '\uFE0F', '\u3164', '\u115F', '\u17B4', '\u180B', '\u{E0100}'].map((c) => [`checkDeviceId: Default_Ignorable U+${c.codePointAt(0).toString(16).toUpperCase()}`, () => checkDeviceId(`bin${c}1`), { code: 'invalid_device_id' }, S]),
  ['checkDeviceId: "café" in NFD', () => checkDeviceId('cafe\u0301'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: NFD is refused with the rule named', () => { try { checkDeviceId('cafe\u0301'); } catch (e) { return e.message; } }, { result: (m) => assert.match(m, /^device_id must be in Unicode normalization form C/) }, S],
  ['checkDeviceId: "café" in NFC', () => checkDeviceId('caf\u00e9'), { result: (v) => assert.equal(v, 'café') }, S],
  ['checkDeviceId: marks out of canonical order', () => checkDeviceId('q\u0307\u0323'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: marks in canonical order', () => checkDeviceId('q\u0323\u0307'), { result: (v) => assert.equal(v, 'q\u0323\u0307') }, S],
  ['checkDeviceId: the Angstrom sign (NFC is U+00C5)', () => checkDeviceId('\u212B'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: a leading space', () => checkDeviceId(' bin1'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: a trailing no-break space', () => checkDeviceId('bin1\u00a0'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: a space inside is an ordinary id', () => checkDeviceId('bin 1'), { result: (v) => assert.equal(v, 'bin 1') }, S],
  ['checkDeviceId: empty', () => checkDeviceId(''), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: a number', () => checkDeviceId(5), { code: 'invalid_device_id' }, S],
  ['admitKeys: key of device ".."', (d) => d.admitKeys('..:1:0123456789abcdef', NOW), { code: 'invalid_key' }, S],
  ['processBurst: 129-byte device_id', (d) => d.processBurst([r('ü'.repeat(64) + 'x')], NOW), { result: rejectedAs('invalid_device_id') }, S],

  // Invisible or formatting characters (Unicode Cf, U+2028/U+2029): an id that
  // prints as another, or reorders the text around it, is refused.
  ['checkDeviceId: "bin\\u200B1" (zero-width space)', () => { try { checkDeviceId('bin\u200B1'); } catch (e) { return [e.code, e.message]; } },
    { result: (v) => assert.deepEqual(v, ['invalid_device_id', 'device_id must not contain invisible or formatting characters (U+200B)']) }, S],
  ['checkDeviceId: "bin\\u202E1" (right-to-left override)', () => checkDeviceId('bin\u202E1'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: "\\uFEFFbin" (BOM)', () => checkDeviceId('\uFEFFbin'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: "bin\\u{E0041}" (tag)', () => checkDeviceId('bin\u{E0041}'), { code: 'invalid_device_id' }, S],
  ['checkDeviceId: "bin\\u2028" (line separator)', () => checkDeviceId('bin\u2028'), { code: 'invalid_device_id' }, S],
  ['processBurst: "bin-held\\u00AD" beside "bin-held" (soft hyphen)', (d) => d.processBurst([{ ...HELD[0], device_id: 'bin-held\u00AD' }], NOW), { result: rejectedAs('invalid_device_id', /invisible or formatting characters \(U\+00AD\)/) }, S],
  ['processBurstJson: "bin\\u2066x" escaped', (d) => JSON.parse(d.processBurstJson('[{"device_id":"bin\\u2066x","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":5}]', NOW)), { result: rejectedAs('invalid_device_id') }, S],
  ['admitKeys: key of "bin\\u200D1"', (d) => d.admitKeys('bin\u200D1:1:0123456789abcdef', NOW), { code: 'invalid_key' }, S],
  ['checkDeviceId: "bin\\u00AE" (a visible sign) is an id', () => checkDeviceId('bin\u00AE'), { result: (v) => assert.equal(v, 'bin\u00AE') }, S],

  // A seq is whole by its JSON text, not by its rounded f64.
  ...['0.99999999999999999', '4503599627370496.5', '9007199254740990.5', '1e-400'].map((seq) =>
    [`processBurstJson: seq ${seq}`, (d) => JSON.parse(d.processBurstJson(`[{"device_id":"bin-held","seq":${seq},"ts":"2026-07-16T09:00:00Z","fill_pct":50}]`, NOW)),
      { result: rejectedAs('invalid_seq', /^seq must be a whole number$/) }, S]),
  ...[['1.0', 1], ['10E-1', 1], ['2e0', 2], ['0.2e1', 2]].map(([seq, n]) =>
    [`processBurstJson: seq ${seq} is whole (${n})`, (d) => JSON.parse(d.processBurstJson(`[{"device_id":"bin-held","seq":${seq},"ts":"2026-07-16T09:00:00Z","fill_pct":50}]`, NOW)),
      { result: (o) => assert.deepEqual([o.duplicates, o.rejected], [[0], []]) }, (d) => assert.deepEqual(HELD.map((x) => d.contains(x, NOW)), [true, true])]),

  // Error messages name what was given.
  ['confirm(1n): says a BigInt is no ticket', (d) => { try { d.confirm(1n); } catch (e) { return [e.code, e.message]; } },
    { result: (v) => assert.deepEqual(v, ['unknown_ticket', 'a ticket is a whole number 1 ..= 4294967295, got a BigInt']) }, S],
  ['release(2**32 + 1): says what was given', (d) => { try { d.release(2 ** 32 + 1); } catch (e) { return e.message; } },
    { result: (m) => assert.equal(m, 'a ticket is a whole number 1 ..= 4294967295, got 4294967297') }, S],
  ['confirm(2): a ticket never issued', (d) => { try { d.confirm(2); } catch (e) { return e.message; } }, { result: (m) => assert.equal(m, 'ticket 2 is not open') }, S],
  ['new Deduplicator({ ttlMs: "1000" }): names the option', () => { try { new Deduplicator({ ttlMs: '1000' }); } catch (e) { return [e.code, e.message]; } },
    { result: (v) => assert.deepEqual(v, ['invalid_config', 'invalid configuration: ttlMs must be a number (a whole number; see limits()), got a string']) }, S],
  ['restore(bytes, 60000, 0): says what the second argument is', () => { try { Deduplicator.restore(base, 60000, 0); } catch (e) { return [e.code, e.message]; } },
    { result: (v) => assert.deepEqual(v, ['invalid_config', "invalid configuration: restore's second argument (the options) must be an object { ttlMs, maxKeys }, got a number"]) }, S],
  ['readingsFromPayload: a frame identity that is not 16 lower-case hex digits names the member', () => { try { pkg.readingsFromPayload('d', { codec: 'dingtek/df703', bin_depth_mm: 1 }, 3, new Uint8Array(17), { received_at: TS, frame: '0123' }); } catch (e) { return [e.code, e.message]; } },
    { result: ([code, m]) => { assert.equal(code, 'invalid_burst'); assert.match(m, /member "frame" must be 16 lower-case hex digits \(a plan's raw\.frame\), got "0123"$/); } }, S],
  ['auditLine: counts that do not reconcile say so, not "body is not a burst"', () => { try { auditLine('burst_deduplicated', { received: 1, unique: 0, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0, evicted_before_ttl: 0 }, NOW); } catch (e) { return [e.code, e.message]; } },
    { result: ([code, m]) => { assert.equal(code, 'invalid_burst'); assert.doesNotMatch(m, /body is not a burst/); assert.match(m, /^audit counts/); } }, S],
  ['auditLine: counts that are not an object', () => { try { auditLine('burst_deduplicated', 5, NOW); } catch (e) { return [e.code, e.message]; } },
    { result: ([code, m]) => { assert.equal(code, 'invalid_burst'); assert.match(m, /^audit counts/); } }, S],
  ['auditLine: an unknown event', () => { try { auditLine('burst_lost', {}, NOW); } catch (e) { return [e.code, e.message]; } },
    { result: ([code, m]) => { assert.equal(code, 'invalid_burst'); assert.match(m, /^unknown audit event "burst_lost"; expected burst_deduplicated or burst_not_stored$/); } }, S],

  // nowMs must be a JS number within 0 ..= 8.64e15.
  ['processBurst: nowMs "123"', (d) => d.processBurst([r('bin-t')], '123'), { code: 'invalid_time' }, S],
  ['processBurst: nowMs null', (d) => d.processBurst([r('bin-t')], null), { code: 'invalid_time' }, S],
  ['processBurst: nowMs undefined', (d) => d.processBurst([r('bin-t')], undefined), { code: 'invalid_time' }, S],
  ['processBurst: nowMs NaN', (d) => d.processBurst([r('bin-t')], NaN), { code: 'invalid_time' }, S],
  ['processBurst: nowMs Infinity', (d) => d.processBurst([r('bin-t')], Infinity), { code: 'invalid_time' }, S],
  ['processBurst: nowMs -1', (d) => d.processBurst([r('bin-t')], -1), { code: 'invalid_time' }, S],
  ['processBurst: nowMs 8.64e15 + 1', (d) => d.processBurst([r('bin-t')], 8.64e15 + 1), { code: 'invalid_time' }, S],
  ['processBurst: nowMs BigInt', (d) => d.processBurst([r('bin-t')], BigInt(NOW)), { code: 'invalid_time' }, S],
  ['processBurst: nowMs true', (d) => d.processBurst([r('bin-t')], true), { code: 'invalid_time' }, S],
  ['processBurst: nowMs -0 is a time (the clock never runs back)', (d) => d.processBurst(HELD, -0), { result: (o) => assert.deepEqual(o.duplicates, [0, 1]) },
    (d) => assert.deepEqual(HELD.map((x) => d.contains(x, NOW)), [true, true])],
  ['processBurstJson: nowMs "123"', (d) => d.processBurstJson(JSON.stringify([r('bin-t')]), '123'), { code: 'invalid_time' }, S],
  ['admitKeys: nowMs "123"', (d) => d.admitKeys('bin-t:1:0123456789abcdef', '123'), { code: 'invalid_time' }, S],
  ['contains: nowMs "123"', (d) => d.contains(HELD[0], '123'), { code: 'invalid_time' }, S],
  ['isoTime: "123"', () => isoTime('123'), { code: 'invalid_time' }, S],
  ['fromKeys: an admission time "123"', () => Deduplicator.fromKeys(HELD_KEYS[0], ['123']), { code: 'invalid_time' }, S],
  ['fromKeys: an admission time null', () => Deduplicator.fromKeys(HELD_KEYS[0], [null]), { code: 'invalid_time' }, S],
  ['fromKeys: times as a string', () => Deduplicator.fromKeys(HELD_KEYS[0], String(NOW)), { code: 'invalid_key' }, S],
  ['fromKeys: times as numbers and as a Float64Array', () => [[NOW], Float64Array.of(NOW)].map((t) => Deduplicator.fromKeys(HELD_KEYS[0], t).contains(HELD[0], NOW)),
    { result: (v) => assert.deepEqual(v, [true, true]) }, S],
  ['auditLine: nowMs "123"', () => auditLine('burst_deduplicated', { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0, evicted_before_ttl: 0 }, '123'), { code: 'invalid_time' }, S],

  // provisional: a boolean or absent, never JS truthiness.
  ['processBurst: provisional "false"', (d) => d.processBurst([r('bin-p')], NOW, 'false'), { code: 'invalid_burst' }, S],
  ['processBurstJson: provisional 1', (d) => d.processBurstJson(JSON.stringify([r('bin-p')]), NOW, 1), { code: 'invalid_burst' }, S],
  ['processBurst: provisional null is absent', (d) => d.processBurst([HELD[0]], NOW, null), { result: (o) => assert.deepEqual([o.duplicates, o.ticket], [[0], null]) },
    (d) => assert.equal(d.contains(HELD[0], NOW), true)],

  // Tickets: whole numbers within the ticket range, else unknown_ticket.
  ['confirm(2**32 + 1) does not confirm ticket 1', (d) => d.confirm(2 ** 32 + 1), { code: 'unknown_ticket' }, S],
  ['release(2**32 + 1) does not release ticket 1', (d) => d.release(2 ** 32 + 1), { code: 'unknown_ticket' }, S],
  ['confirm(2**32)', (d) => d.confirm(2 ** 32), { code: 'unknown_ticket' }, S],
  ['confirm(0)', (d) => d.confirm(0), { code: 'unknown_ticket' }, S],
  ['confirm(-1)', (d) => d.confirm(-1), { code: 'unknown_ticket' }, S],
  ['confirm(1.5)', (d) => d.confirm(1.5), { code: 'unknown_ticket' }, S],
  ['confirm(NaN)', (d) => d.confirm(NaN), { code: 'unknown_ticket' }, S],
  ['confirm("1")', (d) => d.confirm('1'), { code: 'unknown_ticket' }, S],
  ['release(1n)', (d) => d.release(1n), { code: 'unknown_ticket' }, S],
  ['confirm(2): never issued', (d) => d.confirm(2), { code: 'unknown_ticket' }, S],

  // admitKeys' refused: a whole number 0 ..= 2^32−1.
  ['admitKeys: refused -1', (d) => d.admitKeys('bin-r:1:0123456789abcdef', NOW, -1), { code: 'invalid_burst' }, S],
  ['admitKeys: refused 2**32', (d) => d.admitKeys('bin-r:1:0123456789abcdef', NOW, 2 ** 32), { code: 'invalid_burst' }, S],
  ['admitKeys: refused NaN', (d) => d.admitKeys('bin-r:1:0123456789abcdef', NOW, NaN), { code: 'invalid_burst' }, S],
  ['admitKeys: refused 1.5', (d) => d.admitKeys('bin-r:1:0123456789abcdef', NOW, 1.5), { code: 'invalid_burst' }, S],
  ['admitKeys: refused "1"', (d) => d.admitKeys('bin-r:1:0123456789abcdef', NOW, '1'), { code: 'invalid_burst' }, S],
  ['admitKeys: refused 2**32 − 1 and no key', (d) => d.admitKeys('', NOW, 2 ** 32 - 1),
    { result: (o) => assert.deepEqual([o.counts.received, o.counts.rejected], [2 ** 32 - 1, 2 ** 32 - 1]) }, S],
  ['admitKeys: keys of a held key, refused 3', (d) => d.admitKeys(HELD_KEYS.join('\n'), NOW, 3),
    { result: (o) => assert.deepEqual([[...o.verdicts], o.counts.received], [[2, 2], 5]) },
    (d) => assert.equal(d.stats().duplicates >= 2, true)],

  // Snapshots: every field checked, or invalid_snapshot.
  ['restore: truncated by one byte', () => Deduplicator.restore(base.subarray(0, base.length - 1)), { code: 'invalid_snapshot' }, S],
  ['restore: header only', () => Deduplicator.restore(base.subarray(0, 128)), { code: 'invalid_snapshot' }, S],
  ['restore: one bit flipped in an entry', () => { const b = base.slice(); b[ENTRY + 3] ^= 1; return Deduplicator.restore(b); }, { code: 'invalid_snapshot' }, S],
  ['restore: entry time near i64::MIN (checksum recomputed)', () => Deduplicator.restore(craft(setI64(ENTRY + 16, -(2n ** 63n) + 1n))), { code: 'invalid_snapshot' }, S],
  ['restore: entry time -1 (checksum recomputed)', () => Deduplicator.restore(craft(setI64(ENTRY + 16, -1n))), { code: 'invalid_snapshot' }, S],
  ['restore: entry time after the clock', () => Deduplicator.restore(craft(setI64(ENTRY + 16, BigInt(NOW + 1)))), { code: 'invalid_snapshot' }, S],
  ['restore: clock near i64::MAX', () => Deduplicator.restore(craft(setI64(AT.clock, 2n ** 63n - 1n))), { code: 'invalid_snapshot' }, S],
  ['restore: max_keys 2**32 + 5', () => Deduplicator.restore(craft(setU64(AT.maxKeys, 2n ** 32n + 5n))), { code: 'invalid_snapshot' }, S],
  ['restore: ttl 0', () => Deduplicator.restore(craft(setU64(AT.ttl, 0n))), { code: 'invalid_snapshot' }, S],
  ['restore: reserved field set', () => Deduplicator.restore(craft(setU64(AT.reserved, 1n))), { code: 'invalid_snapshot' }, S],
  ['restore: unknown flag bit', () => Deduplicator.restore(craft((v) => v.setUint16(6, 3, true))), { code: 'invalid_snapshot' }, S],
  ['restore: counters 2^60', () => Deduplicator.restore(craft((v) => { setU64(AT.admitted, 2n ** 60n)(v); setU64(AT.expired, 2n ** 60n - 1n)(v); })), { code: 'invalid_snapshot' }, S],
  ['restore: duplicates counter 2^64 − 1', () => Deduplicator.restore(craft(setU64(AT.duplicates, 2n ** 64n - 1n))), { code: 'invalid_snapshot' }, S],
  ['restore: counters that do not add up', () => Deduplicator.restore(craft(setU64(AT.admitted, 7n))), { code: 'invalid_snapshot' }, S],
  ['restore: a string, not bytes', () => Deduplicator.restore('RDDS'), { code: 'invalid_snapshot' }, S],
  ['restore: counters at 2^53 − 1, then stats() and a burst work', () => {
    const big = BigInt(MAX_SAFE);
    const d = Deduplicator.restore(craft((v) => { setU64(AT.admitted, big)(v); setU64(AT.expired, big - 1n)(v); setU64(AT.duplicates, big)(v); }));
    d.processBurst([r('bin-after', 1)], NOW + 1);
    d.processBurst([r('bin-after', 1)], NOW + 2);
    return [d.stats(), d.contains(HELD[0], NOW + 3)];
  }, { result: ([s, held]) => assert.deepEqual([s.admitted, s.duplicates, s.keys, held], [MAX_SAFE, MAX_SAFE, 2, true]) }, S],
  ['restore: the untouched base snapshot', () => Deduplicator.restore(base).contains(HELD[0], NOW), { result: (v) => assert.equal(v, true) }, S],
];

test(`hostile table: ${rows.length} calls against the Wasm API, each leaving the deduplicator as expected`, () => {
  assert.ok(rows.length >= 35);
  const failures = [];
  for (const [name, call, expected, after] of rows) {
    const before = state(dedup);
    try {
      if (expected.code) {
        const got = codeOf(() => call(dedup));
        assert.equal(got, expected.code, `threw ${got ?? 'nothing'}, expected ${expected.code}`);
      } else {
        expected.result(call(dedup));
      }
      if (after === S) {
        assert.deepEqual(state(dedup), before, 'the deduplicator is unchanged');
      } else {
        after(dedup);
      }
      assert.equal(dedup.stats().pending, JSON.parse(before.stats).pending, 'no pending key confirmed or released');
    } catch (e) {
      failures.push(`${name}: ${e.message.split('\n')[0]}`);
    }
  }
  assert.deepEqual(failures, [], failures.join('\n'));
});

test('after the table the same instance decides a valid burst correctly', () => {
  const fresh = [r('bin-after', 1, 10), r('bin-after', 2, 20), r('bin-after', 1, 10)];
  const out = dedup.processBurst([...fresh, HELD[0]], NOW + 1);
  assert.deepEqual([out.unique.map((u) => u.index), out.duplicates, out.rejected], [[0, 1], [2, 3], []]);
  assert.equal(out.unique[0].key, idempotencyKey(fresh[0]));
  assert.equal(dedup.confirm(ticket), 1, 'ticket 1 confirms its one key');
  assert.equal(dedup.processBurst([PENDING], NOW + 2).duplicates_suppressed, 1);
  const again = Deduplicator.restore(dedup.snapshot());
  assert.deepEqual([...again.admitKeys(idempotencyKey(fresh[1]), NOW + 3).verdicts], [2]);
  assert.equal(again.processBurst([fresh[0]], NOW + 60_001).unique.length, 1, 'expired after the TTL');
});

test('an instance whose call met a JS exception still works, and free() frees it', () => {
  const d = new Deduplicator();
  assert.throws(() => d.processBurst([r('g', 1), { get device_id() { throw new Error('boom'); } }], NOW), { code: 'invalid_burst' });
  assert.throws(() => d.processBurst(new Proxy([], { get() { throw new Error('trap'); } }), NOW), { code: 'invalid_burst' });
  assert.equal(d.stats().keys, 0, 'nothing admitted');
  assert.equal(d.processBurst([r('g', 1)], NOW).unique.length, 1);
  d.free();
});

// Before, free() from inside a getter the instance's own call was reading threw
// "attempted to take ownership of Rust value while it was borrowed" through the call,
// left the instance answering an uncoded "null pointer passed to rust" and its memory
// never freed; a call on an instance already freed threw the same uncoded error.
// (A SeqWindow's calls run no code of the caller's: its arguments are numbers and bytes.)
test('free() during the instance\'s own call is refused with a code, and the instance goes on working', () => {
  const d = new Deduplicator();
  const refused = [];
  const hook = (f) => {
    try {
      f();
    } catch (e) {
      refused.push(e);
    }
  };
  const burst = [{ ...r('g', 1), get fill_pct() { hook(() => d.free()); hook(() => d.stats()); return 10; } }];
  assert.equal(d.processBurst(burst, NOW).unique.length, 1, 'the call went through');
  assert.deepEqual(refused.map((e) => e.code), ['instance_busy', 'instance_busy']);
  assert.match(refused[0].message, /^Deduplicator\.free\(\) during a call of the same instance/);
  assert.match(refused[1].message, /^Deduplicator\.stats\(\) during a call of the same instance/);
  // The instance still works; free() afterwards frees it.
  assert.equal(d.stats().keys, 1);
  assert.equal(d.processBurst([r('g', 1, 10)], NOW).duplicates_suppressed, 1);
  d.free();
  assert.throws(() => d.free(), { code: 'instance_freed' });
});

test('a call on an instance that was freed throws instance_freed, naming the call', () => {
  const d = new Deduplicator();
  d.free();
  for (const [name, call] of [['stats', () => d.stats()], ['processBurst', () => d.processBurst([], NOW)], ['snapshot', () => d.snapshot()]]) {
    assert.throws(call, (e) => e.code === 'instance_freed' && e.message.startsWith(`Deduplicator.${name}: this Deduplicator was freed`), name);
  }
  const w = new pkg.SeqWindow();
  w.free();
  assert.throws(() => w.highest, { code: 'instance_freed' });
  assert.throws(() => w.observe(1, NOW), { code: 'instance_freed' });
  // Static calls need no instance.
  assert.equal(Deduplicator.restore(new Deduplicator().snapshot()).stats().keys, 0);
});

// Property over the Wasm API: seeded random calls of every method that changes the
// deduplicator, half of their arguments hostile; a call that throws leaves snapshot
// bytes and stats exactly as they were, one that returns reconciles its counts.
test('a Wasm call that throws changes nothing (seeded random calls)', () => {
  let seed = 20261130;
  const rnd = (n) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  const pick = (xs) => xs[rnd(xs.length)];
  const d = new Deduplicator({ ttlMs: 30_000, maxKeys: 40 });
  let now = NOW;
  const ids = ['bin-1', 'bin-2', 'dev\uD800', 'dev\uDBFF', '.', '..', '', 'x'.repeat(129)];
  const seqs = [1, 2, 3, -(2n ** 63n), 2n ** 64n, 2 ** 53, MAX_SAFE, '4', 1.5, NaN];
  const reading = () => r(pick(ids), pick(seqs), pick([10, 50, -1, '5']), pick([TS, '2026-07-16T09:00:01Z', 'x']));
  const times = () => (rnd(8) ? now : pick(['123', null, NaN, -1, Infinity, 8.64e15 + 1, BigInt(NOW)]));
  const calls = [
    () => d.processBurst(Array.from({ length: rnd(5) }, reading), times(), rnd(2) === 0),
    () => JSON.parse(d.processBurstJson(JSON.stringify(Array.from({ length: rnd(5) }, reading), (k, v) => (typeof v === 'bigint' ? Number(v) : v)), times())),
    () => d.admitKeys(Array.from({ length: rnd(4) }, () => `${pick(ids)}:${pick(['1', '2', '-9223372036854775808'])}:0123456789abcdef`).join('\n'),
      times(), pick([undefined, 0, 1, -1, 2 ** 32, 2 ** 32 - 1, 1.5, '1'])),
    () => d.confirm(pick([1, 2, 3, 0, -1, 2 ** 32 + 1, 1.5, '1'])),
    () => d.release(pick([1, 2, 3, 0, -1, 2 ** 32 + 2, NaN, 2n])),
  ];
  let [failed, succeeded] = [0, 0];
  for (let step = 0; step < 2000; step++) {
    now += rnd(3000);
    const before = [Buffer.from(d.snapshot()).toString('hex'), JSON.stringify(d.stats())];
    let out;
    try {
      out = pick(calls)();
    } catch (e) {
      failed++;
      assert.ok(e instanceof Error && typeof e.code === 'string', `step ${step}: ${e}`);
      assert.deepEqual([Buffer.from(d.snapshot()).toString('hex'), JSON.stringify(d.stats())], before, `step ${step}: ${e.code} changed the deduplicator`);
      continue;
    }
    succeeded++;
    const p = out?.audit?.payload ?? out?.counts;
    if (p) assert.equal(p.received, p.unique + p.duplicates_suppressed + (p.pending ?? 0) + p.rejected, `step ${step}`);
    for (const u of out?.unique ?? []) assert.ok(Math.abs(u.seq) <= MAX_SAFE && !['.', '..'].includes(u.device_id) && u.device_id.isWellFormed());
  }
  assert.ok(failed > 300 && succeeded > 300, `${failed} failed, ${succeeded} succeeded`);
});

// (A frozen instance cannot be freed: the glue's free() writes to it. The garbage
// collector frees it, as any instance not freed.)
test('a frozen or non-extensible instance works as any other', () => {
  const w = Object.freeze(new pkg.SeqWindow());
  assert.equal(w.observe(1, NOW).kind, 'new');
  assert.equal(w.highest, 1);
  const d = Object.preventExtensions(new Deduplicator());
  assert.equal(d.processBurst([r('frozen', 1)], NOW).unique.length, 1);
  d.free();
  assert.throws(() => d.stats(), { code: 'instance_freed' });
});

// Last in this file: it starts the module's Wasm instance over, as the worker does
// after a trap (tests/worker/wasm-reset.test.mjs), which leaves every earlier
// instance stale. Before, free() of a stale instance freed memory of the new
// instance: the next allocation overwrote a live window.
test('an instance left from before the Wasm instance started over: free() frees nothing, a call throws instance_stale', () => {
  const old = new pkg.SeqWindow();
  old.observe(3, NOW);
  pkg.reinstantiate();
  const live = new pkg.SeqWindow();
  live.observe(7, NOW);
  old.free();
  const next = new pkg.SeqWindow();
  next.observe(5000, NOW);
  assert.equal(live.highest, 7, 'the live window kept its state');
  assert.equal(next.highest, 5000);
  assert.throws(() => old.observe(4, NOW), { code: 'instance_freed' });
  const stale = new Deduplicator();
  pkg.reinstantiate();
  assert.throws(() => stale.stats(), (e) => e.code === 'instance_stale' && /^Deduplicator\.stats: this Deduplicator is from before the Wasm instance started over/.test(e.message));
  stale.free();
  assert.equal(new Deduplicator().stats().keys, 0);
});
