// The worker in workerd (Miniflare), driven over HTTP with the sample webhooks, the
// shared key vectors and a real local origin. scripts/test.sh builds pkg/ first.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import http from "node:http";
import { start, post, get, fixture, ISO_TIME, keyVectors, origin, until, tempDir, TOKEN } from "../support/harness.mjs";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const worker = await start();
after(() => worker.mf.dispose());
const { call } = worker;

const reading = (device_id, seq, fill_pct, ts = "2026-07-16T09:00:00Z") => ({ device_id, seq, ts, fill_pct });

/** The sample with `fill` set in its decoded payload (the samples carry none). */
function withFill(name, fill, edit = () => {}) {
  const v = JSON.parse(fixture(name));
  const decoded = {
    "tts-v3-uplink-docs-example.json": () => v.uplink_message.decoded_payload,
    "chirpstack-v4-up-docs-example.json": () => (v.object ??= {}),
    "helium-console-uplink-docs-example.json": () => ((v.decoded ??= { status: "success" }).payload ??= {}),
  }[name]();
  Object.assign(decoded, fill);
  edit(v);
  return JSON.stringify(v);
}

const ROUTES = [
  ["ttn", "tts-v3-uplink-docs-example.json", "0004A30B001C0530", 1, "2020-02-12T15:15:45.789585559Z"],
  ["chirpstack?event=up", "chirpstack-v4-up-docs-example.json", "0101010101010101", 0, "2022-07-18T09:34:15.775023242+00:00"],
  ["helium", "helium-console-uplink-docs-example.json", "1C29FBD1D2084E21", 19, "2472-11-09T08:11:01.234Z"],
  ["loriot", "loriot-rx-docs-example.json", "0102030405060708", 1, "2016-08-10T17:37:55.433Z"],
];

for (const [route, name, devEui, seq, ts] of ROUTES) {
  test(`${route}: the docs sample without a fill level is parked or rejected with its reason, not dropped`, async () => {
    const res = await post(call, `/v1/uplinks/${route}`, fixture(name));
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual([body.received, body.unique], [1, 0]);
    if (route === "ttn") {
      // The docs example has no f_port (The Things Stack omits zeros; port 0 carries no
      // application data): no raw payload to decode, so the reading is rejected.
      assert.deepEqual(body.rejected.map((r) => [r.index, r.code, r.device_id]), [[0, "missing_fill_pct", devEui]]);
      assert.equal(body.parked, undefined);
    } else {
      // Raw bytes of a device without a configuration: kept.
      assert.deepEqual(body.rejected, []);
      assert.deepEqual(body.parked.map((r) => [r.index, r.code, r.device_id]), [[0, "device_not_configured", devEui]]);
    }
  });

  // LORIOT sends no decoded payload: its fill level comes from a codec (raw-uplinks.test.mjs).
  if (route !== "loriot") test(`${route}: a sample with a fill level is admitted once, its replay suppressed`, async () => {
    const body = withFill(name, { fill_pct: 47.5 });
    const expected = pkg.idempotencyKey({ device_id: devEui, seq, ts, fill_pct: 47.5 });
    const first = await (await post(call, `/v1/uplinks/${route}`, body)).json();
    assert.deepEqual(first.admitted, [{ index: 0, key: expected }]);
    const replay = await post(call, `/v1/uplinks/${route}`, body);
    assert.equal(replay.status, 200);
    const again = await replay.json();
    assert.deepEqual([again.unique, again.duplicates_suppressed, again.duplicates], [0, 1, [0]]);
    const ledger = await get(call, `/v1/devices/${devEui}/readings`);
    assert.deepEqual(ledger.body.readings.map((r) => r.key), [expected]);
    assert.equal(ledger.body.readings[0].delivery, "stored", "no ORIGIN_URL: kept in the ledger");
  });
}

test("every shared key vector gets its key through the worker", async () => {
  const readings = keyVectors.map((v) => v.reading);
  const res = await post(call, "/v1/readings", { readings });
  assert.equal(res.status, 200);
  const out = await res.json();
  assert.equal(out.received, readings.length);
  assert.equal(out.unique + out.duplicates_suppressed + out.rejected.length, out.received);
  assert.equal(out.not_stored, undefined, "everything was stored");
  const admitted = new Map(out.admitted.map((a) => [a.index, a.key]));
  const seen = new Set();
  keyVectors.forEach((v, i) => {
    if (admitted.has(i)) assert.equal(admitted.get(i), v.key, v.name);
    else assert.ok(out.duplicates.includes(i) && seen.has(v.key), `${v.name}: a duplicate of an earlier vector`);
    seen.add(v.key);
  });
});

