// Delivery of admitted readings to ORIGIN_URL: the pending rows of one group object,
// of any of its devices, POSTed in batches from its alarm, retried with backoff. A
// batch holds many devices' readings, each with its `device_id`, and the collections
// they confirmed (bin-state.js): `{readings: [...], collections: [...]}`.
//
// The outbox is a cursor, not a state per row: `outbox.through` is the highest rowid
// the origin has taken, and a row is delivered when it is `pending` and at or below
// it. Rows are admitted in rowid order, so a batch is the next pending rows after the
// cursor, at most DELIVERY_BATCH, and delivering it moves the cursor to its last row:
// no row is written to deliver it (a reading costs its insert and its delete, and each
// batch a few rows: its own, the cursor, a line in the `deliveries` log that the
// ledger reads `delivered_at` and `attempts` from).
//
// A batch is formed once and stored before its first POST: its rows' range, its body
// and its Idempotency-Key (the SHA-256 hex of that body). Every retry, also after a
// restart, sends that body under that key, byte for byte. A group's batches go out
// one at a time, in order: rows admitted meanwhile wait for the next batch, so rows go
// out in admission order (each device's too) and never join a batch already sent.
// Only a 2xx from ORIGIN_URL itself delivers a batch; a redirect is a failure (never
// followed).
//
// A batch keeps its composition and key only while its fate is unknown (a timeout, a
// connection error, a 5xx, 408, 409, 425, 429: the origin may have stored it) or the
// origin refuses everything alike (3xx, 401, 403, 404, …: its address or credentials).
// A refusal of its content (REFUSED: 400, 413, 422) means the origin stored none of
// it: the batch is split in two new batches (new keys), sent at once, first half
// first; a single reading refused is parked (state 'refused': kept, counted, logged
// `delivery_refused`, never retried by itself), and the readings after it go on.
//
// A batch handed over by a device object of the release before groups (legacy.js) has
// no range: it is sent as it was, under its key, until the origin takes it; its
// readings are pending rows of the group too, and go out again in the group's batches
// (at least once, under the same keys).
import { arrivalOf, collectionOf } from "./bin-state.js";
import { hex, isoTime } from "./core.js";
import { fetchWithin } from "./http.js";

/**
 * How long a reading admitted with no batch open waits for others to join its batch.
 * A group of a fleet of 1 000 000 bins reporting every 10 minutes admits ~6.5
 * readings a second: one alarm and one POST every 2 s for ~13 of them, rather than one
 * each. Each alarm is a billed request, and costs a reading its share of the batch's
 * four rows and two setAlarm (`npm run bench:cost`: 1 s made a new reading's life 4.17
 * rows, 2 s ~3.7). What this adds to a reading's way to the origin.
 */
export const DELIVERY_LINGER_MS = 2000;
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
 * Creates the outbox beside the `readings` table: the cursor, the `batches` (the body
 * sent, verbatim, and the rows it covers: `first_rowid` … `last_rowid`, null for a
 * batch handed over) and the `deliveries` log. Idempotent.
 */
export function prepareOutbox(sql) {
  sql.exec(`
CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY CHECK (id = 0), through INTEGER NOT NULL);
INSERT OR IGNORE INTO outbox (id, through) VALUES (0, 0);
CREATE TABLE IF NOT EXISTS batches (
  seq INTEGER PRIMARY KEY,        -- the order batches go out in
  id TEXT NOT NULL,               -- the Idempotency-Key: SHA-256 hex of body
  body TEXT NOT NULL,             -- the request body, sent verbatim on every attempt
  first_rowid INTEGER,            -- the pending rows it carries are those in this range
  last_rowid INTEGER,
  rows INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_error TEXT
);
-- A delivered batch: its rows' delivery time and attempts, for the ledger; deleted with
-- its rows by retention.
CREATE TABLE IF NOT EXISTS deliveries (first_rowid INTEGER PRIMARY KEY, last_rowid INTEGER NOT NULL, delivered_at INTEGER NOT NULL, attempts INTEGER NOT NULL);
`);
}

/**
 * The rowid of a row inserted now: past every row, and past the cursor, so that it
 * counts as undelivered even when retention deleted every row up to the cursor (a
 * plain rowid would reuse those numbers).
 */
export const NEXT_ROWID = "(SELECT MAX(COALESCE((SELECT MAX(rowid) FROM readings), 0), (SELECT through FROM outbox)) + 1)";

/** The outbox cursor: rows at or below it that are `pending` were delivered. */
export function outboxThrough(sql) {
  return sql.exec("SELECT through FROM outbox").one().through;
}

