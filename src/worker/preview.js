// One device's answer to The Things Stack's simulated uplink (group.js `preview`): what
// `ingest` (ingest.js) would answer, its raw payload decoded and its readings re-keyed
// by the frame rules (frames.js) as there, each asked of the seen-set with `contains`.
// Nothing is stored or counted.
import { config } from "./config.js";
import { DUPLICATE, guarded } from "./core.js";
import { decodedView, previewNotDecoded } from "./decode.js";
import { notes } from "./admission.js";
import { crossPath, reframe } from "./frames.js";
import { decode } from "./raw-uplinks.js";

/**
 * What `ingest` would answer for The Things Stack's simulated uplink, storing and
 * counting nothing: a verdict per reading, DUPLICATE for a key the seen-set holds
 * (admitted within the TTL and not evicted by the cap; asked with `contains`,
 * which changes nothing) or earlier in the same uplink, else 0 (admitted). With
 * `raw`, the payload is decoded first, as `ingest` would (`decoded`, `parked` or
 * `refused_as` as there). `{ok: false, code, message}` when the device could not answer (its seen-set
 * could not be rebuilt from its rows: a real uplink would not be admitted either).
 */
export function preview(device, { device_id, readings, raw = null }) {
  const cfg = config(device.env);
  const now = Date.now();
  const seen = new Set();
  try {
    let decoded = null;
    if (raw) {
      decoded = decode(device, raw);
      const undecoded = previewNotDecoded(decoded);
      if (undecoded) return undecoded;
      readings = decoded.readings;
    }
    const held = device.prepared ? guarded(() => device.seen(now, cfg)) : null;
    const keyed = reframe(device, device_id, readings, now, cfg);
    const { readings: checked, crossed } = raw ? crossPath(device, device_id, keyed, now, cfg) : { readings: keyed, crossed: new Set() };
    const verdicts = checked.map(({ key, seq, ts, fill_pct }) => {
      const duplicate = seen.has(key) || (held !== null && guarded(() => held.contains({ device_id, seq, ts, fill_pct }, now)));
      seen.add(key);
      return duplicate ? DUPLICATE : 0;
    });
    const crossedDuplicates = [...crossed].filter((i) => verdicts[i] === DUPLICATE);
    return { ok: true, verdicts, notes: notes(device, checked, verdicts), decoded: decoded && decodedView(raw, decoded, crossedDuplicates) };
  } catch (e) {
    device.drop();
    return { ok: false, code: e?.code ?? "internal_error", message: String(e?.message ?? e) };
  }
}