test("a replayed native burst is suppressed and same-second distinct readings are both kept", async () => {
  const burst = [reading("bin-R1", 41, 62.5), reading("bin-R1", 42, 71.0), reading("bin-R1", 41, 62.5)];
  const first = await (await post(call, "/v1/readings", burst)).json();
  assert.deepEqual(first.admitted.map((a) => a.index), [0, 1], "both same-second readings kept");
  assert.deepEqual(first.duplicates, [2]);
  const replay = await (await post(call, "/v1/readings", { readings: burst })).json();
  assert.deepEqual([replay.unique, replay.duplicates], [0, [0, 1, 2]]);
});

test("a burst of many devices is split per device and merged back by index", async () => {
  const burst = [
    reading("bin-M1", 1, 10),
    reading("bin-M2", 1, 20),
    reading("bin-M1", 1, 10),
    { device_id: "bin-M2", seq: 2, ts: "2026-07-16T09:00:00Z", fill_pct: 120 },
    { seq: 3 },
    reading("bin-M3", 1, 30),
  ];
  const out = await (await post(call, "/v1/readings", burst)).json();
  assert.deepEqual(out.admitted.map((a) => [a.index, a.key.split(":")[0]]), [[0, "bin-M1"], [1, "bin-M2"], [5, "bin-M3"]]);
  assert.deepEqual(out.duplicates, [2]);
  assert.deepEqual(out.rejected.map((r) => [r.index, r.code]), [[3, "invalid_fill_pct"], [4, "missing_device_id"]]);
});

test("a TTS uplink without f_cnt gets seq 0", async () => {
  const body = withFill("tts-v3-uplink-docs-example.json", { fill_pct: 5 }, (v) => {
    delete v.uplink_message.f_cnt;
    v.end_device_ids.dev_eui = "00000000000000F0";
  });
  const out = await (await post(call, "/v1/uplinks/ttn", body)).json();
  assert.equal(out.admitted[0].key, pkg.idempotencyKey({ device_id: "00000000000000F0", seq: 0, ts: "2020-02-12T15:15:45.789585559Z", fill_pct: 5 }));
});

test("ChirpStack: other events are acknowledged and ignored, protobuf is refused", async () => {
  const join = await post(call, "/v1/uplinks/chirpstack?event=join", "{}");
  assert.equal(join.status, 200);
  const proto = await post(call, "/v1/uplinks/chirpstack?event=up", "\x0a\x01", { "content-type": "application/octet-stream" });
  assert.equal(proto.status, 415);
  const err = (await proto.json()).error;
  assert.equal(err.code, "unsupported_media_type");
  assert.match(err.message, /Protobuf/);
});

test("auth: missing and wrong tokens are refused, health is public, reads need the token", async () => {
  const body = JSON.stringify([reading("bin-AUTH", 1, 1)]);
  const none = await call("/v1/readings", { method: "POST", headers: { "content-type": "application/json" }, body });
  assert.equal(none.status, 401);
  assert.equal((await none.json()).error.code, "unauthorized");
  const wrong = await post(call, "/v1/readings", body, { authorization: `Bearer ${TOKEN}x` });
  assert.equal(wrong.status, 401);
  const prefix = await post(call, "/v1/readings", body, { authorization: `Bearer ${TOKEN.slice(0, -1)}` });
  assert.equal(prefix.status, 401);
  assert.equal((await call("/v1/stats")).status, 401);
  assert.equal((await call("/v1/devices/bin-AUTH/readings")).status, 401);
  assert.deepEqual(await (await call("/v1/health")).json(), { ok: true });
  const ledger = await get(call, "/v1/devices/bin-AUTH/readings");
  assert.deepEqual(ledger.body.readings, [], "nothing was admitted by the refused requests");
});

