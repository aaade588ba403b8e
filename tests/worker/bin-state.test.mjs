// Bin state by device time in workerd (src/worker/bin-state.js, docs/bin-state.md): a
// bin filling over a day, offline for 6 h, replaying its buffer twice out of order,
// then emptied: its state never moves backwards, every replayed reading is `late` in
// the reply, the ledger and the origin's body, exactly one collection is reported (in
// GET .../collections and to the origin), a glitch reports none, GET /v1/bins agrees
// with every device's state; the state survives a restart, a reset deletes it, and an
// older storage without the columns is brought up to date.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { acrossRestart, databases, get, origin, post, putConfig, readingsOf, sqlite, start, TOKEN, until } from "../support/harness.mjs";
import { groupAt, groupOf } from "../../src/worker/placement.js";

const PERIOD_MS = 1_800_000;
// The series ends within the last period, so that its bins are fresh (STALE_PERIODS 3).
const LAST = 63;
const END = Math.floor(Date.now() / PERIOD_MS) * PERIOD_MS;
const at = (i) => END - (LAST - i) * PERIOD_MS;
const iso = (ms) => new Date(ms).toISOString();
// Python's isoformat, as the state and the ledger write times.
const isoformat = (ms) => new Date(ms).toISOString().replace(/\.000Z$/, "+00:00").replace(/Z$/, "000+00:00");

/**
 * Reading i of the main bin: a day filling slowly (0 … 47), 6 h offline filling fast
 * (48 … 59, buffered), the reconnect's live reading (60), one more (61), emptied (62),
 * and the reading that confirms it (63).
 */
const fillAt = (i) => (i < 48 ? 5 + i : i < 60 ? 53 + (i - 48) * 3.5 : { 60: 93, 61: 95, 62: 3, 63: 4 }[i]);
const reading = (device_id, i, fill_pct = fillAt(i)) => ({ device_id, seq: i, ts: iso(at(i)), fill_pct });
// The buffer as the sensor replays it: out of order, its oldest reading last.
const REPLAY = [55, 50, 59, 51, 57, 49, 53, 58, 52, 56, 54, 48];
const REPLAY_AGAIN = [51, 58, 48, 55, 53, 59, 50, 56, 49, 57, 54, 52];

const o = await origin();
const worker = await start({ vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "20", RETRY_BASE_MS: "5", RETRY_MAX_MS: "20" } });
after(async () => {
  await worker.mf.dispose();
  await o.close();
});

