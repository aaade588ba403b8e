// The OpenAPI document against inputs the other worker tests do not send: for every
// operation, requests generated from a fixed seed (valid and invalid device ids,
// percent-encoded and Unicode; query parameters given twice, out of range, not
// digits; every method; content types; bodies that are arrays, objects, empty, huge
// numbers, deep nesting; the webhook fixtures with members replaced or removed and
// random payload bytes), each sent through the harness's `call`, which validates the
// reply against the document (openapi-replies.mjs) and throws when it does not match.
// No reply may be a 500: bad input gets a coded 4xx. And the document's request side
// agrees with the worker: a device configuration or forget body (which the worker
// checks whole), and a bulk configuration's rows, are taken exactly when the
// operation's request schema accepts them, and a query parameter, sent as a generated
// client (openapi-fetch) serializes it, exactly when its parameter schema does.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { start, fixture, TOKEN } from "../support/harness.mjs";
import { validatorAt } from "../support/openapi-replies.mjs";
import { createQuerySerializer } from "openapi-fetch";

// Small limits, so that generated requests reach the 413s too.
const worker = await start({ vars: { MAX_BODY_BYTES: "8192", MAX_READINGS: "4", MAX_DEVICES_PER_REQUEST: "2" } });
after(() => worker.mf.dispose());

const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A seeded generator (mulberry32): the same requests on every run. */
function random(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (list) => list[int(list.length)] };
}

/** Path segments naming a device: good, Unicode, percent-encoded, and broken ones. */
const DEVICE_SEGMENTS = [
  "bin-1", "0004a30b001c0530", "0004A30B001C0530", encodeURIComponent("bin €"), encodeURIComponent("é/ü"), "%2F", "%25", "%FF", "%E2%82", "%C0%AF",
  "", "%00", "%0A", "%E2%80%8B", "%E2%80%A8", "%2E", "%2E%2E", "a".repeat(128), "a".repeat(129), encodeURIComponent("€".repeat(43)), "health", "x%20y", "%7B%7D",
];
/** Query strings of the paged, formatted, ChirpStack and re-drive reads. */
const QUERIES = [
  "", "?limit=1", "?limit=1000", "?limit=0", "?limit=1001", "?limit=-1", "?limit=1.5", "?limit=1e2", "?limit=", "?limit=abc", "?limit=1&limit=1",
  "?after=0", "?after=9007199254740991", "?after=9007199254740992", "?after=99999999999999999999", "?after=x", "?after=1&after=2", "?limit=%31",
  "?format=csv", "?format=json", "?format=CSV", "?format=xml", "?format=csv&format=csv", "?event=up", "?event=JOIN", "?event=", "?event=up&event=up", "?event=nope",
  "?key=", "?key=a", "?key=a&key=b", `?${Array.from({ length: 1001 }, (_, i) => `key=k${i}`).join("&")}`, "?unknown=1", "?%FF=%FF",
];
const CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", "application/merge-patch+json", "APPLICATION/JSON", "text/plain", "application/x-protobuf", "application/octet-stream", "", "application/jsonx", "json"];
/** Bodies of no route's shape, or broken JSON. */
const ODD_BODIES = [
  "", "null", "true", "0", "-0", "1e999", "-1e999", "123456789012345678901234567890", '"text"', "[]", "{}", "[[]]", "[{}]", "[null]", '{"readings": {}}', '{"readings": null}',
  "[".repeat(129) + "]".repeat(129), "[".repeat(20) + "]".repeat(20), '{"a": '.repeat(100) + "1" + "}".repeat(100), "\uFEFF[]", '["\\ud800"]', '{"a": 1, "a": 2}', "[1,]", "{", "\u0000", `[${"0,".repeat(5000)}0]`,
];
const ODD_VALUES = [null, true, false, 0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, "", " ", "\u0000", "a".repeat(300), "€", [], [1], {}, { a: { b: {} } }, "2026-07-16T09:00:00Z", "0004A30B001C0530"];

/** `value` with one member somewhere in it replaced by `odd` (or removed, when `odd` is undefined). */
function mutate(r, value, odd) {
  const copy = structuredClone(value);
  const containers = [];
  (function walk(v) {
    if (v === null || typeof v !== "object") return;
    containers.push(v);
    for (const child of Object.values(v)) walk(child);
  })(copy);
  const at = r.pick(containers);
  const keys = Object.keys(at);
  if (!keys.length) return copy;
  const key = r.pick(keys);
  if (odd === undefined && !Array.isArray(at)) delete at[key];
  else at[key] = odd ?? null;
  return copy;
}

