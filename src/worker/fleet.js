// Fleet-wide figures for GET /v1/stats without asking any device: the roll-up
// protocol between the groups (group.js, whose devices' figures figures.js keeps) and
// the roll-up shards (FleetObject), and what the stateless tier reads from both.
//
// * A group holds its devices' figures (figures.js) and its ledger's backlog
//   (ledger.js). From its alarm, at most once per STATS_FLUSH_MS while they changed,
//   it sends its shard ONE report: the sums over its devices, its backlog gauges and
//   how many devices it holds, with a version rising with every report of its storage
//   (`incarnation`). The shard (one of SHARDS, the group's index mod SHARDS) keeps one
//   row per group and applies a report only when its version is newer than the row's,
//   moving the totals by the difference, in one transaction: two rows written, however
//   many devices the group holds. A report retried after a timeout, arriving twice or
//   overtaken changes nothing a second time; one that failed is not lost: the next
//   carries the same (or newer) sums.
// * Device rows at a shard (`device_figures`) are what the releases before group
//   reports flushed, one per device. A group's first report of an object instance
//   names every device it holds (`supersedes`), and the shard takes those devices'
//   rows out of its totals, and deletes them, in the transaction that adds the group's
//   sums, which include them: a device is counted once, by its group, from then on.
// * GET /v1/stats asks the SHARDS shards and nothing else: a constant number of calls.
//   GET /v1/devices/health pages through the groups, which answer from memory.
// * The shards are also the registry of devices that have a ledger. A group
//   registers a device with its shard before the device's first write (once: its
//   `devices` row remembers it; if the shard cannot be reached the burst is not
//   stored and the sender retries), so GET /v1/devices/{id}/readings asks the shard
//   first (`knows`) and never writes storage for a device that never ingested.
//
// Staleness: a device's change reaches /v1/stats within STATS_FLUSH_MS plus one
// report's round trip, while reports succeed (a group whose alarm is busy delivering
// a backlog to a slow origin reports when that run ends: at most 20 batches, each
// at most ORIGIN_TIMEOUT_MS); a failed report is retried every STATS_FLUSH_MS. Each
// report is its group's consistent snapshot, so received = unique +
// duplicates_suppressed + rejected + parked holds in every reply; once quiet the totals are
// exact.
//
// Why 16 shards: a shard takes one report per STATS_FLUSH_MS from each of its 16
// groups; /v1/stats reads 16 objects whatever the fleet's size. A group's shard must
// never change (it would be counted twice), so SHARDS and the hash are fixed.
import { DurableObject } from "cloudflare:workers";
import { isoTime } from "./core.js";
import { GROUPS, groupAt, groupOf, SHARDS, shardOf } from "./placement.js";

/** A flush not answered by then counts as failed (and is sent again, harmlessly). */
const FLUSH_TIMEOUT_MS = 10_000;

/**
 * Cumulative counters, named as in the ingest reply and the audit line; and the
 * sequence window's (window.js `observeSeqs`): seqs that closed a gap, counter resets.
 */
export const COUNTERS = ["received", "unique", "duplicates_suppressed", "cross_path_duplicates", "rejected", "parked", "seq_reuses", "recovered_seqs", "seq_resets"];
/**
 * Backlog gauges of a device's ledger, parked uplinks and open missing seqs (its
 * sequence window's); summed over the fleet like the counters.
 */
export const BACKLOG = ["pending_deliveries", "delivered", "failed_attempts", "ledger_rows", "refused_by_origin", "parked_uplinks", "missing_seqs"];
/**
 * What became of the device's history requests (backfill.js): made (`requested`),
 * accepted by the network server (`sent`), then closed as `answered`, `expired`,
 * `failed` or `cancelled`. Counted as `backfill_<outcome>` (`countBackfill`).
 */
export const BACKFILL_CLOSED = ["answered", "expired", "failed", "cancelled"];
export const BACKFILL_OUTCOMES = ["requested", "sent", ...BACKFILL_CLOSED];
export const BACKFILL = BACKFILL_OUTCOMES.map((outcome) => `backfill_${outcome}`);
const SUMMED = [...COUNTERS, ...BACKFILL, ...BACKLOG];
/** The figures of a group report that are gauges: each replaces the one before. */
const GAUGES = [...BACKLOG, "devices"];
/** Counter names of acknowledged events that are not uplinks: `ignored:<route>/<event>`. */
export const IGNORED = "ignored:";
/**
 * Counter names of rejected readings by their code: `rejected:<code>`. A device keeps
 * them beside `rejected` (their sum, for rejections counted since they exist) and
 * flushes them as `labelled`; the shards count unroutable readings so too.
 */
