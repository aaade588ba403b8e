// One device's raw uplinks: an uplink without a fill level hands on its raw payload,
// decoded with the device's configuration, codec counter and schedule phase (`decode`,
// decode.js), and its samples are admitted as a burst (`admitDecoded`, admission.js).
// Without a usable configuration the uplink is kept (`park`) until a configuration is
// PUT, which decodes it (`unpark`). After a stored decoded burst, the device's history
// request moves on (`askForMissing`, backfill.js).
import { config } from "./config.js";
import { auditLine, guarded, hex, limits, logNothingStored } from "./core.js";
import { backfillStep } from "./backfill.js";
import { decodeRaw, decodedView, UNREADABLE } from "./decode.js";
import { byCode } from "./fleet.js";
import { admit, countedAlready, countedWithoutRows, scheduleAfterCommit, STORE_WRITES } from "./admission.js";
import { deviceConfig } from "./stored.js";
import { decodedWindowSeqs, withWindow } from "./window.js";

/**
 * Raw uplinks one device keeps while it has no usable configuration: a sensor
 * reporting every 10 minutes fills it in about 69 days. Each takes ~0.23 KB on disk
 * for a 16-byte payload, ~0.47 KB for the largest (docs/benchmarks.md, `npm run bench:raw`).
 */
export const MAX_PARKED_PER_DEVICE = 10_000;
/** The code of a raw uplink a device keeping MAX_PARKED_PER_DEVICE already cannot keep: its readings are rejected with it. */
export const PARKING_FULL = "parking_full";
/**
 * Every code a reading can be rejected with: the core's (a reading's fields), those of
 * a payload its codec cannot read (decode.js), and PARKING_FULL. A rejection's `code`
 * in a reply; /v1/stats `rejected_by_code` counts by them (and `not_recorded`), and
 * /v1/metrics shows each as a `code` label from the first scrape.
 */
export const REJECTION_CODES = [...limits().rejection.codes, ...UNREADABLE, PARKING_FULL];
/** What a device needs before its raw uplinks can be decoded, as the PUT body names it. */
const CONFIG_CALL = "PUT /v1/devices/{device_id}/config";
/** Parked uplinks one configuration call decodes; a PUT of the same configuration continues. */
export const UNPARK_PER_CALL = 1_000;

/**
 * After a stored decoded burst: the device's history request moves on (backfill.js
 * `backfillStep`): closed when answered or expired, sent again when due, or a new one
 * for a gap open too long. Its send goes on after the reply. Never throws: the burst
 * is stored; a failure here is logged (ERROR backfill_step_failed).
 */
export function askForMissing(device, target, decoded, { recovered, at }, context) {
  try {
    const cfg = config(device.env);
    let gaps;
    const health = { at, recovered, gaps: () => (gaps ??= withWindow(device, context, (window) => guarded(() => window.gaps()))) };
    // The device's own switch matters only when a request could be sent at all.
    const enabled = cfg.BACKFILL && target ? (deviceConfig(device)?.backfill ?? null) : null;
    const sensor = { codec: decoded.codec, period: decoded.reporting_period_s, port: decoded.application_port, enabled };
    const sending = backfillStep(device.ctx.storage, cfg, Date.now(), { device: sensor, health, target, context });
    // Its outcome, recorded after the reply, is counted: flushed like a burst's change.
    if (sending) device.ctx.waitUntil?.(sending.then(() => scheduleAfterCommit(device, cfg, context)));
  } catch (e) {
    console.log(JSON.stringify({ level: "ERROR", event: "backfill_step_failed", ...context, error: String(e?.message ?? e) }));
  }
}

/**
 * Admits what `decodeRaw` made of `raw` (`refused`: the readings the uplink was
 * counted as before decoding): its readings and rejected samples, or, for a payload
 * the codec cannot read, those `refused` readings rejected with its code. `unpark`:
 * the parked row this burst takes out of the `parked` table, in its transaction.
 */
export async function admitDecoded(device, context, raw, decoded, refused, { attempt = 0, unpark = null } = {}) {
  if (decoded.refused) {
    // Logged with the bytes: a person can still recover the reading (another codec).
    const { code, message, codec } = decoded.refused;
    console.log(JSON.stringify({ level: "WARN", event: "payload_not_decoded", ...context, codec, f_port: raw.f_port, payload: hex(raw.payload), code, message }));
    const out = await admit(device, context, [], refused ? { [code]: refused } : {}, { attempt, unpark });
    return { ...out, refused_as: { code, message } };
  }
  // Also when nothing was stored: the reply lists the samples in not_stored, as the audit line counts them.
  const windowSeqs = decodedWindowSeqs(decoded, decoded.reporting_period_s);
  const out = await admit(device, context, decoded.readings, byCode(decoded.rejected), { attempt, unpark, counterRef: decoded.counter_ref, schedulePhase: decoded.schedule_phase_s, crossPath: true, windowSeqs });
  return { ...out, decoded: decodedView(raw, decoded, out.crossed) };
}

