// `npm run soak`: a bounded soak of the worker (src/worker/ in workerd through
// Miniflare, an origin stub on 127.0.0.1; loopback only). A fixed, seeded plan of
// requests is sent over SOAK_SECONDS (default 60) from SOAK_DEVICES (default 10 000)
// devices, a fixed number in flight; then the run waits (bounded) for delivery and
// for the /v1/stats roll-up, prints its figures and exits non-zero if a check failed.
//
// Traffic: valid bursts in every format that carries decoded fields (native
// /v1/readings, and The Things Stack, ChirpStack and Helium webhooks shaped after
// tests/fixtures/webhooks; not LORIOT, whose uplinks carry only the radio payload), replays of earlier
// bursts in the same and in another format (within the TTL, and a few after it),
// duplicates inside a burst, invalid readings inside valid bursts, and hostile
// requests (bad tokens, malformed JSON, duplicate members, oversized bodies, bad
// device ids, ...) whose expected answers follow the shared contract of issue 9.
//
// Ground truth: an independent model (keys computed here with node:crypto, the TTL
// semantics of the README) predicts every reading's verdict from what was sent and
// when. Checks:
//   1. no 5xx and every request answered: nothing is resent (The Things Stack's and
//      ChirpStack's webhooks do not resend a failed request, so a 503 or a connection
//      closed without an answer is a lost reading; SOAK_RESENDS=N resends up to N times,
//      as a client that does would, to see what a run would do then);
//   2. every valid reading's verdict is the model's (a reading that must be admitted
//      and is suppressed is a lost reading);
//   3. no lost readings: the origin stub receives exactly the ground-truth set of
//      keys, at least once each, plus every key a reply said was admitted;
//      deliveries beyond one per admission are counted and reported;
//   4. /v1/health answers 200 throughout (polled on its own connection);
//      GET /v1/stats answers 200 (or a coded 503 stats_unavailable, retried) throughout;
//   5. /v1/stats at the end equals the sum of what the ingest replies counted, with
//      every registered device;
//   6. workerd's resident memory is flat after the TTL window, measured on a steady
//      phase before the main load (the same devices at the same rate throughout; see
//      STEADY_DEVICES below); on the main load (every device new) it is reported only.
// Hostile requests answered otherwise than the contract says are listed as contract
// deviations; they fail the run only if they are a 5xx or lose a reading.
//
//   SOAK_SECONDS=60 SOAK_DEVICES=10000 [SOAK_CONCURRENCY=16] [SOAK_SEED=N] node benches/soak.mjs
// Also: SOAK_RESENDS (0), SOAK_TTL_MS (10000), SOAK_HOSTILE_SHARE (0.08), SOAK_STORAGE=memory (default:
// persisted in a temporary directory, as `npm start` does), SOAK_ORIGIN_KEEPALIVE_MS
// (the origin stub's keep-alive timeout, 0 = none), SOAK_LOG=1 (workerd's output),
// SOAK_STEADY_DEVICES (50; 0 = no steady phase, no memory check), SOAK_STEADY_EVERY_MS
// (5000), SOAK_STEADY_MS (4 TTL + 10 s), SOAK_IDLE_MS (30000).
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import { rng32 } from "../www/sim.js";
import { start, TOKEN, tempDir } from "../tests/support/harness.mjs";
import { workerdPids } from "./in-workerd.mjs";

const env = (name, dflt) => (process.env[name] === undefined || process.env[name] === "" ? dflt : Number(process.env[name]));
const SECONDS = env("SOAK_SECONDS", 60);
const DEVICES = env("SOAK_DEVICES", 10_000);
const CONCURRENCY = env("SOAK_CONCURRENCY", 16);
const SEED = env("SOAK_SEED", 20261130);
const TTL_MS = env("SOAK_TTL_MS", 10_000);
const FLUSH_MS = 500;
const MAX_READINGS = 1000;
/** Share of hostile requests among all requests. */
const HOSTILE_SHARE = env("SOAK_HOSTILE_SHARE", 0.08);
/** A request not answered within this counts as unanswered (a failure). */
const REQUEST_TIMEOUT_MS = 60_000;
/**
 * A 503 retry_later is resent after its Retry-After, and a connection closed before
 * any answer right away, this many times at most: by default none, as the network
 * servers' webhooks (check 1 above).
 */
const MAX_RETRIES = env("SOAK_RESENDS", 0);
/** After the load: bounded waits for delivery and for the roll-up. */
const DRAIN_MS = 300_000;
/** /v1/health "answers throughout": never longer than this without a 200 {"ok":true}. */
const HEALTH_LIMIT_MS = 5_000;
/**
 * Memory is "flat" when the median RSS of the last TTL window of the steady phase is at most
 * FLAT_RATIO times the median of the first full window after the first TTL window
 * (and the eviction delay of an idle object, a group object with its devices'
 * seen-sets or a roll-up shard, 10 s, after it).
 */
const FLAT_RATIO = 1.15;
const HEALTH_EVERY_MS = 100;
/** After the drain, how long the run stays idle before the last memory sample. */
const IDLE_MS = env("SOAK_IDLE_MS", 30_000);
const STATS_EVERY_MS = 2_000;
/**
 * The steady phase, before the main load: the memory check's workload. The same
 * SOAK_STEADY_DEVICES devices, each sending a burst every SOAK_STEADY_EVERY_MS (a new
 * reading and the previous one again, a duplicate), for SOAK_STEADY_MS (4 TTL + 10 s): a constant
 * population of devices (their seen-sets, in the group objects that hold them, open
 * throughout) at a constant rate, before and after the TTL window.
 */
const STEADY_DEVICES = env("SOAK_STEADY_DEVICES", 50);
const STEADY_EVERY_MS = env("SOAK_STEADY_EVERY_MS", 5_000);
const STEADY_MS = env("SOAK_STEADY_MS", 4 * TTL_MS + 10_000);