const base64 = (bytes) => Buffer.from(bytes).toString("base64");
const hex = (bytes) => Buffer.from(bytes).toString("hex");

/** A webhook message of `route`: a fixture, mutated, or with random payload bytes. */
function webhookBody(r, route) {
  const fixtures = {
    ttn: ["tts/uplink_message.json", "tts/simulated_uplink.json", "tts/join_accept.json", "raw/tts-em310-udl-live.json", "raw/tts-em500-udl-history.json", "raw/tts-no-version-ids.json", "with-fill/tts-v3-uplink.json"],
    chirpstack: ["chirpstack/up.json", "raw/chirpstack-df703-tags.json", "with-fill/chirpstack-v4-up.json", "chirpstack/status.json"],
    helium: ["helium/uplink.json", "helium/join.json", "raw/helium-dds75-lb-datalog.json", "raw/helium-ldds75-sentinel.json"],
    loriot: ["loriot/rx.json", "loriot/gw.json", "loriot/tx.json", "raw/loriot-df703-rx.json"],
  }[route];
  let message = JSON.parse(fixture(r.pick(fixtures)));
  const bytes = Array.from({ length: r.int(24) }, () => r.int(256));
  const port = r.pick([0, 1, 2, 3, 5, 85, 223, 224, 255, 256, -1]);
  switch (r.int(4)) {
    case 0:
      break;
    case 1:
      message = mutate(r, message, r.next() < 0.2 ? undefined : r.pick(ODD_VALUES));
      break;
    case 2:
      // Random bytes on the fixture's port, or another.
      if (route === "ttn" && message.uplink_message) Object.assign(message.uplink_message, { frm_payload: base64(bytes), ...(r.int(2) && { f_port: port }), decoded_payload: undefined });
      if (route === "chirpstack") Object.assign(message, { data: base64(bytes), ...(r.int(2) && { fPort: port }), object: undefined });
      if (route === "helium") Object.assign(message, { payload: base64(bytes), ...(r.int(2) && { port }), decoded: undefined });
      if (route === "loriot") Object.assign(message, { data: hex(bytes), ...(r.int(2) && { port }) });
      break;
    default:
      return r.pick(ODD_BODIES);
  }
  return JSON.stringify(message);
}

/** A native burst: readings valid and not, in either form. */
function burstBody(r) {
  if (r.int(6) === 0) return r.pick(ODD_BODIES);
  const readings = Array.from({ length: 1 + r.int(5) }, () => {
    const reading = { device_id: r.pick(["fz-1", "fz-2", "0004a30b001c0530"]), seq: r.int(5), ts: "2026-07-16T09:00:00Z", fill_pct: r.int(101) };
    return r.int(3) ? reading : mutate(r, reading, r.next() < 0.3 ? undefined : r.pick(ODD_VALUES));
  });
  return JSON.stringify(r.int(2) ? readings : { readings, ...(r.int(3) === 0 && { note: "other members are ignored" }) });
}

/**
 * A device configuration's text: each member absent, valid or (one time in four)
 * breaking its rule; numbers as JSON may write them (`1e2`, `1200.0`, `-0`).
 */
function configBody(r) {
  if (r.int(8) === 0) return r.pick(ODD_BODIES);
  const members = {
    codec: [["null", '"dragino/ldds75"', '"tekelek/tek766"', '"milesight-iot/em310-udl"'], ['"nope"', '""', "1"]],
    bin_depth_mm: [["1", "1200", "100000", "1e2", "1200.0"], ["0", "100001", "-1", "1.5", '"1200"', "null", "true"]],
    offset_mm: [["0", "-0", "50", "100000", "null", "5E1"], ["-1", "100001", "0.5", '"0"']],
    reporting_period_s: [["1", "600", "604800", "null", "6e2"], ["0", "604801", "1.25", '"600"']],
    backfill: [["true", "false", "null"], ["0", '"on"', "[]"]],
  };
  const given = Object.entries(members)
    .filter(([name]) => name === "bin_depth_mm" || r.int(3))
    .map(([name, [valid, invalid]]) => `"${name}": ${r.pick(r.int(4) ? valid : invalid)}`);
  if (r.int(10) === 0) given.push('"extra": 1');
  return `{${given.join(", ")}}`;
}

