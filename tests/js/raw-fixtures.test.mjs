// The raw-payload webhook fixtures (tests/fixtures/webhooks/raw/, provenance in its
// README) through the built package (pkg/): `parseUplink` hands on each uplink's
// raw payload (`plan.raw`), and `readingsFromPayload` makes the readings a configured
// device gets from it. The payloads are the device vectors' bytes
// (tests/vectors/devices/), so the fixtures cannot drift from them.
// scripts/test.sh builds pkg/ first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { parseUplink, readingsFromPayload } = pkg;

const RAW = new URL('../fixtures/webhooks/raw/', import.meta.url);
/** The hex of vector `index` of tests/vectors/devices/`file`, whose `from` starts with `from`. */
const vector = (file, index, from) => {
  const v = JSON.parse(fs.readFileSync(new URL(`../vectors/devices/${file}`, import.meta.url))).vectors[index];
  assert.ok(v.from.startsWith(from), `${file} vector ${index} is "${v.from}"`);
  return v.hex.toLowerCase();
};

const HISTORY = vector('milesight-em500-udl.json', 2, 'CONSTRUCTED by us');
const EM310 = vector('milesight-em310-udl.json', 0, 'TTN em310-udl-codec.yaml');
const DF703 = vector('dingtek-df703.json', 0, "df703-codec.yaml 'heartbeat upload without gps'");
const LDDS75 = vector('dragino-ldds75.json', 0, 'ldds75-codec.yaml example "Distance Detection"');
/** An EM500-UDL `20 CE` history record: u32 LE unix seconds, u16 LE distance mm. */
const record = (s, mm) => {
  const b = Buffer.alloc(8);
  b.writeUInt16BE(0x20ce, 0);
  b.writeUInt32LE(s, 2);
  b.writeUInt16LE(mm, 6);
  return b.toString('hex');
};
// The history vector's second record again, then one an hour after it, 1100 mm.
const MORE = HISTORY.slice(16) + record(1665565242 + 3600, 1100);
// The DF703 heartbeat with its frame counter (bytes 13-14, u16 BE) 1 → 2.
const DF703_NEXT = `${DF703.slice(0, 26)}0002${DF703.slice(30)}`;
// Three DDS75-LB datalog entries (2821 mm, an empty entry, 15 mm): the frame of
// src/codec/dragino.rs `datalog_entries_are_samples_with_device_time` (CONSTRUCTED).
const DATALOG = '0b450b0501054160065f97' + '00'.repeat(11) + '0b45000f01054160066da7';

const EM500 = { codec: 'milesight-iot/em500-udl', bin_depth_mm: 1200, offset_mm: 150 };
const EM310_CONFIG = { codec: 'milesight-iot/em310-udl', bin_depth_mm: 2500 };
const DF703_CONFIG = { codec: 'dingtek/df703', bin_depth_mm: 2500 };
const TTS_DEVICE = '0004A30B001C0530';
const LORIOT_DEVICE = 'DF70300000000001';
const HELIUM_DEVICE = '1C29FBD1D2084E21';

/**
 * Each fixture: its route, the `raw` its plan must carry (device_id, f_port, payload,
 * codec_hint, config_hint), the device config the readings are made with, and what
 * they must be: [index, seq, ts, fill_pct] per reading and [index, code, message] per
 * rejection.
 */
