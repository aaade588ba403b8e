// One device's bin state: its fill by device time, kept by the core's FillTracker
// (src/dedupe/fill.rs gives the rules: the newest reading by `ts` is the state, an
// older one is late, a fall of more than COLLECTION_DROP_PCT between consecutive
// newest readings that the next one confirms is a collection, one it does not is a
// glitch; one dated far ahead of its admission is never taken). The tracker is fed in
// the burst's transaction with the readings the burst stores, by device time within the
// burst (`observeFill`, `trackerOrder`); what it makes of each is written on the
// reading's row (`late_ms`; `collection` on the row of the reading that confirmed
// one), so the ledger, the reply and the origin's body say it without a row of their
// own. Its bytes are held in the group's figures beside the sequence window
// (figures.js) and written down by the checkpoint; a restart replays the rows stored
// since into it. Read back by GET /v1/devices/{id}/state (`binState`), GET
// .../collections (`collections`) and GET /v1/bins (the group's `binsPage`).
import { FillTracker, guarded, isoTime, limits } from "./core.js";
import { byCodePoint } from "./fleet.js";

/**
 * How far after its admission a reading's device time may be and still be taken for the
 * bin's state: half the longest reporting period a configuration takes (a reading a
 * codec dates by the device's schedule, a Tekelek's, is up to half a period after its
 * receive time) and a day (a device clock set to a time zone instead of UTC): 4.5 days.
 * One dated later (a clock gone wrong, a corrupted time) is `ahead`: stored and
 * delivered, but were it the state, every real reading after it would be late until
 * that date.
 */
export const AHEAD_LIMIT_MS = (limits().deviceConfig.reporting_period_s.max / 2 + 86_400) * 1000;

/**
 * The order a tracker takes readings in (`{admitted_at, burst, ts, seq, key}`: `burst`
 * the rank of its burst among the device's admitted at that time): by admission, burst
 * by burst, and the readings of one burst, which arrive together, by device time (a
 * Tekelek sends its newest first), then seq and key (what the rows hold: a redriven
 * row's place among them is not its place in its burst). Used by the burst
 * (`observeFill`) and by a restart's replay (figures.js), so both see the same order.
 * The core writes every `ts` alike (Python's isoformat in UTC, microseconds when it has
 * any), so their text sorts as their times do, to the microsecond.
 */
function trackerOrder(a, b) {
  return a.admitted_at - b.admitted_at || a.burst - b.burst || byText(a.ts, b.ts) || a.seq - b.seq || byText(a.key, b.key);
}

const byText = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Feeds one reading (`{ts, fill_pct, key}`, admitted at `admitted_at`) to `tracker`,
 * whose newest reading's key is `newestKey` (null: none), and returns what it makes of
 * it: `{late_ms, collection, newest}` (`late_ms` 0 for the newest, how much older than
 * the newest for a late one, minus how far after its admission for one `ahead`
 * (AHEAD_LIMIT_MS), which the tracker does not take; `collection` the tracker's
 * `{before, after}` it confirmed, or null; `newest` whether it is now the state: the
 * newest reading admitted again is not a new one).
 */
function observeOne(tracker, r, admitted_at, newestKey) {
  const ahead = Date.parse(r.ts) - admitted_at;
  if (ahead > AHEAD_LIMIT_MS) return { late_ms: -ahead, collection: null, newest: false };
  const seen = guarded(() => tracker.observe(r.ts, r.fill_pct, r.key));
  const late_ms = seen.late_by_ms ?? 0;
  return { late_ms, collection: seen.collection ?? null, newest: late_ms === 0 && r.key !== newestKey };
}

/**
 * Feeds `readings` (each `{ts, fill_pct, key, seq, admitted_at, burst}`, see
 * `trackerOrder`) to a device's bin state `{fill, collected, newest_at}` (its figures:
 * the tracker's bytes or null, its last collection, when its newest reading was
 * admitted), in `trackerOrder`, calling `each(r, seen)` with what `observeOne` made of
 * each. Returns the new state `{bytes, collected, newest_at}`. The burst's way
 * (`observeFill`) and a restart's replay (figures.js) both go through here.
 */