/** A forget body: a key, or not. */
function forgetBody(r) {
  if (r.int(6) === 0) return r.pick(ODD_BODIES);
  return JSON.stringify(r.int(6) === 0 ? { key: "k", other: 1 } : { key: r.pick(["", "k", "fz-1:1:0123456789abcdef", "a".repeat(1024), "a".repeat(1025), "😀".repeat(512), "😀".repeat(1024), 1, null, ["k"]]) });
}

/** One request: `[method, path, init]`. */
function request(r) {
  const routes = [
    ["POST", "/v1/readings", () => burstBody(r)],
    ...["ttn", "chirpstack", "helium", "loriot"].map((route) => ["POST", `/v1/uplinks/${route}`, () => webhookBody(r, route)]),
    ["GET", "/v1/stats"],
    ["GET", "/v1/metrics"],
    ["GET", "/v1/health"],
    ["GET", "/v1/openapi.json"],
    ["GET", "/v1/devices/health"],
    ["GET", "/v1/devices/{d}/readings"],
    ["GET", "/v1/devices/{d}/gaps"],
    ["POST", "/v1/devices/{d}/redrive"],
    ["GET", "/v1/devices/{d}/health"],
    ["POST", "/v1/devices/{d}/forget", () => forgetBody(r)],
    ["POST", "/v1/devices/{d}/reset"],
    ["GET", "/v1/devices/{d}/history"],
    ["GET", "/v1/devices/{d}/config"],
    ["PUT", "/v1/devices/{d}/config", () => configBody(r)],
  ];
  const [documented, template, bodyOf] = r.pick(routes);
  const method = r.int(8) === 0 ? r.pick(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) : documented === "GET" && r.int(4) === 0 ? "HEAD" : documented;
  const segment = r.int(3) ? r.pick(["fz-1", "fz-2", "0004a30b001c0530"]) : r.pick(DEVICE_SEGMENTS);
  const p = template.replace("{d}", segment) + (r.int(2) ? r.pick(QUERIES) : "") + (r.int(12) === 0 ? "/" : "");
  const headers = { ...(r.int(20) ? AUTH : r.pick([{}, { authorization: "Bearer wrong" }, { authorization: `Basic ${btoa(`u:${TOKEN}`)}` }])) };
  if (r.int(4) === 0) headers.accept = r.pick(["text/csv", "text/csv;q=0.5, application/json", "*/*", "application/json;q=0, text/*", "text/csv;q=x"]);
  const init = { method, headers };
  if (method !== "GET" && method !== "HEAD") {
    if (bodyOf) init.body = bodyOf();
    else if (r.int(3) === 0) init.body = r.pick(ODD_BODIES);
    if (init.body !== undefined) headers["content-type"] = r.int(5) ? "application/json" : r.pick(CONTENT_TYPES);
  }
  if (!headers["content-type"]) delete headers["content-type"];
  return [p, init];
}

test("generated requests to every operation are answered as the document says, none with a 500", async () => {
  const r = random(13);
  const statuses = new Map();
  for (let i = 0; i < 2000; i++) {
    const [p, init] = request(r);
    const what = `${init.method} ${p} ${JSON.stringify(init.headers)} ${String(init.body ?? "").slice(0, 200)}`;
    // `call` throws when the reply does not match the document.
    const res = await worker.call(p, init).catch((e) => {
      e.message = `${what}\n${e.message}`;
      throw e;
    });
    const text = await res.text();
    // A 503 (a roll-up shard short of memory under load) is validated as any reply.
    assert.notEqual(res.status, 500, `${what} → ${res.status} ${text.slice(0, 300)}`);
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  }
  // The generator reaches every kind of reply, not only the errors.
  assert.deepEqual([200, 400, 401, 404, 405, 413, 415].filter((s) => !statuses.has(s)), [], JSON.stringify([...statuses]));
});

/**
 * Sends `n` bodies made by `bodyOf` (the JSON ones) to `method` `path` and asserts that
 * the worker takes each (`taken(status, reply)`) exactly when the operation's request
 * schema accepts it; both answers must occur at least `min` times.
 */
