// Raw uplinks under faults, retries and hostile input, in workerd (Miniflare): storage faults injected as real
// SQLite triggers in a device object's database between two runs (as
// store-retry.test.mjs does), retried device calls made as the worker makes them
// (the device object called directly with the core's plan and attempt > 0),
// concurrent configuration calls, and hostile payloads. Each test checks that every
// reply, audit line and /v1/stats figure reconciles and that nothing is lost or
// counted twice.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { acrossRestart, assertReconciles, databases, fixture, logged, logSettled, putConfig, readingsOf, retryRawCall, sendUplink, sqlite, start, statsOf, tempDir, until } from "../support/harness.mjs";

const raw = (name) => JSON.parse(fixture(`raw/${name}`));
/** An EM310-UDL uplink with only its bytes and no version_ids: parked until configured. */
const bare = (device, f_cnt = 1) => {
  const body = raw("tts-no-version-ids.json");
  body.end_device_ids = { ...body.end_device_ids, dev_eui: device, device_id: `d-${device}` };
  body.uplink_message = { ...body.uplink_message, f_cnt, received_at: new Date(Date.parse("2026-07-16T09:00:00Z") + f_cnt * 600_000).toISOString() };
  return body;
};
const EM310 = { codec: "milesight-iot/em310-udl", bin_depth_mm: 1000 };

const send = (w, route, body) => sendUplink(w.call, route, body);
const configure = (w, id, body) => putConfig(w.call, id, body);
const ledger = (w, id) => readingsOf(w.call, id);
const stats = (w) => statsOf(w.call);
const reconciles = assertReconciles;
/**
 * Runs `setup(w)` on a fresh persisted worker, stops it, applies `fault` (SQL) to every
 * group object's database, and runs `during(w)` on the same state.
 */
async function withFault(setup, fault, during) {
  await acrossRestart({
    vars: { STATS_FLUSH_MS: "10" },
    before: setup,
    between: (dir) => sqlite(databases(dir, "GroupObject"), fault),
    after: during,
  });
}

/** withFault on a device `id` that is known (its bin configured, no codec) and not yet sent anything. */
const unconfiguredWithFault = (id, fault, during) => withFault(async (w) => assert.equal((await configure(w, id, { bin_depth_mm: 1000 })).status, 200), fault, during);

/** The audit line of a burst of which nothing was stored, once the log has it. */
async function notStoredLine(w, burst_id) {
  await logSettled(w);
  const lines = logged(w, "burst_not_stored", burst_id);
  assert.equal(lines.length, 1, w.lines.join("\n"));
  return lines[0];
}

/** Runs `during(w)` on a fresh worker (not persisted). */
async function withWorker(during) {
  const w = await start({ vars: { STATS_FLUSH_MS: "10" } });
  try {
    await during(w);
  } finally {
    await w.mf.dispose();
  }
}


test("a parking write that keeps failing: 503 storage_unavailable after 3 writes, the audit line says not_stored, not rejected", async () => {
  const DEV = "A0B1C2D3E4F5A001";
  const fault = "CREATE TRIGGER refuse BEFORE INSERT ON parked BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await unconfiguredWithFault(DEV, fault, async (w) => {
    const r = await send(w, "ttn", bare(DEV, 1));
    assert.equal(r.status, 503, JSON.stringify(r.body));
    reconciles(r.body);
    assert.deepEqual([r.body.not_stored, r.body.errors.map((e) => e.code)], [[0], ["storage_unavailable"]], JSON.stringify(r.body));
    const line = await notStoredLine(w, r.body.burst_id);
    assert.deepEqual(logged(w, "storage_retry", r.body.burst_id).map((l) => l.write), [1, 2], "parking is a write like a burst's: retried");
    assert.deepEqual([line.payload.received, line.payload.rejected, line.payload.not_stored], [1, 0, 1], JSON.stringify(line));
  });
});