if (!(SECONDS >= 1 && DEVICES >= 10 && CONCURRENCY >= 1)) throw new Error("SOAK_SECONDS >= 1, SOAK_DEVICES >= 10, SOAK_CONCURRENCY >= 1");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const fmt = (x, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const MiB = (b) => `${(b / 1048576).toFixed(1)} MiB`;

// --- the model's key (docs/semantics.md, "The key"), independent of the Wasm core -------------------

const pad = (n, w) => String(n).padStart(w, "0");
/** Python's isoformat() of a UTC instant given in whole milliseconds. */
function isoUtc(ms) {
  const d = new Date(ms);
  const base = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  return `${base}${d.getUTCMilliseconds() ? `.${pad(d.getUTCMilliseconds(), 3)}000` : ""}+00:00`;
}
/** Python's repr(float) for the fill levels generated here (tenths 0..100, no exponent form). */
const reprFill = (x) => (Number.isInteger(x) ? `${x}.0` : String(x));
function keyOf(device, seq, tsCanonical, fill) {
  const content = `{"fill_pct":${reprFill(fill)},"ts":"${tsCanonical}"}`;
  return `${device}:${seq}:${createHash("sha256").update(content).digest("hex").slice(0, 16)}`;
}
/** The same instant written in one of several styles (all map to one key). */
function tsText(ms, style) {
  const iso = new Date(ms).toISOString(); // 2026-07-16T09:00:00.000Z
  const frac = ms % 1000 ? iso.slice(19, 23) : "";
  switch (style) {
    case 0:
      return iso.slice(0, 19) + frac + "Z";
    case 1:
      return iso; // always milliseconds
    case 2:
      return iso.slice(0, 23) + "000000Z"; // nanoseconds, as The Things Stack sends
    default: {
      const local = new Date(ms + 2 * 3600_000).toISOString();
      return local.slice(0, 19) + frac + "+02:00";
    }
  }
}

// --- the plan ------------------------------------------------------------------------

const r = rng32(SEED);
const pick = (a) => a[Math.floor(r() * a.length)];
const between = (lo, hi) => lo + r() * (hi - lo);
// LORIOT is not among them: its uplink carries the radio payload only (`data`), no
// decoded fields (docs/network-servers.md), so a reading from it needs a configured
// device and its codec: bench:raw and tests/worker/raw-uplinks*.test.mjs cover that path.
const WEBHOOKS = ["ttn", "chirpstack", "helium"];
const T0_MS = Date.parse("2026-07-16T00:00:00Z");

const devices = [];
for (let i = 0; i < DEVICES; i++) {
  // Even: a 16-hex DevEUI (reachable through every format the soak sends); odd: a native-only name.
  const id = i % 2 === 0 ? `70B3D57E${pad(i.toString(16).toUpperCase(), 8)}` : `bin-${pad(i, 5)}`;
  devices.push({ id, eui: i % 2 === 0, seq: 1 + Math.floor(r() * 5000), tsMs: T0_MS + Math.floor(r() * 3600) * 1000, style: i % 4 });
}

function newReadings(d, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    d.seq += 1;
    if (r() > 0.1) d.tsMs += 1000 * (60 + Math.floor(r() * 840)) + (r() < 0.2 ? Math.floor(r() * 1000) : 0);
    const fill = Math.round(r() * 1000) / 10;
    const invalid = r() < 0.03; // a fill level out of range: rejected, counted
    out.push({ device: d.id, seq: d.seq, tsMs: d.tsMs, fill: invalid ? 101 : fill, invalid });
  }
  return out;
}
const formatFor = (d) => (d.eui && r() < 0.5 ? pick(WEBHOOKS) : "readings");

/** Actions: one device's readings in one format at a planned time (seconds from the start). */
const actions = [];
const loadSpan = SECONDS * 0.85;
for (let i = 0; i < DEVICES; i++) {
  const d = devices[i];
  const t = (i / DEVICES) * loadSpan * 0.8 + r() * loadSpan * 0.2;
  const a = newReadings(d, 1 + Math.floor(r() ** 2 * 6));
  if (r() < 0.1) a.push({ ...a[Math.floor(r() * a.length)] }); // the same reading twice in one burst
  actions.push({ at: t, device: d, format: formatFor(d), readings: a, kind: "burst" });
  if (r() < 0.45) {
    // A replay: the gateway resends the burst, in the same format or another.
    const format = r() < 0.5 ? actions[actions.length - 1].format : formatFor(d);
    actions.push({ at: t + between(0.3, 4), device: d, format, readings: a.map((x) => ({ ...x })), kind: "replay" });
  }
  if (r() < 0.35) {
    // Reconnect: new readings with part of the earlier buffer resent.
    const b = [...a.slice(0, 1 + Math.floor(r() * a.length)), ...newReadings(d, 1 + Math.floor(r() * 4))];
    actions.push({ at: t + between(2, 6), device: d, format: formatFor(d), readings: b, kind: "reconnect" });
  }
  const late = t + (TTL_MS / 1000) * 1.3 + between(1, 3);
  if (r() < 0.05 && late < SECONDS) {
    // A replay after the TTL: admitted (and delivered) again.
    actions.push({ at: late, device: d, format: formatFor(d), readings: a.map((x) => ({ ...x })), kind: "late" });
  }
}

/** Body of one device's readings in a webhook format (the docs examples' shapes). */
function webhook(format, d, readings) {
  const single = readings.length === 1 && r() < 0.6;
  const x = readings[0];
  const decodedReadings = { readings: readings.map((y) => ({ seq: y.seq, ts: tsText(y.tsMs, d.style), fill_pct: y.fill })) };
  const eui = r() < 0.3 ? d.id.toLowerCase() : d.id;
  switch (format) {
    case "ttn": {
      const at = tsText(x.tsMs, 2);
      return {
        end_device_ids: { device_id: `dev-${d.id.slice(-6)}`, application_ids: { application_id: "soak" }, dev_eui: eui, dev_addr: "00BCB929" },
        received_at: at,
        uplink_message: {
          f_cnt: single ? x.seq : 1,
          frm_payload: "gkHe",
          decoded_payload: single ? { fill_pct: x.fill } : decodedReadings,
          rx_metadata: [{ gateway_ids: { gateway_id: "gtw1" }, rssi: -35, snr: 5.2 }],
          received_at: at,
        },
      };
    }
    case "chirpstack":
      return {
        deduplicationId: "3ac7e3c4-4401-4b8d-9386-a5c902f9202d",
        time: tsText(x.tsMs, 3),
        deviceInfo: { tenantName: "soak", deviceName: "bin", devEui: eui },
        dr: 1,
        fPort: 1,
        data: "qg==",
        rxInfo: [{ gatewayId: "0016c001f153a14c", rssi: -36, snr: 10.5 }],
        fCnt: single ? x.seq : 1,
        object: single ? { fill_pct: x.fill } : decodedReadings,
      };
    case "helium":
      return {
        app_eui: "6948A4B59F4666AD",
        dev_eui: eui,
        fcnt: single ? x.seq : 1,
        reported_at: x.tsMs,
        hotspots: [{ name: "icy-fiery-hippo", rssi: -54, snr: 9.8 }],
        decoded: { status: "success", payload: single ? { fill_pct: x.fill } : decodedReadings },
        port: 1,
      };
    default:
      throw new Error(`no webhook body for ${format}`);
  }
}

const nativeReading = (x, style) => ({ device_id: x.device, seq: x.seq, ts: tsText(x.tsMs, style), fill_pct: x.fill, rssi: -60 - (x.seq % 50) });
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

/** Valid requests: webhook actions one each, native actions grouped 1-4 devices a request. */
const requests = [];
const native = [];
for (const a of actions) {
  if (a.format === "readings") native.push(a);
  else {
    const path = a.format === "chirpstack" ? (r() < 0.8 ? "/v1/uplinks/chirpstack?event=up" : "/v1/uplinks/chirpstack") : `/v1/uplinks/${a.format}`;
    requests.push({ at: a.at, kind: a.kind, format: a.format, method: "POST", path, headers: auth, body: JSON.stringify(webhook(a.format, a.device, a.readings)), readings: a.readings, devices: [a.device.id] });
  }
}
native.sort((a, b) => a.at - b.at);
for (let i = 0; i < native.length; ) {
  const n = 1 + Math.floor(r() * 4);
  const group = [];
  const ids = new Set();
  while (group.length < n && i < native.length && !ids.has(native[i].device.id) && (group.length === 0 || native[i].at - group[0].at < 0.25)) {
    ids.add(native[i].device.id);
    group.push(native[i++]);
  }
  const readings = group.flatMap((a) => a.readings.map((x) => ({ ...x, style: a.device.style })));
  // Interleave the devices; each device's readings stay in order.
  const byDevice = group.map((a) => readings.filter((x) => x.device === a.device.id));
  const ordered = [];
  while (byDevice.some((q) => q.length)) {
    const q = pick(byDevice.filter((q) => q.length));
    ordered.push(q.shift());
  }
  const list = ordered.map((x) => nativeReading(x, x.style));
  const body = JSON.stringify(r() < 0.2 ? { readings: list } : list);
  requests.push({ at: group[group.length - 1].at, kind: group.map((a) => a.kind).join("+"), format: "readings", method: "POST", path: "/v1/readings", headers: auth, body, readings: ordered, devices: [...ids] });
}

