// The figures of a group's devices: each device's cumulative counters (as the ingest
// reply and the audit line name them), its sequence window and that window's open
// missing seqs, and its bin state (bin-state.js: its fill tracker's bytes and its last
// collection). Held in memory by the group (one Figures per object instance) and
// written down by a checkpoint rather than with every burst: a row a burst would write
// is a billed row, and a device's figures change with every burst it sends.
//
// * A burst's counts are added after its transaction committed (`count`): a call that
//   stored nothing counts nothing.
// * The group's alarm writes a checkpoint at most once per STATS_FLUSH_MS while figures
//   changed (`checkpoint`): ONE row of `figure_log` holding every device changed since
//   the last one, whole, and `through`, the highest ledger rowid whose reading its
//   counts include. When the log holds LOG_ROWS rows it is compacted: every device's
//   figures written again in rows of ROW_DEVICES, the older rows deleted.
// * A new object instance (a restart, an eviction, a deployment) loads the figures:
//   the `devices` rows (what the release before checkpoints kept per device, and what a
//   hand-over imported), then the log in order, then the readings admitted after the
//   last checkpoint (rowid above its `through`, admitted since), each counted as a unique reading
//   (`seq_reuses` too for a conflict) and its seq fed to its device's window
//   (`window_seq`, written with the row) and its reading to its device's fill tracker
//   (`ts`, `fill_pct`, `key`). So a restart loses no reading's count, no window's seq
//   and no bin state; it loses what a checkpoint had not written and no row holds: the
//   duplicates, rejections and parked uplinks counted after the last checkpoint (at most
//   STATS_FLUSH_MS of them), and the late-arrival counts of that time's seqs.
import { feedFill } from "./bin-state.js";
import { guarded, SeqWindow } from "./core.js";
import { BACKFILL, byCodePoint, COUNTERS, REJECTED } from "./fleet.js";

