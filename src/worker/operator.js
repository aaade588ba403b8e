// One device's operator controls: its ledger rows listed (GET
// /v1/devices/{id}/readings), the readings the origin refused put back in the outbox
// (POST .../redrive), one key forgotten (POST .../forget), its memory reset for a
// re-commissioned sensor (POST .../reset), and its history (GET .../history), to which
// a forget, a reset or a changed configuration adds an event in the transaction that
// makes the change (`record`).
import { arrivalOf, collectionOf } from "./bin-state.js";
import { config } from "./config.js";
import { isoTime } from "./core.js";
import { cancelBackfill } from "./backfill.js";
import { NEXT_ROWID, openBatch, outboxThrough } from "./delivery.js";
import { scheduleAfterCommit } from "./admission.js";
import { counterRef } from "./raw-uplinks.js";
import { NEWEST_LIVE, OWN, ownRows } from "./stored.js";
import { PAGE_ROWS } from "./routes.js";
import { checkpointNow, restartWindow, windowRestarted } from "./window.js";

/** Operator events one device's history keeps (`record`): the oldest go first. */
export const HISTORY_EVENTS = 1_000;

/** Ledger rows in admission order, `after` a rowid cursor. */
export function list(device, { after = 0, limit = PAGE_ROWS.default }) {
  if (!device.prepared) return { readings: [], next: null };
  const rows = device.sql
    .exec(
      `SELECT rowid, key, seq, ts, fill_pct, admitted_at, verdict, conflicts_with, state, attempts, delivered_at, forgotten_at, late_ms, collection
       FROM readings WHERE ${OWN} AND rowid > ? ORDER BY rowid LIMIT ?`,
      ...ownRows(device.id),
      after,
      limit,
    )
    .toArray();
  const through = outboxThrough(device.sql);
  const open = openBatch(device.sql);
  // A pending row at or below the cursor was delivered: when and after how many
  // attempts, its batch's line in `deliveries` says (delivery.js).
  const delivery = (r) => {
    if (r.state !== "pending") return { delivery: r.state, attempts: r.attempts, delivered_at: r.delivered_at };
    if (r.rowid > through) {
      const inOpen = open && open.first_rowid !== null && r.rowid >= open.first_rowid && r.rowid <= open.last_rowid;
      return { delivery: "pending", attempts: inOpen ? open.attempts : 0, delivered_at: null };
    }
    const line = device.sql.exec("SELECT delivered_at, attempts FROM deliveries WHERE first_rowid <= ? ORDER BY first_rowid DESC LIMIT 1", r.rowid).toArray()[0];
    return { delivery: "delivered", attempts: line?.attempts ?? 1, delivered_at: line?.delivered_at ?? null };
  };
  return {
    readings: rows.map((r) => {
      const d = delivery(r);
      return {
        key: r.key,
        seq: r.seq,
        ts: r.ts,
        fill_pct: r.fill_pct,
        admitted_at: isoTime(r.admitted_at),
        verdict: r.verdict,
        conflicts_with: r.conflicts_with,
        ...arrivalOf(r.late_ms),
        collection: r.collection === null ? null : collectionOf(r),
        delivery: d.delivery,
        attempts: d.attempts,
        delivered_at: d.delivered_at === null ? null : isoTime(d.delivered_at),
        forgotten_at: r.forgotten_at === null ? null : isoTime(r.forgotten_at),
      };
    }),
    next: rows.length === limit ? rows[rows.length - 1].rowid : null,
  };
}

/**
 * Re-drives readings the origin refused (parked, state `refused`): every one, or
 * those of `keys`, back to `pending`, out of any batch, due at once; they go out in
 * new batches, oldest first. Keeps their attempts and last error. Returns how many
 * moved. Creates no state for a device that never ingested.
 */
