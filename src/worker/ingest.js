// One device's share of an ingest call (group.js `ingest`, `ingestMany`): the device
// registered with its group before its first write, then its keyed readings admitted
// and stored (admission.js), or first its raw payload decoded, or kept while the device
// has no usable configuration (raw-uplinks.js).
import { logNothingStored } from "./core.js";
import { NOT_RECORDED } from "./fleet.js";
import { admit, notAdmitted } from "./admission.js";
import { admitDecoded, askForMissing, decode, park } from "./raw-uplinks.js";

/**
 * Admits one device's keyed readings (validated and keyed once, in the worker's
 * stateless tier) and stores the admitted ones before answering. `refused`: how
 * many of this device's readings were rejected while routing, `refused_codes` the
 * same by code (`{code: n}`, adding up to `refused`); they count in this burst's
 * audit line. `refused` stays a count and the codes come apart because a deployment
 * runs two versions at once: a device object of an earlier version reads only the
 * count, and a worker of an earlier version sends no codes (counted as
 * `not_recorded`). Returns `{ok: true, verdicts, keys}` (`admit`), or `{ok: false,
 * status, code, message}` when nothing was stored. `attempt` > 0: the worker's
 * retry of a call that threw, which may have stored the burst (`recognise`).
 *
 * `raw`: the uplink's raw payload (the plan's `raw`) when none of its `refused`
 * readings has a fill level. It is decoded here with the device's configuration
 * (decode.js), and its samples take those readings' place; the answer then also
 * has one of `decoded: {codec, f_port, readings: [{index, key}], rejected}` (index:
 * the sample's place in the payload; `verdicts` are the readings'), `parked:
 * {code, message, copy}` (no usable configuration: the uplink is kept, `park`) or
 * `refused_as: {code, message}` (the codec does not read the payload: the
 * `refused` readings are rejected with that code).
 *
 * `downlink`: where a history request for this device would go (backfill.js
 * `downlinkTarget`), or null; after a decoded burst is stored, `askForMissing`.
 */
export async function ingest(device, { device_id, readings: planned, refused = 0, refused_codes = null, raw = null, downlink = null, route, burst_id, attempt = 0 }) {
  const codes = refused_codes ?? (refused ? { [NOT_RECORDED]: refused } : {});
  device.prepare();
  const unregistered = await device.register(device_id);
  if (unregistered) {
    logNothingStored({ device_id, route, burst_id }, planned.length, refused, unregistered.code);
    return unregistered;
  }
  const context = { device_id, route, burst_id };
  // A native burst's seq is the sender's own: it feeds the sequence window.
  const windowSeqs = route === "readings" ? planned.map((r) => r.seq) : null;
  if (!raw) return admit(device, context, planned, codes, { attempt, windowSeqs });
  let decoded;
  try {
    decoded = decode(device, raw);
  } catch (e) {
    // The uplink's readings are not stored (the reply lists them in not_stored).
    return notAdmitted(context, refused, 0, e);
  }
  if (decoded.parked) return park(device, raw, refused, context, decoded.parked, attempt);
  const out = await admitDecoded(device, context, raw, decoded, refused, { attempt });
  if (out.ok) askForMissing(device, downlink, decoded, out, context);
  return out;
}