export const REJECTED = "rejected:";
/**
 * The name /v1/stats `rejected_by_code` gives rejections counted before the codes
 * were (a device's or shard's `rejected` from an earlier version): `rejected` minus
 * the coded ones, so that the codes always add up to `rejected`.
 */
export const NOT_RECORDED = "not_recorded";

/** Adds to a named counter in a `counters (name, value)` table. */
const COUNT = `INSERT INTO counters (name, value) VALUES (?, ?)
ON CONFLICT (name) DO UPDATE SET value = value + excluded.value`;

// --- group side (run inside a GroupObject) ----------------------------------------

/**
 * The group's tables for the roll-up: one row per device (`devices`, written when it
 * registers: its registration time, and the `counters` and `window` it brought from a
 * hand-over, or that the release before checkpoints kept here; figures.js loads them;
 * `incarnation`, `version` and `acknowledged` are of that release's flushes), and the
 * group's one `flush` row: the `incarnation` of its reports.
 */
const FIGURES_SCHEMA = `
CREATE TABLE IF NOT EXISTS devices (
  device_id TEXT PRIMARY KEY,
  incarnation TEXT NOT NULL,
  version INTEGER NOT NULL,
  acknowledged INTEGER NOT NULL,
  registered_at INTEGER NOT NULL,
  counters TEXT NOT NULL DEFAULT '{}',
  window BLOB,                    -- its sequence window (the core's SeqWindow, toBytes()), or NULL
  missing INTEGER NOT NULL DEFAULT 0 -- that window's open missing seqs
);
CREATE TABLE IF NOT EXISTS flush (id INTEGER PRIMARY KEY CHECK (id = 0), next_flush_at INTEGER NOT NULL, incarnation TEXT NOT NULL);
`;

/** Creates the group's roll-up tables. Idempotent. */
export function prepareFigures(sql) {
  sql.exec(FIGURES_SCHEMA);
  sql.exec("INSERT OR IGNORE INTO flush (id, next_flush_at, incarnation) VALUES (0, 0, ?)", crypto.randomUUID());
}

/**
 * Registers the device with its shard, before its first write (then `addDevice`).
 * Throws when the shard did not confirm (then nothing may be stored: the ledger would
 * be unreadable). Returns whether the shard knew the device already: it has storage
 * elsewhere (its own object, of the release before groups: group.js hands it over).
 */
export async function registerWithShard(env, device_id) {
  const s = shard(env, device_id);
  const claimed = withTimeout(s.claim(device_id), FLUSH_TIMEOUT_MS).catch(async (e) => {
    if (!/does not implement the method "claim"/.test(String(e?.message))) throw e;
    // A shard of the earlier release: it registers, and answers nothing (it may know the device).
    await withTimeout(s.register(device_id), FLUSH_TIMEOUT_MS);
    return undefined;
  });
  return (await claimed) !== false;
}

/**
 * `registerWithShard` for several devices of one shard in one call: whether the shard
 * knew each. Throws when the shard did not confirm, or is of the earlier release (then
 * each device registers on its own).
 */
export async function claimAtShard(env, device_ids) {
  return withTimeout(shard(env, device_ids[0]).claimMany(device_ids), FLUSH_TIMEOUT_MS);
}

/**
 * Writes the device's `devices` row (it is registered in the group), with the
 * `counters` and `window` a hand-over brought; the caller then adds them to the
 * group's figures (figures.js `add`) once committed.
 */
export function addDevice(sql, device_id, { incarnation = crypto.randomUUID(), version = 0, acknowledged = version, counters = {}, window = null } = {}) {
  sql.exec(
    "INSERT OR IGNORE INTO devices (device_id, incarnation, version, acknowledged, registered_at, counters, window, missing) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    device_id,
    incarnation,
    version,
    acknowledged,
    Date.now(),
    JSON.stringify(counters),
    window?.bytes ?? null,
    window?.missing ?? 0,
  );
}

/** `{code: n}`: how many of `rejected` (objects with a `code`: rejections as a reply lists them) have each code. */
export function byCode(rejected) {
  const out = {};
  for (const { code } of rejected) add(out, code, 1);
  return out;
}

