// A 503 usually loses data (TTS open-source webhooks do not retry, ChirpStack logs
// and moves on), so the worker answers one only when a device's readings truly were
// not stored, after retrying inside the request. In workerd (Miniflare), with real
// SQLite faults: triggers (and removed rows) put into a device object's own database
// file by python3's sqlite3 between two runs, as in delivery-faults.test.mjs. Each
// test stores seq 1 of DEV in a first run, injects its fault, and runs the worker
// again on the same state.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import { acrossRestart, start, post, get, origin, tempDir, databases, sqlite, logged, logSettled, TOKEN } from "../support/harness.mjs";
import { groupName } from "../../src/worker/placement.js";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const DEV = "bin-R1";
const reading = (seq, fill_pct = seq) => ({ device_id: DEV, seq, ts: "2026-07-16T09:00:00Z", fill_pct });

/**
 * Runs `during(w)` on a worker whose state holds DEV's seq 1 and then `fault` (SQL);
 * then `after(dir)`, once that worker is stopped, on the same state.
 */
async function withFault(fault, during, after = () => {}) {
  await acrossRestart({
    before: async (w) => assert.equal((await post(w.call, "/v1/readings", [reading(1)])).status, 200),
    between: (dir) => sqlite(databases(dir, "GroupObject"), fault),
    after: during,
    stopped: after,
  });
}

const seqs = async (w) => (await get(w.call, `/v1/devices/${DEV}/readings`)).body.readings.map((r) => r.seq);

test("schedule() throwing after the commit: 200 with the verdicts (the readings are stored), one ERROR schedule_failed", async () => {
  // schedule() reads the group's open batch (delivery.js nextDelivery), which a burst's
  // transaction does not: with a column of the batches table gone, it throws after the
  // burst's transaction has committed.
  const o = await origin();
  try {
    await acrossRestart({
      vars: { ORIGIN_URL: o.url },
      before: async (w) => assert.equal((await post(w.call, "/v1/readings", [reading(1)])).status, 200),
      between: (dir) => sqlite(databases(dir, "GroupObject"), "ALTER TABLE batches DROP COLUMN last_error;"),
      after: async (w) => {
        const res = await post(w.call, "/v1/readings", [reading(2), reading(3)]);
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.deepEqual([body.unique, body.not_stored, body.errors], [2, undefined, undefined]);
        await logSettled(w);
        const lines = logged(w, "schedule_failed");
        assert.equal(lines.length, 1, w.lines.join("\n"));
        const { level, device_id, burst_id, error } = lines[0];
        assert.deepEqual({ level, device_id, burst_id }, { level: "ERROR", device_id: DEV, burst_id: body.burst_id });
        assert.match(error, /no such column: last_error/);
        assert.deepEqual(logged(w, "burst_not_stored"), [], "nothing is reported as not stored");
        assert.equal(logged(w, "burst_deduplicated", body.burst_id).length, 1, "one audit line for the burst");
        // Stored: a replay is suppressed.
        const replay = await (await post(w.call, "/v1/readings", [reading(2), reading(3)])).json();
        assert.deepEqual(replay.duplicates, [0, 1]);
      },
    });
  } finally {
    await o.close();
  }
});

