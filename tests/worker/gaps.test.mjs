// Sequence health per device (GET /v1/devices/{id}/gaps) in workerd: a native burst
// that skips seqs opens a gap, a replayed buffer closes it (recovered, logged with its
// delay), a DF703 counter restart via LORIOT is a reset (not a gap of 65 000), the
// window survives a restart and an older storage without its table, an unknown
// device's route starts no object, and the fleet figures in /v1/stats.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { EM500, history, PERIOD, SLOT0, T0, tts as ttsEm500 } from "../support/em500.mjs";
import { databases, fixture, gapsOf, get, ISO_TIME, logged, logSettled, post, putConfig, start, tempDir, TOKEN, until } from "../support/harness.mjs";

const dir = tempDir();
const VARS = { STATS_FLUSH_MS: "10" };
let worker = await start({ persist: dir, vars: VARS });
after(async () => {
  await worker.mf.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

const burst = async (device_id, seqs) => {
  const res = await post(worker.call, "/v1/readings", seqs.map((seq) => ({ device_id, seq, ts: `2026-07-16T09:${String(seq % 60).padStart(2, "0")}:00Z`, fill_pct: 10 + (seq % 50) })));
  assert.equal(res.status, 200);
  return res.json();
};
const gaps = (id) => gapsOf(worker.call, id);
const objectFiles = () => (fs.existsSync(path.join(dir, "-GroupObject")) ? databases(dir, "GroupObject").length : 0);

test("a native burst 1, 2, 5 opens the gap 3-4; a replayed 3, 4 closes it, recovered and logged", async () => {
  const first = await burst("bin-gap-1", [1, 2, 5]);
  // The ingest reply says nothing of sequence health.
  assert.ok(!Object.keys(first).some((k) => /gap|missing|recovered|reset/.test(k)), JSON.stringify(first));
  const open = await gaps("bin-gap-1");
  assert.equal(open.device_id, "bin-gap-1");
  assert.equal(open.highest, 5);
  assert.equal(open.gaps.length, 1);
  assert.deepEqual([open.gaps[0].from, open.gaps[0].to], [3, 4]);
  assert.match(open.gaps[0].first_noticed_at, ISO_TIME);
  assert.equal(open.totals.missing, 2);

  // A duplicate feeds the window as a repeat; it closes nothing.
  await burst("bin-gap-1", [5]);
  assert.equal((await gaps("bin-gap-1")).totals.repeats, 1);

  const replay = await burst("bin-gap-1", [3, 4]);
  assert.equal(replay.unique, 2);
  const closed = await gaps("bin-gap-1");
  assert.deepEqual(closed.gaps, []);
  assert.equal(closed.totals.missing, 0);
  assert.equal(closed.totals.recovered, 2);
  await logSettled(worker);
  const [line] = logged(worker, "gap_recovered", replay.burst_id);
  assert.ok(line, "a gap_recovered line");
  assert.equal(line.level, "INFO");
  assert.deepEqual([line.device_id, line.recovered, line.from, line.to], ["bin-gap-1", 2, 3, 4]);
  assert.ok(Number.isInteger(line.delay_ms) && line.delay_ms >= 0, JSON.stringify(line));
});

test("rejected readings do not feed the window", async () => {
  const res = await post(worker.call, "/v1/readings", [
    { device_id: "bin-gap-rej", seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 1 },
    { device_id: "bin-gap-rej", seq: 9, ts: "2026-07-16T09:00:00Z", fill_pct: 101 },
  ]);
  assert.equal(res.status, 200);
  const h = await gaps("bin-gap-rej");
  assert.deepEqual([h.highest, h.gaps], [1, []]);
});

test("a DF703 counter restart via LORIOT is a reset, not a gap of 65 000", async () => {
  const body = JSON.parse(fixture("raw/loriot-df703-rx.json"));
  const id = "A0B1C2D3E4F5AA01";
  const res = await worker.call(`/v1/devices/${id}/config`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ codec: "dingtek/df703", bin_depth_mm: 2500 }),
  });
  assert.equal(res.status, 200);
  const frame = (counter, fcnt) => ({ ...body, EUI: id, fcnt, ts: body.ts + fcnt * 600_000, data: body.data.slice(0, 26) + counter.toString(16).padStart(4, "0") + body.data.slice(30) });
  let last;
  for (const [counter, fcnt] of [[30_000, 1], [30_001, 2], [30_003, 3], [3, 4], [4, 5]]) {
    const r = await post(worker.call, "/v1/uplinks/loriot", frame(counter, fcnt));
    last = await r.json();
    assert.equal(last.unique, 1, JSON.stringify(last));
  }
  const h = await gaps(id);
  assert.equal(h.highest, 4);
  assert.deepEqual(h.gaps, []);
  assert.equal(h.totals.resets, 1);
  assert.equal(h.totals.missing, 0);
  assert.equal(h.totals.closed_by_reset, 1); // 30 002, open when the counter restarted
  await logSettled(worker);
  const resets = logged(worker, "seq_reset").filter((l) => l.device_id === id);
  assert.equal(resets.length, 1);
  assert.deepEqual([resets[0].level, resets[0].from, resets[0].to], ["WARN", 30_003, 3]);
});