/** The sum of the counts of `{name: n}`. */
export function sumOf(counts) {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/**
 * Sends the group's report (group.js `report`: `{group, incarnation, version,
 * supersedes, oldest_undelivered_at, ...figures}`) to its shard. Returns whether the
 * shard took it; never throws: a failure is logged and the alarm sends it again.
 */
export async function flush(env, report) {
  const i = shardOfGroup(report.group);
  try {
    await withTimeout(stub(env, i).report(report), FLUSH_TIMEOUT_MS);
    return true;
  } catch (e) {
    let error = String(e?.message ?? e);
    // During a deployment, a shard of the release before group reports: the group keeps
    // its figures and reports them once the shard runs this release.
    if (/does not implement the method "report"/.test(error)) error = `the roll-up shard is of an earlier release (${error}): the group keeps its figures until it is upgraded`;
    console.log(JSON.stringify({ level: "WARN", event: "stats_flush_failed", shard: i, group: report.group, version: report.version, devices: report.devices, error }));
    return false;
  }
}

/** The shard of a group by its name (`group-<n>`): all its devices' shard (placement.js). */
function shardOfGroup(name) {
  return Number(/^group-(\d+)$/.exec(name)?.[1] ?? 0) % SHARDS;
}

function withTimeout(promise, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  promise.catch(() => {}); // settles after the timeout: already counted as failed
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// --- stateless tier -----------------------------------------------------------------

/**
 * Counts readings rejected before any device got them (no usable device_id) into
 * received and rejected, by code (`codes`: `{code: n}`, see `byCode`). `key` (the
 * burst id) spreads them over the shards. Not retried, so never counted twice; a
 * failure is logged with the count.
 */
export async function countUnroutable(env, key, codes) {
  try {
    await shard(env, key).unroutable(sumOf(codes), codes);
  } catch (e) {
    console.log(JSON.stringify({ level: "ERROR", event: "unroutable_not_counted", readings: sumOf(codes), error: String(e?.message ?? e) }));
  }
}

/**
 * Counts one message that stored nothing by design: a network-server event that is
 * not an uplink (`ignored:<route>/<event>`), or a simulated uplink
 * (`simulated_uplinks`). Like countUnroutable: not retried, a failure is logged.
 */
export async function countMessage(env, key, name) {
  try {
    await shard(env, key).tally(name);
  } catch (e) {
    console.log(JSON.stringify({ level: "ERROR", event: "message_not_counted", counter: name, error: String(e?.message ?? e) }));
  }
}

/** Whether `device_id` ever registered with (or flushed to) its shard: whether it has a ledger. */
export async function knows(env, device_id) {
  return shard(env, device_id).knows(device_id);
}

/**
 * The fleet's figures from the roll-up shards, one call per shard whatever the fleet
 * size, read at `now`: the SUMMED totals, `devices`, `simulated_uplinks`,
 * `rejected_by_code` and `ignored_events` (`{name: n}`, sorted by name),
 * `backfill_requests` (`{outcome: n}`, every one of BACKFILL_OUTCOMES),
 * `oldest_undelivered_at` (the earliest admission still waiting for the origin) and
 * `last_flush_at` (the newest flush any device made), ms since the epoch or null.
 * What /v1/stats (`fleetStats`) and /v1/metrics (metrics.js) answer, each in its form.
 */
export async function fleetFigures(env) {
  const parts = await Promise.all(Array.from({ length: SHARDS }, (_, i) => stub(env, i).summary()));
  const now = Date.now();
  const total = { devices: 0, simulated_uplinks: 0, ...Object.fromEntries(SUMMED.map((name) => [name, 0])) };
  let oldest = null;
  let last = null;
  const ignored = {};
  const rejected = {};
  for (const p of parts) {
    for (const name of Object.keys(total)) total[name] += p.totals[name] ?? 0;
    for (const [name, n] of Object.entries(p.totals)) {
      if (name.startsWith(IGNORED)) add(ignored, name.slice(IGNORED.length), n);
      if (name.startsWith(REJECTED)) add(rejected, name.slice(REJECTED.length), n);
    }
    if (p.oldest_undelivered_at !== null) oldest = Math.min(oldest ?? Infinity, p.oldest_undelivered_at);
    // A shard of an earlier version tells no flush time (undefined, not null).
    if ((p.last_flush_at ?? null) !== null) last = Math.max(last ?? -Infinity, p.last_flush_at);
  }
  const coded = sumOf(rejected);
  if (total.rejected > coded) add(rejected, NOT_RECORDED, total.rejected - coded);
  const backfill = Object.fromEntries(BACKFILL_OUTCOMES.map((outcome) => [outcome, total[`backfill_${outcome}`]]));
  return { now, ...total, rejected_by_code: sorted(rejected), ignored_events: sorted(ignored), backfill_requests: backfill, oldest_undelivered_at: oldest, last_flush_at: last };
}

function add(counts, name, n) {
  counts[name] = (counts[name] ?? 0) + n;
}

/** `counts` with its names in code point order (the order of SQLite's and of every reply). */
function sorted(counts) {
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => byCodePoint(a, b)));
}

