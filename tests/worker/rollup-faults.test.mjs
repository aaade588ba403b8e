// The /v1/stats roll-up (src/worker/fleet.js) under storage that does not
// look like a fresh deployment: a group object whose storage was reset. Also the one
// write failure that must not be answered 200. In workerd (Miniflare) with persistence; faults and
// old state are made in the objects' SQLite files between two runs, as
// fleet.test.mjs does (no mocks).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, post, get, until, tempDir, databases, sqlite } from "./harness.mjs";

const reading = (device_id, seq, fill_pct) => ({ device_id, seq, ts: "2026-07-16T09:00:00Z", fill_pct });
const VARS = { STATS_FLUSH_MS: "50" };
/** With STATS_FLUSH_MS = 50 every flush is in well within this. */
const SETTLE_MS = 6_000;

async function stats(call) {
  const { status, body } = await get(call, "/v1/stats");
  assert.equal(status, 200);
  const { as_of, stats_flush_ms, oldest_undelivered_age_ms, ...rest } = body;
  return rest;
}

/** Polls /v1/stats until `pick(stats)` equals `expected` or SETTLE_MS passes, then asserts it. */
async function settles(call, pick, expected, message) {
  let last;
  try {
    await until(async () => {
      last = pick(await stats(call));
      try {
        assert.deepEqual(last, expected);
        return true;
      } catch {
        return false;
      }
    }, message, SETTLE_MS);
  } catch {
    // fall through to the assertion with the last figures seen
  }
  assert.deepEqual(last, expected, message);
}

const counters = ({ devices, received, unique, duplicates_suppressed, rejected }) => ({ devices, received, unique, duplicates_suppressed, rejected });

async function ingest(call, burst, status = 200) {
  const res = await post(call, "/v1/readings", burst);
  assert.equal(res.status, status);
  return res.json();
}


