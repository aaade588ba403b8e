// Every event type each network server can post to the worker's URL, as its own
// sources and docs write it (tests/fixtures/webhooks/<server>/, sources in that
// folder's README.md), run in workerd: the status, the reply, what is stored in the
// ledger and what /v1/stats counts. Then what an operator does in the first hour:
// Simulate uplink, the same frame delivered twice, the DevEUI as ChirpStack shows it,
// a field mask, nested decoder output.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { databases, fixture, get, post, start, tempDir, until } from "../support/harness.mjs";

let worker;
let dir;
before(async () => {
  dir = tempDir();
  worker = await start({ persist: dir });
});
after(() => worker.mf.dispose());

const json = (name) => JSON.parse(fixture(name));
const stats = async () => (await get(worker.call, "/v1/stats")).body;
const ledger = async (id) => (await get(worker.call, `/v1/devices/${id}/readings`)).body.readings;
/** Device objects whose storage was written (a table exists), counted on disk. */
const writtenObjects = () => {
  try {
    return databases(dir, "GroupObject").length;
  } catch {
    return 0;
  }
};

// file, route (query included), the reply's expected verdict:
//   ["ignored", "<route>/<event>"]  acknowledged 200, nothing stored, counted by type
//   ["rejected", code]              200, the one reading rejected for its device
//   ["parked"]                      200, the one uplink kept undecoded for its device
//                                   (raw bytes, no configuration: device_not_configured)
//   ["copy"]                        200, a copy of a frame parked already: a duplicate
//   ["simulated"]                   200, previewed, nothing stored, simulated_uplinks + 1
const TABLE = [
  ...["join_accept", "downlink_ack", "downlink_nack", "downlink_sent", "downlink_failed", "downlink_queued", "downlink_queue_invalidated", "location_solved", "service_data", "uplink_normalized"].map(
    (e) => [`tts/${e}.json`, "ttn", ["ignored", `ttn/${e}`]],
  ),
  // The docs example has no f_port (TTS omits zeros): no raw payload to decode.
  ["tts/uplink_message.json", "ttn", ["rejected", "missing_fill_pct"]],
  ["tts/simulated_uplink.json", "ttn", ["simulated"]],
  ...["join", "ack", "txack", "log", "status", "location", "integration"].map((e) => [`chirpstack/${e}.json`, `chirpstack?event=${e}`, ["ignored", `chirpstack/${e}`]]),
  ["chirpstack/up.json", "chirpstack?event=up", ["parked"]],
  ["helium/join.json", "helium", ["ignored", "helium/join"]],
  ["helium/uplink.json", "helium", ["parked"]],
  ["loriot/rx.json", "loriot", ["parked"]],
  ["loriot/gw.json", "loriot", ["copy"]],
  ["loriot/tx.json", "loriot", ["ignored", "loriot/tx"]],
  ["loriot/cq_response.json", "loriot", ["ignored", "loriot/cq"]],
];

test("every fixture: its status, its reply, nothing stored, counted by type", async () => {
  const objectsBefore = writtenObjects();
  const before = await stats();
  const ignoredBefore = before.ignored_events;
  const expectIgnored = {};
  let simulated = 0;
  for (const [file, route, [verdict, detail]] of TABLE) {
    const res = await post(worker.call, `/v1/uplinks/${route}`, fixture(file));
    const body = await res.json();
    assert.equal(res.status, 200, `${file}: ${JSON.stringify(body)}`);
    if (verdict === "ignored") {
      const [r, event] = detail.split("/");
      assert.deepEqual([body.ignored, body.route, body.event], [true, r, event], file);
      expectIgnored[detail] = (expectIgnored[detail] ?? 0) + 1;
    } else if (verdict === "rejected") {
      assert.deepEqual([body.received, body.unique, body.rejected.map((x) => x.code)], [1, 0, [detail]], file);
      assert.ok(body.rejected[0].device_id, `${file}: counted for its device`);
    } else if (verdict === "parked") {
      assert.deepEqual([body.received, body.unique, body.rejected, body.parked.map((x) => x.code)], [1, 0, [], ["device_not_configured"]], file);
      assert.ok(body.parked[0].device_id, `${file}: kept for its device`);
    } else if (verdict === "copy") {
      assert.deepEqual([body.received, body.unique, body.duplicates, body.parked], [1, 0, [0], undefined], file);
    } else {
      assert.deepEqual([body.simulated, body.stored, body.received], [true, false, 1], file);
      simulated += 1;
    }
  }
  // The parked and rejected uplinks reach /v1/stats with their devices' first flush; the others never.
  const count = (verdict) => TABLE.filter(([, , [v]]) => v === verdict).length;
  const [parked, copies, rejected] = [count("parked"), count("copy"), count("rejected")];
  const s = await until(async () => {
    const now = await stats();
    return now.received - before.received >= parked + copies + rejected && now;
  }, "the devices' flushes");
  const delta = (name) => s[name] - before[name];
  assert.deepEqual(
    ["received", "parked", "duplicates_suppressed", "rejected", "unique", "parked_uplinks"].map(delta),
    [parked + copies + rejected, parked, copies, rejected, 0, parked],
  );
  for (const [name, n] of Object.entries(expectIgnored)) assert.equal(s.ignored_events[name] - (ignoredBefore[name] ?? 0), n, name);
  assert.equal(s.simulated_uplinks, simulated);
  // Parked and rejected uplinks are counted per device (their objects registered), but no row was stored.
  for (const id of ["0004A30B001C0530", "0101010101010101", "1C29FBD1D2084E21", "0102030405060708"]) assert.deepEqual(await ledger(id), [], id);
  // Ignored events and the simulated uplink started no device object of their own.
  assert.equal(writtenObjects() - objectsBefore, 4, "one per device with a parked or rejected uplink");
});

