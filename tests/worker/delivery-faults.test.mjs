// Delivery to ORIGIN_URL (src/worker/delivery.js) against an origin that fails in
// every way, across restarts and storage faults, in workerd (Miniflare) with a real
// HTTP origin on 127.0.0.1. Every case asserts the same contract (`assertContract`):
// every admitted reading reaches the origin at least once, under one stable key
// (its own `key` and one batch Idempotency-Key, whose body never changes), and no
// row is marked delivered without a 2xx from ORIGIN_URL itself. Faults in storage
// are real SQLite triggers added between two runs (as rollup-faults.test.mjs does).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import { start, post, get, origin, until, tempDir, databases, sqlite, TOKEN } from "../support/harness.mjs";
import { groupOf } from "../../src/worker/placement.js";

const reading = (device_id, seq, fill_pct) => ({ device_id, seq, ts: "2026-07-16T09:00:00Z", fill_pct });
/** Small retry waits: a failed batch is retried within milliseconds. */
const FAST = { RETRY_BASE_MS: "5", RETRY_MAX_MS: "20", STATS_FLUSH_MS: "50" };
const DEV = "bin-D1";

/** POSTs a burst whose readings are all new; returns their keys. */
async function admit(w, burst) {
  const res = await post(w.call, "/v1/readings", burst);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.unique, burst.length, JSON.stringify(body));
  return body.admitted.map((a) => a.key);
}

const ledger = async (w, device = DEV) => (await get(w.call, `/v1/devices/${device}/readings`)).body.readings;

/** The worker's log lines with this `event`. */
const logged = (w, event) =>
  w.lines
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l))
    .filter((l) => l.event === event);

/** Waits until every row of `device` is delivered; returns the rows. */
const allDelivered = (w, device = DEV) =>
  until(async () => {
    const rows = await ledger(w, device);
    return rows.length > 0 && rows.every((r) => r.delivery === "delivered") && rows;
  }, `${device} delivered`);

/** A first run on `dir`: admits `burst`, waits until `settled(w)`, stops. Returns the keys. */
async function firstRun(dir, vars, burst, settled) {
  const w = await start({ persist: dir, vars });
  try {
    const keys = await admit(w, burst);
    await settled(w);
    return keys;
  } finally {
    await w.mf.dispose();
  }
}

/** Waits for `n` `delivery_failed` lines. */
const failedAttempts = (n) => (w) => until(() => logged(w, "delivery_failed").length >= n, `${n} failed attempts`);

/** Waits for the first `delivery_not_recorded` line; returns it. */
const notRecorded = async (w) => (await until(() => logged(w, "delivery_not_recorded")[0], "the failed write logged"));

const is2xx = (r) => r.status >= 200 && r.status < 300;
/** Answers by which an origin refuses a batch's content: it did not store it. */
const REFUSALS = new Set([400, 413, 422]);
const keysOf = (r) => r.body.readings.map((x) => x.key);

/**
 * The delivery contract over every request the origin saw: only `POST /ingest` (no
 * redirect followed); every key in `keys` stored by the origin; each reading under
 * one Idempotency-Key, and each Idempotency-Key always with the same body, byte for
 * byte; `firstBatch` (the first burst's keys) travels alone, never joined by later
 * rows; a ledger row is `delivered` only if a 2xx answer covered it.
 */
function assertContract(requests, keys, rows, firstBatch) {
  for (const r of requests) assert.deepEqual([r.method, r.path], ["POST", "/ingest"], "nothing but ORIGIN_URL is asked");
  const stored = new Set(requests.filter((r) => r.ok).flatMap(keysOf));
  for (const k of keys) assert.ok(stored.has(k), `${k} reached the origin`);
  const batchOf = new Map();
  const bodyOf = new Map();
  for (const r of requests) {
    assert.match(r.idempotencyKey, /^[0-9a-f]{64}$/);
    if (bodyOf.has(r.idempotencyKey)) assert.equal(r.raw, bodyOf.get(r.idempotencyKey), "a retry sends its batch verbatim");
    bodyOf.set(r.idempotencyKey, r.raw);
    for (const k of keysOf(r)) {
      if (batchOf.has(k)) assert.equal(batchOf.get(k), r.idempotencyKey, `${k} goes out under one Idempotency-Key`);
      batchOf.set(k, r.idempotencyKey);
    }
    // A definite refusal (the origin did not store it) frees its readings for a new batch.
    if (REFUSALS.has(r.status)) for (const k of keysOf(r)) batchOf.delete(k);
    if (firstBatch && keysOf(r).includes(firstBatch[0])) assert.deepEqual(keysOf(r), firstBatch, "the first batch keeps its composition");
  }
  const answered2xx = new Set(requests.filter(is2xx).flatMap(keysOf));
  for (const row of rows) assert.ok(row.delivery !== "delivered" || answered2xx.has(row.key), `${row.key} marked delivered only after a 2xx`);
}

