// Delivery of admitted readings to ORIGIN_URL: the outbox rows of one device
// object (state 'pending'), POSTed in batches from its alarm, retried with backoff.
import { isoTime } from "./core.js";
import { noteChange } from "./fleet.js";

/**
 * Delivers what is due from `storage` (a device object's storage). Bounded per
 * alarm so one object cannot monopolise its isolate; the alarm re-arms
 * immediately while more is due.
 */
export async function deliver(storage, cfg) {
  const sql = storage.sql;
  for (let round = 0; round < 20; round++) {
    const rows = sql
      .exec(
        `SELECT key, device_id, seq, ts, fill_pct, admitted_at, attempts FROM readings
         WHERE state = 'pending' AND next_attempt_at <= ? ORDER BY admitted_at, key LIMIT ?`,
        Date.now(),
        cfg.DELIVERY_BATCH,
      )
      .toArray();
    if (!rows.length) return;
    const error = await post(cfg, rows);
    const t = Date.now();
    storage.transactionSync(() => {
      for (const r of rows) {
        // `admitted_at` guards against a row renewed while the batch was in flight.
        if (error === null) {
          sql.exec(
            "UPDATE readings SET state = 'delivered', delivered_at = ?, attempts = attempts + 1, last_error = NULL WHERE key = ? AND admitted_at = ?",
            t,
            r.key,
            r.admitted_at,
          );
        } else {
          const delay = Math.min(cfg.RETRY_MAX_MS, cfg.RETRY_BASE_MS * 2 ** Math.min(r.attempts, 40));
          sql.exec(
            "UPDATE readings SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE key = ? AND admitted_at = ?",
            t + delay,
            error,
            r.key,
            r.admitted_at,
          );
        }
      }
      // Delivered or failed, the backlog figures moved: flush them to the roll-up.
      noteChange(sql);
    });
    if (error !== null) {
      console.log(JSON.stringify({ level: "WARN", event: "delivery_failed", device_id: rows[0].device_id, readings: rows.length, error }));
      return;
    }
  }
}

/** POSTs one batch; returns null on a 2xx, else a short reason. */
async function post(cfg, rows) {
  const keys = rows.map((r) => r.key);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(keys.join("\n")));
  const idempotencyKey = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const body = JSON.stringify({
    device_id: rows[0].device_id,
    readings: rows.map((r) => ({
      key: r.key,
      device_id: r.device_id,
      seq: r.seq,
      ts: r.ts,
      fill_pct: r.fill_pct,
      admitted_at: isoTime(r.admitted_at),
    })),
  });
  try {
    const res = await fetch(cfg.ORIGIN_URL, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
      body,
      signal: AbortSignal.timeout(cfg.ORIGIN_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return res.ok ? null : `origin answered HTTP ${res.status}`;
  } catch (e) {
    return `origin unreachable: ${e?.name === "TimeoutError" ? "timed out" : String(e?.message ?? e)}`;
  }
}
