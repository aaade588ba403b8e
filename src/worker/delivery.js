// Delivery of admitted readings to ORIGIN_URL: the outbox rows of one group object
// (state 'pending'), of any of its devices, POSTed in batches from its alarm, retried
// with backoff. A batch holds many devices' readings, each with its `device_id`.
//
// A batch is formed once and stored before its first POST: its rows (the oldest
// pending rows in no batch yet, at most DELIVERY_BATCH), its body and its
// Idempotency-Key (the SHA-256 hex of that body). Every retry, also after a
// restart, sends that body under that key, byte for byte. A group's batches go
// out one at a time, in order (rowid): rows admitted meanwhile wait for the next
// batch, so rows go out in admission order (each device's too) and never join a
// batch already sent. Only a 2xx from
// ORIGIN_URL itself delivers a batch; a redirect is a failure (never followed).
//
// A batch keeps its composition and key only while its fate is unknown (a timeout, a
// connection error, a 5xx, 408, 409, 425, 429: the origin may have stored it) or the
// origin refuses everything alike (3xx, 401, 403, 404, …: its address or credentials).
// A refusal of its content (REFUSED: 400, 413, 422) means the origin stored none of
// it: the batch is split in two new batches (new keys), sent at once, first half
// first; a single reading refused is parked (state 'refused': kept, counted, logged
// `delivery_refused`, never retried by itself), and the readings after it go on.
import { isoTime } from "./core.js";
import { noteChange } from "./fleet.js";
import { fetchWithin } from "./http.js";

/**
 * How long a reading admitted with no batch open waits for others to join its batch.
 * A group of a fleet of 1 000 000 bins reporting every 10 minutes admits ~6.5
 * readings a second: one alarm and one POST a second for all of them, rather than one
 * each (each alarm is a billed request). What this adds to a reading's way to the origin.
 */
export const DELIVERY_LINGER_MS = 1000;
/** Alarm rounds (batches sent) per alarm, so one object cannot monopolise its isolate. */
const ROUNDS = 20;
/** At most this much of an origin-supplied header value goes into `last_error`. */
const QUOTE = 200;
/**
 * Statuses by which an origin refuses a batch's content: it stored none of it (RFC
 * 9110: the request is malformed, too large, or unprocessable). Every other answer
 * either leaves the outcome unknown or refuses every batch alike, and is retried.
 */
const REFUSED = new Set([400, 413, 422]);

/**
 * Creates what stable batches need beside the `readings` table (and its `batch_id`
 * column): the `batches` table (the body sent, verbatim) and the index of rows in a
 * batch. Idempotent.
 */
export function prepareOutbox(sql) {
  sql.exec(`
CREATE TABLE IF NOT EXISTS batches (
  id TEXT PRIMARY KEY,            -- the Idempotency-Key: SHA-256 hex of body
  body TEXT NOT NULL              -- the request body, sent verbatim on every attempt
);
CREATE INDEX IF NOT EXISTS readings_by_batch ON readings (batch_id) WHERE batch_id IS NOT NULL;
`);
}

/**
 * Delivers what is due from `storage` (a group object's storage): the open batch
 * if its retry is due, else a new batch of the oldest pending rows; up to ROUNDS
 * batches while the origin accepts them. Throws (after logging
 * `delivery_not_recorded`) when storage refuses a write (`record`).
 */
export async function deliver(storage, cfg) {
  const sql = storage.sql;
  for (let round = 0; round < ROUNDS; round++) {
    let batch = openBatch(sql);
    if (batch && batch.rows === 0) {
      // Nothing of it left to deliver (its rows were deleted by hand): close it.
      sql.exec("DELETE FROM batches WHERE id = ?", batch.id);
      continue;
    }
    if (batch && !due(batch.next_attempt_at, Date.now(), cfg)) return;
    if (!batch) {
      batch = await formBatch(storage, cfg);
      if (!batch) return;
      // The output gate holds the POST until the batch is durable; wait for that
      // here, so that ORIGIN_TIMEOUT_MS measures the origin, not this object's disk.
      await storage.sync();
    }
    const outcome = await post(cfg, batch);
    const t = Date.now();
    if (outcome.error === null) {
      record(storage, batch, "delivered", () => {
        sql.exec(
          "UPDATE readings SET state = 'delivered', delivered_at = ?, attempts = attempts + 1, last_error = NULL, batch_id = NULL WHERE batch_id = ? AND state = 'pending'",
          t,
          batch.id,
        );
        sql.exec("DELETE FROM batches WHERE id = ?", batch.id);
        for (const device_id of batch.devices) noteChange(sql, device_id);
      });
      continue;
    }
    if (REFUSED.has(outcome.status)) {
      log("WARN", "delivery_failed", batch, outcome.error);
      await refuse(storage, batch, outcome, t);
      continue;
    }
    const backoff = Math.min(cfg.RETRY_MAX_MS, cfg.RETRY_BASE_MS * 2 ** Math.min(batch.attempts, 40));
    const wait = Math.max(backoff, Math.min(cfg.RETRY_MAX_MS, outcome.retryAfterMs));
    log("WARN", "delivery_failed", batch, outcome.error);
    record(storage, batch, "failed", () => {
      sql.exec(
        "UPDATE readings SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE batch_id = ? AND state = 'pending'",
        t + wait,
        outcome.error,
        batch.id,
      );
      // The backlog figures moved: flush them to the roll-up.
      for (const device_id of batch.devices) noteChange(sql, device_id);
    });
    return;
  }
}