/**
 * The group's backlog now, counted from its rows (a read of each: done once per object
 * instance, then kept up by `Backlog`): `{pending, delivered, refused, ledger_rows}`.
 */
export function countBacklog(sql) {
  const through = outboxThrough(sql);
  return sql
    .exec(
      `SELECT COUNT(*) AS ledger_rows,
              COALESCE(SUM(state = 'pending' AND rowid > ?1), 0) AS pending,
              COALESCE(SUM(state = 'delivered' OR (state = 'pending' AND rowid <= ?1)), 0) AS delivered,
              COALESCE(SUM(state = 'refused'), 0) AS refused
       FROM readings`,
      through,
    )
    .one();
}

/**
 * Delivers what is due from `storage` (a group object's storage): the open batch if
 * its retry is due, else a new batch of the oldest pending rows; up to ROUNDS batches
 * while the origin accepts them. `backlog` (group.js) hears of every change to the
 * counts. Throws (after logging `delivery_not_recorded`) when storage refuses a write
 * (`record`).
 */
export async function deliver(storage, cfg, backlog) {
  const sql = storage.sql;
  for (let round = 0; round < ROUNDS; round++) {
    let batch = openBatch(sql);
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
      let taken = 0;
      record(storage, batch, "delivered", () => {
        if (batch.last_rowid !== null) {
          taken = pendingIn(sql, batch.first_rowid, batch.last_rowid);
          sql.exec("UPDATE outbox SET through = MAX(through, ?)", batch.last_rowid);
          sql.exec("INSERT OR REPLACE INTO deliveries (first_rowid, last_rowid, delivered_at, attempts) VALUES (?, ?, ?, ?)", batch.first_rowid, batch.last_rowid, t, batch.attempts + 1);
        }
        sql.exec("DELETE FROM batches WHERE seq = ?", batch.seq);
      });
      backlog.delivered(taken);
      continue;
    }
    if (REFUSED.has(outcome.status) && batch.last_rowid === null) {
      // A batch handed over, refused: the origin stored none of it, and its readings go
      // out in the group's own batches (pending rows of the group), where a refusal is
      // split down to the reading. Dropped, so it holds back nothing.
      log("WARN", "delivery_failed", batch, outcome.error);
      record(storage, batch, "dropped", () => sql.exec("DELETE FROM batches WHERE seq = ?", batch.seq));
      continue;
    }
    if (REFUSED.has(outcome.status)) {
      log("WARN", "delivery_failed", batch, outcome.error);
      await refuse(storage, batch, outcome, backlog);
      continue;
    }
    const backoff = Math.min(cfg.RETRY_MAX_MS, cfg.RETRY_BASE_MS * 2 ** Math.min(batch.attempts, 40));
    const wait = Math.max(backoff, Math.min(cfg.RETRY_MAX_MS, outcome.retryAfterMs));
    log("WARN", "delivery_failed", batch, outcome.error);
    record(storage, batch, "failed", () => {
      sql.exec("UPDATE batches SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE seq = ?", t + wait, outcome.error, batch.seq);
    });
    // The backlog figures moved (failed attempts): flushed to the roll-up.
    backlog.changed();
    return;
  }
}

/** How many rows in `first` … `last` are pending (a batch's, still to deliver). */
function pendingIn(sql, first, last) {
  return sql.exec("SELECT COUNT(*) AS n FROM readings WHERE rowid BETWEEN ? AND ? AND state = 'pending'", first, last).one().n;
}

/**
 * After a refusal of `batch`'s content: a single reading is parked (`refused`, kept
 * until an operator re-drives it, its attempts and last error on its row, and the
 * cursor past it); more are split in two new batches (new bodies, new keys: the origin
 * stored nothing under the old one), due at once and ahead of any other batch, the
 * first half first. The halves follow the body sent.
 */