const send = async (readings) => {
  const res = await post(worker.call, "/v1/readings", readings);
  assert.equal(res.status, 200);
  return res.json();
};
const stateOf = async (id) => {
  const r = await get(worker.call, `/v1/devices/${id}/state`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};
const collectionsOf = async (id) => {
  const r = await get(worker.call, `/v1/devices/${id}/collections`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};
const verdictOf = (out, i) => out.verdicts.find((v) => v.index === i);

test("a day, 6 h offline, the buffer replayed twice out of order, then emptied: never backwards, replays late, one collection", async () => {
  const id = "bin-day";
  let newest = -Infinity;
  const replies = [];
  // Each call, then the state: it is always the newest device time admitted so far.
  const step = async (readings) => {
    const out = await send(readings);
    replies.push(out);
    for (const r of readings) newest = Math.max(newest, Date.parse(r.ts));
    const s = await stateOf(id);
    assert.equal(s.newest.ts, isoformat(newest), `after ${readings.map((r) => r.seq)}`);
    return { out, s };
  };
  for (let i = 0; i < 48; i++) {
    const { out } = await step([reading(id, i)]);
    assert.equal(verdictOf(out, 0).arrival, "newest");
    assert.equal(verdictOf(out, 0).late_by_ms, null);
  }
  // Reconnected: the live reading first, then the buffer, twice.
  const live = await step([reading(id, 60)]);
  assert.equal(verdictOf(live.out, 0).arrival, "newest");
  const replay = await step(REPLAY.map((i) => reading(id, i)));
  assert.equal(replay.out.unique, 12);
  REPLAY.forEach((i, k) => {
    const v = verdictOf(replay.out, k);
    assert.deepEqual([v.verdict, v.arrival, v.late_by_ms], ["admitted", "late", at(60) - at(i)], `replayed reading ${i}`);
  });
  // What "the last reading received" would say: the buffer's oldest, a fall of 40
  // points from 93, a phantom collection. The state stays at the live reading.
  assert.equal(fillAt(REPLAY.at(-1)), 53);
  assert.deepEqual([replay.s.newest.fill_pct, replay.s.newest.key], [93, live.out.admitted[0].key]);
  assert.equal(replay.s.suspected_collection, null);
  assert.equal(replay.s.last_collection, null);
  const again = await step(REPLAY_AGAIN.map((i) => reading(id, i)));
  assert.deepEqual([again.out.unique, again.out.duplicates_suppressed], [0, 12]);
  assert.equal(again.s.newest.fill_pct, 93);

  await step([reading(id, 61)]);
  // Emptied: a fall of 92 points, suspected until the next reading stays down.
  const emptied = await step([reading(id, 62)]);
  assert.equal(emptied.out.collections, undefined);
  assert.deepEqual(emptied.s.suspected_collection, {
    before: { ts: isoformat(at(61)), fill_pct: 95, key: replies.at(-2).admitted[0].key },
    after: { ts: isoformat(at(62)), fill_pct: 3, key: emptied.out.admitted[0].key },
  });
  assert.equal((await collectionsOf(id)).collections.length, 0);
  const confirmed = await step([reading(id, 63)]);

  const expected = {
    from: isoformat(at(61)),
    to: isoformat(at(62)),
    fill_before: 95,
    fill_after: 3,
    before: { ts: isoformat(at(61)), fill_pct: 95, key: replies.at(-3).admitted[0].key },
    after: { ts: isoformat(at(62)), fill_pct: 3, key: emptied.out.admitted[0].key },
    confirmed_by: confirmed.out.admitted[0].key,
  };
  assert.equal(confirmed.out.collections.length, 1);
  const { confirmed_at, ...inReply } = confirmed.out.collections[0];
  assert.deepEqual(inReply, { device_id: id, ...expected });
  const listed = await collectionsOf(id);
  assert.deepEqual(listed.collections, [{ ...expected, confirmed_at }]);
  assert.equal(listed.next, null);
  // Only this reply of all of them reports a collection.
  assert.equal(replies.filter((r) => r.collections).length, 1);

  const s = confirmed.s;
  assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct, s.suspected_collection], [4, 3, null]);
  assert.deepEqual(s.last_collection, { from: expected.from, to: expected.to, fill_before: 95, fill_after: 3 });
  assert.deepEqual([s.period_s, s.period_source, s.stale_after_s, s.stale], [1800, "seen", 5400, false]);
  assert.ok(s.newest.age_s >= 0 && s.newest.age_s < 1800 + 60, JSON.stringify(s.newest));

  // The ledger marks every replayed reading late, by how much; every other newest.
  const ledger = [];
  for (let after = 0; ; ) {
    const page = (await get(worker.call, `/v1/devices/${id}/readings?after=${after}&limit=1000`)).body;
    ledger.push(...page.readings);
    if (page.next === null) break;
    after = page.next;
  }
  assert.equal(ledger.length, 64);
  for (const row of ledger) {
    const i = row.seq;
    const late = i >= 48 && i < 60;
    assert.deepEqual([row.arrival, row.late_by_ms], late ? ["late", at(60) - at(i)] : ["newest", null], `ledger row ${i}`);
    assert.deepEqual(row.collection, i === 63 ? { ...expected, confirmed_at } : null, `ledger row ${i}`);
  }

  // The origin is told the same, in the same delivery stream: each reading once, with
  // its arrival; the collection once, in the body that carries its confirming reading.
  const bodies = await until(() => {
    const ok = o.requests.filter((r) => r.ok && r.body.readings.some((x) => x.device_id === id));
    return ok.flatMap((r) => r.body.readings).filter((x) => x.device_id === id).length === 64 && ok.map((r) => r.body);
  }, "all 64 readings at the origin");
  const delivered = bodies.flatMap((b) => b.readings).filter((x) => x.device_id === id);
  for (const x of delivered) {
    const late = x.seq >= 48 && x.seq < 60;
    assert.deepEqual([x.arrival, x.late_by_ms], late ? ["late", at(60) - at(x.seq)] : ["newest", null], `delivered reading ${x.seq}`);
  }
  const events = bodies.flatMap((b) => b.collections ?? []).filter((c) => c.device_id === id);
  assert.deepEqual(events, [{ device_id: id, ...expected, confirmed_at }]);
  const carrier = bodies.find((b) => (b.collections ?? []).length);
  assert.ok(carrier.readings.some((x) => x.key === expected.confirmed_by), "the collection travels with the reading that confirmed it");
});

