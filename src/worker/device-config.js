// One device's configuration (PUT and GET /v1/devices/{id}/config): stored in place of
// the one it had, with an event in its history (operator.js `record`); a new reporting
// period restarts its sequence window (window.js), and the uplinks parked while it had
// no usable configuration are decoded (raw-uplinks.js `unpark`). The stored
// configuration is read by stored.js `deviceConfig`, for this file and for decoding.
import { config } from "./config.js";
import { cancelBackfill } from "./backfill.js";
import { scheduleAfterCommit } from "./admission.js";
import { record } from "./operator.js";
import { unpark } from "./raw-uplinks.js";
import { deviceConfig } from "./stored.js";
import { restartWindow, windowRestarted } from "./window.js";

/**
 * Stores the device's configuration (validated by the worker) in place of the one
 * it had, registering the device first like a first write; a change is logged
 * (INFO `device_config`, `before` and `after`). The same values again change
 * nothing, `updated_at` included. Then decodes the uplinks parked while the device
 * had no usable configuration (`unpark`; a call with the same values continues
 * where the last one stopped). Returns `{ok: true, config, unparked, changed}`
 * (`config` as `deviceConfig`, `unparked` as `unpark`, `changed`: whether this call
 * changed the stored configuration), or `{ok: false, status, code, message}` when
 * nothing was stored.
 */
export async function configure(device, { device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, application_port = null, backfill = null }) {
  device.prepare();
  const unregistered = await device.register(device_id);
  if (unregistered) {
    console.log(JSON.stringify({ level: "WARN", event: "device_config_not_stored", device_id, error: unregistered.code }));
    return unregistered;
  }
  const wanted = { device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, application_port, backfill };
  const before = deviceConfig(device);
  const changed = !before || Object.keys(wanted).some((k) => before[k] !== wanted[k]);
  if (changed) {
    const now = Date.now();
    let after;
    let restarted = null;
    try {
      // The change and its history event in one transaction.
      device.ctx.storage.transactionSync(() => {
        device.sql.exec(
          "INSERT OR REPLACE INTO config (device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, application_port, backfill, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
          device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, application_port, backfill === null ? null : Number(backfill), now,
        );
        after = deviceConfig(device);
        record(device, "device_config", { before, after }, now);
        const periodChanged = before && before.reporting_period_s !== reporting_period_s;
        const window = periodChanged ? restartWindow(device) : null;
        // A phase is a share of the period it was seen with.
        if (periodChanged) device.sql.exec("DELETE FROM schedule_phase WHERE device_id = ?", device.id);
        // Its open history request asked for slots of the old unit.
        restarted = window && { ...window, backfill_cancelled: cancelBackfill(device.sql, device.id, now) };
      });
    } catch (e) {
      console.log(JSON.stringify({ level: "WARN", event: "device_config_not_stored", device_id, error: String(e?.message ?? e) }));
      return { ok: false, status: 503, code: "storage_unavailable", message: `could not store the configuration: ${e?.message ?? e}` };
    }
    console.log(JSON.stringify({ level: "INFO", event: "device_config", device_id, before, after }));
    if (restarted) windowRestarted(device, restarted.backfill_cancelled, { device_id, reason: "reporting_period_changed" });
    if (restarted) {
      console.log(JSON.stringify({ level: "WARN", event: "seq_window_restarted", device_id, reason: "reporting_period_changed", from_period_s: before.reporting_period_s, to_period_s: reporting_period_s, ...restarted }));
      // Its missing seqs left the figures: flushed like a burst's change.
      await scheduleAfterCommit(device, config(device.env), { device_id, burst_id: null });
    }
  }
  const unparked = await unpark(device);
  if (unparked.uplinks) console.log(JSON.stringify({ level: "INFO", event: "parked_uplinks_decoded", device_id, ...unparked }));
  return { ok: true, config: deviceConfig(device), unparked, changed };
}

/** The stored configuration (GET /v1/devices/{id}/config), or null. Reads only. */
export function configuration(device) {
  return deviceConfig(device);
}