async function refuse(storage, batch, outcome, backlog) {
  const sql = storage.sql;
  // A body formed before collections were delivered has none.
  const { readings, collections = [] } = JSON.parse(batch.body);
  if (readings.length <= 1) {
    let refused = 0;
    record(storage, batch, "refused", () => {
      refused = sql.exec(
        "UPDATE readings SET state = 'refused', attempts = ?, last_error = ?, next_attempt_at = NULL WHERE rowid BETWEEN ? AND ? AND state = 'pending'",
        batch.attempts + 1,
        outcome.error,
        batch.first_rowid,
        batch.last_rowid,
      ).rowsWritten;
      sql.exec("UPDATE outbox SET through = MAX(through, ?)", batch.last_rowid);
      sql.exec("DELETE FROM batches WHERE seq = ?", batch.seq);
    });
    backlog.refused(refused);
    for (const r of readings) {
      console.log(JSON.stringify({ level: "ERROR", event: "delivery_refused", device_id: r.device_id, batch: batch.id, key: r.key, status: outcome.status, error: outcome.error }));
    }
    return;
  }
  const mid = Math.ceil(readings.length / 2);
  // The first row of the second half: where the first half's range ends.
  const split = sql.exec("SELECT rowid FROM readings WHERE key = ?", readings[mid].key).one().rowid;
  const halves = [];
  for (const [part, first, last] of [
    [readings.slice(0, mid), batch.first_rowid, split - 1],
    [readings.slice(mid), split, batch.last_rowid],
  ]) {
    const keys = new Set(part.map((r) => r.key));
    const body = JSON.stringify({ readings: part, collections: collections.filter((c) => keys.has(c.confirmed_by)) });
    halves.push({ body, first, last, rows: part.length, id: await digest(body) });
  }
  record(storage, batch, "split", () => {
    // Ahead of every batch formed so far (batches go out in seq order).
    const first = sql.exec("SELECT MIN(seq) AS at FROM batches").one().at - halves.length;
    halves.forEach((h, i) => {
      sql.exec(
        "INSERT INTO batches (seq, id, body, first_rowid, last_rowid, rows, attempts, next_attempt_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
        first + i, h.id, h.body, h.first, h.last, h.rows, batch.attempts + 1, outcome.error,
      );
    });
    sql.exec("DELETE FROM batches WHERE seq = ?", batch.seq);
  });
  backlog.changed();
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
  if (batch) return due(batch.next_attempt_at, now, cfg) ? Math.min(batch.next_attempt_at ?? now, now) : batch.next_attempt_at;
  const oldest = firstPending(sql);
  if (!oldest) return null;
  const at = oldest.next_attempt_at + DELIVERY_LINGER_MS;
  return due(at, now, cfg) ? Math.min(at, now) : at;
}

/** The first pending row past the cursor (`{rowid, admitted_at, next_attempt_at}`), or undefined. */
export function firstPending(sql) {
  return sql.exec("SELECT rowid, admitted_at, COALESCE(next_attempt_at, admitted_at) AS next_attempt_at FROM readings WHERE rowid > ? AND state = 'pending' ORDER BY rowid LIMIT 1", outboxThrough(sql)).toArray()[0];
}

/** Whether a retry set for `at` is due at `now`; see nextDelivery. */
function due(at, now, cfg) {
  return at === null || at <= now || at > now + cfg.RETRY_MAX_MS;
}

/** The open batch (the first), or undefined. */
export function openBatch(sql) {
  return sql.exec("SELECT seq, id, body, first_rowid, last_rowid, rows, attempts, next_attempt_at, last_error FROM batches ORDER BY seq LIMIT 1").toArray()[0];
}

/**
 * Forms a batch of the oldest pending rows past the cursor, and stores it (body,
 * Idempotency-Key, range) before it is sent. Undefined when none waits.
 */
async function formBatch(storage, cfg) {
  const sql = storage.sql;
  const rows = sql
    .exec(
      `SELECT rowid, key, device_id, seq, ts, fill_pct, admitted_at, verdict, conflicts_with, late_ms, collection FROM readings
       WHERE rowid > ? AND state = 'pending' ORDER BY rowid LIMIT ?`,
      outboxThrough(sql),
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
      ...arrivalOf(r.late_ms),
    })),
    // The collections these readings confirmed (bin-state.js), each with the reading
    // that confirmed it: delivered with it, at least once as it is.
    collections: rows.filter((r) => r.collection !== null).map((r) => ({ device_id: r.device_id, ...collectionOf(r) })),
  });
  const id = await digest(body);
  // While the digest was awaited a row may have been renewed in place (re-admitted
  // after its TTL: same key, same content, same rowid): it stays in the batch, with its
  // new admission time, which the body does not show. Rows admitted meanwhile come after.
  const batch = { seq: null, id, body, first_rowid: rows[0].rowid, last_rowid: rows[rows.length - 1].rowid, rows: rows.length, attempts: 0, next_attempt_at: null };
  record(storage, batch, "formed", () => {
    batch.seq = sql.exec(
      "INSERT INTO batches (id, body, first_rowid, last_rowid, rows) VALUES (?, ?, ?, ?, ?) RETURNING seq",
      id, body, batch.first_rowid, batch.last_rowid, batch.rows,
    ).one().seq;
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

function log(level, event, batch, error) {
  const devices = new Set(JSON.parse(batch.body).readings.map((r) => r.device_id)).size;
  console.log(JSON.stringify({ level, event, devices, batch: batch.id, readings: batch.rows, attempts: batch.attempts + 1, error }));
}
