// A Milesight EM500-UDL's uplinks for the backfill tests (docs/sequence-health.md "Asking the sensor for what is missing"): its
// history records and live readings, sent as The Things Stack and ChirpStack deliver
// them, and the history request it must receive.
import assert from "node:assert/strict";
import { fixture, post } from "./harness.mjs";

export const PERIOD = 600;
export const T0 = 1_780_000_200; // a multiple of PERIOD: slot T0 / PERIOD
export const SLOT0 = T0 / PERIOD;
export const EM500 = { codec: "milesight-iot/em500-udl", bin_depth_mm: 2000, reporting_period_s: PERIOD };

const u32 = (v) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const u16 = (v) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v);
  return b;
};
/** EM500-UDL history records (channel 0x20, type 0xCE: time u32 LE, distance u16 LE), one per slot (relative to SLOT0). */
export const history = (slots) => Buffer.concat(slots.map((k) => Buffer.concat([Buffer.from([0x20, 0xce]), u32(T0 + k * PERIOD), u16(500 + (k & 0xff))])));
/** An EM500-UDL live reading: battery, then distance (mm). */
export const live = (mm) => Buffer.from([0x01, 0x75, 0x5c, 0x03, 0x82, ...u16(mm)]);
/** The history request the sensor must receive for slots `from`..`to` (relative to SLOT0). */
export const request = (from, to) => Buffer.concat([Buffer.from([0xfd, 0x6c]), u32(T0 + from * PERIOD), u32(T0 + (to + 1) * PERIOD - 1)]);

let fcnt = 0;
/** A TTS uplink of `bytes` on fPort `f_port` (85, the factory's) for DevEUI `eui` (TTS device `dev`), with `headers` (TTS's downlink headers): the reply. */
export async function tts(w, eui, dev, bytes, headers, f_port = 85) {
  const body = JSON.parse(fixture("raw/tts-em500-udl-history.json"));
  body.end_device_ids.dev_eui = eui;
  body.end_device_ids.device_id = dev;
  body.uplink_message.frm_payload = bytes.toString("base64");
  body.uplink_message.f_cnt = ++fcnt;
  body.uplink_message.f_port = f_port;
  body.received_at = new Date().toISOString();
  const res = await post(w.call, "/v1/uplinks/ttn", body, headers);
  const reply = await res.json();
  assert.equal(res.status, 200, JSON.stringify(reply));
  return reply;
}

const sample = fixture("chirpstack-v4-up-docs-example.json");
/** A ChirpStack v4 `up` event of `bytes` on fPort 85: the reply. */
export async function chirpstack(w, eui, bytes) {
  const body = JSON.parse(sample);
  body.deviceInfo.devEui = eui;
  body.fPort = 85;
  body.fCnt = ++fcnt;
  body.deduplicationId = crypto.randomUUID();
  body.time = new Date().toISOString();
  body.data = bytes.toString("base64");
  const res = await post(w.call, "/v1/uplinks/chirpstack?event=up", body);
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}