/** The fleet's figures for GET /v1/stats (`fleetFigures`), as JSON. */
export async function fleetStats(env, cfg) {
  const f = await fleetFigures(env);
  return {
    devices: f.devices,
    ...Object.fromEntries(COUNTERS.map((name) => [name, f[name]])),
    // Rejected readings by code, adding up to `rejected`.
    rejected_by_code: f.rejected_by_code,
    pending_deliveries: f.pending_deliveries,
    oldest_undelivered_age_ms: f.oldest_undelivered_at === null ? null : Math.max(0, f.now - f.oldest_undelivered_at),
    delivered: f.delivered,
    failed_attempts: f.failed_attempts,
    ledger_rows: f.ledger_rows,
    refused_by_origin: f.refused_by_origin,
    // Raw uplinks kept undecoded now, for want of a device configuration.
    parked_uplinks: f.parked_uplinks,
    // Seqs missing now in the devices' sequence windows (their open gaps).
    missing_seqs: f.missing_seqs,
    // Messages that stored nothing by design, apart from the readings' counts.
    ignored_events: f.ignored_events,
    simulated_uplinks: f.simulated_uplinks,
    // The devices' history requests (backfill.js), by what became of them.
    backfill_requests: f.backfill_requests,
    // How fresh the figures are: the newest device flush the shards applied.
    last_flush_at: f.last_flush_at === null ? null : isoTime(f.last_flush_at),
    as_of: isoTime(f.now),
    stats_flush_ms: cfg.STATS_FLUSH_MS,
  };
}

/**
 * The columns of a device's health (GET /v1/devices/health, /v1/devices/{id}/health),
 * in order: the CSV header. Counters as in /v1/stats,
 * `missing_seqs` the open gaps now, three ratios (`healthOf`) and when the figures were
 * flushed.
 */
export const HEALTH_COUNTS = ["received", "unique", "duplicates_suppressed", "seq_reuses", "rejected", "parked", "missing_seqs", "recovered_seqs", "seq_resets"];
export const HEALTH_RATIOS = ["duplicate_ratio", "seq_reuse_ratio", "gap_ratio"];
export const HEALTH_COLUMNS = ["device_id", ...HEALTH_COUNTS, ...HEALTH_RATIOS, "flushed_at"];

/**
 * One device's health from its figures (figures.js `of`; a shard's row of an earlier
 * release has them as JSON text; null: zeros) and when they were written down. Ratios, rounded
 * to 6 decimals, null when their denominator is 0: `duplicate_ratio` =
 * duplicates_suppressed / received, `seq_reuse_ratio` = seq_reuses / received, `gap_ratio`
 * = missing_seqs / (unique + missing_seqs), the share of the readings it should have
 * delivered by now that are still missing.
 */
function healthOf({ device_id, figures = null, flushed_at = null }) {
  const f = figures === null ? {} : typeof figures === "string" ? JSON.parse(figures) : figures;
  const n = (name) => f[name] ?? 0;
  const row = { device_id, received: n("received"), unique: n("unique"), duplicates_suppressed: n("duplicates_suppressed"), seq_reuses: n("seq_reuses") };
  Object.assign(row, { rejected: n("rejected"), parked: n("parked"), missing_seqs: n("missing_seqs"), recovered_seqs: n("recovered_seqs"), seq_resets: n("seq_resets") });
  row.duplicate_ratio = ratio(row.duplicates_suppressed, row.received);
  row.seq_reuse_ratio = ratio(row.seq_reuses, row.received);
  row.gap_ratio = ratio(row.missing_seqs, row.unique + row.missing_seqs);
  row.flushed_at = flushed_at === null ? null : isoTime(flushed_at);
  return row;
}

const ratio = (part, whole) => (whole ? Math.round((part / whole) * 1e6) / 1e6 : null);

/** Groups one page asks at once, at most: 1 for the first round, then twice as many each round. */
const PAGE_GROUPS = 16;

/**
 * A page of rows from the groups' memory, group by group in group order, each group's
 * in device id order (by code point, as SQLite compares the ids): from the group of
 * `after` (the last device id of the previous page, "" for the first) on, asking
 * `ask(stub, {after, limit})` of 1, 2, 4, … PAGE_GROUPS groups at once until the
 * page is full (a large fleet fills it from one group; a small one reads every group
 * in a few rounds). Returns `{rows, next}` (`next`: the `after` of the next page, null
 * on the last).
 */
