// What one device has stored that several of its jobs read: which of the group's rows
// are its own (OWN, ownRows), which of them its seen-set holds (NEWEST_LIVE: what
// device.js `seen` rebuilds from, and what operator.js `forget` and `reset` count as
// held), and its configuration (`deviceConfig`: read by decoding, the history request,
// the configuration's own calls). Nothing here writes.
import { isoTime } from "./core.js";

/**
 * A device's rows, found by its keys' prefix on the key's index (parameters: the
 * prefix `<device_id>:`, its end `<device_id>;`, the device id: `ownRows`): a key
 * begins with its device's id and a colon, and a device id that another begins with
 * is told apart by its column. No index of its own: each would be one more row
 * written per reading.
 */
export const OWN = "key > ? AND key < ? AND device_id = ?";

/** The parameters of OWN for `device_id`. */
export const ownRows = (device_id) => [`${device_id}:`, `${device_id};`, device_id];

/**
 * The rows whose keys the seen-set holds, newest first (parameters: OWN's, the TTL's start,
 * MAX_KEYS_PER_DEVICE): admitted within the TTL, not forgotten by an operator
 * (`forget`, `reset`), the newest MAX_KEYS_PER_DEVICE of them. What `seen` rebuilds from.
 */
export const NEWEST_LIVE = `SELECT rowid AS id, key, admitted_at FROM readings WHERE ${OWN} AND admitted_at > ? AND forgotten_at IS NULL ORDER BY admitted_at DESC, rowid DESC LIMIT ?`;

/**
 * The device's configuration as stored: `{device_id, codec, bin_depth_mm,
 * offset_mm, reporting_period_s, application_port, backfill, updated_at}` (`codec`, `reporting_period_s`, `application_port` and `backfill`
 * may be null), or null when it has none. Creates no state.
 */
export function deviceConfig(device) {
  if (!device.prepared) return null;
  const row = device.sql.exec("SELECT device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, application_port, backfill, updated_at FROM config WHERE device_id = ?", device.id).toArray()[0];
  return row ? { ...row, backfill: row.backfill === null ? null : row.backfill === 1, updated_at: isoTime(row.updated_at) } : null;
}