test("a glitch (one low reading between two high ones) is suspected, then dropped: no collection", async () => {
  const id = "bin-glitch";
  const fills = [80, 82, 5, 84, 85];
  const outs = [];
  for (const [i, fill] of fills.entries()) outs.push(await send([reading(id, LAST - 4 + i, fill)]));
  assert.ok(outs.every((out) => out.collections === undefined));
  assert.deepEqual((await collectionsOf(id)).collections, []);
  const s = await stateOf(id);
  assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct, s.suspected_collection, s.last_collection], [85, 84, null, null]);
  const ledger = await readingsOf(worker.call, id);
  assert.ok(ledger.every((r) => r.arrival === "newest" && r.collection === null));
});

test("a tie (two readings of one device time) is not late: the later admission is the state", async () => {
  const id = "bin-tie";
  const first = await send([{ device_id: id, seq: 1, ts: iso(at(60)), fill_pct: 40 }]);
  const second = await send([{ device_id: id, seq: 2, ts: iso(at(60)), fill_pct: 41 }]);
  assert.deepEqual([verdictOf(first, 0).arrival, verdictOf(second, 0).arrival, verdictOf(second, 0).late_by_ms], ["newest", "newest", null]);
  const s = await stateOf(id);
  assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct], [41, 40]);
});

test("a burst's readings are taken in device-time order, whatever their order in its body (a TEK766 sends its newest first)", async () => {
  const fills = [90, 5, 6];
  for (const [id, order] of [["body-asc", [1, 2]], ["body-desc", [2, 1]]]) {
    const R = (k) => reading(id, LAST - 3 + k, fills[k]);
    await send([R(0)]);
    const out = await send(order.map(R));
    // Arriving together, neither is late: the fall is to the first after it, confirmed by the second.
    assert.deepEqual(out.verdicts.map((v) => [v.arrival, v.late_by_ms]), [["newest", null], ["newest", null]], id);
    const confirmer = out.verdicts[order.indexOf(2)].key;
    assert.deepEqual(
      out.collections.map((c) => [c.from, c.to, c.fill_before, c.fill_after, c.confirmed_by]),
      [[isoformat(at(LAST - 3)), isoformat(at(LAST - 2)), 90, 5, confirmer]],
      id,
    );
    const s = await stateOf(id);
    assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct, s.last_collection.fill_after], [6, 5, 5], id);
  }
});

test("the state's staleness is by the worker's clock: a device clock hours behind that reports every period is fresh", async () => {
  const id = "clock-behind";
  const behind = 4 * PERIOD_MS;
  for (let i = 0; i < 4; i++) await send([{ device_id: id, seq: i, ts: iso(at(LAST - 3 + i) - behind), fill_pct: 10 + i }]);
  const s = await stateOf(id);
  assert.ok(s.newest.age_s > s.stale_after_s, JSON.stringify(s.newest)); // by its device time, older than 3 periods ...
  assert.equal(s.stale, false); // ... but its newest reading came in just now
  assert.ok(Math.abs(Date.parse(s.newest.admitted_at) - Date.now()) < 60_000, s.newest.admitted_at);
});