test("EM500-UDL history records feed the window as slots of the reporting period; without a period they do not", async () => {
  const body = JSON.parse(fixture("raw/tts-em500-udl-history.json"));
  const configure = (id, config) =>
    worker.call(`/v1/devices/${id}/config`, {
      method: "PUT",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ codec: "milesight-iot/em500-udl", bin_depth_mm: 1500, ...config }),
    });
  const send = async (id) => {
    const r = await post(worker.call, "/v1/uplinks/ttn", { ...body, end_device_ids: { ...body.end_device_ids, dev_eui: id } });
    assert.equal((await r.json()).unique, 2);
  };
  // Records at 1665561758 and 1665565242 s: slots 2775936 and 2775942 of 600 s.
  assert.equal((await configure("24E124136B50AA01", { reporting_period_s: 600 })).status, 200);
  await send("24E124136B50AA01");
  const h = await gaps("24E124136B50AA01");
  assert.deepEqual([h.highest, h.gaps.map((g) => [g.from, g.to])], [2775942, [[2775937, 2775941]]]);
  assert.equal((await configure("24E124136B50AA02", {})).status, 200);
  await send("24E124136B50AA02");
  assert.equal((await gaps("24E124136B50AA02")).highest, null);
});

test("an unknown device's gaps are answered empty without starting its object", async () => {
  const before = objectFiles();
  const h = await gaps("bin-never-seen");
  assert.deepEqual([h.device_id, h.highest, h.gaps, h.totals.missing, h.totals.resets], ["bin-never-seen", null, [], 0, 0]);
  assert.equal(objectFiles(), before);
  const noToken = await worker.call("/v1/devices/bin-never-seen/gaps");
  assert.equal(noToken.status, 401);
});

test("/v1/stats counts missing_seqs, recovered_seqs and seq_resets", async () => {
  await burst("bin-gap-2", [10, 20]); // 11-19 missing, and the EM500's 5 slots
  const s = await until(async () => {
    const b = (await get(worker.call, "/v1/stats")).body;
    return b.missing_seqs === 9 + 5 && b.recovered_seqs === 2 && b.seq_resets === 1 ? b : null;
  }, "the sequence figures in /v1/stats");
  assert.equal(s.missing_seqs, 14);
});

test("the window survives a restart", async () => {
  await worker.mf.dispose();
  worker = await start({ persist: dir, vars: VARS });
  const kept = await gaps("bin-gap-2");
  assert.deepEqual(kept.gaps.map((g) => [g.from, g.to]), [[11, 19]]);
  await burst("bin-gap-2", [15]);
  assert.deepEqual((await gaps("bin-gap-2")).gaps.map((g) => [g.from, g.to]), [[11, 14], [16, 19]]);
});

test("a change of reporting_period_s starts the device's window over: its slots change unit, so old and new slots are not one sequence", async () => {
  const eui = "A84041000000A901";
  assert.equal((await putConfig(worker.call, eui, EM500)).status, 200);
  await ttsEm500(worker, eui, "bin-period", history([0, 1, 2]));
  assert.equal((await gaps(eui)).highest, SLOT0 + 2);
  // The sensor now reports every 300 s: its next record, 600 s after the last, is 2 slots on.
  const put = await putConfig(worker.call, eui, { ...EM500, reporting_period_s: PERIOD / 2 });
  assert.equal(put.status, 200);
  await ttsEm500(worker, eui, "bin-period", history([3]));
  const h = await gaps(eui);
  assert.equal(h.highest, (T0 + 3 * PERIOD) / (PERIOD / 2));
  assert.deepEqual(h.gaps, []);
  assert.equal(h.totals.missing, 0);
  await logSettled(worker);
  assert.ok(logged(worker, "seq_window_restarted").some((l) => l.device_id === eui && l.reason === "reporting_period_changed"));
});

test("one outlier seq (1-5, 4 294 967 295, 6-10) is one reset: nothing missing, recovered or too old, in /gaps, the device's health and /v1/stats", async () => {
  // Before, 4 294 967 284 seqs were missing, the gap ratio 1, the fleet gauge above
  // 4.29e9, and 6-10 counted as late arrivals.
  const fleet = async () => (await get(worker.call, "/v1/stats")).body;
  const settled = async (want) => until(async () => {
    const b = await fleet();
    return want(b) ? b : null;
  }, "the roll-up settled");
  const before = await fleet();
  await burst("bin-outlier", [1, 2, 3, 4, 5]);
  await burst("bin-outlier", [4_294_967_295]);
  await burst("bin-outlier", [6, 7, 8, 9, 10]);
  const g = await gaps("bin-outlier");
  assert.deepEqual([g.highest, g.gaps, g.totals.missing, g.totals.recovered, g.totals.too_old, g.totals.resets], [10, [], 0, 0, 0, 1]);
  const health = await until(async () => {
    const h = (await get(worker.call, "/v1/devices/bin-outlier/health")).body;
    return h.received === 11 ? h : null;
  }, "the device's figures flushed");
  assert.deepEqual([health.missing_seqs, health.recovered_seqs, health.seq_resets, health.gap_ratio], [0, 0, 1, 0]);
  const after = await settled((b) => b.seq_resets === before.seq_resets + 1);
  assert.deepEqual([after.missing_seqs, after.recovered_seqs], [before.missing_seqs, before.recovered_seqs]);
});