test("a parking write that fails once is retried inside the request: 200 parked, counted once", async () => {
  const DEV = "A0B1C2D3E4F5A002";
  // A transient fault, deterministic: each attempt copies 100 rows into a scratch
  // table before the check, and total_changes() (rows this connection wrote since it
  // opened) keeps them across the rollback; the first attempt fails, the second passes.
  const fault = `CREATE TABLE scratch (n); CREATE TABLE scratch_copy (n);
    INSERT INTO scratch SELECT value FROM json_each('[${Array.from({ length: 100 }, (_, i) => i)}]');
    CREATE TRIGGER once BEFORE INSERT ON parked BEGIN
      INSERT INTO scratch_copy SELECT n FROM scratch;
      SELECT RAISE(ABORT, 'injected') WHERE total_changes() < 150;
    END;`;
  await unconfiguredWithFault(DEV, fault, async (w) => {
    const r = await send(w, "ttn", bare(DEV, 1));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.parked?.map((p) => p.code), ["device_not_configured"]);
    const s = await quietStats(w, (s) => s.received === 1);
    assert.deepEqual([s.parked, s.parked_uplinks], [1, 1]);
  });
});

test("a device object that cannot be reached for a raw uplink: the audit line says not_stored, as the reply does", async () => {
  const DEV = "A0B1C2D3E4F5A003";
  // The group object's constructor throws (prepare() inserts the flush row, refused).
  const fault = "DELETE FROM flush; CREATE TRIGGER refuse BEFORE INSERT ON flush BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await unconfiguredWithFault(DEV, fault, async (w) => {
    const r = await send(w, "ttn", bare(DEV, 1));
    assert.equal(r.status, 503, JSON.stringify(r.body));
    reconciles(r.body);
    assert.deepEqual([r.body.not_stored, r.body.rejected], [[0], []]);
    const line = await notStoredLine(w, r.body.burst_id);
    assert.deepEqual([line.payload.received, line.payload.rejected, line.payload.not_stored], [1, 0, 1], JSON.stringify(line));
  });
});

test("a decoded raw uplink whose write keeps failing: the reply counts its samples not stored, as the audit line does", async () => {
  const DEV = "A0B1C2D3E4F5A004";
  const body = raw("tts-em500-udl-history.json");
  body.end_device_ids = { ...body.end_device_ids, dev_eui: DEV };
  const fault = "CREATE TRIGGER refuse BEFORE INSERT ON readings BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await withFault(
    async (w) => assert.equal((await configure(w, DEV, { bin_depth_mm: 1500 })).status, 200),
    fault,
    async (w) => {
      const r = await send(w, "ttn", body);
      assert.equal(r.status, 503, JSON.stringify(r.body));
      reconciles(r.body);
      const line = await notStoredLine(w, r.body.burst_id);
      // Two history records: the audit line counts two readings not stored; the reply must too.
      assert.deepEqual([line.payload.received, line.payload.not_stored], [2, 2], JSON.stringify(line));
      assert.deepEqual([r.body.received, r.body.not_stored], [2, [0, 1]], JSON.stringify(r.body));
      assert.deepEqual(r.body.verdicts, [0, 1].map((index) => ({ index, verdict: "not_stored" })));
      assert.equal(r.body.decoded?.codec, "milesight-iot/em500-udl");
    },
  );
});

test("a DF703 uplink whose counter reference cannot be written: nothing stored, 503, reply and audit line agree", async () => {
  const DEV = "A0B1C2D3E4F5A005";
  const rx = { ...raw("loriot-df703-rx.json"), EUI: DEV };
  const fault = "CREATE TRIGGER refuse BEFORE INSERT ON codec_state BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await withFault(
    async (w) => assert.equal((await configure(w, DEV, { codec: "dingtek/df703", bin_depth_mm: 2500 })).status, 200),
    fault,
    async (w) => {
      const r = await send(w, "loriot", rx);
      assert.equal(r.status, 503, JSON.stringify(r.body));
      reconciles(r.body);
      assert.deepEqual(await ledger(w, DEV), [], "nothing stored without its counter reference");
      const line = await notStoredLine(w, r.body.burst_id);
      assert.deepEqual([line.payload.received, line.payload.not_stored], [r.body.received, r.body.not_stored.length], JSON.stringify({ line, reply: r.body }));
    },
  );
});

