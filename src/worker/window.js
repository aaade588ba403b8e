// One device's sequence window: the seqs of its admitted and duplicate readings fed to
// the core's SeqWindow in the burst's transaction (`observeSeqs`; which decoded
// readings feed it: `decodedWindowSeqs`), its gaps read back (`gaps`, for GET
// /v1/devices/{id}/gaps), and the window deleted by a reset or a new reporting period
// (`restartWindow`, `windowRestarted`). Its bytes are held in the group's figures
// (figures.js) and written down by the group's checkpoint, at once when a restart's
// replay would not restore a change (`checkpointNow`).
import { ADMITTED, CODEC_INFO, DUPLICATE, guarded, isoTime, SeqWindow } from "./core.js";
import { backfillView } from "./backfill.js";

/**
 * Feeds the device's sequence window with the seqs of one burst's admitted and
 * duplicate readings (`seqs[i]` null: reading i does not feed it; rejected readings
 * are not in the burst), at `now`, and stores it. Call it inside the burst's
 * transaction. Returns `{recovered: [{seq, delay_ms}], resets: [{from, to}]}`.
 */
export function observeSeqs(device, seqs, verdicts, now, context) {
  const health = { recovered: [], resets: [] };
  const fed = seqs.map((seq, i) => (seq !== null && (ADMITTED.has(verdicts[i]) || verdicts[i] === DUPLICATE) ? seq : null)).filter((seq) => seq !== null);
  if (!fed.length) return health;
  withWindow(device, context, (window) => {
    for (const seq of fed) {
      const seen = guarded(() => window.observe(seq, now));
      if (seen.kind === "recovered") health.recovered.push({ seq, delay_ms: seen.delay_ms });
      if (seen.kind === "reset") health.resets.push({ from: seen.from, to: seen.to });
    }
    // Kept with the burst's counts, once it committed (figures.js countBurst).
    health.window = { bytes: guarded(() => window.toBytes()), missing: guarded(() => window.totals()).missing };
  });
  return health;
}

/** `use(window)` on the device's stored sequence window (`seqWindow`), freed after. */
export function withWindow(device, context, use) {
  const window = seqWindow(device, context);
  try {
    return use(window);
  } finally {
    window.free();
  }
}

/**
 * The device's stored sequence window (a new one when none is stored). Bytes the core
 * cannot read (`invalid_snapshot`) are logged (WARN seq_window_unreadable) and a new
 * window starts: the burst is not refused for them. The caller frees it.
 */
function seqWindow(device, context = {}) {
  const bytes = device.prepared ? device.group.figures.window(device.id) : null;
  if (bytes === null) return new SeqWindow();
  try {
    return guarded(() => SeqWindow.fromBytes(bytes));
  } catch (e) {
    if (e?.code !== "invalid_snapshot") throw e;
    console.log(JSON.stringify({ level: "WARN", event: "seq_window_unreadable", device_id: context.device_id, error: String(e?.message ?? e) }));
    return new SeqWindow();
  }
}

/**
 * The device's sequence health (GET /v1/devices/{id}/gaps): `{highest, gaps: [{from,
 * to, first_noticed_at}], totals}` (`highest` null before the first seq). Reads only.
 */
export function gaps(device) {
  return withWindow(device, {}, (window) => ({
    highest: window.highest ?? null,
    gaps: window.gaps().map((g) => ({ from: g.from, to: g.to, first_noticed_at: isoTime(g.first_noticed_ms) })),
    totals: window.totals(),
    backfill: device.prepared ? backfillView(device.sql, device.id, isoTime) : { open: null, recent: [] },
  }));
}

/**
 * What deleting the device's sequence window deletes, read inside the caller's
 * transaction: a reset of its memory, or a change of `reporting_period_s`, which
 * changes the unit of a clock-fed window's slots, so the old slots and the new are not
 * one sequence (a period halved would list every slot since 1970 as missing). Returns
 * `{highest, missing, gaps}` (`gaps`: how many were open), or null when there is no
 * window. The window is deleted by `windowRestarted`, once that transaction committed.
 */
export function restartWindow(device) {
  if (device.group.figures.window(device.id) === null) return null;
  return withWindow(device, {}, (window) => ({ highest: window.highest ?? null, missing: window.totals().missing, gaps: window.gaps().length }));
}

/**
 * Writes the group's checkpoint now (figures.js), for a change a restart's replay of
 * the readings since the last one would not restore. A failure is logged: the next
 * alarm writes it.
 */
export function checkpointNow(device, context) {
  device.checkpointWanted = false;
  try {
    device.group.figures.checkpoint(device.ctx.storage);
  } catch (e) {
    console.log(JSON.stringify({ level: "WARN", event: "checkpoint_failed", ...context, error: String(e?.message ?? e) }));
  }
}

/**
 * Deletes the device's window from the group's figures (the roll-up's missing_seqs
 * gauge moves with it) and counts its history request `cancelled` (`backfillCancelled`),
 * after the transaction of the reset or configuration that did so committed: one that
 * failed changes nothing. Then writes the checkpoint at once: a restart replays the
 * readings stored since the last one into the window it loads, which would bring the
 * deleted window back (figures.js). An operator's call, rare: one row.
 */
export function windowRestarted(device, backfillCancelled, context) {
  const figures = device.group.figures;
  figures.forgetWindow(device.id);
  if (backfillCancelled) figures.count(device.id, { backfill_cancelled: 1 });
  checkpointNow(device, context);
}

/**
 * Which decoded readings feed the device's sequence window, and with what: per reading,
 * its window seq or null. A seq that is a real counter feeds it: a sensor's own counter
 * of uplinks (the core's `codecInfo[codec].seqIsCounter`: the DF703's application
 * counter, its `seq`, unwrapped by the core), and a reading dated by the
 * device's clock (a history or datalog record: the reading without a `frame`, its
 * `seq` the device time in seconds) as its slot `floor(seq / reporting_period_s)`,
 * only when the device has a reporting period (else one slot per second would list
 * every unsent second as missing). A seq that is the LoRaWAN frame counter (it
 * restarts on every rejoin) or a receive-time slot (Tekelek) does not.
 */
export function decodedWindowSeqs(decoded, period) {
  return decoded.readings.map((r) => {
    if (CODEC_INFO[decoded.codec]?.seqIsCounter) return r.seq;
    if (r.frame === null && period) return Math.floor(r.seq / period);
    return null;
  });
}

/** Logs a burst's late arrivals (INFO gap_recovered, the longest delay) and resets (WARN seq_reset, one each). */
export function logHealth({ recovered, resets }, { device_id, route, burst_id }) {
  if (recovered.length) {
    const seqs = recovered.map((r) => r.seq);
    const delay_ms = Math.max(...recovered.map((r) => r.delay_ms));
    console.log(JSON.stringify({ level: "INFO", event: "gap_recovered", device_id, route, burst_id, recovered: seqs.length, from: Math.min(...seqs), to: Math.max(...seqs), delay_ms }));
  }
  for (const { from, to } of resets) console.log(JSON.stringify({ level: "WARN", event: "seq_reset", device_id, route, burst_id, from, to }));
}
