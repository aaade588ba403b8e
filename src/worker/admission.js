// One device's admission: its keyed readings (validated and keyed once, in the worker's
// stateless tier) admitted against its seen-set (device.js `seen`), and the admitted
// ones stored with the burst's counts in one transaction before the answer. A key
// admitted again renews its row rather than adding one (`store`); a worker's retry of a
// call is answered as that call was (`recognise`, `countedWithoutRows`); a duplicate
// and a conflict say what they repeat (`notes`). The frame rules (frames.js) re-key
// readings first; the sequence window (window.js) and the bin's fill tracker
// (bin-state.js) are fed in the same transaction; the group's alarm is armed once it committed (`scheduleAfterCommit`, for the other jobs'
// commits too).
import { arrivalOf, collectionOf, observeFill } from "./bin-state.js";
import { config } from "./config.js";
import { ADMITTED, auditLine, CONFLICT, DUPLICATE, guarded, HttpError, isoTime, logNothingStored } from "./core.js";
import { NEXT_ROWID, outboxThrough } from "./delivery.js";
import { sumOf } from "./fleet.js";
// Under another name: `crossPath` is also `admit`'s option saying whether to apply it.
import { crossPath as matchCrossPath, reframe } from "./frames.js";
import { checkpointNow, logHealth } from "./window.js";

