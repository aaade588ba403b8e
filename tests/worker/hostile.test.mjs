// The hostile suite: one table of attacks on every route of the worker in workerd
// (Miniflare), each row a request (method, path, headers, body), the status and
// error code it must get, and what must be stored afterwards: the ledger rows of
// the devices it names (GET /v1/devices/{id}/readings) and, where nothing may be,
// no Durable Object state (no new GroupObject SQLite file in the persistence
// directory, no device registered in one). After the table the same isolate must still admit a valid burst,
// suppress its replay, and every ledger must hold exactly the rows the table
// expects. Configurations that must refuse everything run in their own worker.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { start, fixture, tempDir, databases, checkReply, TOKEN } from "../support/harness.mjs";
import { npmRunDev, npmStart } from "../support/launch.mjs";
import { mapAtMost } from "../../src/worker/fanout.js";

const dir = tempDir();
const worker = await start({ persist: dir });
after(async () => {
  await worker.mf.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});
const base = new URL(await worker.mf.ready);

// --- what is stored ---------------------------------------------------------------

/** GroupObject SQLite files: one per group object the runtime ever instantiated. */
function objectFiles() {
  if (!fs.existsSync(path.join(dir, "-GroupObject"))) return [];
  return databases(dir, "GroupObject");
}

/**
 * Devices registered in the group objects' databases: devices whose storage was
 * written. (Local workerd creates an empty database file for every object it
 * instantiates, even one that never touches its storage, and a group holds many
 * devices; what must not exist is a device's written state.)
 */
function writtenObjects() {
  const files = objectFiles();
  if (!files.length) return 0;
  const script = `import sqlite3, sys
n = 0
for f in sys.argv[1:]:
    c = sqlite3.connect("file:" + f + "?mode=ro", uri=True)
    if c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'devices'").fetchone()[0]:
        n += c.execute("SELECT count(*) FROM devices").fetchone()[0]
    c.close()
print(n)`;
  return Number(execFileSync("python3", ["-c", script, ...files], { encoding: "utf8" }).trim());
}

async function ledgerSeqs(device) {
  const res = await worker.call(`/v1/devices/${encodeURIComponent(device)}/readings?limit=1000`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200, `ledger of ${device}: ${res.status}`);
  return (await res.json()).readings.map((r) => r.seq).sort((a, b) => a - b);
}

/** device → the seqs its ledger must hold at the end (filled from the rows' `stored`). */
const expectedLedgers = new Map();

// --- requests -----------------------------------------------------------------------

/**
 * One request over a raw socket, for what fetch() cannot send: paths with dot
 * segments (fetch resolves `/%2E%2E/` itself) and a Content-Length that lies. Only
 * `send` is ever written. Resolves when the reply is complete; `closed` resolves
 * when the server has closed the connection by itself.
 */
function raw(send, to = base) {
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(to.port), to.hostname);
    const closed = new Promise((r) => s.on("close", r));
    let data = Buffer.alloc(0);
    s.on("error", reject);
    s.on("data", (d) => {
      data = Buffer.concat([data, d]);
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return;
      const [statusLine, ...lines] = data.subarray(0, end).toString("latin1").split("\r\n");
      const headers = new Headers(lines.map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]));
      const length = Number(headers.get("content-length") ?? 0);
      if (data.length < end + 4 + length) return;
      const reply = { status: Number(statusLine.split(" ")[1]), headers, text: data.subarray(end + 4, end + 4 + length).toString("utf8"), closed };
      // As every reply through the harness's `call`: checked against the OpenAPI
      // document, the path resolved as the runtime resolves it (dot segments).
      const [method, target] = send.split(" ", 2);
      try {
        checkReply({ method, url: new URL(target, to), status: reply.status, headers, body: reply.text });
      } catch (e) {
        return reject(e);
      }
      resolve(reply);
    });
    s.write(send);
  });
}

const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = { "content-type": "application/json" };