// --- hostile requests, with the contract's answers ---------------------------------------

let hostileSeq = 1_000_000;
const hostileIds = new Set();
const hx = (n) => {
  const id = `hx-${n}`;
  hostileIds.add(id);
  return id;
};
const hostileReading = (id, extra = "") => `{"device_id":"${id}","seq":${hostileSeq++},"ts":"2026-07-16T09:00:00Z","fill_pct":50${extra}}`;
const H = (name, expect, method, path, headers, body) => ({ hostile: name, expect, method, path, headers, body, devices: [], readings: [] });
const HOSTILE = [
  () => H("wrong token", { status: 401, code: "unauthorized" }, "POST", "/v1/readings", { ...auth, authorization: "Bearer not-the-token" }, `[${hostileReading(hx(1))}]`),
  () => H("no token", { status: 401, code: "unauthorized" }, "POST", "/v1/uplinks/ttn", { "content-type": "application/json" }, "{}"),
  () => H("malformed JSON", { status: 400, code: "invalid_json" }, "POST", "/v1/readings", auth, `[${hostileReading(hx(2))}`.slice(0, -7)),
  () => H("not a burst", { status: 400, code: "invalid_burst" }, "POST", "/v1/readings", auth, "42"),
  () => H("member twice: readings", { status: 400, code: "invalid_json" }, "POST", "/v1/readings", auth, `{"readings":[${hostileReading(hx(3))}],"readings":[${hostileReading(hx(4))}]}`),
  () => H("member twice: in a reading", { status: 200, rejected: ["invalid_reading"] }, "POST", "/v1/readings", auth, `[${hostileReading(hx(5), ',"fill_pct":90')}]`),
  () => H("member twice: webhook", { status: 400, code: "invalid_json" }, "POST", "/v1/uplinks/loriot", auth, `{"cmd":"rx","EUI":"0102030405060708","EUI":"0102030405060709","ts":1470850675433,"fcnt":${hostileSeq++},"decoded":{"fill_pct":5}}`),
  () => H("body over MAX_BODY_BYTES", { status: 413, code: "body_too_large" }, "POST", "/v1/readings", auth, `[${" ".repeat(1_100_000)}]`),
  () => H("over MAX_READINGS", { status: 413, code: "too_many_readings" }, "POST", "/v1/readings", auth, `[${Array.from({ length: MAX_READINGS + 1 }, () => hostileReading(hx(6))).join(",")}]`),
  () => H("over MAX_DEVICES_PER_REQUEST", { status: 413, code: "too_many_devices" }, "POST", "/v1/readings", auth, `[${Array.from({ length: 101 }, (_, k) => hostileReading(hx(`fan-${k}`))).join(",")}]`),
  () =>
    H(
      "bad device ids",
      { status: 200, rejected: ["invalid_device_id", "invalid_device_id", "invalid_device_id", "invalid_device_id", "invalid_device_id", "missing_device_id"] },
      "POST",
      "/v1/readings",
      auth,
      `[${["", ".", "..", "x".repeat(129), "a\\u0000b"].map((id) => hostileReading(id)).join(",")},{"seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]`,
    ),
  () => H("wrong content type", { status: 415, code: "unsupported_media_type" }, "POST", "/v1/readings", { ...auth, "content-type": "text/plain" }, `[${hostileReading(hx(7))}]`),
  () => H("ChirpStack join event", { status: 200 }, "POST", "/v1/uplinks/chirpstack?event=join", auth, `{"deviceInfo":{"devEui":"0101010101010101"}}`),
  () => H("ChirpStack unknown event", { status: 400, code: "unknown_event" }, "POST", "/v1/uplinks/chirpstack?event=bogus", auth, `{"deviceInfo":{"devEui":"0101010101010101"}}`),
  () => H("ChirpStack event=UP", { status: 200, admitted: 1 }, "POST", "/v1/uplinks/chirpstack?event=UP", auth, `{"time":"2026-07-16T09:00:00Z","deviceInfo":{"devEui":"00000000000000aa"},"fCnt":${hostileSeq++},"object":{"fill_pct":12}}`),
  () => H("1e400 in an ignored member", { status: 200, admitted: 1 }, "POST", "/v1/readings", auth, `[${hostileReading(hx(8), ',"rssi":1e400')}]`),
  () => H("1e400 in fill_pct", { status: 200, rejected: ["invalid_fill_pct"] }, "POST", "/v1/readings", auth, `[{"device_id":"${hx(9)}","seq":${hostileSeq++},"ts":"2026-07-16T09:00:00Z","fill_pct":1e400}]`),
  () => H("lone surrogate", { status: 400, code: "invalid_json" }, "POST", "/v1/readings", auth, `[{"device_id":"hx\\ud800","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]`),
  () => H("seq beyond 2^53-1", { status: 200, rejected: ["invalid_seq"] }, "POST", "/v1/readings", auth, `[{"device_id":"${hx(10)}","seq":9007199254740992,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]`),
  () => H("ledger of a bad device id", { status: 400, code: "invalid_device_id" }, "GET", "/v1/devices/a%00b/readings", auth, null),
  () => H("ledger of a 200-byte id", { status: 400, code: "invalid_device_id" }, "GET", `/v1/devices/${"y".repeat(200)}/readings`, auth, null),
  () => H("wrong method", { status: 405, code: "method_not_allowed" }, "DELETE", "/v1/readings", auth, null),
  () => H("unknown route", { status: 404, code: "not_found" }, "GET", "/v1/nope", auth, null),
  () => H("HEAD /v1/stats", { status: 200 }, "HEAD", "/v1/stats", auth, null),
  () => H("webhook without a fill level", { status: 200, rejected: ["missing_fill_pct"] }, "POST", "/v1/uplinks/ttn", auth, fs.readFileSync(new URL("../tests/fixtures/webhooks/tts-v3-uplink-docs-example.json", import.meta.url), "utf8")),
];
const validCount = requests.length;
const hostileCount = Math.round((validCount * HOSTILE_SHARE) / (1 - HOSTILE_SHARE));
for (let i = 0; i < hostileCount; i++) requests.push({ ...HOSTILE[i % HOSTILE.length](), at: r() * loadSpan });
hostileIds.add("00000000000000AA");
requests.sort((a, b) => a.at - b.at);

// The steady phase (own random stream, so the main plan is the same with or without it).
const steady = [];
{
  const rs = rng32(SEED + 1);
  for (let i = 0; i < STEADY_DEVICES; i++) {
    const id = `steady-${pad(i, 5)}`;
    let seq = 1 + Math.floor(rs() * 5000);
    let tsMs = T0_MS + Math.floor(rs() * 3600) * 1000;
    let previous = null;
    for (let at = (i / STEADY_DEVICES) * STEADY_EVERY_MS; at < STEADY_MS - 500; at += STEADY_EVERY_MS) {
      seq += 1;
      tsMs += 60_000;
      const x = { device: id, seq, tsMs, fill: Math.round(rs() * 1000) / 10, invalid: false, style: i % 4 };
      const readings = previous ? [x, previous] : [x];
      previous = x;
      const body = JSON.stringify(readings.map((y) => nativeReading(y, y.style)));
      steady.push({ at: at / 1000, kind: "steady", format: "readings", method: "POST", path: "/v1/readings", headers: auth, body, readings, devices: [id] });
    }
  }
  steady.sort((a, b) => a.at - b.at);
}