async function pageOfGroups(env, { after, limit }, ask) {
  const rows = [];
  const first = after === "" ? 0 : groupOf(after);
  let g = first;
  let width = 1;
  while (rows.length <= limit && g < GROUPS) {
    const asked = Array.from({ length: Math.min(width, GROUPS - g) }, (_, k) => g + k);
    // `after` is a device of the first group: the ones after it there, every one of the others.
    const pages = await Promise.all(asked.map((i) => ask(group(env, i), { after: i === first ? after : "", limit: limit + 1 - rows.length })));
    for (const p of pages) rows.push(...p);
    g += asked.length;
    width = Math.min(width * 2, PAGE_GROUPS);
  }
  const page = rows.slice(0, limit);
  return { rows: page, next: rows.length > limit ? page[page.length - 1].device_id : null };
}

/**
 * A page of the fleet's devices' health (`pageOfGroups`) from the groups' memory
 * (figures.js). Returns `{devices, next}`.
 */
export async function fleetHealth(env, page) {
  const { rows, next } = await pageOfGroups(env, page, (g, p) => g.healthPage(p));
  return { devices: rows.map(healthOf), next };
}

/**
 * A page of the fleet's bins (`pageOfGroups`; GET /v1/bins): every device's bin row
 * (bin-state.js `binsPage`) that passes `filter`, from the groups' memory: each bin's
 * state as its group held it when asked. Returns `{bins, next}`.
 */
export async function fleetBins(env, { filter, ...page }) {
  const { rows, next } = await pageOfGroups(env, page, (g, p) => g.binsPage({ ...p, filter }));
  return { bins: rows, next };
}

/**
 * One device's health from its group, for a device its shard knows (`knows`: no group
 * object is started for a device that never ingested), one name after another; from
 * its shard for a device whose group does not hold it yet (flushed by its own object,
 * of the release before groups); zeros for a device neither knows.
 */
export async function deviceHealth(env, names) {
  for (const device_id of names) {
    if (!(await knows(env, device_id))) continue;
    const row = (await group(env, groupOf(device_id)).healthOf({ device_id })) ?? (await shard(env, device_id).device(device_id));
    if (row) return healthOf(row);
  }
  return healthOf({ device_id: names[0] });
}

/** Orders strings by code point (SQLite's BINARY order of their UTF-8), not by UTF-16 unit. */
export function byCodePoint(a, b) {
  // Surrogates (astral code points) sort after U+E000…U+FFFF by code point.
  const unit = (c) => (c >= 0xd800 && c <= 0xdfff ? c + 0x2000 : c >= 0xe000 ? c - 0x800 : c);
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const d = unit(a.charCodeAt(i)) - unit(b.charCodeAt(i));
    if (d) return d;
  }
  return a.length - b.length;
}

function group(env, i) {
  return env.GROUPS.get(env.GROUPS.idFromName(groupAt(i)));
}

function shard(env, key) {
  return stub(env, shardOf(key));
}

function stub(env, i) {
  return env.FLEET.get(env.FLEET.idFromName(`rollup-${i}`));
}


// --- roll-up side ---------------------------------------------------------------------

