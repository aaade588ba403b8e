// The per-device objects of the release before groups (one DeviceObject per device):
// their storage is handed over to the device's group, once, on first contact, and the
// object then only forwards. Nothing written by that release is stranded:
//
// * The group asks for the storage (`handOver`) when it registers a device its shard
//   knew already (group.js `register`), before it admits anything of it, and imports it
//   in one transaction (`importDevice`): the ledger with its outbox and open batch (sent
//   again under its Idempotency-Key), configuration, parked uplinks, codec counter
//   reference, sequence window, history, counters and the figures' incarnation and
//   version (the roll-up keeps applying them in order).
// * An object whose alarm was armed (a backlog to deliver, rows to retire) hands over
//   from that alarm: a device that never reports again is delivered too.
// * A call of the earlier worker (a deployment runs two versions for a while) is
//   forwarded to the group, after the hand-over.
// The object's own rows are kept as they were (a backup), its alarm deleted.
import { DurableObject } from "cloudflare:workers";
import { NEXT_ROWID } from "./delivery.js";
import { group } from "./group.js";
import { parkedColumns, parkStatement } from "./raw-uplinks.js";

/** The tables a device object of the release before groups may hold, as it named them. */
const TABLES = ["readings", "batches", "counted_bursts", "config", "parked", "codec_state", "seq_window", "operator_events", "counters", "stats_flush", "registered", "backfill"];

export class DeviceObject extends DurableObject {
  /** The device this storage is of (null: none was ever written). */
  deviceId() {
    const has = (t) => this.ctx.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", t).toArray().length > 0;
    const sql = this.ctx.storage.sql;
    for (const [table, column] of [["registered", "device_id"], ["stats_flush", "device_id"], ["config", "device_id"], ["readings", "device_id"]]) {
      if (!has(table)) continue;
      const row = sql.exec(`SELECT ${column} AS id FROM ${table} WHERE ${column} IS NOT NULL LIMIT 1`).toArray()[0];
      if (row) return row.id;
    }
    return null;
  }

  /**
   * Every table of this storage, `{table: rows}` (only those present), with `device_id`.
   * Null for storage holding nothing, or handed over already (`handedOver`: a group
   * whose own storage was lost since starts the device anew, rather than from this
   * old copy). Changes nothing: until the group has committed the import, this
   * object's alarm stays, and hands the device over again if that failed.
   */
  handOver() {
    const device_id = this.deviceId();
    if (device_id === null || this.isHandedOver()) return null;
    const sql = this.ctx.storage.sql;
    const present = new Set(sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray().map((r) => r.name));
    const tables = {};
    for (const t of TABLES) if (present.has(t)) tables[t] = sql.exec(`SELECT * FROM ${t}`).toArray();
    return { device_id, tables };
  }

  /** Marks the storage handed over (the group committed its import) and deletes its alarm. */
  async handedOver() {
    this.ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS handed_over (id INTEGER PRIMARY KEY CHECK (id = 0), at INTEGER NOT NULL)");
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO handed_over (id, at) VALUES (0, ?)", Date.now());
    await this.ctx.storage.deleteAlarm();
  }

  isHandedOver() {
    const sql = this.ctx.storage.sql;
    return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'handed_over'").toArray().length > 0;
  }

  /** An alarm armed by the release before groups: the group takes the device over, and delivers what waited. */
  async alarm() {
    const device_id = this.deviceId();
    if (device_id !== null && !this.isHandedOver()) await group(this.env, device_id).adopt(device_id);
  }

  /**
   * Calls of the earlier worker, after the hand-over, answered by the group. Its reads
   * name no device: the object's own name does (`idFromName(device_id)`), also for a
   * device first seen by this release, of which the object holds nothing.
   */
  async forward(method, args) {
    const device_id = args?.device_id ?? this.ctx.id.name ?? this.deviceId();
    if (device_id === null) throw new Error("a device object of an earlier release without storage cannot answer");
    return group(this.env, device_id)[method]({ ...args, device_id });
  }

  ingest(args) {
    return this.forward("ingest", { ...args, raw: rawOfEarlier(args?.raw) });
  }

  preview(args) {
    return this.forward("preview", { ...args, raw: rawOfEarlier(args?.raw) });
  }

  configure(args) {
    return this.forward("configure", args);
  }

  configuration() {
    return this.forward("configuration", {});
  }

  list(page) {
    return this.forward("list", page);
  }

  gaps() {
    return this.forward("gaps", {});
  }

  redrive(args) {
    return this.forward("redrive", args);
  }

  forget(args) {
    return this.forward("forget", args);
  }

  reset(args) {
    return this.forward("reset", args);
  }

  history(page) {
    return this.forward("history", page);
  }
}