test("health: answered while a fleet's uplinks keep the worker busy, not after them", async (t) => {
  // Senders that send again as soon as they are answered keep workerd's event queue
  // from running dry; its sockets are read only then (fanout.js yieldToIo), so before
  // the fix a request on a new connection waited, unread, for the load to end.
  const url = await worker.mf.ready;
  const LANES = 8;
  const PER_LANE = 12;
  const DEVICES = 100;
  const agent = new http.Agent({ keepAlive: true, maxSockets: LANES });
  const send = (method, p, body, via) =>
    new Promise((resolve, reject) => {
      const headers = body ? { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } : {};
      const req = http.request(new URL(p, url), { method, agent: via, headers }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
      });
      req.on("error", reject);
      req.end(body);
    });
  let answered = 0;
  let healthAnswered = false;
  let warm;
  const warmed = new Promise((resolve) => (warm = resolve));
  const lane = async (l) => {
    for (let r = 0; r < PER_LANE && !healthAnswered; r++) {
      const body = JSON.stringify(Array.from({ length: DEVICES }, (_, i) => reading(`busy-${l}-${r}-${i}`, 1, 50)));
      assert.equal(await send("POST", "/v1/readings", body, agent), 200);
      if (++answered === LANES) warm();
    }
  };
  const load = Promise.all(Array.from({ length: LANES }, (_, l) => lane(l)));
  await warmed;
  const sentAfter = answered;
  // A new connection, as a monitor's probe makes.
  assert.equal(await send("GET", "/v1/health", null, false), 200);
  healthAnswered = true;
  const meanwhile = answered - sentAfter;
  await load;
  agent.destroy();
  t.diagnostic(`health answered after ${sentAfter + meanwhile} of ${LANES * PER_LANE} uplink requests, ${meanwhile} of them while it waited`);
  assert.ok(answered < LANES * PER_LANE, `health was answered only after the load ended (${answered} of ${LANES * PER_LANE} uplink requests)`);
  assert.ok(meanwhile <= 3 * LANES, `${meanwhile} uplink requests were answered while health waited`);
});

test("auth: no token configured refuses ingest; a custom header name works", async () => {
  const closed = await start({ vars: { INGEST_TOKEN: "" } });
  const custom = await start({ vars: { AUTH_HEADER: "x-ingest-token" } });
  try {
    const res = await post(closed.call, "/v1/readings", [reading("bin-C", 1, 1)]);
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error.code, "auth_not_configured");
    const ok = await post(custom.call, "/v1/readings", [reading("bin-C", 1, 1)], { authorization: "", "x-ingest-token": TOKEN });
    assert.equal(ok.status, 200);
    const bad = await post(custom.call, "/v1/readings", [reading("bin-C", 1, 1)], { authorization: "", "x-ingest-token": "nope" });
    assert.equal(bad.status, 401);
  } finally {
    await Promise.all([closed.mf.dispose(), custom.mf.dispose()]);
  }
});

test("limits: oversized, too many readings, not JSON, malformed JSON, not a burst", async () => {
  const big = await post(call, "/v1/readings", `[${" ".repeat(1024 * 1024)}]`);
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error.code, "body_too_large");
  const many = Array.from({ length: 10_001 }, (_, i) => ({ device_id: "bin-N", seq: i }));
  const tooMany = await post(call, "/v1/readings", many);
  assert.equal(tooMany.status, 413);
  assert.equal((await tooMany.json()).error.code, "too_many_readings");
  const form = await post(call, "/v1/readings", "a=1", { "content-type": "application/x-www-form-urlencoded" });
  assert.equal(form.status, 415);
  const bad = await post(call, "/v1/uplinks/ttn", '{"uplink_message": ');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, "invalid_json");
  const notBurst = await post(call, "/v1/readings", '{"x": 1}');
  assert.equal(notBurst.status, 400);
  assert.equal((await notBurst.json()).error.code, "invalid_burst");
  assert.equal((await get(call, "/v1/devices/bin-N/readings")).body.readings.length, 0);
});