/**
 * One device, two bursts: the first while the origin fails with `fault` (its batch
 * is formed and refused), the second after that first failure (new rows, which must
 * not join the failed batch); `attempts` failed attempts in all, then the origin
 * recovers. Returns what the origin saw and the `delivery_failed` lines.
 */
async function throughFault(fault, { vars = {}, attempts = 3 } = {}) {
  let healthy = false;
  const o = await origin({ answer: (r) => (healthy && r.path === "/ingest" ? { status: 200 } : fault(r)) });
  const w = await start({ vars: { ...FAST, ...vars, ORIGIN_URL: o.url } });
  try {
    const first = await admit(w, [reading(DEV, 1, 10), reading(DEV, 2, 20)]);
    await until(() => logged(w, "delivery_failed").length >= 1, "the first attempt failed", 10_000);
    const second = await admit(w, [reading(DEV, 3, 30)]);
    await until(() => logged(w, "delivery_failed").length >= attempts, `${attempts} failed attempts`, 10_000);
    const pending = await ledger(w);
    assert.deepEqual(pending.map((r) => r.delivery), ["pending", "pending", "pending"], "no 2xx yet: nothing delivered");
    healthy = true;
    const rows = await allDelivered(w);
    assertContract(o.requests, [...first, ...second], rows, first);
    return { requests: o.requests, failed: logged(w, "delivery_failed"), url: o.url };
  } finally {
    await w.mf.dispose();
    await o.close();
  }
}

for (const status of [301, 302, 303, 307, 308]) {
  test(`origin answering ${status}: no redirect is followed or counted; delivered once ORIGIN_URL answers 2xx`, async () => {
    // The redirect target answers 200: following it must neither deliver the body
    // there nor mark the rows delivered.
    const { failed, url } = await throughFault((r) => (r.path === "/final" ? { status: 200 } : { status, headers: { location: "/final" } }));
    const target = url.replace(/\/ingest$/, "/final");
    assert.equal(failed[0].level, "WARN");
    assert.equal(failed[0].error, `origin answered HTTP ${status} (redirect to ${target}); set ORIGIN_URL to the final URL`);
  });
}

// 401, 403, 404 … say the origin refuses everything (credentials, address): held and
// retried, never parked. 409 (the same Idempotency-Key still in progress), 408, 425,
// 429 and 5xx are ambiguous: the origin may have stored the batch.
for (const status of [401, 403, 404, 408, 409, 425, 429, 500, 502, 503]) {
  test(`origin answering ${status}: retried with the same batch until a 2xx`, async () => {
    const { failed } = await throughFault(() => ({ status }));
    assert.equal(failed[0].error, `origin answered HTTP ${status}`);
  });
}

/** Rows of the device objects' files in `dir` (no runtime holding them), as objects. */
function onDisk(dir, query) {
  const py = "import sqlite3,sys,json; c=sqlite3.connect(sys.argv[1]); c.row_factory=sqlite3.Row; print(json.dumps([dict(r) for r in c.execute(sys.argv[2])]))";
  return databases(dir, "GroupObject").flatMap((f) => JSON.parse(execFileSync("python3", ["-c", py, f, query], { encoding: "utf8" })));
}

/** Ten minutes of backoff: a reading that waits for a retry is not delivered within a test. */
const SLOW = { RETRY_BASE_MS: "600000", RETRY_MAX_MS: "600000", STATS_FLUSH_MS: "50" };