// --- the origin stub ---------------------------------------------------------------------

const delivered = new Map(); // key -> times received
const deliveryErrors = [];
let originPosts = 0;
const originTimes = []; // performance.now() of each POST the stub received
const originServer = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    originPosts++;
    originTimes.push(performance.now());
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      for (const x of body.readings) {
        delivered.set(x.key, (delivered.get(x.key) ?? 0) + 1);
        // The delivered fields must give the delivered key (both written by the worker).
        const again = keyOf(x.device_id, x.seq, x.ts, x.fill_pct);
        if (again !== x.key && !hostileIds.has(x.device_id)) deliveryErrors.push(`${x.key} delivered with fields that key as ${again}`);
      }
    } catch (e) {
      deliveryErrors.push(`unreadable delivery: ${e.message}`);
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
  });
});
// workerd keeps its connections to the origin open and reuses them: with Node's
// default 5 s keep-alive timeout the stub would close one just as workerd reuses it
// (a lost connection, a failed delivery, a re-delivery) — an artefact of the stub.
// SOAK_ORIGIN_KEEPALIVE_MS sets it (Node's default is 5000) to see the effect.
originServer.keepAliveTimeout = env("SOAK_ORIGIN_KEEPALIVE_MS", 0);
await new Promise((ok) => originServer.listen(0, "127.0.0.1", ok));
const ORIGIN_URL = `http://127.0.0.1:${originServer.address().port}/ingest`;

// --- workerd -----------------------------------------------------------------------------

console.log(`reconnect-dedupe soak  ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, ${MiB(os.totalmem())} RAM, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}`);
const dir = tempDir();
const vars = { ORIGIN_URL, TTL_MS: String(TTL_MS), STATS_FLUSH_MS: String(FLUSH_MS), MAX_READINGS: String(MAX_READINGS), RETRY_BASE_MS: "1000", RETRY_MAX_MS: "10000" };
const PERSIST = process.env.SOAK_STORAGE !== "memory";
const w = await start({ persist: PERSIST ? dir : undefined, vars, log: process.env.SOAK_LOG === "1" });
const base = new URL(await w.mf.ready);
const workerdPid = workerdPids(process.pid)[0] ?? null;
const readingsPlanned = requests.reduce((n, q) => n + q.readings.length, 0);
console.log(
  `plan: seed ${SEED}, ${fmt(DEVICES)} devices, ${SECONDS} s, ${fmt(requests.length)} requests (${fmt(validCount)} valid carrying ${fmt(readingsPlanned)} readings, ` +
    `${fmt(hostileCount)} hostile of ${HOSTILE.length} kinds), ${CONCURRENCY} in flight; TTL_MS ${TTL_MS}, STATS_FLUSH_MS ${FLUSH_MS}, ` +
    `MAX_READINGS ${MAX_READINGS}; workerd pid ${workerdPid ?? "not found"}; loopback ${base.host}, origin ${ORIGIN_URL}`,
);

/** CPU seconds (user + system) a process has used, from /proc. */
const cpuSeconds = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
};
const openFiles = () => {
  try {
    return fs.readdirSync(`/proc/${workerdPid}/fd`).length;
  } catch {
    return null;
  }
};
/**
 * workerd's main thread (the one that runs every isolate, object and alarm here):
 * [ns on a CPU, ns runnable but waiting for a CPU, state letter], from /proc schedstat.
 */