test("a reading dated more than 4.5 days after its admission is `ahead`: kept and delivered, never the state", async () => {
  // Up to 4.5 days ahead: a reading dated by a 7-day schedule (half a period) on a device set to a time zone.
  const AHEAD_LIMIT_MS = 4.5 * 86_400_000;
  const soon = await send([{ device_id: "clock-schedule", seq: 1, ts: iso(Date.now() + AHEAD_LIMIT_MS - 60_000), fill_pct: 20 }]);
  assert.equal(soon.verdicts[0].arrival, "newest");
  const id = "clock-ahead";
  const outs = [];
  outs.push(await send([reading(id, LAST - 3, 95)]));
  outs.push(await send([{ device_id: id, seq: LAST - 2, ts: iso(Date.now() + AHEAD_LIMIT_MS + 60_000), fill_pct: 96 }]));
  outs.push(await send([reading(id, LAST - 1, 3)]));
  outs.push(await send([reading(id, LAST, 4)]));
  assert.deepEqual(outs.map((o) => [o.verdicts[0].verdict, o.verdicts[0].arrival, o.verdicts[0].late_by_ms]), [["admitted", "newest", null], ["admitted", "ahead", null], ["admitted", "newest", null], ["admitted", "newest", null]]);
  // The bin's state goes on as if it had not come: emptied, and collected.
  const s = await stateOf(id);
  assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct, s.last_collection?.fill_before, s.last_collection?.fill_after], [4, 3, 95, 3]);
  const row = (await readingsOf(worker.call, id)).find((r) => r.seq === LAST - 2);
  assert.deepEqual([row.arrival, row.late_by_ms], ["ahead", null]);
});

test("a device never seen has no state and no collections, and no object is asked", async () => {
  const s = await stateOf("bin-never");
  assert.deepEqual(s, { device_id: "bin-never", newest: null, previous: null, period_s: null, period_source: null, stale: true, stale_after_s: null, suspected_collection: null, last_collection: null });
  assert.deepEqual(await collectionsOf("bin-never"), { device_id: "bin-never", collections: [], next: null });
});

