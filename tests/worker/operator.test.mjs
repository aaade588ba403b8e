// Operator controls (issue 12) in workerd (Miniflare), over HTTP, with a real local
// origin: forget one key (POST /v1/devices/{id}/forget), reset a device's memory (POST
// /v1/devices/{id}/reset), the device's history of operator events (GET
// /v1/devices/{id}/history), and the per-device health export from the roll-up
// (GET /v1/devices/health, JSON and CSV; GET /v1/devices/{id}/health).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { databases, fixture, get, ISO_TIME, logged, logSettled, origin, post, putConfig, readingsOf, start, tempDir, TOKEN, until } from "../support/harness.mjs";

/** An admitted reading's arrival when it is its device's newest by device time (docs/bin-state.md). */
const NEWEST = { arrival: "newest", late_by_ms: null };
import { groupOf } from "../../src/worker/placement.js";

// The origin refuses (500) until `opened`: a reading's batch stays open meanwhile.
let opened = false;
const o = await origin({ answer: () => ({ status: opened ? 200 : 500 }) });
const dir = tempDir();
const worker = await start({ persist: dir, vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "10", RETRY_BASE_MS: "20", RETRY_MAX_MS: "50" } });
after(async () => {
  await worker.mf.dispose();
  await o.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const call = worker.call;
const reading = (device_id, seq, fill_pct, ts = `2026-07-16T09:${String(seq % 60).padStart(2, "0")}:00Z`) => ({ device_id, seq, ts, fill_pct });
const at = (id, route) => `/v1/devices/${encodeURIComponent(id)}/${route}`;
// Python's isoformat: the fraction is left out at a whole second (1 time in 1 000 for a ms clock).
const objectFiles = () => (fs.existsSync(path.join(dir, "-GroupObject")) ? databases(dir, "GroupObject").length : 0);

async function ingest(burst) {
  const res = await post(call, "/v1/readings", burst);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

/** POST to an operator route: `{status, body}`. */
async function operate(id, route, body, headers = {}) {
  const res = await post(call, at(id, route), body ?? "", headers);
  return { status: res.status, body: await res.json() };
}

const forget = (id, key) => operate(id, "forget", { key });
const reset = (id) => operate(id, "reset");

test("forget: the same reading sent again is admitted again; its row stays in the ledger and its open batch, and is delivered", async () => {
  const D = "op-forget";
  const r1 = reading(D, 1, 10);
  const first = await ingest([r1, reading(D, 2, 20)]);
  const key = first.admitted[0].key;
  // The origin refused the first attempt: the batch is open, the rows pending.
  await until(() => o.requests.some((r) => r.body?.readings.some((x) => x.device_id === D)), "the first delivery attempt");
  const openBatch = o.requests.find((r) => r.body?.readings.some((x) => x.device_id === D)).idempotencyKey;
  assert.equal((await ingest([r1])).duplicates_suppressed, 1, "remembered before the forget");

  const done = await forget(D, key);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.deepEqual({ ...done.body, admitted_at: undefined, forgotten_at: undefined }, { device_id: D, key, seq: 1, held: true, admitted_at: undefined, forgotten_at: undefined });
  assert.match(done.body.forgotten_at, ISO_TIME);
  // Nothing real is lost: the row is there, still to deliver, marked forgotten.
  const rows = await readingsOf(call, D);
  assert.deepEqual(rows.map((r) => [r.key, r.delivery, r.forgotten_at]), [
    [key, "pending", done.body.forgotten_at],
    [first.admitted[1].key, "pending", null],
  ]);

  const again = await ingest([r1]);
  // Older by device time than seq 2, admitted before it: late (docs/bin-state.md).
  assert.deepEqual(again.verdicts, [{ index: 0, verdict: "admitted", key, arrival: "late", late_by_ms: 60_000 }]);
  assert.equal((await ingest([r1])).duplicates_suppressed, 1, "remembered again once re-admitted");
  const renewed = await readingsOf(call, D);
  // Still to deliver, the row is renewed in place: its place in the ledger and the outbox.
  assert.deepEqual(renewed.map((r) => [r.key, r.forgotten_at]), [
    [key, null],
    [first.admitted[1].key, null],
  ], "one row per key: the re-admission renewed it");

  // The origin comes back: both readings reach it, in the batch formed before the forget.
  opened = true;
  await until(async () => (await readingsOf(call, D)).every((r) => r.delivery === "delivered"), "the readings delivered");
  const delivered = o.requests.filter((r) => r.ok && r.body?.readings.some((x) => x.device_id === D));
  assert.deepEqual(delivered.map((r) => r.idempotencyKey), [openBatch], "the open batch, sent unchanged");
  assert.deepEqual(new Set(delivered.flatMap((r) => r.body.readings.map((x) => x.key))), new Set([key, first.admitted[1].key]));

  await logSettled(worker);
  const lines = logged(worker, "key_forgotten").filter((l) => l.device_id === D);
  assert.equal(lines.length, 1);
  assert.deepEqual([lines[0].level, lines[0].key, lines[0].held], ["WARN", key, true]);
});

test("forget: a key without a ledger row is 404 unknown_key, a device never seen 404 unknown_device (its object not started); bad bodies 400; no token 401", async () => {
  const D = "op-forget-errors";
  const { admitted } = await ingest([reading(D, 1, 1)]);
  const unknown = await forget(D, `${D}:2:0000000000000000`);
  assert.deepEqual([unknown.status, unknown.body.error.code], [404, "unknown_key"]);
  // Another device's key is not this device's.
  const other = await forget("op-forget", admitted[0].key);
  assert.deepEqual([other.status, other.body.error.code], [404, "unknown_key"]);

  const before = objectFiles();
  const never = await forget("op-never-seen", "op-never-seen:1:0000000000000000");
  assert.deepEqual([never.status, never.body.error.code], [404, "unknown_device"]);
  const neverReset = await reset("op-never-seen");
  assert.deepEqual([neverReset.status, neverReset.body.error.code], [404, "unknown_device"]);
  assert.equal(objectFiles(), before, "no object started for an unknown device");

  for (const [body, code] of [
    ["not json", "invalid_json"],
    [[admitted[0].key], "invalid_forget_body"],
    [{}, "invalid_forget_body"],
    [{ key: 41 }, "invalid_forget_body"],
    [{ key: "" }, "invalid_forget_body"],
    [{ key: admitted[0].key, keys: [] }, "invalid_forget_body"],
    [`{"key": "a", "key": ${JSON.stringify(admitted[0].key)}}`, "invalid_forget_body"],
    // JSON by the rules every body is read by (docs/http-api.md "Readings and rejections").
    [`\uFEFF${JSON.stringify({ key: admitted[0].key })}`, "invalid_json"],
    ['{"key": "\\ud800"}', "invalid_json"],
  ]) {
    const r = await operate(D, "forget", body);
    assert.deepEqual([r.status, r.body.error.code], [400, code], JSON.stringify(body));
  }
  const text = await operate(D, "forget", { key: admitted[0].key }, { "content-type": "text/plain" });
  assert.deepEqual([text.status, text.body.error.code], [415, "unsupported_media_type"]);
  const getForget = await call(at(D, "forget"), { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.deepEqual([getForget.status, getForget.headers.get("allow")], [405, "POST"]);

  for (const route of ["forget", "reset"]) {
    const res = await call(at(D, route), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ key: admitted[0].key }) });
    assert.equal(res.status, 401, route);
    assert.equal((await res.json()).error.code, "unauthorized");
  }
  for (const route of ["history", "health"]) assert.equal((await call(at(D, route))).status, 401, route);
  assert.equal((await call("/v1/devices/health")).status, 401);
  // Nothing was forgotten by any of these.
  assert.equal((await ingest([reading(D, 1, 1)])).duplicates_suppressed, 1);
});

test("reset: every key forgotten, the sequence window and the codec counter gone; ledger, outbox, configuration and counters kept", async () => {
  const D = "op-reset";
  assert.equal((await putConfig(call, D, { bin_depth_mm: 1200 })).status, 200);
  const a = [1, 2, 5].map((seq) => reading(D, seq, seq * 10));
  await ingest(a);
  const conflict = await ingest([reading(D, 2, 99), a[0]]);
  assert.deepEqual(conflict.verdicts.map((v) => v.verdict), ["conflict", "duplicate"]);
  const window = (await get(call, at(D, "gaps"))).body;
  assert.deepEqual([window.highest, window.totals.missing], [5, 2]);

  const done = await reset(D);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.deepEqual({ ...done.body, reset_at: undefined }, { device_id: D, forgotten: 4, held: 4, seq_window: { highest: 5, missing: 2, gaps: 1 }, counter_ref: null, backfill_cancelled: false, bin_state: true, reset_at: undefined });
  assert.match(done.body.reset_at, ISO_TIME);

  // The window is gone, the configuration and the ledger stay.
  const gone = (await get(call, at(D, "gaps"))).body;
  assert.deepEqual([gone.highest, gone.gaps, gone.totals.missing], [null, [], 0]);
  const config = await get(call, at(D, "config"));
  assert.deepEqual([config.status, config.body.bin_depth_mm], [200, 1200]);
  const rows = await readingsOf(call, D);
  assert.equal(rows.length, 4);
  assert.ok(rows.every((r) => r.forgotten_at === done.body.reset_at), JSON.stringify(rows));

  // A re-commissioned sensor sends its old seqs again: all admitted (seq 2 is no conflict
  // now: the memory holds no seq 2), and the new window starts with them.
  const replay = await ingest(a);
  assert.deepEqual(replay.verdicts.map((v) => v.verdict), ["admitted", "admitted", "admitted"]);
  const fresh = (await get(call, at(D, "gaps"))).body;
  assert.deepEqual([fresh.highest, fresh.totals.missing, fresh.totals.repeats], [5, 2, 0]);
  assert.equal((await readingsOf(call, D)).length, 4, "re-admissions replace their rows");
  // Counters kept: 3 + 2 before the reset, 3 after.
  const health = await until(async () => {
    const h = (await get(call, at(D, "health"))).body;
    return h.received === 8 && h;
  }, "the figures flushed");
  assert.deepEqual([health.unique, health.duplicates_suppressed, health.seq_reuses, health.missing_seqs], [7, 1, 1, 2]);

  const again = await reset(D);
  assert.deepEqual([again.body.forgotten, again.body.held, again.body.seq_window.highest], [3, 3, 5]);

  await logSettled(worker);
  const lines = logged(worker, "device_reset").filter((l) => l.device_id === D);
  assert.deepEqual(lines.map((l) => [l.level, l.forgotten, l.held, l.seq_window?.highest]), [["WARN", 4, 4, 5], ["WARN", 3, 3, 5]]);
});

test("reset deletes a DF703's counter reference: its next frame's counter is not unwrapped against the old one", async () => {
  const body = JSON.parse(fixture("raw/loriot-df703-rx.json"));
  const id = "A0B1C2D3E4F5CC01";
  assert.equal((await putConfig(call, id, { codec: "dingtek/df703", bin_depth_mm: 2500 })).status, 200);
  const frame = (counter, fcnt) => ({ ...body, EUI: id, fcnt, ts: body.ts + fcnt * 600_000, data: body.data.slice(0, 26) + counter.toString(16).padStart(4, "0") + body.data.slice(30) });
  const sent = await post(call, "/v1/uplinks/loriot", frame(65_530, 1));
  assert.equal((await sent.json()).unique, 1);
  const done = await reset(id);
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(done.body.counter_ref, 65_530);
  assert.equal(done.body.seq_window.highest, 65_530);
  // Counter 3 after the reset is seq 3, not 65 539 (the wrap from the old reference).
  const next = await (await post(call, "/v1/uplinks/loriot", frame(3, 2))).json();
  assert.equal(next.unique, 1, JSON.stringify(next));
  assert.match(next.admitted[0].key, new RegExp(`^${id}:3:`));
  assert.equal((await get(call, at(id, "gaps"))).body.highest, 3);
  const second = await reset(id);
  assert.equal(second.body.counter_ref, 3);
});

test("history: configuration changes, forgets and resets in order with their details, paged oldest first; empty for a device never seen", async () => {
  const D = "op-history";
  await putConfig(call, D, { bin_depth_mm: 1000 });
  await putConfig(call, D, { bin_depth_mm: 1000 }); // the same values: no change, no event
  const { admitted } = await ingest([reading(D, 1, 5)]);
  await forget(D, admitted[0].key);
  await reset(D);
  await putConfig(call, D, { bin_depth_mm: 1100, offset_mm: 20 });

  const all = await get(call, `${at(D, "history")}?limit=1000`);
  assert.equal(all.status, 200);
  assert.equal(all.body.device_id, D);
  assert.equal(all.body.next, null);
  const events = all.body.events;
  assert.deepEqual(events.map((e) => e.event), ["device_config", "key_forgotten", "device_reset", "device_config"]);
  for (const e of events) assert.match(e.at, ISO_TIME);
  assert.deepEqual(Object.keys(events[0].detail), ["before", "after"]);
  assert.equal(events[0].detail.before, null);
  assert.equal(events[0].detail.after.bin_depth_mm, 1000);
  assert.deepEqual([events[1].detail.key, events[1].detail.seq, events[1].detail.held], [admitted[0].key, 1, true]);
  // The key was forgotten already: the reset forgot no other row.
  assert.deepEqual([events[2].detail.forgotten, events[2].detail.held, events[2].detail.seq_window.highest], [0, 0, 1]);
  assert.deepEqual([events[3].detail.before.bin_depth_mm, events[3].detail.after.bin_depth_mm, events[3].detail.after.offset_mm], [1000, 1100, 20]);

  const first = await get(call, `${at(D, "history")}?limit=3`);
  assert.deepEqual(first.body.events, events.slice(0, 3));
  assert.ok(first.body.next !== null);
  const rest = await get(call, `${at(D, "history")}?limit=3&after=${first.body.next}`);
  assert.deepEqual([rest.body.events, rest.body.next], [events.slice(3), null]);

  const bad = await get(call, `${at(D, "history")}?limit=0`);
  assert.deepEqual([bad.status, bad.body.error.code], [400, "invalid_query"]);
  const before = objectFiles();
  const never = await get(call, at("op-history-never", "history"));
  assert.deepEqual([never.status, never.body], [200, { device_id: "op-history-never", events: [], next: null }]);
  assert.equal(objectFiles(), before);
});

/** An RFC 4180 reader: rows of fields. */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(field), (field = "");
    else if (c === "\r" && text[i + 1] === "\n") row.push(field), rows.push(row), (row = []), (field = ""), i++;
    else field += c;
  }
  assert.equal(row.length + field.length, 0, "the text ends with CRLF");
  return rows;
}