test("two concurrent deliveries of the same burst admit each reading exactly once", async () => {
  const burst = Array.from({ length: 50 }, (_, i) => reading(`bin-P${i % 3}`, i, i));
  const replies = await Promise.all([post(call, "/v1/readings", burst), post(call, "/v1/readings", burst)]);
  const bodies = await Promise.all(replies.map((r) => r.json()));
  const admitted = bodies.flatMap((b) => b.admitted.map((a) => a.index));
  assert.deepEqual(admitted.sort((a, b) => a - b), burst.map((_, i) => i), "every reading admitted once in total");
  for (const [i, r] of replies.entries()) {
    const b = bodies[i];
    // The device object admits and stores without awaiting in between: the second
    // copy meets a stored key, never one still being stored.
    assert.equal(r.status, 200);
    assert.equal(b.unique + b.duplicates_suppressed + b.rejected.length, burst.length);
  }
  for (let d = 0; d < 3; d++) {
    const rows = (await get(call, `/v1/devices/bin-P${d}/readings`)).body.readings;
    assert.equal(new Set(rows.map((r) => r.key)).size, rows.length);
    assert.equal(rows.length, burst.filter((r) => r.device_id === `bin-P${d}`).length);
  }
});

test("stats reconcile received with unique, duplicates, rejected and parked", async () => {
  // The roll-up may lag by STATS_FLUSH_MS, but each device's figures arrive whole.
  const body = await until(async () => {
    const b = (await get(call, "/v1/stats")).body;
    return b.devices >= 10 && b;
  }, "the devices' first flushes");
  assert.equal(body.received, body.unique + body.duplicates_suppressed + body.rejected + body.parked);
  assert.ok(body.parked > 0, "the docs samples above were parked");
  assert.equal(body.pending_deliveries, 0);
  assert.equal(body.oldest_undelivered_age_ms, null);
});