async function requestSchemaAgrees({ seed, n, bodyOf, method, path, template, taken, min }) {
  const valid = validatorAt(`/paths/${template.replaceAll("/", "~1")}/${method.toLowerCase()}/requestBody/content/application~1json/schema`);
  const r = random(seed);
  const seen = { true: 0, false: 0 };
  for (let i = 0; i < n; i++) {
    const text = bodyOf(r);
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      continue; // not JSON: no schema to agree with
    }
    const res = await worker.call(path, { method, headers: { ...AUTH, "content-type": "application/json" }, body: text });
    const reply = await res.json();
    const took = taken(res.status, reply);
    assert.equal(took, valid(body), `${text.slice(0, 200)} → ${res.status} ${JSON.stringify(reply)}; the schema says ${JSON.stringify(valid.errors)}`);
    seen[took] += 1;
  }
  assert.ok(seen.true >= min && seen.false >= min, JSON.stringify(seen));
}

test("a device configuration is stored exactly when the document's request schema accepts it", async () => {
  const template = "/v1/devices/{device_id}/config";
  await requestSchemaAgrees({ seed: 7, n: 300, bodyOf: configBody, method: "PUT", path: "/v1/devices/fz-config/config", template, taken: (status) => status === 200, min: 20 });
});

test("a bulk configuration is applied whole exactly when the document's request schema accepts it", async () => {
  // Rows as configBody makes them, each with a device id of its own (a device named
  // twice is a rule no schema says), valid, absent or breaking the rule.
  let n = 0;
  const bulkBody = (r) => {
    const rows = Array.from({ length: 1 + r.int(3) }, () => {
      const config = configBody(r);
      if (!config.startsWith("{")) return config;
      const id = r.int(5) ? JSON.stringify(`fz-bulk-${++n}`) : r.pick(['""', '"."', "17", "null", JSON.stringify("b".repeat(129))]);
      return r.int(8) ? `{"device_id": ${id}, ${config.slice(1)}` : config;
    });
    return `{"devices": [${rows.join(", ")}]${r.int(10) === 0 ? ', "more": 1' : ""}}`;
  };
  const taken = (status, reply) => status === 200 && reply.failed === 0;
  await requestSchemaAgrees({ seed: 17, n: 150, bodyOf: bulkBody, method: "POST", path: "/v1/devices/config", template: "/v1/devices/config", taken, min: 10 });
});

test("a forget body is taken exactly when the document's request schema accepts it", async () => {
  // fz-forget has a ledger: a taken body is answered 200 or 404 unknown_key.
  await worker.call("/v1/readings", { method: "POST", headers: { ...AUTH, "content-type": "application/json" }, body: JSON.stringify([{ device_id: "fz-forget", seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 1 }]) });
  const taken = (status, reply) => status === 200 || reply.error?.code === "unknown_key";
  await requestSchemaAgrees({ seed: 11, n: 100, bodyOf: forgetBody, method: "POST", path: "/v1/devices/fz-forget/forget", template: "/v1/devices/{device_id}/forget", taken, min: 10 });
});

test("a query parameter is taken exactly when the document's schema accepts it, sent as a generated client sends it", async () => {
  // openapi-fetch's serializer: a number as String(n) (1e21 as "1e+21"), an array as
  // one `name=value` per item (form, explode).
  const serialize = createQuerySerializer();
  const at = (p, i) => `/paths/${p.replaceAll("/", "~1")}/${i}/schema`;
  const cases = [
    // [parameter schema, path, name, values, whether a value the schema refuses is refused]
    ["/components/parameters/Limit/schema", "/v1/devices/fz-q/readings", "limit", [1, 100, 1000, 0, 1001, -1, 1.5, 2 ** 53, 1e21], true],
    ["/components/parameters/After/schema", "/v1/devices/fz-q/readings", "after", [0, 1, 2 ** 53 - 1, 2 ** 53, 1e21, -1, 0.5], true],
    ["/components/parameters/After/schema", "/v1/devices/fz-q/history", "after", [0, 2 ** 53 - 1, 2 ** 53, 1e21], true],
    ["/components/parameters/Limit/schema", "/v1/devices/health", "limit", [1, 1000, 0, 1001, 1e21], true],
    ["/components/parameters/Format/schema", "/v1/devices/fz-q/health", "format", ["json", "csv", "CSV", "xml", ""], true],
    [at("/v1/devices/{device_id}/redrive", "post/parameters/1"), "/v1/devices/fz-q/redrive", "key", [["k"], ["a", "b"], [""], Array.from({ length: 1000 }, (_, i) => `k${i}`), Array.from({ length: 1001 }, (_, i) => `k${i}`)], true],
    // ChirpStack's event is matched in any case (the document says so; its enum is lower case).
    [at("/v1/uplinks/chirpstack", "post/parameters/0"), "/v1/uplinks/chirpstack", "event", ["up", "join", "status", "nope", ""], false],
  ];
  for (const [pointer, p, name, values, strict] of cases) {
    const valid = validatorAt(pointer);
    const post = p.endsWith("redrive") || p.includes("uplinks");
    for (const value of values) {
      const query = serialize({ [name]: value });
      const init = { method: post ? "POST" : "GET", headers: { ...AUTH, "content-type": "application/json" }, ...(post && { body: "{}" }) };
      const res = await worker.call(`${p}?${query}`, init);
      const code = res.status === 400 ? (await res.json()).error.code : null;
      const refused = code === "invalid_query" || code === "unknown_event";
      const what = `${p}?${query.slice(0, 80)} → ${res.status} ${code}`;
      if (valid(value)) assert.ok(!refused, `the schema accepts ${name} ${JSON.stringify(value).slice(0, 40)}: ${what}`);
      else if (strict) assert.ok(refused, `the schema refuses ${name} ${JSON.stringify(value).slice(0, 40)}: ${what}`);
    }
  }
});