const mainThread = () => {
  try {
    const [cpu, runq] = fs.readFileSync(`/proc/${workerdPid}/task/${workerdPid}/schedstat`, "utf8").split(" ").map(Number);
    const stat = fs.readFileSync(`/proc/${workerdPid}/task/${workerdPid}/stat`, "utf8");
    return [cpu, runq, stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)];
  } catch {
    return null;
  }
};
/** workerd's resident memory split as the kernel accounts it: [anonymous, file-backed, shared memory] bytes. */
const rssParts = () => {
  try {
    const st = fs.readFileSync(`/proc/${workerdPid}/status`, "utf8");
    return ["RssAnon", "RssFile", "RssShmem"].map((k) => 1024 * Number(new RegExp(`${k}:\\s+(\\d+)`).exec(st)[1]));
  } catch {
    return [NaN, NaN, NaN];
  }
};
const rss = () => {
  try {
    return 1024 * Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${workerdPid}/status`, "utf8"))[1]);
  } catch {
    return null;
  }
};

// --- HTTP client (loopback); three separate connection pools ------------------------------

/**
 * Node's http.Agent with a finite maxSockets sends `Connection: keep-alive` and would hand
 * a freed socket to a queued request even with keepAlive: false; here at most
 * CONCURRENCY (= maxSockets) requests are in flight, so none queues: counted to show it.
 */
let requestsSent = 0;
let reusedSent = 0;
const agents = {
  // A connection per request, as webhook senders make them: reused keep-alive
  // connections to workerd were seen closed under load without an answer.
  ingest: new http.Agent({ keepAlive: false, maxSockets: CONCURRENCY }),
  health: new http.Agent({ keepAlive: false, maxSockets: 1 }),
  stats: new http.Agent({ keepAlive: false, maxSockets: 1 }),
  big: new http.Agent({ keepAlive: false }),
};
const what = (res) => (res.status === 0 ? res.error : `${res.status} ${res.text.slice(0, 300)}`);
function send(agent, method, path, headers, body, timeoutMs = REQUEST_TIMEOUT_MS) {
  return new Promise((resolve) => {
    const t = performance.now();
    const req = http.request({ host: base.hostname, port: base.port, method, path, agent, headers: body === null ? headers : { ...headers, "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString("utf8"), ms: performance.now() - t, reused: req.reusedSocket }));
      res.on("error", (e) => resolve({ status: 0, error: e.message, ms: performance.now() - t, reused: req.reusedSocket }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (e) => {
      if (process.env.SOAK_LOG === "1") console.error(`soak: ${method} ${path} connection error after ${(performance.now() - t).toFixed(0)} ms: ${e.message}`);
      resolve({ status: 0, error: e.message, ms: performance.now() - t, reused: req.reusedSocket });
    });
    req.end(body ?? undefined);
  });
}

// --- the model, fed as replies come back --------------------------------------------------

const failures = [];
const fail = (what) => {
  if (failures.length < 50) failures.push(what);
  else failures.length++;
};
const windows = new Map(); // key -> [lo, hi]: when its latest admission happened
const groundTruth = new Set(); // keys the model says must be admitted (at least once)
const acknowledged = new Map(); // key -> admissions the replies reported
let admissionsExpected = 0;
let ambiguous = 0;
const verdicts = { admitted: 0, duplicate: 0, rejected: 0 };
const counted = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0 };
const registered = new Set();
const statuses = {};
const deviations = new Map();
let retries = 0;
let resets = 0;
const retryCauses = new Map();
const resetCauses = new Map();
/** Connections closed without an answer: [ms from sending to the close, performance.now() of the close, on a reused socket]. */
const resetTimes = [];
const note = (map, what) => map.set(what, (map.get(what) ?? 0) + 1);
let admittedUnanswered = 0;
let unansweredAttempts = 0;
/** Readings in ingest attempts without an answer: what /v1/stats may hold beyond the replies. */
let unansweredReadings = 0;
let unansweredDevices = 0;
let answered = 0;

function deviceOfKey(key) {
  return key.slice(0, key.lastIndexOf(":", key.lastIndexOf(":") - 1));
}

/** Adds one ingest reply (any attempt) to what /v1/stats must show. */
function countReply(q, body) {
  const failed = new Set((body.errors ?? []).map((e) => e.device_id));
  const devOfIndex = (i) => (q.readings[i] ? q.readings[i].device : null);
  let rejectedCounted = 0;
  for (const x of body.rejected ?? []) {
    if (x.device_id === null || x.device_id === undefined) rejectedCounted++;
    else if (!failed.has(x.device_id)) {
      rejectedCounted++;
      registered.add(x.device_id);
    }
  }
  for (const a of body.admitted ?? []) registered.add(deviceOfKey(a.key));
  for (const i of body.duplicates ?? []) {
    const d = devOfIndex(i);
    if (d !== null) registered.add(d);
  }
  counted.unique += body.unique ?? 0;
  counted.duplicates_suppressed += body.duplicates_suppressed ?? 0;
  counted.rejected += rejectedCounted;
  counted.received += (body.unique ?? 0) + (body.duplicates_suppressed ?? 0) + rejectedCounted;
  for (const a of body.admitted ?? []) acknowledged.set(a.key, (acknowledged.get(a.key) ?? 0) + 1);
  if (body.received !== (body.unique ?? 0) + (body.duplicates_suppressed ?? 0) + (body.rejected?.length ?? 0) + (body.not_stored?.length ?? 0)) {
    fail(`reply does not add up: ${JSON.stringify(body).slice(0, 300)}`);
  }
}

/** The model's verdicts for a valid request, checked against the union of its attempts. */
function checkValid(q, sentAt, answeredAt, admittedKeys, duplicateIdx, rejectedIdx, unanswered) {
  const inRequest = new Set();
  q.readings.forEach((x, i) => {
    if (x.invalid) {
      verdicts.rejected++;
      if (!rejectedIdx.has(i)) fail(`${q.kind} ${q.path}: reading ${i} (${x.device}, fill ${x.fill}) should be rejected`);
      return;
    }
    const key = keyOf(x.device, x.seq, isoUtc(x.tsMs), x.fill);
    const got = admittedKeys.get(i);
    if (got !== undefined && got !== key) fail(`key mismatch at ${q.path} #${i}: worker ${got}, model ${key}`);
    const win = windows.get(key);
    let expect;
    if (inRequest.has(key)) expect = "duplicate";
    else if (!win) expect = "admitted";
    else if (answeredAt < win[0] + TTL_MS) expect = "duplicate";
    else if (sentAt >= win[1] + TTL_MS) expect = "admitted";
    else {
      // Within the request's latency of the TTL boundary: either is right; follow the reply.
      ambiguous++;
      expect = got !== undefined ? "admitted" : "duplicate";
    }
    inRequest.add(key);
    verdicts[expect]++;
    if (expect === "admitted") {
      groundTruth.add(key);
      admissionsExpected++;
      windows.set(key, [sentAt, answeredAt]);
      // An attempt without an answer may have admitted it: the resend then finds a duplicate.
      if (got === undefined && unanswered && duplicateIdx.has(i)) admittedUnanswered++;
      else if (got === undefined) fail(`lost: ${key} (${q.kind} via ${q.path}) must be admitted, worker said ${duplicateIdx.has(i) ? "duplicate" : rejectedIdx.has(i) ? "rejected" : "nothing"}`);
    } else if (got !== undefined) {
      fail(`${key} (${q.kind} via ${q.path}) admitted again within the TTL`);
    }
  });
}

function deviation(q, res, body) {
  const e = q.expect;
  const code = body?.error?.code;
  let ok = res.status === e.status && (e.code === undefined || code === e.code);
  if (ok && e.rejected) ok = JSON.stringify((body.rejected ?? []).map((x) => x.code)) === JSON.stringify(e.rejected);
  if (ok && e.admitted !== undefined) ok = (body.unique ?? 0) === e.admitted;
  if (ok) return;
  const seen = `${res.status}${code ? ` ${code}` : ""}${body?.rejected?.length ? ` rejected ${body.rejected.map((x) => x.code).join(",")}` : ""}${body?.unique ? ` admitted ${body.unique}` : ""}`;
  const d = deviations.get(q.hostile) ?? { count: 0, seen: new Set(), expect: e };
  d.count++;
  d.seen.add(seen);
  deviations.set(q.hostile, d);
}

async function run(q) {
  const sentAt = Date.now();
  const admittedKeys = new Map();
  const duplicateIdx = new Set();
  const rejectedIdx = new Set();
  let noAnswer = 0;
  let res;
  for (let attempt = 0; ; attempt++) {
    res = await send(q.body?.length > 1_000_000 ? agents.big : agents.ingest, q.method, q.path, q.headers, q.body);
    requestsSent++;
    if (res.reused) reusedSent++;
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    let body = null;
    try {
      body = res.text ? JSON.parse(res.text) : null;
    } catch {}
    // An ingest reply (200, or 503 retry_later with what was stored): count it.
    if (q.method === "POST" && typeof body?.received === "number" && (res.status === 200 || res.status === 503)) {
      countReply(q, body);
      for (const a of body.admitted) admittedKeys.set(a.index, a.key);
      for (const i of body.duplicates) duplicateIdx.add(i);
      for (const x of body.rejected) rejectedIdx.add(x.index);
    }
    if (res.status === 503 && body?.error?.code === "retry_later" && attempt < MAX_RETRIES) {
      retries++;
      for (const e of body.errors ?? []) note(retryCauses, `${e.code}: ${String(e.message).replace(/[0-9a-f]{16,}/g, "…").slice(0, 160)}`);
      await sleep(1000 * Number(res.headers["retry-after"] ?? 1));
      continue;
    }
    if (res.status === 0 && attempt < MAX_RETRIES) {
      resets++;
      noAnswer++;
      note(resetCauses, `${q.method} ${q.path.split("?")[0]}: ${res.error}`);
      resetTimes.push([res.ms, performance.now(), res.reused]);
      if (q.method === "POST") {
        unansweredReadings += q.hostile ? 1200 : q.readings.length;
        unansweredDevices += q.hostile ? 101 : q.devices.length;
        unansweredAttempts++;
      }
      continue;
    }
    if (res.status === 0 || res.status >= 500) fail(`${q.hostile ?? q.kind} ${q.method} ${q.path}: ${what(res)}`);
    else if (q.hostile) deviation(q, res, body);
    else if (res.status !== 200) fail(`${q.kind} ${q.path}: ${what(res)}`);
    break;
  }
  answered++;
  q.answeredAt = performance.now();
  if (!q.hostile && res.status === 200) checkValid(q, sentAt, Date.now(), admittedKeys, duplicateIdx, rejectedIdx, noAnswer > 0);
}

// --- pollers: health and stats on their own connections, RSS from /proc -------------------