test("the docs' own uplinks without a fill level are parked with a message naming what the device lacks and the call that gives it", async () => {
  for (const [file, route] of [["loriot/rx.json", "loriot"], ["helium/uplink.json", "helium"]]) {
    const reply = await (await post(worker.call, `/v1/uplinks/${route}`, fixture(file))).json();
    // Kept already by the test above: this copy is its duplicate.
    assert.deepEqual([reply.unique, reply.duplicates], [0, [0]], file);
  }
  const tts = await (await post(worker.call, "/v1/uplinks/ttn", fixture("tts/uplink_message.json"))).json();
  assert.match(tts.rejected[0].message, /payload formatter/);
  const fresh = json("loriot/rx.json");
  fresh.EUI = "0102030405060799";
  const reply = await (await post(worker.call, "/v1/uplinks/loriot", JSON.stringify(fresh))).json();
  assert.match(reply.parked[0].message, /has no codec and bin_depth_mm .*PUT \/v1\/devices\/\{device_id\}\/config/);
});

// --- with a fill level: the same frame twice, Simulate uplink -----------------------

/** A fixture with device `eui`, a decoded fill level and no decoded ts. */
const UPLINKS = {
  ttn: {
    file: "tts/uplink_message.json",
    set: (v, eui, fill) => ((v.end_device_ids.dev_eui = eui), (v.uplink_message.decoded_payload = { fill_pct: fill })),
    later: (v) => (v.uplink_message.received_at = "2020-02-12T15:20:45.7Z"),
  },
  "chirpstack?event=up": {
    file: "chirpstack/up.json",
    set: (v, eui, fill) => ((v.deviceInfo.devEui = eui), (v.object = { fill_pct: fill })),
    later: (v) => (v.time = "2022-07-18T09:40:15.1Z"),
  },
  helium: {
    file: "helium/uplink.json",
    set: (v, eui, fill) => ((v.dev_eui = eui), (v.decoded = { status: "success", payload: { fill_pct: fill } })),
    later: (v) => (v.reported_at += 300_000),
  },
};
const body = (route, eui, fill, edit = () => {}) => {
  const u = UPLINKS[route];
  const v = json(u.file);
  u.set(v, eui, fill);
  edit(v, u);
  return JSON.stringify(v);
};

for (const [route, i] of Object.keys(UPLINKS).map((r, i) => [r, i])) {
  test(`${route}: the same frame delivered again later is a duplicate, not a second reading`, async () => {
    const eui = `F00000000000000${i}`;
    const first = await (await post(worker.call, `/v1/uplinks/${route}`, body(route, eui, 55))).json();
    assert.equal(first.unique, 1);
    // A network-server retry, a second region, a replay from the console: later receive time.
    const again = await (await post(worker.call, `/v1/uplinks/${route}`, body(route, eui, 55, (v, u) => u.later(v)))).json();
    assert.deepEqual([again.unique, again.duplicates], [0, [0]], JSON.stringify(again));
    // The next frame (another counter) is a reading of its own.
    const next = body(route, eui, 56, (v) => {
      if (v.uplink_message) v.uplink_message.f_cnt += 1;
      else if (v.fCnt !== undefined) v.fCnt += 1;
      else v.fcnt += 1;
    });
    assert.equal((await (await post(worker.call, `/v1/uplinks/${route}`, next)).json()).unique, 1);
    assert.equal((await ledger(eui)).length, 2);
  });
}