test("an alarm that cannot be armed after an uplink was parked is logged (ERROR schedule_failed), as after a stored burst", async () => {
  const DEV = "A0B1C2D3E4F5A006";
  // schedule() reads the group's outbox cursor (for retention): gone (and kept out), it
  // throws after the commit; parking an uplink does not read it.
  const fault = "DELETE FROM outbox; CREATE TRIGGER keep_out BEFORE INSERT ON outbox BEGIN SELECT RAISE(IGNORE); END;";
  await unconfiguredWithFault(DEV, fault, async (w) => {
    const r = await send(w, "ttn", bare(DEV, 1));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.parked?.map((p) => p.code), ["device_not_configured"]);
    await logSettled(w);
    assert.equal(logged(w, "schedule_failed", r.body.burst_id).length, 1, "the failure is not swallowed");
  });
});

/** /v1/stats once the devices' flushes have landed and nothing more arrives. */
async function quietStats(w, ready) {
  let last;
  await until(async () => ready((last = await stats(w))), "the flushes in /v1/stats").catch((e) => {
    throw new Error(`${e.message}; last: ${JSON.stringify(last)}`);
  });
  await new Promise((r) => setTimeout(r, 300));
  return stats(w);
}

test("a retried call (attempt > 0) of a burst that was a copy of a parked frame counts nothing twice", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5A007";
    const a = await send(w, "ttn", bare(DEV, 1));
    assert.equal(a.body.parked?.length, 1, JSON.stringify(a.body));
    const b = await send(w, "ttn", bare(DEV, 1));
    assert.deepEqual(b.body.duplicates, [0], JSON.stringify(b.body));
    // The worker's retry of b's call, whose first call committed but whose answer was lost.
    const retried = await retryRawCall(w, "ttn", bare(DEV, 1), b.body.burst_id);
    assert.equal(retried.ok, true);
    const s = await quietStats(w, (s) => s.parked_uplinks === 1 && s.received >= 2);
    assert.deepEqual([s.received, s.duplicates_suppressed, s.parked], [2, 1, 1], "two uplinks received, one kept, one copy");
  });
});

test("a retried call (attempt > 0) of a parking burst, after a PUT decoded the parked uplink, counts nothing twice", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5A008";
    const a = await send(w, "ttn", bare(DEV, 1));
    assert.equal(a.body.parked?.length, 1, JSON.stringify(a.body));
    const done = await configure(w, DEV, EM310);
    assert.deepEqual([done.body.unparked.uplinks, done.body.unparked.unique], [1, 1], JSON.stringify(done.body));
    // The worker's retry of a's call (the first committed, its answer lost), reaching the object after the PUT.
    const retried = await retryRawCall(w, "ttn", bare(DEV, 1), a.body.burst_id);
    assert.equal(retried.ok, true);
    const s = await quietStats(w, (s) => s.unique === 1 && s.parked_uplinks === 0);
    // Parked (received 1, parked 1), then decoded by the PUT (received 1, unique 1): the retry adds nothing.
    assert.deepEqual([s.received, s.unique, s.duplicates_suppressed, s.parked], [2, 1, 0, 1]);
  });
});

test("two concurrent PUTs of a device's configuration decode each parked uplink once", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5A009";
    const N = 30;
    for (let n = 1; n <= N; n++) assert.equal((await send(w, "ttn", bare(DEV, n))).body.parked?.length, 1);
    const [x, y] = await Promise.all([configure(w, DEV, EM310), configure(w, DEV, EM310)]);
    assert.deepEqual([x.status, y.status], [200, 200]);
    const sum = (name) => x.body.unparked[name] + y.body.unparked[name];
    assert.deepEqual([sum("uplinks"), sum("received"), sum("unique"), sum("duplicates_suppressed")], [N, N, N, 0], JSON.stringify([x.body.unparked, y.body.unparked]));
    assert.equal((await ledger(w, DEV)).length, N);
    const s = await quietStats(w, (s) => s.unique === N && s.parked_uplinks === 0);
    assert.deepEqual([s.received, s.parked, s.duplicates_suppressed], [2 * N, N, 0]);
  });
});