const FIXTURES = {
  'tts-em500-udl-history.json': {
    format: 'ttn', device: TTS_DEVICE, f_port: 85, payload: HISTORY, hint: 'milesight-iot/em500-udl', config: EM500,
    readings: [[0, 1665561758, '2022-10-12T08:02:38+00:00', 9.7], [1, 1665565242, '2022-10-12T09:00:42+00:00', 9.8]],
  },
  'tts-em500-udl-history-rejoin.json': {
    format: 'ttn', device: TTS_DEVICE, f_port: 85, payload: HISTORY, hint: 'milesight-iot/em500-udl', config: EM500,
    readings: [[0, 1665561758, '2022-10-12T08:02:38+00:00', 9.7], [1, 1665565242, '2022-10-12T09:00:42+00:00', 9.8]],
  },
  'tts-em500-udl-history-more.json': {
    format: 'ttn', device: TTS_DEVICE, f_port: 85, payload: MORE, hint: 'milesight-iot/em500-udl', config: EM500,
    readings: [[0, 1665565242, '2022-10-12T09:00:42+00:00', 9.8], [1, 1665568842, '2022-10-12T10:00:42+00:00', 20.8]],
  },
  'tts-em310-udl-live.json': {
    format: 'ttn', device: TTS_DEVICE, f_port: 85, payload: EM310, hint: 'milesight-iot/em310-udl', config: EM310_CONFIG,
    battery: { percent: 92 }, readings: [[0, 1, '2020-02-12T15:15:45.789585+00:00', 15.4]],
  },
  'tts-no-version-ids.json': {
    format: 'ttn', device: TTS_DEVICE, f_port: 85, payload: EM310, hint: null, config: EM310_CONFIG,
    battery: { percent: 92 }, readings: [[0, 1, '2020-02-12T15:15:45.789585+00:00', 15.4]],
  },
  'loriot-df703-rx.json': {
    format: 'loriot', device: LORIOT_DEVICE, f_port: 3, payload: DF703, hint: null, config: DF703_CONFIG,
    readings: [[0, 1, '2016-08-10T17:37:55.433000+00:00', 20]],
  },
  'loriot-df703-gw.json': {
    format: 'loriot', device: LORIOT_DEVICE, f_port: 3, payload: DF703, hint: null, config: DF703_CONFIG,
    readings: [[0, 1, '2016-08-10T17:37:55.433000+00:00', 20]],
  },
  'loriot-df703-next.json': {
    format: 'loriot', device: LORIOT_DEVICE, f_port: 3, payload: DF703_NEXT, hint: null, config: DF703_CONFIG,
    readings: [[0, 2, '2016-08-11T17:37:55.433000+00:00', 20]],
  },
  // The device's tags name the codec and the bin depth; 2000 mm below a 1200 mm bin is empty.
  'chirpstack-df703-tags.json': {
    format: 'chirpstack', device: '0101010101010101', f_port: 3, payload: DF703, hint: 'dingtek/df703',
    configHint: { bin_depth_mm: 1200 }, config: { codec: 'dingtek/df703', bin_depth_mm: 1200 },
    readings: [[0, 1, '2022-07-18T09:34:15.775023+00:00', 0]],
  },
  'helium-ldds75-sentinel.json': {
    format: 'helium', device: HELIUM_DEVICE, f_port: 2, payload: LDDS75, hint: null, config: { codec: 'dragino/ldds75', bin_depth_mm: 3000 },
    battery: { millivolts: 3612 }, readings: [], rejected: [[0, 'no_reading', 'no level reading: no sensor']],
  },
  'helium-dds75-lb-datalog.json': {
    format: 'helium', device: HELIUM_DEVICE, f_port: 3, payload: DATALOG, hint: null, config: { codec: 'dragino/dds75-lb', bin_depth_mm: 3000 },
    readings: [[0, 1611030423, '2021-01-19T04:27:03+00:00', 6]],
    rejected: [[1, 'no_reading', 'no level reading: empty datalog entry'], [2, 'no_reading', 'no level reading: invalid reading']],
  },
};

const plan = (file) => JSON.parse(parseUplink(FIXTURES[file].format, fs.readFileSync(new URL(file, RAW))));
/** The readings of a fixture's raw payload for its device config (and a counter reference). */
const readingsOf = (file, counterRef = null) => {
  const { raw } = plan(file);
  return readingsFromPayload(raw.device_id, FIXTURES[file].config, raw.f_port, Uint8Array.from(raw.payload),
    { received_at: raw.received_at, f_cnt: raw.f_cnt, counter_ref: counterRef });
};
const keys = (out) => out.readings.map((r) => r.key);

test('the raw/ folder holds exactly the fixtures this file checks', () => {
  assert.deepEqual(fs.readdirSync(RAW).sort(), Object.keys(FIXTURES).sort());
});

