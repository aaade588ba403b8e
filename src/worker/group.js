// One Durable Object per group of devices: GROUPS groups, a device's group fixed by
// a hash of its id (`groupOf`). One SQLite database holds every table of the group's
// devices, keyed by device id; one alarm serves them all: retention, the roll-up
// flush and delivery to ORIGIN_URL, in batches of many devices' readings. Each device
// is still one writer (its calls run in this one object) with its own seen-set, ledger,
// configuration and sequence window (device.js: a Device per device, a bounded number
// of them kept in memory).
//
// Why groups: a Durable Object, a SQLite database, an alarm schedule and a flush per
// device made one workerd run out of SQLite heap at ~2 000 open devices, and made a
// reading cost ~5 Durable Object requests on Cloudflare. A group's rows are one
// database, its alarm one schedule, its flush one call.
//
// Why 256 groups: Cloudflare documents a soft limit of about 1 000 requests per second
// per object. 1 000 000 bins every 10 minutes are ~1 700 uplinks/s: ~6.5/s a group,
// with room for a reconnect storm of the whole fleet at once (~4 000 devices a group,
// each one burst). A local workerd holds every group open at once in ~100 MB of SQLite
// heap (of its 512 MiB). And 256 is a multiple of the 16 roll-up shards, so that a
// group's devices all flush to one shard (placement.js).
//
// Changing GROUPS moves most devices to another group, whose storage does not hold
// their state: it is not a setting. Doing it safely takes what the hand-over from the
// per-device objects of the release before groups does (`register`): a device's new group asks its
// old home for everything once, on first contact, before admitting anything.
import { DurableObject } from "cloudflare:workers";
import { config } from "./config.js";
import { logNothingStored } from "./core.js";
import { Device } from "./device.js";
import { prepareBackfill } from "./backfill.js";
import { deliver, nextDelivery, prepareOutbox } from "./delivery.js";
import { Figures } from "./figures.js";
import { addDevice, claimAtShard, flush, prepareFigures, registerWithShard } from "./fleet.js";
import { binsPage } from "./bin-state.js";
import { Backlog, retentionDue, retire } from "./ledger.js";
import { importDevice } from "./legacy.js";
import { groupName } from "./placement.js";
import { RecentKeys } from "./recent.js";

/**
 * Devices a group keeps in memory (their seen-sets, ~1.3 KB each at 40 keys); the least
 * recently used go first. More than a group of a 1 000 000-bin fleet holds (~3 900), so
 * a steady fleet rebuilds no seen-set from its rows.
 */
const CACHED_DEVICES = 8_192;

/**
 * How long a group remembers a burst it counted without a row of its own, for a
 * retried call of it (admission.js `countedWithoutRows`), and how many at most. The
 * worker's retry follows its call within the same request: the commit, the rest of
 * the call and the retry's wait for the object, seconds under load (ingest p99
 * 5–17 s in docs/benchmarks.md "Fleet"). The count bounds memory in a reconnect storm
 * (~270 bytes a burst): 512 a minute is ~8.5 duplicate-only bursts a second per group,
 * ~2 200/s over 256 groups, more than a 1 000 000-bin fleet sends uplinks.
 */
const COUNTED_FOR_MS = 60_000;
const COUNTED_BURSTS = 1_024;

/**
 * How long past its time an alarm the object still reports as set is taken as lost,
 * and set again (`schedule`). Lost: the object's own file says an alarm is set, the
 * runtime will never run it, and no uplink would re-arm it; so it is when a
 * self-hosted data directory is restored without workerd's index of pending alarms
 * (metadata.sqlite; docs/self-hosting.md "Self-hosting on workerd"). Not lost: an alarm the runtime
 * is retrying, which it reports at its first time: Cloudflare retries a throwing
 * alarm() up to 6 times, from 2 s doubling, 126 s in all (Durable Objects, "Alarms");
 * workerd the same, with up to 25 % jitter (src/workerd/server/alarm-scheduler.h).
 * Well past those; and alarm() is idempotent, so re-arming one the runtime still
 * held costs one more pass of it.
 */