export function feedFill({ fill, collected, newest_at }, readings, cfg, context, each = () => {}) {
  const tracker = openTracker(fill, cfg, context);
  try {
    let newestKey = guarded(() => tracker.state()).newest?.key ?? null;
    for (const r of [...readings].sort(trackerOrder)) {
      const seen = observeOne(tracker, r, r.admitted_at, newestKey);
      if (seen.newest) [newest_at, newestKey] = [r.admitted_at, r.key];
      if (seen.collection) collected = collectionSummary(seen.collection);
      each(r, seen);
    }
    return { bytes: guarded(() => tracker.toBytes()), collected, newest_at };
  } finally {
    tracker.free();
  }
}

/**
 * Feeds the device's tracker with the readings a burst stores at `now` (`stored`: their
 * indexes in `readings`, in admission order; taken in `trackerOrder`), inside the
 * burst's transaction (`feedFill`), and returns `{marks, fill}`: per stored index `{late_ms,
 * collection, admitted_at}` (`late_ms` as `observeOne` gives it; `collection` the JSON
 * text of a collection the reading confirmed, with its `confirmed_at`, or null), and the
 * tracker's new bytes with the last collection and when its newest reading was admitted
 * (`fill`, for figures.js `setFill` once committed; null when nothing was fed).
 */
export function observeFill(device, readings, stored, now, cfg, context) {
  const marks = new Map();
  if (!stored.length) return { marks, fill: null };
  const figures = device.group.figures;
  const prior = { fill: figures.fill(device.id), collected: figures.collected(device.id), newest_at: figures.newestAt(device.id) };
  const fed = stored.map((i) => ({ ...readings[i], i, admitted_at: now, burst: 0 }));
  const fill = feedFill(prior, fed, cfg, context, (r, seen) => {
    const collection = seen.collection ? JSON.stringify({ ...seen.collection, confirmed_at: now }) : null;
    marks.set(r.i, { late_ms: seen.late_ms, collection, admitted_at: now });
  });
  return { marks, fill };
}

/**
 * The device's tracker from its stored bytes (`bytes`: null for a new one). Bytes the
 * core cannot read (`invalid_snapshot`) are logged (WARN fill_tracker_unreadable) and
 * a new tracker starts: the burst is not refused for them. The caller frees it.
 */
export function openTracker(bytes, cfg, context = {}) {
  if (bytes === null) return guarded(() => new FillTracker(cfg.COLLECTION_DROP_PCT));
  try {
    return guarded(() => FillTracker.fromBytes(bytes, cfg.COLLECTION_DROP_PCT));
  } catch (e) {
    if (e?.code !== "invalid_snapshot") throw e;
    console.log(JSON.stringify({ level: "WARN", event: "fill_tracker_unreadable", device_id: context.device_id, error: String(e?.message ?? e) }));
    return guarded(() => new FillTracker(cfg.COLLECTION_DROP_PCT));
  }
}

/** What the figures keep of a collection (the tracker's `{before, after}`): its bounds and fills. */
export function collectionSummary({ before, after }) {
  return { from: before.ts, to: after.ts, fill_before: before.fill_pct, fill_after: after.fill_pct };
}

/**
 * A reading's arrival as its row's `late_ms` says it (`late_ms` NULL: stored before
 * readings were marked; negative: ahead): `{arrival: "newest" | "late" | "ahead" |
 * null, late_by_ms}`.
 */
export function arrivalOf(late_ms) {
  if (late_ms === null || late_ms === undefined) return { arrival: null, late_by_ms: null };
  if (late_ms < 0) return { arrival: "ahead", late_by_ms: null };
  return late_ms > 0 ? { arrival: "late", late_by_ms: late_ms } : { arrival: "newest", late_by_ms: null };
}

/**
 * The device's bin state now (GET /v1/devices/{id}/state), from its figures (`f`:
 * figures.js `binFigures`) and its configuration's reporting period (`configured_s`, or
 * null): see `stateOf`.
 */
export function binState(device, cfg, now) {
  const figures = device.prepared ? device.group.figures : null;
  const configured = device.prepared ? device.sql.exec("SELECT reporting_period_s FROM config WHERE device_id = ?", device.id).toArray()[0] : undefined;
  return stateOf(device.id, figures?.fill(device.id) ?? null, figures?.collected(device.id) ?? null, figures?.newestAt(device.id) ?? null, configured?.reporting_period_s ?? null, cfg, now);
}