/** One roll-up shard: the last figures of each of its devices, and their running totals. */
export class FleetObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS device_figures (
        device_id TEXT PRIMARY KEY,
        incarnation TEXT NOT NULL,
        version INTEGER NOT NULL,
        figures TEXT NOT NULL,            -- JSON: the SUMMED names, and \`labelled\` (absent before rejections had codes)
        oldest_undelivered_at INTEGER,
        flushed_at INTEGER NOT NULL
      );
      -- No index but the key: a flush writes each device's one row (an index on its times
      -- would write two more); summary() reads them all instead, for /v1/stats only.
      DROP INDEX IF EXISTS device_figures_oldest;
      DROP INDEX IF EXISTS device_figures_flushed;
      -- Each group's own figures (its ledger's backlog: ledger.js), as device_figures are a device's.
      CREATE TABLE IF NOT EXISTS group_figures (
        group_id TEXT PRIMARY KEY,
        incarnation TEXT NOT NULL,
        version INTEGER NOT NULL,
        figures TEXT NOT NULL,
        oldest_undelivered_at INTEGER,
        flushed_at INTEGER NOT NULL
      );
      -- The shard's running totals of group reports: one row, moved by every report (one row
      -- written, where a row per name would write one per figure that changed).
      CREATE TABLE IF NOT EXISTS group_totals (id INTEGER PRIMARY KEY CHECK (id = 0), totals TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS registered (device_id TEXT PRIMARY KEY, at INTEGER NOT NULL);`);
    // by_group: the device is kept by a group object (this release's `claim`), not its own.
    if (!this.sql.exec("PRAGMA table_info(registered)").toArray().some((c) => c.name === "by_group")) this.sql.exec("ALTER TABLE registered ADD COLUMN by_group INTEGER");
  }

  /**
   * Records that `device_id` has storage (before its first write). Idempotent.
   * Returns whether the shard knew the device already (`knows`).
   */
  register(device_id) {
    if (this.sql.exec("SELECT 1 FROM registered WHERE device_id = ? AND by_group = 1", device_id).toArray().length) {
      // A device object of the release before groups, still running during a deployment:
      // it must not start a second memory of a device its group keeps (it answers 503).
      throw new Error(`device ${JSON.stringify(device_id)} is kept by its group object (a later release): its own object may not write`);
    }
    const known = this.knows(device_id);
    this.sql.exec("INSERT OR IGNORE INTO registered (device_id, at) VALUES (?, ?)", device_id, Date.now());
    return known;
  }

  /** `claim` for each of `device_ids` (a group's devices new in one call), in one transaction: whether each was known. */
  claimMany(device_ids) {
    return this.ctx.storage.transactionSync(() => device_ids.map((id) => this.claim(id)));
  }

  /**
   * Records that `device_id`'s group keeps it (before its first write there), so that
   * its own object of the release before groups may no longer `register`. Returns
   * whether the shard knew the device already (`knows`).
   */
  claim(device_id) {
    const known = this.knows(device_id);
    this.sql.exec("INSERT INTO registered (device_id, at, by_group) VALUES (?, ?, 1) ON CONFLICT (device_id) DO UPDATE SET by_group = 1", device_id, Date.now());
    return known;
  }

  /** Whether `device_id` registered, or flushed figures (storage from before the registry). */
  knows(device_id) {
    return (
      this.sql.exec(
        "SELECT EXISTS (SELECT 1 FROM registered WHERE device_id = ?1) OR EXISTS (SELECT 1 FROM device_figures WHERE device_id = ?1) AS known",
        device_id,
      ).one().known === 1
    );
  }

  /**
   * Applies a device's flush if it is newer than the last one applied; returns
   * whether it was. A flush of a new incarnation (the device object's storage was
   * reset or restored) starts its versions anew: its cumulative counters add to
   * what the earlier incarnations counted, its backlog figures replace theirs. A
   * counter the flush does not name (a device of an earlier version, after a rollback,
   * has no `backfill_*`, no `labelled`) keeps its value: a counter never goes back.
   */
  apply(report) {
    return this.applyMany([report]) === 1;
  }

  /**
   * `apply` of one report, the totals' changes added to `deltas` (name → n) rather than
   * written: a flush of many devices writes each total once. Call it in a transaction.
   */
  applyOne({ device_id, incarnation, version, oldest_undelivered_at, labelled, ...figures }, deltas) {
    const row = this.sql.exec("SELECT incarnation, version, figures FROM device_figures WHERE device_id = ?", device_id).toArray()[0];
    const same = row?.incarnation === incarnation;
    if (same && row.version >= version) return false;
    const before = row ? JSON.parse(row.figures) : {};
    const kept = {};
    for (const name of SUMMED) {
      // Counters of an earlier incarnation stay counted; its gauges are replaced.
      const gauge = BACKLOG.includes(name);
      const was = same || gauge ? (before[name] ?? 0) : 0;
      kept[name] = figures[name] ?? (gauge ? 0 : was);
      const delta = kept[name] - was;
      if (delta) add(deltas, name, delta);
    }
    // Labelled counters, likewise. A row that a shard of an earlier version wrote has
    // none: that shard counted its device's rejections without codes (not_recorded).
    // The device's codes are added when they can all be rejections this flush adds;
    // else some were counted already, and the codes become the row's starting point
    // (adding them would take those rejections back out of not_recorded).
    let wasLabelled = same ? (before.labelled ?? {}) : {};
    if (same && !before.labelled && labelled && sumOf(labelled) > kept.rejected - (before.rejected ?? 0)) wasLabelled = labelled;
    kept.labelled = labelled ?? wasLabelled;
    for (const name of new Set([...Object.keys(kept.labelled), ...Object.keys(wasLabelled)])) {
      const delta = (kept.labelled[name] ?? 0) - (wasLabelled[name] ?? 0);
      if (delta) add(deltas, name, delta);
    }
    if (!row) add(deltas, "devices", 1);
    this.sql.exec(
      `INSERT INTO device_figures (device_id, incarnation, version, figures, oldest_undelivered_at, flushed_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (device_id) DO UPDATE SET incarnation = excluded.incarnation, version = excluded.version,
         figures = excluded.figures, oldest_undelivered_at = excluded.oldest_undelivered_at, flushed_at = excluded.flushed_at`,
      device_id,
      incarnation,
      version,
      JSON.stringify(kept),
      oldest_undelivered_at,
      Date.now(),
    );
    return true;
  }

  /**
   * Applies a group's report (fleet.js `flush`: the sums of its devices' counters,
   * `labelled` by code, its gauges and `devices`) if it is newer than the last applied
   * of the same incarnation, in one transaction; returns whether it was. A gauge
   * (GAUGES) replaces the report before it; a counter too, within an incarnation. A
   * report of a new incarnation (the group's storage was reset or restored) adds its
   * counters to what the earlier incarnations counted. The device rows of `supersedes`
   * (flushed by releases before group reports, and counted in the group's sums now) leave
   * the totals and are deleted. The totals move by the difference, in one row.
   */
  report({ group, incarnation, version, supersedes = [], oldest_undelivered_at = null, labelled = {}, ...figures }) {
    return this.ctx.storage.transactionSync(() => {
      const row = this.sql.exec("SELECT incarnation, version, figures FROM group_figures WHERE group_id = ?", group).toArray()[0];
      const same = row?.incarnation === incarnation;
      if (same && row.version >= version) return false;
      const before = row ? JSON.parse(row.figures) : {};
      const deltas = {};
      const kept = {};
      for (const name of [...SUMMED, "devices"]) {
        const gauge = GAUGES.includes(name);
        const was = same || gauge ? (before[name] ?? 0) : 0;
        kept[name] = figures[name] ?? (gauge ? 0 : was);
        add(deltas, name, kept[name] - was);
      }
      const wasLabelled = same ? (before.labelled ?? {}) : {};
      kept.labelled = labelled;
      for (const name of new Set([...Object.keys(labelled), ...Object.keys(wasLabelled)])) add(deltas, name, (labelled[name] ?? 0) - (wasLabelled[name] ?? 0));
      for (const device_id of supersedes) {
        const d = this.sql.exec("SELECT figures FROM device_figures WHERE device_id = ?", String(device_id)).toArray()[0];
        if (!d) continue;
        const f = JSON.parse(d.figures);
        for (const name of SUMMED) add(deltas, name, -(f[name] ?? 0));
        for (const [name, n] of Object.entries(f.labelled ?? {})) add(deltas, name, -n);
        add(deltas, "devices", -1);
        this.sql.exec("DELETE FROM device_figures WHERE device_id = ?", String(device_id));
        // Still known (`knows`), as kept by its group: storage from before the registry had no row here.
        this.sql.exec("INSERT INTO registered (device_id, at, by_group) VALUES (?, ?, 1) ON CONFLICT (device_id) DO UPDATE SET by_group = 1", String(device_id), Date.now());
      }
      this.sql.exec(
        `INSERT INTO group_figures (group_id, incarnation, version, figures, oldest_undelivered_at, flushed_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (group_id) DO UPDATE SET incarnation = excluded.incarnation, version = excluded.version,
           figures = excluded.figures, oldest_undelivered_at = excluded.oldest_undelivered_at, flushed_at = excluded.flushed_at`,
        group, incarnation, version, JSON.stringify(kept), oldest_undelivered_at, Date.now(),
      );
      const totals = this.groupTotals();
      for (const [name, n] of Object.entries(deltas)) if (n) add(totals, name, n);
      this.sql.exec("INSERT INTO group_totals (id, totals) VALUES (0, ?1) ON CONFLICT (id) DO UPDATE SET totals = ?1", JSON.stringify(totals));
      return true;
    });
  }

  /** The running totals of group reports (`report`), name → n. */
  groupTotals() {
    const row = this.sql.exec("SELECT totals FROM group_totals").toArray()[0];
    return row ? JSON.parse(row.totals) : {};
  }

  /**
   * Applies a group's own figures (its backlog gauges: BACKLOG names) if newer than the
   * last applied of the same incarnation; a gauge replaces the one before, so the
   * totals move by the difference. Returns whether it was applied.
   */
  applyGroup({ group, incarnation, version, oldest_undelivered_at, ...figures }) {
    return this.ctx.storage.transactionSync(() => {
      const row = this.sql.exec("SELECT incarnation, version, figures FROM group_figures WHERE group_id = ?", group).toArray()[0];
      if (row?.incarnation === incarnation && row.version >= version) return false;
      const before = row ? JSON.parse(row.figures) : {};
      const kept = {};
      for (const name of BACKLOG) {
        kept[name] = figures[name] ?? 0;
        const delta = kept[name] - (before[name] ?? 0);
        if (delta) this.sql.exec(COUNT, name, delta);
      }
      this.sql.exec(
        `INSERT INTO group_figures (group_id, incarnation, version, figures, oldest_undelivered_at, flushed_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (group_id) DO UPDATE SET incarnation = excluded.incarnation, version = excluded.version,
           figures = excluded.figures, oldest_undelivered_at = excluded.oldest_undelivered_at, flushed_at = excluded.flushed_at`,
        group, incarnation, version, JSON.stringify(kept), oldest_undelivered_at ?? null, Date.now(),
      );
      return true;
    });
  }

  /**
   * `apply` for each of `reports` (a group's flush), in one transaction, each report in
   * its own savepoint: one that cannot be applied (its write refused) keeps none of
   * its changes and holds back no other. Returns `{applied, failed}`: how many were
   * applied, and the devices that failed with their errors.
   */
  applyMany(reports) {
    return this.ctx.storage.transactionSync(() => {
      const deltas = {};
      const failed = [];
      let applied = 0;
      for (const r of reports) {
        const mine = {};
        try {
          if (this.ctx.storage.transactionSync(() => this.applyOne(r, mine))) applied += 1;
        } catch (e) {
          failed.push({ device_id: r.device_id, error: String(e?.message ?? e) });
          continue;
        }
        for (const [name, n] of Object.entries(mine)) add(deltas, name, n);
      }
      for (const [name, n] of Object.entries(deltas)) if (n) this.sql.exec(COUNT, name, n);
      return { applied, failed };
    });
  }

  /**
   * This shard's known devices (registered or flushed) after `after` in id order, at
   * most `limit`: `[{device_id, figures, flushed_at}]` (nulls: not flushed yet).
   */
  devices({ after, limit }) {
    return this.sql
      .exec(
        `SELECT k.device_id, f.figures, f.flushed_at
         FROM (SELECT device_id FROM registered WHERE device_id > ?1 UNION SELECT device_id FROM device_figures WHERE device_id > ?1 ORDER BY device_id LIMIT ?2) AS k
         LEFT JOIN device_figures AS f ON f.device_id = k.device_id ORDER BY k.device_id`,
        after,
        limit,
      )
      .toArray();
  }

  /** One known device's row as `devices` gives it, or null. */
  device(device_id) {
    if (!this.knows(device_id)) return null;
    const row = this.sql.exec("SELECT figures, flushed_at FROM device_figures WHERE device_id = ?", device_id).toArray()[0];
    return { device_id, figures: row?.figures ?? null, flushed_at: row?.flushed_at ?? null };
  }

  /**
   * `n` readings rejected before reaching any device: received and rejected; `codes`
   * (`{code: n}`, adding up to `n`) by code. The count comes first and the codes apart,
   * as for a device's `ingest`: a shard of an earlier version reads only `n`, and a
   * worker of an earlier version sends no codes (they show as not_recorded).
   */
  unroutable(n, codes = {}) {
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(COUNT, "received", n);
      this.sql.exec(COUNT, "rejected", n);
      for (const [code, k] of Object.entries(codes)) this.sql.exec(COUNT, REJECTED + String(code), k);
    });
  }

  /** Adds one to a counter of messages that store nothing (`countMessage`). */
  tally(name) {
    this.sql.exec(COUNT, String(name), 1);
  }

  /** This shard's totals, the oldest undelivered admission among its devices and its newest flush (a read of every device's row). */
  summary() {
    const totals = Object.fromEntries(this.sql.exec("SELECT name, value FROM counters").toArray().map((r) => [r.name, r.value]));
    for (const [name, n] of Object.entries(this.groupTotals())) add(totals, name, n);
    const { oldest, last } = this.sql
      .exec(
        `SELECT MIN(oldest) AS oldest, MAX(last) AS last FROM (
           SELECT MIN(oldest_undelivered_at) AS oldest, MAX(flushed_at) AS last FROM device_figures
           UNION ALL SELECT MIN(oldest_undelivered_at), MAX(flushed_at) FROM group_figures)`,
      )
      .one();
    return { totals, oldest_undelivered_at: oldest ?? null, last_flush_at: last ?? null };
  }
}