/** `raw` decoded with the device's configuration, counter reference and schedule phase (decode.js `decodeRaw`). Reads only. */
export function decode(device, raw) {
  return decodeRaw(raw, deviceConfig(device), device.prepared ? counterRef(device) : null, device.prepared ? schedulePhase(device) : null);
}

/** The device's stored schedule phase in seconds (Tekelek), or null. */
function schedulePhase(device) {
  return device.sql.exec("SELECT phase_s FROM schedule_phase WHERE device_id = ?", device.id).toArray()[0]?.phase_s ?? null;
}

/** The codec's stored application-counter reference (DF703), or null. */
export function counterRef(device) {
  return device.sql.exec("SELECT counter_ref FROM codec_state WHERE device_id = ?", device.id).toArray()[0]?.counter_ref ?? null;
}

/**
 * Keeps a raw uplink the device cannot decode yet (`why`: device_not_configured)
 * until its configuration is PUT (`unpark`). Its `rows` readings count as received
 * and parked. A copy of a frame already kept is not kept twice: its readings count
 * as duplicates (`copy`). A retried call (`attempt` > 0) of a burst counted already
 * (it kept the frame, was a copy, or was refused) counts nothing: also after a PUT
 * decoded the frame (`countedWithoutRows`). A device keeping MAX_PARKED_PER_DEVICE
 * uplinks rejects the next ones (`parking_full`), logging their bytes. A failed
 * write is retried at once, STORE_WRITES writes in all, as a burst's is; then
 * `{ok: false, status: 503, code: "storage_unavailable"}`, nothing kept or counted.
 */
export async function park(device, raw, rows, context, why, attempt = 0) {
  const { device_id, burst_id, route } = context;
  const now = Date.now();
  let counts;
  let answer;
  for (let write = 1; ; write++) {
    // Each outcome below sets its one count; the core's AuditCounts gives the others as 0.
    counts = { received: rows };
    try {
      device.ctx.storage.transactionSync(() => {
        const kept = device.sql.exec("SELECT burst_id FROM parked WHERE device_id = ? AND frame = ?", device_id, raw.frame).toArray()[0];
        if (kept?.burst_id === burst_id || (attempt > 0 && countedAlready(device, burst_id))) {
          answer = kept?.burst_id === burst_id ? { ...why, copy: false } : { ...why, copy: true, message: `${why.message}; this burst was counted already` };
          counts.received = 0;
          return;
        }
        if (kept) {
          answer = { ...why, copy: true, message: `${why.message}; this is a copy of a frame kept already` };
          counts.duplicates_suppressed = rows;
        } else if (device.sql.exec("SELECT COUNT(*) AS n FROM parked WHERE device_id = ?", device_id).one().n >= MAX_PARKED_PER_DEVICE) {
          answer = { code: PARKING_FULL, message: `device ${JSON.stringify(device_id)} keeps ${MAX_PARKED_PER_DEVICE} undecoded uplinks already: this one is rejected (its bytes are in the worker log); ${CONFIG_CALL} to decode them` };
          counts.rejected = rows;
        } else {
          device.sql.exec(PARK, ...parkedColumns(raw), rows, route, burst_id, now);
          answer = { ...why, copy: false };
          counts.parked = rows;
        }
      });
      if (counts.parked) device.group.parkedChanged();
      device.group.figures.countBurst(device_id, counts, { [answer.code]: rows });
      if (counts.received) countedWithoutRows(device, burst_id);
      break;
    } catch (e) {
      if (write < STORE_WRITES) {
        console.log(JSON.stringify({ level: "WARN", event: "storage_retry", device_id, burst_id, write, error: String(e?.message ?? e) }));
        continue;
      }
      logNothingStored(context, rows, 0, "storage_unavailable");
      return { ok: false, status: 503, code: "storage_unavailable", message: `could not keep the uplink (${write} attempts): ${e?.message ?? e}` };
    }
  }
  if (answer.code === PARKING_FULL) {
    console.log(JSON.stringify({ level: "WARN", event: "payload_not_parked", ...context, f_port: raw.f_port, payload: hex(raw.payload), received_at: raw.received_at, code: answer.code }));
    return { ok: true, verdicts: [], refused_as: answer };
  }
  if (counts.received) {
    console.log(JSON.stringify({ level: "WARN", event: "uplink_parked", ...context, f_port: raw.f_port, bytes: raw.payload.length, copy: answer.copy, code: answer.code, message: answer.message }));
    console.log(guarded(() => auditLine("burst_deduplicated", counts, now, context)));
  }
  await scheduleAfterCommit(device, config(device.env), context);
  return { ok: true, verdicts: [], parked: answer };
}