/**
 * One bin's state from its tracker's bytes (null: no reading yet), its last collection,
 * when its newest reading was admitted (ms, null when unknown: a state of the release
 * before) and its configured reporting period, at `now`: `{device_id, newest, previous,
 * period_s, period_source, stale, stale_after_s, suspected_collection,
 * last_collection}`. `newest` and `previous` are readings `{ts, fill_pct, key}`,
 * `newest` with its `age_s` (now − ts, negative for a device clock ahead) and
 * `admitted_at`. The period is the one seen (the median interval of its newest
 * readings), else the configured one; the bin is stale when its newest reading was
 * admitted more than STALE_PERIODS periods ago (by the worker's clock: a device clock
 * behind or ahead does not make it so; without the admission time, by its `ts`), or
 * when it has none; without a period, staleness is unknown (null).
 */
export function stateOf(device_id, bytes, collected, newest_at, configured_s, cfg, now) {
  let state = { newest: null, previous: null, suspected: null, period_s: null };
  if (bytes !== null) {
    const tracker = openTracker(bytes, cfg, { device_id });
    try {
      state = guarded(() => tracker.state());
    } finally {
      tracker.free();
    }
  }
  const period_s = state.period_s ?? configured_s;
  const period_source = state.period_s !== null ? "seen" : configured_s !== null ? "configured" : null;
  const stale_after_s = period_s === null ? null : period_s * cfg.STALE_PERIODS;
  const age_s = state.newest === null ? null : (now - Date.parse(state.newest.ts)) / 1000;
  const quiet_s = newest_at === null ? age_s : (now - newest_at) / 1000;
  const stale = state.newest === null ? true : stale_after_s === null ? null : quiet_s > stale_after_s;
  return {
    device_id,
    newest: state.newest === null ? null : { ...state.newest, age_s, admitted_at: newest_at === null ? null : isoTime(newest_at) },
    previous: state.previous,
    period_s,
    period_source,
    stale,
    stale_after_s,
    // A fall awaiting its confirmation by the next reading: collected, or a glitch.
    suspected_collection: state.suspected === null ? null : { before: state.suspected, after: state.newest },
    last_collection: collected,
  };
}

/**
 * The device's collections (GET /v1/devices/{id}/collections) in the order they were
 * confirmed, `after` a cursor (the `next` of the previous page), from the rows of the
 * readings that confirmed them (within LEDGER_RETENTION_MS). Each is `{from, to,
 * fill_before, fill_after, before, after, confirmed_by, confirmed_at}`.
 */
export function collections(device, { after = 0, limit }) {
  if (!device.prepared) return { collections: [], next: null };
  const rows = device.sql
    .exec("SELECT rowid, key, admitted_at, collection FROM readings WHERE device_id = ? AND collection IS NOT NULL AND rowid > ? ORDER BY rowid LIMIT ?", device.id, after, limit)
    .toArray();
  return { collections: rows.map(collectionOf), next: rows.length === limit ? rows[rows.length - 1].rowid : null };
}

/**
 * A collection as every reply and the origin's body give it, from the row (`key`,
 * `admitted_at`, `collection`) of the reading that confirmed it.
 */
export function collectionOf(row) {
  const c = JSON.parse(row.collection);
  // When it was confirmed: with it since it is kept (a row admitted again keeps it), else its row's admission.
  return { ...collectionSummary(c), before: c.before, after: c.after, confirmed_by: row.key, confirmed_at: isoTime(c.confirmed_at ?? row.admitted_at) };
}

/**
 * The columns of a bin row (GET /v1/bins, JSON and CSV): its newest reading
 * (`fill_pct`, `ts`, `key`, `age_s`), the one before (`previous_*`), its reporting
 * period and staleness as `stateOf` gives them, whether a fall awaits confirmation
 * (`collection_suspected`), its last collection (`last_collection_*`: from the last
 * reading before the fall to the first after it), and whether it has a configuration.
 */
