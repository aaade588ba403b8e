// Raw uplinks to readings. An uplink without a fill level hands on its raw payload
// (the plan's `raw`, src/uplink/raw.rs); the device's configuration chooses the codec
// and the bin's geometry, and the core decodes, times and keys the samples
// (readingsFromPayload). Used by the device object for real uplinks and parked ones,
// and by the stateless tier for The Things Stack's simulated uplinks.
import { CODEC_INFO, guarded, readingsFromPayload } from "./core.js";

export const NOT_CONFIGURED = "device_not_configured";
/** Codes of a payload the configured codec does not read: its readings are rejected with them (field PAYLOAD_FIELD). */
export const UNREADABLE = ["invalid_payload", "unsupported_port"];
/** The field of a raw uplink's readings rejected for their payload: unreadable, or not kept (raw-uplinks.js PARKING_FULL). */
export const PAYLOAD_FIELD = "payload";

/**
 * The configuration that decodes `raw`: each member from the device's stored
 * configuration (PUT /v1/devices/{id}/config) when it has one, else from what the
 * uplink names (the codec: The Things Stack `version_ids`, ChirpStack tag `codec` or
 * device-profile name; the geometry: ChirpStack tags). `missing` names what neither
 * gives.
 */
function effectiveConfig(stored, raw) {
  const hint = raw.config_hint ?? {};
  const config = {
    codec: stored?.codec ?? raw.codec_hint ?? null,
    bin_depth_mm: stored?.bin_depth_mm ?? hint.bin_depth_mm ?? null,
    offset_mm: stored ? stored.offset_mm : (hint.offset_mm ?? 0),
    reporting_period_s: stored?.reporting_period_s ?? hint.reporting_period_s ?? null,
    application_port: stored?.application_port ?? null,
  };
  const missing = ["codec", "bin_depth_mm"].filter((name) => config[name] === null);
  return { config, missing };
}

/**
 * `raw` decoded for its device: `{readings, rejected, codec, counter_ref, schedule_phase_s}` as
 * readingsFromPayload answers (each rejection with the device id), with the
 * `reporting_period_s` and `application_port` it was decoded with (null: none), or `{parked:
 * {code, message}}` when the device has no usable configuration (a Milesight's
 * application port among it: `portToName`), or `{refused: {code, message, codec}}` when
 * the codec cannot read the payload (bytes it does not understand, a port it does not
 * read). `counterRef`, `schedulePhase`: the device's
 * stored application-counter reference and schedule phase, or null. Throws what else the core throws (a trap).
 */
export function decodeRaw(raw, stored, counterRef, schedulePhase = null) {
  const { config, missing } = effectiveConfig(stored, raw);
  if (missing.length) return { parked: notConfigured(raw.device_id, missing.join(" and ")) };
  const frame = { received_at: raw.received_at, f_cnt: raw.f_cnt, counter_ref: counterRef, schedule_phase_s: schedulePhase, frame: raw.frame };
  try {
    const out = guarded(() => readingsFromPayload(raw.device_id, config, raw.f_port, raw.payload, frame));
    out.rejected = out.rejected.map((r) => ({ ...r, device_id: raw.device_id }));
    out.reporting_period_s = config.reporting_period_s;
    out.application_port = config.application_port;
    return out;
  } catch (e) {
    if (e?.code === "missing_reporting_period") return { parked: notConfigured(raw.device_id, `reporting_period_s (${config.codec} times its readings by it)`) };
    if (e?.code === "unsupported_port" && portToName(config, raw.f_port)) return { parked: portNotNamed(raw.device_id, config.codec, raw.f_port) };
    if (UNREADABLE.includes(e?.code)) return { refused: { code: e.code, message: `${config.codec}: ${e.message}`, codec: config.codec } };
    throw e;
  }
}

/**
 * A preview's answer (Simulate uplink) for a raw uplink `decodeRaw` would not turn
 * into readings: parked, or refused with the codec's code; null when it decodes.
 */
export function previewNotDecoded(decoded) {
  if (decoded.parked) return { ok: true, verdicts: [], parked: { ...decoded.parked, copy: false } };
  if (decoded.refused) return { ok: true, verdicts: [], refused_as: decoded.refused };
  return null;
}

/**
 * What a reply says of a decoded payload: `{codec, f_port, readings: [{index, key}],
 * rejected, cross_path}` (`cross_path`: the indices of the readings found to be a
 * live reading's datalog copy, `crossed` their places in `readings`).
 */
export function decodedView(raw, decoded, crossed = []) {
  const readings = decoded.readings.map(({ index, key }) => ({ index, key }));
  const cross_path = crossed.map((i) => readings[i].index);
  return { codec: decoded.codec, f_port: raw.f_port, readings, rejected: decoded.rejected, cross_path };
}

/**
 * Whether an uplink on `f_port` that `config`'s codec does not read is the device's
 * sensor sending on an application port its configuration does not name (the codec's
 * sensor lets the port be set, and `f_port` is one of LoRaWAN's application ports): then
 * it is kept until the configuration names it, as a network server does not send a
 * refused uplink again.
 */
function portToName(config, f_port) {
  return (CODEC_INFO[config.codec]?.applicationPort ?? null) !== null && f_port >= 1 && f_port <= 223;
}

function portNotNamed(device_id, codec, f_port) {
  return {
    code: NOT_CONFIGURED,
    message: `device ${JSON.stringify(device_id)} sends on port ${f_port}, which ${codec} reads only as its configuration's application_port (its sensor sends on ${CODEC_INFO[codec].applicationPort} unless set to another): the uplink is kept undecoded, and decoded when PUT /v1/devices/{device_id}/config gives application_port ${f_port}`,
  };
}

function notConfigured(device_id, what) {
  return {
    code: NOT_CONFIGURED,
    message: `device ${JSON.stringify(device_id)} has no ${what} for its raw payload: the uplink is kept undecoded, and decoded when PUT /v1/devices/{device_id}/config gives it`,
  };
}