let stop = false;
const health = { latencies: [], bad: [], resets: 0, lastOk: 0, maxGap: 0, gapAt: [0, 0] };
/** Records the longest span without a good health answer (performance.now() times). */
function healthGap(now) {
  if (now - health.lastOk > health.maxGap) {
    health.maxGap = now - health.lastOk;
    health.gapAt = [health.lastOk, now];
  }
}
const statsPoll = { latencies: [], bad: [], resets: 0, unavailable: 0, maxDevices: 0 };
/** A 503 stats_unavailable (a shard could not answer; Retry-After) is to be retried, not a failure. */
const statsUnavailable = (res) => res.status === 503 && /"stats_unavailable"/.test(res.text ?? "");
const memory = []; // [ms since load start, rss]
/** Every 0.5 s: {t (performance.now()), rss, parts, files, thread (mainThread()), lines (worker log lines so far)}. */
const samples = [];
async function pollHealth() {
  health.lastOk = performance.now();
  while (!stop) {
    const res = await send(agents.health, "GET", "/v1/health", {}, null, 30_000);
    health.latencies.push(res.ms);
    const now = performance.now();
    if (res.status === 200 && res.text === '{"ok":true}') {
      healthGap(now);
      health.lastOk = now;
    } else if (res.status === 0) health.resets++; // asked again at once, on a new connection
    else health.bad.push(`${res.status} in ${res.ms.toFixed(0)} ms ${res.text?.slice(0, 100)}`);
    if (res.status !== 0) await sleep(HEALTH_EVERY_MS);
  }
  healthGap(performance.now());
}
async function pollStats() {
  while (!stop) {
    const res = await send(agents.stats, "GET", "/v1/stats", { authorization: `Bearer ${TOKEN}` }, null);
    statsPoll.latencies.push(res.ms);
    if (res.status === 0) statsPoll.resets++;
    else if (statsUnavailable(res)) statsPoll.unavailable++;
    else if (res.status !== 200) statsPoll.bad.push(`${res.status} ${res.text?.slice(0, 200)}`);
    else statsPoll.maxDevices = Math.max(statsPoll.maxDevices, JSON.parse(res.text).devices);
    await sleep(STATS_EVERY_MS);
  }
}
const lag = { max: 0 };
let lastProgress = performance.now();
async function sampleMemory(t0) {
  while (!stop) {
    const planned = performance.now() + 500;
    const b = rss();
    if (b !== null) memory.push([performance.now() - t0, b]);
    samples.push({ t: performance.now(), rss: b, parts: rssParts(), files: openFiles(), thread: mainThread(), lines: w.lines.length });
    await sleep(500);
    lag.max = Math.max(lag.max, performance.now() - planned); // this process's event-loop delay
    if (performance.now() - lastProgress >= 30_000) {
      lastProgress = performance.now();
      console.log(`  ... ${((lastProgress - t0) / 1000).toFixed(0)} s: ${fmt(answered)} of ${fmt(steady.length + requests.length)} requests answered, workerd RSS ${b === null ? "-" : MiB(b)}, ${openFiles()} open files`);
    }
  }
}

// --- the load ------------------------------------------------------------------------------

const cpuAtStart = { workerd: cpuSeconds(workerdPid), soak: cpuSeconds(process.pid) };
const loadStart = performance.now();
const pollers = [pollHealth(), pollStats(), sampleMemory(loadStart)];
const deviceDone = new Map(); // device -> promise of its latest request
let slots = CONCURRENCY;
const waiting = [];
const acquire = () => (slots > 0 ? (slots--, Promise.resolve()) : new Promise((ok) => waiting.push(ok)));
const release = () => (waiting.length ? waiting.shift()() : slots++);
const HARD_STOP_S = Math.max(SECONDS * 15, 600) + STEADY_MS / 1000;
const hardStop = loadStart + HARD_STOP_S * 1000;
// The steady phase, then (once it is answered) the main load.
await dispatch(steady, loadStart);
const steadyMs = performance.now() - loadStart;
const mainStart = performance.now();
await dispatch(requests, mainStart);
const loadMs = performance.now() - loadStart;
const loadMemory = memory.slice();

async function dispatch(list, start) {
  const all = [];
  for (const q of list) {
    const wait = start + q.at * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    if (performance.now() > hardStop) {
      fail(`the load was not sent within ${HARD_STOP_S} s; the rest of the plan was dropped`);
      break;
    }
    // A device's requests run in plan order (a network server sends one uplink after another).
    const deps = q.devices.map((d) => deviceDone.get(d)).filter(Boolean);
    const p = (async () => {
      await Promise.all(deps);
      await acquire();
      try {
        await run(q);
      } finally {
        release();
      }
    })();
    for (const d of q.devices) deviceDone.set(d, p);
    all.push(p);
  }
  await Promise.all(all);
}

// --- drain: every acknowledged and every ground-truth key at the origin, then the roll-up --

const expectedAtOrigin = new Set([...groundTruth, ...acknowledged.keys()]);
const drainStart = performance.now();
let missing = [];
for (;;) {
  missing = [...expectedAtOrigin].filter((k) => !delivered.has(k));
  if (!missing.length || performance.now() - drainStart > DRAIN_MS) break;
  await sleep(250);
}
const deliveredMs = performance.now() - drainStart;
let stats = null;
const want = { devices: registered.size, ...counted, pending_deliveries: 0 };
/**
 * Exact, unless some ingest attempts went unanswered (then retried): the worker may
 * have counted those too, so a counter may exceed the replies' sum by at most their
 * readings (devices: their devices).
 */
function statsAgree(k, v) {
  const slack = k === "devices" ? unansweredDevices : k === "pending_deliveries" ? 0 : unansweredReadings;
  return stats?.[k] >= v && stats?.[k] <= v + slack;
}
const statsStart = performance.now();
for (;;) {
  const res = await send(agents.stats, "GET", "/v1/stats", { authorization: `Bearer ${TOKEN}` }, null);
  if (res.status === 200) stats = JSON.parse(res.text);
  else if (res.status === 0) statsPoll.resets++;
  else if (statsUnavailable(res)) statsPoll.unavailable++;
  else statsPoll.bad.push(`${res.status} ${res.text?.slice(0, 200)}`);
  if (stats && Object.entries(want).every(([k, v]) => statsAgree(k, v))) break;
  if (performance.now() - statsStart > DRAIN_MS) break;
  await sleep(250);
}
const statsMs = performance.now() - statsStart;
// Idle: nothing sent for IDLE_MS (past the TTL and workerd's 10 s eviction of idle objects:
// the group objects, with their devices' seen-sets, and the roll-up shards).
const beforeIdle = { rss: rss(), parts: rssParts(), files: openFiles() };
console.log(`  ... drained; idle for ${IDLE_MS / 1000} s (workerd pid ${workerdPid})`);
await sleep(IDLE_MS);
const afterIdle = { rss: rss(), parts: rssParts(), files: openFiles() };
stop = true;
await Promise.all(pollers);

// --- checks and figures ---------------------------------------------------------------------