test("the same frame again: a reading its first copy held as a duplicate within the uplink stays a duplicate", async () => {
  // A buffered burst without ts or seq: every element has the frame counter and the
  // receive time, so two equal samples are one key; the first copy stores one row.
  const eui = "F000000000000010";
  const burst = (edit) => body("ttn", eui, 0, (v, u) => ((v.uplink_message.decoded_payload = { readings: [{ fill_pct: 40 }, { fill_pct: 40 }] }), edit(v, u)));
  const first = await (await post(worker.call, "/v1/uplinks/ttn", burst(() => {}))).json();
  assert.deepEqual([first.unique, first.duplicates], [1, [1]], JSON.stringify(first));
  const again = await (await post(worker.call, "/v1/uplinks/ttn", burst((v, u) => u.later(v)))).json();
  assert.deepEqual([again.unique, again.duplicates], [0, [0, 1]], JSON.stringify(again));
  assert.equal((await ledger(eui)).length, 1);
});

test("Simulate uplink: the outcome it would have had, nothing stored, forwarded or counted with real readings", async () => {
  const eui = "E000000000000001";
  const sim = (fill) => {
    const v = json("tts/simulated_uplink.json");
    v.end_device_ids.dev_eui = eui;
    v.uplink_message.decoded_payload = { fill_pct: fill };
    return JSON.stringify(v);
  };
  const objects = writtenObjects();
  const before = await stats();
  const first = await (await post(worker.call, "/v1/uplinks/ttn", sim(30))).json();
  assert.deepEqual([first.simulated, first.stored, first.unique, first.duplicates_suppressed], [true, false, 1, 0]);
  assert.match(first.admitted[0].key, /^E000000000000001:0:/);
  assert.equal(writtenObjects(), objects, "no device object written for a simulation");
  assert.deepEqual(await ledger(eui), []);
  // The same simulation again: still "would be admitted", nothing was stored the first time.
  assert.equal((await (await post(worker.call, "/v1/uplinks/ttn", sim(30))).json()).unique, 1);
  // Once the real reading is stored, the simulation of the same content is its duplicate.
  const real = JSON.parse(sim(30));
  delete real.simulated;
  real.correlation_ids = ["as:up:01E0WZGT6Y7657CPFPE5WEYDSR"];
  real.uplink_message.received_at = real.received_at;
  assert.equal((await (await post(worker.call, "/v1/uplinks/ttn", JSON.stringify(real))).json()).unique, 1);
  const dup = await (await post(worker.call, "/v1/uplinks/ttn", sim(30))).json();
  assert.deepEqual([dup.simulated, dup.unique, dup.duplicates], [true, 0, [0]]);
  assert.equal((await ledger(eui)).length, 1);
  const after = await stats();
  assert.equal(after.simulated_uplinks - before.simulated_uplinks, 3);
});

test("Simulate uplink on a device whose cap evicted a reading: shown admitted, as a real uplink would be", async () => {
  const w = await start({ vars: { MAX_KEYS_PER_DEVICE: "1" } });
  try {
    const eui = "E000000000000003";
    const uplink = (seq, simulated) => {
      const v = json(simulated ? "tts/simulated_uplink.json" : "tts/uplink_message.json");
      v.end_device_ids.dev_eui = eui;
      v.uplink_message.decoded_payload = { seq, ts: "2026-07-16T09:00:00Z", fill_pct: 20 };
      if (!simulated) delete v.simulated;
      return JSON.stringify(v);
    };
    for (const seq of [1, 2]) assert.equal((await (await post(w.call, "/v1/uplinks/ttn", uplink(seq, false))).json()).unique, 1);
    // seq 1 was evicted by the cap of 1: a real uplink of it is admitted again.
    const sim = await (await post(w.call, "/v1/uplinks/ttn", uplink(1, true))).json();
    assert.deepEqual([sim.simulated, sim.unique, sim.duplicates], [true, 1, []], JSON.stringify(sim));
    const still = await (await post(w.call, "/v1/uplinks/ttn", uplink(2, true))).json();
    assert.deepEqual([still.unique, still.duplicates], [0, [0]], JSON.stringify(still));
    const real = await (await post(w.call, "/v1/uplinks/ttn", uplink(1, false))).json();
    assert.equal(real.unique, 1, "the real outcome the simulation showed");
  } finally {
    await w.mf.dispose();
  }
});

// --- the DevEUI as ChirpStack shows it ---------------------------------------------