const COLUMNS = ["device_id", "received", "unique", "duplicates_suppressed", "seq_reuses", "rejected", "parked", "missing_seqs", "recovered_seqs", "seq_resets", "duplicate_ratio", "seq_reuse_ratio", "gap_ratio", "flushed_at"];
const round6 = (x) => Math.round(x * 1e6) / 1e6;

test("health: each device's counts and ratios from the roll-up, as JSON and as CSV, equal to what its bursts did", async () => {
  const odd = 'op "odd", bin';
  const A = "op-health-a";
  const B = "op-health-b";
  // A: 1 2 3 1 → 3 unique, 1 duplicate; then 2 (duplicate), 5 (new: 4 missing), 3 with
  // other content (a conflict), and a rejected reading: received 8.
  await ingest([1, 2, 3, 1].map((s) => reading(A, s, s)));
  const second = await ingest([reading(A, 2, 2), reading(A, 5, 5), reading(A, 3, 33), reading(A, 6, 101)]);
  assert.deepEqual(second.verdicts.map((v) => v.verdict), ["duplicate", "admitted", "conflict", "rejected"]);
  // B: 10 13 (11, 12 missing), then 11 late (recovered) and 11 again (duplicate).
  await ingest([reading(B, 10, 1), reading(B, 13, 1)]);
  await ingest([reading(B, 11, 1), reading(B, 11, 1)]);
  // The odd id: two readings, one replayed.
  await ingest([reading(odd, 1, 1), reading(odd, 2, 2), reading(odd, 2, 2)]);

  const expected = {
    [A]: { received: 8, unique: 5, duplicates_suppressed: 2, seq_reuses: 1, rejected: 1, parked: 0, missing_seqs: 1, recovered_seqs: 0, seq_resets: 0 },
    [B]: { received: 4, unique: 3, duplicates_suppressed: 1, seq_reuses: 0, rejected: 0, parked: 0, missing_seqs: 1, recovered_seqs: 1, seq_resets: 0 },
    [odd]: { received: 3, unique: 2, duplicates_suppressed: 1, seq_reuses: 0, rejected: 0, parked: 0, missing_seqs: 0, recovered_seqs: 0, seq_resets: 0 },
  };
  for (const e of Object.values(expected)) {
    Object.assign(e, { duplicate_ratio: round6(e.duplicates_suppressed / e.received), seq_reuse_ratio: round6(e.seq_reuses / e.received), gap_ratio: round6(e.missing_seqs / (e.unique + e.missing_seqs)) });
  }
  const rowsOf = (devices) => new Map(devices.filter((d) => d.device_id in expected).map((d) => [d.device_id, d]));
  // The roll-up lags by STATS_FLUSH_MS: wait until every device's last burst is in.
  const page = await until(async () => {
    const { body } = await get(call, "/v1/devices/health?limit=1000");
    const rows = rowsOf(body.devices);
    return rows.size === 3 && [...rows].every(([id, r]) => r.received === expected[id].received) && body;
  }, "the devices' figures in the roll-up");
  assert.equal(page.next, null);
  assert.match(page.as_of, ISO_TIME);
  assert.equal(page.stats_flush_ms, 10);
  for (const [id, row] of rowsOf(page.devices)) {
    assert.deepEqual(Object.keys(row), COLUMNS);
    const { device_id, flushed_at, ...figures } = row;
    assert.deepEqual(figures, expected[id], id);
    assert.match(flushed_at, ISO_TIME);
    // The device's own view agrees: ledger rows, open and recovered seqs.
    const gaps = (await get(call, at(id, "gaps"))).body.totals;
    assert.deepEqual([(await readingsOf(call, id)).length, gaps.missing, gaps.recovered], [row.unique, row.missing_seqs, row.recovered_seqs], id);
    // The per-device route answers the same row (a later flush, of a delivery, may have moved flushed_at).
    const one = (await get(call, at(id, "health"))).body;
    const { as_of, stats_flush_ms, flushed_at: later, ...same } = one;
    assert.deepEqual(same, { device_id, ...figures });
    for (const t of [as_of, later]) assert.match(t, ISO_TIME);
    assert.equal(stats_flush_ms, 10);
  }

  // CSV, by ?format=csv and by Accept: a header row, RFC 4180 quoting, the same values.
  for (const [query, headers] of [["?format=csv&limit=1000", {}], ["?limit=1000", { accept: "text/csv" }], ["?limit=1000", { accept: "application/json;q=0.5, text/csv" }]]) {
    const res = await call(`/v1/devices/health${query}`, { headers: { authorization: `Bearer ${TOKEN}`, ...headers } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/csv; charset=utf-8/);
    const text = await res.text();
    assert.ok(text.includes('\r\n"op ""odd"", bin",3,2,1,0,0,0,0,0,0,0.333333,0,0,'), text);
    const [header, ...rows] = parseCsv(text);
    assert.deepEqual(header, COLUMNS);
    const json = rowsOf(page.devices);
    const csvRows = new Map(rows.filter((r) => r[0] in expected).map((r) => [r[0], r]));
    assert.equal(csvRows.size, 3);
    for (const [id, r] of csvRows) {
      assert.deepEqual(r.slice(0, -1), COLUMNS.slice(0, -1).map((c) => String(json.get(id)[c])), id);
      assert.match(r.at(-1), ISO_TIME); // flushed_at (a later flush may have moved it)
    }
  }
  const oneCsv = await call(`${at(odd, "health")}?format=csv`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.deepEqual(parseCsv(await oneCsv.text()).map((r) => r[0]), ["device_id", odd]);
  // JSON when asked, or when Accept prefers it; a format this route does not know is 400.
  const json = await call("/v1/devices/health?limit=1", { headers: { authorization: `Bearer ${TOKEN}`, accept: "text/csv;q=0.1, application/json" } });
  assert.match(json.headers.get("content-type"), /^application\/json/);
  for (const query of ["?format=xml", "?format=csv&format=json", "?limit=0", "?limit=1001", "?after=a&after=b"]) {
    const r = await get(call, `/v1/devices/health${query}`);
    assert.deepEqual([r.status, r.body.error.code], [400, "invalid_query"], query);
  }
  // A device never seen: zeros, no ratios, its object not started.
  const before = objectFiles();
  const never = (await get(call, at("op-health-never", "health"))).body;
  assert.deepEqual([never.received, never.duplicate_ratio, never.gap_ratio, never.flushed_at], [0, null, null, null]);
  assert.equal(objectFiles(), before);
});

test("health pages walk every device once, group by group and in code point order within a group (an astral id after U+FF01), with a Link to the next page", async () => {
  // Two ids of one group, so that their order is the code point order.
  const astral = "op-\u{1F5D1}";
  const bmp = Array.from({ length: 5000 }, (_, k) => `op-\uFF01${k}`).find((id) => groupOf(id) === groupOf(astral));
  for (const id of [astral, bmp]) await ingest([reading(id, 1, 1)]);
  const seen = [];
  let next = "";
  let pages = 0;
  for (;;) {
    const res = await call(`/v1/devices/health?limit=2${next === "" ? "" : `&after=${encodeURIComponent(next)}`}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    seen.push(...body.devices.map((d) => d.device_id));
    pages += 1;
    if (body.next === null) {
      assert.equal(res.headers.get("link"), null);
      break;
    }
    const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.get("link"));
    assert.ok(link, res.headers.get("link"));
    const target = new URL(link[1], "http://x");
    assert.deepEqual([target.pathname, target.searchParams.get("limit"), target.searchParams.get("after")], ["/v1/devices/health", "2", body.next]);
    next = body.next;
  }
  const byCodePoint = (a, b) => {
    const x = [...a].map((c) => c.codePointAt(0));
    const y = [...b].map((c) => c.codePointAt(0));
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
    return x.length - y.length;
  };
  assert.deepEqual(seen, [...seen].sort((a, b) => groupOf(a) - groupOf(b) || byCodePoint(a, b)), "group order, then code point order");
  assert.equal(new Set(seen).size, seen.length, "each device once");
  assert.ok(seen.indexOf(bmp) < seen.indexOf(astral));
  const { body } = await get(call, "/v1/devices/health?limit=1000");
  assert.deepEqual(seen, body.devices.map((d) => d.device_id));
  assert.ok(pages > 2);
});

test("health answers chosen by Accept say so (Vary: Accept), so that a cache does not serve the CSV for JSON", async () => {
  await ingest([reading("bin-vary", 1, 10)]);
  for (const route of ["/v1/devices/health", at("bin-vary", "health")]) {
    for (const accept of ["text/csv", "application/json"]) {
      const res = await call(route, { headers: { authorization: `Bearer ${TOKEN}`, accept } });
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      assert.match(res.headers.get("vary") ?? "", /(^|,\s*)accept(\s*,|$)/i, `${route} for ${accept}`);
    }
  }
});

test("health CSV: an id a spreadsheet would run as a formula is written with a leading ', the JSON keeps it as it is", async () => {
  // Before, `=HYPERLINK(...)` as a device id was exported verbatim, and a spreadsheet
  // opening the CSV ran it.
  const ids = ['=HYPERLINK("http://evil.example","bin")', "+41", "-7", "@SUM(A1)"];
  for (const [i, id] of ids.entries()) await ingest([reading(id, 1, 10 + i)]);
  await until(async () => {
    const page = (await get(call, "/v1/devices/health?limit=1000")).body;
    return ids.every((id) => page.devices.some((d) => d.device_id === id && d.received === 1));
  }, "the roll-up to hold the devices");
  const res = await call("/v1/devices/health?format=csv&limit=1000", { headers: { authorization: `Bearer ${TOKEN}` } });
  const rows = new Map(parseCsv(await res.text()).map((r) => [r[0], r]));
  for (const id of ids) {
    const row = rows.get(`'${id}`);
    assert.ok(row, `a row for '${id}: ${[...rows.keys()].join(" | ")}`);
    assert.equal(rows.has(id), false, id);
    // The counts are numbers, written as they are.
    assert.deepEqual(row.slice(1, 3), ["1", "1"], id);
  }
  const one = await call(`${at("-7", "health")}?format=csv`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.deepEqual(parseCsv(await one.text()).map((r) => r[0]), ["device_id", "'-7"]);
  const json = (await get(call, at("-7", "health"))).body;
  assert.equal(json.device_id, "-7");
});
