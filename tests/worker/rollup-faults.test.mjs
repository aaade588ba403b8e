// The /v1/stats roll-up (src/worker/fleet.js) under storage that does not
// look like a fresh deployment: a group object whose storage was reset. Also the one
// write failure that must not be answered 200. In workerd (Miniflare) with persistence; faults and
// old state are made in the objects' SQLite files between two runs, as
// fleet.test.mjs does (no mocks).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { start, post, get, until, tempDir, databases, sqlite } from "../support/harness.mjs";
import { groupName, groupOf, shardOf } from "../../src/worker/placement.js";

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

test("a group whose report its roll-up shard cannot apply does not keep the shard's other groups out of /v1/stats", async () => {
  // Two devices of two groups that report to one shard (placement.js: a group's shard is
  // its index mod SHARDS). The shard refuses only POISON's group's row (a trigger on it,
  // as a write that fails for one group's figures), so HEALTHY's new readings must still
  // reach /v1/stats.
  const POISON = "bin-P1";
  const HEALTHY = Array.from({ length: 1000 }, (_, k) => `bin-H${k}`).find((id) => groupOf(id) !== groupOf(POISON) && shardOf(id) === shardOf(POISON));
  const dir = tempDir();
  let w = await start({ persist: dir, vars: VARS });
  try {
    await ingest(w.call, [reading(POISON, 1, 10), reading(HEALTHY, 1, 10)]);
    await settles(w.call, counters, { devices: 2, received: 2, unique: 2, duplicates_suppressed: 0, rejected: 0 }, "both groups reported");
  } finally {
    await w.mf.dispose();
  }
  sqlite(databases(dir, "FleetObject"), `CREATE TRIGGER poison BEFORE UPDATE ON group_figures WHEN NEW.group_id = '${groupName(POISON)}' BEGIN SELECT RAISE(ABORT, 'injected'); END;`);
  w = await start({ persist: dir, vars: VARS });
  try {
    await ingest(w.call, [reading(POISON, 2, 20)]);
    await ingest(w.call, [reading(HEALTHY, 2, 20), reading(HEALTHY, 3, 30)]);
    // POISON's second reading cannot be counted; HEALTHY's two are.
    await settles(w.call, (s) => s.received, 4, "HEALTHY's readings counted though POISON's group's report is refused");
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
