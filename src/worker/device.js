// One Durable Object per device (`idFromName(device_id)`). Its SQLite table
// `readings` is the source of truth: the embedded ledger, the outbox of deliveries
// to ORIGIN_URL and the record from which the in-memory seen-set is rebuilt.
import { DurableObject } from "cloudflare:workers";
import { config } from "./config.js";
import { Deduplicator, guarded, HttpError, wasmGeneration } from "./core.js";
import { deliver } from "./delivery.js";
import { countBurst, DEVICE_SCHEMA, flush, flushDue, noteChange } from "./fleet.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS readings (
  key TEXT PRIMARY KEY,
  device_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  ts TEXT NOT NULL,
  fill_pct REAL NOT NULL,
  admitted_at INTEGER NOT NULL,
  burst_id TEXT,
  state TEXT NOT NULL,            -- stored (ledger only) | pending (to deliver) | delivered
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  delivered_at INTEGER,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS readings_by_admission ON readings (admitted_at);
CREATE INDEX IF NOT EXISTS readings_due ON readings (state, next_attempt_at);
${DEVICE_SCHEMA}`;

// A key that expired from the seen-set and arrives again is admitted again (the
// core's TTL semantics), so its row is renewed rather than duplicated.
const UPSERT = `
INSERT INTO readings (key, device_id, seq, ts, fill_pct, admitted_at, burst_id, state, next_attempt_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
  admitted_at = excluded.admitted_at, burst_id = excluded.burst_id, state = excluded.state,
  attempts = 0, next_attempt_at = excluded.next_attempt_at, delivered_at = NULL, last_error = NULL`;

export class DeviceObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
    this.dedup = null;
    this.generation = -1;
  }

  /**
   * The seen-set, a cache in front of the `readings` table. On a cold start (or
   * after the Wasm instance was re-created) it is rebuilt by re-admitting the rows
   * whose key is still live, grouped by their original admission time, so TTL and
   * cap behave as if the object had never left memory. Why not persist
   * `snapshot()` bytes instead: to stay exact they would have to be rewritten
   * (about 29 bytes per key) with every burst, inside the same transaction; the
   * rows are written anyway, and a rebuild costs one SHA-256 per live row, once.
   */
  seen(now, cfg) {
    if (this.dedup && this.generation === wasmGeneration()) return this.dedup;
    this.dedup = null;
    const generation = wasmGeneration();
    const dedup = new Deduplicator({ ttlMs: cfg.TTL_MS, maxKeys: cfg.MAX_KEYS_PER_DEVICE });
    const rows = this.sql
      .exec(
        "SELECT device_id, seq, ts, fill_pct, admitted_at FROM readings WHERE admitted_at > ? ORDER BY admitted_at, rowid",
        now - cfg.TTL_MS,
      )
      .toArray();
    for (let i = 0; i < rows.length; ) {
      const at = rows[i].admitted_at;
      const batch = [];
      for (; i < rows.length && rows[i].admitted_at === at; i++) {
        const { device_id, seq, ts, fill_pct } = rows[i];
        batch.push({ device_id, seq, ts, fill_pct });
      }
      dedup.processBurstJson(JSON.stringify(batch), at);
    }
    this.dedup = dedup;
    this.generation = generation;
    return dedup;
  }

  /**
   * Dedupes one device's readings and stores the admitted ones before answering.
   * `refused` are this device's readings the worker rejected while routing; they
   * count in this burst's audit line. Returns `{ok, unique: [{index, key}],
   * duplicates, pending, rejected}` or `{ok: false, status, code, message}`.
   */
  async ingest({ device_id, readings, refused = 0, route, burst_id }) {
    const cfg = config(this.env);
    const now = Date.now();
    let out;
    try {
      out = guarded(() => JSON.parse(this.seen(now, cfg).processBurstJson(JSON.stringify(readings), now, true)));
    } catch (e) {
      this.dedup = null;
      return failure(e);
    }
    const state = cfg.ORIGIN_URL ? "pending" : "stored";
    const counts = {
      received: out.audit.payload.received + refused,
      unique: out.unique.length,
      duplicates: out.duplicates_suppressed,
      rejected: out.rejected.length + refused,
      pending: out.pending.length,
      seq_reuses: out.seq_reuses,
    };
    try {
      // Provisional admission: the keys are pending in the seen-set until the rows
      // are stored. A failed write releases them, so nothing is half-admitted and
      // the sender's retry is admitted.
      this.ctx.storage.transactionSync(() => {
        for (const u of out.unique) {
          this.sql.exec(UPSERT, u.key, u.device_id, u.seq, u.ts, u.fill_pct, now, burst_id, state, state === "pending" ? now : null);
        }
        countBurst(this.sql, device_id, counts);
      });
    } catch (e) {
      try {
        guarded(() => this.dedup.release(out.ticket));
      } catch {
        this.dedup = null; // rebuilt from the rows, which do not hold this burst
      }
      // The unique readings were not stored: they are pending (the sender retries).
      const pending = [...out.pending, ...out.unique.map((u) => u.index)].sort((a, b) => a - b);
      const payload = { ...out.audit.payload, received: counts.received, rejected: counts.rejected, unique: 0, pending: pending.length };
      console.log(JSON.stringify({ ...out.audit, level: "ERROR", event: "burst_not_stored", payload, device_id, route, burst_id }));
      return {
        ok: false,
        status: 503,
        code: "storage_unavailable",
        message: `could not store the burst: ${e.message}`,
        unique: [],
        duplicates: out.duplicates,
        pending,
        rejected: out.rejected,
      };
    }
    guarded(() => this.dedup.confirm(out.ticket));
    const payload = { ...out.audit.payload, received: counts.received, rejected: counts.rejected };
    console.log(JSON.stringify({ ...out.audit, payload, device_id, route, burst_id }));
    // Deliver right away; also re-arms an alarm lost with a restart while a backlog waits.
    await this.schedule(cfg, out.unique.length && state === "pending" ? now : null);
    return {
      ok: true,
      unique: out.unique.map((u) => ({ index: u.index, key: u.key })),
      duplicates: out.duplicates,
      pending: out.pending,
      rejected: out.rejected,
    };
  }

  /** Ledger rows in admission order, `after` a rowid cursor. */
  list({ after = 0, limit = 100 }) {
    const rows = this.sql
      .exec(
        `SELECT rowid, key, seq, ts, fill_pct, admitted_at, state, attempts, delivered_at
         FROM readings WHERE rowid > ? ORDER BY rowid LIMIT ?`,
        after,
        limit,
      )
      .toArray();
    return {
      readings: rows.map((r) => ({
        key: r.key,
        seq: r.seq,
        ts: r.ts,
        fill_pct: r.fill_pct,
        admitted_at: new Date(r.admitted_at).toISOString(),
        delivery: r.state,
        attempts: r.attempts,
        delivered_at: r.delivered_at === null ? null : new Date(r.delivered_at).toISOString(),
      })),
      next: rows.length === limit ? rows[rows.length - 1].rowid : null,
    };
  }

  /**
   * Deletes rows past retention, flushes changed figures to the fleet roll-up
   * (before delivering, which may wait on a slow origin; what delivery changes goes
   * with the next flush), delivers what is due, and re-arms itself.
   */
  async alarm() {
    const cfg = config(this.env);
    this.ctx.storage.transactionSync(() => {
      const cut = this.sql.exec("DELETE FROM readings WHERE state != 'pending' AND admitted_at <= ?", Date.now() - cfg.RETENTION_MS);
      if (cut.rowsWritten) noteChange(this.sql);
    });
    await flush(this.ctx.storage, this.env, cfg);
    if (cfg.ORIGIN_URL) await deliver(this.ctx.storage, cfg);
    await this.schedule(cfg, null);
  }

  /**
   * Arms the alarm for the earliest of: `dueNow`, the next due delivery, the next
   * retention expiry, the next flush of changed figures to the fleet roll-up.
   */
  async schedule(cfg, dueNow) {
    const r = this.sql
      .exec(
        `SELECT MIN(CASE WHEN state = 'pending' THEN next_attempt_at END) AS due,
                MIN(CASE WHEN state != 'pending' THEN admitted_at END) AS oldest_done
         FROM readings`,
      )
      .one();
    const candidates = [
      dueNow,
      cfg.ORIGIN_URL ? r.due : null,
      r.oldest_done === null ? null : r.oldest_done + cfg.RETENTION_MS,
      flushDue(this.sql, Date.now()),
    ].filter((t) => t !== null && t !== undefined);
    if (!candidates.length) return;
    const next = Math.min(...candidates);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(next);
  }
}

function failure(e) {
  if (e instanceof HttpError) return { ok: false, status: e.status, code: e.code, message: e.message };
  return { ok: false, status: 500, code: e?.code ?? "internal_error", message: String(e?.message ?? e) };
}