export async function redrive(device, { keys } = {}) {
  if (!device.prepared) return { redriven: 0 };
  const cfg = config(device.env);
  const now = Date.now();
  let redriven = 0;
  device.ctx.storage.transactionSync(() => {
    // Each row written again after every other (a new rowid: the outbox cursor is past
    // its old one), oldest first, with its attempts and last error.
    const chosen = keys === undefined ? "" : " AND key = ?";
    const rows = [];
    for (const key of keys === undefined ? [undefined] : keys) {
      rows.push(...device.sql.exec(`SELECT rowid, * FROM readings WHERE ${OWN} AND state = 'refused'${chosen}`, ...ownRows(device.id), ...(key === undefined ? [] : [String(key)])).toArray());
    }
    const unique = [...new Map(rows.map((r) => [r.rowid, r])).values()].sort((a, b) => a.rowid - b.rowid);
    rows.length = 0;
    rows.push(...unique);
    for (const r of rows) {
      device.sql.exec("DELETE FROM readings WHERE rowid = ?", r.rowid);
      device.sql.exec(
        `INSERT INTO readings (rowid, key, device_id, seq, ts, fill_pct, admitted_at, burst_id, state, attempts, next_attempt_at, delivered_at, last_error, frame, verdict, conflicts_with, forgotten_at, window_seq, late_ms, collection)
         VALUES (${NEXT_ROWID}, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?)`,
        // Its window seq and its marks too: a restart before the next checkpoint replays
        // it (figures.js), and the origin is told again what it was (bin-state.js).
        r.key, r.device_id, r.seq, r.ts, r.fill_pct, r.admitted_at, r.burst_id, r.attempts, now, r.last_error, r.frame, r.verdict, r.conflicts_with, r.forgotten_at, r.window_seq, r.late_ms, r.collection,
      );
    }
    redriven = rows.length;
  });
  device.group.backlog.refused(-redriven);
  if (redriven && cfg.ORIGIN_URL) await device.schedule(cfg);
  return { redriven };
}

/**
 * Forgets one key (POST /v1/devices/{id}/forget): its row is marked forgotten and
 * the seen-set dropped, so the rebuild (`seen`) leaves the key out and the same
 * reading sent again is admitted again (its row replaced, as after its TTL; a row in
 * an open batch stays in it). The row itself stays: the ledger and any pending
 * delivery are unchanged. `held`: whether the seen-set held the key (admitted within
 * the TTL, not forgotten, among the newest MAX_KEYS_PER_DEVICE). A key forgotten
 * already keeps its first `forgotten_at`. Recorded in the history in the same
 * transaction, logged WARN `key_forgotten`. Returns `{ok: true, key, held,
 * forgotten_at}`, or `{ok: false, status, code, message}` (404 `unknown_key`: no
 * ledger row has the key; 503 `storage_unavailable`), nothing changed.
 */
export function forget(device, { device_id, key }) {
  const cfg = config(device.env);
  const now = Date.now();
  const row = device.prepared ? device.sql.exec("SELECT rowid, seq, admitted_at, forgotten_at FROM readings WHERE key = ? AND device_id = ?", key, device.id).toArray()[0] : undefined;
  if (!row) {
    return { ok: false, status: 404, code: "unknown_key", message: `device ${JSON.stringify(device_id)} has no ledger row with the key ${JSON.stringify(key)} (never admitted, or deleted by retention)` };
  }
  let detail;
  try {
    device.ctx.storage.transactionSync(() => {
      const held = row.forgotten_at === null && device.sql.exec(`SELECT 1 FROM (${NEWEST_LIVE}) WHERE id = ?`, ...ownRows(device.id), now - cfg.TTL_MS, cfg.MAX_KEYS_PER_DEVICE, row.rowid).toArray().length > 0;
      const at = row.forgotten_at ?? now;
      device.sql.exec("UPDATE readings SET forgotten_at = ? WHERE rowid = ?", at, row.rowid);
      detail = { key, seq: row.seq, admitted_at: isoTime(row.admitted_at), held, forgotten_at: isoTime(at) };
      record(device, "key_forgotten", detail, now);
    });
  } catch (e) {
    return operatorNotStored("key_forgotten", device_id, e);
  }
  device.drop();
  console.log(JSON.stringify({ level: "WARN", event: "key_forgotten", device_id, ...detail }));
  return { ok: true, ...detail };
}

/**
 * Resets the device's memory (POST /v1/devices/{id}/reset), for a re-commissioned
 * sensor: every key is forgotten (as `forget`), and its sequence window and codec
 * counter reference are deleted, so its next readings start a new window and a new
 * counter, and its bin state (GET .../state), so its next reading is its newest. Kept: the ledger rows and the outbox (pending deliveries go on), the
 * configuration, parked uplinks, counters, history. Recorded in the history in the
 * same transaction, logged WARN `device_reset`. Returns `{ok: true, forgotten,
 * held, seq_window, counter_ref, backfill_cancelled, bin_state, reset_at}`: ledger rows
 * newly forgotten, how many of their keys the seen-set held, the window deleted
 * (`{highest, missing, gaps}`, or null when there was none), the counter reference
 * deleted (or null), whether a history request was closed and a bin state deleted; or `{ok:
 * false, status: 503, code: "storage_unavailable"}`, nothing changed.
 */