export const BIN_COLUMNS = [
  "device_id",
  "fill_pct",
  "ts",
  "key",
  "age_s",
  "admitted_at",
  "previous_fill_pct",
  "previous_ts",
  "period_s",
  "period_source",
  "stale",
  "stale_after_s",
  "collection_suspected",
  "last_collection_from",
  "last_collection_to",
  "last_collection_fill_before",
  "last_collection_fill_after",
  "configured",
];

/** A bin's row (BIN_COLUMNS) from its state (`stateOf`) and whether it is configured. */
export function binRow(state, configured) {
  const { newest, previous, last_collection: last } = state;
  return {
    device_id: state.device_id,
    fill_pct: newest?.fill_pct ?? null,
    ts: newest?.ts ?? null,
    key: newest?.key ?? null,
    age_s: newest?.age_s ?? null,
    admitted_at: newest?.admitted_at ?? null,
    previous_fill_pct: previous?.fill_pct ?? null,
    previous_ts: previous?.ts ?? null,
    period_s: state.period_s,
    period_source: state.period_source,
    stale: state.stale,
    stale_after_s: state.stale_after_s,
    collection_suspected: state.suspected_collection !== null,
    last_collection_from: last?.from ?? null,
    last_collection_to: last?.to ?? null,
    last_collection_fill_before: last?.fill_before ?? null,
    last_collection_fill_after: last?.fill_after ?? null,
    configured,
  };
}

/**
 * Whether a bin row passes a GET /v1/bins filter (`{min_fill, stale, collected_since}`,
 * each null when not given): its newest fill at least `min_fill`; its staleness
 * `stale` (a bin whose staleness is unknown passes neither); its last collection's
 * end (`last_collection_to`) at or after `collected_since` (ms).
 */
export function passes(row, { min_fill = null, stale = null, collected_since = null }) {
  if (min_fill !== null && !(row.fill_pct !== null && row.fill_pct >= min_fill)) return false;
  if (stale !== null && row.stale !== stale) return false;
  if (collected_since !== null && !(row.last_collection_to !== null && Date.parse(row.last_collection_to) >= collected_since)) return false;
  return true;
}

/**
 * One group's page of GET /v1/bins (fleet.js `fleetBins`): the rows (`binRow`) of its
 * devices, after `after` in code point order (as SQLite orders the ids), that pass
 * `filter`, at most `limit`: every device it holds figures of (any that ever reached
 * it, a configured one too: a configuration registers its device), read from its
 * memory (figures.js: the bin states as the last committed write left them), with
 * their configured reporting periods from its `config` rows.
 */
export function binsPage(group, { after, limit, filter }, cfg, now) {
  const figures = group.figures;
  const configured = configuredAfter(group.sql, after, Math.min(limit + 1, CONFIG_CHUNK));
  const rows = [];
  for (const id of [...figures.devices.keys()].filter((id) => byCodePoint(id, after) > 0).sort(byCodePoint)) {
    if (rows.length >= limit) break;
    const period = configured(id);
    const row = binRow(stateOf(id, figures.fill(id), figures.collected(id), figures.newestAt(id), period?.reporting_period_s ?? null, cfg, now), period !== undefined);
    if (passes(row, filter)) rows.push(row);
  }
  return rows;
}

/** Configuration rows a bins page reads at a time, at most (a page of fewer bins, its size and one). */
const CONFIG_CHUNK = 256;

/**
 * The `config` rows of the devices after `after`, read as a page asks for them (ids in
 * ascending code point order, as SQLite orders them), `size` at a time: a page reads
 * the rows of the ids it passes (and at most `size` more), not every configured device
 * of its group. Returns `(id) → {reporting_period_s} | undefined` (undefined: not
 * configured).
 */
function configuredAfter(sql, after, size) {
  let chunk = [];
  let at = 0;
  let last = after;
  let done = false;
  return (id) => {
    for (;;) {
      while (at < chunk.length && byCodePoint(chunk[at].device_id, id) < 0) at += 1;
      if (at < chunk.length || done) break;
      chunk = sql.exec("SELECT device_id, reporting_period_s FROM config WHERE device_id > ? ORDER BY device_id LIMIT ?", last, size).toArray();
      at = 0;
      done = chunk.length < size;
      if (chunk.length) last = chunk[chunk.length - 1].device_id;
    }
    return at < chunk.length && chunk[at].device_id === id ? chunk[at] : undefined;
  };
}