/**
 * After a refusal of `batch`'s content: a single reading is parked (`refused`, out of
 * any batch, kept until an operator re-drives it); more are split in two new batches
 * (new bodies, new keys: the origin stored nothing under the old one), due at once
 * and ahead of any other batch, the first half first. The halves follow the body
 * sent, so a row renewed meanwhile keeps its place.
 */
async function refuse(storage, batch, outcome, t) {
  const sql = storage.sql;
  const live = new Set(sql.exec("SELECT key FROM readings WHERE batch_id = ? AND state = 'pending'", batch.id).toArray().map((r) => r.key));
  const readings = JSON.parse(batch.body).readings.filter((r) => live.has(r.key));
  const fail = () =>
    sql.exec(
      "UPDATE readings SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE batch_id = ? AND state = 'pending'",
      outcome.error,
      t,
      batch.id,
    );
  if (readings.length <= 1) {
    record(storage, batch, "refused", () => {
      fail();
      sql.exec("UPDATE readings SET state = 'refused', next_attempt_at = NULL, batch_id = NULL WHERE batch_id = ? AND state = 'pending'", batch.id);
      sql.exec("DELETE FROM batches WHERE id = ?", batch.id);
      for (const device_id of batch.devices) noteChange(sql, device_id);
    });
    for (const r of readings) {
      console.log(JSON.stringify({ level: "ERROR", event: "delivery_refused", device_id: r.device_id, batch: batch.id, key: r.key, status: outcome.status, error: outcome.error }));
    }
    return;
  }
  const mid = Math.ceil(readings.length / 2);
  const halves = [];
  for (const part of [readings.slice(0, mid), readings.slice(mid)]) {
    const body = JSON.stringify({ readings: part });
    halves.push({ body, keys: part.map((r) => r.key), id: await digest(body) });
  }
  record(storage, batch, "split", () => {
    fail();
    // Ahead of every batch formed so far (batches go out in rowid order).
    const first = sql.exec("SELECT MIN(rowid) AS at FROM batches").one().at - halves.length;
    halves.forEach((h, i) => {
      for (const key of h.keys) sql.exec("UPDATE readings SET batch_id = ? WHERE key = ? AND batch_id = ? AND state = 'pending'", h.id, key, batch.id);
      sql.exec("INSERT INTO batches (rowid, id, body) VALUES (?, ?, ?)", first + i, h.id, h.body);
    });
    sql.exec("DELETE FROM batches WHERE id = ?", batch.id);
    for (const device_id of batch.devices) noteChange(sql, device_id);
  });
}

/**
 * Runs `write` in a transaction; if it throws, logs `delivery_not_recorded` (ERROR)
 * and rethrows, so the alarm fails and is retried. What was not recorded is safe to
 * redo: a batch not stored was not sent; a 2xx not recorded leaves the batch open,
 * sent again under its key; a failure not recorded is retried as it was.
 */
function record(storage, batch, outcome, write) {
  try {
    storage.transactionSync(write);
  } catch (e) {
    log("ERROR", "delivery_not_recorded", batch, `${outcome}: ${String(e?.message ?? e)}`);
    throw e;
  }
}

/**
 * When the alarm must run next for delivery: the open batch's retry, else
 * DELIVERY_LINGER_MS after the oldest pending row's admission; null when nothing
 * waits. A time more than RETRY_MAX_MS ahead was set by a clock ahead of this one (no
 * wait is longer): it is due now.
 */
export function nextDelivery(sql, now, cfg) {
  const batch = openBatch(sql);
  if (batch) return batch.next_attempt_at === null ? now : due(batch.next_attempt_at, now, cfg) ? Math.min(batch.next_attempt_at, now) : batch.next_attempt_at;
  const oldest = sql.exec("SELECT MIN(next_attempt_at) AS at FROM readings WHERE state = 'pending' AND batch_id IS NULL").one().at;
  if (oldest === null || oldest === undefined) return null;
  const at = oldest + DELIVERY_LINGER_MS;
  return due(at, now, cfg) ? Math.min(at, now) : at;
}

/** Whether a retry set for `at` is due at `now`; see nextDelivery. */
function due(at, now, cfg) {
  return at === null || at <= now || at > now + cfg.RETRY_MAX_MS;
}