test("a storage write that fails once is retried inside the request: 200, the burst stored once, one WARN storage_retry", async () => {
  // A transient fault, deterministic: SQLite's total_changes() counts the rows this
  // object's connection has written since it opened, and a rollback does not take
  // them back. Each attempt writes seqs 2..51 (50 rows) before seq 52: the first
  // reaches seq 52 with fewer than 60 changes (whatever the object wrote before the
  // burst, e.g. its alarm's flush, is a handful of rows) and fails; the retry has
  // written 100 more and passes. The WARN line shows the first attempt did fail.
  const fault = "CREATE TRIGGER once BEFORE INSERT ON readings WHEN NEW.seq = 52 AND total_changes() < 60 BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  const burst = Array.from({ length: 51 }, (_, i) => reading(i + 2));
  await withFault(fault, async (w) => {
    const res = await post(w.call, "/v1/readings", burst);
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.admitted.map((a) => a.index), burst.map((_, i) => i));
    assert.deepEqual(await seqs(w), [1, ...burst.map((r) => r.seq)]);
    await logSettled(w);
    const retries = logged(w, "storage_retry", body.burst_id);
    assert.deepEqual(retries.map(({ level, device_id, write }) => ({ level, device_id, write })), [{ level: "WARN", device_id: DEV, write: 1 }], w.lines.join("\n"));
    assert.match(retries[0].error, /injected/);
    const audit = logged(w, "burst_deduplicated", body.burst_id);
    assert.deepEqual(audit.map((a) => a.payload.unique), [51], "one audit line, as one burst");
    assert.deepEqual(logged(w, "burst_not_stored"), []);
  });
});

test("a storage write that keeps failing: 3 attempts, then 503 retry_later with nothing stored; the retry of the rest is admitted", async () => {
  const fault = "CREATE TRIGGER always BEFORE INSERT ON readings WHEN NEW.seq = 3 BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await withFault(fault, async (w) => {
    const res = await post(w.call, "/v1/readings", [reading(2), reading(3)]);
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.equal(res.headers.get("retry-after"), "1");
    assert.equal(body.error.code, "retry_later");
    assert.deepEqual([body.unique, body.not_stored, body.errors.map((e) => e.code)], [0, [0, 1], ["storage_unavailable"]]);
    assert.deepEqual(await seqs(w), [1], "nothing of the burst is stored");
    await logSettled(w);
    assert.deepEqual(logged(w, "storage_retry", body.burst_id).map((l) => l.write), [1, 2]);
    assert.equal(logged(w, "burst_not_stored", body.burst_id).length, 1);
    const rest = await (await post(w.call, "/v1/readings", [reading(2)])).json();
    assert.equal(rest.unique, 1, "the failed attempts left no key admitted");
    assert.deepEqual(await seqs(w), [1, 2]);
  });
});

test("a group-object call that throws is retried, 3 calls in all, then 503 device_unavailable with nothing stored", async () => {
  // The group object's constructor throws (its prepare() inserts the flush row, which
  // a trigger refuses), so every call to it throws in the caller.
  const fault = "DELETE FROM flush; CREATE TRIGGER refuse BEFORE INSERT ON flush BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await withFault(
    fault,
    async (w) => {
      const res = await post(w.call, "/v1/readings", [reading(2), reading(3)]);
      const body = await res.json();
      assert.equal(res.status, 503, JSON.stringify(body));
      assert.deepEqual([body.error.code, body.not_stored, body.errors.map((e) => e.code)], ["retry_later", [0, 1], ["device_unavailable"]]);
      assert.match(body.errors[0].message, /injected/);
      await logSettled(w);
      const calls = logged(w, "device_call_failed", body.burst_id);
      assert.deepEqual(calls.map(({ level, devices, attempt }) => ({ level, devices, attempt })), [0, 1, 2].map((attempt) => ({ level: "WARN", devices: [DEV], attempt })), w.lines.join("\n"));
      assert.equal(logged(w, "burst_not_stored", body.burst_id).length, 1);
    },
    async (dir) => {
      sqlite(databases(dir, "GroupObject"), "DROP TRIGGER IF EXISTS refuse;");
      const w = await start({ persist: dir });
      try {
        assert.deepEqual(await seqs(w), [1], "nothing of the burst was stored");
        assert.equal((await (await post(w.call, "/v1/readings", [reading(2), reading(3)])).json()).unique, 2);
      } finally {
        await w.mf.dispose();
      }
    },
  );
});