test('every raw/ fixture is an uplink without a fill level whose plan hands on its raw payload', () => {
  for (const [file, want] of Object.entries(FIXTURES)) {
    const p = plan(file);
    assert.deepEqual([p.ignored, p.devices, p.rejected.map((r) => r.code)], [false, [], ['missing_fill_pct']], file);
    const { raw } = p;
    assert.deepEqual(
      [raw.device_id, raw.f_port, Buffer.from(raw.payload).toString('hex'), raw.codec_hint, raw.config_hint],
      [want.device, want.f_port, want.payload, want.hint, want.configHint ?? {}],
      file,
    );
  }
});

test('every raw/ fixture gives its readings and rejections with its device config', () => {
  for (const [file, want] of Object.entries(FIXTURES)) {
    const out = readingsOf(file);
    assert.equal(out.codec, want.config.codec, file);
    assert.deepEqual(out.battery, want.battery ?? null, file);
    assert.deepEqual(out.readings.map((r) => [r.index, r.seq, r.ts, r.fill_pct]), want.readings, file);
    assert.deepEqual(out.rejected.map((r) => [r.index, r.code, r.message]), want.rejected ?? [], file);
    for (const r of out.readings) assert.ok(r.key.startsWith(`${want.device}:${r.seq}:`), `${file}: ${r.key}`);
  }
});

test('EM500-UDL history is keyed by device time: a rejoin replays the same keys, a later uplink shares one', () => {
  const [first, rejoin, more] = ['', '-rejoin', '-more'].map((s) => `tts-em500-udl-history${s}.json`);
  const [a, b, c] = [first, rejoin, more].map((f) => plan(f).raw);
  const firstKeys = keys(readingsOf(first));
  assert.deepEqual(firstKeys, ['0004A30B001C0530:1665561758:33dbc933f35a30d9', '0004A30B001C0530:1665565242:acaf965478288a1d']);
  // The rejoin: the same bytes, another session and address, received a day later.
  assert.notEqual(b.received_at, a.received_at);
  const body = (f) => JSON.parse(fs.readFileSync(new URL(f, RAW)));
  const session = (f) => [body(f).uplink_message.session_key_id, body(f).end_device_ids.dev_addr];
  assert.ok(session(rejoin).every((v, i) => v !== session(first)[i]), 'another session key and DevAddr');
  assert.deepEqual(keys(readingsOf(rejoin)), firstKeys);
  // The later uplink (another frame counter) repeats the second record and adds one.
  assert.notEqual(c.f_cnt, a.f_cnt);
  const later = keys(readingsOf(more));
  assert.deepEqual(later.filter((k) => firstKeys.includes(k)), [firstKeys[1]]);
  assert.deepEqual(later.filter((k) => !firstKeys.includes(k)), ['0004A30B001C0530:1665568842:8bcbe0c32639335f']);
});

test("LORIOT rx and gw of one frame give the same readings; the next frame follows the DF703's counter", () => {
  const rx = readingsOf('loriot-df703-rx.json');
  assert.deepEqual(readingsOf('loriot-df703-gw.json'), rx);
  assert.deepEqual([keys(rx), rx.counter_ref], [['DF70300000000001:1:f6dae41f47cd1ce7'], 1]);
  const next = readingsOf('loriot-df703-next.json', rx.counter_ref);
  assert.deepEqual([next.readings.map((r) => r.seq), next.counter_ref], [[2], 2]);
});

test('an uplink that names no model has no codec hint (an unconfigured device is parked); ChirpStack tags give both hints', () => {
  for (const file of ['tts-no-version-ids.json', 'loriot-df703-rx.json', 'helium-ldds75-sentinel.json']) {
    const { raw } = plan(file);
    assert.deepEqual([raw.codec_hint, raw.config_hint], [null, {}], file);
  }
  const { raw } = plan('chirpstack-df703-tags.json');
  assert.deepEqual([raw.codec_hint, raw.config_hint, raw.f_cnt], ['dingtek/df703', { bin_depth_mm: 1200 }, 0]);
});