export async function reset(device, { device_id }) {
  const cfg = config(device.env);
  const now = Date.now();
  device.prepare(); // a known device has its storage already: this only brings older storage up to date
  let detail;
  try {
    device.ctx.storage.transactionSync(() => {
      const held = device.sql.exec(`SELECT COUNT(*) AS n FROM (${NEWEST_LIVE})`, ...ownRows(device.id), now - cfg.TTL_MS, cfg.MAX_KEYS_PER_DEVICE).one().n;
      const forgotten = device.sql.exec(`UPDATE readings SET forgotten_at = ? WHERE ${OWN} AND forgotten_at IS NULL`, now, ...ownRows(device.id)).rowsWritten;
      const seq_window = restartWindow(device);
      const counter_ref = counterRef(device);
      device.sql.exec("DELETE FROM codec_state WHERE device_id = ?", device.id);
      device.sql.exec("DELETE FROM schedule_phase WHERE device_id = ?", device.id);
      // A history request for the forgotten window's gaps is closed (backfill.js).
      const backfill_cancelled = cancelBackfill(device.sql, device.id, now);
      // Its bin state too (deleted once committed): a sensor re-commissioned with its
      // clock set back would have every reading late behind the old one (bin-state.js).
      const bin_state = device.group.figures.fill(device.id) !== null;
      detail = { forgotten, held, seq_window, counter_ref, backfill_cancelled, bin_state, reset_at: isoTime(now) };
      record(device, "device_reset", detail, now);
    });
  } catch (e) {
    return operatorNotStored("device_reset", device_id, e);
  }
  device.drop();
  if (detail.bin_state) device.group.figures.forgetFill(device.id);
  if (detail.seq_window) windowRestarted(device, detail.backfill_cancelled, { device_id, reason: "device_reset" });
  else {
    if (detail.backfill_cancelled) device.group.figures.count(device.id, { backfill_cancelled: 1 });
    // The checkpoint is what a restart starts from: without it, its replay of the rows
    // stored since the last one would bring the deleted state back (figures.js).
    if (detail.bin_state) checkpointNow(device, { device_id, reason: "device_reset" });
  }
  console.log(JSON.stringify({ level: "WARN", event: "device_reset", device_id, ...detail }));
  if (detail.seq_window || detail.backfill_cancelled) await scheduleAfterCommit(device, cfg, { device_id, burst_id: null });
  return { ok: true, ...detail };
}

/**
 * Adds an operator event to the device's history (`at`, ms) and keeps the last
 * HISTORY_EVENTS. Call it inside the transaction that makes the change.
 */
export function record(device, event, detail, at) {
  device.sql.exec("INSERT INTO operator_events (device_id, at, event, detail) VALUES (?, ?, ?, ?)", device.id, at, event, JSON.stringify(detail));
  // The device's events from its HISTORY_EVENTS-th newest back (none, mostly).
  device.sql.exec(
    "DELETE FROM operator_events WHERE device_id = ?1 AND id <= (SELECT id FROM operator_events WHERE device_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
    device.id,
    HISTORY_EVENTS,
  );
}

/** The device's history (GET /v1/devices/{id}/history), oldest first, `after` an id cursor. Reads only. */
export function history(device, { after = 0, limit = PAGE_ROWS.default }) {
  if (!device.prepared) return { events: [], next: null };
  const rows = device.sql.exec("SELECT id, at, event, detail FROM operator_events WHERE device_id = ? AND id > ? ORDER BY id LIMIT ?", device.id, after, limit).toArray();
  return {
    events: rows.map((r) => ({ at: isoTime(r.at), event: r.event, detail: JSON.parse(r.detail) })),
    next: rows.length === limit ? rows[rows.length - 1].id : null,
  };
}

/** The answer to an operator call whose transaction failed (nothing changed), logged WARN `<event>_not_stored`. */
function operatorNotStored(event, device_id, e) {
  console.log(JSON.stringify({ level: "WARN", event: `${event}_not_stored`, device_id, error: String(e?.message ?? e) }));
  return { ok: false, status: 503, code: "storage_unavailable", message: `could not store the change: ${e?.message ?? e}; nothing changed, retry` };
}
