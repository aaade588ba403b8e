// Request bodies through the built package (pkg/) as the worker hands them over
// (bytes): a member given twice, numbers out of f64 range, lone surrogate escapes
// and deep nesting, through `parseUplink` (every route) and `processBurstJson`
// (issue 9, contract items 12 and 15). scripts/test.sh builds pkg/ first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { Deduplicator, parseUplink } = pkg;

const NOW = Date.parse('2026-07-16T09:00:11.204Z');
const enc = new TextEncoder();
const fixture = (name) => fs.readFileSync(new URL(`../fixtures/webhooks/with-fill/${name}`, import.meta.url), 'utf8');
const TTS = fixture('tts-v3-uplink.json');
const reading = (extra = '') => `{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5${extra}}`;
const plan = (format, body) => JSON.parse(parseUplink(format, enc.encode(body)));
const bulk = (body) => JSON.parse(new Deduplicator().processBurstJson(enc.encode(body), NOW));
const codes = (rejected) => rejected.map((r) => [r.index, r.code, r.message]);
/** `body` with `from` (present once) replaced by `to`. */
const edit = (body, from, to) => {
  assert.equal(body.split(from).length, 2, from);
  return body.replace(from, to);
};
const throwsJson = (f, message) =>
  assert.throws(f, (e) => e instanceof Error && e.code === 'invalid_json' && message.test(e.message), String(message));

test('a member twice in a native reading rejects that reading; the others are kept', () => {
  const body = `[${reading(',"fill_pct":90')},${reading().replace('41', '42')}]`;
  const p = plan('readings', body);
  assert.deepEqual(codes(p.rejected), [[0, 'invalid_reading', 'member "fill_pct" appears twice']]);
  assert.deepEqual(p.devices[0].readings.map((r) => [r.index, r.seq, r.fill_pct]), [[1, 42, 62.5]]);
  const out = bulk(body);
  assert.deepEqual(codes(out.rejected), [[0, 'invalid_reading', 'member "fill_pct" appears twice']]);
  assert.deepEqual(out.unique.map((u) => u.index), [1]);
});

test('a member twice anywhere else is invalid_json naming it and where', () => {
  const twoArrays = `{"readings":[],"readings":[${reading()}]}`;
  const where = /^body is not valid JSON: member "readings" appears twice \(at \/readings\)$/;
  throwsJson(() => parseUplink('readings', enc.encode(twoArrays)), where);
  throwsJson(() => new Deduplicator().processBurstJson(enc.encode(twoArrays), NOW), where);
  const tts = edit(TTS, '"fill_pct": 62.5', '"fill_pct": 10, "fill_pct": 90');
  throwsJson(() => parseUplink('ttn', enc.encode(tts)), /member "fill_pct" appears twice \(at \/uplink_message\/decoded_payload\/fill_pct\)/);
  const snr = edit(TTS, '"snr": 5,', '"snr": 5, "snr": 5,');
  throwsJson(() => parseUplink('ttn', enc.encode(snr)), /\(at \/uplink_message\/rx_metadata\/0\/snr\)/);
});

test('1e400 in an ignored member is ignored; in a read member it rejects that reading', () => {
  for (const big of ['1e400', '-1e400']) {
    const p = plan('readings', `[${reading(`,"rssi":${big}`)}]`);
    assert.deepEqual(p.rejected, []);
    assert.equal(p.devices[0].readings[0].key, 'bin-A17:41:76c73ee2946cc70e');
    assert.equal(bulk(`[${reading(`,"rssi":${big}`)}]`).unique.length, 1);
    const tts = plan('ttn', edit(TTS, '"snr": 5,', `"snr": ${big},`));
    assert.equal(tts.devices[0].readings[0].key, '0004A30B001C0530:1:d7f366a3cb678f45');
  }
  const p = plan('readings', `[${reading().replace('62.5', '1e400')},${reading().replace('41', '1e400')}]`);
  assert.deepEqual(p.rejected.map((r) => [r.index, r.code]), [[0, 'invalid_fill_pct'], [1, 'invalid_seq']]);
  const fcnt = plan('ttn', edit(TTS, '"f_cnt": 1,', '"f_cnt": -1e400,'));
  assert.deepEqual(fcnt.rejected.map((r) => r.code), ['invalid_seq']);
});

