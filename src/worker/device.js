// One device's admission, decoding, parking, sequence window, configuration and
// operator controls, inside the group object that holds it (group.js: one Durable
// Object and one SQLite database per group of devices). Every statement here reads or
// writes only this device's rows (`device_id = ?`); the group owns the schema, the
// alarm (delivery, retention, the roll-up flush) and the cache of Device instances.
// The `readings` table is the source of truth: the embedded ledger, the outbox of
// deliveries to ORIGIN_URL and the record from which the in-memory seen-set is rebuilt.
import { config } from "./config.js";
import { ADMITTED, auditLine, CONFLICT, Deduplicator, DUPLICATE, guarded, HttpError, idempotencyKey, isoTime, logNothingStored, SeqWindow, wasmGeneration } from "./core.js";
import { backfillStep, backfillView, cancelBackfill } from "./backfill.js";
import { decodeRaw, decodedView, previewNotDecoded } from "./decode.js";
import { NEXT_ROWID, openBatch, outboxThrough } from "./delivery.js";
import { byCode, NOT_RECORDED, sumOf } from "./fleet.js";

// A key that expired from the seen-set and arrives again is admitted again (the
// core's TTL semantics), so its row is renewed rather than duplicated (`store`). A row
// still to deliver is renewed in place: it keeps its rowid, so its place in the outbox
// (and in an open batch: the reading, same key and content, is already on its way and
// the batch is sent unchanged); it takes the new admission's time, burst, verdict and
// `conflicts_with`. A row delivered, refused or ledger-only is replaced (delete and
// insert): a new rowid, after every row before it, so it is delivered afresh; rows in
// (admitted_at, rowid) order stay the admissions in the order the seen-set made them,
// which the cold rebuild relies on.
const INSERT = `INSERT INTO readings (rowid, key, device_id, seq, ts, fill_pct, admitted_at, burst_id, state, next_attempt_at, frame, verdict, conflicts_with, window_seq)
VALUES (${NEXT_ROWID}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const RENEW_IN_PLACE = `UPDATE readings SET admitted_at = ?, burst_id = ?, frame = ?, verdict = ?, conflicts_with = ?, forgotten_at = NULL WHERE rowid = ?`;

/** Writes of one burst's transaction, the first included, before it answers 503. */
const STORE_WRITES = 3;
/**
 * Raw uplinks one device keeps while it has no usable configuration: a sensor
 * reporting every 10 minutes fills it in about 69 days. Each takes ~0.35 KB on disk
 * for a 16-byte payload, ~0.8 KB for the largest (docs/benchmarks.md, `npm run bench:raw`).
 */
export const MAX_PARKED_PER_DEVICE = 10_000;
/** What a device needs before its raw uplinks can be decoded, as the PUT body names it. */
const CONFIG_CALL = "PUT /v1/devices/{device_id}/config";
/** Parked uplinks one configuration call decodes; a PUT of the same configuration continues. */
export const UNPARK_PER_CALL = 1_000;
/** Operator events one device's history keeps (`record`): the oldest go first. */
export const HISTORY_EVENTS = 1_000;
/**
 * A device's rows, found by its keys' prefix on the key's index (parameters: the
 * prefix `<device_id>:`, its end `<device_id>;`, the device id: `ownRows`): a key
 * begins with its device's id and a colon, and a device id that another begins with
 * is told apart by its column. No index of its own: each would be one more row
 * written per reading.
 */
const OWN = "key > ? AND key < ? AND device_id = ?";

/** The parameters of OWN for `device_id`. */
const ownRows = (device_id) => [`${device_id}:`, `${device_id};`, device_id];

/**
 * The rows whose keys the seen-set holds, newest first (parameters: OWN's, the TTL's start,
 * MAX_KEYS_PER_DEVICE): admitted within the TTL, not forgotten by an operator
 * (`forget`, `reset`), the newest MAX_KEYS_PER_DEVICE of them. What `seen` rebuilds from.
 */
const NEWEST_LIVE = `SELECT rowid AS id, key, admitted_at FROM readings WHERE ${OWN} AND admitted_at > ? AND forgotten_at IS NULL ORDER BY admitted_at DESC, rowid DESC LIMIT ?`;

export class Device {
  /** `group`: the GroupObject holding the device (its `sql`, `ctx`, `env`, schema and alarm). */
  constructor(group, device_id) {
    this.group = group;
    this.id = device_id;
    this.sql = group.sql;
    this.ctx = group.ctx;
    this.env = group.env;
    this.dedup = null;
    this.generation = -1;
    /** Calls of this device under way (group.js keeps such a device in memory). */
    this.calls = 0;
    /** A write of this call wants the checkpoint written once it committed (`store`, `checkpointNow`). */
    this.checkpointWanted = false;
  }

  /** Whether the group's schema exists: before it, every read answers empty. */
  get prepared() {
    return this.group.prepared;
  }

  /** Creates the group's schema (group.js `prepare`). Idempotent. */
  prepare() {
    this.group.prepare();
  }

  /**
   * Registers the device with its group and roll-up shard before its first write
   * (group.js `register`). Returns null, or the failure to answer: nothing may be stored.
   */
  register(device_id) {
    return this.group.register(device_id);
  }

  /** Arms the group's alarm for what waits (group.js `schedule`). */
  schedule(cfg) {
    return this.group.schedule(cfg);
  }

  /**
   * The seen-set, a cache in front of the `readings` table. On a cold start (or
   * after the Wasm instance was re-created, or a failed write) it is rebuilt from
   * the stored keys still within the TTL, each re-admitted at its own admission
   * time (`fromKeys`), so TTL and cap behave as if the object had never left
   * memory. Linear in the live keys; no SHA-256 (a key carries its digest). Why not
   * persist `snapshot()` bytes instead: to stay exact they would have to be
   * rewritten with every burst, inside the same transaction; the rows are written
   * anyway.
   */
  seen(now, cfg) {
    if (this.dedup && this.generation === wasmGeneration()) return this.dedup;
    this.drop();
    const generation = wasmGeneration();
    // The newest MAX_KEYS_PER_DEVICE rows within the TTL, replayed oldest first: what
    // the cap would have kept anyway, so the rebuild is linear in the keys it holds.
    // Rows an operator forgot are left out: their keys are admitted again.
    const rows = this.sql.exec(NEWEST_LIVE, ...ownRows(this.id), now - cfg.TTL_MS, cfg.MAX_KEYS_PER_DEVICE).toArray().reverse();
    const keys = rows.map((r) => r.key).join("\n");
    const times = Float64Array.from(rows, (r) => r.admitted_at);
    this.dedup = Deduplicator.fromKeys(keys, times, { ttlMs: cfg.TTL_MS, maxKeys: cfg.MAX_KEYS_PER_DEVICE });
    this.generation = generation;
    return this.dedup;
  }

  /** Forgets the seen-set (rebuilt from the rows on next use) and frees its memory. */
  drop() {
    if (this.dedup && this.generation === wasmGeneration()) this.dedup.free();
    this.dedup = null;
  }

  /**
   * Admits one device's keyed readings (validated and keyed once, in the worker's
   * stateless tier) and stores the admitted ones before answering. `refused`: how
   * many of this device's readings were rejected while routing, `refused_codes` the
   * same by code (`{code: n}`, adding up to `refused`); they count in this burst's
   * audit line. `refused` stays a count and the codes come apart because a deployment
   * runs two versions at once: a device object of an earlier version reads only the
   * count, and a worker of an earlier version sends no codes (counted as
   * `not_recorded`). Returns `{ok: true, verdicts, keys}` (`admit`), or `{ok: false,
   * status, code, message}` when nothing was stored. `attempt` > 0: the worker's
   * retry of a call that threw, which may have stored the burst (`recognise`).
   *
   * `raw`: the uplink's raw payload (the plan's `raw`) when none of its `refused`
   * readings has a fill level. It is decoded here with the device's configuration
   * (decode.js), and its samples take those readings' place; the answer then also
   * has one of `decoded: {codec, f_port, readings: [{index, key}], rejected}` (index:
   * the sample's place in the payload; `verdicts` are the readings'), `parked:
   * {code, message, copy}` (no usable configuration: the uplink is kept, `park`) or
   * `refused_as: {code, message}` (the codec does not read the payload: the
   * `refused` readings are rejected with that code).
   *
   * `downlink`: where a history request for this device would go (backfill.js
   * `downlinkTarget`), or null; after a decoded burst is stored, `askForMissing`.
   */
  async ingest({ device_id, readings: planned, refused = 0, refused_codes = null, raw = null, downlink = null, route, burst_id, attempt = 0 }) {
    const codes = refused_codes ?? (refused ? { [NOT_RECORDED]: refused } : {});
    this.prepare();
    const unregistered = await this.register(device_id);
    if (unregistered) {
      logNothingStored({ device_id, route, burst_id }, planned.length, refused, unregistered.code);
      return unregistered;
    }
    const context = { device_id, route, burst_id };
    // A native burst's seq is the sender's own: it feeds the sequence window.
    const windowSeqs = route === "readings" ? planned.map((r) => r.seq) : null;
    if (!raw) return this.admit(context, planned, codes, { attempt, windowSeqs });
    let decoded;
    try {
      decoded = this.decode(raw);
    } catch (e) {
      // The uplink's readings are not stored (the reply lists them in not_stored).
      return notAdmitted(context, refused, 0, e);
    }
    if (decoded.parked) return this.park(raw, refused, context, decoded.parked, attempt);
    const out = await this.admitDecoded(context, raw, decoded, refused, { attempt });
    if (out.ok) this.askForMissing(downlink, decoded, out, context);
    return out;
  }

  /**
   * After a stored decoded burst: the device's history request moves on (backfill.js
   * `backfillStep`): closed when answered or expired, sent again when due, or a new one
   * for a gap open too long. Its send goes on after the reply. Never throws: the burst
   * is stored; a failure here is logged (ERROR backfill_step_failed).
   */
  askForMissing(target, decoded, { recovered, at }, context) {
    try {
      const cfg = config(this.env);
      let gaps;
      const health = { at, recovered, gaps: () => (gaps ??= this.withWindow(context, (window) => guarded(() => window.gaps()))) };
      // The device's own switch matters only when a request could be sent at all.
      const enabled = cfg.BACKFILL && target ? (this.deviceConfig()?.backfill ?? null) : null;
      const device = { codec: decoded.codec, period: decoded.reporting_period_s, enabled };
      const sending = backfillStep(this.ctx.storage, cfg, Date.now(), { device, health, target, context });
      // Its outcome, recorded after the reply, is counted: flushed like a burst's change.
      if (sending) this.ctx.waitUntil?.(sending.then(() => this.scheduleAfterCommit(cfg, context)));
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
  async admitDecoded(context, raw, decoded, refused, { attempt = 0, unpark = null } = {}) {
    if (decoded.refused) {
      // Logged with the bytes: a person can still recover the reading (another codec).
      const { code, message, codec } = decoded.refused;
      console.log(JSON.stringify({ level: "WARN", event: "payload_not_decoded", ...context, codec, f_port: raw.f_port, payload: raw.payload, code, message }));
      const out = await this.admit(context, [], refused ? { [code]: refused } : {}, { attempt, unpark });
      return { ...out, refused_as: { code, message } };
    }
    // Also when nothing was stored: the reply lists the samples in not_stored, as the audit line counts them.
    const windowSeqs = decodedWindowSeqs(decoded, decoded.reporting_period_s);
    const out = await this.admit(context, decoded.readings, byCode(decoded.rejected), { attempt, unpark, counterRef: decoded.counter_ref, schedulePhase: decoded.schedule_phase_s, crossPath: true, windowSeqs });
    return { ...out, decoded: decodedView(raw, decoded, out.crossed) };
  }

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
   * worker never makes; `notes`: per reading, what its verdict links to, `notes`
   * below; `keys`: the keys as stored when `reframe` changed one), or `{ok: false,
   * status, code, message}` when nothing was stored.
   */
  async admit(context, planned, rejected, { attempt = 0, counterRef = null, schedulePhase = null, unpark = null, crossPath = false, windowSeqs = null } = {}) {
    const { device_id, burst_id } = context;
    const refused = sumOf(rejected);
    const cfg = config(this.env);
    const now = Date.now();
    let readings;
    let crossed = new Set();
    try {
      readings = this.reframe(device_id, planned, now, cfg);
      if (crossPath) ({ readings, crossed } = this.crossPath(device_id, readings, now, cfg));
    } catch (e) {
      return notAdmitted(context, planned.length, refused, e);
    }
    const keys = readings.map((r) => r.key).join("\n");
    const state = cfg.ORIGIN_URL ? "pending" : "stored";
    let out;
    let conflicts;
    let health = null;
    // A failed write is retried at once, STORE_WRITES writes in all (network servers
    // barely retry a 503). Each admits against the seen-set rebuilt from the rows
    // (the failure dropped it), so admitting and storing stay one synchronous step.
    for (let write = 1; ; write++) {
      try {
        out = guarded(() => this.seen(now, cfg).admitKeys(keys, now, refused, context));
      } catch (e) {
        this.drop();
        return notAdmitted(context, planned.length, refused, e);
      }
      if (attempt > 0) out = this.recognise(out, readings, context, now);
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
        this.ctx.storage.transactionSync(() => {
          const through = outboxThrough(this.sql);
          // The key stored last in this call per `device:seq:` prefix: the newest row of
          // that seq, so a burst of readings sharing one seq links each to the one before
          // it without scanning the seq's rows again (a scan per reading was quadratic).
          const newestOfSeq = new Map();
          readings.forEach((r, i) => {
            const verdict = out.verdicts[i];
            if (!ADMITTED.has(verdict) || out.forgotten?.has(i)) return;
            const prefix = seqPrefix(r.key);
            if (verdict === CONFLICT && !conflicts.has(i)) conflicts.set(i, newestOfSeq.get(prefix) ?? this.conflictOf(r.key));
            const conflictsWith = verdict === CONFLICT ? conflicts.get(i) : null;
            const windowSeq = windowSeqs?.[i] ?? null;
            this.store(r, { device_id, now, burst_id, state, verdict: verdict === CONFLICT ? "conflict" : "admitted", conflictsWith, through, windowSeq }, moved);
            newestOfSeq.set(prefix, r.key);
          });
          // A retried call counted already observed its seqs with the first one.
          health = windowSeqs && !out.counted ? this.observeSeqs(windowSeqs, out.verdicts, now, context) : null;
          if (counterRef !== null && counterRef !== undefined) {
            // An update of the one row when it moved (REPLACE would delete and insert: two rows written).
            this.sql.exec(
              "INSERT INTO codec_state (device_id, counter_ref) VALUES (?1, ?2) ON CONFLICT (device_id) DO UPDATE SET counter_ref = ?2 WHERE counter_ref IS NOT ?2",
              device_id,
              counterRef,
            );
          }
          if (schedulePhase !== null && schedulePhase !== undefined) {
            this.sql.exec(
              "INSERT INTO schedule_phase (device_id, phase_s) VALUES (?1, ?2) ON CONFLICT (device_id) DO UPDATE SET phase_s = ?2 WHERE phase_s IS NOT ?2",
              device_id,
              schedulePhase,
            );
          }
          if (unpark !== null) this.sql.exec("DELETE FROM parked WHERE device_id = ? AND frame = ?", device_id, unpark);
        });
        for (const [name, n] of Object.entries(moved)) this.group.backlog.add(name, n);
        if (unpark !== null) this.group.parkedChanged();
        this.group.figures.countBurst(device_id, health ? { ...counts, recovered_seqs: health.recovered.length, seq_resets: health.resets.length } : counts, rejected, health?.window);
        if (this.checkpointWanted) this.checkpointNow(context);
        if (!counts.unique) this.countedWithoutRows(burst_id);
        break;
      } catch (e) {
        // The admitted keys are not stored: forget the seen-set, whose rebuild from
        // the rows will not hold them, so the retry (this one's or the sender's) is admitted.
        this.checkpointWanted = false;
        this.drop();
        if (write < STORE_WRITES) {
          console.log(JSON.stringify({ level: "WARN", event: "storage_retry", device_id, burst_id, write, error: String(e?.message ?? e) }));
          continue;
        }
        // Nothing of the burst is stored or counted, replays included: as the reply says.
        const notStored = counts.unique + counts.duplicates_suppressed;
        const lost = { ...counts, unique: 0, duplicates_suppressed: 0, cross_path_duplicates: 0, not_stored: notStored, seq_reuses: 0, evicted_before_ttl: 0 };
        console.log(guarded(() => auditLine("burst_not_stored", lost, now, { ...context, error: "storage_unavailable" })));
        return { ok: false, status: 503, code: "storage_unavailable", message: `could not store the burst (${write} attempts): ${e.message}` };
      }
    }
    // The seen-set admitted keys an operator forgot after the earlier call stored them: its rebuild leaves them out.
    if (out.forgotten?.size) this.drop();
    // Read before anything is awaited: the rows as this burst left them.
    const notes = this.notes(readings, out.verdicts, conflicts);
    if (out.counted) console.log(JSON.stringify({ level: "INFO", event: "burst_already_stored", device_id, burst_id, attempt, readings: out.already }));
    if (out.line) console.log(out.line);
    if (health) logHealth(health, context);
    // Delivers the new rows right away (unless a batch is open: they wait for it);
    // also re-arms an alarm lost with a restart while a backlog waits.
    await this.scheduleAfterCommit(cfg, context);
    const recovered = health ? health.recovered.map((r) => r.seq) : [];
    return { ok: true, verdicts: out.verdicts, notes, keys: readings === planned ? undefined : readings.map((r) => r.key), counts: out.counts, crossed: out.crossed, recovered, at: now };
  }

  /**
   * Writes one admitted reading's row (inside the burst's transaction): a new row, or a
   * renewal (see INSERT above; `through`: the outbox cursor). Adds to `moved` what it
   * changes in the backlog.
   */
  store(r, { device_id, now, burst_id, state, verdict, conflictsWith, through, windowSeq = null }, moved) {
    const old = this.sql.exec("SELECT rowid, state, admitted_at FROM readings WHERE key = ?", r.key).toArray()[0];
    // A key admitted again: its one row stands for its last admission only. A restart
    // before the next checkpoint counts a row once, if it replays it (figures.js): the
    // admission it would not count wants the checkpoint now (`replayedRow`).
    const figures = this.group.figures;
    if (old?.state === "pending" && old.rowid > through) {
      this.sql.exec(RENEW_IN_PLACE, now, burst_id, r.frame ?? null, verdict, conflictsWith, old.rowid);
      // Renewed in place: counted by a replay only above the checkpoint, and then once for both admissions.
      if (!figures.replayedRow(old.rowid, now) || figures.replayedRow(old.rowid, old.admitted_at)) this.checkpointWanted = true;
      return;
    }
    // Replaced by a new row (replayed): the old admission's count is lost if a replay counted it.
    if (old && figures.replayedRow(old.rowid, old.admitted_at)) this.checkpointWanted = true;
    if (old) {
      this.sql.exec("DELETE FROM readings WHERE rowid = ?", old.rowid);
      moved.ledger_rows -= 1;
      if (old.state === "refused") moved.refused -= 1;
      else if (old.state !== "stored") moved.delivered -= 1;
    }
    this.sql.exec(INSERT, r.key, device_id, r.seq, r.ts, r.fill_pct, now, burst_id, state, state === "pending" ? now : null, r.frame ?? null, verdict, conflictsWith, windowSeq);
    moved.ledger_rows += 1;
    if (state === "pending") moved.pending += 1;
  }

  /**
   * What each reading's verdict links to, for the reply (index.js `outcome`): a
   * duplicate, `{first_admitted_at, first_burst_id}` from its key's row (`firstAdmission`);
   * a conflict, `{conflicts_with}` (`conflicts`: index → the key, or null); else null.
   * Reads only.
   */
  notes(readings, verdicts, conflicts = new Map()) {
    return readings.map((r, i) => {
      if (verdicts[i] === DUPLICATE) return this.firstAdmission(r.key);
      if (verdicts[i] === CONFLICT) return { conflicts_with: conflicts.get(i) ?? null };
      return null;
    });
  }

  /**
   * The admission a duplicate of `key` repeats: its row's admission time and burst
   * (a key re-admitted after its TTL: the latest admission, the one the seen-set
   * holds). Nulls when there is no row: the key's row was deleted by hand, or the
   * device's storage holds none yet (a simulated uplink's copy of its own reading).
   * Retention never deletes a row whose key the seen-set holds (RETENTION_MS ≥ TTL_MS).
   */
  firstAdmission(key) {
    const row = this.prepared ? this.sql.exec("SELECT admitted_at, burst_id FROM readings WHERE key = ? AND device_id = ?", key, this.id).toArray()[0] : undefined;
    return { first_admitted_at: row ? isoTime(row.admitted_at) : null, first_burst_id: row?.burst_id ?? null };
  }

  /**
   * The stored reading a conflict conflicts with: the key of the newest row (in
   * admission order) with the same device and seq and another key, found by the
   * key's `device_id:seq:` prefix on the primary key's index; null when none is
   * stored (the seen-set held the seq, its row was deleted by hand). A row an operator
   * forgot is not held, so not linked. Reads only.
   */
  conflictOf(key) {
    const prefix = seqPrefix(key);
    const end = `${prefix.slice(0, -1)};`; // ';' follows ':': every key with the prefix sorts before it
    const row = this.sql.exec("SELECT key FROM readings WHERE key > ? AND key < ? AND key <> ? AND device_id = ? AND forgotten_at IS NULL ORDER BY admitted_at DESC, rowid DESC LIMIT 1", prefix, end, key, this.id).toArray()[0];
    return row?.key ?? null;
  }

  /**
   * schedule() after a commit: the rows are stored, so a failure here must not answer
   * as if they were not; it is logged (ERROR schedule_failed). What it would have
   * armed waits for the next schedule(): a later burst's, or the end of an alarm
   * already armed.
   */
  async scheduleAfterCommit(cfg, { device_id, burst_id }) {
    try {
      await this.schedule(cfg);
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
  countedWithoutRows(burst_id) {
    this.group.counted.add(`${this.id}\n${burst_id}`, Date.now());
  }

  /** Whether `burst_id` was counted without a row of its own (`countedWithoutRows`). */
  countedAlready(burst_id) {
    return this.group.counted.has(`${this.id}\n${burst_id}`);
  }

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
  crossPath(device_id, readings, now, cfg) {
    const crossed = new Set();
    const tolerance = cfg.CROSS_PATH_TOLERANCE_MS;
    if (!this.prepared || tolerance === 0 || readings.every((r) => r.frame)) return { readings, crossed };
    const firsts = new Map(); // a datalog reading's own key → the index of its first copy
    const pairs = [];
    readings.forEach((r, i) => {
      if (r.frame || firsts.has(r.key)) return;
      firsts.set(r.key, i);
      const at = Date.parse(r.ts);
      const rows = this.sql.exec(
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
   * Feeds the device's sequence window with the seqs of one burst's admitted and
   * duplicate readings (`seqs[i]` null: reading i does not feed it; rejected readings
   * are not in the burst), at `now`, and stores it. Call it inside the burst's
   * transaction. Returns `{recovered: [{seq, delay_ms}], resets: [{from, to}]}`.
   */
  observeSeqs(seqs, verdicts, now, context) {
    const health = { recovered: [], resets: [] };
    const fed = seqs.map((seq, i) => (seq !== null && (ADMITTED.has(verdicts[i]) || verdicts[i] === DUPLICATE) ? seq : null)).filter((seq) => seq !== null);
    if (!fed.length) return health;
    this.withWindow(context, (window) => {
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
  withWindow(context, use) {
    const window = this.seqWindow(context);
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
  seqWindow(context = {}) {
    const bytes = this.prepared ? this.group.figures.window(this.id) : null;
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
  gaps() {
    return this.withWindow({}, (window) => ({
      highest: window.highest ?? null,
      gaps: window.gaps().map((g) => ({ from: g.from, to: g.to, first_noticed_at: isoTime(g.first_noticed_ms) })),
      totals: window.totals(),
      backfill: this.prepared ? backfillView(this.sql, this.id, isoTime) : { open: null, recent: [] },
    }));
  }

  /** `raw` decoded with the device's configuration, counter reference and schedule phase (decode.js `decodeRaw`). Reads only. */
  decode(raw) {
    return decodeRaw(raw, this.deviceConfig(), this.prepared ? this.counterRef() : null, this.prepared ? this.schedulePhase() : null);
  }

  /** The device's stored schedule phase in seconds (Tekelek), or null. */
  schedulePhase() {
    return this.sql.exec("SELECT phase_s FROM schedule_phase WHERE device_id = ?", this.id).toArray()[0]?.phase_s ?? null;
  }

  /** The codec's stored application-counter reference (DF703), or null. */
  counterRef() {
    return this.sql.exec("SELECT counter_ref FROM codec_state WHERE device_id = ?", this.id).toArray()[0]?.counter_ref ?? null;
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
  async park(raw, rows, context, why, attempt = 0) {
    const { device_id, burst_id, route } = context;
    const now = Date.now();
    let counts;
    let answer;
    for (let write = 1; ; write++) {
      counts = { received: rows, unique: 0, duplicates_suppressed: 0, rejected: 0, parked: 0, seq_reuses: 0, evicted_before_ttl: 0 };
      try {
        this.ctx.storage.transactionSync(() => {
          const kept = this.sql.exec("SELECT burst_id FROM parked WHERE device_id = ? AND frame = ?", device_id, raw.frame).toArray()[0];
          if (kept?.burst_id === burst_id || (attempt > 0 && this.countedAlready(burst_id))) {
            answer = kept?.burst_id === burst_id ? { ...why, copy: false } : { ...why, copy: true, message: `${why.message}; this burst was counted already` };
            counts.received = 0;
            return;
          }
          if (kept) {
            answer = { ...why, copy: true, message: `${why.message}; this is a copy of a frame kept already` };
            counts.duplicates_suppressed = rows;
          } else if (this.sql.exec("SELECT COUNT(*) AS n FROM parked WHERE device_id = ?", device_id).one().n >= MAX_PARKED_PER_DEVICE) {
            answer = { code: "parking_full", message: `device ${JSON.stringify(device_id)} keeps ${MAX_PARKED_PER_DEVICE} undecoded uplinks already: this one is rejected (its bytes are in the worker log); ${CONFIG_CALL} to decode them` };
            counts.rejected = rows;
          } else {
            this.sql.exec("INSERT INTO parked (device_id, frame, raw, rows, route, burst_id, parked_at) VALUES (?, ?, ?, ?, ?, ?, ?)", device_id, raw.frame, JSON.stringify(raw), rows, route, burst_id, now);
            answer = { ...why, copy: false };
            counts.parked = rows;
          }
        });
        if (counts.parked) this.group.parkedChanged();
        this.group.figures.countBurst(device_id, counts, { [answer.code]: rows });
        if (counts.received) this.countedWithoutRows(burst_id);
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
    if (answer.code === "parking_full") {
      console.log(JSON.stringify({ level: "WARN", event: "payload_not_parked", ...context, f_port: raw.f_port, payload: raw.payload, received_at: raw.received_at, code: answer.code }));
      return { ok: true, verdicts: [], refused_as: answer };
    }
    if (counts.received) {
      console.log(JSON.stringify({ level: "WARN", event: "uplink_parked", ...context, f_port: raw.f_port, bytes: raw.payload.length / 2, copy: answer.copy, code: answer.code, message: answer.message }));
      console.log(guarded(() => auditLine("burst_deduplicated", counts, now, context)));
    }
    await this.scheduleAfterCommit(config(this.env), context);
    return { ok: true, verdicts: [], parked: answer };
  }

  /**
   * Decodes and admits the parked uplinks the device's configuration now allows
   * (one its codec does not read stays parked, WARN parked_not_decoded), oldest
   * first, at most UNPARK_PER_CALL per call: each as a burst of its own under the
   * burst id its parking reply gave (a later duplicate names the burst the sender
   * saw; a retried call of that burst recognises the rows; its second audit line
   * counts the samples as received), its row deleted in that burst's transaction.
   * Returns what it did: `{uplinks, received, unique, duplicates_suppressed,
   * rejected, still_parked}`.
   */
  async unpark() {
    const done = { uplinks: 0, received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, still_parked: 0 };
    if (!this.prepared) return done;
    const rows = this.sql.exec("SELECT frame, raw, rows, route, burst_id FROM parked WHERE device_id = ? ORDER BY parked_at, rowid LIMIT ?", this.id, UNPARK_PER_CALL).toArray();
    for (const row of rows) {
      const raw = JSON.parse(row.raw);
      const context = { device_id: raw.device_id, route: row.route, burst_id: row.burst_id };
      let out;
      try {
        const decoded = this.decode(raw);
        if (decoded.parked) continue;
        if (decoded.refused) {
          // The codec now configured does not read it (the wrong sensor?): it stays
          // parked for a configuration that does, rather than rejected and deleted.
          const { code, message, codec } = decoded.refused;
          console.log(JSON.stringify({ level: "WARN", event: "parked_not_decoded", ...context, codec, f_port: raw.f_port, code, message }));
          continue;
        }
        console.log(JSON.stringify({ level: "INFO", event: "uplink_unparked", ...context }));
        out = await this.admitDecoded(context, raw, decoded, row.rows, { unpark: row.frame });
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
    done.still_parked = this.sql.exec("SELECT COUNT(*) AS n FROM parked WHERE device_id = ?", this.id).one().n;
    return done;
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
  reframe(device_id, planned, now, cfg) {
    if (!this.prepared || !planned.some((r) => r.frame)) return planned;
    // A receive time → the ts its frame's first copy was keyed with (undefined: none yet).
    const firsts = new Map();
    for (const r of planned) {
      if (!r.frame || firsts.get(r.ts) !== undefined) continue;
      const row = this.sql.exec("SELECT ts FROM readings WHERE device_id = ? AND frame = ? AND admitted_at > ? ORDER BY rowid LIMIT 1", device_id, r.frame, now - cfg.TTL_MS).toArray()[0];
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

  /**
   * What `ingest` would answer for The Things Stack's simulated uplink, storing and
   * counting nothing: a verdict per reading, DUPLICATE for a key the seen-set holds
   * (admitted within the TTL and not evicted by the cap; asked with `contains`,
   * which changes nothing) or earlier in the same uplink, else 0 (admitted). With
   * `raw`, the payload is decoded first, as `ingest` would (`decoded`, `parked` or
   * `refused_as` as there). `{ok: false, code, message}` when the device could not answer (its seen-set
   * could not be rebuilt from its rows: a real uplink would not be admitted either).
   */
  preview({ device_id, readings, raw = null }) {
    const cfg = config(this.env);
    const now = Date.now();
    const seen = new Set();
    try {
      let decoded = null;
      if (raw) {
        decoded = this.decode(raw);
        const undecoded = previewNotDecoded(decoded);
        if (undecoded) return undecoded;
        readings = decoded.readings;
      }
      const held = this.prepared ? guarded(() => this.seen(now, cfg)) : null;
      const keyed = this.reframe(device_id, readings, now, cfg);
      const { readings: checked, crossed } = raw ? this.crossPath(device_id, keyed, now, cfg) : { readings: keyed, crossed: new Set() };
      const verdicts = checked.map(({ key, seq, ts, fill_pct }) => {
        const duplicate = seen.has(key) || (held !== null && guarded(() => held.contains({ device_id, seq, ts, fill_pct }, now)));
        seen.add(key);
        return duplicate ? DUPLICATE : 0;
      });
      const crossedDuplicates = [...crossed].filter((i) => verdicts[i] === DUPLICATE);
      return { ok: true, verdicts, notes: this.notes(checked, verdicts), decoded: decoded && decodedView(raw, decoded, crossedDuplicates) };
    } catch (e) {
      this.drop();
      return { ok: false, code: e?.code ?? "internal_error", message: String(e?.message ?? e) };
    }
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
  recognise(out, readings, context, now) {
    const verdicts = Uint8Array.from(out.verdicts);
    const mine = new Set(); // a key twice in the burst: its first copy was admitted
    const recognised = new Map();
    const forgotten = new Set();
    let seqReuses = 0; // among the forgotten ones, admitted as a conflict by this call
    readings.forEach((r, i) => {
      if ((verdicts[i] !== DUPLICATE && !ADMITTED.has(verdicts[i])) || mine.has(r.key)) return;
      const row = this.sql.exec("SELECT burst_id, verdict, conflicts_with, forgotten_at FROM readings WHERE key = ? AND device_id = ?", r.key, this.id).toArray()[0];
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
    if (!already && !this.countedAlready(context.burst_id)) return out;
    const unique = out.counts.unique - forgotten.size;
    const counts = { ...out.counts, received: unique, unique, duplicates_suppressed: 0, rejected: 0, seq_reuses: out.counts.seq_reuses - seqReuses };
    const line = counts.received ? guarded(() => auditLine("burst_deduplicated", counts, now, context)) : null;
    return { verdicts, counts, line, already, recognised, forgotten, counted: true };
  }

  /**
   * Stores the device's configuration (validated by the worker) in place of the one
   * it had, registering the device first like a first write; a change is logged
   * (INFO `device_config`, `before` and `after`). The same values again change
   * nothing, `updated_at` included. Then decodes the uplinks parked while the device
   * had no usable configuration (`unpark`; a call with the same values continues
   * where the last one stopped). Returns `{ok: true, config, unparked}` (`config` as
   * `deviceConfig`, `unparked` as `unpark`), or `{ok: false, status, code,
   * message}` when nothing was stored.
   */
  async configure({ device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, backfill = null }) {
    this.prepare();
    const unregistered = await this.register(device_id);
    if (unregistered) {
      console.log(JSON.stringify({ level: "WARN", event: "device_config_not_stored", device_id, error: unregistered.code }));
      return unregistered;
    }
    const wanted = { device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, backfill };
    const before = this.deviceConfig();
    if (!before || Object.keys(wanted).some((k) => before[k] !== wanted[k])) {
      const now = Date.now();
      let after;
      let restarted = null;
      try {
        // The change and its history event in one transaction.
        this.ctx.storage.transactionSync(() => {
          this.sql.exec(
            "INSERT OR REPLACE INTO config (device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, backfill, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, backfill === null ? null : Number(backfill), now,
          );
          after = this.deviceConfig();
          this.record("device_config", { before, after }, now);
          const periodChanged = before && before.reporting_period_s !== reporting_period_s;
          const window = periodChanged ? this.restartWindow() : null;
          // A phase is a share of the period it was seen with.
          if (periodChanged) this.sql.exec("DELETE FROM schedule_phase WHERE device_id = ?", this.id);
          // Its open history request asked for slots of the old unit.
          restarted = window && { ...window, backfill_cancelled: cancelBackfill(this.sql, this.id, now) };
        });
      } catch (e) {
        console.log(JSON.stringify({ level: "WARN", event: "device_config_not_stored", device_id, error: String(e?.message ?? e) }));
        return { ok: false, status: 503, code: "storage_unavailable", message: `could not store the configuration: ${e?.message ?? e}` };
      }
      console.log(JSON.stringify({ level: "INFO", event: "device_config", device_id, before, after }));
      if (restarted) this.windowRestarted(restarted.backfill_cancelled, { device_id, reason: "reporting_period_changed" });
      if (restarted) {
        console.log(JSON.stringify({ level: "WARN", event: "seq_window_restarted", device_id, reason: "reporting_period_changed", from_period_s: before.reporting_period_s, to_period_s: reporting_period_s, ...restarted }));
        // Its missing seqs left the figures: flushed like a burst's change.
        await this.scheduleAfterCommit(config(this.env), { device_id, burst_id: null });
      }
    }
    const unparked = await this.unpark();
    if (unparked.uplinks) console.log(JSON.stringify({ level: "INFO", event: "parked_uplinks_decoded", device_id, ...unparked }));
    return { ok: true, config: this.deviceConfig(), unparked };
  }

  /**
   * What deleting the device's sequence window deletes, read inside the caller's
   * transaction: a reset of its memory, or a change of `reporting_period_s`, which
   * changes the unit of a clock-fed window's slots, so the old slots and the new are not
   * one sequence (a period halved would list every slot since 1970 as missing). Returns
   * `{highest, missing, gaps}` (`gaps`: how many were open), or null when there is no
   * window. The window is deleted by `windowRestarted`, once that transaction committed.
   */
  restartWindow() {
    if (this.group.figures.window(this.id) === null) return null;
    return this.withWindow({}, (window) => ({ highest: window.highest ?? null, missing: window.totals().missing, gaps: window.gaps().length }));
  }

  /**
   * Writes the group's checkpoint now (figures.js), for a change a restart's replay of
   * the readings since the last one would not restore. A failure is logged: the next
   * alarm writes it.
   */
  checkpointNow(context) {
    this.checkpointWanted = false;
    try {
      this.group.figures.checkpoint(this.ctx.storage);
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
  windowRestarted(backfillCancelled, context) {
    const figures = this.group.figures;
    figures.forgetWindow(this.id);
    if (backfillCancelled) figures.count(this.id, { backfill_cancelled: 1 });
    this.checkpointNow(context);
  }

  /** The stored configuration (GET /v1/devices/{id}/config), or null. Reads only. */
  configuration() {
    return this.deviceConfig();
  }

  /**
   * The device's configuration as stored: `{device_id, codec, bin_depth_mm,
   * offset_mm, reporting_period_s, backfill, updated_at}` (`codec`, `reporting_period_s` and `backfill`
   * may be null), or null when it has none. Creates no state.
   */
  deviceConfig() {
    if (!this.prepared) return null;
    const row = this.sql.exec("SELECT device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, backfill, updated_at FROM config WHERE device_id = ?", this.id).toArray()[0];
    return row ? { ...row, backfill: row.backfill === null ? null : row.backfill === 1, updated_at: isoTime(row.updated_at) } : null;
  }

  /** Ledger rows in admission order, `after` a rowid cursor. */
  list({ after = 0, limit = 100 }) {
    if (!this.prepared) return { readings: [], next: null };
    const rows = this.sql
      .exec(
        `SELECT rowid, key, seq, ts, fill_pct, admitted_at, verdict, conflicts_with, state, attempts, delivered_at, forgotten_at
         FROM readings WHERE ${OWN} AND rowid > ? ORDER BY rowid LIMIT ?`,
        ...ownRows(this.id),
        after,
        limit,
      )
      .toArray();
    const through = outboxThrough(this.sql);
    const open = openBatch(this.sql);
    // A pending row at or below the cursor was delivered: when and after how many
    // attempts, its batch's line in `deliveries` says (delivery.js).
    const delivery = (r) => {
      if (r.state !== "pending") return { delivery: r.state, attempts: r.attempts, delivered_at: r.delivered_at };
      if (r.rowid > through) {
        const inOpen = open && open.first_rowid !== null && r.rowid >= open.first_rowid && r.rowid <= open.last_rowid;
        return { delivery: "pending", attempts: inOpen ? open.attempts : 0, delivered_at: null };
      }
      const line = this.sql.exec("SELECT delivered_at, attempts FROM deliveries WHERE first_rowid <= ? ORDER BY first_rowid DESC LIMIT 1", r.rowid).toArray()[0];
      return { delivery: "delivered", attempts: line?.attempts ?? 1, delivered_at: line?.delivered_at ?? null };
    };
    return {
      readings: rows.map((r) => {
        const d = delivery(r);
        return {
          key: r.key,
          seq: r.seq,
          ts: r.ts,
          fill_pct: r.fill_pct,
          admitted_at: isoTime(r.admitted_at),
          verdict: r.verdict,
          conflicts_with: r.conflicts_with,
          delivery: d.delivery,
          attempts: d.attempts,
          delivered_at: d.delivered_at === null ? null : isoTime(d.delivered_at),
          forgotten_at: r.forgotten_at === null ? null : isoTime(r.forgotten_at),
        };
      }),
      next: rows.length === limit ? rows[rows.length - 1].rowid : null,
    };
  }

  /**
   * Re-drives readings the origin refused (parked, state `refused`): every one, or
   * those of `keys`, back to `pending`, out of any batch, due at once; they go out in
   * new batches, oldest first. Keeps their attempts and last error. Returns how many
   * moved. Creates no state for a device that never ingested.
   */
  async redrive({ keys } = {}) {
    if (!this.prepared) return { redriven: 0 };
    const cfg = config(this.env);
    const now = Date.now();
    let redriven = 0;
    this.ctx.storage.transactionSync(() => {
      // Each row written again after every other (a new rowid: the outbox cursor is past
      // its old one), oldest first, with its attempts and last error.
      const chosen = keys === undefined ? "" : " AND key = ?";
      const rows = [];
      for (const key of keys === undefined ? [undefined] : keys) {
        rows.push(...this.sql.exec(`SELECT rowid, * FROM readings WHERE ${OWN} AND state = 'refused'${chosen}`, ...ownRows(this.id), ...(key === undefined ? [] : [String(key)])).toArray());
      }
      const unique = [...new Map(rows.map((r) => [r.rowid, r])).values()].sort((a, b) => a.rowid - b.rowid);
      rows.length = 0;
      rows.push(...unique);
      for (const r of rows) {
        this.sql.exec("DELETE FROM readings WHERE rowid = ?", r.rowid);
        this.sql.exec(
          `INSERT INTO readings (rowid, key, device_id, seq, ts, fill_pct, admitted_at, burst_id, state, attempts, next_attempt_at, delivered_at, last_error, frame, verdict, conflicts_with, forgotten_at, window_seq)
           VALUES (${NEXT_ROWID}, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, NULL, ?, ?, ?, ?, ?, ?)`,
          // Its window seq too: a restart before the next checkpoint replays it (figures.js).
          r.key, r.device_id, r.seq, r.ts, r.fill_pct, r.admitted_at, r.burst_id, r.attempts, now, r.last_error, r.frame, r.verdict, r.conflicts_with, r.forgotten_at, r.window_seq,
        );
      }
      redriven = rows.length;
    });
    this.group.backlog.refused(-redriven);
    if (redriven && cfg.ORIGIN_URL) await this.schedule(cfg);
    return { redriven };
  }

  /**
   * Forgets one key (POST /v1/devices/{id}/forget): its row is marked forgotten and
   * the seen-set dropped, so the rebuild (`seen`) leaves the key out and the same
   * reading sent again is admitted again (its row replaced, as after its TTL; a row in
   * an open batch stays in it). The row itself stays: the ledger and any pending
   * delivery are unchanged. `held`: whether the seen-set held the key (admitted within
   * the TTL, not forgotten, among the newest MAX_KEYS_PER_DEVICE). A key forgotten
   * already keeps its first `forgotten_at`. Recorded in the history in the same
   * transaction, logged WARN `key_forgotten`. Returns `{ok: true, key, held,
   * forgotten_at}`, or `{ok: false, status, code, message}` (404 `unknown_key`: no
   * ledger row has the key; 503 `storage_unavailable`), nothing changed.
   */
  forget({ device_id, key }) {
    const cfg = config(this.env);
    const now = Date.now();
    const row = this.prepared ? this.sql.exec("SELECT rowid, seq, admitted_at, forgotten_at FROM readings WHERE key = ? AND device_id = ?", key, this.id).toArray()[0] : undefined;
    if (!row) {
      return { ok: false, status: 404, code: "unknown_key", message: `device ${JSON.stringify(device_id)} has no ledger row with the key ${JSON.stringify(key)} (never admitted, or deleted by retention)` };
    }
    let detail;
    try {
      this.ctx.storage.transactionSync(() => {
        const held = row.forgotten_at === null && this.sql.exec(`SELECT 1 FROM (${NEWEST_LIVE}) WHERE id = ?`, ...ownRows(this.id), now - cfg.TTL_MS, cfg.MAX_KEYS_PER_DEVICE, row.rowid).toArray().length > 0;
        const at = row.forgotten_at ?? now;
        this.sql.exec("UPDATE readings SET forgotten_at = ? WHERE rowid = ?", at, row.rowid);
        detail = { key, seq: row.seq, admitted_at: isoTime(row.admitted_at), held, forgotten_at: isoTime(at) };
        this.record("key_forgotten", detail, now);
      });
    } catch (e) {
      return operatorNotStored("key_forgotten", device_id, e);
    }
    this.drop();
    console.log(JSON.stringify({ level: "WARN", event: "key_forgotten", device_id, ...detail }));
    return { ok: true, ...detail };
  }

  /**
   * Resets the device's memory (POST /v1/devices/{id}/reset), for a re-commissioned
   * sensor: every key is forgotten (as `forget`), and its sequence window and codec
   * counter reference are deleted, so its next readings start a new window and a new
   * counter. Kept: the ledger rows and the outbox (pending deliveries go on), the
   * configuration, parked uplinks, counters, history. Recorded in the history in the
   * same transaction, logged WARN `device_reset`. Returns `{ok: true, forgotten,
   * held, seq_window, counter_ref, reset_at}`: ledger rows newly forgotten, how many of
   * their keys the seen-set held, the window deleted (`{highest, missing, gaps}`, or
   * null when there was none) and the counter reference deleted (or null); or `{ok:
   * false, status: 503, code: "storage_unavailable"}`, nothing changed.
   */
  async reset({ device_id }) {
    const cfg = config(this.env);
    const now = Date.now();
    this.prepare(); // a known device has its storage already: this only brings older storage up to date
    let detail;
    try {
      this.ctx.storage.transactionSync(() => {
        const held = this.sql.exec(`SELECT COUNT(*) AS n FROM (${NEWEST_LIVE})`, ...ownRows(this.id), now - cfg.TTL_MS, cfg.MAX_KEYS_PER_DEVICE).one().n;
        const forgotten = this.sql.exec(`UPDATE readings SET forgotten_at = ? WHERE ${OWN} AND forgotten_at IS NULL`, now, ...ownRows(this.id)).rowsWritten;
        const seq_window = this.restartWindow();
        const counter_ref = this.counterRef();
        this.sql.exec("DELETE FROM codec_state WHERE device_id = ?", this.id);
        this.sql.exec("DELETE FROM schedule_phase WHERE device_id = ?", this.id);
        // A history request for the forgotten window's gaps is closed (backfill.js).
        const backfill_cancelled = cancelBackfill(this.sql, this.id, now);
        detail = { forgotten, held, seq_window, counter_ref, backfill_cancelled, reset_at: isoTime(now) };
        this.record("device_reset", detail, now);
      });
    } catch (e) {
      return operatorNotStored("device_reset", device_id, e);
    }
    this.drop();
    if (detail.seq_window) this.windowRestarted(detail.backfill_cancelled, { device_id, reason: "device_reset" });
    else if (detail.backfill_cancelled) this.group.figures.count(this.id, { backfill_cancelled: 1 });
    console.log(JSON.stringify({ level: "WARN", event: "device_reset", device_id, ...detail }));
    if (detail.seq_window || detail.backfill_cancelled) await this.scheduleAfterCommit(cfg, { device_id, burst_id: null });
    return { ok: true, ...detail };
  }

  /**
   * Adds an operator event to the device's history (`at`, ms) and keeps the last
   * HISTORY_EVENTS. Call it inside the transaction that makes the change.
   */
  record(event, detail, at) {
    this.sql.exec("INSERT INTO operator_events (device_id, at, event, detail) VALUES (?, ?, ?, ?)", this.id, at, event, JSON.stringify(detail));
    // The device's events from its HISTORY_EVENTS-th newest back (none, mostly).
    this.sql.exec(
      "DELETE FROM operator_events WHERE device_id = ?1 AND id <= (SELECT id FROM operator_events WHERE device_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
      this.id,
      HISTORY_EVENTS,
    );
  }

  /** The device's history (GET /v1/devices/{id}/history), oldest first, `after` an id cursor. Reads only. */
  history({ after = 0, limit = 100 }) {
    if (!this.prepared) return { events: [], next: null };
    const rows = this.sql.exec("SELECT id, at, event, detail FROM operator_events WHERE device_id = ? AND id > ? ORDER BY id LIMIT ?", this.id, after, limit).toArray();
    return {
      events: rows.map((r) => ({ at: isoTime(r.at), event: r.event, detail: JSON.parse(r.detail) })),
      next: rows.length === limit ? rows[rows.length - 1].id : null,
    };
  }
}

/** The answer to an operator call whose transaction failed (nothing changed), logged WARN `<event>_not_stored`. */
function operatorNotStored(event, device_id, e) {
  console.log(JSON.stringify({ level: "WARN", event: `${event}_not_stored`, device_id, error: String(e?.message ?? e) }));
  return { ok: false, status: 503, code: "storage_unavailable", message: `could not store the change: ${e?.message ?? e}; nothing changed, retry` };
}

/**
 * The answer to a burst of which nothing was admitted (so nothing stored: `e` came
 * before the write), after its audit line.
 */
function notAdmitted(context, readings, refused, e) {
  const answer =
    e instanceof HttpError
      ? { ok: false, status: e.status, code: e.code, message: e.message }
      : { ok: false, status: 500, code: e?.code ?? "internal_error", message: String(e?.message ?? e) };
  logNothingStored(context, readings, refused, answer.code);
  return answer;
}

/**
 * Which decoded readings feed the device's sequence window, and with what: per reading,
 * its window seq or null. A seq that is a real counter feeds it: the DF703's
 * application counter (its `seq`, unwrapped by the core), and a reading dated by the
 * device's clock (a history or datalog record: the reading without a `frame`, its
 * `seq` the device time in seconds) as its slot `floor(seq / reporting_period_s)`,
 * only when the device has a reporting period (else one slot per second would list
 * every unsent second as missing). A seq that is the LoRaWAN frame counter (it
 * restarts on every rejoin) or a receive-time slot (Tekelek) does not.
 */
export function decodedWindowSeqs(decoded, period) {
  return decoded.readings.map((r) => {
    if (decoded.codec === "dingtek/df703") return r.seq;
    if (r.frame === null && period) return Math.floor(r.seq / period);
    return null;
  });
}

/** Logs a burst's late arrivals (INFO gap_recovered, the longest delay) and resets (WARN seq_reset, one each). */
function logHealth({ recovered, resets }, { device_id, route, burst_id }) {
  if (recovered.length) {
    const seqs = recovered.map((r) => r.seq);
    const delay_ms = Math.max(...recovered.map((r) => r.delay_ms));
    console.log(JSON.stringify({ level: "INFO", event: "gap_recovered", device_id, route, burst_id, recovered: seqs.length, from: Math.min(...seqs), to: Math.max(...seqs), delay_ms }));
  }
  for (const { from, to } of resets) console.log(JSON.stringify({ level: "WARN", event: "seq_reset", device_id, route, burst_id, from, to }));
}

/** The `device_id:seq:` part of a key: what every key of one device and seq begins with. */
function seqPrefix(key) {
  return key.slice(0, key.lastIndexOf(":") + 1);
}