test("every call to a group object that throws answers 503 device_unavailable with Retry-After, the ledger and a re-drive as the other device routes", async () => {
  // As above: the group object's constructor throws, so every call to it does.
  const fault = "DELETE FROM flush; CREATE TRIGGER refuse BEFORE INSERT ON flush BEGIN SELECT RAISE(ABORT, 'injected'); END;";
  await withFault(fault, async (w) => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const calls = [
      ["GET", "readings"],
      ["POST", "redrive"],
      ["GET", "gaps"],
      ["GET", "history"],
      ["GET", "config"],
      ["POST", "reset"],
    ];
    for (const [method, route] of calls) {
      const res = await w.call(`/v1/devices/${DEV}/${route}`, { method, headers: auth });
      const body = await res.json();
      assert.deepEqual([res.status, body.error?.code, res.headers.get("retry-after")], [503, "device_unavailable", "1"], `${method} ${route}: ${JSON.stringify(body)}`);
      assert.match(body.error.message, /injected/);
    }
  });
});

/** The counters of DEV as its group holds them (figures.js), read from the group object. */
async function counters(w) {
  const ns = await w.mf.getDurableObjectNamespace("GROUPS");
  const { figures } = await ns.get(ns.idFromName(groupName(DEV))).healthOf({ device_id: DEV });
  const { missing_seqs, ...counts } = figures;
  return counts;
}