test("a native reading is admitted exactly when the document's Reading schema accepts it", async () => {
  // Readings of the shapes clients write, good and bad. The schema cannot say two of
  // the core's rules, so none here breaks only them: a device id over 128 UTF-8 bytes
  // in at most 128 characters, and one with an invisible (format) character.
  const valid = validatorAt("/components/schemas/Reading");
  const variants = [
    {}, { seq: "5" }, { seq: 5.0 }, { seq: 1e3 }, { seq: -0 }, { seq: 2 ** 53 - 1 }, { seq: 2 ** 53 }, { seq: 1.5 }, { seq: true }, { seq: null },
    { fill_pct: "40" }, { fill_pct: 40.125 }, { fill_pct: 0 }, { fill_pct: 100 }, { fill_pct: 100.5 }, { fill_pct: -1 }, { fill_pct: null },
    { device_id: 123 }, { device_id: "" }, { device_id: "a b" }, { device_id: "bin €" }, { device_id: "." }, { device_id: ".." }, { device_id: "..." }, { device_id: "x".repeat(128) }, { device_id: "x".repeat(129) }, { device_id: "a\nb" }, { device_id: "a\u0000b" }, { device_id: "a\u0085b" }, { device_id: "a\u007fb" },
    { ts: "2026-07-16T09:00:00Z" }, { ts: "2026-07-16 09:00:00Z" }, { ts: "2026-07-16t09:00:00z" }, { ts: "2026-07-16T09:00:00.123456789Z" }, { ts: "2026-07-16T09:00:00.1234567891Z" },
    { ts: "2026-07-16T11:00:00+02:00" }, { ts: "2026-07-16T09:00:00+0000" }, { ts: "2026-07-16T09:00:00+00" }, { ts: "2026-07-16T09:00:00" }, { ts: "2026-07-16T09:00Z" },
    { ts: "2026-07-16T23:59:60Z" }, { ts: "2016-12-31T23:59:60Z" }, { ts: "0000-01-01T00:00:00Z" }, { ts: "0001-01-01T00:00:00Z" }, { ts: "2026-02-29T00:00:00Z" }, { ts: "2026-07-16T09:00:00+24:00" }, { ts: 1784192400 },
  ];
  let seq = 100;
  for (const variant of variants) {
    const reading = { device_id: "fz-reading", seq: seq++, ts: "2026-07-16T09:00:00Z", fill_pct: 40, ...variant };
    const res = await worker.call("/v1/readings", { method: "POST", headers: { ...AUTH, "content-type": "application/json" }, body: JSON.stringify([reading]) });
    const reply = await res.json();
    assert.equal(res.status, 200);
    const admitted = reply.unique === 1;
    assert.equal(admitted, valid(reading), `${JSON.stringify(variant)}: ${admitted ? "admitted" : `rejected ${reply.rejected[0]?.code}`}; the schema says ${valid(reading) ? "valid" : ajvText(valid.errors)}`);
  }
});

const ajvText = (errors) => errors.map((e) => `${e.instancePath} ${e.message}`).join("; ");