test("one device per DevEUI in any case: ingest, ledger and redrive find the same device", async () => {
  const upper = "70B3D52DD600035A";
  const res = await post(worker.call, "/v1/uplinks/chirpstack?event=up", body("chirpstack?event=up", upper.toLowerCase(), 62));
  assert.equal((await res.json()).admitted[0].key.split(":")[0], upper);
  for (const id of [upper, upper.toLowerCase(), "70b3D52dd600035A"]) {
    const rows = await ledger(id);
    assert.equal(rows.length, 1, id);
  }
  const mixed = await get(worker.call, "/v1/devices/70b3d52dd600035a/readings");
  assert.equal(mixed.body.device_id, upper);
  const redrive = await post(worker.call, "/v1/devices/70b3d52dd600035a/redrive", "");
  assert.deepEqual(await redrive.json(), { device_id: upper, redriven: 0 });
  // A native burst with the lower-case EUI is the same device too.
  const native = await post(worker.call, "/v1/readings", [{ device_id: upper.toLowerCase(), seq: 9, ts: "2026-07-16T09:00:00Z", fill_pct: 10 }]);
  assert.equal((await native.json()).unique, 1);
  assert.equal((await ledger(upper)).length, 2);
});

test("a ledger written before DevEUIs were upper-cased in every route stays readable under its id as it was", async () => {
  // What the previous version stored for a native burst naming "abcdef0123456789":
  // the device object of that exact id (the RPC the worker itself makes).
  const lower = "abcdef0123456789";
  const ns = await worker.mf.getDurableObjectNamespace("DEVICES");
  const old = await ns.get(ns.idFromName(lower)).ingest({
    device_id: lower,
    readings: [{ key: `${lower}:1:76c73ee2946cc70e`, seq: 1, ts: "2026-07-16T09:00:00+00:00", fill_pct: 62.5, frame: null }],
    route: "readings",
    burst_id: "before-upgrade",
  });
  assert.equal(old.ok, true);
  // The registry knows it under the lower-case id (its object registered so).
  const read = await get(worker.call, `/v1/devices/${lower}/readings`);
  assert.deepEqual([read.body.device_id, read.body.readings.length], [lower, 1], "the reading stored before the upgrade");
  const redrive = await post(worker.call, `/v1/devices/${lower}/redrive`, "");
  assert.deepEqual(await redrive.json(), { device_id: lower, redriven: 0 });
  // Once the upper-case device has a ledger of its own, every spelling finds that one.
  await post(worker.call, "/v1/readings", [{ device_id: lower, seq: 2, ts: "2026-07-16T09:00:00Z", fill_pct: 1 }]);
  for (const id of [lower, lower.toUpperCase()]) {
    const now = await get(worker.call, `/v1/devices/${id}/readings`);
    assert.deepEqual([now.body.device_id, now.body.readings.map((r) => r.seq)], [lower.toUpperCase(), [2]], id);
  }
});

// --- field masks ------------------------------------------------------------------------

test("a TTS field mask without end_device_ids: 400 field_mask_incomplete naming the paths; a masked other event is acknowledged", async () => {
  const v = JSON.parse(body("ttn", "E000000000000002", 12));
  delete v.end_device_ids;
  const res = await post(worker.call, "/v1/uplinks/ttn", JSON.stringify(v));
  const reply = await res.json();
  assert.equal(res.status, 400);
  assert.equal(reply.error.code, "field_mask_incomplete");
  for (const p of ["end_device_ids", "up.uplink_message.decoded_payload", "up.uplink_message.f_cnt", "simulated"]) assert.ok(reply.error.message.includes(p), p);
  // The docs' own example of a mask of only `up.uplink_message` posting a join accept.
  const masked = await post(worker.call, "/v1/uplinks/ttn", JSON.stringify({ received_at: "2020-02-12T15:15:46Z" }));
  assert.deepEqual([masked.status, (await masked.json()).event], [200, "unknown"]);
});

// --- nested decoder output -------------------------------------------------------------

test("UPLINK_FILL_FIELD as a JSON Pointer reads nested codec output; a malformed one is invalid_config at start", async () => {
  const w = await start({ vars: { UPLINK_FILL_FIELD: "/level/fill_pct", UPLINK_SEQ_FIELD: "/counter/0" } });
  try {
    const v = json("chirpstack/up.json");
    v.object = { level: { fill_pct: 62 }, counter: [7] };
    const reply = await (await post(w.call, "/v1/uplinks/chirpstack?event=up", JSON.stringify(v))).json();
    assert.equal(reply.unique, 1);
    assert.match(reply.admitted[0].key, /^0101010101010101:7:/);
  } finally {
    await w.mf.dispose();
  }
  const bad = await start({ vars: { UPLINK_FILL_FIELD: "/level~2" } });
  try {
    const res = await bad.call("/v1/health");
    const reply = await res.json();
    assert.equal(res.status, 500);
    assert.equal(reply.error.code, "invalid_config");
    assert.match(reply.error.message, /UPLINK_FILL_FIELD "\/level~2".*JSON Pointer/);
  } finally {
    await bad.mf.dispose();
  }
});