// A key that expired from the seen-set and arrives again is admitted again (the
// core's TTL semantics), so its row is renewed rather than duplicated (`store`). A row
// still to deliver is renewed in place: it keeps its rowid, so its place in the outbox
// (and in an open batch: the reading, same key and content, is already on its way and
// the batch is sent unchanged); it takes the new admission's time, burst, verdict and
// `conflicts_with`. A row delivered, refused or ledger-only is replaced (delete and
// insert): a new rowid, after every row before it, so it is delivered afresh; rows in
// (admitted_at, rowid) order stay the admissions in the order the seen-set made them,
// which the cold rebuild relies on.
// A renewal's arrival is the new admission's (late, or the newest admitted again); a
// retried call's (`counted`) keeps the first call's. A collection the row's reading
// confirmed stays on it (with when it was confirmed); one the renewal confirms is
// written on it (a row in a batch formed already keeps its place in it, as a batch's
// rows and body never change: that batch, sent as it was, does not carry it).
const INSERT = `INSERT INTO readings (rowid, key, device_id, seq, ts, fill_pct, admitted_at, burst_id, state, next_attempt_at, frame, verdict, conflicts_with, window_seq, late_ms, collection)
VALUES (${NEXT_ROWID}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const RENEW_IN_PLACE = `UPDATE readings SET admitted_at = ?, burst_id = ?, frame = ?, verdict = ?, conflicts_with = ?, forgotten_at = NULL, late_ms = COALESCE(?, late_ms), collection = COALESCE(?, collection) WHERE rowid = ?`;

/** Writes of one burst's transaction, the first included, before it answers 503. */
export const STORE_WRITES = 3;

/**
 * Admits keyed readings against the seen-set and stores the admitted ones, with
 * the burst's counts (`rejected`: its readings rejected before, `{code: n}`), in one transaction; `counterRef` (the codec's application
 * counter reference) and `unpark` (a parked frame to delete) are written with them.
 * Between admitting and storing nothing is awaited, so no other request can see a
 * key admitted but not stored. `windowSeqs` (per planned reading, its seq in the
 * device's sequence window, or null: `decodedWindowSeqs`) feeds the window with the
 * admitted and duplicate readings, in the same transaction (`observeSeqs`). Returns `{ok: true, verdicts, notes, keys, counts}`
 * (`verdicts`: a byte per reading: 0 admitted, 1 admitted with a seq reuse (a
 * conflict), 2 duplicate; 3, pending, needs a provisional admission, which the
 * worker never makes; `notes`: per reading, what its verdict links to and an admitted
 * one's arrival, `notes` below; `keys`: the keys as stored when `reframe` changed
 * one), or `{ok: false, status, code, message}` when nothing was stored. The bin's
 * fill tracker takes the stored readings in the same transaction (`observeFill`),
 * except on a retried call that the first one counted: that one fed it.
 */
export async function admit(device, context, planned, rejected, { attempt = 0, counterRef = null, schedulePhase = null, unpark = null, crossPath = false, windowSeqs = null } = {}) {
  const { device_id, burst_id } = context;
  const refused = sumOf(rejected);
  const cfg = config(device.env);
  const now = Date.now();
  let readings;
  let crossed = new Set();
  try {
    readings = reframe(device, device_id, planned, now, cfg);
    if (crossPath) ({ readings, crossed } = matchCrossPath(device, device_id, readings, now, cfg));
  } catch (e) {
    return notAdmitted(context, planned.length, refused, e);
  }
  const keys = readings.map((r) => r.key).join("\n");
  const state = cfg.ORIGIN_URL ? "pending" : "stored";
  let out;
  let conflicts;
  let health = null;
  let fill = null;
  let marks = new Map();
  // A failed write is retried at once, STORE_WRITES writes in all (network servers
  // barely retry a 503). Each admits against the seen-set rebuilt from the rows
  // (the failure dropped it), so admitting and storing stay one synchronous step.
  for (let write = 1; ; write++) {
    try {
      out = guarded(() => device.seen(now, cfg).admitKeys(keys, now, refused, context));
    } catch (e) {
      device.drop();
      return notAdmitted(context, planned.length, refused, e);
    }
    if (attempt > 0) out = recognise(device, out, readings, context, now);
    // A conflict's link (the stored reading with its seq): found when its row is
    // written; a retried call's recognised ones say what their rows say.
    conflicts = new Map(out.recognised ?? []);
    // Readings that took a live reading's key and were found its duplicate. A retried
    // call of a burst counted already (`counted`) names them as the first call did,
    // and counts nothing again.
    const crossedDuplicates = [...crossed].filter((i) => out.verdicts[i] === DUPLICATE);
    if (crossedDuplicates.length && !out.counted) {
      const counts = { ...out.counts, cross_path_duplicates: crossedDuplicates.length };
      out = { ...out, counts, line: guarded(() => auditLine("burst_deduplicated", counts, now, context)) };
    }
    out = { ...out, crossed: crossedDuplicates };
    const counts = out.counts;
    // Stored and counted by the earlier call: nothing to write.
    if (out.counted && !counts.received) break;
    // What the rows stored change in the group's backlog (ledger.js), once committed.
    const moved = { ledger_rows: 0, pending: 0, delivered: 0, refused: 0 };
    try {
      device.ctx.storage.transactionSync(() => {
        const through = outboxThrough(device.sql);
        // The key stored last in this call per `device:seq:` prefix: the newest row of
        // that seq, so a burst of readings sharing one seq links each to the one before
        // it without scanning the seq's rows again (a scan per reading was quadratic).
        const newestOfSeq = new Map();
        const stored = readings.flatMap((r, i) => (ADMITTED.has(out.verdicts[i]) && !out.forgotten?.has(i) ? [i] : []));
        ({ marks, fill } = out.counted ? { marks: new Map(), fill: null } : observeFill(device, readings, stored, now, cfg, context));
        stored.forEach((i) => {
          const r = readings[i];
          const verdict = out.verdicts[i];
          const prefix = seqPrefix(r.key);
          if (verdict === CONFLICT && !conflicts.has(i)) conflicts.set(i, newestOfSeq.get(prefix) ?? conflictOf(device, r.key));
          const conflictsWith = verdict === CONFLICT ? conflicts.get(i) : null;
          const windowSeq = windowSeqs?.[i] ?? null;
          store(device, r, { device_id, now, burst_id, state, verdict: verdict === CONFLICT ? "conflict" : "admitted", conflictsWith, through, windowSeq, mark: marks.get(i) }, moved);
          newestOfSeq.set(prefix, r.key);
        });
        // A retried call counted already observed its seqs with the first one.
        health = windowSeqs && !out.counted ? device.observeSeqs(windowSeqs, out.verdicts, now, context) : null;
        if (counterRef !== null && counterRef !== undefined) {
          // An update of the one row when it moved (REPLACE would delete and insert: two rows written).
          device.sql.exec(
            "INSERT INTO codec_state (device_id, counter_ref) VALUES (?1, ?2) ON CONFLICT (device_id) DO UPDATE SET counter_ref = ?2 WHERE counter_ref IS NOT ?2",
            device_id,
            counterRef,
          );
        }
        if (schedulePhase !== null && schedulePhase !== undefined) {
          device.sql.exec(
            "INSERT INTO schedule_phase (device_id, phase_s) VALUES (?1, ?2) ON CONFLICT (device_id) DO UPDATE SET phase_s = ?2 WHERE phase_s IS NOT ?2",
            device_id,
            schedulePhase,
          );
        }
        if (unpark !== null) device.sql.exec("DELETE FROM parked WHERE device_id = ? AND frame = ?", device_id, unpark);
      });
      for (const [name, n] of Object.entries(moved)) device.group.backlog.add(name, n);
      if (unpark !== null) device.group.parkedChanged();
      device.group.figures.countBurst(device_id, health ? { ...counts, recovered_seqs: health.recovered.length, seq_resets: health.resets.length } : counts, rejected, health?.window);
      if (fill) device.group.figures.setFill(device_id, fill);
      if (device.checkpointWanted) checkpointNow(device, context);
      if (!counts.unique) countedWithoutRows(device, burst_id);
      break;
    } catch (e) {
      // The admitted keys are not stored: forget the seen-set, whose rebuild from
      // the rows will not hold them, so the retry (this one's or the sender's) is admitted.
      device.checkpointWanted = false;
      device.drop();
      marks = new Map();
      fill = null;
      if (write < STORE_WRITES) {
        console.log(JSON.stringify({ level: "WARN", event: "storage_retry", device_id, burst_id, write, error: String(e?.message ?? e) }));
        continue;
      }
      // Nothing of the burst is stored or counted, replays included: as the reply says.
      const notStored = counts.unique + counts.duplicates_suppressed;
      const lost = { received: counts.received, rejected: counts.rejected, not_stored: notStored };
      console.log(guarded(() => auditLine("burst_not_stored", lost, now, { ...context, error: "storage_unavailable" })));
      return { ok: false, status: 503, code: "storage_unavailable", message: `could not store the burst (${write} attempts): ${e.message}` };
    }
  }
  // The seen-set admitted keys an operator forgot after the earlier call stored them: its rebuild leaves them out.
  if (out.forgotten?.size) device.drop();
  // Read before anything is awaited: the rows as this burst left them.
  const readingNotes = notes(device, readings, out.verdicts, conflicts, marks);
  if (out.counted) console.log(JSON.stringify({ level: "INFO", event: "burst_already_stored", device_id, burst_id, attempt, readings: out.already }));
  if (out.line) console.log(out.line);
  if (health) logHealth(health, context);
  // Delivers the new rows right away (unless a batch is open: they wait for it);
  // also re-arms an alarm lost with a restart while a backlog waits.
  await scheduleAfterCommit(device, cfg, context);
  const recovered = health ? health.recovered.map((r) => r.seq) : [];
  return { ok: true, verdicts: out.verdicts, notes: readingNotes, keys: readings === planned ? undefined : readings.map((r) => r.key), counts: out.counts, crossed: out.crossed, recovered, at: now };
}

/**
 * Writes one admitted reading's row (inside the burst's transaction): a new row, or a
 * renewal (see INSERT above; `through`: the outbox cursor). Adds to `moved` what it
 * changes in the backlog.
 */
function store(device, r, { device_id, now, burst_id, state, verdict, conflictsWith, through, windowSeq = null, mark }, moved) {
  const old = device.sql.exec("SELECT rowid, state, admitted_at, late_ms, collection FROM readings WHERE key = ?", r.key).toArray()[0];
  // A key admitted again: its one row stands for its last admission only. A restart
  // before the next checkpoint counts a row once, if it replays it (figures.js): the
  // admission it would not count wants the checkpoint now (`replayedRow`).
  const figures = device.group.figures;
  if (old?.state === "pending" && old.rowid > through) {
    device.sql.exec(RENEW_IN_PLACE, now, burst_id, r.frame ?? null, verdict, conflictsWith, mark?.late_ms ?? null, mark?.collection ?? null, old.rowid);
    // Renewed in place: counted by a replay only above the checkpoint, and then once for both admissions.
    if (!figures.replayedRow(old.rowid, now) || figures.replayedRow(old.rowid, old.admitted_at)) device.checkpointWanted = true;
    return;
  }
  // Replaced by a new row (replayed): the old admission's count is lost if a replay counted it.
  if (old && figures.replayedRow(old.rowid, old.admitted_at)) device.checkpointWanted = true;
  if (old) {
    device.sql.exec("DELETE FROM readings WHERE rowid = ?", old.rowid);
    moved.ledger_rows -= 1;
    if (old.state === "refused") moved.refused -= 1;
    else if (old.state !== "stored") moved.delivered -= 1;
  }
  const late_ms = mark ? mark.late_ms : (old?.late_ms ?? null);
  const collection = mark?.collection ?? old?.collection ?? null;
  device.sql.exec(INSERT, r.key, device_id, r.seq, r.ts, r.fill_pct, now, burst_id, state, state === "pending" ? now : null, r.frame ?? null, verdict, conflictsWith, windowSeq, late_ms, collection);
  moved.ledger_rows += 1;
  if (state === "pending") moved.pending += 1;
}

/**
 * What each reading's verdict links to, for the reply (index.js `outcome`): a
 * duplicate, `{first_admitted_at, first_burst_id}` from its key's row (`firstAdmission`);
 * an admitted reading, its `arrival` and `late_by_ms` (bin-state.js `arrivalOf`) and
 * the `collection` it confirmed or null (`marks`: index → what `observeFill` made of
 * it; a reading without one, of a retried call, is read from its row), a conflict's
 * also `conflicts_with` (`conflicts`: index → the key, or null); else null. Reads only.
 */
export function notes(device, readings, verdicts, conflicts = new Map(), marks = new Map()) {
  return readings.map((r, i) => {
    if (verdicts[i] === DUPLICATE) return firstAdmission(device, r.key);
    if (!ADMITTED.has(verdicts[i])) return null;
    const mark = marks.get(i) ?? markOf(device, r.key);
    const collection = mark.collection === null ? null : collectionOf({ key: r.key, admitted_at: mark.admitted_at, collection: mark.collection });
    const arrival = { ...arrivalOf(mark.late_ms), collection };
    return verdicts[i] === CONFLICT ? { conflicts_with: conflicts.get(i) ?? null, ...arrival } : arrival;
  });
}

/** A stored reading's `{late_ms, collection, admitted_at}` as its row holds them (nulls when it has none). */
function markOf(device, key) {
  const row = device.prepared ? device.sql.exec("SELECT late_ms, collection, admitted_at FROM readings WHERE key = ? AND device_id = ?", key, device.id).toArray()[0] : undefined;
  return { late_ms: row?.late_ms ?? null, collection: row?.collection ?? null, admitted_at: row?.admitted_at ?? null };
}

/**
 * The admission a duplicate of `key` repeats: its row's admission time and burst
 * (a key re-admitted after its TTL: the latest admission, the one the seen-set
 * holds). Nulls when there is no row: the key's row was deleted by hand, or the
 * device's storage holds none yet (a simulated uplink's copy of its own reading).
 * Retention never deletes a row whose key the seen-set holds (RETENTION_MS ≥ TTL_MS).
 */
function firstAdmission(device, key) {
  const row = device.prepared ? device.sql.exec("SELECT admitted_at, burst_id FROM readings WHERE key = ? AND device_id = ?", key, device.id).toArray()[0] : undefined;
  return { first_admitted_at: row ? isoTime(row.admitted_at) : null, first_burst_id: row?.burst_id ?? null };
}

/**
 * The stored reading a conflict conflicts with: the key of the newest row (in
 * admission order) with the same device and seq and another key, found by the
 * key's `device_id:seq:` prefix on the primary key's index; null when none is
 * stored (the seen-set held the seq, its row was deleted by hand). A row an operator
 * forgot is not held, so not linked. Reads only.
 */
function conflictOf(device, key) {
  const prefix = seqPrefix(key);
  const end = `${prefix.slice(0, -1)};`; // ';' follows ':': every key with the prefix sorts before it
  const row = device.sql.exec("SELECT key FROM readings WHERE key > ? AND key < ? AND key <> ? AND device_id = ? AND forgotten_at IS NULL ORDER BY admitted_at DESC, rowid DESC LIMIT 1", prefix, end, key, device.id).toArray()[0];
  return row?.key ?? null;
}

/**
 * schedule() after a commit: the rows are stored, so a failure here must not answer
 * as if they were not; it is logged (ERROR schedule_failed). What it would have
 * armed waits for the next schedule(): a later burst's, or the end of an alarm
 * already armed.
 */
export async function scheduleAfterCommit(device, cfg, { device_id, burst_id }) {
  try {
    await device.schedule(cfg);
  } catch (e) {
    console.log(JSON.stringify({ level: "ERROR", event: "schedule_failed", device_id, burst_id, error: String(e?.message ?? e) }));
  }
}

/**
 * Remembers a burst counted without a row of its own (only duplicates, refused or
 * parked readings), so that a retried call of it counts nothing again
 * (`recognise`, `park`). Call it once the transaction that counts the burst has
 * committed. In the group's memory, not its storage (two rows written per
 * duplicate), for a minute at least (group.js COUNTED_FOR_MS): the worker's retry
 * follows its call within the same request, so only a group restarted in between, or
 * a retry later than that, would count such a burst twice (its counts, never a
 * reading).
 */
export function countedWithoutRows(device, burst_id) {
  device.group.counted.add(`${device.id}\n${burst_id}`, Date.now());
}

/** Whether `burst_id` was counted without a row of its own (`countedWithoutRows`). */
export function countedAlready(device, burst_id) {
  return device.group.counted.has(`${device.id}\n${burst_id}`);
}

/**
 * For a retried call: a duplicate whose row this burst stored was admitted by an
 * earlier call whose answer was lost, and is answered as that call answered it:
 * admitted (0), or a conflict (1) with its row's `conflicts_with`. So is a reading
 * admitted again because an operator forgot its row since (`forget`, `reset`): that
 * row is left as it is, still forgotten (`forgotten`: their indices; the caller
 * writes no row for them and drops the seen-set, which admitted them). That call
 * committed this device's whole share of the burst with its counts, so only what
 * this one admits anew (normally nothing) is counted and audited. Returns `out`
 * unchanged when no row is this burst's, else `{verdicts, counts, line, already,
 * recognised, forgotten, counted}` (`line` null when nothing is new; `already`, how many were
 * recognised; `recognised`, index → `conflicts_with` of those that are conflicts). A burst that stored no row is known by `counted_bursts`: its
 * counts are not added again either.
 */
function recognise(device, out, readings, context, now) {
  const verdicts = Uint8Array.from(out.verdicts);
  const mine = new Set(); // a key twice in the burst: its first copy was admitted
  const recognised = new Map();
  const forgotten = new Set();
  let seqReuses = 0; // among the forgotten ones, admitted as a conflict by this call
  readings.forEach((r, i) => {
    if ((verdicts[i] !== DUPLICATE && !ADMITTED.has(verdicts[i])) || mine.has(r.key)) return;
    const row = device.sql.exec("SELECT burst_id, verdict, conflicts_with, forgotten_at FROM readings WHERE key = ? AND device_id = ?", r.key, device.id).toArray()[0];
    if (row?.burst_id !== context.burst_id) return;
    if (verdicts[i] !== DUPLICATE) {
      if (row.forgotten_at === null) return;
      forgotten.add(i);
      if (verdicts[i] === CONFLICT) seqReuses += 1;
    }
    verdicts[i] = row.verdict === "conflict" ? CONFLICT : 0;
    if (verdicts[i] === CONFLICT) recognised.set(i, row.conflicts_with);
    mine.add(r.key);
  });
  const already = mine.size;
  if (!already && !countedAlready(device, context.burst_id)) return out;
  const unique = out.counts.unique - forgotten.size;
  const counts = { ...out.counts, received: unique, unique, duplicates_suppressed: 0, rejected: 0, seq_reuses: out.counts.seq_reuses - seqReuses };
  const line = counts.received ? guarded(() => auditLine("burst_deduplicated", counts, now, context)) : null;
  return { verdicts, counts, line, already, recognised, forgotten, counted: true };
}

/**
 * The answer to a burst of which nothing was admitted (so nothing stored: `e` came
 * before the write), after its audit line.
 */
export function notAdmitted(context, readings, refused, e) {
  const answer =
    e instanceof HttpError
      ? { ok: false, status: e.status, code: e.code, message: e.message }
      : { ok: false, status: 500, code: e?.code ?? "internal_error", message: String(e?.message ?? e) };
  logNothingStored(context, readings, refused, answer.code);
  return answer;
}

/** The `device_id:seq:` part of a key: what every key of one device and seq begins with. */
function seqPrefix(key) {
  return key.slice(0, key.lastIndexOf(":") + 1);
}