test("a group object whose storage was reset keeps counting in /v1/stats: its new flushes are not taken for old versions", async () => {
  const dir = tempDir();
  const first = await start({ persist: dir, vars: VARS });
  try {
    // Three bursts: the shard holds this device's figures at version 3.
    for (let seq = 1; seq <= 3; seq++) await ingest(first.call, [reading("bin-RESET", seq, seq)]);
    await settles(first.call, counters, { devices: 1, received: 3, unique: 3, duplicates_suppressed: 0, rejected: 0 }, "the first three readings");
  } finally {
    await first.mf.dispose();
  }
  // The group object's storage is gone (fleet.test.mjs does the same to show that
  // /v1/stats does not depend on it); the roll-up shards keep their rows.
  fs.rmSync(path.join(dir, "-GroupObject"), { recursive: true, force: true });
  const second = await start({ persist: dir, vars: VARS });
  try {
    // Four more readings: the new object counts its versions from 1 again.
    for (let seq = 4; seq <= 7; seq++) await ingest(second.call, [reading("bin-RESET", seq, seq)]);
    // `received` .. `seq_reuses` "count every reading since the start" (README):
    // 3 + 4. Today versions 1..3 of the new object are acknowledged without being
    // applied (the shard holds version 3) and version 4 adds 4 - 3: 4, not 7.
    await settles(second.call, counters, { devices: 1, received: 7, unique: 7, duplicates_suppressed: 0, rejected: 0 }, "all seven readings counted once");
  } finally {
    await second.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Stores `setup` (one device's readings, all admitted), then sends `burst` while that
 * device object's writes fail (as in worker.test.mjs's failed-write test: a trigger,
 * dropped afterwards). Returns the persist dir, for the next run, and that reply.
 */
async function duringAFailedWrite(setup, burst) {
  const dir = tempDir();
  const first = await start({ persist: dir, vars: VARS });
  try {
    await ingest(first.call, setup);
    const n = setup.length;
    await settles(first.call, counters, { devices: 1, received: n, unique: n, duplicates_suppressed: 0, rejected: 0 }, "setup");
  } finally {
    await first.mf.dispose();
  }
  const files = databases(dir, "GroupObject");
  sqlite(files, "CREATE TRIGGER fail_count BEFORE UPDATE OF version ON devices BEGIN SELECT RAISE(ABORT, 'injected'); END;");
  const second = await start({ persist: dir, vars: VARS });
  try {
    const res = await post(second.call, "/v1/readings", burst);
    return { dir, status: res.status, body: await res.json() };
  } finally {
    await second.mf.dispose();
    sqlite(files, "DROP TRIGGER fail_count;");
  }
}

test("a burst whose device object could not store its counts is not answered 200 and forgotten", async () => {
  // One reading, rejected (fill_pct 101) but routable to bin-RJ: its device object
  // must count it, and that write fails (the audit line says burst_not_stored).
  const { dir, status, body } = await duringAFailedWrite([reading("bin-RJ", 1, 10)], [reading("bin-RJ", 2, 101)]);
  const third = await start({ persist: dir, vars: VARS });
  try {
    // Its counts were not stored, so the sender is told to retry, not "processed".
    assert.equal(status, 503);
    assert.equal(body.errors[0].code, "storage_unavailable");
    // The retry, with the fault gone, is counted once.
    assert.equal((await post(third.call, "/v1/readings", [reading("bin-RJ", 2, 101)])).status, 200);
    await settles(third.call, counters, { devices: 1, received: 2, unique: 1, duplicates_suppressed: 0, rejected: 1 }, "the retried rejection is in /v1/stats");
  } finally {
    await third.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a replay whose device object could not store its counts is reported not stored, not as a duplicate counted nowhere", async () => {
  // A replay: the seen-set says duplicate, but the burst's counts cannot be stored.
  const { dir, status, body } = await duringAFailedWrite([reading("bin-RD", 1, 10)], [reading("bin-RD", 1, 10)]);
  const third = await start({ persist: dir, vars: VARS });
  try {
    assert.equal(status, 503);
    // What a reply counts is what /v1/stats will hold: nothing of this device's burst.
    assert.deepEqual([body.duplicates_suppressed, body.duplicates, body.not_stored], [0, [], [0]]);
    const retry = await ingest(third.call, [reading("bin-RD", 1, 10)]);
    assert.deepEqual(retry.duplicates, [0]);
    // Summing the replies (200s, and the 503's counted part) gives /v1/stats exactly.
    await settles(third.call, counters, { devices: 1, received: 2, unique: 1, duplicates_suppressed: 1, rejected: 0 }, "the replies add up to /v1/stats");
  } finally {
    await third.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a roll-up shard that cannot be read makes /v1/stats a coded 503 to retry, never a 500", async () => {
  const dir = tempDir();
  let w = await start({ persist: dir, vars: VARS });
  try {
    await ingest(w.call, [reading("bin-S1", 1, 10)]);
    await settles(w.call, (s) => s.received, 1, "the reading counted");
  } finally {
    await w.mf.dispose();
  }
  // Every shard's `counters` becomes a view whose reading fails (abs of the least
  // integer is an "integer overflow" error in SQLite): the shard call throws, as it
  // does when workerd's SQLite runs out of memory (SQLITE_NOMEM) under load.
  sqlite(
    databases(dir, "FleetObject"),
    `DROP TABLE counters;
     CREATE VIEW counters AS SELECT 'received' AS name, abs(-9223372036854775807 - 1) AS value;`,
  );
  w = await start({ persist: dir, vars: VARS });
  try {
    const res = await w.call("/v1/stats", { headers: { authorization: "Bearer test-token" } });
    const body = await res.json();
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "1");
    assert.equal(body.error.code, "stats_unavailable");
    assert.match(body.error.message, /roll-up/);
    assert.equal((await w.call("/v1/health")).status, 200, "health does not depend on the roll-up");
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a device whose figures its roll-up shard cannot apply does not keep the other devices of its group out of /v1/stats", async () => {
  // Two devices of one group (placement.js groupOf: group 62): the group flushes both
  // to their shard in one applyMany call. The shard refuses only POISON's row (a
  // trigger on it, as a write that fails for one device's figures), so HEALTHY's new
  // readings must still reach /v1/stats: with one object per device they did, each
  // device flushing on its own.
  const POISON = "bin-P1";
  const HEALTHY = "bin-P144";
  const dir = tempDir();
  let w = await start({ persist: dir, vars: VARS });
  try {
    await ingest(w.call, [reading(POISON, 1, 10), reading(HEALTHY, 1, 10)]);
    await settles(w.call, counters, { devices: 2, received: 2, unique: 2, duplicates_suppressed: 0, rejected: 0 }, "both devices flushed");
  } finally {
    await w.mf.dispose();
  }
  sqlite(databases(dir, "FleetObject"), `CREATE TRIGGER poison BEFORE UPDATE ON device_figures WHEN NEW.device_id = '${POISON}' BEGIN SELECT RAISE(ABORT, 'injected'); END;`);
  w = await start({ persist: dir, vars: VARS });
  try {
    await ingest(w.call, [reading(POISON, 2, 20)]);
    await ingest(w.call, [reading(HEALTHY, 2, 20), reading(HEALTHY, 3, 30)]);
    // POISON's second reading cannot be counted; HEALTHY's two are.
    await settles(w.call, (s) => s.received, 4, "HEALTHY's readings counted though POISON's figures are refused");
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