for (const k of missing) fail(`lost: ${k} ${groundTruth.has(k) ? "(ground truth)" : "(acknowledged by a reply)"} never reached the origin`);
const explained = new Set([...groundTruth, ...acknowledged.keys()]);
const extra = [...delivered.keys()].filter((k) => !explained.has(k));
for (const k of extra.slice(0, 20)) fail(`the origin received ${k}, which no reply admitted and the model does not expect`);
for (const e of deviationsToFailures()) fail(e);
for (const e of deliveryErrors.slice(0, 20)) fail(e);
if (health.bad.length) fail(`/v1/health: ${health.bad.length} of ${health.latencies.length} polls answered otherwise than 200 {"ok":true}, e.g. ${health.bad.slice(0, 3).join("; ")}`);
if (!(health.maxGap <= HEALTH_LIMIT_MS)) fail(`/v1/health: ${(health.maxGap / 1000).toFixed(1)} s without an answer (limit ${HEALTH_LIMIT_MS / 1000} s)`);
for (const b of statsPoll.bad.slice(0, 10)) fail(`/v1/stats: ${b}`);
for (const [k, v] of Object.entries(want)) if (!statsAgree(k, v)) fail(`/v1/stats ${k} = ${stats?.[k]}, the replies counted ${v}${unansweredAttempts ? ` (+ at most what ${unansweredAttempts} unanswered attempts carried)` : ""}`);
function deviationsToFailures() {
  return [];
}

const beyond = [...delivered].reduce((n, [k, c]) => n + Math.max(0, c - (acknowledged.get(k) ?? 1)), 0);
const readmitted = [...acknowledged.values()].reduce((n, c) => n + c - 1, 0);
const pct = (xs, p) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const median = (xs) => pct(xs, 50);
// The memory check, on the steady phase: first window one TTL long after the first TTL
// window and workerd's 10 s eviction of an idle object (group or shard); last window the
// steady phase's last TTL.
const firstFrom = TTL_MS + 10_000;
const windowOf = (from, to) => loadMemory.filter(([t]) => t >= from && t < to).map(([, b]) => b);
const rateOf = (from, to) => steady.filter((q) => q.answeredAt - loadStart >= from && q.answeredAt - loadStart < to).length / ((to - from) / 1000);
const first = windowOf(firstFrom, firstFrom + TTL_MS);
const last = windowOf(steadyMs - TTL_MS, steadyMs);
const flat = first.length && last.length ? median(last) / median(first) : NaN;
const memoryChecked = STEADY_DEVICES > 0 && steadyMs >= firstFrom + 2 * TTL_MS && first.length > 0 && last.length > 0;
if (memoryChecked && !(flat <= FLAT_RATIO)) fail(`memory not flat on the steady phase: last-window median ${MiB(median(last))} is ${flat.toFixed(2)}x the first window's ${MiB(median(first))} (limit ${FLAT_RATIO}x)`);
if (!memoryChecked) console.log(`memory check skipped: no steady phase of two TTL windows after ${(firstFrom / 1000).toFixed(0)} s`);
// The main load (a growing population: every device new): reported, not a check.
const mainFrom = steadyMs + firstFrom;
const mainFirst = windowOf(mainFrom, mainFrom + TTL_MS);
const mainLast = windowOf(loadMs - TTL_MS, loadMs);
const filesMax = (from, to) => Math.max(0, ...samples.filter((x) => x.t - loadStart >= from && x.t - loadStart < to && x.files !== null).map((x) => x.files));

