// A device's configuration (PUT/GET /v1/devices/{device_id}/config) in workerd: every
// kind of bad body refused with its code before any group object is contacted, the
// round trip, a change logged with its before and after, the DevEUI in any case, a
// device that was never configured read without storage being created, and the
// configuration surviving a restart.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { databases, get, ISO_TIME, post, sqlite, start, tempDir, TOKEN } from "../support/harness.mjs";

const dir = tempDir();
let worker = await start({ persist: dir });
after(async () => {
  await worker.mf.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = { "content-type": "application/json" };
const put = (id, body, headers = {}) =>
  worker.call(`/v1/devices/${id}/config`, { method: "PUT", headers: { ...AUTH, ...JSON_TYPE, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
const read = (id) => get(worker.call, `/v1/devices/${id}/config`);
/** GroupObject SQLite files: one per group object the runtime ever started. */
const objectFiles = () => (fs.existsSync(path.join(dir, "-GroupObject")) ? databases(dir, "GroupObject").length : 0);
/** The worker's `device_config` log lines for `device_id`. */
const logged = (device_id) =>
  worker.lines
    .filter((l) => l.includes('"device_config"'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.device_id === device_id);
/** `updated_at` as the worker writes every time (the core's isoTime). */

/** A PUT reply's configuration; it reports no parked uplink decoded (these devices park none). */
const configOf = async (res) => {
  const { unparked, ...stored } = await res.json();
  assert.deepEqual(unparked, { uplinks: 0, received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, still_parked: 0 });
  return stored;
};

const EM500 = { codec: "milesight-iot/em500-udl", bin_depth_mm: 1200, offset_mm: 150, reporting_period_s: 600 };

// body (a string is sent as is), the code of the 400 (or [status, code]), and what
// the message must name.
const BAD = [
  ["{", "invalid_json", /not JSON/],
  ['{"bin_depth_mm": 1000}xyz', "invalid_json", /not JSON/],
  ["[]", "invalid_config_body", /JSON object/],
  ["null", "invalid_config_body", /JSON object/],
  ['"milesight-iot/em500-udl"', "invalid_config_body", /JSON object/],
  ["1000", "invalid_config_body", /JSON object/],
  [{ bin_depth_mm: 1000, depth: 3 }, "invalid_config_body", /unknown member "depth"; the members are codec, bin_depth_mm, offset_mm, reporting_period_s/],
  [{ bin_depth_mm: 1000, ["__proto__"]: 1 }, "invalid_config_body", /unknown member "__proto__"/],
  ['{"bin_depth_mm": 1000, "__proto__": {}}', "invalid_config_body", /unknown member "__proto__"/],
  [{ Bin_Depth_mm: 1000 }, "invalid_config_body", /unknown member "Bin_Depth_mm"/],
  ['{"bin_depth_mm": 1000, "bin_depth_mm": 900}', "invalid_config_body", /member "bin_depth_mm" appears twice/],
  ['{"codec": null, "bin_depth_mm": 1000, "codec": "dingtek/df703"}', "invalid_config_body", /member "codec" appears twice/],
  ['{"bin_depth_mm": 1000, "bin\\u005fdepth_mm": 900}', "invalid_config_body", /member "bin_depth_mm" appears twice/],
  ['{"codec": "{\\"bin_depth_mm\\": 1, ", "bin_depth_mm": 1000, "offset_mm": [1, {"offset_mm": 2}]}', "unknown_codec", /codec must be null .* got "\{/],
  [{ codec: "acme/bin-9000", bin_depth_mm: 1000 }, "unknown_codec", /one of milesight-iot\/em310-udl, .*tekelek\/tek766.*; got "acme\/bin-9000"/],
  [{ codec: "Milesight-IoT/EM500-UDL", bin_depth_mm: 1000 }, "unknown_codec", /got "Milesight-IoT\/EM500-UDL"/],
  [{ codec: 7, bin_depth_mm: 1000 }, "unknown_codec", /got 7/],
  [{ codec: { brand_id: "dingtek" }, bin_depth_mm: 1000 }, "unknown_codec", /got \{"brand_id"/],
  [{ codec: "x".repeat(5000), bin_depth_mm: 1000 }, "unknown_codec", /got "x{62}…$/],
  [{}, "invalid_bin_depth", /bin_depth_mm must be a whole number of millimetres, 1 … 100000; it is required/],
  [{ codec: "dingtek/df703" }, "invalid_bin_depth", /it is required/],
  [{ bin_depth_mm: null }, "invalid_bin_depth", /it is required/],
  [{ bin_depth_mm: "1000" }, "invalid_bin_depth", /bin_depth_mm must be a whole number .*; got "1000"/],
  [{ bin_depth_mm: true }, "invalid_bin_depth", /got true/],
  [{ bin_depth_mm: [1000] }, "invalid_bin_depth", /got \[1000\]/],
  [{ bin_depth_mm: 1000.5 }, "invalid_bin_depth", /got 1000\.5/],
  ['{"bin_depth_mm": 1e400}', "invalid_bin_depth", /got 1e400/],
  ['{"bin_depth_mm": 1e-400}', "invalid_bin_depth", /got 1e-400/],
  ['{"bin_depth_mm": 100.000000000000001}', "invalid_bin_depth", /got 100\.000000000000001/],
  ['{"bin_depth_mm": 15e-1}', "invalid_bin_depth", /got 15e-1/],
  [{ bin_depth_mm: 0 }, "invalid_bin_depth", /got 0/],
  [{ bin_depth_mm: -1 }, "invalid_bin_depth", /got -1/],
  [{ bin_depth_mm: 100_001 }, "invalid_bin_depth", /got 100001/],
  [{ bin_depth_mm: 1000, offset_mm: -1 }, "invalid_offset", /offset_mm must be a whole number of millimetres, 0 … 100000; got -1/],
  [{ bin_depth_mm: 1000, offset_mm: 100_001 }, "invalid_offset", /got 100001/],
  [{ bin_depth_mm: 1000, offset_mm: 2.5 }, "invalid_offset", /got 2\.5/],
  [{ bin_depth_mm: 1000, offset_mm: "0" }, "invalid_offset", /got "0"/],
  [{ bin_depth_mm: 1000, reporting_period_s: 0 }, "invalid_reporting_period", /reporting_period_s must be a whole number of seconds, 1 … 604800; got 0/],
  [{ bin_depth_mm: 1000, reporting_period_s: 604_801 }, "invalid_reporting_period", /got 604801/],
  [{ bin_depth_mm: 1000, reporting_period_s: 1.5 }, "invalid_reporting_period", /got 1\.5/],
  [{ bin_depth_mm: 1000, reporting_period_s: "3600" }, "invalid_reporting_period", /got "3600"/],
  [{ codec: "tekelek/tek766", bin_depth_mm: 1000 }, "missing_reporting_period", /codec tekelek\/tek766 needs reporting_period_s/],
  [{ codec: "tekelek/tek766", bin_depth_mm: 1000, reporting_period_s: null }, "missing_reporting_period", /needs reporting_period_s/],
  [{ codec: "milesight-iot/em310-udl", bin_depth_mm: 1000, application_port: 0 }, "invalid_application_port", /application_port must be a whole number, 1 … 223; got 0/],
  [{ codec: "milesight-iot/em310-udl", bin_depth_mm: 1000, application_port: 224 }, "invalid_application_port", /got 224/],
  [{ codec: "milesight-iot/em500-udl", bin_depth_mm: 1000, application_port: 86.5 }, "invalid_application_port", /got 86\.5/],
  [{ codec: "milesight-iot/em500-udl", bin_depth_mm: 1000, application_port: "86" }, "invalid_application_port", /got "86"/],
  [{ codec: "dingtek/df703", bin_depth_mm: 1000, application_port: 3 }, "invalid_application_port", /application_port is for a device whose codec is one of milesight-iot\/em310-udl \(85 unless set\), milesight-iot\/em500-udl \(85 unless set\); dingtek\/df703 reads its own ports/],
  [{ bin_depth_mm: 1000, application_port: 86 }, "invalid_application_port", /this configuration names no codec/],
  // The body as at ingest: JSON only, at most MAX_BODY_BYTES.
  [{ body: JSON.stringify(EM500), headers: { "content-type": "text/plain" } }, [415, "unsupported_media_type"], /application\/json/],
  [{ body: JSON.stringify(EM500), headers: { "content-type": null } }, [415, "unsupported_media_type"], /application\/json/],
  [`{"bin_depth_mm": 1000, "codec": null${" ".repeat(1_048_576)}}`, [413, "body_too_large"], /exceeds 1048576 bytes/],
  [{ body: new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) }, "invalid_json", /not JSON/],
  // JSON by the rules every body is read by (docs/http-api.md "Readings and rejections").
  ['\uFEFF{"bin_depth_mm": 1000}', "invalid_json", /byte order mark/],
  ['{"bin_depth_mm": 1000, "codec": "\\udc00"}', "invalid_json", /lone surrogate/],
  [`{"bin_depth_mm": 1000, "backfill": ${"[".repeat(128)}${"]".repeat(128)}}`, "invalid_json", /nested deeper than 128/],
  [`{"bin_depth_mm": 1000, "backfill": ${"[".repeat(127)}${"]".repeat(127)}}`, "invalid_backfill", /backfill must be true, false or null/],
];

test("every bad body is refused with its code, naming the member and rule; no device object contacted", async () => {
  const files = objectFiles();
  for (const [i, [given, expected, message]] of BAD.entries()) {
    const [status, code] = Array.isArray(expected) ? expected : [400, expected];
    const id = `cfg-bad-${i}`;
    const raw = given?.body !== undefined;
    const headers = raw ? { ...AUTH, ...JSON_TYPE, ...given.headers } : { ...AUTH, ...JSON_TYPE };
    for (const [k, v] of Object.entries(headers)) if (v === null) delete headers[k];
    const body = raw ? given.body : typeof given === "string" ? given : JSON.stringify(given);
    const res = await worker.call(`/v1/devices/${id}/config`, { method: "PUT", headers, body });
    const reply = await res.json();
    const row = `row ${i} (${JSON.stringify(given).slice(0, 80)})`;
    assert.deepEqual([res.status, reply.error?.code], [status, code], `${row}: ${JSON.stringify(reply)}`);
    assert.match(reply.error.message, message, row);
    const stored = await read(id);
    assert.deepEqual([stored.status, stored.body.error.code], [404, "not_configured"], row);
  }
  assert.equal(objectFiles(), files, "no device object was started");
  assert.deepEqual(logged("cfg-bad-0"), []);
});

test("a valid PUT answers the stored configuration, GET returns it, HEAD answers without a body", async () => {
  const res = await put("cfg-bin-1", EM500);
  const stored = await configOf(res);
  assert.equal(res.status, 200, JSON.stringify(stored));
  assert.deepEqual(Object.keys(stored), ["device_id", "codec", "bin_depth_mm", "offset_mm", "reporting_period_s", "application_port", "backfill", "updated_at"]);
  assert.deepEqual({ ...stored, updated_at: undefined }, { device_id: "cfg-bin-1", ...EM500, application_port: null, backfill: null, updated_at: undefined });
  assert.match(stored.updated_at, ISO_TIME);
  assert.deepEqual(await read("cfg-bin-1"), { status: 200, body: stored });
  const head = await worker.call("/v1/devices/cfg-bin-1/config", { method: "HEAD", headers: AUTH });
  assert.deepEqual([head.status, head.headers.get("content-type"), await head.text()], [200, "application/json; charset=utf-8", ""]);
  const missing = await worker.call("/v1/devices/cfg-never-head/config", { method: "HEAD", headers: AUTH });
  assert.deepEqual([missing.status, await missing.text()], [404, ""]);
  assert.deepEqual(logged("cfg-bin-1").map(({ before, after }) => [before, after]), [[null, stored]]);
});

test("defaults: codec, offset and reporting period may be absent or null; whole numbers written as 1e3 or 1.0 are whole", async () => {
  const res = await put("cfg-defaults", '{"bin_depth_mm": 1e3}');
  assert.equal(res.status, 200);
  assert.deepEqual({ ...(await configOf(res)), updated_at: 0 }, { device_id: "cfg-defaults", codec: null, bin_depth_mm: 1000, offset_mm: 0, reporting_period_s: null, application_port: null, backfill: null, updated_at: 0 });
  const nulls = await put("cfg-defaults", '{"codec": null, "bin_depth_mm": 900.0, "offset_mm": -0, "reporting_period_s": null}');
  assert.deepEqual({ ...(await configOf(nulls)), updated_at: 0 }, { device_id: "cfg-defaults", codec: null, bin_depth_mm: 900, offset_mm: 0, reporting_period_s: null, application_port: null, backfill: null, updated_at: 0 });
  const edges = await put("cfg-defaults", { codec: "tekelek/tek766", bin_depth_mm: 100_000, offset_mm: 100_000, reporting_period_s: 604_800 });
  assert.equal(edges.status, 200);
  const low = await put("cfg-defaults", { codec: "tekelek/tek766", bin_depth_mm: 1, offset_mm: 0, reporting_period_s: 1 });
  assert.equal(low.status, 200);
});

test("a Milesight's application port: stored, returned, and reset to the codec's own by a PUT without it", async () => {
  for (const port of [1, 86, 223]) {
    const res = await put("cfg-port", { codec: "milesight-iot/em310-udl", bin_depth_mm: 1200, application_port: port });
    assert.equal(res.status, 200);
    assert.equal((await configOf(res)).application_port, port);
    assert.equal((await read("cfg-port")).body.application_port, port);
  }
  const [change] = logged("cfg-port").slice(-1);
  assert.deepEqual([change.before.application_port, change.after.application_port], [86, 223]);
  // A PUT replaces the whole configuration: no port is the codec's own again.
  const plain = await put("cfg-port", { codec: "milesight-iot/em310-udl", bin_depth_mm: 1200 });
  assert.equal((await configOf(plain)).application_port, null);
});

test("a second PUT replaces the first, logged with before and after; the same values again change nothing", async () => {
  const first = await configOf(await put("cfg-bin-2", EM500));
  await new Promise((r) => setTimeout(r, 5)); // a later updated_at
  const change = { codec: "dingtek/df703", bin_depth_mm: 1500 };
  const res = await put("cfg-bin-2", change);
  const second = await configOf(res);
  assert.equal(res.status, 200);
  assert.deepEqual({ ...second, updated_at: 0 }, { device_id: "cfg-bin-2", ...change, offset_mm: 0, reporting_period_s: null, application_port: null, backfill: null, updated_at: 0 });
  assert.ok(second.updated_at > first.updated_at, `${second.updated_at} after ${first.updated_at}`);
  assert.deepEqual((await read("cfg-bin-2")).body, second);
  const lines = logged("cfg-bin-2");
  assert.deepEqual(lines, [
    { level: "INFO", event: "device_config", device_id: "cfg-bin-2", before: null, after: first },
    { level: "INFO", event: "device_config", device_id: "cfg-bin-2", before: first, after: second },
  ]);
  // Idempotent: nothing changes, nothing is logged.
  const again = await put("cfg-bin-2", change);
  assert.deepEqual([again.status, await configOf(again)], [200, second]);
  assert.equal(logged("cfg-bin-2").length, 2);
});

test("a DevEUI in lower case is the device in upper case; PUT and GET in either case", async () => {
  const res = await put("a84041000181c0de", { codec: "dragino/ldds75", bin_depth_mm: 800 });
  const stored = await configOf(res);
  assert.equal(res.status, 200);
  assert.equal(stored.device_id, "A84041000181C0DE");
  assert.deepEqual(await read("A84041000181C0DE"), { status: 200, body: stored });
  assert.deepEqual(await read("a84041000181c0de"), { status: 200, body: stored });
  assert.deepEqual(await read("A84041000181c0DE"), { status: 200, body: stored });
});

test("GET of a device never configured nor seen: 404 not_configured, no object started", async () => {
  const files = objectFiles();
  for (const id of ["cfg-never", "0011223344556677", encodeURIComponent("bin é/1")]) {
    const { status, body } = await read(id);
    assert.deepEqual([status, body.error.code], [404, "not_configured"], id);
  }
  assert.match((await read("cfg-never")).body.error.message, /"cfg-never" has no configuration/);
  assert.equal(objectFiles(), files, "no device object was started");
});

test("a device that ingested but was never configured: 404 not_configured; its ledger is untouched", async () => {
  const r = await post(worker.call, "/v1/readings", [{ device_id: "cfg-ingested", seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 40 }]);
  assert.equal(r.status, 200);
  assert.deepEqual((await read("cfg-ingested")).body.error.code, "not_configured");
  const res = await put("cfg-ingested", { bin_depth_mm: 1000 });
  assert.equal(res.status, 200);
  assert.equal((await read("cfg-ingested")).body.bin_depth_mm, 1000);
  const ledger = await get(worker.call, "/v1/devices/cfg-ingested/readings");
  assert.deepEqual(ledger.body.readings.map((x) => x.seq), [1]);
});

test("a configured device still ingests: its first burst is admitted, its replay suppressed", async () => {
  await put("cfg-then-ingest", EM500);
  const burst = [1, 2, 3].map((seq) => ({ device_id: "cfg-then-ingest", seq, ts: "2026-07-16T09:00:00Z", fill_pct: 10 * seq }));
  const first = await (await post(worker.call, "/v1/readings", burst)).json();
  assert.deepEqual([first.received, first.unique, first.duplicates_suppressed], [3, 3, 0]);
  const replay = await (await post(worker.call, "/v1/readings", burst)).json();
  assert.deepEqual([replay.unique, replay.duplicates_suppressed], [0, 3]);
  const ledger = await get(worker.call, "/v1/devices/cfg-then-ingest/readings");
  assert.deepEqual(ledger.body.readings.map((x) => x.seq), [1, 2, 3]);
  assert.equal((await read("cfg-then-ingest")).body.bin_depth_mm, EM500.bin_depth_mm);
});

test("methods: 405 names GET, HEAD, PUT; the token is required; a bad device id is 400", async () => {
  for (const method of ["POST", "DELETE", "PATCH"]) {
    const res = await worker.call("/v1/devices/cfg-bin-1/config", { method, headers: { ...AUTH, ...JSON_TYPE }, body: JSON.stringify(EM500) });
    assert.deepEqual([res.status, res.headers.get("allow"), (await res.json()).error.code], [405, "GET, HEAD, PUT", "method_not_allowed"], method);
  }
  const files = objectFiles();
  const noToken = await worker.call("/v1/devices/cfg-auth/config", { method: "PUT", headers: JSON_TYPE, body: JSON.stringify(EM500) });
  assert.deepEqual([noToken.status, (await noToken.json()).error.code], [401, "unauthorized"]);
  const wrong = await worker.call("/v1/devices/cfg-bin-1/config", { headers: { authorization: "Bearer nope" } });
  assert.deepEqual([wrong.status, (await wrong.json()).error.code], [401, "unauthorized"]);
  for (const id of ["%00", "%FF", "", "x".repeat(129)]) {
    const res = await put(id, EM500);
    assert.deepEqual([res.status, (await res.json()).error.code], [400, "invalid_device_id"], id);
  }
  assert.equal(objectFiles(), files, "no device object was started");
  assert.equal((await read("cfg-auth")).status, 404);
});

test("the configuration survives a restart", async () => {
  const before = (await read("cfg-bin-1")).body;
  await worker.mf.dispose();
  worker = await start({ persist: dir });
  assert.deepEqual(await read("cfg-bin-1"), { status: 200, body: before });
});

test("a configuration an earlier release stored, without application_port, reads as the codec's own port and takes one", async () => {
  assert.equal((await put("cfg-old", { codec: "milesight-iot/em310-udl", bin_depth_mm: 1200 })).status, 200);
  await worker.mf.dispose();
  // The config table as the release before application ports wrote it.
  sqlite(databases(dir, "GroupObject"), "ALTER TABLE config DROP COLUMN application_port;");
  worker = await start({ persist: dir });
  const old = await read("cfg-old");
  assert.deepEqual([old.status, old.body.codec, old.body.application_port], [200, "milesight-iot/em310-udl", null]);
  const res = await put("cfg-old", { codec: "milesight-iot/em310-udl", bin_depth_mm: 1200, application_port: 86 });
  assert.equal((await configOf(res)).application_port, 86);
});