/** Log rows that start a compaction. */
const LOG_ROWS = 64;
/** Devices one row of a compaction holds (a row's JSON stays well below SQLite's 2 MB). */
const ROW_DEVICES = 500;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS figure_log (
  id INTEGER PRIMARY KEY,
  through INTEGER NOT NULL,       -- the highest ledger rowid whose reading these counts include
  at INTEGER NOT NULL,            -- when it was written, ms since the epoch
  devices TEXT NOT NULL           -- JSON: device id → {counters, window: base64 or null, missing, fill: base64 or null, collected, newest_at}
);
`;

/** The Figures of the group whose storage `sql` is (for modules handed only `sql`: backfill.js). */
const bySql = new WeakMap();

/**
 * Counts one of the device's history requests' steps (`outcome`: one of fleet.js
 * BACKFILL_OUTCOMES) in the figures of the group whose storage `sql` is (backfill.js).
 */
export function countBackfill(sql, device_id, outcome) {
  bySql.get(sql)?.count(device_id, { [`backfill_${outcome}`]: 1 });
}

export class Figures {
  constructor(sql) {
    this.sql = sql;
    /**
     * device id → {counters: {name: n}, window: Uint8Array | null, missing: n, fill:
     * Uint8Array | null (its FillTracker's bytes), collected: its last collection
     * (bin-state.js `collectionSummary`) or null, newest_at: when its newest reading was
     * admitted (ms) or null}.
     */
    this.devices = new Map();
    /** Devices changed since the last checkpoint. */
    this.dirty = new Set();
    /** Changed since the last report to the shard (group.js). */
    this.changed = true;
    /** When the last checkpoint was written (ms), or null. */
    this.checkpointedAt = null;
    /** The last log row's `through` and `at` (`load`, `checkpoint`): what a restart would replay from (`replayedRow`). */
    this.through = 0;
    this.since = 0;
    /** Devices whose figures the shard may still hold one by one (fleet.js `flush`). */
    this.supersede = new Set();
    bySql.set(sql, this);
  }

  /**
   * Creates the log and loads the figures (see the top of the file); `cfg` (config.js)
   * gives the fill trackers' threshold. Call it once, after the group's schema exists.
   * Returns this.
   */
  load(cfg) {
    const sql = this.sql;
    sql.exec(SCHEMA);
    for (const r of sql.exec("SELECT device_id, counters, window, missing FROM devices")) {
      this.devices.set(r.device_id, { counters: JSON.parse(r.counters), window: r.window == null ? null : new Uint8Array(r.window), missing: r.missing, fill: null, collected: null, newest_at: null });
    }
    let through = null;
    /** Rows the log holds (a compaction starts at LOG_ROWS). */
    this.logRows = 0;
    for (const r of sql.exec("SELECT through, at, devices FROM figure_log ORDER BY id")) {
      this.logRows += 1;
      for (const [id, f] of Object.entries(JSON.parse(r.devices))) {
        // A log row of the release before bin states has no `fill` nor `collected`, nor one of before `newest_at`.
        const fill = f.fill == null ? null : fromBase64(f.fill);
        this.devices.set(id, { counters: f.counters, window: f.window === null ? null : fromBase64(f.window), missing: f.missing, fill, collected: f.collected ?? null, newest_at: f.newest_at ?? null });
      }
      through = r.through;
      this.checkpointedAt = r.at;
    }
    if (through === null) {
      // The first instance with a log: every row so far is counted in the devices' rows.
      this.through = maxRowid(sql);
      this.since = Date.now();
      sql.exec("INSERT INTO figure_log (through, at, devices) VALUES (?, ?, '{}')", this.through, this.since);
      this.logRows = 1;
    } else {
      this.through = through;
      this.since = this.checkpointedAt;
      this.replay(through, this.since, cfg);
    }
    return this;
  }

  /**
   * Whether a restart now would count the row `rowid` admitted at `admitted_at` (`replay`:
   * above the last checkpoint's `through`, admitted since it).
   */
  replayedRow(rowid, admitted_at) {
    return rowid > this.through && admitted_at >= this.since;
  }

  /**
   * Counts, and feeds to their windows and fill trackers, the readings admitted after
   * the checkpoint of `through` written `at` (`load`): rows above `through` admitted
   * since (a redriven or handed-over row is above it too, with its first admission's
   * time: counted then), in admission order (a redriven row's rowid is not: its time
   * is), each device's bin state through bin-state.js `feedFill`, as the bursts fed it.
   */
  replay(through, at, cfg) {
    const windows = new Map();
    const fed = new Map();
    const bursts = new Map(); // "device_id admitted_at burst_id" → its rank among the device's bursts of that time
    try {
      for (const r of this.sql.exec("SELECT device_id, verdict, window_seq, admitted_at, burst_id, key, seq, ts, fill_pct FROM readings WHERE rowid > ? AND admitted_at >= ? ORDER BY admitted_at, rowid", through, at)) {
        const f = this.devices.get(r.device_id);
        if (!f) continue;
        add(f.counters, "received", 1);
        add(f.counters, "unique", 1);
        if (r.verdict === "conflict") add(f.counters, "seq_reuses", 1);
        this.dirty.add(r.device_id);
        if (!fed.has(r.device_id)) fed.set(r.device_id, []);
        const burst = `${r.device_id} ${r.admitted_at} ${r.burst_id}`;
        if (!bursts.has(burst)) bursts.set(burst, bursts.size);
        fed.get(r.device_id).push({ ...r, burst: bursts.get(burst) });
        if (r.window_seq === null) continue;
        if (!windows.has(r.device_id)) windows.set(r.device_id, openWindow(f.window));
        guarded(() => windows.get(r.device_id).observe(r.window_seq, r.admitted_at));
      }
      for (const [id, w] of windows) this.setWindow(id, w);
      for (const [id, readings] of fed) {
        const f = this.devices.get(id);
        const { bytes, collected, newest_at } = feedFill(f, readings, cfg, { device_id: id });
        Object.assign(f, { fill: bytes, collected, newest_at });
      }
    } finally {
      for (const w of windows.values()) w.free();
    }
  }

  /** Whether the device has registered in this group. */
  has(device_id) {
    return this.devices.has(device_id);
  }

  /** Takes a device that just registered (its `devices` row committed) with what it brings. */
  add(device_id, { counters = {}, window = null } = {}) {
    const bytes = window?.bytes == null ? null : new Uint8Array(window.bytes);
    this.devices.set(device_id, { counters: { ...counters }, window: bytes, missing: window?.missing ?? 0, fill: null, collected: null, newest_at: null });
    this.touch(device_id);
  }

  /**
   * Adds `counts` (name → n) to the device's counters and, when the burst fed it, sets
   * its window (`window`: `{bytes, missing}`). Call it once the write it counts committed.
   */
  count(device_id, counts, window = null) {
    const f = this.devices.get(device_id);
    if (!f) return;
    let changed = false;
    for (const [name, n] of Object.entries(counts)) {
      if (!n) continue;
      add(f.counters, name, n);
      changed = true;
    }
    if (window) Object.assign(f, { window: new Uint8Array(window.bytes), missing: window.missing });
    if (changed || window) this.touch(device_id);
  }

  /**
   * Adds one burst's counts (`received`, `unique`, `duplicates_suppressed`,
   * `cross_path_duplicates`, `rejected`, `parked`, `seq_reuses`, `recovered_seqs`,
   * `seq_resets`) to the device's, with `rejectedCodes` (`{code: n}`, fleet.js `byCode`,
   * adding up to `counts.rejected`) as `rejected:<code>` when `rejected` is counted (a
   * retried call counts its rejections no second time), and its window.
   */
  countBurst(device_id, counts, rejectedCodes = {}, window = null) {
    const add = Object.fromEntries(COUNTERS.map((name) => [name, counts[name] ?? 0]));
    if (counts.rejected) for (const [code, n] of Object.entries(rejectedCodes)) add[REJECTED + code] = n;
    this.count(device_id, add, window);
  }

  /** The device's stored window's bytes, or null. */
  window(device_id) {
    return this.devices.get(device_id)?.window ?? null;
  }

  /** Sets the device's window from a SeqWindow (not freed). */
  setWindow(device_id, w) {
    const f = this.devices.get(device_id);
    Object.assign(f, { window: guarded(() => w.toBytes()), missing: guarded(() => w.totals()).missing });
  }

  /** The device's fill tracker's bytes (bin-state.js), or null. */
  fill(device_id) {
    return this.devices.get(device_id)?.fill ?? null;
  }

  /** The device's last collection (bin-state.js `collectionSummary`), or null. */
  collected(device_id) {
    return this.devices.get(device_id)?.collected ?? null;
  }

  /** When the device's newest reading was admitted (ms), or null. */
  newestAt(device_id) {
    return this.devices.get(device_id)?.newest_at ?? null;
  }

  /** Sets the device's bin state (bin-state.js `observeFill`'s `fill`). Call it once the write it follows committed. */
  setFill(device_id, { bytes, collected, newest_at }) {
    const f = this.devices.get(device_id);
    if (!f) return;
    Object.assign(f, { fill: new Uint8Array(bytes), collected, newest_at });
    this.touch(device_id);
  }

  /** Deletes the device's bin state (a reset: its next reading starts it afresh). Returns whether it had one. */
  forgetFill(device_id) {
    const f = this.devices.get(device_id);
    if (!f || (f.fill === null && f.collected === null)) return false;
    Object.assign(f, { fill: null, collected: null, newest_at: null });
    this.touch(device_id);
    return true;
  }

  /** Deletes the device's window (its missing seqs leave the figures). */
  forgetWindow(device_id) {
    const f = this.devices.get(device_id);
    if (!f) return;
    Object.assign(f, { window: null, missing: 0 });
    this.touch(device_id);
  }

  touch(device_id) {
    this.dirty.add(device_id);
    this.changed = true;
  }

  /**
   * Writes the checkpoint: one log row of the changed devices (compacted at LOG_ROWS).
   * Runs in its own transaction, synchronously, so that no burst commits between the
   * figures read and the `through` read.
   */
  checkpoint(storage, now = Date.now()) {
    if (!this.dirty.size) return;
    const sql = this.sql;
    let through;
    const rows = storage.transactionSync(() => {
      through = maxRowid(sql);
      // The changed devices, ROW_DEVICES a row: a reconnect storm can change every
      // device of the group within one STATS_FLUSH_MS.
      const dirty = [...this.dirty];
      const rowsOf = (ids) => Math.max(Math.ceil(ids.length / ROW_DEVICES), 1);
      if (this.logRows + rowsOf(dirty) < LOG_ROWS) {
        for (let i = 0; i < Math.max(dirty.length, 1); i += ROW_DEVICES) {
          sql.exec("INSERT INTO figure_log (through, at, devices) VALUES (?, ?, ?)", through, now, this.serialise(dirty.slice(i, i + ROW_DEVICES)));
        }
        return this.logRows + rowsOf(dirty);
      }
      const last = sql.exec("SELECT MAX(id) AS id FROM figure_log").one().id;
      const ids = [...this.devices.keys()];
      let written = 0;
      for (let i = 0; i < Math.max(ids.length, 1); i += ROW_DEVICES) {
        sql.exec("INSERT INTO figure_log (through, at, devices) VALUES (?, ?, ?)", through, now, this.serialise(ids.slice(i, i + ROW_DEVICES)));
        written += 1;
      }
      sql.exec("DELETE FROM figure_log WHERE id <= ?", last);
      return written;
    });
    this.logRows = rows;
    this.dirty.clear();
    this.checkpointedAt = now;
    this.through = through;
    this.since = now;
  }

  serialise(ids) {
    const out = {};
    for (const id of ids) {
      const f = this.devices.get(id);
      if (f) out[id] = { counters: f.counters, window: f.window === null ? null : toBase64(f.window), missing: f.missing, fill: f.fill === null ? null : toBase64(f.fill), collected: f.collected, newest_at: f.newest_at };
    }
    return JSON.stringify(out);
  }

  /**
   * The group's figures for its roll-up shard: the sums of every device's counters
   * (COUNTERS and BACKFILL names), `labelled` (those named `rejected:<code>`),
   * `missing_seqs` and `devices`, how many devices it holds.
   */
  totals() {
    const sums = Object.fromEntries([...COUNTERS, ...BACKFILL].map((name) => [name, 0]));
    const labelled = {};
    let missing = 0;
    for (const f of this.devices.values()) {
      for (const [name, n] of Object.entries(f.counters)) {
        if (name in sums) sums[name] += n;
        else if (name.startsWith(REJECTED)) add(labelled, name, n);
      }
      missing += f.missing;
    }
    return { ...sums, labelled, missing_seqs: missing, devices: this.devices.size };
  }

  /**
   * The device's figures for its health row: its counters by name (0 when never
   * counted), `missing_seqs`, and when they were last written down (`flushed_at`).
   * Null for a device this group does not hold.
   */
  of(device_id) {
    const f = this.devices.get(device_id);
    if (!f) return null;
    return { device_id, figures: { ...f.counters, missing_seqs: f.missing }, flushed_at: this.checkpointedAt };
  }

  /** The held devices after `after` in code point order, at most `limit`, as `of` gives them. */
  page(after, limit) {
    return [...this.devices.keys()]
      .filter((id) => byCodePoint(id, after) > 0)
      .sort(byCodePoint)
      .slice(0, limit)
      .map((id) => this.of(id));
  }
}

function add(counts, name, n) {
  counts[name] = (counts[name] ?? 0) + n;
}

function maxRowid(sql) {
  return sql.exec("SELECT COALESCE(MAX(rowid), 0) AS n FROM readings").one().n;
}

function openWindow(bytes) {
  if (bytes === null) return new SeqWindow();
  try {
    return guarded(() => SeqWindow.fromBytes(bytes));
  } catch {
    return new SeqWindow();
  }
}

function toBase64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function fromBase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}