test("uplinks arriving while a PUT decodes the parked backlog: each frame one reading, the counts reconcile", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5A00A";
    const N = 20;
    for (let n = 1; n <= N; n++) await send(w, "ttn", bare(DEV, n));
    // The PUT and copies of every parked frame plus new frames, all at once.
    const [put, ...replies] = await Promise.all([configure(w, DEV, EM310), ...Array.from({ length: N }, (_, i) => send(w, "ttn", bare(DEV, i + 1 + (i % 2 ? 0 : N))))]);
    assert.equal(put.status, 200);
    for (const r of replies) reconciles(r.body);
    const rows = await ledger(w, DEV);
    assert.equal(rows.length, N + N / 2, "each frame once");
    await until(async () => (await stats(w)).parked_uplinks === 0, "the backlog gone");
    const s = await quietStats(w, (s) => s.unique === rows.length);
    assert.equal(s.received, s.unique + s.duplicates_suppressed + s.rejected + s.parked);
  });
});

test("a PUT with a codec that cannot read the parked payloads keeps them parked; the corrected PUT decodes them", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5A00B";
    assert.equal((await send(w, "ttn", bare(DEV, 1))).body.parked?.length, 1);
    // The wrong sensor: a DF703 reads fPort 3 only (unsupported_port); the sibling
    // EM500-UDL does not know the EM310-UDL's tilt channel (invalid_payload).
    for (const codec of ["dingtek/df703", "milesight-iot/em500-udl"]) {
      const wrong = await configure(w, DEV, { codec, bin_depth_mm: 1000 });
      assert.equal(wrong.status, 200);
      assert.deepEqual([wrong.body.unparked.uplinks, wrong.body.unparked.still_parked], [0, 1], `${codec}: README, uplinks the new configuration still cannot decode stay parked`);
    }
    const right = await configure(w, DEV, EM310);
    assert.deepEqual([right.body.unparked.uplinks, right.body.unparked.unique], [1, 1], JSON.stringify(right.body));
    assert.equal((await ledger(w, DEV)).length, 1);
  });
});