/** The open batch (at most one) with its rows' schedule and `devices` (their ids), or undefined. */
function openBatch(sql) {
  const batch = sql
    .exec(
      `SELECT b.id, b.body, COUNT(r.key) AS rows, MIN(r.next_attempt_at) AS next_attempt_at,
              COALESCE(MAX(r.attempts), 0) AS attempts, json_group_array(DISTINCT r.device_id) AS devices
       FROM (SELECT rowid, id, body FROM batches ORDER BY rowid LIMIT 1) AS b
       LEFT JOIN readings AS r ON r.batch_id = b.id AND r.state = 'pending'
       GROUP BY b.id`,
    )
    .toArray()[0];
  if (!batch) return undefined;
  return { ...batch, devices: JSON.parse(batch.devices).filter((d) => d !== null) };
}

/**
 * Forms a batch of the oldest pending rows in no batch, and stores it (body,
 * Idempotency-Key, membership) before it is sent. Undefined when none waits.
 */
async function formBatch(storage, cfg) {
  const sql = storage.sql;
  const rows = sql
    .exec(
      `SELECT key, device_id, seq, ts, fill_pct, admitted_at, verdict, conflicts_with, attempts FROM readings
       WHERE state = 'pending' AND batch_id IS NULL ORDER BY admitted_at, rowid LIMIT ?`,
      cfg.DELIVERY_BATCH,
    )
    .toArray();
  if (!rows.length) return undefined;
  const body = JSON.stringify({
    readings: rows.map((r) => ({
      key: r.key,
      device_id: r.device_id,
      seq: r.seq,
      ts: r.ts,
      fill_pct: r.fill_pct,
      admitted_at: isoTime(r.admitted_at),
      verdict: r.verdict,
      conflicts_with: r.conflicts_with,
    })),
  });
  const id = await digest(body);
  // While the digest was awaited a row may have been renewed (re-admitted after its
  // TTL: same key, same content); it joins with its new admission time, which the
  // body does not show. Nothing else changes a pending row outside this alarm.
  // `attempts`: rows tried before an upgrade to stable batches keep their backoff.
  const attempts = rows.reduce((n, r) => Math.max(n, r.attempts), 0);
  const batch = { id, body, rows: rows.length, attempts, devices: [...new Set(rows.map((r) => r.device_id))] };
  record(storage, batch, "formed", () => {
    for (const r of rows) sql.exec("UPDATE readings SET batch_id = ? WHERE key = ? AND state = 'pending' AND batch_id IS NULL", id, r.key);
    sql.exec("INSERT INTO batches (id, body) VALUES (?, ?)", id, body);
  });
  return batch;
}

/** POSTs one batch; `{error: null}` on a 2xx from ORIGIN_URL, else a short reason. */
async function post(cfg, batch) {
  const now = Date.now();
  try {
    const init = { method: "POST", headers: { "content-type": "application/json", "idempotency-key": batch.id }, body: batch.body, redirect: "manual" };
    return await fetchWithin(cfg.ORIGIN_URL, init, cfg.ORIGIN_TIMEOUT_MS, async (res) => {
      await res.body?.cancel();
      if (res.status >= 200 && res.status < 300) return { error: null, status: res.status };
      return { error: withoutCredentials(refusal(res, cfg)), status: res.status, retryAfterMs: retryAfter(res.headers.get("retry-after"), now) };
    });
  } catch (e) {
    const why = e?.name === "TimeoutError" ? `timed out after ${cfg.ORIGIN_TIMEOUT_MS} ms` : String(e?.message ?? e);
    return { error: withoutCredentials(`origin unreachable: ${why}`), status: null, retryAfterMs: 0 };
  }
}

/**
 * `text` with the user information of every URL in it removed (`//user:pass@host` →
 * `//host`): ORIGIN_URL may carry credentials, and a Location is resolved against it.
 * Every error text about the origin passes here before it is logged or stored.
 */
function withoutCredentials(text) {
  return text.replace(/\/\/[^/?#\s@]*@/g, "//");
}

/** `last_error` for an answer other than 2xx. */
function refusal(res, cfg) {
  const head = `origin answered HTTP ${res.status}`;
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.get("location");
    if (location === null) return `${head} (a redirect without a Location); set ORIGIN_URL to the final URL`;
    let target;
    try {
      target = new URL(location, cfg.ORIGIN_URL).href;
    } catch {
      target = location;
    }
    return `${head} (redirect to ${withoutCredentials(target).slice(0, QUOTE)}); set ORIGIN_URL to the final URL`;
  }
  const wait = res.headers.get("retry-after");
  return wait === null ? head : `${head} (Retry-After: ${wait.slice(0, QUOTE)})`;
}

/**
 * Milliseconds a Retry-After value asks to wait (RFC 9110: delay-seconds or an
 * HTTP-date); 0 when absent or unreadable. Honoured on any failed answer (429 and
 * 503 are where origins send it), capped by the caller at RETRY_MAX_MS.
 */
function retryAfter(value, now) {
  if (value === null) return 0;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}

async function digest(text) {
  return hex(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

function hex(buffer) {
  return [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function log(level, event, batch, error) {
  console.log(JSON.stringify({ level, event, devices: batch.devices.length, batch: batch.id, readings: batch.rows, attempts: batch.attempts + 1, error }));
}