test("GET /v1/bins: every bin, configured ones without a reading too, agreeing with each device's state; filters, CSV, pages", async () => {
  const configured = await putConfig(worker.call, "bin-configured", { codec: "milesight-iot/em310-udl", bin_depth_mm: 1200, reporting_period_s: 600 });
  assert.equal(configured.status, 200, JSON.stringify(configured.body));
  const all = [];
  for (let next = null, first = true; first || next !== null; first = false) {
    const r = await get(worker.call, `/v1/bins?limit=1${next === null ? "" : `&after=${encodeURIComponent(next)}`}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.bins.length <= 1);
    all.push(...r.body.bins);
    next = r.body.next;
  }
  const whole = (await get(worker.call, "/v1/bins?limit=1000")).body;
  assert.deepEqual(whole.bins.map((b) => b.device_id), all.map((b) => b.device_id), "pages of one make the same list");
  const ids = new Set(all.map((b) => b.device_id));
  for (const id of ["bin-day", "bin-glitch", "bin-tie", "bin-configured"]) assert.ok(ids.has(id), id);
  assert.ok(!ids.has("bin-never"));

  for (const row of whole.bins) {
    const s = await stateOf(row.device_id);
    const { age_s, ...rest } = row;
    assert.deepEqual(rest, {
      device_id: s.device_id,
      fill_pct: s.newest?.fill_pct ?? null,
      ts: s.newest?.ts ?? null,
      key: s.newest?.key ?? null,
      admitted_at: s.newest?.admitted_at ?? null,
      previous_fill_pct: s.previous?.fill_pct ?? null,
      previous_ts: s.previous?.ts ?? null,
      period_s: s.period_s,
      period_source: s.period_source,
      stale: s.stale,
      stale_after_s: s.stale_after_s,
      collection_suspected: s.suspected_collection !== null,
      last_collection_from: s.last_collection?.from ?? null,
      last_collection_to: s.last_collection?.to ?? null,
      last_collection_fill_before: s.last_collection?.fill_before ?? null,
      last_collection_fill_after: s.last_collection?.fill_after ?? null,
      configured: row.device_id === "bin-configured",
    });
    assert.ok(s.newest === null ? age_s === null : Math.abs(age_s - s.newest.age_s) < 60);
  }
  const row = whole.bins.find((b) => b.device_id === "bin-configured");
  assert.deepEqual([row.fill_pct, row.period_s, row.period_source, row.stale], [null, 600, "configured", true]);

  const only = async (query) => (await get(worker.call, `/v1/bins?${query}`)).body.bins.map((b) => b.device_id).filter((d) => d.startsWith("bin-")).sort();
  assert.deepEqual(await only("min_fill=50"), ["bin-glitch"]);
  assert.deepEqual(await only("min_fill=40.5"), ["bin-glitch", "bin-tie"]);
  assert.deepEqual(await only(`collected_since=${encodeURIComponent(iso(at(62)))}`), ["bin-day"]);
  assert.deepEqual(await only(`collected_since=${encodeURIComponent(iso(at(62) + 1000))}`), []);
  assert.deepEqual(await only("stale=true"), ["bin-configured"]);
  // bin-tie's two readings of one instant make no interval: no period, staleness unknown.
  assert.deepEqual(await only("stale=false&min_fill=4"), ["bin-day", "bin-glitch"]);

  const res = await worker.call("/v1/bins?format=csv&min_fill=50", { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-disposition"), 'attachment; filename="bins.csv"');
  const lines = (await res.text()).split("\r\n");
  assert.equal(lines[0].split(",")[0], "device_id");
  assert.ok(lines[1].startsWith("bin-glitch,85,"), lines[1]);
  assert.deepEqual(lines.slice(2), [""]);

  for (const bad of ["min_fill=101", "min_fill=-1", "min_fill=1e2", "stale=yes", "collected_since=yesterday", "min_fill=1&min_fill=2", "limit=0"]) {
    const r = await get(worker.call, `/v1/bins?${bad}`);
    assert.deepEqual([r.status, r.body.error.code], [400, "invalid_query"], bad);
  }
});

test("the bin state survives a restart (replayed from the rows since the checkpoint), and a reset deletes it for good", async () => {
  const id = "bin-restart";
  const vars = { STATS_FLUSH_MS: "3600000" };
  await acrossRestart({
    vars,
    before: async (w) => {
      for (const [i, fill] of [[0, 60], [1, 70], [2, 5], [3, 6]]) assert.equal((await post(w.call, "/v1/readings", [reading(id, 50 + i, fill)])).status, 200);
    },
    after: async (w) => {
      const s = (await get(w.call, `/v1/devices/${id}/state`)).body;
      assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct, s.period_s], [6, 5, 1800]);
      assert.deepEqual([s.last_collection?.fill_before, s.last_collection?.fill_after], [70, 5]);
      assert.equal((await get(w.call, `/v1/devices/${id}/collections`)).body.collections.length, 1);
      // The tracker came back: an older reading is still late.
      const out = await (await post(w.call, "/v1/readings", [reading(id, 10, 50)])).json();
      assert.equal(out.verdicts[0].arrival, "late");
    },
  });
  await acrossRestart({
    vars,
    before: async (w) => {
      assert.equal((await post(w.call, "/v1/readings", [reading(id, 50, 60)])).status, 200);
      const reset = await w.call(`/v1/devices/${id}/reset`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal((await reset.json()).bin_state, true);
      assert.equal((await get(w.call, `/v1/devices/${id}/state`)).body.newest, null);
    },
    after: async (w) => {
      assert.equal((await get(w.call, `/v1/devices/${id}/state`)).body.newest, null, "the reset holds across a restart");
      const out = await (await post(w.call, "/v1/readings", [reading(id, 10, 50)])).json();
      assert.equal(out.verdicts[0].arrival, "newest", "a re-commissioned sensor's first reading is its newest");
    },
  });
});

const OLD_COLUMNS = ["key", "device_id", "seq", "ts", "fill_pct", "admitted_at", "burst_id", "state", "attempts", "next_attempt_at", "delivered_at", "last_error", "batch_id", "window_seq", "frame", "verdict", "conflicts_with", "forgotten_at"];
const OLD_TYPES = { key: "TEXT PRIMARY KEY", device_id: "TEXT NOT NULL", seq: "INTEGER NOT NULL", ts: "TEXT NOT NULL", fill_pct: "REAL NOT NULL", admitted_at: "INTEGER NOT NULL", state: "TEXT NOT NULL", attempts: "INTEGER NOT NULL DEFAULT 0", verdict: "TEXT NOT NULL DEFAULT 'admitted'" };

test("a restart replays bursts admitted in one millisecond burst by burst, as they were fed", async () => {
  // Live: 90, then 88 (later by device time), then two late ones, 5 and 4, each a burst of its own.
  const id = "one-ms";
  const bursts = [[LAST - 3, 90], [LAST, 88], [LAST - 2, 5], [LAST - 1, 4]].map(([i, fill]) => [reading(id, i, fill)]);
  const live = await acrossRestart({
    vars: { STATS_FLUSH_MS: "3600000" },
    before: async (w) => {
      // The first burst checkpointed (the first flush is due at once, the next in an hour): the others are replayed.
      assert.equal((await post(w.call, "/v1/readings", bursts[0])).status, 200);
      await until(async () => (await get(w.call, `/v1/devices/${id}/health`)).body.flushed_at !== null, "the first checkpoint");
      for (const b of bursts.slice(1)) assert.equal((await post(w.call, "/v1/readings", b)).status, 200);
    },
    // On Cloudflare the clock stands still between I/O: the bursts in one millisecond.
    between: (dir) => sqlite(databases(dir, "GroupObject"), `UPDATE readings SET admitted_at = (SELECT MAX(admitted_at) FROM readings WHERE device_id = '${id}') WHERE device_id = '${id}';`),
    after: async (w) => (await get(w.call, `/v1/devices/${id}/state`)).body,
  });
  assert.deepEqual([live.newest.fill_pct, live.previous.fill_pct, live.suspected_collection, live.last_collection], [88, 90, null, null]);
});

test("two readings of one burst and one device time: the higher seq is the state, live and after a redrive and a restart", async () => {
  const id = "tie-redriven";
  const [P, X, Y] = [[LAST - 1, 1, 30], [LAST, 2, 40], [LAST, 3, 41]].map(([i, seq, fill_pct]) => ({ device_id: id, seq, ts: iso(at(i)), fill_pct }));
  let refusing = true;
  const o4 = await origin({ answer: (r) => (refusing && r.body.readings.some((x) => x.device_id === id && x.seq === X.seq) ? { status: 422 } : { status: 200 }) });
  try {
    let live;
    const restarted = await acrossRestart({
      vars: { ORIGIN_URL: o4.url, STATS_FLUSH_MS: "3600000", RETRY_BASE_MS: "5", RETRY_MAX_MS: "20" },
      before: async (w) => {
        assert.equal((await post(w.call, "/v1/readings", [P])).status, 200);
        await until(async () => (await get(w.call, `/v1/devices/${id}/health`)).body.flushed_at !== null, "the first checkpoint");
        // In the body the higher seq first: by seq, not by body order.
        const out = await (await post(w.call, "/v1/readings", [Y, X])).json();
        assert.deepEqual(out.verdicts.map((v) => v.arrival), ["newest", "newest"]);
        await until(async () => (await readingsOf(w.call, id)).some((x) => x.seq === X.seq && x.delivery === "refused"), "X refused");
        refusing = false;
        const redrive = await w.call(`/v1/devices/${id}/redrive`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
        assert.equal((await redrive.json()).redriven, 1);
        live = (await get(w.call, `/v1/devices/${id}/state`)).body;
      },
      after: async (w) => (await get(w.call, `/v1/devices/${id}/state`)).body,
    });
    assert.deepEqual([live.newest.fill_pct, live.previous.fill_pct], [41, 40]);
    assert.deepEqual([restarted.newest.fill_pct, restarted.previous.fill_pct], [41, 40]);
  } finally {
    await o4.close();
  }
});

test("a storage of an earlier release, without arrivals and collections, is brought up to date", async () => {
  const id = "bin-old";
  await acrossRestart({
    vars: { STATS_FLUSH_MS: "3600000" },
    before: async (w) => {
      assert.equal((await post(w.call, "/v1/readings", [reading(id, 50, 60)])).status, 200);
    },
    // The readings table as the release before bin states wrote it (its indexes are
    // created again by prepare, IF NOT EXISTS).
    between: (dir) => sqlite(databases(dir, "GroupObject"), `ALTER TABLE readings RENAME TO readings_new;
      CREATE TABLE readings (${OLD_COLUMNS.map((c) => `${c} ${OLD_TYPES[c] ?? ""}`).join(", ")});
      INSERT INTO readings (rowid, ${OLD_COLUMNS.join(", ")}) SELECT rowid, ${OLD_COLUMNS.join(", ")} FROM readings_new;
      DROP TABLE readings_new;`),
    after: async (w) => {
      const old = await readingsOf(w.call, id);
      assert.deepEqual([old.length, old[0].arrival, old[0].late_by_ms, old[0].collection], [1, null, null, null]);
      const out = await (await post(w.call, "/v1/readings", [reading(id, 51, 65)])).json();
      assert.equal(out.verdicts[0].arrival, "newest");
      assert.equal((await get(w.call, `/v1/devices/${id}/state`)).body.newest.fill_pct, 65);
    },
  });
});

test("a reading renewed in place (its row still to deliver) that confirms a collection keeps it on its row, and the origin is told", async () => {
  // The origin down while the rows are admitted, then up: the first waits in a batch of
  // one (DELIVERY_BATCH 1), the others behind it, renewed in place.
  let up = false;
  const o2 = await origin({ answer: () => ({ status: up ? 200 : 503 }) });
  const w = await start({ vars: { ORIGIN_URL: o2.url, STATS_FLUSH_MS: "20", RETRY_BASE_MS: "5", RETRY_MAX_MS: "20", DELIVERY_BATCH: "1" } });
  try {
    const id = "renewed";
    const [A, B, C] = [[LAST - 2, 90], [LAST - 1, 5], [LAST, 4]].map(([i, fill]) => reading(id, i, fill));
    const sendTo = async (r) => (await post(w.call, "/v1/readings", [r])).json();
    // B arrives last, late: no collection.
    for (const r of [A, C, B]) await sendTo(r);
    await until(() => o2.requests.some((r) => r.body?.readings?.some((x) => x.device_id === id)), "the first batch tried");
    assert.deepEqual((await get(w.call, `/v1/devices/${id}/collections`)).body.collections, []);
    // The device's memory reset: the same readings come again, in order, each renewing its row.
    const reset = await w.call(`/v1/devices/${id}/reset`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(reset.status, 200);
    const outs = [];
    for (const r of [A, B, C]) outs.push(await sendTo(r));
    assert.deepEqual(outs.map((out) => out.verdicts[0].verdict), ["admitted", "admitted", "admitted"]);
    const [confirmed] = outs[2].collections;
    assert.deepEqual([confirmed.fill_before, confirmed.fill_after, confirmed.confirmed_by], [90, 5, outs[2].verdicts[0].key]);
    const { device_id, ...listed } = confirmed;
    assert.deepEqual((await get(w.call, `/v1/devices/${id}/collections`)).body.collections, [listed]);
    assert.deepEqual((await readingsOf(w.call, id)).find((r) => r.seq === LAST).collection, listed);
    up = true;
    const told = await until(() => {
      const mine = o2.requests.filter((r) => r.ok).flatMap((r) => r.body.collections).filter((c) => c.device_id === id);
      return mine.length && mine;
    }, "the collection at the origin");
    assert.deepEqual(told, [confirmed]);
    // Renewed in place, not moved: each reading went once, in admission order.
    const sent = await until(() => {
      const keys = o2.requests.filter((r) => r.ok).flatMap((r) => r.body.readings).filter((x) => x.device_id === id).map((x) => x.seq);
      return keys.length === 3 && keys;
    }, "the three readings at the origin");
    assert.deepEqual(sent, [A.seq, C.seq, B.seq]);
  } finally {
    await w.mf.dispose();
    await o2.close();
  }
});

test("a confirming reading admitted again after its key expired keeps its collection as confirmed (the same confirmed_at)", async () => {
  const w = await start({ vars: { TTL_MS: "1", STATS_FLUSH_MS: "20" } });
  try {
    const id = "readmitted";
    const rs = [90, 5, 4, 90, 5, 4].map((fill, k) => reading(id, LAST - 5 + k, fill));
    for (const r of rs) assert.equal((await post(w.call, "/v1/readings", [r])).status, 200);
    const before = (await get(w.call, `/v1/devices/${id}/collections`)).body.collections;
    assert.equal(before.length, 2);
    // The first collection's confirming reading again, its key expired (TTL_MS 1): admitted, late.
    const again = await (await post(w.call, "/v1/readings", [rs[2]])).json();
    assert.deepEqual([again.verdicts[0].verdict, again.verdicts[0].arrival], ["admitted", "late"]);
    const after = (await get(w.call, `/v1/devices/${id}/collections`)).body.collections;
    const byKey = (list) => Object.fromEntries(list.map((c) => [c.confirmed_by, c]));
    assert.deepEqual(byKey(after), byKey(before));
    // The newest reading itself again: newest, and the state as it was, its admission time included.
    const state = (await get(w.call, `/v1/devices/${id}/state`)).body;
    const newest = await (await post(w.call, "/v1/readings", [rs[5]])).json();
    assert.deepEqual([newest.verdicts[0].verdict, newest.verdicts[0].arrival], ["admitted", "newest"]);
    const { age_s, ...unchanged } = state.newest;
    const { age_s: later, ...now } = (await get(w.call, `/v1/devices/${id}/state`)).body.newest;
    assert.deepEqual(now, unchanged);
  } finally {
    await w.mf.dispose();
  }
});

test("a refused reading re-driven, then a restart before the next checkpoint: the state is replayed in admission order", async () => {
  const id = "redriven";
  const R = (k, fill) => reading(id, LAST - 3 + k, fill);
  let refusedOnce = false;
  const o3 = await origin({
    answer: (r) => {
      if (!refusedOnce && r.body.readings.some((x) => x.device_id === id && x.seq === LAST - 2)) {
        refusedOnce = true;
        return { status: 422 };
      }
      return { status: 200 };
    },
  });
  try {
    await acrossRestart({
      vars: { ORIGIN_URL: o3.url, STATS_FLUSH_MS: "3600000", RETRY_BASE_MS: "5", RETRY_MAX_MS: "20" },
      before: async (w) => {
        await post(w.call, "/v1/readings", [R(0, 90)]);
        await until(() => o3.requests.some((r) => r.ok && r.body.readings.some((x) => x.device_id === id)), "the first delivered");
        await post(w.call, "/v1/readings", [R(1, 5)]);
        await until(async () => (await readingsOf(w.call, id)).some((x) => x.seq === LAST - 2 && x.delivery === "refused"), "the second refused");
        const confirming = await (await post(w.call, "/v1/readings", [R(2, 4)])).json();
        assert.equal(confirming.collections.length, 1);
        const redrive = await w.call(`/v1/devices/${id}/redrive`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
        assert.equal((await redrive.json()).redriven, 1);
      },
      after: async (w) => {
        const s = (await get(w.call, `/v1/devices/${id}/state`)).body;
        assert.deepEqual([s.newest.fill_pct, s.previous.fill_pct, s.suspected_collection, s.last_collection], [4, 5, null, { from: isoformat(at(LAST - 3)), to: isoformat(at(LAST - 2)), fill_before: 90, fill_after: 5 }]);
        // The next reading makes no second collection of the one emptying.
        assert.equal((await (await post(w.call, "/v1/readings", [R(3, 3)])).json()).collections, undefined);
        assert.equal((await get(w.call, `/v1/devices/${id}/collections`)).body.collections.length, 1);
      },
    });
  } finally {
    await o3.close();
  }
});

test("GET /v1/bins reads the configuration rows of the bins a page passes, not every configured device of a group", async () => {
  // 1 000 configured devices of group 0, the first a page asks: a page of 10 reads 11 of them.
  const ids = [];
  for (let n = 0; ids.length < 1000; n++) if (groupOf(`cfg-${n}`) === 0) ids.push(`cfg-${n}`);
  const w = await start({ script: "benches/metered-worker.js" });
  try {
    const bulk = await post(w.call, "/v1/devices/config", { devices: ids.map((device_id) => ({ device_id, codec: "dingtek/df703", bin_depth_mm: 1000 })) });
    assert.equal(bulk.status, 200, await bulk.text());
    const calls = () => w.lines.filter((l) => l.startsWith('{"event":"meter"')).map((l) => JSON.parse(l));
    const before = calls().length;
    const page = await get(w.call, "/v1/bins?limit=10");
    assert.deepEqual([page.status, page.body.bins.length, page.body.bins.every((b) => b.configured)], [200, 10, true]);
    const asked = await until(() => {
      const mine = calls().slice(before).filter((c) => c.name === groupAt(0) && c.kind === "rpc");
      return mine.length && mine;
    }, "the group's metered call");
    assert.equal(asked.length, 1);
    assert.ok(asked[0].rows_read <= 30, `rows read: ${asked[0].rows_read}`);
  } finally {
    await w.mf.dispose();
  }
});