/** The `parked` columns that hold a raw uplink, in its members' order (`parkedColumns`, `parkedRaw`). */
const RAW_COLUMNS = ["device_id", "frame", "f_port", "payload", "received_at", "f_cnt", "codec_hint", "config_hint"];
/**
 * Keeps a raw uplink: RAW_COLUMNS, then rows, route, burst_id, parked_at. `verb`:
 * `INSERT` (`park`), or `INSERT OR IGNORE` for the hand-over of a device's parked rows
 * (legacy.js `importDevice`).
 */
export const parkStatement = (verb) => `${verb} INTO parked (${RAW_COLUMNS.join(", ")}, rows, route, burst_id, parked_at) VALUES (?${", ?".repeat(RAW_COLUMNS.length + 3)})`;
const PARK = parkStatement("INSERT");

/** The plan's raw uplink as RAW_COLUMNS' values: its bytes as a BLOB, its hints' object as JSON. */
export function parkedColumns(raw) {
  return RAW_COLUMNS.map((c) => (c === "config_hint" ? JSON.stringify(raw.config_hint) : raw[c]));
}

/** A parked row's raw uplink, as the plan gave it (`parkedColumns` backwards: SQLite gives a BLOB as an ArrayBuffer). */
function parkedRaw(row) {
  return { ...Object.fromEntries(RAW_COLUMNS.map((c) => [c, row[c]])), payload: new Uint8Array(row.payload), config_hint: JSON.parse(row.config_hint) };
}

/**
 * Decodes and admits the parked uplinks the device's configuration now allows
 * (one its codec does not read stays parked, counted in one WARN
 * parked_not_decoded a call, and holds back none after it), oldest first, at most
 * UNPARK_PER_CALL decoded per call: each as a burst of its own under the
 * burst id its parking reply gave (a later duplicate names the burst the sender
 * saw; a retried call of that burst recognises the rows; its second audit line
 * counts the samples as received), its row deleted in that burst's transaction.
 * Returns what it did: `{uplinks, received, unique, duplicates_suppressed,
 * rejected, still_parked}`.
 */
export async function unpark(device) {
  const done = { uplinks: 0, received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, still_parked: 0 };
  if (!device.prepared) return done;
  // Page after page, oldest first: the uplinks the codec does not read stay parked at
  // the head of that order, and must not hold back the ones behind them. At most
  // MAX_PARKED_PER_DEVICE rows are read, once each.
  const page = `SELECT rowid AS id, parked_at, ${RAW_COLUMNS.join(", ")}, rows, route, burst_id FROM parked WHERE device_id = ? AND (parked_at, rowid) > (?, ?) ORDER BY parked_at, rowid LIMIT ?`;
  const unread = { uplinks: 0, codes: {}, codec: null };
  let after = [-Infinity, 0];
  for (;;) {
    const rows = device.sql.exec(page, device.id, ...after, UNPARK_PER_CALL).toArray();
    for (const row of rows) {
      if (done.uplinks === UNPARK_PER_CALL) break;
      after = [row.parked_at, row.id];
      const raw = parkedRaw(row);
      const context = { device_id: raw.device_id, route: row.route, burst_id: row.burst_id };
      let out;
      try {
        const decoded = decode(device, raw);
        if (decoded.parked) continue;
        if (decoded.refused) {
          // The codec now configured does not read it (the wrong sensor?): it stays
          // parked for a configuration that does, rather than rejected and deleted.
          unread.uplinks += 1;
          unread.codes[decoded.refused.code] = (unread.codes[decoded.refused.code] ?? 0) + 1;
          unread.codec = decoded.refused.codec;
          continue;
        }
        console.log(JSON.stringify({ level: "INFO", event: "uplink_unparked", ...context }));
        out = await admitDecoded(device, context, raw, decoded, row.rows, { unpark: row.frame });
      } catch (e) {
        out = { ok: false, code: e?.code ?? "internal_error", message: String(e?.message ?? e) };
      }
      if (!out.ok) {
        console.log(JSON.stringify({ level: "WARN", event: "unpark_failed", ...context, code: out.code, error: out.message }));
        continue;
      }
      done.uplinks += 1;
      for (const name of ["received", "unique", "duplicates_suppressed", "rejected"]) done[name] += out.counts?.[name] ?? 0;
    }
    if (rows.length < UNPARK_PER_CALL || done.uplinks === UNPARK_PER_CALL) break;
  }
  // One line a call, not one an uplink: a device may keep thousands its codec does not read.
  if (unread.uplinks) console.log(JSON.stringify({ level: "WARN", event: "parked_not_decoded", device_id: device.id, codec: unread.codec, uplinks: unread.uplinks, codes: unread.codes }));
  done.still_parked = device.sql.exec("SELECT COUNT(*) AS n FROM parked WHERE device_id = ?", device.id).one().n;
  return done;
}