for (const status of [400, 413, 422]) {
  test(`a reading the origin refuses (${status}) is parked as refused, kept and counted; the readings after it go out at once`, async () => {
    // The origin refuses any batch holding seq 1 and stores every other one.
    const o = await origin({ answer: (r) => (r.body.readings.some((x) => x.seq === 1) ? { status } : { status: 200 }) });
    const dir = tempDir();
    // Any retry would wait ten minutes: only a refusal that is not retried lets the rest through.
    const w = await start({ persist: dir, vars: { ...SLOW, ORIGIN_URL: o.url } });
    let first;
    try {
      first = await admit(w, [reading(DEV, 1, 10), reading(DEV, 2, 20), reading(DEV, 3, 30)]);
      await until(() => o.requests.length >= 1, "the first batch at the origin");
      const later = await admit(w, [reading(DEV, 4, 40)]);
      const rows = await until(async () => {
        const rows = await ledger(w);
        return rows.length === 4 && rows.every((r) => r.delivery !== "pending") && rows;
      }, "every reading delivered or refused");
      assert.deepEqual(
        rows.map((r) => [r.seq, r.delivery]),
        [[1, "refused"], [2, "delivered"], [3, "delivered"], [4, "delivered"]],
      );
      assertContract(o.requests, [...first.slice(1), ...later], rows);
      assert.deepEqual(o.requests.filter(is2xx).flatMap((r) => r.body.readings.map((x) => x.seq)), [2, 3, 4], "delivered in admission order");
      const alone = o.requests.filter((r) => keysOf(r).length === 1 && keysOf(r)[0] === first[0]);
      assert.equal(alone.length, 1, "refused alone once, then parked: not retried");
      const refused = logged(w, "delivery_refused");
      assert.equal(refused.length, 1);
      assert.deepEqual(
        { ...refused[0], error: undefined },
        { level: "ERROR", event: "delivery_refused", device_id: DEV, batch: alone[0].idempotencyKey, key: first[0], status, error: undefined },
      );
      assert.equal(refused[0].error, `origin answered HTTP ${status}`);
      const stats = await until(async () => {
        const s = (await get(w.call, "/v1/stats")).body;
        return s.refused_by_origin === 1 && s.delivered === 3 && s.pending_deliveries === 0 && s;
      }, "/v1/stats counts the parked reading");
      assert.equal(stats.oldest_undelivered_age_ms, null, "nothing waits for delivery");
    } finally {
      await w.mf.dispose();
      await o.close();
    }
    try {
      assert.deepEqual(onDisk(dir, "SELECT key, state, last_error, batch_id FROM readings WHERE seq = 1"), [
        { key: first[0], state: "refused", last_error: `origin answered HTTP ${status}`, batch_id: null },
      ]);
      assert.deepEqual(onDisk(dir, "SELECT id FROM batches"), [], "no batch left open");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("a batch the origin finds too large (413) is split in halves until it fits; every reading delivered, in order", async () => {
  // The first batch small enough meets a 500 (ambiguous): it is retried under its key.
  let small = 0;
  const o = await origin({ answer: (r) => (r.body.readings.length > 2 ? { status: 413 } : { status: small++ === 0 ? 500 : 200 }) });
  const w = await start({ vars: { ...FAST, ORIGIN_URL: o.url } });
  try {
    const keys = await admit(w, [1, 2, 3, 4, 5].map((seq) => reading(DEV, seq, seq)));
    const rows = await allDelivered(w);
    assertContract(o.requests, keys, rows, undefined);
    assert.deepEqual(o.requests.filter(is2xx).flatMap((r) => r.body.readings.map((x) => x.seq)), [1, 2, 3, 4, 5], "each once, in admission order");
    assert.deepEqual(logged(w, "delivery_refused"), [], "nothing parked");
    const [failed, retry] = o.requests.filter((r) => r.body.readings.length <= 2);
    assert.deepEqual([failed.status, retry.idempotencyKey, retry.raw], [500, failed.idempotencyKey, failed.raw], "a half is a stable batch too");
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a parked reading re-driven (POST /v1/devices/{id}/redrive) after the origin is fixed is delivered in a new batch", async () => {
  let fixed = false;
  const o = await origin({ answer: (r) => (!fixed && r.body.readings.some((x) => x.seq === 1) ? { status: 422 } : { status: 200 }) });
  const w = await start({ vars: { ...SLOW, ORIGIN_URL: o.url } });
  const redrive = async (query = "", device = DEV) => {
    const res = await post(w.call, `/v1/devices/${encodeURIComponent(device)}/redrive${query}`, "");
    return { status: res.status, body: await res.json() };
  };
  try {
    const keys = await admit(w, [reading(DEV, 1, 10), reading(DEV, 2, 20)]);
    await until(async () => (await ledger(w))[0].delivery === "refused", "seq 1 parked");
    fixed = true;
    // Refusals first: a bad query, a device that never reported (answered without
    // starting its object), then the real re-drive of one named key.
    assert.equal((await redrive("?key=")).body.error.code, "invalid_query");
    assert.deepEqual(await redrive("", "never-reported"), { status: 200, body: { device_id: "never-reported", redriven: 0 } });
    const r = await redrive(`?key=${encodeURIComponent(keys[0])}&key=no-such-key`);
    assert.deepEqual(r, { status: 200, body: { device_id: DEV, redriven: 1 } });
    const rows = await allDelivered(w);
    assertContract(o.requests, keys, rows);
    assert.deepEqual((await redrive()).body, { device_id: DEV, redriven: 0 }, "nothing left parked");
    assert.equal(logged(w, "redrive").length, 4 - 1, "each re-drive logged (the refused query is not)");
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a retention sweep never deletes a parked reading", async () => {
  const o = await origin({ answer: (r) => (r.body.readings.some((x) => x.seq === 1) ? { status: 422 } : { status: 200 }) });
  // Rows past retention (1 ms) are deleted by the next alarm, except the parked one.
  const w = await start({ vars: { ...FAST, TTL_MS: "1", LEDGER_RETENTION_MS: "0", ORIGIN_URL: o.url } });
  try {
    await admit(w, [reading(DEV, 1, 10), reading(DEV, 2, 20)]);
    await until(() => o.requests.some(is2xx), "seq 2 delivered");
    await admit(w, [reading(DEV, 3, 30)]); // an alarm after seq 2's delivery: its sweep
    const rows = await until(async () => {
      const rows = await ledger(w);
      return rows.length === 1 && rows;
    }, "the delivered rows swept");
    assert.deepEqual(rows.map((r) => [r.seq, r.delivery]), [[1, "refused"]]);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("credentials in ORIGIN_URL or a Location never reach a log line or last_error", async () => {
  const o = await origin({
    answer: (r) =>
      r.n === 0
        ? { status: 302, headers: { location: "/moved" } }
        : r.n === 1
          ? { status: 307, headers: { location: "http://other:pw2@127.0.0.1:1/x" } }
          : { status: 200 },
  });
  const dir = tempDir();
  const w = await start({ persist: dir, vars: { ...FAST, ORIGIN_URL: o.url.replace("http://", "http://user:s3cret@") } });
  try {
    await admit(w, [reading(DEV, 1, 10)]);
    await until(() => logged(w, "delivery_failed").length >= 2, "two failed attempts");
    assert.deepEqual(
      logged(w, "delivery_failed").map((l) => l.error),
      [
        `origin answered HTTP 302 (redirect to ${o.url.replace(/\/ingest$/, "/moved")}); set ORIGIN_URL to the final URL`,
        "origin answered HTTP 307 (redirect to http://127.0.0.1:1/x); set ORIGIN_URL to the final URL",
      ],
    );
  } finally {
    await w.mf.dispose();
    await o.close();
  }
  try {
    for (const line of w.lines) assert.doesNotMatch(line, /s3cret|pw2|user:|other:/, "no credentials logged");
    for (const row of onDisk(dir, "SELECT last_error FROM readings")) assert.doesNotMatch(String(row.last_error), /s3cret|pw2/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("credentials in ORIGIN_URL are not logged when the origin cannot be reached", async () => {
  const gone = await origin();
  await gone.close();
  const w = await start({ vars: { ...FAST, ORIGIN_URL: gone.url.replace("http://", "http://user:s3cret@") } });
  try {
    await admit(w, [reading(DEV, 1, 10)]);
    const [line] = await until(() => logged(w, "delivery_failed").slice(0, 1).length && logged(w, "delivery_failed"), "a failed attempt");
    assert.match(line.error, /^origin unreachable: /);
    for (const l of w.lines) assert.doesNotMatch(l, /s3cret|user:/, "no credentials logged");
  } finally {
    await w.mf.dispose();
  }
});

test("origin timing out, then recovering: retried with the same batch", async () => {
  const { failed } = await throughFault(() => ({ hang: true }), { vars: { ORIGIN_TIMEOUT_MS: "200" } });
  assert.equal(failed[0].error, "origin unreachable: timed out after 200 ms");
});

test("origin that commits a batch and then times out gets the same rows under the same Idempotency-Key", async () => {
  // The origin stores the first request, then never answers it.
  const o = await origin({ answer: (r) => (r.n === 0 ? { hang: true, commit: true } : { status: 200 }) });
  const w = await start({ vars: { ...FAST, ORIGIN_TIMEOUT_MS: "300", ORIGIN_URL: o.url } });
  try {
    const first = await admit(w, [reading(DEV, 1, 10), reading(DEV, 2, 20)]);
    await until(() => o.requests.length >= 1, "the first batch at the origin");
    // Admitted while the first batch is in flight: must not join it.
    const second = await admit(w, [reading(DEV, 3, 30)]);
    const rows = await allDelivered(w);
    const [sent, retry] = o.requests;
    assert.deepEqual(keysOf(sent), first);
    assert.deepEqual([retry.idempotencyKey, retry.raw], [sent.idempotencyKey, sent.raw], "the retry is the same batch, byte for byte");
    assertContract(o.requests, [...first, ...second], rows, first);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a reading re-admitted after its TTL while its batch is pending stays in that batch, which is sent unchanged", async () => {
  let healthy = false;
  const o = await origin({ answer: () => ({ status: healthy ? 200 : 500 }) });
  const w = await start({ vars: { ...FAST, TTL_MS: "1", ORIGIN_URL: o.url } });
  try {
    const keys = await admit(w, [reading(DEV, 1, 10)]);
    await until(() => logged(w, "delivery_failed").length >= 2, "two failed attempts");
    // TTL_MS = 1: the key has expired, so its replay is admitted again (the core's
    // TTL semantics) and renews the row while its batch waits for a retry.
    assert.deepEqual(await admit(w, [reading(DEV, 1, 10)]), keys);
    const [row] = await ledger(w);
    assert.equal(row.delivery, "pending");
    assert.ok(row.attempts >= 2, `the renewed row keeps its attempts (${row.attempts})`);
    healthy = true;
    const rows = await allDelivered(w);
    assert.equal(rows.length, 1);
    assertContract(o.requests, keys, rows, keys);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a device reset while its readings wait in a batch, sent again (one confirming a collection), then the batch refused and split: nothing is skipped", async () => {
  // Its readings renew their rows in place: the batch's rows never move, so its split
  // by rows covers what its body holds, and the rows admitted after it wait for later batches.
  const other = (() => {
    for (let n = 0; ; n++) if (groupOf(`bin-D9-${n}`) === groupOf(DEV)) return `bin-D9-${n}`;
  })();
  let phase = "down";
  const o = await origin({
    answer: (r) => {
      if (phase === "down") return { status: 503 };
      if (phase === "refuse" && r.body.readings.length > 1) return { status: 422 };
      return { status: 200 };
    },
  });
  const w = await start({ vars: { ...FAST, ORIGIN_URL: o.url } });
  try {
    const at = (minutes) => new Date(Date.parse("2026-07-16T09:00:00Z") + minutes * 60_000).toISOString();
    const burst = [90, 5, 4].map((fill_pct, i) => ({ device_id: DEV, seq: i + 1, ts: at(i * 30), fill_pct }));
    const keys = await admit(w, burst);
    await until(() => logged(w, "delivery_failed").length >= 1, "the batch formed and tried");
    const later = await admit(w, [reading(other, 1, 50)]);
    const reset = await w.call(`/v1/devices/${DEV}/reset`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(reset.status, 200);
    const again = await (await post(w.call, "/v1/readings", burst)).json();
    assert.deepEqual([again.unique, again.collections?.length], [3, 1]);
    phase = "refuse";
    await allDelivered(w);
    await allDelivered(w, other);
    assertContract(o.requests, [...keys, ...later], [...(await ledger(w)), ...(await ledger(w, other))]);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("origin answering 429 with Retry-After: the retry waits that long", async () => {
  const o = await origin({ answer: (r) => (r.n === 0 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 }) });
  // Retry-After is honoured up to RETRY_MAX_MS (next test): here a minute.
  const w = await start({ vars: { ...FAST, RETRY_MAX_MS: "60000", ORIGIN_URL: o.url } });
  try {
    const keys = await admit(w, [reading(DEV, 1, 10)]);
    const rows = await allDelivered(w);
    assertContract(o.requests, keys, rows, keys);
    const [refused, retry] = o.requests;
    // Without Retry-After the retry would come after RETRY_BASE_MS (5 ms).
    assert.ok(retry.at - refused.at >= 1000, `retried ${retry.at - refused.at} ms after the 429`);
    assert.equal(logged(w, "delivery_failed")[0].error, "origin answered HTTP 429 (Retry-After: 1)");
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a Retry-After beyond RETRY_MAX_MS is capped at RETRY_MAX_MS", async () => {
  const o = await origin({ answer: (r) => (r.n === 0 ? { status: 503, headers: { "retry-after": "86400" } } : { status: 200 }) });
  const w = await start({ vars: { ...FAST, ORIGIN_URL: o.url } });
  try {
    const keys = await admit(w, [reading(DEV, 1, 10)]);
    assertContract(o.requests, keys, await allDelivered(w), keys);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("connection refused, then an origin listens on that port: delivered with the same batch", async () => {
  const gone = await origin();
  const port = gone.port;
  await gone.close(); // nothing listens there now
  const w = await start({ vars: { ...FAST, ORIGIN_URL: gone.url } });
  let o;
  try {
    const first = await admit(w, [reading(DEV, 1, 10), reading(DEV, 2, 20)]);
    await until(() => logged(w, "delivery_failed").length >= 1, "the first attempt failed");
    const second = await admit(w, [reading(DEV, 3, 30)]);
    await until(() => logged(w, "delivery_failed").length >= 3, "three failed attempts");
    assert.match(logged(w, "delivery_failed")[0].error, /^origin unreachable: /);
    assert.ok((await ledger(w)).every((r) => r.delivery === "pending"));
    // An origin that is down holds every reading back (head of line): in sight in /v1/stats.
    const stats = await until(async () => {
      const s = (await get(w.call, "/v1/stats")).body;
      return s.pending_deliveries === 3 && s.failed_attempts >= 2 && s;
    }, "the backlog in /v1/stats");
    assert.ok(stats.oldest_undelivered_age_ms >= 0, JSON.stringify(stats));
    assert.equal(stats.refused_by_origin, 0);
    o = await origin({ port });
    const rows = await allDelivered(w);
    assertContract(o.requests, [...first, ...second], rows, first);
  } finally {
    await w.mf.dispose();
    await o?.close();
  }
});

test("restart mid-backlog: the pending batch is sent again as it was, then the rows admitted after it", async () => {
  const dir = tempDir();
  let healthy = false;
  const o = await origin({ answer: () => ({ status: healthy ? 200 : 500 }) });
  const vars = { ...FAST, ORIGIN_URL: o.url };
  const before = await start({ persist: dir, vars });
  let first;
  let second;
  try {
    first = await admit(before, [reading(DEV, 1, 10), reading(DEV, 2, 20)]);
    await until(() => logged(before, "delivery_failed").length >= 1, "the first attempt failed");
    second = await admit(before, [reading(DEV, 3, 30)]);
    await until(() => logged(before, "delivery_failed").length >= 3, "three failed attempts");
  } finally {
    await before.mf.dispose();
  }
  healthy = true;
  const after = await start({ persist: dir, vars });
  try {
    // A replay wakes the device object (so would its alarm, or a new reading).
    const replay = await (await post(after.call, "/v1/readings", [reading(DEV, 1, 10)])).json();
    assert.deepEqual(replay.duplicates, [0]);
    const rows = await allDelivered(after);
    assertContract(o.requests, [...first, ...second], rows, first);
  } finally {
    await after.mf.dispose();
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("restart between a burst and its replay: the replay is suppressed and nothing is sent again", async () => {
  const dir = tempDir();
  const o = await origin();
  const vars = { ...FAST, ORIGIN_URL: o.url };
  const burst = [reading(DEV, 1, 10), reading(DEV, 2, 20)];
  const keys = await firstRun(dir, vars, burst, allDelivered);
  const after = await start({ persist: dir, vars });
  try {
    const replay = await (await post(after.call, "/v1/readings", burst)).json();
    assert.deepEqual([replay.unique, replay.duplicates], [0, [0, 1]]);
    // A new reading after the replay: once it is delivered, anything the replay had
    // wrongly queued would have gone out before it (delivery follows admission).
    const fence = await admit(after, [reading(DEV, 3, 30)]);
    const rows = await allDelivered(after);
    assertContract(o.requests, [...keys, ...fence], rows, keys);
    assert.deepEqual(o.accepted().sort(), [...keys, ...fence].sort(), "each reading sent once");
  } finally {
    await after.mf.dispose();
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a failed write of the rows: the burst is refused, nothing of it is sent; the retry is delivered", async () => {
  const dir = tempDir();
  const o = await origin();
  const vars = { ...FAST, ORIGIN_URL: o.url };
  const keys = await firstRun(dir, vars, [reading(DEV, 1, 10)], allDelivered);
  const files = databases(dir, "GroupObject");
  sqlite(files, "CREATE TRIGGER fail_seq_3 BEFORE INSERT ON readings WHEN NEW.seq = 3 BEGIN SELECT RAISE(ABORT, 'injected'); END;");
  const second = await start({ persist: dir, vars });
  try {
    const refused = await post(second.call, "/v1/readings", [reading(DEV, 2, 20), reading(DEV, 3, 30)]);
    assert.equal(refused.status, 503);
    assert.deepEqual((await refused.json()).not_stored, [0, 1]);
    keys.push(...(await admit(second, [reading(DEV, 2, 20)])));
    const rows = await allDelivered(second);
    assert.deepEqual(rows.map((r) => r.seq), [1, 2]);
    assertContract(o.requests, keys, rows);
    assert.ok(!o.requests.some((r) => r.body.readings.some((x) => x.seq === 3)), "a reading never stored is never sent");
  } finally {
    await second.mf.dispose();
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * A SQLite write failure in delivery, over three runs on one directory: the first
 * admits `burst` and waits until `settled`; the second runs with a trigger that
 * aborts `trigger` (e.g. "BEFORE INSERT ON batches") and returns what `during(w)`
 * returns (keys it admitted); the third, without the trigger, admits one more
 * reading, after which every reading is delivered under the contract. `between()`
 * runs before the second. Returns every admitted key.
 */
async function acrossWriteFailure(o, { burst, settled, trigger, during, between = () => {} }) {
  const dir = tempDir();
  const vars = { ...FAST, ORIGIN_URL: o.url };
  try {
    const keys = await firstRun(dir, vars, burst, settled);
    const files = databases(dir, "GroupObject");
    sqlite(files, `CREATE TRIGGER fault ${trigger} BEGIN SELECT RAISE(ABORT, 'injected'); END;`);
    between();
    const second = await start({ persist: dir, vars });
    try {
      keys.push(...(await during(second)));
    } finally {
      await second.mf.dispose();
    }
    sqlite(files, "DROP TRIGGER fault;");
    const third = await start({ persist: dir, vars });
    try {
      keys.push(...(await admit(third, [reading(DEV, 9, 90)])));
      assertContract(o.requests, keys, await allDelivered(third), keys.slice(0, burst.length));
    } finally {
      await third.mf.dispose();
    }
    return keys;
  } finally {
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("a failed write after the origin's 2xx: the rows stay pending, and the same batch is sent again", async () => {
  let healthy = false;
  const o = await origin({ answer: () => ({ status: healthy ? 200 : 500 }) });
  const keys = await acrossWriteFailure(o, {
    burst: [reading(DEV, 1, 10), reading(DEV, 2, 20)],
    settled: failedAttempts(1),
    trigger: "BEFORE UPDATE OF through ON outbox",
    between: () => (healthy = true),
    async during(w) {
      await post(w.call, "/v1/readings", [reading(DEV, 1, 10)]); // wakes the object
      const line = await notRecorded(w);
      assert.equal(line.level, "ERROR");
      assert.match(line.error, /^delivered: injected/);
      assert.ok((await ledger(w)).every((r) => r.delivery === "pending"), "not marked delivered");
      return [];
    },
  });
  assert.ok(o.requests.filter((r) => is2xx(r) && keysOf(r).includes(keys[0])).length >= 2, "the batch went out again");
});

test("a batch that cannot be stored is not sent; once storage works it is formed, sent and delivered", async () => {
  const o = await origin();
  await acrossWriteFailure(o, {
    burst: [reading(DEV, 1, 10)],
    settled: allDelivered,
    trigger: "BEFORE INSERT ON batches",
    async during(w) {
      const keys = await admit(w, [reading(DEV, 2, 20)]);
      const line = await notRecorded(w);
      assert.equal(line.level, "ERROR");
      assert.match(line.error, /^formed: injected/);
      assert.equal(o.requests.length, 1, "only the first batch was ever sent");
      assert.deepEqual((await ledger(w)).map((r) => r.delivery), ["delivered", "pending"]);
      return keys;
    },
  });
});

test("a split that cannot be stored leaves the refused batch as it was; once storage works it is split and the rest delivered", async () => {
  let refuse = false;
  const o = await origin({ answer: (r) => (!refuse ? { status: 500 } : r.body.readings.some((x) => x.seq === 1) ? { status: 422 } : { status: 200 }) });
  const dir = tempDir();
  const vars = { ...FAST, ORIGIN_URL: o.url };
  try {
    const keys = await firstRun(dir, vars, [reading(DEV, 1, 10), reading(DEV, 2, 20)], failedAttempts(1));
    const files = databases(dir, "GroupObject");
    sqlite(files, "CREATE TRIGGER fault BEFORE INSERT ON batches BEGIN SELECT RAISE(ABORT, 'injected'); END;");
    refuse = true;
    const second = await start({ persist: dir, vars });
    try {
      await post(second.call, "/v1/readings", [reading(DEV, 1, 10)]); // wakes the object
      const line = await notRecorded(second);
      assert.match(line.error, /^split: injected/);
      assert.deepEqual((await ledger(second)).map((r) => r.delivery), ["pending", "pending"], "nothing parked, nothing lost");
    } finally {
      await second.mf.dispose();
    }
    sqlite(files, "DROP TRIGGER fault;");
    const third = await start({ persist: dir, vars });
    try {
      const more = await admit(third, [reading(DEV, 9, 90)]);
      const rows = await until(async () => {
        const rows = await ledger(third);
        return rows.length === 3 && rows.every((r) => r.delivery !== "pending") && rows;
      }, "delivered or refused");
      assert.deepEqual(rows.map((r) => [r.seq, r.delivery]), [[1, "refused"], [2, "delivered"], [9, "delivered"]]);
      assertContract(o.requests, [keys[1], ...more], rows);
    } finally {
      await third.mf.dispose();
    }
  } finally {
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a clock that went backwards (rows written ahead of now): the backlog is still retried at once", async () => {
  // workerd's Date.now() cannot be set from outside; a clock stepped back is, for
  // the device object, stored times ahead of its now. Shift them by ten days.
  const dir = tempDir();
  let healthy = false;
  const o = await origin({ answer: () => ({ status: healthy ? 200 : 500 }) });
  const vars = { ...FAST, ORIGIN_URL: o.url };
  const keys = await firstRun(dir, vars, [reading(DEV, 1, 10), reading(DEV, 2, 20)], failedAttempts(2));
  const TEN_DAYS = 10 * 24 * 3600 * 1000;
  sqlite(databases(dir, "GroupObject"), `UPDATE readings SET admitted_at = admitted_at + ${TEN_DAYS}, next_attempt_at = next_attempt_at + ${TEN_DAYS};`);
  healthy = true;
  const second = await start({ persist: dir, vars });
  try {
    // The keys admitted "in the future" still suppress their replay.
    const replay = await (await post(second.call, "/v1/readings", [reading(DEV, 1, 10)])).json();
    assert.deepEqual(replay.duplicates, [0]);
    // No retry is ever due later than RETRY_MAX_MS after now: one that is was
    // scheduled by a clock ahead of this one, and is retried at once.
    const rows = await allDelivered(second);
    assertContract(o.requests, keys, rows, keys);
  } finally {
    await second.mf.dispose();
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
