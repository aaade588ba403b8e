// The operator controls (issue 12) in races and at their edges: forget and reset against deliveries in
// flight, cold starts, retried calls, and the history export's edges.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { get, origin, post, readingsOf, start, statsOf, tempDir, until } from "../support/harness.mjs";

/** An admitted reading's arrival when it is its device's newest by device time (docs/bin-state.md). */
const NEWEST = { arrival: "newest", late_by_ms: null };
import { groupName } from "../../src/worker/placement.js";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const reading = (device_id, seq, fill_pct, ts = `2026-07-16T09:${String(seq % 60).padStart(2, "0")}:00Z`) => ({ device_id, seq, ts, fill_pct });
const at = (id, route) => `/v1/devices/${encodeURIComponent(id)}/${route}`;

async function ingest(call, burst) {
  const res = await post(call, "/v1/readings", burst);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}
/**
 * The worker's retry (attempt 1) of its call to D's object for the burst `text`, whose
 * answer was lost: made on the namespace with the plan the worker makes (the core's
 * parseUplink), as in store-retry.test.mjs, since no fault throws a call after its commit.
 */
async function retry(w, D, text, burst_id) {
  const { readings } = JSON.parse(pkg.parseUplink("readings", new TextEncoder().encode(text), { maxReadings: 10_000 })).devices[0];
  const ns = await w.mf.getDurableObjectNamespace("GROUPS");
  return ns.get(ns.idFromName(groupName(D))).ingest({ device_id: D, readings, refused: 0, route: "readings", burst_id, attempt: 1 });
}

async function operate(call, id, route, body) {
  const res = await post(call, at(id, route), body ?? "");
  return { status: res.status, body: await res.json() };
}

// The origin holds its first answer to each device's first batch for `slow` ms.
let slow = 0;
const o = await origin({ answer: (r) => (r.n === 0 && slow ? { status: 200, delay: slow } : { status: 200 }) });
after(() => o.close());

test("forget while the key's batch is in flight, then the same reading again: the origin gets it once, the row is delivered", async () => {
  slow = 1500;
  const w = await start({ vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "10", RETRY_BASE_MS: "20", RETRY_MAX_MS: "50" } });
  try {
    const D = "atk-inflight";
    const r1 = reading(D, 1, 10);
    const key = (await ingest(w.call, [r1])).admitted[0].key;
    await until(() => o.requests.some((r) => r.body?.readings.some((x) => x.device_id === D)), "the batch in flight");
    assert.equal((await operate(w.call, D, "forget", { key })).status, 200);
    assert.deepEqual((await ingest(w.call, [r1])).verdicts, [{ index: 0, verdict: "admitted", key, ...NEWEST }]);
    await until(async () => (await readingsOf(w.call, D)).every((r) => r.delivery === "delivered"), "delivered");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(o.accepted().filter((k) => k === key), [key], "once");
    const rows = await readingsOf(w.call, D);
    assert.deepEqual(rows.map((r) => [r.key, r.delivery, r.forgotten_at]), [[key, "delivered", null]]);
  } finally {
    slow = 0;
    await w.mf.dispose();
  }
});

test("forget survives a cold start, and so does the re-admission after it", async () => {
  const dir = tempDir();
  try {
    const D = "atk-cold";
    const r1 = reading(D, 1, 10);
    let w = await start({ persist: dir });
    const key = (await ingest(w.call, [r1, reading(D, 2, 20)])).admitted[0].key;
    assert.equal((await operate(w.call, D, "forget", { key })).status, 200);
    await w.mf.dispose();
    w = await start({ persist: dir });
    assert.equal((await ingest(w.call, [r1])).unique, 1, "forgotten across the restart");
    await w.mf.dispose();
    w = await start({ persist: dir });
    const again = await ingest(w.call, [r1, reading(D, 2, 20)]);
    assert.equal(again.duplicates_suppressed, 2, "held again once re-admitted");
    await w.mf.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a retried call (attempt > 0) of a burst stored before a reset counts nothing twice and does not feed the new window", async () => {
  const dir = tempDir();
  const w = await start({ persist: dir, vars: { STATS_FLUSH_MS: "10" } });
  try {
    const D = "atk-retry";
    const text = JSON.stringify([reading(D, 1, 10), reading(D, 2, 20)]);
    const first = await ingest(w.call, JSON.parse(text));
    assert.equal((await operate(w.call, D, "reset")).status, 200);
    const retried = await retry(w, D, text, first.burst_id);
    assert.deepEqual([retried.ok, [...retried.verdicts]], [true, [0, 0]], "answered as the first call was");
    assert.deepEqual(retried.counts.received, 0, "counted by the first call");
    const gaps = (await get(w.call, at(D, "gaps"))).body;
    assert.equal(gaps.highest, null, "the reset window is not fed by the old burst");
    await until(async () => (await get(w.call, at(D, "health"))).body.received > 0, "flushed");
    await new Promise((r) => setTimeout(r, 200));
    const health = (await get(w.call, at(D, "health"))).body;
    assert.deepEqual([health.received, health.unique], [2, 2], "one burst of two readings, counted once");
    const rows = await readingsOf(w.call, D);
    assert.ok(rows.every((r) => r.forgotten_at !== null), `still forgotten: ${JSON.stringify(rows)}`);
    const sent = await ingest(w.call, JSON.parse(text));
    assert.equal(sent.unique, 2, "still forgotten by the memory: a new send is admitted");
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a retried call of a burst whose conflict an operator forgot since answers the conflict as stored and counts no seq reuse again", async () => {
  const w = await start();
  try {
    const D = "atk-retry-conflict";
    await ingest(w.call, [reading(D, 5, 10)]);
    const text = JSON.stringify([reading(D, 5, 55)]);
    const first = await ingest(w.call, JSON.parse(text));
    assert.equal(first.verdicts[0].verdict, "conflict");
    const { key, conflicts_with } = (await readingsOf(w.call, D))[1];
    assert.equal((await operate(w.call, D, "forget", { key })).status, 200);
    const retried = await retry(w, D, text, first.burst_id);
    assert.deepEqual([[...retried.verdicts], retried.notes, retried.counts.received, retried.counts.seq_reuses], [[1], [{ conflicts_with, ...NEWEST, collection: null }], 0, 0]);
    assert.notEqual((await readingsOf(w.call, D))[1].forgotten_at, null, "still forgotten");
  } finally {
    await w.mf.dispose();
  }
});