test('seq beyond ±(2^53−1) from JSON is invalid_seq on both paths, -2^63 included', () => {
  for (const seq of ['-9223372036854775808', '9223372036854775807', '9007199254740992', '1e19', '1e400']) {
    const body = `[${reading().replace('41', seq)}]`;
    assert.deepEqual(plan('readings', body).rejected.map((r) => r.code), ['invalid_seq'], seq);
    const out = bulk(body);
    assert.deepEqual([out.unique.length, out.rejected.map((r) => r.code)], [0, ['invalid_seq']], seq);
  }
});

test('a lone surrogate escape is invalid_json saying so, with line and column', () => {
  for (const s of ['\\ud800', '\\udbff x', '\\udc00']) {
    const body = `[\n${reading(`,"note":"${s}"`)}]`;
    const where = /a string holds a lone surrogate \\u[0-9a-f]{4} .* at line 2 column 85$/;
    throwsJson(() => parseUplink('readings', enc.encode(body)), where);
    throwsJson(() => new Deduplicator().processBurstJson(enc.encode(body), NOW), where);
    throwsJson(() => parseUplink('ttn', enc.encode(edit(TTS, '"gkHe"', `"${s}"`))), /lone surrogate/);
  }
});

test('deep nesting is a clean invalid_json, and the instance keeps working', () => {
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  for (const [format, body] of [
    ['readings', `[${reading(`,"x":${deep}`)}]`],
    ['ttn', edit(TTS, '"gkHe"', deep)],
    ['chirpstack', `{"object":${deep}}`],
  ]) {
    throwsJson(() => parseUplink(format, enc.encode(body)), /nested deeper than 128 levels/);
  }
  throwsJson(() => new Deduplicator().processBurstJson(enc.encode(`[${deep}]`), NOW), /nested deeper than 128 levels/);
  assert.equal(plan('readings', `[${reading()}]`).devices[0].readings[0].key, 'bin-A17:41:76c73ee2946cc70e');
});

test('a body that starts with a UTF-8 byte order mark is invalid_json saying so (every route)', () => {
  const bom = (body) => Uint8Array.from([0xef, 0xbb, 0xbf, ...enc.encode(body)]);
  const why = /^body is not valid JSON: the body starts with a UTF-8 byte order mark \(EF BB BF\); send JSON without it$/;
  throwsJson(() => parseUplink('readings', bom(`[${reading()}]`)), why);
  throwsJson(() => parseUplink('ttn', bom(TTS)), why);
  throwsJson(() => new Deduplicator().processBurstJson(bom(`[${reading()}]`), NOW), why);
  // As a string (U+FEFF first) too.
  throwsJson(() => parseUplink('readings', `\uFEFF[${reading()}]`), why);
});

test('TTN: an uplink_message that is not an object says so', () => {
  for (const v of ['1e400', '1', '"x"', '[]', 'null']) {
    const body = edit(TTS, TTS.slice(TTS.indexOf('"uplink_message"'), TTS.lastIndexOf('}')), `"uplink_message": ${v}`);
    assert.throws(() => parseUplink('ttn', enc.encode(body)), (e) => e.code === 'invalid_burst'
      && e.message === 'body is not a burst: not a The Things Stack uplink: "uplink_message" is not an object', v);
  }
  // Another message type of the device (newer than the worker knows): acknowledged, not read.
  const other = edit(TTS, TTS.slice(TTS.indexOf('"uplink_message"'), TTS.lastIndexOf('}')), '"other": 1');
  const plan = JSON.parse(parseUplink('ttn', enc.encode(other)));
  assert.deepEqual([plan.event, plan.ignored, plan.received], ['unknown', true, 0]);
  // Not a The Things Stack message at all.
  assert.throws(() => parseUplink('ttn', enc.encode('{"other": 1}')), (e) => e.code === 'invalid_burst'
    && e.message.startsWith('body is not a burst: not a The Things Stack message: none of end_device_ids'));
});