const READING_COLUMNS = ["key", "seq", "ts", "fill_pct", "admitted_at", "burst_id", "state", "attempts", "next_attempt_at", "delivered_at", "last_error", "batch_id", "frame", "verdict", "conflicts_with", "forgotten_at"];
const DEFAULTS = { attempts: 0, verdict: "admitted" };

/**
 * Writes what `handOver` gave (`tables`) into the group's tables as `device_id`'s,
 * inside the caller's transaction, but its counters: returned, with the device's
 * figures' identity to go on with, as `{incarnation, version, acknowledged,
 * counters}` (for the `devices` row, fleet.js `addDevice`): that of the object's own flushes, so
 * the roll-up applies the group's flushes after them; the version one ahead, so that
 * the group flushes the figures as it now holds them. Storage of 0.1.0, which never
 * flushed, starts a new incarnation.
 */
export function importDevice(sql, device_id, tables) {
  const rows = (t) => tables[t] ?? [];
  const value = (r, c) => (r[c] === undefined ? (DEFAULTS[c] ?? null) : r[c]);
  for (const r of rows("readings")) {
    sql.exec(
      `INSERT OR IGNORE INTO readings (rowid, device_id, ${READING_COLUMNS.join(", ")}) VALUES (${NEXT_ROWID}, ?${", ?".repeat(READING_COLUMNS.length)})`,
      device_id,
      ...READING_COLUMNS.map((c) => (c === "batch_id" ? null : value(r, c))),
    );
  }
  // A batch open when the object handed over: sent again as it was, under its key,
  // ahead of the group's own (delivery.js); its rows are pending rows of the group.
  for (const b of rows("batches")) {
    const attempts = Math.max(0, ...rows("readings").filter((r) => r.batch_id === b.id).map((r) => r.attempts ?? 0));
    const seq = (sql.exec("SELECT MIN(seq) AS at FROM batches").one().at ?? 1) - 1;
    sql.exec("INSERT INTO batches (seq, id, body, rows, attempts) VALUES (?, ?, ?, ?, ?)", seq, b.id, b.body, JSON.parse(b.body).readings.length, attempts);
  }
  for (const c of rows("config")) {
    sql.exec(
      "INSERT OR REPLACE INTO config (device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, backfill, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      device_id, c.codec, c.bin_depth_mm, c.offset_mm, value(c, "reporting_period_s"), value(c, "backfill"), c.updated_at,
    );
  }
  for (const p of rows("parked")) {
    const raw = rawOfEarlier(JSON.parse(p.raw));
    sql.exec(parkStatement("INSERT OR IGNORE"), ...parkedColumns(raw), p.rows, p.route, p.burst_id, p.parked_at);
  }
  for (const c of rows("codec_state")) sql.exec("INSERT OR REPLACE INTO codec_state (device_id, counter_ref) VALUES (?, ?)", device_id, c.counter_ref);
  for (const e of [...rows("operator_events")].sort((a, b) => a.id - b.id)) {
    sql.exec("INSERT INTO operator_events (device_id, at, event, detail) VALUES (?, ?, ?, ?)", device_id, e.at, e.event, e.detail);
  }
  for (const b of [...rows("backfill")].sort((a, b) => a.id - b.id)) {
    const { id, ...columns } = b;
    const names = Object.keys(columns).filter((c) => c !== "device_id");
    sql.exec(`INSERT INTO backfill (device_id, ${names.join(", ")}) VALUES (?${", ?".repeat(names.length)})`, device_id, ...names.map((c) => columns[c]));
  }
  // 0.1.0 named a counter `duplicates` and kept `pending` and `registered`.
  const renamed = { duplicates: "duplicates_suppressed" };
  const counters = {};
  for (const c of rows("counters")) {
    if (c.name === "pending" || c.name === "registered") continue;
    const name = renamed[c.name] ?? c.name;
    counters[name] = (counters[name] ?? 0) + c.value;
  }
  const w = rows("seq_window")[0];
  const window = w ? { bytes: w.bytes, missing: w.missing } : null;
  const flushed = rows("stats_flush")[0];
  if (!flushed) return { incarnation: crypto.randomUUID(), version: 1, acknowledged: 0, counters, window };
  return { incarnation: flushed.incarnation, version: flushed.version + 1, acknowledged: flushed.acknowledged, counters, window };
}

/**
 * A raw uplink as the release before groups wrote it (its plan's `raw`, also the JSON
 * of its `parked` rows) as this release's plan has it: the payload as bytes, not
 * lower-case hex text. None (null, absent): null.
 */
function rawOfEarlier(raw) {
  if (!raw) return null;
  const bytes = new Uint8Array(raw.payload.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(raw.payload.slice(2 * i, 2 * i + 2), 16);
  return { ...raw, payload: bytes };
}
