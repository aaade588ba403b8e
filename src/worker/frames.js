// The frame rules: when a reading that arrives again by another way is a reading the
// device stored already, and takes its key, so that the seen-set finds it a duplicate.
// One measurement by two paths (`crossPath`): a sensor's datalog record of a reading it
// sent live. The same frame twice (`reframe`): a copy of a radio frame, keyed at another
// receive time. Both read the device's rows and write nothing; admission (admission.js)
// and the preview (preview.js) apply them before the seen-set is asked.
import { guarded, idempotencyKey, isoTime } from "./core.js";

/**
 * One measurement by two paths: a sensor sends a reading live (no device time: keyed
 * at its receive time, with a `frame`) and later replays it from its datalog (keyed
 * at its device time, no `frame`; Dragino's fPort 3, Milesight's history records).
 * When the device's clock is synced, a datalog reading whose device time is within
 * CROSS_PATH_TOLERANCE_MS of a live reading's receive time, with the same fill level
 * (the same distance, through the same bin), stored within the TTL, is that reading:
 * it takes the live reading's seq, ts, key and frame. Each live reading is taken once per
 * burst, by the datalog reading nearest to it in time (pairs nearest first, ties in
 * stored and payload order), whatever their order in the payload; a datalog reading
 * twice in the burst (one key) takes what its first copy took, so it stays that
 * copy's duplicate. Returns `{readings, crossed}`: `readings` itself when none
 * matched, else a copy; `crossed`, the indices of the readings re-keyed. Reads only.
 */
export function crossPath(device, device_id, readings, now, cfg) {
  const crossed = new Set();
  const tolerance = cfg.CROSS_PATH_TOLERANCE_MS;
  if (!device.prepared || tolerance === 0 || readings.every((r) => r.frame)) return { readings, crossed };
  const firsts = new Map(); // a datalog reading's own key → the index of its first copy
  const pairs = [];
  readings.forEach((r, i) => {
    if (r.frame || firsts.has(r.key)) return;
    firsts.set(r.key, i);
    const at = Date.parse(r.ts);
    const rows = device.sql.exec(
      `SELECT key, seq, ts, frame, abs(julianday(ts) - julianday(?)) AS distance, rowid FROM readings
       WHERE device_id = ? AND frame IS NOT NULL AND ts BETWEEN ? AND ? AND fill_pct = ? AND admitted_at > ?`,
      r.ts, device_id, isoTime(at - tolerance), isoTime(at + tolerance), r.fill_pct, now - cfg.TTL_MS,
    );
    for (const live of rows) pairs.push({ i, live });
  });
  pairs.sort((a, b) => a.live.distance - b.live.distance || a.live.rowid - b.live.rowid || a.i - b.i);
  const match = new Map(); // the index of a datalog reading's first copy → the live row it is
  const taken = new Set();
  for (const { i, live } of pairs) {
    if (match.has(i) || taken.has(live.key)) continue;
    match.set(i, live);
    taken.add(live.key);
  }
  if (!match.size) return { readings, crossed };
  const out = readings.map((r, i) => {
    const live = r.frame ? undefined : match.get(firsts.get(r.key));
    if (!live) return r;
    crossed.add(i);
    // And its frame: re-admitted (its key evicted by the cap), the row stays the live reading's.
    return { ...r, key: live.key, seq: live.seq, ts: live.ts, frame: live.frame };
  });
  return { readings: out, crossed };
}

/**
 * The same frame twice. A reading whose `ts` is the network server's receive time
 * carries its radio frame's identity (`frame`, from the core); a copy of a frame
 * admitted within the TTL (a redelivery, a second region, a webhook replayed from
 * the console, LORIOT's `gw` after its `rx`) takes the first copy's `ts` and is
 * keyed again, so it is that reading's duplicate. The readings of one uplink share
 * its receive time, and the first copy found of any of them gives it to them all:
 * a reading the first copy did not store (the duplicate of an equal one in the
 * same uplink, or rejected) has no row of its own. Returns `planned` itself when
 * no reading changed, else a copy. Reads only.
 */
export function reframe(device, device_id, planned, now, cfg) {
  if (!device.prepared || !planned.some((r) => r.frame)) return planned;
  // A receive time → the ts its frame's first copy was keyed with (undefined: none yet).
  const firsts = new Map();
  for (const r of planned) {
    if (!r.frame || firsts.get(r.ts) !== undefined) continue;
    const row = device.sql.exec("SELECT ts FROM readings WHERE device_id = ? AND frame = ? AND admitted_at > ? ORDER BY rowid LIMIT 1", device_id, r.frame, now - cfg.TTL_MS).toArray()[0];
    firsts.set(r.ts, row?.ts);
  }
  let changed = false;
  const out = planned.map((r) => {
    const first = r.frame ? firsts.get(r.ts) : undefined;
    if (first === undefined || first === r.ts) return r;
    changed = true;
    const key = guarded(() => idempotencyKey({ device_id, seq: r.seq, ts: first, fill_pct: r.fill_pct }));
    return { ...r, ts: first, key };
  });
  return changed ? out : planned;
}
