// The cross-path rule (docs/devices.md "One measurement by two paths") in workerd: a
// datalog record of a live reading is its duplicate, counted apart, and a reading of
// its own with the rule off; at its edges, its tolerance pinned at ±1 µs around both
// bounds for the receive-time forms the core writes (whole seconds, microseconds), two
// datalog records that could take one live reading, a record twice in one uplink, a
// live reading evicted from the seen-set by the cap while its row is kept, and a
// retried call.
import { test } from "node:test";
import assert from "node:assert/strict";
import { assertReconciles, fixture, putConfig, readingsOf, retryRawCall, sendUplink, start, statsOf, until } from "../support/harness.mjs";

const base = JSON.parse(fixture("raw/tts-em310-udl-live.json"));
/** A DDS75-LB uplink of device `id` (The Things Stack), received at `receivedAt` (RFC 3339). */
const dds = (id, fCnt, fPort, hex, receivedAt) => {
  const m = { ...base.uplink_message, f_cnt: fCnt, f_port: fPort, frm_payload: Buffer.from(hex, "hex").toString("base64"), received_at: receivedAt };
  m.version_ids = { ...m.version_ids, brand_id: "dragino", model_id: "dds75-lb" };
  return { ...base, end_device_ids: { ...base.end_device_ids, dev_eui: id, device_id: `dds-${id}` }, uplink_message: m };
};
// DDS75-LB layouts (src/codec/dragino.rs): live fPort 2, 8 bytes; datalog fPort 3, 11-byte entries.
const word = (n) => n.toString(16).padStart(4, "0");
const live = (distance) => `0e1c${word(distance)}0000fa01`;
const entry = (distance, iso) => `0e1c${word(distance)}00fa02${(Date.parse(iso) / 1000).toString(16).padStart(8, "0")}`;

const send = (w, body) => sendUplink(w.call, "ttn", body);
const configure = async (w, id) => assert.equal((await putConfig(w.call, id, { codec: "dragino/dds75-lb", bin_depth_mm: 2000 })).status, 200);
const ledger = (w, id) => readingsOf(w.call, id);
const stats = (w) => statsOf(w.call);
const reconciles = assertReconciles;

async function withWorker(vars, during) {
  const w = await start({ vars: { STATS_FLUSH_MS: "10", ...vars } });
  try {
    await during(w);
  } finally {
    await w.mf.dispose();
  }
}

/** A live reading received at `liveAt`, then a datalog of one entry at `loggedAt`, same distance: the datalog's reply. */
async function liveThenLogged(w, id, liveAt, loggedAt) {
  await configure(w, id);
  const a = await send(w, dds(id, 10, 2, live(1234), liveAt));
  assert.equal(a.body.unique, 1, JSON.stringify(a.body));
  const b = await send(w, dds(id, 11, 3, entry(1234, loggedAt), "2026-07-16T10:00:00Z"));
  reconciles(b.body);
  return b.body;
}