async function send(row) {
  const method = row.method ?? (row.body === undefined ? "GET" : "POST");
  if (row.raw) {
    const headers = { host: base.host, ...(row.noAuth ? {} : AUTH), ...(row.body === undefined ? {} : JSON_TYPE), ...row.headers };
    const head = [`${method} ${row.path} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    if (row.body !== undefined && !("content-length" in headers)) head.push(`content-length: ${Buffer.byteLength(row.body)}`);
    return raw(`${head.join("\r\n")}\r\n\r\n${row.body ?? ""}`);
  }
  const headers = { ...(row.noAuth ? {} : AUTH), ...(row.body === undefined ? {} : JSON_TYPE), ...row.headers };
  for (const [k, v] of Object.entries(headers)) if (v === null) delete headers[k];
  const res = await worker.call(row.path, { method, headers, body: row.body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

// --- bodies ---------------------------------------------------------------------------

const TS = "2026-07-16T09:00:00Z";
const reading = (device_id, seq, fill_pct = 50) => ({ device_id, seq, ts: TS, fill_pct });
const burst = (...readings) => JSON.stringify(readings);

/** A network server's docs sample with device `eui` and a fill level in its decoded payload. */
function uplink(format, eui, { fill = 40, edit = () => {} } = {}) {
  const [name, setEui, decoded] = {
    ttn: ["tts-v3-uplink-docs-example.json", (v) => (v.end_device_ids.dev_eui = eui), (v) => v.uplink_message.decoded_payload],
    chirpstack: ["chirpstack-v4-up-docs-example.json", (v) => (v.deviceInfo.devEui = eui), (v) => (v.object ??= {})],
    helium: ["helium-console-uplink-docs-example.json", (v) => (v.dev_eui = eui), (v) => ((v.decoded ??= { status: "success" }).payload ??= {})],
  }[format];
  const v = JSON.parse(fixture(name));
  setEui(v);
  decoded(v).fill_pct = fill;
  edit(v);
  return JSON.stringify(v);
}
/** The seq each docs sample's frame counter gives. */
const SAMPLE_SEQ = { ttn: 1, chirpstack: 0, helium: 19 };
/** A number no f64 holds, put where `marker` stands in `json`. */
const overflow = (json, marker = 424242.5) => json.replace(String(marker), "1e400");

const nested = (depth) => "[".repeat(depth) + "]".repeat(depth);
const manyDevices = (n, prefix) => burst(...Array.from({ length: n }, (_, i) => reading(`${prefix}-${i}`, 1)));
const LONG = "d".repeat(10_000);

// --- the table -------------------------------------------------------------------------
// status, code: the reply; stored: {device: [seqs]} that device's whole ledger after
// the row; objects: "none" (no object even instantiated) or "unwritten" (no object
// storage written); check(reply, json): anything else the row must hold.

const noBody = (r) => assert.equal(r.text, "", "HEAD has no body");
const allow = (value) => (r) => assert.equal(r.headers.get("allow"), value);
const admitted = (n) => (r, j) => assert.equal(j.unique, n, r.text);
const rejectedAs = (...codes) => (r, j) => assert.deepEqual(j.rejected.map((x) => x.code), codes, r.text);

const ROWS = [
  // health: public, GET and HEAD only
  { name: "health", path: "/v1/health", noAuth: true, status: 200, check: (r, j) => assert.deepEqual(j, { ok: true }) },
  { name: "health HEAD", method: "HEAD", path: "/v1/health", noAuth: true, status: 200, check: noBody },
  { name: "health with a trailing slash", path: "/v1/health/", noAuth: true, status: 200 },
  { name: "health POST", method: "POST", path: "/v1/health", noAuth: true, body: "{}", status: 405, code: "method_not_allowed", check: allow("GET, HEAD") },
  { name: "health DELETE", method: "DELETE", path: "/v1/health", noAuth: true, status: 405, code: "method_not_allowed", check: allow("GET, HEAD") },

  // auth
  { name: "no token", path: "/v1/readings", noAuth: true, body: burst(reading("h-auth-1", 1)), status: 401, code: "unauthorized", stored: { "h-auth-1": [] } },
  { name: "wrong token", path: "/v1/readings", headers: { authorization: `Bearer ${TOKEN}x` }, body: burst(reading("h-auth-2", 1)), status: 401, code: "unauthorized", stored: { "h-auth-2": [] } },
  { name: "token prefix", path: "/v1/readings", headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}` }, body: burst(reading("h-auth-3", 1)), status: 401, code: "unauthorized" },
  { name: "empty bearer", path: "/v1/readings", headers: { authorization: "Bearer    " }, body: burst(reading("h-auth-4", 1)), status: 401, code: "unauthorized" },
  { name: "Basic auth with the token as password", path: "/v1/readings", headers: { authorization: `Basic ${btoa(`user:${TOKEN}`)}` }, body: burst(reading("h-auth-5", 1)), status: 200, check: admitted(1), stored: { "h-auth-5": [1] } },
  { name: "Basic auth with the bare token", path: "/v1/readings", headers: { authorization: `Basic ${TOKEN}` }, body: burst(reading("h-auth-6", 1)), status: 401, code: "unauthorized" },
  { name: "bare token in Authorization", path: "/v1/readings", headers: { authorization: TOKEN }, body: burst(reading("h-auth-7", 1)), status: 401, code: "unauthorized" },
  { name: "token in the query", path: `/v1/readings?token=${TOKEN}`, noAuth: true, body: burst(reading("h-auth-8", 1)), status: 401, code: "unauthorized" },
  { name: "token as Host header (default AUTH_HEADER)", raw: true, path: "/v1/readings", noAuth: true, headers: { host: TOKEN }, body: burst(reading("h-auth-9", 1)), status: 401, code: "unauthorized", stored: { "h-auth-9": [] } },
  { name: "two bearer tokens", path: "/v1/readings", headers: { authorization: `Bearer ${TOKEN}, Bearer x` }, body: burst(reading("h-auth-13", 1)), status: 401, code: "unauthorized", stored: { "h-auth-13": [] } },
  { name: "a 10 kB token", path: "/v1/readings", headers: { authorization: `Bearer ${"t".repeat(10_000)}` }, body: burst(reading("h-auth-14", 1)), status: 401, code: "unauthorized" },
  { name: "the token in x-ingest-token while AUTH_HEADER is authorization", path: "/v1/readings", headers: { authorization: null, "x-ingest-token": TOKEN }, body: burst(reading("h-auth-15", 1)), status: 401, code: "unauthorized", stored: { "h-auth-15": [] } },
  { name: "token with spaces around it", path: "/v1/readings", headers: { authorization: `Bearer   ${TOKEN}   ` }, body: burst(reading("h-auth-10", 1)), status: 200, check: admitted(1), stored: { "h-auth-10": [1] } },
  { name: "scheme in lower case", path: "/v1/readings", headers: { authorization: `bearer ${TOKEN}` }, body: burst(reading("h-auth-11", 1)), status: 200, stored: { "h-auth-11": [1] } },
  { name: "stats without token", path: "/v1/stats", noAuth: true, status: 401, code: "unauthorized" },
  { name: "metrics without token", path: "/v1/metrics", noAuth: true, status: 401, code: "unauthorized" },
  { name: "ledger without token", path: "/v1/devices/h-auth-12/readings", noAuth: true, status: 401, code: "unauthorized", objects: "none" },
  { name: "redrive without token", method: "POST", path: "/v1/devices/h-auth-13/redrive", noAuth: true, body: "", status: 401, code: "unauthorized", objects: "none" },
  { name: "redrive GET", path: "/v1/devices/h-auth-13/redrive", status: 405, code: "method_not_allowed", check: allow("POST"), objects: "none" },
  { name: "redrive of a NUL device id", method: "POST", path: "/v1/devices/h%00x/redrive", body: "", status: 400, code: "invalid_device_id", objects: "none" },
  { name: "redrive of a device that never reported", method: "POST", path: "/v1/devices/h-never-13/redrive", body: "", status: 200, objects: "none" },
  { name: "redrive with 1001 keys", method: "POST", path: `/v1/devices/h-never-13/redrive?${"key=k&".repeat(1001)}`, body: "", status: 400, code: "invalid_query", objects: "none" },
  // operator controls and health (operator.test.mjs drives what they do)
  { name: "forget without token", path: "/v1/devices/h-auth-13/forget", noAuth: true, body: JSON.stringify({ key: "h-auth-13:1:0000000000000000" }), status: 401, code: "unauthorized", objects: "none" },
  { name: "reset without token", method: "POST", path: "/v1/devices/h-auth-13/reset", noAuth: true, body: "", status: 401, code: "unauthorized", objects: "none" },
  { name: "history without token", path: "/v1/devices/h-auth-13/history", noAuth: true, status: 401, code: "unauthorized", objects: "none" },
  { name: "fleet health without token", path: "/v1/devices/health?format=csv", noAuth: true, status: 401, code: "unauthorized", objects: "none" },
  { name: "reset GET", path: "/v1/devices/h-auth-13/reset", status: 405, code: "method_not_allowed", check: allow("POST"), objects: "none" },
  { name: "forget of a NUL device id", path: "/v1/devices/h%00x/forget", body: JSON.stringify({ key: "k" }), status: 400, code: "invalid_device_id", objects: "none" },
  { name: "forget of a device that never reported", path: "/v1/devices/h-never-13/forget", body: JSON.stringify({ key: "h-never-13:1:0000000000000000" }), status: 404, code: "unknown_device", objects: "none" },
  { name: "reset of a device that never reported", method: "POST", path: "/v1/devices/h-never-13/reset", body: "", status: 404, code: "unknown_device", objects: "none" },
  { name: "forget with a key array", path: "/v1/devices/h-never-13/forget", body: JSON.stringify({ key: ["k"] }), status: 400, code: "invalid_forget_body", objects: "none" },
  { name: "history of a device that never reported", path: "/v1/devices/h-never-13/history", status: 200, objects: "none" },
  { name: "history with after=-1", path: "/v1/devices/h-never-13/history?after=-1", status: 400, code: "invalid_query", objects: "none" },
  { name: "health of a device that never reported", path: "/v1/devices/h-never-13/health", status: 200, objects: "none" },
  { name: "fleet health with format=xml", path: "/v1/devices/health?format=xml", status: 400, code: "invalid_query", objects: "none" },

  // webhooks
  ...["ttn", "chirpstack", "helium"].map((f, i) => ({
    name: `${f}: a sample with a fill level`,
    path: `/v1/uplinks/${f}${f === "chirpstack" ? "?event=up" : ""}`,
    body: uplink(f, `A00000000000000${i}`),
    status: 200,
    check: admitted(1),
    stored: { [`A00000000000000${i}`]: [SAMPLE_SEQ[f]] },
  })),
  ...["UP", "Up"].map((e, i) => ({
    name: `chirpstack ?event=${e} is an uplink`,
    path: `/v1/uplinks/chirpstack?event=${e}`,
    body: uplink("chirpstack", `B00000000000000${i}`),
    status: 200,
    check: admitted(1),
    stored: { [`B00000000000000${i}`]: [0] },
  })),
  { name: "chirpstack without ?event is an uplink", path: "/v1/uplinks/chirpstack", body: uplink("chirpstack", "B000000000000002"), status: 200, stored: { B000000000000002: [0] } },
  ...["join", "JOIN", "ack", "txack", "log", "status", "location", "integration"].map((e, i) => ({
    name: `chirpstack ?event=${e} is acknowledged, nothing stored`,
    path: `/v1/uplinks/chirpstack?event=${e}`,
    body: uplink("chirpstack", `C00000000000000${i}`),
    status: 200,
    check: (_, body) => assert.deepEqual([body.ignored, body.route, body.event], [true, "chirpstack", e.toLowerCase()]),
    stored: { [`C00000000000000${i}`]: [] },
  })),
  ...["bogus", "", "up,join"].map((e, i) => ({
    name: `chirpstack ?event=${JSON.stringify(e)} is refused`,
    path: `/v1/uplinks/chirpstack?event=${e}`,
    body: uplink("chirpstack", `D00000000000000${i}`),
    status: 400,
    code: "unknown_event",
    check: (r, j) => assert.match(j.error.message, /up, join, ack, txack, log, status, location, integration/),
    stored: { [`D00000000000000${i}`]: [] },
  })),
  { name: "chirpstack ?event given twice is refused", path: "/v1/uplinks/chirpstack?event=join&event=up", body: uplink("chirpstack", "D000000000000010"), status: 400, code: "unknown_event", check: (r, j) => assert.match(j.error.message, /event is given more than once/), stored: { D000000000000010: [] } },
  { name: "chirpstack ?event=up given twice is refused", path: "/v1/uplinks/chirpstack?event=up&event=up", body: uplink("chirpstack", "D000000000000011"), status: 400, code: "unknown_event", stored: { D000000000000011: [] } },
  { name: "chirpstack Protobuf", path: "/v1/uplinks/chirpstack?event=up", headers: { "content-type": "application/octet-stream" }, body: "\x0a\x01", status: 415, code: "unsupported_media_type" },
  { name: "the things stack Protobuf webhook format", path: "/v1/uplinks/ttn", headers: { "content-type": "application/x-protobuf" }, body: "\x0a\x01", status: 415, code: "unsupported_media_type", check: (_, b) => assert.match(b.error.message, /webhook format/) },
  { name: "ttn: 1e400 in rx_metadata[].rssi is ignored", path: "/v1/uplinks/ttn", body: overflow(uplink("ttn", "E000000000000000", { edit: (v) => (v.uplink_message.rx_metadata[0].rssi = 424242.5) })), status: 200, check: admitted(1), stored: { E000000000000000: [1] } },
  { name: "ttn: 1e400 in rx_metadata[].snr is ignored", path: "/v1/uplinks/ttn", body: overflow(uplink("ttn", "E000000000000001", { edit: (v) => (v.uplink_message.rx_metadata[0].snr = 424242.5) })), status: 200, check: admitted(1), stored: { E000000000000001: [1] } },
  { name: "ttn: 1e400 as fill_pct rejects that reading", path: "/v1/uplinks/ttn", body: overflow(uplink("ttn", "E000000000000002", { fill: 424242.5 })), status: 200, check: rejectedAs("invalid_fill_pct"), stored: { E000000000000002: [] } },
  { name: "ttn: 1e400 as f_cnt rejects that reading", path: "/v1/uplinks/ttn", body: overflow(uplink("ttn", "E000000000000003", { edit: (v) => (v.uplink_message.f_cnt = 424242.5) })), status: 200, check: rejectedAs("invalid_seq"), stored: { E000000000000003: [] } },
  { name: "ttn: end_device_ids twice", path: "/v1/uplinks/ttn", body: uplink("ttn", "E000000000000004").replace('{"end_device_ids":', '{"end_device_ids":{"dev_eui":"E000000000000005"},"end_device_ids":'), status: 400, code: "invalid_json", check: (r, j) => assert.match(j.error.message, /member "end_device_ids" appears twice/), stored: { E000000000000004: [], E000000000000005: [] } },
  { name: "helium: a lone surrogate", path: "/v1/uplinks/helium", body: uplink("helium", "E000000000000006").replace('"app_eui":"', '"app_eui":"\\ud800'), status: 400, code: "invalid_json", check: (r, j) => assert.match(j.error.message, /lone surrogate.*line \d+.*column \d+/), stored: { E000000000000006: [] } },
  { name: "loriot: not JSON", path: "/v1/uplinks/loriot", body: "cmd=rx", status: 400, code: "invalid_json" },
  { name: "uplink GET", path: "/v1/uplinks/ttn", status: 405, code: "method_not_allowed", check: allow("POST") },
  { name: "uplink HEAD", method: "HEAD", path: "/v1/uplinks/ttn", status: 405, check: allow("POST") },
  { name: "unknown network server", path: "/v1/uplinks/everynet", body: "{}", status: 404, code: "not_found" },
  { name: "network server in upper case", path: "/v1/uplinks/TTN", body: "{}", status: 404, code: "not_found" },
  { name: "the native format is not an uplink route", path: "/v1/uplinks/readings", body: burst(reading("h-up-1", 1)), status: 404, code: "not_found", stored: { "h-up-1": [] } },

  // native bursts: shapes
  { name: "not JSON", path: "/v1/readings", body: "hello", status: 400, code: "invalid_json" },
  { name: "empty body", path: "/v1/readings", body: "", status: 400, code: "invalid_json" },
  { name: "null", path: "/v1/readings", body: "null", status: 400, code: "invalid_burst" },
  { name: "a string", path: "/v1/readings", body: '"readings"', status: 400, code: "invalid_burst" },
  { name: "a number", path: "/v1/readings", body: "42", status: 400, code: "invalid_burst" },
  { name: "readings: null", path: "/v1/readings", body: '{"readings":null}', status: 400, code: "invalid_burst" },
  { name: "an empty burst", path: "/v1/readings", body: "[]", status: 200, check: (r, j) => assert.equal(j.received, 0) },
  { name: "null elements", path: "/v1/readings", body: "[null, 1, []]", status: 200, check: rejectedAs("invalid_reading", "invalid_reading", "invalid_reading") },
  { name: "trailing garbage", path: "/v1/readings", body: `${burst(reading("h-n-1", 1))} x`, status: 400, code: "invalid_json", stored: { "h-n-1": [] } },
  { name: "deep nesting as the body", path: "/v1/readings", body: nested(100_000), status: 400, code: "invalid_json" },
  { name: "deep nesting in an ignored member", path: "/v1/readings", body: burst({ ...reading("h-n-2", 1), extra: "@" }).replace('"@"', nested(5_000)), status: 400, code: "invalid_json", stored: { "h-n-2": [] } },
  { name: "huge seq", path: "/v1/readings", body: burst(reading("h-n-3", 2 ** 53), reading("h-n-3", 2)), status: 200, check: rejectedAs("invalid_seq"), stored: { "h-n-3": [2] } },
  { name: "1e400 as seq rejects that reading only", path: "/v1/readings", body: overflow(burst(reading("h-n-4", 424242.5), reading("h-n-4", 2))), status: 200, check: rejectedAs("invalid_seq"), stored: { "h-n-4": [2] } },
  { name: "1e400 as fill_pct rejects that reading only", path: "/v1/readings", body: overflow(burst(reading("h-n-5", 1, 424242.5), reading("h-n-5", 2))), status: 200, check: rejectedAs("invalid_fill_pct"), stored: { "h-n-5": [2] } },
  { name: "1e400 in an ignored member is ignored", path: "/v1/readings", body: overflow(burst({ ...reading("h-n-6", 1), rssi: 424242.5 })), status: 200, check: admitted(1), stored: { "h-n-6": [1] } },
  { name: "fill_pct twice in a reading rejects that reading", path: "/v1/readings", body: burst(reading("h-n-7", 1), reading("h-n-7", 2)).replace('"fill_pct":50}]', '"fill_pct":10,"fill_pct":90}]'), status: 200, check: (r, j) => { rejectedAs("invalid_reading")(r, j); assert.match(j.rejected[0].message, /member "fill_pct" appears twice/); }, stored: { "h-n-7": [1] } },
  { name: "readings twice", path: "/v1/readings", body: `{"readings":${burst(reading("h-n-8", 1))},"readings":${burst(reading("h-n-9", 1))}}`, status: 400, code: "invalid_json", check: (r, j) => assert.match(j.error.message, /member "readings" appears twice/), stored: { "h-n-8": [], "h-n-9": [] } },
  { name: "a lone surrogate in a device id", path: "/v1/readings", body: burst(reading("h-n-10@", 1)).replace("@", "\\ud800"), status: 400, code: "invalid_json", check: (r, j) => assert.match(j.error.message, /lone surrogate/), stored: { "h-n-10": [] } },
  { name: "a lone low surrogate in an ignored member", path: "/v1/readings", body: burst({ ...reading("h-n-11", 1), note: "@" }).replace("@", "\\udc00"), status: 400, code: "invalid_json", check: (r, j) => assert.match(j.error.message, /lone surrogate/), stored: { "h-n-11": [] } },
  { name: "device id ..", path: "/v1/readings", body: burst(reading("..", 1), reading("h-n-12", 1)), status: 200, check: rejectedAs("invalid_device_id"), stored: { "h-n-12": [1] } },
  { name: "device id .", path: "/v1/readings", body: burst(reading(".", 1)), status: 200, check: rejectedAs("invalid_device_id") },
  { name: "device id of 128 bytes is admitted", path: "/v1/readings", body: burst(reading("é".repeat(64), 1)), status: 200, check: admitted(1), stored: { ["é".repeat(64)]: [1] } },
  { name: "device id of 129 bytes", path: "/v1/readings", body: burst(reading(`x${"é".repeat(64)}`, 1)), status: 200, check: rejectedAs("invalid_device_id") },
  { name: "device id with a slash is admitted and read back", path: "/v1/readings", body: burst(reading("h/slash", 1)), status: 200, check: admitted(1), stored: { "h/slash": [1] } },
  { name: "device id of 10 kB", path: "/v1/readings", body: burst(reading(LONG, 1)), status: 200, check: rejectedAs("invalid_device_id"), objects: "none" },
  { name: "device id with NUL", path: "/v1/readings", body: burst(reading("h\u0000x", 1)), status: 200, check: rejectedAs("invalid_device_id"), objects: "none" },
  // Ids that print as another (before, each was a device of its own beside "h-n-13"):
  // Default_Ignorable code points outside Cf, NFD, white space at either end.
  ...["\u034F", "\uFE0F", "\u3164", "\u115F", "\u17B4", "\u180B", "\u{E0100}"].map((c) => ({ name: `device id with U+${c.codePointAt(0).toString(16).toUpperCase()}`, path: "/v1/readings", body: burst(reading(`h-n-1${c}3`, 1)), status: 200, check: rejectedAs("invalid_device_id"), objects: "none" })),
  { name: "device id in NFD", path: "/v1/readings", body: burst(reading("h-cafe\u0301", 1), reading("h-caf\u00e9", 1)), status: 200, check: rejectedAs("invalid_device_id"), stored: { "h-caf\u00e9": [1] } },
  { name: "device id with a trailing space", path: "/v1/readings", body: burst(reading("h-n-13 ", 1)), status: 200, check: rejectedAs("invalid_device_id"), objects: "none" },
  { name: "device id with a leading no-break space", path: "/v1/readings", body: burst(reading("\u00a0h-n-13", 1)), status: 200, check: rejectedAs("invalid_device_id"), objects: "none" },
  { name: "ledger of an NFD name", path: `/v1/devices/${encodeURIComponent("h-cafe\u0301")}/readings`, status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger of a name with a trailing space", path: "/v1/devices/h-n-13%20/readings", status: 400, code: "invalid_device_id", objects: "none" },

  // native bursts: media types, methods, sizes, counts
  { name: "text/plain", path: "/v1/readings", headers: { "content-type": "text/plain" }, body: burst(reading("h-m-1", 1)), status: 415, code: "unsupported_media_type", stored: { "h-m-1": [] } },
  { name: "no content type", path: "/v1/readings", headers: { "content-type": null }, body: burst(reading("h-m-2", 1)), status: 415, code: "unsupported_media_type" },
  { name: "form encoded", path: "/v1/readings", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "a=1", status: 415, code: "unsupported_media_type" },
  { name: "JSON with a charset", path: "/v1/readings", headers: { "content-type": "application/json; charset=utf-8" }, body: burst(reading("h-m-3", 1)), status: 200, stored: { "h-m-3": [1] } },
  { name: "a +json type", path: "/v1/readings", headers: { "content-type": "application/vnd.api+json" }, body: burst(reading("h-m-4", 1)), status: 200, stored: { "h-m-4": [1] } },
  { name: "JSON in upper case", path: "/v1/readings", headers: { "content-type": "APPLICATION/JSON" }, body: burst(reading("h-m-5", 1)), status: 200, stored: { "h-m-5": [1] } },
  { name: "readings GET", path: "/v1/readings", status: 405, code: "method_not_allowed", check: allow("POST") },
  { name: "readings PUT", method: "PUT", path: "/v1/readings", body: burst(reading("h-m-6", 1)), status: 405, code: "method_not_allowed", check: allow("POST"), stored: { "h-m-6": [] } },
  { name: "readings DELETE", method: "DELETE", path: "/v1/readings", status: 405, check: allow("POST") },
  { name: "readings OPTIONS", method: "OPTIONS", path: "/v1/readings", status: 405, check: allow("POST") },
  { name: "a body over MAX_BODY_BYTES", path: "/v1/readings", body: `[${" ".repeat(1024 * 1024)}]`, status: 413, code: "body_too_large" },
  { name: "a chunked body over MAX_BODY_BYTES", raw: true, path: "/v1/readings", headers: { "transfer-encoding": "chunked" }, body: `100001\r\n[${" ".repeat(0x100000 - 1)}]\r\n0\r\n\r\n`, status: 413, code: "body_too_large" },
  { name: "10 001 readings", path: "/v1/readings", body: burst(...Array.from({ length: 10_001 }, (_, i) => reading("h-m-7", i))), status: 413, code: "too_many_readings", stored: { "h-m-7": [] } },
  { name: "2 000 devices in one POST", path: "/v1/readings", body: manyDevices(2000, "h-fan"), status: 413, code: "too_many_devices", objects: "none" },
  { name: "101 devices in one POST", path: "/v1/readings", body: manyDevices(101, "h-fan101"), status: 413, code: "too_many_devices", objects: "none" },
  { name: "101 devices, one only with refused readings", path: "/v1/readings", body: burst(...JSON.parse(manyDevices(100, "h-fanr")), reading("h-fanr-x", 1, 101)), status: 413, code: "too_many_devices", objects: "none" },
  { name: "100 devices in one POST", path: "/v1/readings", body: manyDevices(100, "h-fan100"), status: 200, check: admitted(100), stored: { "h-fan100-0": [1], "h-fan100-99": [1] } },
  // The reply comes before the body, and the server closes the connection itself
  // (the client never sends the rest: a held connection would hang the row).
  ...[
    ["a Content-Length above the limit with a small body", {}, 413, "body_too_large"],
    ["a Content-Length lie with a wrong token", { authorization: "Bearer nope" }, 401, "unauthorized"],
    ["a Content-Length lie to health", {}, 405, "method_not_allowed", "/v1/health"],
    ["a Content-Length lie to an unknown route", {}, 404, "not_found", "/v1/nope"],
  ].map(([name, headers, status, code, p = "/v1/readings"], i) => ({
    name,
    raw: true,
    path: p,
    headers: { ...headers, "content-length": "2000000" },
    body: burst(reading(`h-cl-${i}`, 1)),
    status,
    code,
    check: (r) => r.closed,
    stored: { [`h-cl-${i}`]: [] },
  })),

  // the ledger
  { name: "ledger of an admitted device", path: "/v1/devices/h-m-3/readings", status: 200, check: (r, j) => assert.deepEqual([j.device_id, j.readings.length, j.next], ["h-m-3", 1, null]) },
  { name: "ledger HEAD", method: "HEAD", path: "/v1/devices/h-m-3/readings", status: 200, check: (r) => { noBody(r); assert.match(r.headers.get("content-type"), /application\/json/); } },
  { name: "ledger POST", path: "/v1/devices/h-m-3/readings", body: "{}", status: 405, code: "method_not_allowed", check: allow("GET, HEAD") },
  { name: "ledger of %00", path: "/v1/devices/%00/readings", status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger of a 10 kB name", path: `/v1/devices/${LONG}/readings`, status: 400, code: "invalid_device_id", objects: "none" },
  // The runtime resolves dot segments before the worker runs (as Cloudflare's URL
  // normalisation does): no path can name the device "..", hence the core refuses it.
  { name: "ledger of %2E%2E is GET /v1/readings", raw: true, path: "/v1/devices/%2E%2E/readings", status: 405, code: "method_not_allowed", check: allow("POST"), objects: "none" },
  { name: "ledger of a literal .. is GET /v1/readings", raw: true, path: "/v1/devices/../readings", status: 405, code: "method_not_allowed", objects: "none" },
  { name: "ledger of %2e is /v1/devices/readings", raw: true, path: "/v1/devices/%2e/readings", status: 404, code: "not_found", objects: "none" },
  { name: "ledger of a 128-byte name", path: `/v1/devices/${encodeURIComponent("é".repeat(64))}/readings`, status: 200, check: (r, j) => assert.equal(j.readings.length, 1) },
  { name: "ledger of a 129-byte name", path: `/v1/devices/${encodeURIComponent(`x${"é".repeat(64)}`)}/readings`, status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger of a name with a control character", path: "/v1/devices/h%1Fx/readings", status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger of an empty name", path: "/v1/devices//readings", status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger of bad percent-encoding", path: "/v1/devices/%FF/readings", status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger of an encoded surrogate", path: "/v1/devices/%ED%A0%80/readings", status: 400, code: "invalid_device_id", objects: "none" },
  { name: "ledger limit=0", path: "/v1/devices/h-m-3/readings?limit=0", status: 400, code: "invalid_query" },
  { name: "ledger limit=abc", path: "/v1/devices/h-m-3/readings?limit=abc", status: 400, code: "invalid_query" },
  { name: "ledger after=-1", path: "/v1/devices/h-m-3/readings?after=-1", status: 400, code: "invalid_query" },
  { name: "ledger limit=1001", path: "/v1/devices/h-m-3/readings?limit=1001", status: 400, code: "invalid_query" },
  { name: "ledger limit=1.5", path: "/v1/devices/h-m-3/readings?limit=1.5", status: 400, code: "invalid_query" },
  { name: "ledger after=1e400", path: "/v1/devices/h-m-3/readings?after=1e400", status: 400, code: "invalid_query" },
  ...["limit=1e3", "limit=0x10", "limit=+5", "limit= 5", "after=", "after=9e99", "after=1.0", "after=99999999999999999999", "limit=1&limit=2000", "limit=5&limit=5", "after=0&after=1"].map((q) => ({
    name: `ledger ${q}`,
    path: `/v1/devices/h-m-3/readings?${q}`,
    status: 400,
    code: "invalid_query",
  })),
  { name: "ledger limit with leading zeros is decimal", path: "/v1/devices/h-m-3/readings?limit=010&after=00", status: 200, check: (r, j) => assert.equal(j.readings.length, 1) },
  { name: "ledger of a valid name that never reported", path: "/v1/devices/h-never/readings", status: 200, check: (r, j) => assert.deepEqual(j, { device_id: "h-never", readings: [], next: null }), objects: "none" },
  { name: "ledger HEAD of a valid name that never reported", method: "HEAD", path: "/v1/devices/h-never-2/readings", status: 200, check: noBody, objects: "none" },
  { name: "ledger with a path after readings", path: "/v1/devices/h-m-3/readings/x", status: 404, code: "not_found" },

  // stats, unknown routes, the static fallback
  { name: "stats", path: "/v1/stats", status: 200, check: (r, j) => assert.equal(typeof j.devices, "number") },
  { name: "stats HEAD", method: "HEAD", path: "/v1/stats", status: 200, check: noBody },
  { name: "stats PATCH", method: "PATCH", path: "/v1/stats", body: "{}", status: 405, code: "method_not_allowed", check: allow("GET, HEAD") },
  { name: "stats POST", path: "/v1/stats", body: "{}", status: 405, code: "method_not_allowed", check: allow("GET, HEAD") },
  { name: "metrics", path: "/v1/metrics", status: 200, check: (r) => assert.match(r.text, /^# HELP reconnect_dedupe_/) },
  { name: "metrics HEAD", method: "HEAD", path: "/v1/metrics", status: 200, check: noBody },
  { name: "metrics POST", path: "/v1/metrics", body: "{}", status: 405, code: "method_not_allowed", check: allow("GET, HEAD") },
  { name: "unknown /v1 route", path: "/v1/nope", status: 404, code: "not_found" },
  { name: "unknown /v1 route without token", path: "/v1/nope", noAuth: true, status: 401, code: "unauthorized" },
  { name: "/v1/devices/{id} without /readings", path: "/v1/devices/h-m-3", status: 404, code: "not_found" },
  { name: "static fallback", path: "/nope.html", noAuth: true, status: 404, code: "not_found" },
  { name: "static fallback HEAD", method: "HEAD", path: "/nope.html", noAuth: true, status: 404, check: noBody },
  { name: "/v1 itself", path: "/v1", status: 404, code: "not_found" },
  { name: "/V1/health is not a route", path: "/V1/health", noAuth: true, status: 404, code: "not_found" },
];

for (const row of ROWS) {
  for (const [device, seqs] of Object.entries(row.stored ?? {})) expectedLedgers.set(device, [...(expectedLedgers.get(device) ?? []), ...seqs]);
  test(`hostile: ${row.name} → ${row.status}${row.code ? ` ${row.code}` : ""}`, async () => {
    const files = objectFiles().length;
    const written = row.objects === "unwritten" ? writtenObjects() : 0;
    const reply = await send(row);
    let body = null;
    if (reply.text && /json/.test(reply.headers.get("content-type") ?? "")) body = JSON.parse(reply.text);
    assert.equal(reply.status, row.status, reply.text.slice(0, 300));
    if (row.code) assert.equal(body?.error?.code, row.code, reply.text.slice(0, 300));
    else if (row.status < 400 && body) assert.equal(body.error, undefined);
    if (row.status === 200 && Array.isArray(body?.rejected)) {
      assert.equal(body.received, body.unique + body.duplicates_suppressed + body.rejected.length, "the reply reconciles");
    }
    await row.check?.(reply, body);
    if (row.objects === "none") assert.equal(objectFiles().length, files, "no group object was contacted");
    if (row.objects === "unwritten") assert.equal(writtenObjects(), written, "no device storage was written");
    for (const [device, seqs] of Object.entries(row.stored ?? {})) {
      assert.deepEqual(await ledgerSeqs(device), expectedLedgers.get(device).toSorted((a, b) => a - b), `ledger of ${device}`);
    }
  });
}

/** Every file of the GroupObject class in the persistence directory (-wal, -shm included). */
function allObjectFiles() {
  const at = path.join(dir, "-GroupObject");
  return fs.existsSync(at) ? fs.readdirSync(at).sort() : [];
}

test("hostile: 50 reads of devices that never reported create no file at all", async () => {
  // Local workerd gives every Durable Object it starts a database file (and -wal,
  // -shm), even one that never touches its storage: a read must not start the object.
  const files = allObjectFiles();
  for (let i = 0; i < 50; i++) {
    const res = await worker.call(`/v1/devices/h-ghost-${i}/readings`, { headers: AUTH });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { device_id: `h-ghost-${i}`, readings: [], next: null });
  }
  assert.deepEqual(allObjectFiles(), files);
});

test("hostile: a device's ledger is readable right after its first ingest (read-your-writes)", async () => {
  for (let i = 0; i < 5; i++) {
    const device = `h-ryw-${i}`;
    const res = await send({ path: "/v1/readings", body: burst(reading(device, 7)) });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(await ledgerSeqs(device), [7]);
  }
});

test("hostile: a client that disconnects mid-body gets 400 body_incomplete, a WARN line, no unhandled error", async () => {
  const before = worker.lines.length;
  const partial = '{"readings":[]';
  const reply = await new Promise((resolve, reject) => {
    const s = net.connect(Number(base.port), base.hostname);
    let data = "";
    s.on("error", reject);
    s.on("data", (d) => (data += d));
    s.on("close", () => resolve(data));
    s.write(`POST /v1/readings HTTP/1.1\r\nhost: ${base.host}\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 1500\r\n\r\n${partial}`);
    s.end(); // the client sends no more (half-close): the body ends 1485 bytes short
  });
  const logged = worker.lines.slice(before).filter((l) => l.startsWith("{"));
  assert.deepEqual(logged.filter((l) => /"unhandled"|"ERROR"/.test(l)), [], "no ERROR line");
  assert.match(reply, /^HTTP\/1\.1 400 /, reply.slice(0, 300));
  assert.match(reply, /"code":"body_incomplete"/);
  assert.match(reply, /before its declared length|connection was lost/);
  const warn = logged.map((l) => JSON.parse(l)).filter((l) => l.event === "body_incomplete");
  assert.equal(warn.length, 1, logged.join("\n"));
  assert.equal(warn[0].level, "WARN");
  assert.equal(JSON.stringify(warn[0]).includes("stack"), false);
});

test("hostile: after the table the same isolate admits a burst, suppresses its replay, and every ledger is exact", async () => {
  const fresh = burst(reading("h-after", 1, 10), reading("h-after", 2, 20), reading("h-m-3", 2, 30));
  const first = await send({ path: "/v1/readings", body: fresh });
  assert.equal(first.status, 200);
  assert.equal(JSON.parse(first.text).unique, 3);
  const replay = JSON.parse((await send({ path: "/v1/readings", body: fresh })).text);
  assert.deepEqual([replay.unique, replay.duplicates], [0, [0, 1, 2]]);
  expectedLedgers.set("h-after", [1, 2]);
  expectedLedgers.get("h-m-3").push(2);
  for (const [device, seqs] of expectedLedgers) {
    assert.deepEqual(await ledgerSeqs(device), seqs.toSorted((a, b) => a - b), `ledger of ${device}`);
  }
  assert.deepEqual(JSON.parse((await send({ path: "/v1/health", noAuth: true })).text), { ok: true });
});

// --- configurations that must refuse every route ------------------------------------------

/** Every route of a worker started with `vars` answers `status` `code`; the message matches `message`. */
async function refusesEverything(vars, status, code, message) {
  const w = await start({ vars });
  try {
    const requests = [
      ["/v1/health", {}],
      ["/v1/health", { method: "HEAD" }],
      ["/v1/readings", { method: "POST", headers: { ...AUTH, ...JSON_TYPE, host: TOKEN }, body: burst(reading("h-cfg", 1)) }],
      ["/v1/uplinks/ttn", { method: "POST", headers: { ...AUTH, ...JSON_TYPE }, body: uplink("ttn", "F000000000000000") }],
      ["/v1/stats", { headers: AUTH }],
      ["/v1/metrics", { headers: AUTH }],
      ["/v1/devices/h-cfg/readings", { headers: AUTH }],
      ["/v1/nope", { headers: AUTH }],
    ];
    for (const [p, init] of requests) {
      const res = await w.call(p, init);
      assert.equal(res.status, status, `${init.method ?? "GET"} ${p}`);
      if (init.method === "HEAD") continue;
      const err = (await res.json()).error;
      assert.equal(err.code, code, `${p}: ${err.message}`);
      assert.match(err.message, message);
    }
    // fetch() sets Host itself: the token as the Host header, and nothing else, goes raw.
    const body = burst(reading("h-cfg", 1));
    const host = await raw(
      `POST /v1/readings HTTP/1.1\r\nhost: ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      new URL(await w.mf.ready),
    );
    assert.equal(host.status, status, `Host: <token> ${host.text}`);
    assert.equal(JSON.parse(host.text).error.code, code);
  } finally {
    await w.mf.dispose();
  }
}

for (const header of ["host", "Host", "x token", "x-ingest-token:", "content-length", "x-forwarded-for", "cf-connecting-ip", "proxy-authorization", "cookie", "connection", "accept-encoding", "sec-fetch-mode", "Sec-WebSocket-Key", "x-client-ip", "date", "range", "if-match", "If-None-Match"]) {
  test(`hostile config: AUTH_HEADER=${JSON.stringify(header)} → every route 500 invalid_config`, async () => {
    await refusesEverything({ AUTH_HEADER: header }, 500, "invalid_config", /AUTH_HEADER/);
  });
}

test("hostile config: a token of spaces → every route 503 auth_not_configured", async () => {
  await refusesEverything({ INGEST_TOKEN: "   " }, 503, "auth_not_configured", /INGEST_TOKEN/);
});

for (const [what, token] of [["a newline", "Qz7tok\nXk9val"], ["non-ASCII", "tök€n"], ["a space inside", "Qz7tok Xk9val"], ["a tab inside", "Qz7tok\tXk9val"], ["DEL", "Qz7tokXk9val\u007f"]]) {
  test(`hostile config: INGEST_TOKEN with ${what} → every route 500 invalid_config, the token not echoed`, async () => {
    await refusesEverything({ INGEST_TOKEN: token }, 500, "invalid_config", /^INGEST_TOKEN must be printable ASCII/);
    const w = await start({ vars: { INGEST_TOKEN: token } });
    try {
      const text = await (await w.call("/v1/health")).text();
      for (const part of token.split(/[\s\u007f]/).filter(Boolean)) assert.equal(text.includes(part), false, `${text} echoes the token`);
    } finally {
      await w.mf.dispose();
    }
  });
}

for (const [name, value] of [["MAX_BODY_BYTES", "0x10"], ["MAX_BODY_BYTES", "1e2"], ["MAX_BODY_BYTES", " 100 "], ["MAX_BODY_BYTES", "+100"], ["TTL_MS", "1000.0"], ["MAX_READINGS", "0b11"]]) {
  test(`hostile config: ${name}=${JSON.stringify(value)} (not plain decimal digits) → every route 500 invalid_config`, async () => {
    await refusesEverything({ [name]: value }, 500, "invalid_config", new RegExp(`^${name} must be a whole number`));
  });
}

test("hostile config: numbers as wrangler.toml gives them (TOML integers) and as decimal strings are accepted", async () => {
  const w = await start({ vars: { MAX_BODY_BYTES: 2048, MAX_READINGS: "0010" } });
  try {
    assert.deepEqual(await (await w.call("/v1/health")).json(), { ok: true });
    const big = await w.call("/v1/readings", { method: "POST", headers: { ...AUTH, ...JSON_TYPE }, body: `[${" ".repeat(2048)}]` });
    assert.equal((await big.json()).error.code, "body_too_large");
    const eleven = await w.call("/v1/readings", { method: "POST", headers: { ...AUTH, ...JSON_TYPE }, body: burst(...Array.from({ length: 11 }, (_, i) => reading("h-cfg-n", i))) });
    assert.equal((await eleven.json()).error.code, "too_many_readings");
  } finally {
    await w.mf.dispose();
  }
});

test("hostile config: no token → health 503 too", async () => {
  await refusesEverything({ INGEST_TOKEN: "" }, 503, "auth_not_configured", /INGEST_TOKEN/);
});

test("hostile config: MAX_DEVICES_PER_REQUEST out of range → 500 invalid_config", async () => {
  await refusesEverything({ MAX_DEVICES_PER_REQUEST: "0" }, 500, "invalid_config", /MAX_DEVICES_PER_REQUEST/);
});

test("hostile config: a configured token with spaces around it matches; AUTH_HEADER in mixed case is one header", async () => {
  const w = await start({ vars: { INGEST_TOKEN: `  ${TOKEN}\t`, AUTH_HEADER: "X-Ingest-Token", MAX_DEVICES_PER_REQUEST: "2" } });
  try {
    const ok = await w.call("/v1/readings", { method: "POST", headers: { ...AUTH, ...JSON_TYPE }, body: burst(reading("h-cfg-1", 1)) });
    assert.equal(ok.status, 200);
    const custom = await w.call("/v1/readings", { method: "POST", headers: { "x-ingest-token": TOKEN, ...JSON_TYPE }, body: burst(reading("h-cfg-1", 2)) });
    assert.equal(custom.status, 200);
    assert.equal((await custom.json()).unique, 1);
    const three = await w.call("/v1/readings", { method: "POST", headers: { ...AUTH, ...JSON_TYPE }, body: manyDevices(3, "h-cfg-3") });
    assert.equal(three.status, 413);
    assert.equal((await three.json()).error.code, "too_many_devices");
    assert.deepEqual(await (await w.call("/v1/health")).json(), { ok: true });
  } finally {
    await w.mf.dispose();
  }
});

test("hostile: device calls of one request run at most 16 at a time, answers in order", async () => {
  let running = 0;
  let most = 0;
  const items = Array.from({ length: 100 }, (_, i) => i);
  const out = await mapAtMost(16, items, async (i) => {
    running += 1;
    most = Math.max(most, running);
    await new Promise((r) => setImmediate(r));
    running -= 1;
    return i * 2;
  });
  assert.deepEqual(out, items.map((i) => i * 2));
  assert.equal(most, 16);
});

// --- under npm start and npm run dev ---------------------------------------------------

const HELD_MS = 20_000;
/** Each local launcher, started once for the tests below (launch.mjs) and stopped after the file. */
const launchers = {
  "npm start": () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "dev.vars"), `INGEST_TOKEN=${TOKEN}\n`);
    return npmStart({ data: path.join(dir, "do"), devVars: path.join(dir, "dev.vars") }).then((w) => ({ ...w, stop: () => w.stop().then(() => fs.rmSync(dir, { recursive: true, force: true })) }));
  },
  "npm run dev (wrangler dev)": () => npmRunDev({ vars: { INGEST_TOKEN: TOKEN } }),
};
const running = new Map();
const launched = (name) => {
  if (!running.has(name)) running.set(name, launchers[name]());
  return running.get(name);
};
after(async () => {
  for (const w of running.values()) await (await w).stop();
});

/**
 * One connection to `port`: `exchange(raw)` writes a request and resolves its reply
 * (`{status, head, body}`, the body read to its Content-Length), within HELD_MS (a bound
 * on a hang, not a timing assertion).
 */
function connection(port) {
  const s = net.connect(port, "127.0.0.1");
  let data = Buffer.alloc(0);
  let waiting = null;
  const settle = () => {
    if (!waiting) return;
    const end = data.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = data.subarray(0, end).toString("latin1");
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (data.length < end + 4 + length) return;
    const body = data.subarray(end + 4, end + 4 + length).toString("utf8");
    data = data.subarray(end + 4 + length);
    const { resolve, timer } = waiting;
    waiting = null;
    clearTimeout(timer);
    resolve({ status: Number(head.split(" ")[1]), head, body });
  };
  s.on("data", (d) => {
    data = Buffer.concat([data, d]);
    settle();
  });
  s.on("error", (e) => waiting?.reject(e));
  s.on("close", () => waiting?.reject(new Error(`the connection closed before a reply; received: ${data.toString("latin1").slice(0, 300)}`)));
  return {
    exchange: (raw) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting = null;
          reject(new Error(`no reply within ${HELD_MS} ms: the connection is held`));
        }, HELD_MS);
        waiting = { resolve, reject, timer };
        s.write(raw);
      }),
    close: () => s.destroy(),
  };
}

/** An HTTP/1.1 request with `body` (text) and its Content-Length. */
function httpRequest(method, target, headers, body = "") {
  const fields = { host: "127.0.0.1", ...headers, "content-length": Buffer.byteLength(body) };
  return `${method} ${target} HTTP/1.1\r\n${Object.entries(fields).map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n${body}`;
}

for (const launcher of Object.keys(launchers)) {
  test(`hostile: under ${launcher} a Content-Length lie gets its 413 before the body`, async () => {
    // `wrangler dev` wraps the worker in a middleware that reads an unused request
    // body to its end before the reply leaves: a client that declares 2 MB and sends
    // 2 bytes got no answer at all. The worker drops a body declared that long unread.
    const { port } = await launched(launcher);
    const c = connection(port);
    try {
      const reply = await c.exchange(`POST /v1/readings HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 2000000\r\n\r\n[]`);
      assert.equal(reply.status, 413, reply.head);
    } finally {
      c.close();
    }
  });

  test(`hostile: under ${launcher} every reply that leaves a body unread keeps the connection for the next request`, async () => {
    // A body the worker did not read was cancelled; under wrangler dev that broke the
    // proxy's connection, and the next request on it was answered 503 "Your worker
    // restarted mid-request" without reaching the worker (or hung): a ChirpStack status
    // event lost the uplink after it. Now each is read and dropped first.
    const { port } = await launched(launcher);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const json = { "content-type": "application/json" };
    const unread = [
      ["ChirpStack status", "POST", "/v1/uplinks/chirpstack?event=status", { ...auth, ...json }, fixture("chirpstack/status.json"), 200],
      ["ChirpStack join", "POST", "/v1/uplinks/chirpstack?event=join", { ...auth, ...json }, fixture("chirpstack/join.json"), 200],
      ["ChirpStack log", "POST", "/v1/uplinks/chirpstack?event=log", { ...auth, ...json }, fixture("chirpstack/log.json"), 200],
      ["ChirpStack txack", "POST", "/v1/uplinks/chirpstack?event=txack", { ...auth, ...json }, fixture("chirpstack/txack.json"), 200],
      ["no credentials, 4 KB", "POST", "/v1/readings", json, "x".repeat(4096), 401],
      ["an unknown route", "POST", "/v1/nothing-here", { ...auth, ...json }, "[]", 404],
      ["a method the route does not take", "POST", "/v1/stats", { ...auth, ...json }, "[]", 405],
      ["not JSON", "POST", "/v1/readings", { ...auth, "content-type": "text/csv" }, "a,b\r\n1,2\r\n", 415],
      ["reset with a JSON body", "POST", "/v1/devices/dev-unread/reset", { ...auth, ...json }, "{}", 404],
      ["redrive with a JSON body", "POST", "/v1/devices/dev-unread/redrive", { ...auth, ...json }, "{}", 200],
      ["a body one byte over MAX_BODY_BYTES", "POST", "/v1/readings", { ...auth, ...json }, "x".repeat(1048577), 413],
      ["a cross-site request", "POST", "/v1/readings", { ...auth, ...json, "sec-fetch-site": "cross-site", origin: "http://evil.example" }, "[]", 403],
      ["forget with a form body", "POST", "/v1/devices/dev-unread/forget", { ...auth, "content-type": "application/x-www-form-urlencoded" }, "key=x", 415],
    ];
    const c = connection(port);
    try {
      let seq = 0;
      for (const [what, method, target, headers, body, status] of unread) {
        const first = await c.exchange(httpRequest(method, target, headers, body));
        assert.equal(first.status, status, `${what}: ${first.head}\n${first.body}`);
        // The next request on the same connection reaches the worker and is stored.
        seq += 1;
        const reading = JSON.stringify([{ device_id: "dev-after-unread", seq, ts: new Date(Date.UTC(2026, 6, 16, 9, seq)).toISOString(), fill_pct: 40 }]);
        const next = await c.exchange(httpRequest("POST", "/v1/readings", { ...auth, ...json }, reading));
        assert.equal(next.status, 200, `after ${what}: ${next.head}\n${next.body}`);
        assert.equal(JSON.parse(next.body).unique, 1, `after ${what}: ${next.body}`);
      }
      // A GET after an unread body (it hung 60-150 s behind a cancelled one).
      const first = await c.exchange(httpRequest("POST", "/v1/nothing-here", { ...auth, ...json }, "x".repeat(4096)));
      assert.equal(first.status, 404);
      const health = await c.exchange(httpRequest("GET", "/v1/health", {}));
      assert.equal(health.status, 200, `${health.head}\n${health.body}`);
    } finally {
      c.close();
    }
  });
}