test("Simulate uplink with raw bytes: an unknown device's object is never started, a known one stores and parks nothing", async () => {
  const dir = tempDir();
  const w = await start({ persist: dir, vars: { STATS_FLUSH_MS: "10" } });
  const objects = () => (fs.existsSync(`${dir}/-GroupObject`) ? databases(dir, "GroupObject").length : 0);
  try {
    const history = raw("tts-em500-udl-history.json");
    const sim = (dev_eui, body = history) => ({ ...body, simulated: true, end_device_ids: { ...body.end_device_ids, dev_eui } });
    // Unknown, codec from version_ids, no bin: would be parked. Unknown, no codec at all: the same.
    const a = await send(w, "ttn", sim("A0B1C2D3E4F5B001"));
    assert.deepEqual([a.status, a.body.simulated, a.body.parked?.[0]?.code], [200, true, "device_not_configured"], JSON.stringify(a.body));
    reconciles(a.body);
    const b = await send(w, "ttn", sim("A0B1C2D3E4F5B002", bare("X")));
    assert.deepEqual([b.status, b.body.parked?.[0]?.code], [200, "device_not_configured"], JSON.stringify(b.body));
    assert.equal(objects(), 0, "no device object started for an unknown device");

    // Known and unconfigured (an uplink parked): the simulated copy parks nothing more.
    const DEV = "A0B1C2D3E4F5B003";
    assert.equal((await send(w, "ttn", bare(DEV, 1))).body.parked?.length, 1);
    const c = await send(w, "ttn", sim(DEV, bare(DEV, 2)));
    assert.deepEqual([c.status, c.body.stored, c.body.parked?.length], [200, false, 1], JSON.stringify(c.body));
    // Known and configured (the bin; the codec from version_ids): decoded verdicts, nothing stored.
    assert.equal((await configure(w, DEV, { bin_depth_mm: 1500 })).status, 200);
    const d = await send(w, "ttn", sim(DEV));
    reconciles(d.body);
    assert.deepEqual([d.body.received, d.body.unique, d.body.decoded?.codec], [2, 2, "milesight-iot/em500-udl"], JSON.stringify(d.body));
    const rows = await ledger(w, DEV);
    const e = await send(w, "ttn", sim(DEV));
    assert.deepEqual([e.body.unique, (await ledger(w, DEV)).length], [2, rows.length], "nothing stored by the simulations");
    const s = await quietStats(w, (s) => s.simulated_uplinks === 5 && s.parked_uplinks === 1);
    assert.equal(s.received, s.unique + s.duplicates_suppressed + s.rejected + s.parked);
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("hostile raw payloads: 255 bytes, 256 bytes, ports 0 and 256, odd hex, junk ChirpStack tags: each a coded answer, counted, nothing silently kept or lost", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5C001";
    assert.equal((await configure(w, DEV, { codec: "dingtek/df703", bin_depth_mm: 2500 })).status, 200);
    const rx = { ...raw("loriot-df703-rx.json"), EUI: DEV };
    const cases = [
      [{ data: "ab".repeat(255), fcnt: 10 }, "payload", "invalid_payload"],
      [{ data: "ab".repeat(256), fcnt: 11 }, "fill_pct", "missing_fill_pct", /255 bytes/],
      [{ port: 0, fcnt: 12 }, "fill_pct", "missing_fill_pct"],
      [{ port: 256, fcnt: 13 }, "fill_pct", "missing_fill_pct"],
      [{ data: rx.data.slice(1), fcnt: 14 }, "fill_pct", "missing_fill_pct", /not valid hex/],
      [{ data: rx.data.toUpperCase(), fcnt: 15 }, null, null],
    ];
    let received = 0;
    for (const [change, field, code, message] of cases) {
      const r = await send(w, "loriot", { ...rx, ...change });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      reconciles(r.body);
      received += r.body.received;
      if (code === null) {
        assert.equal(r.body.unique, 1, JSON.stringify(r.body));
        continue;
      }
      assert.deepEqual(r.body.rejected.map((x) => [x.index, x.field, x.code]), [[0, field, code]], JSON.stringify(r.body));
      if (message) assert.match(r.body.rejected[0].message, message);
    }
    // ChirpStack tags that are not a codec nor numbers: parked, naming what is missing.
    const cs = raw("chirpstack-df703-tags.json");
    cs.deviceInfo = { ...cs.deviceInfo, devEui: "A0B1C2D3E4F5C002", deviceProfileName: "dingtek/DF703", tags: { codec: "dingtek/df703 ", bin_depth_mm: "+1200", offset_mm: "1e3" } };
    const p = await send(w, "chirpstack?event=up", cs);
    assert.equal(p.status, 200);
    reconciles(p.body);
    received += p.body.received;
    assert.deepEqual(p.body.parked?.map((x) => x.code), ["device_not_configured"], JSON.stringify(p.body));
    assert.match(p.body.parked[0].message, /codec and bin_depth_mm/);
    const s = await quietStats(w, (s) => s.received === received && s.parked_uplinks === 1);
    assert.equal(s.received, s.unique + s.duplicates_suppressed + s.rejected + s.parked);
  });
});

test("a parked DF703 backlog across the counter's wrap, decoded by a PUT, then live frames and a retried call: seqs count up, nothing twice", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5D001";
    const rx = raw("loriot-df703-rx.json");
    const frame = (counter, fcnt) => ({ ...rx, EUI: DEV, fcnt, ts: rx.ts + fcnt * 600_000, data: rx.data.slice(0, 26) + counter.toString(16).padStart(4, "0") + rx.data.slice(30) });
    for (const [counter, fcnt] of [[65_534, 1], [65_535, 2], [0, 3]]) assert.equal((await send(w, "loriot", frame(counter, fcnt))).body.parked?.length, 1);
    // The gw copy of the frame after the wrap: a copy of a parked frame.
    assert.deepEqual((await send(w, "loriot", { ...frame(0, 3), cmd: "gw" })).body.duplicates, [0]);
    const done = await configure(w, DEV, { codec: "dingtek/df703", bin_depth_mm: 2500 });
    assert.deepEqual([done.body.unparked.uplinks, done.body.unparked.unique], [3, 3], JSON.stringify(done.body));
    const live = await send(w, "loriot", frame(1, 4));
    assert.equal(live.body.unique, 1);
    // The worker's retry of the live call (its answer lost): admitted, as the first call answered, and not counted again.
    const again = await retryRawCall(w, "loriot", frame(1, 4), live.body.burst_id);
    assert.deepEqual([again.ok, [...again.verdicts]], [true, [0]]);
    assert.deepEqual((await ledger(w, DEV)).map((r) => r.seq), [65_534, 65_535, 65_536, 65_537]);
    const s = await quietStats(w, (s) => s.unique === 4);
    // 4 parked-or-copy uplinks, 3 decoded, 1 live.
    assert.deepEqual([s.received, s.unique, s.duplicates_suppressed, s.parked], [8, 4, 1, 3]);
  });
});