const LOST_ALARM_MS = 5 * 60_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS readings (
  key TEXT PRIMARY KEY,           -- the reading's key: it begins with its device id (rowid: admission order)
  device_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  ts TEXT NOT NULL,
  fill_pct REAL NOT NULL,
  admitted_at INTEGER NOT NULL,
  burst_id TEXT,
  state TEXT NOT NULL,            -- stored (ledger only) | pending (to deliver; delivered once at or below the outbox
                                  -- cursor, delivery.js) | refused (by the origin, until a redrive) | delivered (handed over so)
  attempts INTEGER NOT NULL DEFAULT 0, -- a refused row's; a delivered one's are in deliveries
  next_attempt_at INTEGER,
  delivered_at INTEGER,           -- a row handed over delivered; else in deliveries
  last_error TEXT,                -- a refused row's
  batch_id TEXT,                  -- unused (rows handed over had one)
  window_seq INTEGER,             -- its seq in its device's sequence window, or NULL (figures.js replays it after a restart)
  frame TEXT,                     -- a reading keyed at its receive time: its radio frame (frames.js reframe)
  verdict TEXT NOT NULL DEFAULT 'admitted', -- admitted | conflict (admitted with a seq its seen-set held with other content)
  conflicts_with TEXT,            -- a conflict's: the key of the stored reading with its seq
  forgotten_at INTEGER,           -- forget(), reset(): NULL unless forgotten
  late_ms REAL,                   -- 0: its device's newest reading by ts when admitted; > 0: how much older than the newest; < 0: ahead, by how much after its admission (bin-state.js); NULL: stored before readings were marked
  collection TEXT                 -- JSON: the collection this reading confirmed, with its confirmed_at (bin-state.js), or NULL
);
-- A device's rows are found by its keys' prefix (stored.js OWN), the outbox and
-- retention read the table in rowid order: no other index to write with every reading.
CREATE INDEX IF NOT EXISTS readings_by_frame ON readings (device_id, frame) WHERE frame IS NOT NULL;
-- The live readings by time, for a datalog record of one of them (frames.js crossPath).
CREATE INDEX IF NOT EXISTS readings_live_by_ts ON readings (device_id, ts) WHERE frame IS NOT NULL;
-- Each device's bin and sensor (PUT /v1/devices/{id}/config): one row, or none.
CREATE TABLE IF NOT EXISTS config (
  device_id TEXT PRIMARY KEY,
  codec TEXT,                     -- NULL: chosen from the uplink
  bin_depth_mm INTEGER NOT NULL,
  offset_mm INTEGER NOT NULL,
  reporting_period_s INTEGER,
  application_port INTEGER,       -- the port the sensor was set to send on; NULL: the codec's own
  backfill INTEGER,               -- the device's own backfill switch; NULL: BACKFILL decides
  updated_at INTEGER NOT NULL     -- ms since the epoch, of the last change
);
-- Raw uplinks kept undecoded while their device has no usable configuration
-- (device_not_configured); decoded and admitted by the next PUT of its config.
CREATE TABLE IF NOT EXISTS parked (
  device_id TEXT NOT NULL,
  frame TEXT NOT NULL,            -- the radio frame's identity: a copy is kept once
  -- The plan's raw uplink (src/uplink/raw.rs), member by member (raw-uplinks.js parkedRaw):
  f_port INTEGER NOT NULL,
  payload BLOB NOT NULL,          -- its bytes as sent
  received_at TEXT NOT NULL,
  f_cnt INTEGER NOT NULL,
  codec_hint TEXT,
  config_hint TEXT NOT NULL,      -- JSON object
  rows INTEGER NOT NULL,          -- readings the uplink was counted as (received, parked)
  route TEXT NOT NULL,
  burst_id TEXT NOT NULL,
  parked_at INTEGER NOT NULL,
  PRIMARY KEY (device_id, frame)
);
CREATE INDEX IF NOT EXISTS parked_by_time ON parked (device_id, parked_at);
-- The application-counter reference of a device's codec (DF703): one row, or none.
CREATE TABLE IF NOT EXISTS codec_state (device_id TEXT PRIMARY KEY, counter_ref INTEGER NOT NULL);
-- How long after its slot a device's scheduled uplinks arrive (Tekelek: src/codec/readings.rs,
-- "The device's own phase"), in seconds: one row, or none (on the grid). Written when it moves.
CREATE TABLE IF NOT EXISTS schedule_phase (device_id TEXT PRIMARY KEY, phase_s INTEGER NOT NULL);
-- Each device's history of operator events (GET /v1/devices/{id}/history): key_forgotten,
-- device_reset, device_config; the last HISTORY_EVENTS of them. AUTOINCREMENT: an id is
-- never reused after trimming, so a page's cursor stays valid.
CREATE TABLE IF NOT EXISTS operator_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id TEXT NOT NULL,
  at INTEGER NOT NULL,            -- ms since the epoch
  event TEXT NOT NULL,
  detail TEXT NOT NULL            -- JSON object
);
CREATE INDEX IF NOT EXISTS operator_events_by_device ON operator_events (device_id, id);
`;

/** The stub of the group object holding `device_id`. */
export function group(env, device_id) {
  return env.GROUPS.get(env.GROUPS.idFromName(groupName(device_id)));
}

export class GroupObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    /** device id → Device, least recently used first. */
    this.devices = new Map();
    /** device id → its registration under way (`register`), so that it runs once. */
    this.registering = new Map();
    /** The group's backlog figures (ledger.js). */
    this.backlog = new Backlog(this.sql);
    /** Bursts counted without a row of their own, by device (admission.js `countedWithoutRows`). */
    this.counted = new RecentKeys(COUNTED_FOR_MS, COUNTED_BURSTS);
    /** Retention reads from this rowid on (ledger.js `retire`). */
    this.retentionFrom = 0;
    /** The devices' figures (figures.js), loaded by `prepare`. */
    this.figures = null;
    /** When the next checkpoint and report may run (ms): once per STATS_FLUSH_MS. */
    this.nextFlushAt = 0;
    /** The group's parked uplinks, counted at the next report (null: to count again: `parkedChanged`). */
    this.parkedUplinks = null;
    // A group none of whose devices ever wrote has no tables: the schema is written by
    // the first write, or here when it exists already.
    this.prepared = false;
    if (this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'readings'").toArray().length) this.prepare();
  }

  /** Creates the schema, once per object instance, before the first write. Idempotent. */
  prepare() {
    if (this.prepared) return;
    this.sql.exec(SCHEMA);
    // Storage of earlier releases: readings without a window seq (before checkpoints),
    // without their arrival and collection (before bin states).
    const columns = new Set(this.sql.exec("PRAGMA table_info(readings)").toArray().map((c) => c.name));
    if (!columns.has("window_seq")) this.sql.exec("ALTER TABLE readings ADD COLUMN window_seq INTEGER");
    if (!columns.has("late_ms")) this.sql.exec("ALTER TABLE readings ADD COLUMN late_ms REAL");
    if (!columns.has("collection")) this.sql.exec("ALTER TABLE readings ADD COLUMN collection TEXT");
    // Configurations without an application port (before it could be set).
    const configColumns = new Set(this.sql.exec("PRAGMA table_info(config)").toArray().map((c) => c.name));
    if (!configColumns.has("application_port")) this.sql.exec("ALTER TABLE config ADD COLUMN application_port INTEGER");
    // The readings that confirmed a collection (bin-state.js `collections`): an entry
    // only for those (in rowid order within a device), a row written per collection, not per reading.
    this.sql.exec("CREATE INDEX IF NOT EXISTS readings_collections ON readings (device_id) WHERE collection IS NOT NULL");
    prepareOutbox(this.sql);
    prepareBackfill(this.sql);
    prepareFigures(this.sql);
    this.figures = new Figures(this.sql).load(config(this.env));
    // The shard may hold any of them one by one (flushed by an earlier release): the
    // first reports name them all (fleet.js).
    this.figures.supersede = new Set(this.figures.devices.keys());
    this.prepared = true;
  }

  /**
   * `use(device)` on the Device of `device_id`, from memory (at most CACHED_DEVICES of
   * them, the least recently used dropped first) or new. A device with a call under way
   * is never dropped: there is one Device, one seen-set, per device.
   */
  async withDevice(device_id, use) {
    let d = this.devices.get(device_id);
    if (d) this.devices.delete(device_id);
    else d = new Device(this, String(device_id));
    this.devices.set(device_id, d);
    for (const [id, old] of this.devices) {
      if (this.devices.size <= CACHED_DEVICES) break;
      if (old.calls > 0) continue;
      this.devices.delete(id);
      old.drop();
    }
    d.calls += 1;
    try {
      return await use(d);
    } finally {
      d.calls -= 1;
    }
  }

  /**
   * Registers `device_id` with its roll-up shard and in this group before its first
   * write, so that a read of its ledger or configuration finds it (reads ask the
   * shard, and start no object for an unknown device). A device the shard knew
   * already has storage of its own from the release before groups: it is handed over first
   * (legacy.js). Returns null, or the failure to answer: nothing may be stored.
   */
  async register(device_id) {
    this.prepare();
    if (this.figures.has(device_id)) return null;
    if (!this.registering.has(device_id)) {
      const done = this.registerOnce(device_id).finally(() => this.registering.delete(device_id));
      this.registering.set(device_id, done);
    }
    return this.registering.get(device_id);
  }

  async registerOnce(device_id) {
    try {
      const known = await registerWithShard(this.env, device_id);
      const legacy = known && this.env.DEVICES ? this.env.DEVICES.get(this.env.DEVICES.idFromName(device_id)) : null;
      const earlier = legacy ? await legacy.handOver() : null;
      if (this.figures.has(device_id)) return null;
      this.ctx.storage.transactionSync(() => {
        const figures = earlier ? importDevice(this.sql, device_id, earlier.tables) : undefined;
        addDevice(this.sql, device_id, figures);
        this.figures.add(device_id, figures);
        try {
          // Its imported rows are counted in what it brought: a checkpoint past them, so
          // that a restart does not count them again (figures.js).
          if (earlier) this.figures.checkpoint(this.ctx.storage);
        } catch (e) {
          this.figures.devices.delete(device_id);
          throw e;
        }
      });
      if (earlier) this.figures.supersede.add(device_id);
      if (earlier?.tables.parked?.length) this.parkedChanged();
      // Its rows are counted again into the group's backlog.
      if (earlier) this.backlog = new Backlog(this.sql);
      if (earlier) {
        // Imported: the old object stops (a failure here leaves its alarm, which finds it handed over).
        await legacy.handedOver().catch((e) => console.log(JSON.stringify({ level: "WARN", event: "handed_over_not_marked", device_id, error: String(e?.message ?? e) })));
        const rows = earlier.tables.readings?.length ?? 0;
        console.log(JSON.stringify({ level: "INFO", event: "device_handed_over", device_id, readings: rows, parked: earlier.tables.parked?.length ?? 0 }));
        await this.schedule(config(this.env));
      }
    } catch (e) {
      return { ok: false, status: 503, code: "device_unavailable", message: `could not register the device with its roll-up shard: ${e?.message ?? e}` };
    }
    return null;
  }

  /**
   * Registers the devices of `device_ids` this group does not know yet with their
   * shard in one call (a request naming many new devices: a fleet's first round), those
   * the shard did not know in one transaction here. A device the shard knew (storage
   * of the release before groups) is left to `register`, as is every device when the
   * call fails: each then registers on its own, and answers for itself.
   */
  async registerNew(device_ids) {
    this.prepare();
    const fresh = [...new Set(device_ids)].filter((id) => !this.registering.has(id) && !this.figures.has(id));
    if (fresh.length < 2) return;
    let known;
    try {
      known = await claimAtShard(this.env, fresh);
    } catch {
      return;
    }
    const added = fresh.filter((_, i) => known[i] === false);
    this.ctx.storage.transactionSync(() => {
      for (const id of added) addDevice(this.sql, id);
    });
    for (const id of added) this.figures.add(id);
  }

  /** Takes over `device_id`'s storage of the release before groups now (its object's alarm asks: legacy.js). */
  async adopt(device_id) {
    const failed = await this.register(device_id);
    if (failed) throw new Error(failed.message);
  }

  // --- the device calls (index.js): each names its device -----------------------

  /**
   * Device `ingest` for each of `calls` (a request's devices in this group), one after
   * another: their answers, in order. A device whose call throws answers 503
   * `device_unavailable` (its readings not stored); the others are not held back by it.
   */
  ingestMany(calls) {
    return this.eachDevice(calls, (c) => this.ingest(c), (c) => {
      // As index.js when a whole call fails: a raw uplink's refused readings are its readings.
      const refused = c.refused ?? 0;
      logNothingStored({ device_id: c.device_id, route: c.route, burst_id: c.burst_id }, c.readings.length + (c.raw ? refused : 0), c.raw ? 0 : refused, "device_unavailable");
    });
  }

  /**
   * Device `configure` for each of `calls` (a bulk configuration's devices in this
   * group: index.js `configureAll`), one after another: their answers, in order. A
   * device whose call throws answers 503 `device_unavailable` (nothing stored for it);
   * the others are not held back by it.
   */
  async configureMany(calls) {
    const registering = this.registers(calls);
    const out = await this.eachDevice(calls, (c) => this.withDevice(c.device_id, (d) => d.configure(c)), () => {});
    if (registering) await this.configured();
    return out;
  }

  /**
   * `call(c)` for each of `calls`, in order, after registering their new devices with
   * their shard in one call (`registerNew`): the answers. One that throws is answered
   * 503 `device_unavailable`, after `failed(c)`.
   */
  async eachDevice(calls, call, failed) {
    await this.registerNew(calls.map((c) => c.device_id));
    const out = [];
    for (const c of calls) {
      try {
        out.push(await call(c));
      } catch (e) {
        failed(c);
        out.push({ ok: false, status: 503, code: "device_unavailable", message: String(e?.message ?? e) });
      }
    }
    return out;
  }

  ingest(args) {
    return this.withDevice(args.device_id, (d) => d.ingest(args));
  }

  preview(args) {
    return this.withDevice(args.device_id, (d) => d.preview(args));
  }

  async configure(args) {
    const registering = this.registers([args]);
    const out = await this.withDevice(args.device_id, (d) => d.configure(args));
    if (registering) await this.configured();
    return out;
  }

  /** Whether one of `calls` names a device this group has not registered (`register`). */
  registers(calls) {
    this.prepare();
    return calls.some((c) => !this.figures.has(c.device_id));
  }

  /**
   * After configuring devices it registered: they count in /v1/stats (`devices`) once
   * the group reports, which its alarm does (`schedule`); a configured device that
   * has not reported yet would otherwise wait for another write's alarm. Only then:
   * a configuration of known devices leaves the figures as they were, and an object
   * started afresh (whose backlog is to report anyway) need not report for it. The
   * configuration is stored already: a failure here is logged, not answered.
   */
  async configured() {
    try {
      await this.schedule(config(this.env));
    } catch (e) {
      console.log(JSON.stringify({ level: "ERROR", event: "schedule_failed", error: String(e?.message ?? e) }));
    }
  }

  configuration({ device_id }) {
    return this.withDevice(device_id, (d) => d.configuration());
  }

  list({ device_id, ...page }) {
    return this.withDevice(device_id, (d) => d.list(page));
  }

  gaps({ device_id }) {
    return this.withDevice(device_id, (d) => d.gaps());
  }

  binState({ device_id }) {
    return this.withDevice(device_id, (d) => d.state(config(this.env), Date.now()));
  }

  collections({ device_id, ...page }) {
    return this.withDevice(device_id, (d) => d.collections(page));
  }

  redrive({ device_id, keys }) {
    return this.withDevice(device_id, (d) => d.redrive({ keys }));
  }

  forget(args) {
    return this.withDevice(args.device_id, (d) => d.forget(args));
  }

  reset(args) {
    return this.withDevice(args.device_id, (d) => d.reset(args));
  }

  history({ device_id, ...page }) {
    return this.withDevice(device_id, (d) => d.history(page));
  }

  // --- the group's alarm ------------------------------------------------------------

  // --- the fleet's figures (fleet.js `fleetHealth`, `deviceHealth`, `fleetBins`) -----

  /** Health rows of this group's devices after `after` (figures.js `page`); none for a group that never wrote. */
  healthPage({ after, limit }) {
    return this.prepared ? this.figures.page(String(after), limit) : [];
  }

  /** Bin rows of this group's devices after `after` that pass `filter` (bin-state.js `binsPage`); none for a group that never wrote. */
  binsPage({ after, limit, filter }) {
    return this.prepared ? binsPage(this, { after: String(after), limit, filter }, config(this.env), Date.now()) : [];
  }

  /** One device's health row (figures.js `of`), or null when this group does not hold it. */
  healthOf({ device_id }) {
    return this.prepared ? this.figures.of(String(device_id)) : null;
  }

  // --- the group's alarm ------------------------------------------------------------

  /**
   * Deletes rows past retention; once per STATS_FLUSH_MS, writes the figures' checkpoint
   * and reports to the fleet roll-up (before delivering, which may wait on a slow
   * origin; what delivery changes goes with the next report); delivers what is due;
   * and re-arms itself.
   */
  async alarm() {
    this.prepare();
    const cfg = config(this.env);
    const cut = retire(this.ctx.storage, cfg, Date.now(), this.retentionFrom);
    this.retentionFrom = cut.from;
    this.backlog.add("ledger_rows", -cut.deleted);
    this.backlog.add("delivered", -cut.delivered);
    this.retentionMore = cut.more;
    if (Date.now() >= this.nextFlushAt && this.flushWanted()) {
      this.nextFlushAt = Date.now() + cfg.STATS_FLUSH_MS;
      this.figures.checkpoint(this.ctx.storage);
      await this.report();
    }
    if (cfg.ORIGIN_URL) await deliver(this.ctx.storage, cfg, this.backlog);
    await this.schedule(cfg);
  }

  /** Marks the parked uplinks changed (a write that parks or unparks one committed, or failed). */
  parkedChanged() {
    this.parkedUplinks = null;
    this.figures.changed = true;
  }

  /** Whether figures changed since the last checkpoint or report. */
  flushWanted() {
    return this.figures.dirty.size > 0 || this.figures.changed || this.backlog.dirty || this.figures.supersede.size > 0;
  }

  /**
   * Sends the group's report to its shard (fleet.js `flush`): the sums of its devices'
   * figures, its backlog and parked uplinks, and the devices whose rows the shard may
   * still hold one by one (`supersedes`). `version` rises with every
   * report of this storage (the time, or one past the last).
   */
  async report() {
    const { incarnation } = this.sql.exec("SELECT incarnation FROM flush").one();
    const device = this.figures.devices.keys().next().value;
    // The group's name, from any of its devices: an object woken by its alarm is not told its own.
    if (device === undefined) return;
    this.reportVersion = Math.max(Date.now(), (this.reportVersion ?? 0) + 1);
    // Every one in this report: its sums include them all, so the shard must take all
    // their rows out in the same transaction (a few tens of KB for a group of ~4 000).
    const supersedes = [...this.figures.supersede];
    this.parkedUplinks ??= this.sql.exec("SELECT COUNT(*) AS n FROM parked").one().n;
    const backlog = this.backlog.figures();
    const report = { group: groupName(device), incarnation, version: this.reportVersion, supersedes, ...this.figures.totals(), ...backlog, parked_uplinks: this.parkedUplinks };
    this.figures.changed = false;
    this.backlog.dirty = false;
    if (await flush(this.env, report)) {
      for (const id of supersedes) this.figures.supersede.delete(id);
    } else {
      this.figures.changed = true;
    }
  }

  /**
   * Arms the alarm for the earliest of: the next delivery (the open batch's retry,
   * or at once for rows waiting for a batch), the next retention expiry, the next
   * flush of changed figures to the fleet roll-up. An alarm set earlier is kept,
   * unless it is overdue by more than LOST_ALARM_MS: then it is set again, for now
   * at the earliest (the same time again would not reach workerd's scheduler).
   */
  async schedule(cfg) {
    if (!this.prepared) return;
    const now = Date.now();
    const retention = this.retentionMore ? now : retentionDue(this.sql, cfg, this.retentionFrom);
    const flushAt = this.flushWanted() ? Math.max(this.nextFlushAt, now) : null;
    const candidates = [cfg.ORIGIN_URL ? nextDelivery(this.sql, now, cfg) : null, retention, flushAt].filter(
      (t) => t !== null && t !== undefined,
    );
    if (!candidates.length) return;
    const next = Math.min(...candidates);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(next);
    else if (current < now - LOST_ALARM_MS) await this.ctx.storage.setAlarm(Math.max(next, now));
  }
}
