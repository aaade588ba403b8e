// GET /v1/stats from the roll-up (src/worker/fleet.js): device objects flush their
// figures to 16 shards, /v1/stats reads the shards only. In workerd (Miniflare), over
// HTTP, with a real local origin; faults are real SQLite triggers added to the
// objects' database files between two runs (no mocks).
import { test } from "node:test";
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { acrossRestart, start, post, get, origin, until, tempDir, databases, sqlite } from "../support/harness.mjs";
import { groupName } from "../../src/worker/placement.js";

const reading = (device_id, seq, fill_pct, ts = "2026-07-16T09:00:00Z") => ({ device_id, seq, ts, fill_pct });
const unroutable = (seq) => ({ seq, ts: "2026-07-16T09:00:00Z", fill_pct: 1 });
const QUIET_MS = 120_000;

/** The reply's figures, without the time it was read at and the time of the newest flush. */
async function figures(call) {
  const { status, body } = await get(call, "/v1/stats");
  assert.equal(status, 200);
  const { as_of, last_flush_at, ...rest } = body;
  assert.ok(Math.abs(Date.parse(as_of) - Date.now()) < 60_000, `as_of ${as_of} is a current time`);
  assert.ok(last_flush_at === null || (Date.parse(last_flush_at) <= Date.parse(as_of) && Date.parse(as_of) - Date.parse(last_flush_at) < 300_000), `last_flush_at ${last_flush_at} is null or a recent time`);
  return rest;
}

/** Polls /v1/stats until it shows exactly `expected` (the flushes are in), then asserts it. */
async function quiet(call, expected) {
  let last;
  try {
    await until(async () => {
      last = await figures(call);
      return isDeepStrictEqual(last, expected);
    }, "/v1/stats to show the expected figures", QUIET_MS);
  } catch (e) {
    assert.deepEqual(last, expected, e.message);
  }
  assert.deepEqual(await figures(call), expected, "and it stays so");
}

/** Figures of a fleet with nothing waiting for delivery. */
function settled(flushMs, counters, backlog) {
  return {
    devices: 0,
    received: 0,
    unique: 0,
    duplicates_suppressed: 0,
    cross_path_duplicates: 0,
    rejected: 0,
    rejected_by_code: {},
    parked: 0,
    seq_reuses: 0,
    recovered_seqs: 0,
    seq_resets: 0,
    pending_deliveries: 0,
    oldest_undelivered_age_ms: null,
    delivered: 0,
    failed_attempts: 0,
    ledger_rows: 0,
    refused_by_origin: 0,
    parked_uplinks: 0,
    missing_seqs: 0,
    ignored_events: {},
    simulated_uplinks: 0,
    backfill_requests: { requested: 0, sent: 0, answered: 0, expired: 0, failed: 0, cancelled: 0 },
    ...counters,
    ...backlog,
    stats_flush_ms: flushMs,
  };
}

async function ingest(call, burst) {
  const res = await post(call, "/v1/readings", burst);
  assert.equal(res.status, 200);
  return res.json();
}