test("the audit lines of parking, a copy and the PUT that decodes the backlog reconcile with the replies", async () => {
  await withWorker(async (w) => {
    const DEV = "A0B1C2D3E4F5D002";
    const replies = [];
    for (const n of [1, 2, 2, 3]) replies.push((await send(w, "ttn", bare(DEV, n))).body);
    const done = await configure(w, DEV, EM310);
    await logSettled(w);
    for (const b of replies) {
      // A parked uplink's burst has a second line: the PUT decoded it under the same id.
      const lines = logged(w, "burst_deduplicated", b.burst_id);
      assert.equal(lines.length, b.parked ? 2 : 1, b.burst_id);
      const p = lines[0].payload;
      assert.deepEqual([p.received, p.unique, p.duplicates_suppressed, p.rejected, p.parked ?? 0], [b.received, b.unique, b.duplicates_suppressed, b.rejected.length, b.parked?.length ?? 0], JSON.stringify({ line: p, reply: b }));
    }
    const unparked = logged(w, "uplink_unparked").filter((l) => l.device_id === DEV);
    assert.equal(unparked.length, done.body.unparked.uplinks);
    const sums = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0 };
    for (const u of unparked) for (const k of Object.keys(sums)) sums[k] += logged(w, "burst_deduplicated", u.burst_id).at(-1).payload[k];
    const { uplinks, still_parked, ...counts } = done.body.unparked;
    assert.deepEqual(sums, counts);
    assert.deepEqual([uplinks, still_parked], [3, 0]);
  });
});

test("a datalog uplink with a cross-path duplicate whose write keeps failing: 503, its audit line written, reply and line agree", async () => {
  const DEV = "A0B1C2D3E4F5A00C";
  const base = raw("tts-em310-udl-live.json");
  const uplink = (f_cnt, f_port, hex) => {
    const m = { ...base.uplink_message, f_cnt, f_port, frm_payload: Buffer.from(hex, "hex").toString("base64") };
    m.version_ids = { ...m.version_ids, brand_id: "dragino", model_id: "dds75-lb" };
    return { ...base, end_device_ids: { ...base.end_device_ids, dev_eui: DEV }, uplink_message: m };
  };
  const seconds = Math.floor(Date.parse(base.uplink_message.received_at) / 1000);
  const entry = (mm, s) => `0e1c${mm.toString(16).padStart(4, "0")}00fa02${s.toString(16).padStart(8, "0")}`;
  const fault = "CREATE TRIGGER refuse BEFORE INSERT ON readings BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await withFault(
    async (w) => {
      assert.equal((await configure(w, DEV, { bin_depth_mm: 2000 })).status, 200);
      // The live reading (fPort 2), stored before the fault.
      assert.equal((await send(w, "ttn", uplink(1, 2, "0e1c04d20000fa01"))).body.unique, 1);
    },
    fault,
    async (w) => {
      // Its datalog copy (30 s before receipt) and a new record.
      const r = await send(w, "ttn", uplink(2, 3, entry(1234, seconds - 30) + entry(1300, seconds + 900)));
      assert.equal(r.status, 503, JSON.stringify(r.body));
      reconciles(r.body);
      const line = await notStoredLine(w, r.body.burst_id);
      assert.deepEqual([line.payload.received, line.payload.not_stored, line.payload.cross_path_duplicates], [2, 2, undefined], JSON.stringify(line));
      assert.deepEqual([r.body.received, r.body.not_stored, r.body.cross_path_duplicates], [2, [0, 1], undefined], JSON.stringify(r.body));
    },
  );
});