test("an origin that fails 3 times gets every reading exactly once, with idempotency keys", async () => {
  const o = await origin({ failures: 3 });
  const w = await start({ vars: { ORIGIN_URL: o.url, RETRY_BASE_MS: "5", RETRY_MAX_MS: "20", DELIVERY_BATCH: "7", STATS_FLUSH_MS: "50" } });
  try {
    const burst = Array.from({ length: 20 }, (_, i) => reading(i % 2 ? "bin-O1" : "bin-O2", i, i));
    const out = await (await post(w.call, "/v1/readings", burst)).json();
    assert.equal(out.unique, 20);
    const stats = await until(async () => {
      const s = (await get(w.call, "/v1/stats")).body;
      return s.delivered === 20 && s.pending_deliveries === 0 && s;
    }, "all deliveries");
    assert.equal(stats.oldest_undelivered_age_ms, null);
    assert.ok(o.requests.filter((r) => !r.ok).length === 3, "the origin failed 3 times");
    const accepted = o.accepted();
    assert.deepEqual([...accepted].sort(), out.admitted.map((a) => a.key).sort(), "each key once, none lost");
    for (const r of o.requests) {
      assert.match(r.idempotencyKey, /^[0-9a-f]{64}$/);
      assert.ok(r.body.readings.length <= 7);
      for (const x of r.body.readings) assert.equal(x.key, pkg.idempotencyKey(x));
    }
    const ledger = (await get(w.call, "/v1/devices/bin-O1/readings")).body.readings;
    assert.ok(ledger.every((r) => r.delivery === "delivered"));
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("after a restart on the same state, replays are suppressed and the backlog is delivered", async () => {
  const dir = tempDir();
  const dead = await origin();
  const deadUrl = dead.url;
  await dead.close(); // nothing listens there any more: every delivery fails
  const burst = [reading("bin-S1", 1, 11), reading("bin-S1", 2, 22), reading("bin-S2", 1, 33)];
  const first = await start({ persist: dir, vars: { ORIGIN_URL: deadUrl, RETRY_BASE_MS: "5", RETRY_MAX_MS: "5", STATS_FLUSH_MS: "50" } });
  let keys;
  try {
    keys = (await (await post(first.call, "/v1/readings", burst)).json()).admitted.map((a) => a.key);
    assert.equal(keys.length, 3);
    const s = await until(async () => {
      const b = (await get(first.call, "/v1/stats")).body;
      return b.failed_attempts >= 4 && b;
    }, "failed attempts");
    assert.equal(s.pending_deliveries, 3);
    assert.notEqual(s.oldest_undelivered_age_ms, null);
  } finally {
    await first.mf.dispose();
  }
  const o = await origin();
  const second = await start({ persist: dir, vars: { ORIGIN_URL: o.url, RETRY_BASE_MS: "5", RETRY_MAX_MS: "5", STATS_FLUSH_MS: "50" } });
  try {
    const replay = await (await post(second.call, "/v1/readings", burst)).json();
    assert.deepEqual([replay.unique, replay.duplicates], [0, [0, 1, 2]], "the seen-set was rebuilt from storage");
    await until(async () => (await get(second.call, "/v1/stats")).body.pending_deliveries === 0, "backlog delivered");
    assert.deepEqual(o.accepted().sort(), keys.sort());
  } finally {
    await second.mf.dispose();
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("after a restart, the key cap and the TTL hold as if the seen-set had never been dropped", async () => {
  const dir = tempDir();
  const [a, b, c] = [1, 2, 3].map((seq) => reading("bin-K1", seq, seq));
  const short = reading("bin-K2", 1, 50);
  const vars = { MAX_KEYS_PER_DEVICE: "2" };
  const send = async (w, r) => {
    const out = await (await post(w.call, "/v1/readings", [r])).json();
    return out.unique === 1 ? "admitted" : out.duplicates_suppressed === 1 ? "duplicate" : JSON.stringify(out);
  };
  const first = await start({ persist: dir, vars });
  try {
    for (const r of [a, b, c]) assert.equal(await send(first, r), "admitted");
  } finally {
    await first.mf.dispose();
  }
  // TTL_MS = 1: whatever the rebuild holds of bin-K2 must have expired by the next request.
  const tiny = await start({ persist: dir, vars: { ...vars, TTL_MS: "1" } });
  try {
    assert.equal(await send(tiny, short), "admitted");
  } finally {
    await tiny.mf.dispose();
  }
  const second = await start({ persist: dir, vars });
  try {
    // The cap of 2 pushed `a` out before the restart; the rebuild keeps b and c.
    assert.equal(await send(second, c), "duplicate");
    assert.equal(await send(second, b), "duplicate");
    assert.equal(await send(second, a), "admitted", "evicted by the cap before the restart");
    assert.equal(await send(second, b), "admitted", "the cap still evicts the oldest after the rebuild");
    assert.equal(await send(second, short), "duplicate", "admitted under TTL_MS=1, live under the default TTL");
  } finally {
    await second.mf.dispose();
  }
  const expired = await start({ persist: dir, vars: { ...vars, TTL_MS: "1" } });
  try {
    assert.equal(await send(expired, short), "admitted", "the rebuild leaves out keys past the TTL");
  } finally {
    await expired.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the README's curl examples: with-fill fixtures admit, then suppress", async () => {
  const w = await start();
  try {
    const tts = fixture("with-fill/tts-v3-uplink.json");
    const first = await (await post(w.call, "/v1/uplinks/ttn", tts)).json();
    assert.deepEqual(first.admitted, [{ index: 0, key: "0004A30B001C0530:1:d7f366a3cb678f45" }]);
    assert.equal((await (await post(w.call, "/v1/uplinks/ttn", tts)).json()).duplicates_suppressed, 1);
    const cs = await (await post(w.call, "/v1/uplinks/chirpstack?event=up", fixture("with-fill/chirpstack-v4-up.json"))).json();
    assert.deepEqual(cs.admitted.map((a) => a.index), [0, 1], "same-second buffered readings both kept");
  } finally {
    await w.mf.dispose();
  }
});

test("a failed write answers 503, admits nothing half-way, and the retry is admitted", async () => {
  // Real fault injection, no mock: a SQLite trigger, added to the object's own
  // database file between two runs, aborts inserts of seq 99. python3's sqlite3
  // edits the file while no runtime holds it.
  const dir = tempDir();
  const dbDir = path.join(dir, "-GroupObject");
  const first = await start({ persist: dir });
  try {
    assert.equal((await post(first.call, "/v1/readings", [reading("bin-F1", 1, 10)])).status, 200);
  } finally {
    await first.mf.dispose();
  }
  const db = fs.readdirSync(dbDir).find((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  const sql = (statement) =>
    execFileSync("python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()", path.join(dbDir, db), statement]);
  sql("CREATE TRIGGER fail_seq_99 BEFORE INSERT ON readings WHEN NEW.seq = 99 BEGIN SELECT RAISE(ABORT, 'injected'); END");
  const w = await start({ persist: dir });
  try {
    const burst = [reading("bin-F1", 98, 20), reading("bin-F1", 99, 30)];
    const failed = await post(w.call, "/v1/readings", burst);
    assert.equal(failed.status, 503);
    assert.equal(failed.headers.get("retry-after"), "1");
    const body = await failed.json();
    assert.deepEqual([body.unique, body.admitted, body.not_stored], [0, [], [0, 1]]);
    assert.equal(body.errors[0].code, "storage_unavailable");
    const ledger = (await get(w.call, "/v1/devices/bin-F1/readings")).body.readings.map((r) => r.seq);
    assert.deepEqual(ledger, [1], "nothing of the failed burst was stored");
    // The seen-set was dropped and rebuilt from the rows: the retry is admitted.
    const retry = await (await post(w.call, "/v1/readings", [burst[0]])).json();
    assert.deepEqual([retry.unique, retry.not_stored], [1, undefined]);
    const ledgerAfter = (await get(w.call, "/v1/devices/bin-F1/readings")).body.readings.map((r) => r.seq);
    assert.deepEqual(ledgerAfter, [1, 98]);
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("one audit line per device and burst, in the core's format, and every line reconciles", async () => {
  const w = await start();
  try {
    const burst = [
      reading("bin-L1", 1, 10),
      reading("bin-L2", 1, 20),
      reading("bin-L1", 1, 10), // a replay inside the burst
      reading("bin-L2", 2, 101), // rejected, but routable to bin-L2
      { seq: 3, ts: "2026-07-16T09:00:00Z", fill_pct: 5 }, // no device: unroutable
    ];
    const reply = await (await post(w.call, "/v1/readings", burst)).json();
    const audit = () =>
      w.lines
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l))
        .filter((a) => a.event === "burst_deduplicated" && a.burst_id === reply.burst_id);
    const lines = await until(() => audit().length === 3 && audit(), "three audit lines");
    const total = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0 };
    for (const a of lines) {
      const p = a.payload;
      assert.equal(a.level, "INFO");
      assert.equal(a.route, "readings");
      assert.match(a.logged_at, ISO_TIME);
      assert.equal(p.received, p.unique + p.duplicates_suppressed + p.rejected, JSON.stringify(a));
      assert.ok(!("pending" in p) && !("not_stored" in p), "nothing provisional, everything stored");
      for (const k of Object.keys(total)) total[k] += p[k];
    }
    assert.deepEqual(lines.map((a) => a.device_id ?? null).sort(), ["bin-L1", "bin-L2", null].sort());
    assert.deepEqual(total, { received: 5, unique: 2, duplicates_suppressed: 1, rejected: 2 });
    assert.deepEqual([reply.received, reply.unique, reply.duplicates_suppressed, reply.rejected.length], [5, 2, 1, 2]);
  } finally {
    await w.mf.dispose();
  }
});

test("no /v1 reply may be kept by a shared cache but the OpenAPI document: Cache-Control no-store", async () => {
  // A cache in front (a CDN rule, Varnish before a self-hosted workerd) keys on the URL;
  // with the token in AUTH_HEADER rather than Authorization it would keep an authorised
  // reply and give it to the next request, token or not.
  const auth = { authorization: `Bearer ${TOKEN}` };
  await post(call, "/v1/readings", [reading("bin-cache", 1, 10)]);
  const replies = {
    "POST /v1/readings": await post(call, "/v1/readings", [reading("bin-cache", 1, 10)]),
    "GET /v1/devices/bin-cache/readings": await call("/v1/devices/bin-cache/readings", { headers: auth }),
    "GET /v1/devices/bin-cache/gaps": await call("/v1/devices/bin-cache/gaps", { headers: auth }),
    "GET /v1/devices/bin-cache/config": await call("/v1/devices/bin-cache/config", { headers: auth }),
    "GET /v1/devices/bin-cache/history": await call("/v1/devices/bin-cache/history", { headers: auth }),
    "GET /v1/devices/health": await call("/v1/devices/health", { headers: auth }),
    "GET /v1/health": await call("/v1/health"),
    "GET /v1/stats without a token": await call("/v1/stats"),
    "HEAD /v1/devices/bin-cache/readings": await call("/v1/devices/bin-cache/readings", { method: "HEAD", headers: auth }),
  };
  for (const [what, res] of Object.entries(replies)) {
    await res.arrayBuffer();
    assert.equal(res.headers.get("cache-control"), "no-store", `${what} → ${res.status}`);
  }
  const doc = await call("/v1/openapi.json");
  await doc.arrayBuffer();
  assert.equal(doc.headers.get("cache-control"), "public, max-age=300");
});