/** The failed reports (WARN stats_flush_failed) of `device_id`'s group: `{error, version}`. */
const flushFailures = (w, device_id) =>
  w.lines
    .filter((l) => l.startsWith("{") && l.includes('"stats_flush_failed"'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.group === groupName(device_id))
    .map((l) => ({ error: l.error, version: l.version }));

test("1 200 devices over three requests: /v1/stats is exact once the flushes are in", async () => {
  const o = await origin();
  const w = await start({ vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "100", MAX_DEVICES_PER_REQUEST: "1200" } });
  try {
    const id = (i) => `fleet-${String(i).padStart(4, "0")}`;
    const range = (from, to, f) => Array.from({ length: to - from }, (_, k) => f(from + k));
    // 1 200 devices, 100 replays inside the burst, 50 refused readings of known
    // devices, 10 without a device (rejected before any device object is asked).
    const first = [
      ...range(0, 1200, (i) => reading(id(i), 1, i % 100)),
      ...range(0, 100, (i) => reading(id(i), 1, i % 100)),
      ...range(0, 50, (i) => reading(id(i), 2, 101)),
      ...range(0, 10, unroutable),
    ];
    // 300 replays of the first request, 200 new readings, 20 seq reuses (same seq,
    // other content: admitted and counted), 5 unroutable.
    const second = [
      ...range(100, 400, (i) => reading(id(i), 1, i % 100)),
      ...range(0, 200, (i) => reading(id(i), 2, 50)),
      ...range(1000, 1020, (i) => reading(id(i), 1, (i % 100) + 0.5)),
      ...range(0, 5, unroutable),
    ];
    const replies = [await ingest(w.call, first), await ingest(w.call, second), await ingest(w.call, second)];
    const sum = (k) => replies.reduce((n, r) => n + (Array.isArray(r[k]) ? r[k].length : r[k]), 0);
    const counters = { devices: 1200, received: 2410, unique: 1420, duplicates_suppressed: 920, rejected: 70, seq_reuses: 20 };
    const byCode = { invalid_fill_pct: 50, missing_device_id: 20 };
    assert.deepEqual(
      [sum("received"), sum("unique"), sum("duplicates_suppressed"), sum("rejected")],
      [counters.received, counters.unique, counters.duplicates_suppressed, counters.rejected],
      "the replies account for the same readings",
    );
    assert.equal(counters.received, counters.unique + counters.duplicates_suppressed + counters.rejected);
    // Every admitted reading delivered: deliveries reach the roll-up too.
    await quiet(w.call, settled(100, { ...counters, rejected_by_code: byCode }, { delivered: 1420, ledger_rows: 1420 }));
    assert.equal(new Set(o.accepted()).size, 1420);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("/v1/stats reads only the roll-up: the same figures after a restart with every device object's storage gone", async () => {
  const dir = tempDir();
  const burst = [
    ...Array.from({ length: 40 }, (_, i) => reading(`bin-G${i}`, 1, i)),
    reading("bin-G0", 1, 0),
    reading("bin-G1", 2, 200),
    unroutable(1),
  ];
  const expected = settled(50, { devices: 40, received: 43, unique: 40, duplicates_suppressed: 1, rejected: 2, rejected_by_code: { invalid_fill_pct: 1, missing_device_id: 1 } }, { ledger_rows: 40 });
  const first = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
  try {
    await ingest(first.call, burst);
    await quiet(first.call, expected);
  } finally {
    await first.mf.dispose();
  }
  fs.rmSync(path.join(dir, "-GroupObject"), { recursive: true, force: true });
  const second = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
  try {
    assert.deepEqual(await figures(second.call), expected, "no device object is consulted");
    const ledger = await get(second.call, "/v1/devices/bin-G0/readings");
    assert.deepEqual(ledger.body.readings, [], "the device objects really start empty");
  } finally {
    await second.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a device's figures reach /v1/stats at most once per STATS_FLUSH_MS: later bursts wait, then arrive together", async () => {
  const FLUSH_MS = 5000;
  const w = await start({ vars: { STATS_FLUSH_MS: String(FLUSH_MS) } });
  try {
    const sentFirst = Date.now();
    await ingest(w.call, [reading("bin-B", 1, 10)]);
    // The first flush of a device goes out at once.
    await until(async () => (await figures(w.call)).received === 1, "the first flush");
    for (let seq = 2; seq <= 5; seq++) await ingest(w.call, [reading("bin-B", seq, seq)]);
    const next = await until(async () => {
      const s = await figures(w.call);
      return s.received > 1 && { ...s, at: Date.now() };
    }, "the next flush", QUIET_MS);
    assert.equal(next.received, 5, "the four later bursts came in one flush");
    assert.ok(next.at - sentFirst >= FLUSH_MS, `not before STATS_FLUSH_MS (after ${next.at - sentFirst} ms)`);
  } finally {
    await w.mf.dispose();
  }
});

test("after a restart the roll-up counts a group's devices once: the figures the group sends again are not added twice", async () => {
  const dir = tempDir();
  const vars = { STATS_FLUSH_MS: "50" };
  const once = settled(50, { devices: 1, received: 1, unique: 1 }, { ledger_rows: 1 });
  const first = await start({ persist: dir, vars });
  let flushedAt;
  try {
    await ingest(first.call, [reading("bin-ACK", 1, 10)]);
    await quiet(first.call, once);
    flushedAt = (await get(first.call, "/v1/stats")).body.last_flush_at;
  } finally {
    await first.mf.dispose();
  }
  // The group does not write down what its shard took: its first flush after the
  // restart carries the device's figures again, at the version the shard has.
  const second = await start({ persist: dir, vars });
  try {
    await ingest(second.call, [reading("bin-ACK", 2, 20), reading("bin-ACK", 2, 20), reading("bin-ACK", 3, 101)]);
    const twice = settled(50, { devices: 1, received: 4, unique: 2, duplicates_suppressed: 1, rejected: 1, rejected_by_code: { invalid_fill_pct: 1 } }, { ledger_rows: 2 });
    await quiet(second.call, twice);
    assert.notEqual((await get(second.call, "/v1/stats")).body.last_flush_at, flushedAt, "flushed again after the restart");
    assert.deepEqual(flushFailures(second, "bin-ACK"), []);
  } finally {
    await second.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a group's report the roll-up refused is kept by the group and arrives once after a restart, with no new burst", async () => {
  const dir = tempDir();
  const vars = { STATS_FLUSH_MS: "50" };
  const before = settled(50, { devices: 1, received: 1, unique: 1 }, { ledger_rows: 1 });
  const first = await start({ persist: dir, vars });
  try {
    await ingest(first.call, [reading("bin-LOST", 1, 10)]);
    await quiet(first.call, before);
  } finally {
    await first.mf.dispose();
  }
  // Every shard now refuses to change a group's figures.
  const shards = databases(dir, "FleetObject");
  assert.equal(shards.length, 16, "/v1/stats asked the 16 shards");
  sqlite(shards, "CREATE TRIGGER refuse_flush BEFORE UPDATE ON group_figures BEGIN SELECT RAISE(ABORT, 'injected: roll-up write failed'); END");
  const second = await start({ persist: dir, vars });
  try {
    await ingest(second.call, [reading("bin-LOST", 2, 20), reading("bin-LOST", 2, 20)]);
    const [failure] = await until(() => flushFailures(second, "bin-LOST").length && flushFailures(second, "bin-LOST"), "a refused flush");
    assert.match(failure.error, /injected: roll-up write failed/);
    assert.deepEqual(await figures(second.call), before, "the refused report changed nothing");
  } finally {
    await second.mf.dispose();
  }
  sqlite(shards, "DROP TRIGGER refuse_flush");
  const third = await start({ persist: dir, vars });
  try {
    // Only the group's alarm, restored from storage, can bring this.
    await quiet(third.call, settled(50, { devices: 1, received: 3, unique: 2, duplicates_suppressed: 1 }, { ledger_rows: 2 }));
  } finally {
    await third.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("backlog figures follow deliveries: waiting, failed attempts and their age, then delivered", async () => {
  const o = await origin({ failures: 2 });
  const w = await start({ vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "50", RETRY_BASE_MS: "3000", RETRY_MAX_MS: "3000" } });
  try {
    const t0 = Date.now();
    await ingest(w.call, [reading("bin-D1", 1, 10), reading("bin-D1", 2, 20), reading("bin-D2", 1, 30)]);
    // The first POST of each device fails (bin-D1's carries two readings); the
    // retries are RETRY_BASE_MS away.
    const waiting = await until(async () => {
      const s = await figures(w.call);
      return s.failed_attempts === 3 && s;
    }, "the failed attempts");
    assert.equal(waiting.pending_deliveries, 3);
    assert.equal(waiting.delivered, 0);
    assert.ok(waiting.oldest_undelivered_age_ms >= 0 && waiting.oldest_undelivered_age_ms <= Date.now() - t0, String(waiting.oldest_undelivered_age_ms));
    await quiet(w.call, settled(50, { devices: 2, received: 3, unique: 3 }, { delivered: 3, ledger_rows: 3 }));
    assert.equal(o.requests.length, 4, "one failed and one accepted POST per device");
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("/v1/stats has exactly the members docs/http-api.md lists", async () => {
  const w = await start({ vars: { STATS_FLUSH_MS: "10" } });
  try {
    const page = fs.readFileSync(new URL("../../docs/http-api.md", import.meta.url), "utf8");
    const row = page.split("\n").find((l) => l.startsWith("| `GET /v1/stats` |"));
    const listed = [...row.split("|")[2].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    const { status, body } = await get(w.call, "/v1/stats");
    assert.equal(status, 200);
    assert.deepEqual(Object.keys(body).sort(), [...new Set(listed)].sort());
  } finally {
    await w.mf.dispose();
  }
});

test("STATS_FLUSH_MS is validated like the other numbers", async () => {
  for (const bad of ["0", "1.5", "3600001", "soon"]) {
    const w = await start({ vars: { STATS_FLUSH_MS: bad } });
    try {
      const { status, body } = await get(w.call, "/v1/stats");
      assert.equal(status, 500);
      assert.equal(body.error.code, "invalid_config");
      assert.match(body.error.message, /STATS_FLUSH_MS must be a whole number in 1\.\.3600000/);
    } finally {
      await w.mf.dispose();
    }
  }
});

// --- the registry: which devices have a ledger (GET /v1/devices/{id}/readings) ------

/** Rows of `table` over the given database files (python3's sqlite3, read-only). */
function countRows(files, table) {
  const script = `import sqlite3, sys
n = 0
for f in sys.argv[2:]:
    c = sqlite3.connect("file:" + f + "?mode=ro", uri=True)
    if c.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (sys.argv[1],)).fetchone()[0]:
        n += c.execute("SELECT count(*) FROM " + sys.argv[1]).fetchone()[0]
    c.close()
print(n)`;
  return Number(execFileSync("python3", ["-c", script, table, ...files], { encoding: "utf8" }).trim());
}

test("a device whose shard cannot register it stores nothing and is answered 503 device_unavailable; the retry is admitted", async () => {
  const dir = tempDir();
  const first = await start({ persist: dir });
  try {
    await figures(first.call); // the 16 shards exist, with their tables
  } finally {
    await first.mf.dispose();
  }
  const shards = databases(dir, "FleetObject");
  assert.equal(shards.length, 16);
  sqlite(shards, "CREATE TRIGGER refuse_register BEFORE INSERT ON registered BEGIN SELECT RAISE(ABORT, 'injected: registry write failed'); END");
  const second = await start({ persist: dir });
  try {
    const res = await post(second.call, "/v1/readings", [reading("bin-REG", 1, 10)]);
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.deepEqual(body.not_stored, [0]);
    assert.equal(body.errors[0].code, "device_unavailable");
    assert.match(body.errors[0].message, /injected: registry write failed/);
  } finally {
    await second.mf.dispose();
  }
  assert.equal(countRows(databases(dir, "GroupObject"), "readings"), 0, "no reading stored");
  assert.equal(countRows(databases(dir, "GroupObject"), "registered"), 0, "not marked registered");
  sqlite(shards, "DROP TRIGGER refuse_register");
  const third = await start({ persist: dir });
  try {
    assert.deepEqual((await get(third.call, "/v1/devices/bin-REG/readings")).body.readings, []);
    assert.equal((await ingest(third.call, [reading("bin-REG", 1, 10)])).unique, 1, "the sender's retry is admitted");
    assert.equal((await get(third.call, "/v1/devices/bin-REG/readings")).body.readings.length, 1);
  } finally {
    await third.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a device known to the roll-up only (it ingested before the registry existed) has a readable ledger", async () => {
  await acrossRestart({
    vars: { STATS_FLUSH_MS: "50" },
    before: async (first) => {
      await ingest(first.call, [reading("bin-PRE", 1, 10), reading("bin-PRE", 2, 20)]);
      await quiet(first.call, settled(50, { devices: 1, received: 2, unique: 2 }, { ledger_rows: 2 }));
    },
    // As the version before the registry left it: the shard holds the device's
    // figures (its own object's flush), no registration.
    between: (dir) =>
      sqlite(databases(dir, "FleetObject"), "DELETE FROM registered; INSERT INTO device_figures (device_id, incarnation, version, figures, flushed_at) VALUES ('bin-PRE', 'its-own', 1, '{}', 0)"),
    after: async (second) => {
      assert.deepEqual((await get(second.call, "/v1/devices/bin-PRE/readings")).body.readings.map((r) => r.seq), [1, 2]);
      assert.equal((await ingest(second.call, [reading("bin-PRE", 3, 30)])).unique, 1);
      assert.deepEqual((await get(second.call, "/v1/devices/bin-PRE/readings")).body.readings.map((r) => r.seq), [1, 2, 3]);
    },
  });
});

/** A device's health row as its group holds it now (GET /v1/devices/{id}/health), without its times. */
async function healthOf(call, device_id) {
  const { status, body } = await get(call, `/v1/devices/${device_id}/health`);
  assert.equal(status, 200, JSON.stringify(body));
  const { received, unique, duplicates_suppressed, rejected, missing_seqs } = body;
  return { received, unique, duplicates_suppressed, rejected, missing_seqs };
}

test("a group restarted before its checkpoint counts every reading it stored since and keeps their seqs in its window: only the duplicates counted since are lost", async () => {
  const dir = tempDir();
  try {
    // One checkpoint (right after the first burst), then none for an hour.
    const first = await start({ persist: dir, vars: { STATS_FLUSH_MS: "3600000" } });
    try {
      await ingest(first.call, [reading("bin-CK", 1, 10)]);
      await quiet(first.call, settled(3_600_000, { devices: 1, received: 1, unique: 1 }, { ledger_rows: 1 }));
      // Seqs 2, 3 and 5 (4 missing), and a copy of 2.
      await ingest(first.call, [reading("bin-CK", 2, 20), reading("bin-CK", 3, 30), reading("bin-CK", 2, 20), reading("bin-CK", 5, 50)]);
      assert.deepEqual(await healthOf(first.call, "bin-CK"), { received: 5, unique: 4, duplicates_suppressed: 1, rejected: 0, missing_seqs: 1 });
    } finally {
      await first.mf.dispose();
    }
    const second = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
    try {
      // The readings stored after the checkpoint are counted from their rows; the copy of 2 was not stored.
      assert.deepEqual(await healthOf(second.call, "bin-CK"), { received: 4, unique: 4, duplicates_suppressed: 0, rejected: 0, missing_seqs: 1 });
      const gaps = (await get(second.call, "/v1/devices/bin-CK/gaps")).body;
      assert.deepEqual([gaps.highest, gaps.gaps.map((g) => [g.from, g.to])], [5, [[4, 4]]], "the window holds 2, 3 and 5");
      // A copy of 5 (its alarm, set an hour ahead by the first run, comes sooner so).
      assert.deepEqual((await ingest(second.call, [reading("bin-CK", 5, 50)])).duplicates, [0]);
      await quiet(second.call, settled(50, { devices: 1, received: 5, unique: 4, duplicates_suppressed: 1 }, { ledger_rows: 4, missing_seqs: 1 }));
    } finally {
      await second.mf.dispose();
    }
    const third = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
    try {
      // Checkpointed before it was reported: nothing counted twice, nothing lost.
      assert.deepEqual(await healthOf(third.call, "bin-CK"), { received: 5, unique: 4, duplicates_suppressed: 1, rejected: 0, missing_seqs: 1 });
    } finally {
      await third.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the figures' log is compacted after 64 checkpoints, and a restart loads the same figures from what is left", async () => {
  const dir = tempDir();
  const bursts = 70;
  try {
    const first = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
    try {
      // Each burst is reported (so checkpointed, just before) before the next is sent: 70 checkpoints.
      for (let seq = 1; seq <= bursts; seq++) {
        await ingest(first.call, [reading("bin-LOG", seq, 10), reading("bin-LOG", seq, 10)]);
        await until(async () => (await figures(first.call)).received === 2 * seq, `burst ${seq} reported`);
      }
    } finally {
      await first.mf.dispose();
    }
    const script = `import sqlite3, sys
for f in sys.argv[1:]:
    c = sqlite3.connect(f)
    if c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'figure_log'").fetchone()[0]:
        print(*c.execute("SELECT count(*), max(id) FROM figure_log").fetchone())`;
    const [rows, last] = execFileSync("python3", ["-c", script, ...databases(dir, "GroupObject")], { encoding: "utf8" }).trim().split(" ").map(Number);
    assert.ok(last > 64 && rows < 64, `log rows ${rows}, last id ${last}: compacted`);
    const w = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
    try {
      assert.deepEqual(await healthOf(w.call, "bin-LOG"), { received: 2 * bursts, unique: bursts, duplicates_suppressed: bursts, rejected: 0, missing_seqs: 0 });
      await quiet(w.call, settled(50, { devices: 1, received: 2 * bursts, unique: bursts, duplicates_suppressed: bursts }, { ledger_rows: bursts }));
    } finally {
      await w.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a checkpoint of more devices than a log row holds (500) writes them in rows of 500, and a restart loads every one", async () => {
  const dir = tempDir();
  // 501 devices of one group, changed within one checkpoint (a reconnect storm).
  const ids = [];
  for (let k = 1; ids.length < 501; k++) if (groupName(`bin-ST${k}`) === groupName("bin-ST0")) ids.push(`bin-ST${k}`);
  try {
    const first = await start({ persist: dir, vars: { STATS_FLUSH_MS: "5000" } });
    try {
      // A first checkpoint (of another device of the group): the next is 5 s away, and
      // takes every device the bursts below change.
      await ingest(first.call, [reading("bin-ST0", 1, 10)]);
      await until(async () => (await figures(first.call)).received === 1, "the first checkpoint reported");
      for (let i = 0; i < ids.length; i += 100) await ingest(first.call, ids.slice(i, i + 100).map((id) => reading(id, 1, 10)));
      await until(async () => (await figures(first.call)).received === 1 + ids.length, "the bursts reported", 30_000);
    } finally {
      await first.mf.dispose();
    }
    const script = `import sqlite3, sys
for f in sys.argv[1:]:
    c = sqlite3.connect(f)
    if c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'figure_log'").fetchone()[0]:
        print(*[n for (n,) in c.execute("SELECT (SELECT count(*) FROM json_each(devices)) FROM figure_log WHERE devices != '{}' ORDER BY id")])`;
    const sizes = execFileSync("python3", ["-c", script, ...databases(dir, "GroupObject")], { encoding: "utf8" }).trim().split(" ").map(Number);
    assert.deepEqual(sizes, [1, 500, 1], "the changed devices in rows of 500");
    const w = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
    try {
      for (const id of [ids[0], ids[499], ids[500]]) assert.equal((await get(w.call, `/v1/devices/${id}/health`)).body.received, 1, id);
    } finally {
      await w.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a device row an earlier release flushed to the shard leaves the totals when the device's group first reports it: counted once, by its group", async () => {
  await acrossRestart({
    vars: { STATS_FLUSH_MS: "50" },
    before: async (first) => {
      await ingest(first.call, [reading("bin-SUP", 1, 10), reading("bin-SUP", 2, 20)]);
      await quiet(first.call, settled(50, { devices: 1, received: 2, unique: 2 }, { ledger_rows: 2 }));
    },
    // As a release that flushed one row per device left its shard (the one its group
    // reports to): the device's row, and its figures in the shard's totals beside what
    // its group reported.
    between: (dir) => {
      const mine = `EXISTS (SELECT 1 FROM group_figures WHERE group_id = '${groupName("bin-SUP")}')`;
      sqlite(
        databases(dir, "FleetObject"),
        `INSERT INTO device_figures (device_id, incarnation, version, figures, flushed_at) SELECT 'bin-SUP', 'its-own', 3, '{"received":2,"unique":2,"labelled":{}}', 0 WHERE ${mine};
         INSERT INTO counters (name, value) SELECT name, n FROM (SELECT 'received' AS name, 2 AS n UNION ALL SELECT 'unique', 2 UNION ALL SELECT 'devices', 1) WHERE ${mine} ON CONFLICT (name) DO UPDATE SET value = value + excluded.value;`,
      );
    },
    after: async (second) => {
      const { body } = await get(second.call, "/v1/stats");
      assert.deepEqual([body.devices, body.received, body.unique], [2, 4, 4], "before the group reports, the shard counts the device twice (the state the earlier release left)");
      assert.deepEqual((await ingest(second.call, [reading("bin-SUP", 2, 20)])).duplicates, [0]);
      await quiet(second.call, settled(50, { devices: 1, received: 3, unique: 2, duplicates_suppressed: 1 }, { ledger_rows: 2 }));
    },
    stopped: (dir) => {
      const script = `import sqlite3, sys
print(sum(sqlite3.connect(f).execute("SELECT count(*) FROM device_figures").fetchone()[0] for f in sys.argv[1:]))`;
      assert.equal(execFileSync("python3", ["-c", script, ...databases(dir, "FleetObject")], { encoding: "utf8" }).trim(), "0", "the device's row is gone");
    },
  });
});

test("a reading forgotten and admitted again after the checkpoint is counted as often across a restart as before it: its renewed row does not stand for one admission only", async () => {
  // The origin refuses (500) every batch: the rows stay pending past the outbox
  // cursor, so a re-admission renews the row in place (admission.js `store`).
  const o = await origin({ answer: () => ({ status: 500 }) });
  const dir = tempDir();
  const vars = { STATS_FLUSH_MS: "3600000", ORIGIN_URL: o.url, RETRY_BASE_MS: "60000", RETRY_MAX_MS: "60000" };
  const D = "bin-RENEW";
  const forget = async (call, key) => {
    const res = await post(call, `/v1/devices/${D}/forget`, { key });
    assert.equal(res.status, 200, await res.text());
  };
  try {
    const first = await start({ persist: dir, vars });
    try {
      // One checkpoint (right after the first burst), then none for an hour.
      const one = (await ingest(first.call, [reading(D, 1, 10)])).admitted[0].key;
      await until(async () => (await figures(first.call)).received === 1, "the first burst reported");
      // Seq 1, checkpointed, admitted again; seq 2, admitted after the checkpoint, admitted again.
      await forget(first.call, one);
      assert.equal((await ingest(first.call, [reading(D, 1, 10)])).unique, 1);
      const two = (await ingest(first.call, [reading(D, 2, 20)])).admitted[0].key;
      await forget(first.call, two);
      assert.equal((await ingest(first.call, [reading(D, 2, 20)])).unique, 1);
      assert.deepEqual(await healthOf(first.call, D), { received: 4, unique: 4, duplicates_suppressed: 0, rejected: 0, missing_seqs: 0 });
    } finally {
      await first.mf.dispose();
    }
    const second = await start({ persist: dir, vars });
    try {
      // Four admissions, every one with a row stored: none lost by the restart.
      assert.deepEqual(await healthOf(second.call, D), { received: 4, unique: 4, duplicates_suppressed: 0, rejected: 0, missing_seqs: 0 });
    } finally {
      await second.mf.dispose();
    }
  } finally {
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("readings re-driven after the checkpoint keep their seqs in the window across a restart", async () => {
  // The origin refuses (400) every reading: each is parked as refused, then re-driven.
  const o = await origin({ answer: () => ({ status: 400 }) });
  const dir = tempDir();
  const vars = { STATS_FLUSH_MS: "3600000", ORIGIN_URL: o.url };
  const D = "bin-REDRIVE";
  const refused = async (call, n) =>
    until(async () => {
      const rows = (await get(call, `/v1/devices/${D}/readings`)).body.readings;
      return rows.length === n && rows.every((r) => r.delivery === "refused");
    }, `${n} readings refused`);
  try {
    const first = await start({ persist: dir, vars });
    try {
      await ingest(first.call, [reading(D, 1, 10)]);
      await until(async () => (await figures(first.call)).received === 1, "the first burst reported (its checkpoint written)");
      await refused(first.call, 1);
      // Seqs 2 and 3, after the checkpoint.
      await ingest(first.call, [reading(D, 2, 20), reading(D, 3, 30)]);
      await refused(first.call, 3);
      const res = await post(first.call, `/v1/devices/${D}/redrive`, "");
      assert.deepEqual(await res.json(), { device_id: D, redriven: 3 });
      await refused(first.call, 3);
      const gaps = (await get(first.call, `/v1/devices/${D}/gaps`)).body;
      assert.deepEqual([gaps.highest, gaps.gaps], [3, []]);
    } finally {
      await first.mf.dispose();
    }
    const second = await start({ persist: dir, vars });
    try {
      assert.deepEqual(await healthOf(second.call, D), { received: 3, unique: 3, duplicates_suppressed: 0, rejected: 0, missing_seqs: 0 });
      const gaps = (await get(second.call, `/v1/devices/${D}/gaps`)).body;
      assert.deepEqual([gaps.highest, gaps.gaps], [3, []], "the window holds 1, 2 and 3");
    } finally {
      await second.mf.dispose();
    }
  } finally {
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a reset's deleted window stays deleted across a restart before the next checkpoint: the readings stored before the reset are not fed to a window again", async () => {
  const dir = tempDir();
  const vars = { STATS_FLUSH_MS: "3600000" };
  const D = "bin-RESET";
  try {
    const first = await start({ persist: dir, vars });
    try {
      await ingest(first.call, [reading(D, 1, 10)]);
      await until(async () => (await figures(first.call)).received === 1, "the first burst reported (its checkpoint written)");
      // Seqs 2 and 5 (3 and 4 missing) after the checkpoint, then the memory reset.
      await ingest(first.call, [reading(D, 2, 20), reading(D, 5, 50)]);
      const res = await post(first.call, `/v1/devices/${D}/reset`, "");
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.deepEqual(body.seq_window, { highest: 5, missing: 2, gaps: 1 });
      const gaps = (await get(first.call, `/v1/devices/${D}/gaps`)).body;
      assert.deepEqual([gaps.highest, gaps.totals.missing], [null, 0]);
    } finally {
      await first.mf.dispose();
    }
    const second = await start({ persist: dir, vars });
    try {
      const gaps = (await get(second.call, `/v1/devices/${D}/gaps`)).body;
      assert.deepEqual([gaps.highest, gaps.totals.missing], [null, 0], "no window: the reset deleted it");
      assert.deepEqual(await healthOf(second.call, D), { received: 3, unique: 3, duplicates_suppressed: 0, rejected: 0, missing_seqs: 0 });
    } finally {
      await second.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a reset whose transaction fails changes nothing: the device keeps its window, its missing seqs still counted", async () => {
  const D = "bin-RESETFAIL";
  await acrossRestart({
    vars: { STATS_FLUSH_MS: "50" },
    before: async (first) => {
      await ingest(first.call, [reading(D, 1, 10), reading(D, 2, 20), reading(D, 5, 50)]);
      await quiet(first.call, settled(50, { devices: 1, received: 3, unique: 3 }, { ledger_rows: 3, missing_seqs: 2 }));
    },
    // The reset's history event cannot be written: its transaction rolls back.
    between: (dir) => sqlite(databases(dir, "GroupObject"), "CREATE TRIGGER no_reset BEFORE INSERT ON operator_events WHEN NEW.event = 'device_reset' BEGIN SELECT RAISE(ABORT, 'injected: no history'); END;"),
    after: async (second) => {
      const res = await post(second.call, `/v1/devices/${D}/reset`, "");
      const body = await res.json();
      assert.deepEqual([res.status, body.error?.code], [503, "storage_unavailable"], JSON.stringify(body));
      const gaps = (await get(second.call, `/v1/devices/${D}/gaps`)).body;
      assert.deepEqual([gaps.highest, gaps.totals.missing], [5, 2], "the window as it was");
      assert.equal((await healthOf(second.call, D)).missing_seqs, 2);
      // A burst after it: the roll-up still counts the 2 missing seqs.
      await ingest(second.call, [reading(D, 6, 60)]);
      await quiet(second.call, settled(50, { devices: 1, received: 4, unique: 4 }, { ledger_rows: 4, missing_seqs: 2 }));
    },
  });
});