test("a retried call (attempt > 0) answers readings its burst already stored as admitted, and counts nothing twice", async () => {
  // No fault can throw a call after its commit from outside (a throw from schedule()
  // is answered now), so this calls the device object directly (Miniflare's
  // namespace), with the plan the worker makes (the core's parseUplink), as the
  // worker's retry of a call whose answer was lost would.
  const dir = tempDir();
  const w = await start({ persist: dir });
  try {
    // seq 2 twice (the second copy a duplicate), seq 4 refused (fill_pct > 100)
    const text = JSON.stringify([reading(2), reading(3), reading(2), reading(4, 101)]);
    const first = await (await post(w.call, "/v1/readings", text)).json();
    assert.deepEqual([first.unique, first.duplicates, first.rejected.length], [2, [2], 1]);
    const plan = JSON.parse(pkg.parseUplink("readings", new TextEncoder().encode(text), { maxReadings: 10_000 }));
    const { readings } = plan.devices[0];
    assert.deepEqual(readings.map((r) => r.key), [...first.admitted.map((a) => a.key), first.admitted[0].key], "the plan the worker made");
    const ns = await w.mf.getDurableObjectNamespace("GROUPS");
    const call = (burst_id, attempt) => ns.get(ns.idFromName(groupName(DEV))).ingest({ device_id: DEV, readings, refused: 1, refused_codes: { invalid_fill_pct: 1 }, route: "readings", burst_id, attempt });
    const retried = await call(first.burst_id, 1);
    assert.deepEqual([retried.ok, [...retried.verdicts]], [true, [0, 0, 2]], "stored by the earlier attempt: admitted, as it answered");
    assert.deepEqual([...(await call(first.burst_id, 0)).verdicts], [2, 2, 2], "a first call of the same burst id is a replay");
    assert.deepEqual([...(await call("another-burst", 1)).verdicts], [2, 2, 2], "rows stored by another burst stay duplicates");
    assert.deepEqual(await seqs(w), [2, 3], "nothing stored twice");
    await logSettled(w);
    const recognised = logged(w, "burst_already_stored", first.burst_id);
    assert.deepEqual(recognised.map(({ level, device_id, attempt, readings: n }) => ({ level, device_id, attempt, readings: n })), [{ level: "INFO", device_id: DEV, attempt: 1, readings: 2 }]);
    assert.equal(logged(w, "burst_deduplicated", first.burst_id).length, 2, "the first call's audit line and the replay's, none for the retried call");
    // Three calls counted (the first, the replay, the other burst), 4 readings each;
    // the retried one's were counted with the rows the earlier attempt stored.
    assert.deepEqual(await counters(w), { received: 12, unique: 2, duplicates_suppressed: 7, rejected: 3, "rejected:invalid_fill_pct": 3 });
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a burst its device cannot admit (its stored keys are corrupt) still writes its audit line: burst_not_stored", async () => {
  // The seen-set is rebuilt from the stored keys on a cold start; one that is not a
  // key makes the rebuild, and so the admission, fail before anything is written.
  await withFault("UPDATE readings SET key = device_id || ':corrupt' WHERE seq = 1;", async (w) => {
    const res = await post(w.call, "/v1/readings", [reading(2), reading(3, 30)]);
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.deepEqual([body.not_stored, body.errors.map((e) => e.code)], [[0, 1], ["invalid_key"]]);
    await logSettled(w);
    const lines = logged(w, "burst_not_stored", body.burst_id);
    assert.equal(lines.length, 1, w.lines.join("\n"));
    assert.deepEqual([lines[0].payload.received, lines[0].payload.not_stored, lines[0].error], [2, 2, "invalid_key"]);
  });
});

test("a simulated uplink on a device whose stored keys are corrupt: a coded error, as the real uplink gets, not 500 internal_error", async () => {
  const eui = "E000000000000005";
  const uplink = (seq, simulated) => {
    const v = JSON.parse(fs.readFileSync(new URL("../fixtures/webhooks/tts/simulated_uplink.json", import.meta.url), "utf8"));
    v.end_device_ids.dev_eui = eui;
    v.uplink_message.decoded_payload = { seq, ts: "2026-07-16T09:00:00Z", fill_pct: 20 };
    if (!simulated) delete v.simulated;
    return JSON.stringify(v);
  };
  const dir = tempDir();
  try {
    const first = await start({ persist: dir });
    try {
      assert.equal((await post(first.call, "/v1/uplinks/ttn", uplink(1, false))).status, 200);
    } finally {
      await first.mf.dispose();
    }
    sqlite(databases(dir, "GroupObject"), "UPDATE readings SET key = device_id || ':corrupt';");
    const w = await start({ persist: dir });
    try {
      const real = await post(w.call, "/v1/uplinks/ttn", uplink(2, false));
      const realBody = await real.json();
      assert.deepEqual([real.status, realBody.errors?.map((e) => e.code)], [503, ["invalid_key"]], JSON.stringify(realBody));
      const sim = await post(w.call, "/v1/uplinks/ttn", uplink(2, true));
      const body = await sim.json();
      assert.notEqual(body.error?.code, "internal_error", JSON.stringify(body));
      assert.deepEqual([sim.status, body.error?.code], [503, "device_unavailable"], JSON.stringify(body));
      assert.match(body.error.message, /invalid_key|key/);
    } finally {
      await w.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a retried call (attempt > 0) of a burst whose first call admitted nothing (only duplicates and a refused reading) counts nothing twice", async () => {
  // As above: the device object called directly, as the worker's retry of a call
  // that committed (its counts) but whose answer was lost.
  const dir = tempDir();
  const w = await start({ persist: dir });
  try {
    assert.equal((await (await post(w.call, "/v1/readings", [reading(2)])).json()).unique, 1);
    const text = JSON.stringify([reading(2), reading(4, 101)]);
    const first = await (await post(w.call, "/v1/readings", text)).json();
    assert.deepEqual([first.unique, first.duplicates, first.rejected.length], [0, [0], 1]);
    const plan = JSON.parse(pkg.parseUplink("readings", new TextEncoder().encode(text), { maxReadings: 10_000 }));
    const ns = await w.mf.getDurableObjectNamespace("GROUPS");
    const retried = await ns.get(ns.idFromName(groupName(DEV))).ingest({ device_id: DEV, readings: plan.devices[0].readings, refused: 1, refused_codes: { invalid_fill_pct: 1 }, route: "readings", burst_id: first.burst_id, attempt: 1 });
    assert.deepEqual([retried.ok, [...retried.verdicts]], [true, [2]]);
    // Two bursts: 1 reading, then 2 (a duplicate, a refused one); the retry counted with the second.
    assert.deepEqual(await counters(w), { received: 3, unique: 1, duplicates_suppressed: 1, rejected: 1, "rejected:invalid_fill_pct": 1 });
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