test("a datalog record of a reading first sent live is its duplicate, counted apart as cross_path_duplicates; with the rule off, a reading of its own", async () => {
  const id = "B0B1C2D3E4F50100";
  // The live measurement 30 s before its receipt, one 10 minutes later, one 20 minutes later.
  const datalog = entry(1234, "2026-07-16T08:59:30Z") + entry(1234, "2026-07-16T09:10:00Z") + entry(1280, "2026-07-16T09:20:00Z");
  await withWorker({}, async (w) => {
    await configure(w, id);
    assert.equal((await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"))).body.unique, 1);
    // Simulate uplink of the datalog shows what the real one will do.
    const sim = await send(w, { ...dds(id, 11, 3, datalog, "2026-07-16T10:00:00Z"), simulated: true });
    assert.deepEqual([sim.body.simulated, sim.body.unique, sim.body.duplicates, sim.body.cross_path_duplicates], [true, 2, [0], [0]], JSON.stringify(sim.body));
    const log = await send(w, dds(id, 11, 3, datalog, "2026-07-16T10:00:00Z"));
    reconciles(log.body);
    assert.deepEqual(
      [log.body.received, log.body.unique, log.body.duplicates, log.body.cross_path_duplicates],
      [3, 2, [0], [0]],
      JSON.stringify(log.body),
    );
    const line = w.lines.map((l) => (l.startsWith("{") ? JSON.parse(l) : {})).find((l) => l.burst_id === log.body.burst_id && l.event === "burst_deduplicated");
    assert.deepEqual([line.payload.duplicates_suppressed, line.payload.cross_path_duplicates], [1, 1]);
    await until(async () => (await stats(w)).cross_path_duplicates === 1, "cross_path_duplicates in /v1/stats");
    // The live reading stays the one stored; the datalog's other two are new.
    assert.equal((await ledger(w, id)).length, 3);
    // The same datalog again: all three duplicates, the first again the live reading's.
    const again = await send(w, dds(id, 12, 3, datalog, "2026-07-16T10:05:00Z"));
    assert.deepEqual([again.body.unique, again.body.duplicates_suppressed, again.body.cross_path_duplicates], [0, 3, [0]], JSON.stringify(again.body));
  });
  await withWorker({ CROSS_PATH_TOLERANCE_MS: "0" }, async (w) => {
    await configure(w, id);
    const first = await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"));
    const second = await send(w, dds(id, 11, 3, datalog, "2026-07-16T10:00:00Z"));
    assert.deepEqual([first.body.unique, second.body.unique, second.body.cross_path_duplicates], [1, 3, undefined], JSON.stringify(second.body));
  });
});

test("the tolerance is inclusive at both bounds, exact to the microsecond, for receive times with and without a fraction", async () => {
  const cases = {
    // tolerance: [live receive time, datalog device time, crossed?]
    1204: [
      ["2026-07-16T09:00:11.204Z", "2026-07-16T09:00:10Z", true], // +1204 ms exactly
      ["2026-07-16T09:00:11.204001Z", "2026-07-16T09:00:10Z", false],
      ["2026-07-16T09:00:11.203999Z", "2026-07-16T09:00:10Z", true],
      ["2026-07-16T09:00:08.796Z", "2026-07-16T09:00:10Z", true], // −1204 ms exactly
      ["2026-07-16T09:00:08.795999Z", "2026-07-16T09:00:10Z", false],
    ],
    1000: [
      ["2026-07-16T09:00:11Z", "2026-07-16T09:00:10Z", true], // ts and bound both without a fraction
      ["2026-07-16T09:00:11.000001Z", "2026-07-16T09:00:10Z", false],
      ["2026-07-16T09:00:09Z", "2026-07-16T09:00:10Z", true],
      ["2026-07-16T09:00:08.999999Z", "2026-07-16T09:00:10Z", false],
    ],
  };
  for (const [tolerance, list] of Object.entries(cases)) {
    await withWorker({ CROSS_PATH_TOLERANCE_MS: tolerance }, async (w) => {
      for (const [n, [liveAt, loggedAt, crossed]] of list.entries()) {
        const id = `B0B1C2D3E4F5${tolerance.padStart(4, "0")}`.slice(0, 14) + String(n).padStart(2, "0");
        const b = await liveThenLogged(w, id, liveAt, loggedAt);
        assert.deepEqual([b.unique, b.cross_path_duplicates], crossed ? [0, [0]] : [1, undefined], `${tolerance} ms, live ${liveAt}, logged ${loggedAt}: ${JSON.stringify(b)}`);
      }
    });
  }
});

test("of two datalog records that could be one live reading, the nearer in time takes it, whatever their order in the payload", async () => {
  await withWorker({}, async (w) => {
    const id = "B0B1C2D3E4F50101";
    await configure(w, id);
    assert.equal((await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"))).body.unique, 1);
    // Oldest first, as the DDS75-LB logs: 100 s before the live reading, then 10 s before it.
    const b = await send(w, dds(id, 11, 3, entry(1234, "2026-07-16T08:58:20Z") + entry(1234, "2026-07-16T08:59:50Z"), "2026-07-16T10:00:00Z"));
    reconciles(b.body);
    assert.deepEqual([b.body.unique, b.body.cross_path_duplicates], [1, [1]], JSON.stringify(b.body));
    // The ledger holds the live reading and the record 100 s before it, not the live one twice.
    assert.deepEqual((await ledger(w, id)).map((r) => r.ts), ["2026-07-16T09:00:00+00:00", "2026-07-16T08:58:20+00:00"]);
  });
});

test("a datalog record twice in one uplink, a live reading's copy: both are its duplicates, nothing stored", async () => {
  await withWorker({}, async (w) => {
    const id = "B0B1C2D3E4F50102";
    await configure(w, id);
    assert.equal((await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"))).body.unique, 1);
    const twice = entry(1234, "2026-07-16T08:59:50Z");
    const b = await send(w, dds(id, 11, 3, twice + twice, "2026-07-16T10:00:00Z"));
    reconciles(b.body);
    // Without the rule the second is the first's duplicate (one key); with it, it must not become a reading of its own.
    assert.deepEqual([b.body.unique, b.body.duplicates], [0, [0, 1]], JSON.stringify(b.body));
    assert.equal((await ledger(w, id)).length, 1);
  });
});

test("a live reading evicted from the seen-set by the cap, its row kept: its datalog record re-admits it as the live reading, which stays recognisable", async () => {
  await withWorker({ MAX_KEYS_PER_DEVICE: "1" }, async (w) => {
    const id = "B0B1C2D3E4F50103";
    await configure(w, id);
    const a = await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"));
    assert.equal(a.body.unique, 1);
    // A second live reading evicts the first's key (cap 1); the first's row stays (TTL).
    assert.equal((await send(w, dds(id, 11, 2, live(1500), "2026-07-16T09:10:00Z"))).body.unique, 1);
    const record = dds(id, 12, 3, entry(1234, "2026-07-16T08:59:50Z"), "2026-07-16T10:00:00Z");
    const first = await send(w, record);
    // The key was forgotten by the cap: admitted again, under the live reading's key (as the live reading resent would be).
    assert.deepEqual([first.body.unique, first.body.admitted[0].key], [1, a.body.admitted[0].key], JSON.stringify(first.body));
    const rows = await ledger(w, id);
    assert.equal(rows.length, 2, JSON.stringify(rows));
    // The same datalog again: the row is still the live reading's, so the record is its duplicate.
    const again = await send(w, { ...record, uplink_message: { ...record.uplink_message, f_cnt: 13 } });
    assert.deepEqual([again.body.unique, again.body.cross_path_duplicates], [0, [0]], JSON.stringify(again.body));
    assert.equal((await ledger(w, id)).length, 2);
  });
});

test("a retried call (attempt > 0) of a datalog uplink with a cross-path duplicate answers it as the first call did and counts it once", async () => {
  await withWorker({}, async (w) => {
    const id = "B0B1C2D3E4F50104";
    await configure(w, id);
    assert.equal((await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"))).body.unique, 1);
    const body = dds(id, 11, 3, entry(1234, "2026-07-16T08:59:50Z") + entry(1300, "2026-07-16T09:10:00Z"), "2026-07-16T10:00:00Z");
    const first = await send(w, body);
    assert.deepEqual([first.body.unique, first.body.cross_path_duplicates], [1, [0]], JSON.stringify(first.body));
    // The worker's retry of that device call (the first committed, its answer lost).
    const retried = await retryRawCall(w, "ttn", body, first.body.burst_id);
    assert.deepEqual([retried.ok, Array.from(retried.verdicts), retried.decoded.cross_path], [true, [2, 0], [0]], JSON.stringify(retried));
    const s = await until(async () => {
      const s = await stats(w);
      return s.received === 3 && s;
    }, "the figures in /v1/stats");
    assert.deepEqual([s.received, s.unique, s.duplicates_suppressed, s.cross_path_duplicates], [3, 2, 1, 1]);
  });
});

test("only live first: a datalog record stored before its live reading keeps its own key, and the live reading is stored too", async () => {
  await withWorker({}, async (w) => {
    const id = "B0B1C2D3E4F50105";
    await configure(w, id);
    const record = dds(id, 11, 3, entry(1234, "2026-07-16T08:59:50Z"), "2026-07-16T10:00:00Z");
    assert.equal((await send(w, record)).body.unique, 1);
    // The live uplink arrives late (a redelivery): it is not matched against datalog rows.
    assert.equal((await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"))).body.unique, 1);
    assert.equal((await ledger(w, id)).length, 2);
    // The record again is now the live reading's duplicate (its own row stays).
    const again = await send(w, { ...record, uplink_message: { ...record.uplink_message, f_cnt: 12 } });
    assert.deepEqual([again.body.unique, again.body.cross_path_duplicates], [0, [0]], JSON.stringify(again.body));
  });
});

test("an EM500-UDL history record (20 CE) of its live distance (03 82) is that reading; a history record in the live reading's own uplink is not", async () => {
  await withWorker({}, async (w) => {
    const id = "B0B1C2D3E4F50106";
    const le = (n, bytes) => {
      const b = Buffer.alloc(bytes);
      b.writeUIntLE(n, 0, bytes);
      return b.toString("hex");
    };
    const em500 = (fCnt, hex, receivedAt) => {
      const body = dds(id, fCnt, 85, hex, receivedAt);
      body.uplink_message.version_ids = { ...body.uplink_message.version_ids, brand_id: "milesight-iot", model_id: "em500-udl" };
      return body;
    };
    const history = (iso, mm) => `20ce${le(Date.parse(iso) / 1000, 4)}${le(mm, 2)}`;
    const res = await w.call(`/v1/devices/${id}/config`, {
      method: "PUT",
      headers: { authorization: "Bearer test-token", "content-type": "application/json" },
      body: JSON.stringify({ codec: "milesight-iot/em500-udl", bin_depth_mm: 2000 }),
    });
    assert.equal(res.status, 200);
    // A history record 30 s before the live reading in the same uplink: the live one is not stored yet.
    const a = await send(w, em500(1, history("2026-07-16T08:59:30Z", 1234) + `0382${le(1234, 2)}`, "2026-07-16T09:00:00Z"));
    assert.deepEqual([a.body.unique, a.body.cross_path_duplicates], [2, undefined], JSON.stringify(a.body));
    // Its history record later: the live reading's duplicate.
    const b = await send(w, em500(2, history("2026-07-16T09:00:05Z", 1234), "2026-07-16T10:00:00Z"));
    assert.deepEqual([b.body.unique, b.body.cross_path_duplicates], [0, [0]], JSON.stringify(b.body));
  });
});

test("the fill level, not the distance, is compared: in a 2 m bin two distances a millimetre apart can be one reading", async () => {
  await withWorker({}, async (w) => {
    const id = "B0B1C2D3E4F50107";
    await configure(w, id);
    assert.equal((await send(w, dds(id, 10, 2, live(1234), "2026-07-16T09:00:00Z"))).body.unique, 1);
    const b = await send(w, dds(id, 11, 3, entry(1235, "2026-07-16T08:59:50Z") + entry(1236, "2026-07-16T08:59:55Z"), "2026-07-16T10:00:00Z"));
    const fills = (await ledger(w, id)).map((r) => r.fill_pct);
    // 1234 mm and 1235 mm are both 38.3 %; 1236 mm is 38.2 %.
    assert.deepEqual([b.body.cross_path_duplicates, fills], [[0], [38.3, 38.2]], JSON.stringify(b.body));
  });
});