console.log(
  `cpu: workerd ${(cpuSeconds(workerdPid) - cpuAtStart.workerd).toFixed(1)} s, this process (client, model, origin stub) ${(cpuSeconds(process.pid) - cpuAtStart.soak).toFixed(1)} s; ` +
    `this process's longest event-loop delay ${lag.max.toFixed(0)} ms; load average now ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`,
);
console.log(`load: ${fmt(answered)} requests answered in ${(loadMs / 1000).toFixed(1)} s (${fmt(answered / (loadMs / 1000))} requests/s), ${fmt(retries)} retries after 503 retry_later, ${fmt(resets)} after a connection closed without an answer (${fmt(admittedUnanswered)} readings admitted by an unanswered attempt); statuses ${JSON.stringify(statuses)}`);
console.log(
  `model: ${fmt(verdicts.admitted)} admissions expected (${fmt(groundTruth.size)} distinct keys), ${fmt(verdicts.duplicate)} duplicates, ${fmt(verdicts.rejected)} rejected; ` +
    `${ambiguous} verdicts within a request's latency of the TTL boundary (either accepted)`,
);
console.log(
  `origin: ${fmt(delivered.size)} distinct keys in ${fmt(originPosts)} POSTs, all ${fmt(expectedAtOrigin.size)} expected ${missing.length ? `but ${missing.length} missing` : "present"} after ${(deliveredMs / 1000).toFixed(1)} s; ` +
    `${extra.length} unexplained; ${fmt(readmitted)} re-admissions after the TTL; ${fmt(beyond)} deliveries beyond one per admission`,
);
console.log(
  `/v1/stats at the end (after ${(statsMs / 1000).toFixed(1)} s): ${stats ? Object.keys(want).map((k) => `${k} ${fmt(stats[k])}${stats[k] === want[k] ? "" : ` (want ${fmt(want[k])})`}`).join(", ") : "no answer"}`,
);
console.log(
  `/v1/health: ${fmt(health.latencies.length)} polls, ${health.bad.length} bad, ${health.resets} connections closed without an answer; longest without an answer ${(health.maxGap / 1000).toFixed(1)} s (limit ${HEALTH_LIMIT_MS / 1000}); latency p50 ${pct(health.latencies, 50).toFixed(1)} ms, p99 ${pct(health.latencies, 99).toFixed(1)} ms, max ${Math.max(...health.latencies).toFixed(1)} ms`,
);
console.log(
  `/v1/stats during the load: ${fmt(statsPoll.latencies.length)} calls, ${statsPoll.bad.length} bad, ${statsPoll.unavailable} 503 stats_unavailable (retried), ${statsPoll.resets} connections closed without an answer, up to ${fmt(statsPoll.maxDevices)} devices; p50 ${pct(statsPoll.latencies, 50).toFixed(1)} ms, max ${Math.max(...statsPoll.latencies).toFixed(1)} ms`,
);
// What workerd's main thread did: over the whole load, and during the longest health gap.
function threadBetween(a, b) {
  const inside = samples.filter((x) => x.t >= a && x.t <= b && x.thread);
  const before = samples.filter((x) => x.t <= a && x.thread).at(-1) ?? inside[0];
  const after = samples.filter((x) => x.t >= b && x.thread)[0] ?? inside.at(-1);
  if (!before || !after || after.t <= before.t) return null;
  const wall = after.t - before.t;
  const cpu = (after.thread[0] - before.thread[0]) / 1e6;
  const runq = (after.thread[1] - before.thread[1]) / 1e6;
  const states = {};
  for (const x of inside) states[x.thread[2]] = (states[x.thread[2]] ?? 0) + 1;
  const pc = (v) => `${(v / 1000).toFixed(1)} s (${((100 * v) / wall).toFixed(0)} %)`;
  return { text: `over ${(wall / 1000).toFixed(1)} s: on a CPU ${pc(cpu)}, runnable but waiting for a CPU ${pc(runq)}, neither (waiting for I/O or events) ${pc(Math.max(0, wall - cpu - runq))}; states sampled ${JSON.stringify(states)}`, before, after };
}
const whole = threadBetween(loadStart, loadStart + loadMs);
if (whole) console.log(`workerd main thread during the load ${whole.text}`);
if (health.maxGap > 1000) {
  const [a, b] = health.gapAt;
  const g = threadBetween(a, b);
  const inGap = (t) => t >= a && t <= b;
  const events = new Map();
  if (g) for (const l of w.lines.slice(g.before.lines, g.after.lines)) {
    const m = /"level":"(WARN|ERROR)","event":"([a-z_]+)"/.exec(l);
    if (m) note(events, m[2]);
  }
  console.log(
    `longest /v1/health gap ${((a - loadStart) / 1000).toFixed(1)}-${((b - loadStart) / 1000).toFixed(1)} s into the load: workerd main thread ${g ? g.text : "not sampled"}; ` +
      `origin POSTs received ${originTimes.filter(inGap).length}; worker WARN/ERROR lines ${events.size ? JSON.stringify(Object.fromEntries(events)) : "none"}; ` +
      `workerd RSS ${g ? `${MiB(g.before.rss)} -> ${MiB(g.after.rss)}, open files ${g.before.files} -> ${g.after.files}` : "-"}`,
  );
}
const series = [];
for (let s = 0; s * 5000 < loadMs; s++) {
  const xs = samples.filter((x) => x.t - loadStart >= s * 5000 && x.t - loadStart < (s + 1) * 5000 && x.rss !== null);
  const answeredIn = [...steady, ...requests].filter((q) => q.answeredAt - loadStart >= s * 5000 && q.answeredAt - loadStart < (s + 1) * 5000).length;
  if (xs.length) series.push(`${s * 5}s ${(median(xs.map((x) => x.rss)) / 1048576).toFixed(0)}/${(median(xs.map((x) => x.parts[0])) / 1048576).toFixed(0)}/${Math.max(...xs.map((x) => x.files ?? 0))}/${(answeredIn / 5).toFixed(0)}`);
}
console.log(`workerd per 5 s (RSS MiB / of it anonymous MiB / open files max / requests answered per s; steady phase to ${(steadyMs / 1000).toFixed(0)} s): ${series.join(", ")}`);
const mib = (xs) => (xs.length ? MiB(median(xs)) : "-");
if (STEADY_DEVICES > 0) console.log(
  `memory (the check, steady phase: ${STEADY_DEVICES} devices, a burst each every ${STEADY_EVERY_MS / 1000} s, ${(steadyMs / 1000).toFixed(0)} s): first window ${(firstFrom / 1000).toFixed(0)}-${((firstFrom + TTL_MS) / 1000).toFixed(0)} s median ${mib(first)} at ${rateOf(firstFrom, firstFrom + TTL_MS).toFixed(1)} requests/s, ` +
    `last window ${((steadyMs - TTL_MS) / 1000).toFixed(0)}-${(steadyMs / 1000).toFixed(0)} s median ${mib(last)} at ${rateOf(steadyMs - TTL_MS, steadyMs).toFixed(1)} requests/s: ratio ${flat.toFixed(2)} (flat: <= ${FLAT_RATIO})`,
);
console.log(
  `memory (main load, every device new, reported only): window ${(mainFrom / 1000).toFixed(0)}-${((mainFrom + TTL_MS) / 1000).toFixed(0)} s median ${mib(mainFirst)} (open files up to ${filesMax(mainFrom, mainFrom + TTL_MS)}), ` +
    `last window ${((loadMs - TTL_MS) / 1000).toFixed(0)}-${(loadMs / 1000).toFixed(0)} s median ${mib(mainLast)} (open files up to ${filesMax(loadMs - TTL_MS, loadMs)}); peak ${MiB(Math.max(...loadMemory.map(([, b]) => b)))} (anonymous ${MiB(Math.max(...samples.map((x) => x.parts[0]).filter((x) => x >= 0)))}), open files up to ${filesMax(0, loadMs)}`,
);
console.log(
  `idle: after the drain workerd RSS ${MiB(beforeIdle.rss)} (anonymous ${MiB(beforeIdle.parts[0])}, file ${MiB(beforeIdle.parts[1])}, shmem ${MiB(beforeIdle.parts[2])}) with ${beforeIdle.files} open files; ` +
    `after ${IDLE_MS / 1000} s without requests ${MiB(afterIdle.rss)} (anonymous ${MiB(afterIdle.parts[0])}, file ${MiB(afterIdle.parts[1])}, shmem ${MiB(afterIdle.parts[2])}) with ${afterIdle.files} open files`,
);
if (deviations.size) {
  console.log("contract deviations (hostile requests answered otherwise than contract-9 says; reported, not failures unless 5xx or loss):");
  for (const [name, d] of deviations) console.log(`  ${name}: ${d.count}x ${[...d.seen].join(" | ")}; contract: ${JSON.stringify(d.expect)}`);
} else console.log("contract deviations: none");
for (const [what, n] of retryCauses) console.log(`503 retry_later cause: ${n}x ${what}`);
for (const [what, n] of resetCauses) console.log(`connection closed without an answer: ${n}x ${what}`);
if (resetTimes.length) {
  const ms = resetTimes.map(([x]) => x);
  const at = resetTimes.map(([, t]) => (t - loadStart) / 1000);
  console.log(
    `connections closed without an answer, time from sending to the close: min ${(Math.min(...ms) / 1000).toFixed(1)} s, p50 ${(pct(ms, 50) / 1000).toFixed(1)} s, max ${(Math.max(...ms) / 1000).toFixed(1)} s ` +
      `(${ms.filter((x) => x >= 14_500).length} after >= 14.5 s); ${resetTimes.filter(([, , reused]) => reused).length} of them on a reused connection (of all ingest attempts ${fmt(reusedSent)} of ${fmt(requestsSent)} were); at ${[...new Set(at.map((x) => Math.floor(x)))].slice(0, 30).join(", ")} s into the load`,
  );
}
// The worker's own WARN/ERROR lines, by event, with one example each.
const events = new Map();
for (const l of w.lines) {
  const m = /"level":"(WARN|ERROR)","event":"([a-z_]+)"/.exec(l);
  if (!m) continue;
  const e = events.get(`${m[1]} ${m[2]}`) ?? { n: 0, example: l.slice(0, 400) };
  e.n++;
  events.set(`${m[1]} ${m[2]}`, e);
}
for (const [name, e] of events) console.log(`worker log: ${e.n}x ${name}, e.g. ${e.example}`);
const beyondByDevice = new Map();
for (const [k, c] of delivered) {
  const extra = c - (acknowledged.get(k) ?? 1);
  if (extra > 0) beyondByDevice.set(deviceOfKey(k), (beyondByDevice.get(deviceOfKey(k)) ?? 0) + extra);
}
if (beyondByDevice.size) console.log(`deliveries beyond one per admission, by device (top 5 of ${beyondByDevice.size}): ${[...beyondByDevice].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([d, n]) => `${JSON.stringify(d)} ${n}`).join(", ")}`);
if (failures.length) {
  console.log(`FAILED: ${failures.length} check(s)`);
  for (const f of failures) if (f) console.log(`  ${f}`);
} else console.log(`OK: no unexpected 5xx, no lost readings, health answered throughout, /v1/stats exact, ${memoryChecked ? "memory flat" : "memory not checked (run too short)"}`);

// Clean up, but stop regardless: one run hung here after printing (not reproduced).
const code = failures.length ? 1 : 0;
setTimeout(() => process.exit(code), 30_000);
for (const a of Object.values(agents)) a.destroy();
originServer.closeAllConnections();
await w.mf.dispose();
await new Promise((ok) => originServer.close(ok));
fs.rmSync(dir, { recursive: true, force: true });
process.exit(code);
