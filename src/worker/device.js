// One device inside the group object that holds it (group.js: one Durable Object and
// one SQLite database per group of devices): the Device the group keeps in memory, its
// seen-set (`seen`), and its calls, each made by the file of its job: ingest.js (an
// ingest call), admission.js (readings admitted and stored), frames.js (the frame
// rules), window.js (the sequence window), raw-uplinks.js (decoding and parking),
// preview.js (a simulated uplink), device-config.js (its configuration), bin-state.js
// (its fill by device time), operator.js (the operator controls), and stored.js (the reads several of them share). Each takes
// the Device as its first argument; none imports this file. Every statement reads or
// writes only this device's rows (`device_id = ?`); the group owns the schema, the
// alarm (delivery, retention, the roll-up flush) and the cache of Device instances.
// The `readings` table is the source of truth: the embedded ledger, the outbox of
// deliveries to ORIGIN_URL and the record from which the in-memory seen-set is rebuilt.
import { binState, collections } from "./bin-state.js";
import { Deduplicator, wasmGeneration } from "./core.js";
import { configuration, configure } from "./device-config.js";
import { ingest } from "./ingest.js";
import { forget, history, list, redrive, reset } from "./operator.js";
import { preview } from "./preview.js";
import { NEWEST_LIVE, ownRows } from "./stored.js";
import { gaps, observeSeqs } from "./window.js";

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

  // --- its calls (group.js `withDevice`), each made by the file of its job ---------

  /** Admits and stores one device's share of an ingest call (ingest.js `ingest`). */
  ingest(call) {
    return ingest(this, call);
  }

  /** What `ingest` would answer for a simulated uplink, storing nothing (preview.js `preview`). */
  preview(call) {
    return preview(this, call);
  }

  /** Stores the device's configuration, then decodes its parked uplinks (device-config.js `configure`). */
  configure(call) {
    return configure(this, call);
  }

  /** The stored configuration, or null (device-config.js `configuration`). */
  configuration() {
    return configuration(this);
  }

  /**
   * Feeds the sequence window with a burst's seqs, in its transaction (window.js
   * `observeSeqs`). Called as a method (admission.js) so that the bench's no-window
   * worker (benches/no-window-worker.js) can leave it out.
   */
  observeSeqs(seqs, verdicts, now, context) {
    return observeSeqs(this, seqs, verdicts, now, context);
  }

  /** The device's sequence health (window.js `gaps`). */
  gaps() {
    return gaps(this);
  }

  /** Its bin state now (bin-state.js `binState`). */
  state(cfg, now) {
    return binState(this, cfg, now);
  }

  /** The collections its readings confirmed, in that order (bin-state.js `collections`). */
  collections(page) {
    return collections(this, page);
  }

  /** Ledger rows in admission order (operator.js `list`). */
  list(page) {
    return list(this, page);
  }

  /** The readings the origin refused, back to `pending` (operator.js `redrive`). */
  redrive(which) {
    return redrive(this, which);
  }

  /** Forgets one key (operator.js `forget`). */
  forget(call) {
    return forget(this, call);
  }

  /** Resets the device's memory (operator.js `reset`). */
  reset(call) {
    return reset(this, call);
  }

  /** The device's history of operator events (operator.js `history`). */
  history(page) {
    return history(this, page);
  }
}
