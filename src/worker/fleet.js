// The fleet object: which device objects exist, and readings no device got.
import { DurableObject } from "cloudflare:workers";

/** Adds to a named counter in a `counters (name, value)` table. */
export const COUNT = `INSERT INTO counters (name, value) VALUES (?, ?)
ON CONFLICT (name) DO UPDATE SET value = value + excluded.value`;

/** The device registry: which device objects exist, and readings no device got. */
export class FleetObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS devices (device_id TEXT PRIMARY KEY, first_seen INTEGER NOT NULL);
                   CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);`);
  }
  register(device_id) {
    this.sql.exec("INSERT OR IGNORE INTO devices (device_id, first_seen) VALUES (?, ?)", device_id, Date.now());
  }
  unroutable(n) {
    this.sql.exec(COUNT, "unroutable_rejected", n);
  }
  summary() {
    const devices = this.sql.exec("SELECT device_id FROM devices ORDER BY device_id").toArray().map((r) => r.device_id);
    const row = this.sql.exec("SELECT value FROM counters WHERE name = 'unroutable_rejected'").toArray()[0];
    return { devices, unroutable_rejected: row ? row.value : 0 };
  }
}
