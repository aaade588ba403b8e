// `npm run bench:cost`: what Cloudflare bills per uplink (issue 21, "Cost per reading"),
// counted in workerd for a steady fleet, and the monthly bill of that fleet from
// Cloudflare's published prices.
//
// The fleet: --fleet bins (1 000 000), each reporting every --period-s (600 s): F/P
// uplinks/s in all, F/P/GROUPS per group object (src/worker/placement.js; 6.5/s for the
// defaults). The bench drives --groups K of the GROUPS groups (4, picked with the seed)
// at exactly that per-group rate, in real time: each group's uplinks evenly spaced, one
// device each, the groups' schedules offset from one another, every uplink its own
// POST sent at its time whatever the replies before it do (as sensors do). Device ids
// are picked (seeded) so that `groupOf(id)` falls in those K groups; each device sends
// one uplink a phase, its readings dated a period apart (successive phases stand for
// successive periods), so a phase of L + W seconds takes ~rate × (L + W) devices a group.
//
// Each driven group holds --group-devices devices (F/GROUPS, 3 906), as a fleet's: the
// kinds' devices and bystanders, registered with one reading each in the setup (many
// devices a POST) and silent afterwards, so that whatever a group does per device it
// holds (a scan of its devices' rows) costs what it costs in the fleet.
//
// Each kind of uplink has a phase of its own: a lead-in of --lead-in-s (STATS_FLUSH_MS
// and 2 s: 12 s; the groups' alarms, deliveries and roll-up flushes settle into their
// rhythm, and what a group does once per start is done), then the window of
// --window-s (30 s). Everything metered that starts in the window is divided
// by the uplinks sent in it: every call the runtime makes into an object (the uplinks'
// RPCs, the groups' alarms, their flushes to the roll-up), the rows the SQL cursors read
// and write, setAlarm, the origin POSTs that arrive, the time objects are held by
// pending timers, workerd's CPU. After the window the phase runs until quiet (no call
// running, no alarm or setTimeout due within ALARM_HORIZON_MS, every admitted reading at
// the origin); then GET /v1/stats must show exactly what the replies counted, the origin
// every admitted key, and the groups met must be the K picked.
//
// The worker runs as benches/metered-worker.js (src/worker/ with a meter on every
// Durable Object class index.js exports). The groups and the roll-up shards (objects
// serving many devices, which a fleet keeps busy) are started before each phase and kept
// from eviction during it without a product call: warm. A device's state in its group's
// memory (its seen-set) is as warm as in the fleet: when a group keeps more devices in
// memory (group.js CACHED_DEVICES) than a fleet's holds, a storage's phases run on one
// worker and its devices stay in memory, and one more phase, the ledger's new reading
// after a restart, gives a device's rebuild from its rows (paid once per group start);
// else a worker is started afresh for each phase and each uplink pays the rebuild, as in
// that fleet (a device reporting once a period has left the cache by its next reading).
// What a group pays once per start (its constructor; the statements before the window
// that the window did not run) is reported per group, apart: a fleet's groups never
// idle, and pay it once per deploy or move, not per uplink.
//
// Kinds: on one storage, a new native reading, the duplicate of it (the same reading
// re-sent), a raw DF703 frame through LORIOT decoded with the device's configuration, a
// raw frame parked (no configuration); on a storage of its own, the new reading and its
// duplicate with a 7-day ledger (--ledger-rows rows a device, in --ledger-groups of the K
// groups: its setup writes ~3 000 rows/s a group; the seen-set capped at the keys a
// fleet's device holds within TTL_MS, as its rows are admitted within seconds here);
// on another, the new reading's whole life with retention (TTL_MS = LEDGER_RETENTION_MS
// = --retention-s, 20 s, its lead-in covering it: in the steady state a group deletes
// rows at the rate it admits them, as a 7-day retention does once the fleet is 7 days
// old; and the retention's slack, a tenth of it, is longer than a busy group's alarms
// are apart, as a 7-day retention's hour is, so the deletes ride on those alarms).
//
// Also printed: the calls by class and method, and the statements that read or write the
// most rows (the meter's `by_sql`), per uplink.
//
// Prints figures; asserts nothing about time or price. Exits 1 when something is wrong:
// an answer other than 200, a reply that is not the kind's verdict, an object call that
// threw, the origin missing a reading, /v1/stats not exact once quiet, a group met that
// is not one of the K, no quiet; 2 on a bad option.
//
//   node benches/cost.mjs [--fleet 1000000] [--period-s 600] [--groups 4]
//                             [--window-s 30] [--lead-in-s 12] [--ledger-rows 1008]
//                             [--ledger-groups 1] [--group-devices 3906] [--seed 21]
//                             [--retention-s 20] [--flush-ms 10000] [--json FILE]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { get, origin, post, putConfig, start, tempDir } from "../tests/support/harness.mjs";
import { cpuNs, fmt, machine, workerdPids } from "./in-workerd.mjs";
import { rng32 } from "../www/sim.js";
import { GROUPS, groupOf } from "../src/worker/placement.js";
import { VARIABLES } from "../src/worker/variables.js";

const root = new URL("../", import.meta.url).pathname;

/** `--name N`: a number, or `dflt`; a bad one ends the run (exit 2). */
function option(name, dflt, { min = 1, max = Infinity, integer = true } = {}) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
    console.error(`bench:cost: --${name} ${process.argv[i + 1] ?? ""}: a ${integer ? "whole " : ""}number from ${min}${max < Infinity ? ` to ${max}` : ""} expected`);
    process.exit(2);
  }
  return v;
}

/** A whole-number variable as the deployed worker has it: wrangler.toml [vars]'s value, else its default (src/worker/variables.js). */
function deployedVar(name) {
  const m = fs.readFileSync(`${root}wrangler.toml`, "utf8").match(new RegExp(`^${name}\\s*=\\s*"?(\\d+)"?`, "m"));
  return m ? Number(m[1]) : VARIABLES[name].default;
}

/** A constant of group.js, read from its source (the module imports cloudflare:workers), or null. */
function groupConstant(name) {
  try {
    const m = fs.readFileSync(`${root}src/worker/group.js`, "utf8").match(new RegExp(`const ${name} = ([\\d_]+);`));
    return m ? Number(m[1].replaceAll("_", "")) : null;
  } catch {
    return null;
  }
}

const FLEET_BINS = option("fleet", 1_000_000);
const PERIOD_S = option("period-s", 600);
const K = option("groups", 4, { max: GROUPS });
const WINDOW_S = option("window-s", 30);
const SEED = option("seed", 21, { min: 0 });
const FLUSH_MS = option("flush-ms", deployedVar("STATS_FLUSH_MS")); // the deployed STATS_FLUSH_MS
const LEAD_S = option("lead-in-s", Math.ceil(FLUSH_MS / 1000) + 2, { min: 0 }); // a flush and what a group does once per start
const LEDGER_DAYS = 7;
const LEDGER_ROWS = option("ledger-rows", Math.round((LEDGER_DAYS * 86_400) / PERIOD_S)); // 7 days of readings
const LEDGER_GROUPS = option("ledger-groups", 1, { max: K });
/** Devices each driven group holds, as a fleet's: the kinds' and bystanders (registered, silent in the windows). */
const GROUP_DEVICES = option("group-devices", Math.round(FLEET_BINS / GROUPS));
/** Devices one request may name (the deployed MAX_DEVICES_PER_REQUEST): bystanders are registered that many a POST. */
const DEVICES_PER_REQUEST = deployedVar("MAX_DEVICES_PER_REQUEST");
const at = process.argv.indexOf("--json");
const JSON_OUT = at > 0 ? process.argv[at + 1] : null;

const SCRIPT = "benches/metered-worker.js";
/** Uplinks a group gets per second: the fleet's F/P over GROUPS. */
const RATE = FLEET_BINS / PERIOD_S / GROUPS;
/** A phase: lead-in and window, seconds. */
const PHASE_S = LEAD_S + WINDOW_S;
if (PHASE_S > PERIOD_S) {
  console.error(`bench:cost: --lead-in-s + --window-s (${PHASE_S} s) must not exceed --period-s (${PERIOD_S} s): a device sends once a period`);
  process.exit(2);
}
/** Devices of one kind in each group for a phase with a lead-in of `lead` s: one uplink each. */
const perGroup = (lead) => Math.ceil(RATE * (lead + WINDOW_S)) + 1;
const PER_GROUP = perGroup(LEAD_S);
if (RATE * WINDOW_S < 1) {
  console.error(`bench:cost: ${fmt(RATE, 3)} uplinks/s a group sends no uplink in a ${WINDOW_S} s window: make --window-s longer`);
  process.exit(2);
}
/** Alarms and setTimeouts due within this are waited for; later ones (retention, a week on) are not. */
const ALARM_HORIZON_MS = 120_000;
/** How often shared objects are woken during a phase: well within workerd's 10 s of inactivity before eviction. */
const KEEP_WARM_MS = 3_000;
/** A phase not quiet by then (after its last uplink) is a failure. */
const QUIET_DEADLINE_MS = 300_000;
/** Setup requests under way at once (not measured). */
const SETUP_AT_ONCE = 8;
/** Readings a setup burst of the ledger carries. */
const LEDGER_BURST = 504;
/**
 * The retention (and TTL) of the retention kind's worker: long enough that its slack (a
 * tenth of it, ledger.js `retentionDue`) is longer than a busy group's alarms are apart,
 * so that the deletes ride on the alarms the group runs anyway, as with a 7-day retention
 * (its slack an hour); and its phase's lead-in covers it and the slack, so that the window
 * sees rows deleted as fast as they are admitted.
 */
const RETENTION_S = option("retention-s", 20);
const RETENTION_MS = RETENTION_S * 1000;
const LIFE_LEAD_S = Math.max(LEAD_S, Math.ceil(RETENTION_S * 1.1) + 2);
if (LIFE_LEAD_S + WINDOW_S > PERIOD_S) {
  console.error(`bench:cost: the retention phase (${LIFE_LEAD_S} s lead-in + ${WINDOW_S} s) must not exceed --period-s (${PERIOD_S} s)`);
  process.exit(2);
}
/** Cloudflare bills duration for 128 MB per object ("Duration ... GB-s", footnote 5): 128 MB / 1 GB, as its examples compute. */
const GB_PER_OBJECT = 0.128;
const DAY = 86_400_000;
const TTL_MS = 6 * 3_600_000;
const T0 = Date.parse("2026-07-16T00:00:00Z");
const VARS = { TTL_MS: String(TTL_MS), LEDGER_RETENTION_MS: String(LEDGER_DAYS * DAY), STATS_FLUSH_MS: String(FLUSH_MS), ORIGIN_TIMEOUT_MS: "10000" };
/** Keys a device's seen-set holds in a fleet: its readings within the TTL. */
const LIVE_KEYS = Math.max(1, Math.ceil(TTL_MS / (PERIOD_S * 1000)));
const CACHED_DEVICES = groupConstant("CACHED_DEVICES");
const DEVICES_PER_GROUP = FLEET_BINS / GROUPS;
/**
 * Whether a fleet's device is still in its group's memory at its next reading: its group
 * keeps more devices in memory (group.js CACHED_DEVICES) than it holds. Then a storage's
 * phases run on one worker, its devices warm; else a worker is started afresh for each
 * phase, no device in memory (least recently used first, a device reporting once a
 * period has been dropped by its next reading).
 */
const WARM_DEVICES = CACHED_DEVICES !== null && CACHED_DEVICES >= Math.max(DEVICES_PER_GROUP, GROUP_DEVICES);
const DF703_CONFIG = { codec: "dingtek/df703", bin_depth_mm: 2500, offset_mm: 100 };
const DF703_FRAME = "800001011107d000190000000000010081"; // tests/fixtures/webhooks/raw/loriot-df703-rx.json

// --- the fleet and the prices ---------------------------------------------------------

const FLEET = { bins: FLEET_BINS, periodMin: PERIOD_S / 60, replayShare: 0.2, days: 30 };
const READINGS_PER_MONTH = (FLEET.bins * FLEET.days * 86_400) / PERIOD_S;
const REPLAYS_PER_MONTH = (READINGS_PER_MONTH * FLEET.replayShare) / (1 - FLEET.replayShare);
const DO_PRICING = "https://developers.cloudflare.com/durable-objects/platform/pricing/";
const WORKERS_PRICING = "https://developers.cloudflare.com/workers/platform/pricing/";
// Where the storage lines were read: the page's stored copy (search tool) ends before its
// storage table, so they were read in the page's source, the partial it renders.
const DO_STORAGE_SOURCE = "github.com/cloudflare/cloudflare-docs src/content/partials/durable-objects/durable-objects-pricing.mdx (rendered into that page)";
/**
 * Workers Paid, as Cloudflare publishes it: `included` per month, then `price` per `per`
 * units. `quote` is the page's line, `verified` where it was read (2026, search tool).
 */
const PRICES = {
  subscription: { price: 5, url: WORKERS_PRICING, quote: "Durable Objects usage for a minimum charge of $5 USD per month for an account", verified: "the page" },
  workerRequests: { included: 10e6, price: 0.3, per: 1e6, url: WORKERS_PRICING, quote: "Standard | 10 million included per month +$0.30 per additional million", verified: "the page" },
  workerCpuMs: { included: 30e6, price: 0.02, per: 1e6, url: WORKERS_PRICING, quote: "30 million CPU milliseconds included per month +$0.02 per additional million CPU milliseconds", verified: "the page" },
  doRequests: { included: 1e6, price: 0.15, per: 1e6, url: DO_PRICING, quote: "Requests | 1 million, + $0.15/million | Includes HTTP requests, RPC sessions, WebSocket messages, and alarm invocations", verified: "the page" },
  doDuration: { included: 400_000, price: 12.5, per: 1e6, url: DO_PRICING, quote: "Duration | 400,000 GB-s, + $12.50/million GB-s; \"Duration billing charges for the 128 MB of memory your Durable Object is allocated\"", verified: "the page" },
  rowsRead: { included: 25e9, price: 0.001, per: 1e6, url: DO_PRICING, quote: "Rows reads | First 25 billion / month included + $0.001 / million rows", verified: DO_STORAGE_SOURCE },
  rowsWritten: { included: 50e6, price: 1.0, per: 1e6, url: DO_PRICING, quote: "Rows written | First 50 million / month included + $1.00 / million rows; \"Each setAlarm() is billed as a single row written\"; \"Deletes are counted as rows written\"", verified: DO_STORAGE_SOURCE },
  storedGbMonth: { included: 5, price: 0.2, per: 1, url: DO_PRICING, quote: "SQL Stored data | 5 GB-month, + $0.20/ GB-month", verified: DO_STORAGE_SOURCE },
};

// --- the run --------------------------------------------------------------------------

/** Placement (groups, their offsets, device ids) and readings' values: two seeded streams. */
const place = rng32(SEED);
const rand = rng32(SEED ^ 0x5bd1e995);
const fail = (message) => {
  throw new Error(message);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const iso = (ms) => new Date(ms).toISOString();
const hub = await origin();

/** The K groups driven (seeded), and each one's offset in its schedule (a fraction of its spacing). */
const DRIVEN = [];
while (DRIVEN.length < K) {
  const g = Math.floor(place() * GROUPS);
  if (!DRIVEN.includes(g)) DRIVEN.push(g);
}
const OFFSET = new Map(DRIVEN.map((g) => [g, place()]));
const LEDGER_DRIVEN = DRIVEN.slice(0, LEDGER_GROUPS);

/** The classes the meter wraps (GET /__meter): every one index.js exports that extends DurableObject. */
const METERED = new Set();
/** Every device id the bench uses, in upper case: an object named otherwise serves many devices. */
const DEVICE_NAMES = new Set();

/**
 * PER_GROUP device ids in each of `groups` (`groupOf(id)`): `prefix` and hex digits, 16
 * characters in all (a DevEUI for the raw kinds), counting up from a seeded start.
 * Returns a Map group → its ids.
 */
function fleetIds(prefix, groups, count = () => PER_GROUP) {
  const digits = 16 - prefix.length;
  const byGroup = new Map(groups.map((g) => [g, []]));
  const want = new Map(groups.map((g) => [g, count(g)]));
  let left = groups.reduce((t, g) => t + want.get(g), 0);
  for (let c = Math.floor(place() * 2 ** 32); left; c++) {
    const id = `${prefix}${(c % 16 ** digits).toString(16).toUpperCase().padStart(digits, "0")}`;
    const g = groupOf(id);
    const list = byGroup.get(g);
    if (!list || list.length >= want.get(g)) continue;
    list.push(id);
    DEVICE_NAMES.add(id.toUpperCase());
    left -= 1;
  }
  return byGroup;
}
const all = (byGroup) => [...byGroup.values()].flat();

/**
 * Setup jobs registering bystanders in `storage`'s groups (`kinds`: the Maps of the
 * kinds' devices there), so that each group holds GROUP_DEVICES devices as a fleet's
 * does: one native reading each, DEVICES_PER_REQUEST devices of one group a POST.
 * Returns `{jobs(w, keys), count}`.
 */
function bystanders(storage, prefix, groups, kinds) {
  const theirs = (g) => kinds.reduce((t, k) => t + (k.get(g)?.length ?? 0), 0);
  const ids = fleetIds(prefix, groups, (g) => Math.max(0, GROUP_DEVICES - theirs(g)));
  const requests = [...ids.values()].flatMap((list) => Array.from({ length: Math.ceil(list.length / DEVICES_PER_REQUEST) }, (_, i) => list.slice(i * DEVICES_PER_REQUEST, (i + 1) * DEVICES_PER_REQUEST)));
  return {
    count: all(ids).length,
    jobs: (w, keys) => requests.map((devices) => () => storage.uplink(w, ...native(devices.map((id) => reading(id, 1))), keys)),
  };
}

const reading = (device_id, seq) => ({ device_id, seq, ts: iso(T0 + seq * PERIOD_S * 1000), fill_pct: Math.round(fillAt(device_id, seq) * 10) / 10 });
/** A day of a bin's readings: it fills over one and is collected once (a route's daily round). */
const READINGS_A_DAY = Math.round(86_400 / PERIOD_S);
const dayStart = new Map(); // device → where in its day its seq 0 falls
/**
 * A bin's fill at its reading `seq`, 0 … 1 of a day: from 5 % to ~95 % over its day, then
 * emptied, so one reading a day confirms a collection (the bin state's one extra row
 * written, docs/bin-state.md). Each bin starts at its own point of its day. (Fills drawn
 * at random made a "collection" of about every sixth reading.)
 */
function fillAt(device_id, seq) {
  if (!dayStart.has(device_id)) dayStart.set(device_id, Math.floor(rand() * READINGS_A_DAY));
  const k = (seq + dayStart.get(device_id)) % READINGS_A_DAY;
  return 5 + (90 * k) / READINGS_A_DAY + rand();
}
/** Frame `counter` of a DF703 as LORIOT posts it: the fixture's frame, its level (bytes 5-6) and counter (bytes 13-14) set. */
function df703(eui, counter) {
  const bytes = Buffer.from(DF703_FRAME, "hex");
  // Its level (the distance to the rubbish, mm) falls as the bin fills, as `fillAt` has it.
  bytes.writeUInt16BE(Math.round(2300 - 20 * fillAt(eui, counter)), 5);
  bytes.writeUInt16BE(counter, 13);
  return { cmd: "rx", EUI: eui, ts: T0 + counter * PERIOD_S * 1000, ack: false, bat: 254, fcnt: counter, port: 3, data: bytes.toString("hex") };
}
const native = (body, verdict = "admitted") => ["/v1/readings", body, verdict];
const loriot = (body, verdict) => ["/v1/uplinks/loriot", body, verdict];

/**
 * A phase's schedule: each group's devices one uplink each (`make(id)`: `[route, body,
 * verdict]`), 1/RATE s apart from the group's offset on, for PHASE_S seconds; sorted by
 * time. `t`: ms from the phase's start; `inWindow`: after the lead-in.
 */
function schedule(byGroup, make, lead = LEAD_S) {
  const out = [];
  for (const [g, ids] of byGroup) {
    ids.forEach((id, j) => {
      const t = ((OFFSET.get(g) + j) / RATE) * 1000;
      if (t < (lead + WINDOW_S) * 1000) out.push({ t, g, id, inWindow: t >= lead * 1000, uplink: make(id) });
    });
  }
  out.sort((a, b) => a.t - b.t);
  out.lead = lead;
  return out;
}

/** The keys the origin accepted so far (a Set kept up to date; a request's body is dropped once read). */
const accepted = (() => {
  const keys = new Set();
  let read = 0;
  return () => {
    for (; read < hub.requests.length; read++) {
      const r = hub.requests[read];
      r.readings = r.body?.readings?.length ?? 0;
      if (r.ok) for (const x of r.body?.readings ?? []) keys.add(x.key);
      r.body = null;
      r.raw = null;
    }
    return keys;
  };
})();

/**
 * One worker's storage (a directory); `groups`: those its devices are in. Its worker runs
 * through its phases when WARM_DEVICES (`close` stops it), else is started afresh for each.
 */
class Storage {
  constructor(name, vars, groups) {
    this.name = name;
    this.dir = tempDir();
    this.vars = { ORIGIN_URL: hub.url, ...VARS, ...vars };
    this.groups = new Set(groups.map((g) => `group-${g}`));
    this.totals = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, parked: 0 };
    this.sizes = new Map(); // object → its database's last size
    this.objects = new Map(); // object → {class, name}
    this.classes = new Set();
  }

  /**
   * Starts the worker, wakes the shared objects met so far and keeps them awake, runs
   * `send(w, keys)` (which posts the phase's uplinks, pushes each admitted key on `keys`
   * and returns `{n, w0, w1, cpuNs, late}` for a measured window, `{}` for a setup),
   * waits for quiet, checks the origin, /v1/stats and the groups met, stops the worker.
   * Returns the window's figures per uplink.
   */
  async phase(name, send, { check = () => {}, restart = false, everyGroup = false } = {}) {
    if (restart || !WARM_DEVICES) await this.close();
    const fresh = !this.w;
    if (fresh) this.w = await start({ persist: this.dir, script: SCRIPT, vars: this.vars });
    const w = this.w;
    const warm = () => wake(w, this.shared());
    let keepWarm;
    try {
      await warm();
      const first = meterLines(w).length; // this phase's lines: from here on
      keepWarm = setInterval(() => warm().catch(() => {}), KEEP_WARM_MS);
      const skew = await clockSkew(w);
      const t0 = Date.now();
      const keys = [];
      const sent = await send(w, keys);
      const lines = (await quiet(w, keys, name)).slice(first);
      clearInterval(keepWarm);
      const seconds = (Date.now() - t0) / 1000;
      const got = accepted();
      const lost = keys.filter((k) => !got.has(k));
      if (lost.length) fail(`${name}: the origin lacks ${lost.length} admitted readings (${lost.slice(0, 3).join(", ")})`);
      const unreadable = lines.reduce((t, l) => t + (l.unreadable_cursors ?? 0), 0);
      if (unreadable) fail(`${name}: ${unreadable} SQL cursors could not be read at the end of a call: their rows are not all counted`);
      const thrown = lines.filter((l) => l.error);
      if (thrown.length) fail(`${name}: ${thrown.length} object calls threw; the first: ${thrown[0].class}.${thrown[0].method}: ${thrown[0].error}`);
      for (const l of lines.filter((x) => x.event === "meter")) {
        if (l.db_bytes !== null) this.sizes.set(l.object, l.db_bytes);
        // An object started by a wake (by its id) does not know its name: the name it was met by before.
        this.objects.set(l.object, { class: l.class, name: l.name ?? this.objects.get(l.object)?.name ?? null });
        this.classes.add(l.class);
      }
      const nameOf = (object) => this.objects.get(object)?.name ?? null;
      const strays = [...new Set(lines.map((l) => nameOf(l.object)).filter((n) => /^group-\d+$/.test(n ?? "") && !this.groups.has(n)))];
      if (strays.length && !everyGroup) fail(`${name}: met ${strays.join(", ")}, not one of the groups driven (${[...this.groups].join(", ")}): placement.js groupOf is not where the worker puts these devices`);
      const stats = (await get(w.call, "/v1/stats")).body;
      for (const [k, v] of Object.entries(this.totals)) {
        if (stats[k] !== v) fail(`${name}: /v1/stats ${k} is ${stats[k]} once quiet, the replies counted ${v}: the figures are not exact`);
      }
      if (stats.pending_deliveries !== 0) fail(`${name}: /v1/stats pending_deliveries ${stats.pending_deliveries} once quiet`);
      check(stats);
      if (sent.w0 === undefined) return { name, seconds };
      // The window, on workerd's clock (the meter's lines) and on this process's (the origin's).
      const inWindow = (l) => l.at >= sent.w0 + skew && l.at < sent.w1 + skew;
      const posts = hub.requests.filter((r) => r.at >= sent.w0 && r.at < sent.w1);
      const window = figures(lines, inWindow, posts, sent.n, (object) => this.isShared(object));
      // What the objects paid once for this start of the worker, per group: the
      // constructors (the wakes), and the statements of the lead-in that the window
      // never ran (what a group does once per start: a count of its rows, ...).
      const isGroup = (object) => /^group-\d+$/.test(nameOf(object) ?? "");
      const groups = new Set(lines.filter((l) => isGroup(l.object)).map((l) => l.object)).size || 1;
      const steady = new Set(window.bySql.map((t) => t.sql));
      const once = {};
      for (const l of lines.filter((x) => x.event === "meter" && x.at < sent.w0 + skew)) {
        for (const [sql, [, r, wr]] of Object.entries(l.by_sql ?? {})) {
          if (steady.has(sql)) continue;
          const t = (once[sql] ??= { sql, rowsRead: 0, rowsWritten: 0 });
          t.rowsRead += r / groups;
          t.rowsWritten += wr / groups;
        }
      }
      const wakes = lines.filter((l) => l.kind === "wake" && isGroup(l.object));
      const groupStart = !fresh ? null : {
        constructorRowsRead: wakes.reduce((t, l) => t + l.rows_read, 0) / groups,
        rowsRead: Object.values(once).reduce((t, x) => t + x.rowsRead, 0),
        rowsWritten: Object.values(once).reduce((t, x) => t + x.rowsWritten, 0),
        statements: Object.values(once).sort((a, b) => b.rowsRead - a.rowsRead).slice(0, 3),
      };
      return { name, n: sent.n, seconds, cpuNs: sent.cpuNs, late: sent.late, skew, groupStart, bins: sent.bins, pages: sent.pages, ...window };
    } finally {
      clearInterval(keepWarm);
      if (!WARM_DEVICES) await this.close();
    }
  }

  /** Stops the worker, if it runs. */
  async close() {
    const w = this.w;
    this.w = null;
    await w?.mf.dispose();
  }

  /** Whether an object serves many devices: it is not named after one of the bench's devices. */
  isShared(object) {
    const name = this.objects.get(object)?.name;
    return !(typeof name === "string" && DEVICE_NAMES.has(name.toUpperCase()));
  }

  /** The shared objects this storage has met so far. */
  shared() {
    return [...this.objects.keys()].filter((o) => this.isShared(o));
  }

  /** POSTs one uplink; every verdict of its reply must be `verdict`. Counts the reply's readings. */
  async uplink(w, route, body, verdict, keys) {
    const res = await post(w.call, route, body);
    const text = await res.text();
    if (res.status !== 200) fail(`POST ${route} answered ${res.status}: ${text.slice(0, 300)}`);
    const reply = JSON.parse(text);
    const verdicts = reply.verdicts.map((v) => v.verdict);
    if (!verdicts.length || verdicts.some((v) => v !== verdict)) fail(`POST ${route}: verdicts ${[...new Set(verdicts)].join(", ")}, expected ${verdict}: ${text.slice(0, 300)}`);
    this.totals.received += reply.received;
    this.totals.unique += reply.unique;
    this.totals.duplicates_suppressed += reply.duplicates_suppressed;
    this.totals.rejected += reply.rejected.length;
    this.totals.parked += reply.parked?.length ?? 0;
    for (const a of reply.admitted) keys.push(a.key);
    return reply;
  }

  async configure(w, id, config) {
    const r = await putConfig(w.call, id, config);
    if (r.status !== 200) fail(`PUT /v1/devices/${id}/config answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    if (r.body.unparked.uplinks !== 0) fail(`PUT /v1/devices/${id}/config unparked ${r.body.unparked.uplinks} uplinks; the bench configures before any uplink`);
  }

  /** Σ database sizes (each object's last seen). */
  bytes() {
    return [...this.sizes.values()].reduce((t, b) => t + b, 0);
  }

  async remove() {
    try {
      await this.close();
    } finally {
      fs.rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** CPU time of the workerd processes so far (ns), every isolate and SQLite included. */
function workerdCpuNs() {
  return workerdPids(process.pid).reduce((t, pid) => t + cpuNs(pid), 0);
}

/** How far workerd's clock (the meter's) is ahead of this process's, ms: the median of 5 readings. */
async function clockSkew(w) {
  const skews = [];
  for (let i = 0; i < 5; i++) {
    const before = Date.now();
    const m = await (await w.mf.dispatchFetch("http://bench/__meter")).json();
    skews.push(m.now - (before + Date.now()) / 2);
  }
  return skews.sort((a, b) => a - b)[2];
}

/** Starts (or keeps from eviction) the objects `ids`, without a product call (metered-worker.js `wake`). */
async function wake(w, ids) {
  if (!ids.length) return;
  const res = await w.mf.dispatchFetch("http://bench/__meter/wake", { method: "POST", body: JSON.stringify(ids) });
  const { woken } = await res.json();
  if (woken !== ids.length) fail(`woke ${woken} of ${ids.length} shared objects`);
}

/** The meter's lines so far (parsed), read on from where the last call stopped. */
function meterLines(w) {
  const cache = (w.meterCache ??= { read: 0, lines: [] });
  for (; cache.read < w.lines.length; cache.read++) {
    const l = w.lines[cache.read];
    if (l.startsWith('{"event":"meter')) cache.lines.push(JSON.parse(l));
  }
  return cache.lines;
}

/**
 * Waits until nothing is left to happen soon: no object call running, no alarm or
 * setTimeout due within ALARM_HORIZON_MS (the isolate's figures, GET /__meter, which calls
 * no object), every admitted key at the origin, and every meter line the isolate wrote
 * read; twice in a row, 100 ms apart. Returns the meter lines.
 */
async function quiet(w, keys, name) {
  const deadline = Date.now() + QUIET_DEADLINE_MS;
  let calm = 0;
  for (;;) {
    const m = await (await w.mf.dispatchFetch("http://bench/__meter")).json();
    for (const c of m.classes) METERED.add(c);
    const lines = meterLines(w);
    const soon = m.now + ALARM_HORIZON_MS;
    const got = accepted();
    const waiting = {
      running: m.running,
      alarms: m.alarms.filter((t) => t <= soon).length,
      timers: m.timers.filter((t) => t.kind === "setTimeout" && t.due <= soon).length,
      unread: m.lines - lines.length,
      undelivered: m.running ? null : keys.reduce((n, k) => n + (got.has(k) ? 0 : 1), 0), // null: not counted while calls run
    };
    calm = Object.values(waiting).every((v) => v === 0) ? calm + 1 : 0;
    if (calm >= 2) return lines;
    if (Date.now() > deadline) fail(`${name}: not quiet after ${QUIET_DEADLINE_MS / 1000} s: ${JSON.stringify(waiting)}`);
    await sleep(100);
  }
}

/**
 * Sends `plan` (a schedule) in real time, each uplink at its time whatever the replies
 * before it do; marks the window (this process's clock) and workerd's CPU at its edges.
 * Returns `{n, w0, w1, cpuNs, late}` (`late`: the latest an uplink was sent, ms).
 */
async function drive(storage, w, keys, plan) {
  const start = Date.now() + 200;
  const w0 = start + plan.lead * 1000;
  const w1 = w0 + WINDOW_S * 1000;
  const mark = (t) => new Promise((r) => setTimeout(() => r(workerdCpuNs()), Math.max(0, t - Date.now())));
  const cpu = Promise.all([mark(w0), mark(w1)]);
  const sends = [];
  let late = 0;
  for (const u of plan) {
    const due = start + u.t;
    if (due - Date.now() > 1) await sleep(due - Date.now());
    late = Math.max(late, Date.now() - due);
    const p = storage.uplink(w, ...u.uplink, keys);
    p.catch(() => {}); // looked at below
    sends.push(p);
  }
  const [cpu0, cpu1] = await cpu;
  for (const r of await Promise.allSettled(sends)) if (r.status === "rejected") throw r.reason;
  return { n: plan.filter((u) => u.inWindow).length, w0, w1, cpuNs: cpu1 - cpu0, late };
}

/**
 * One whole snapshot of the fleet's bin states (GET /v1/bins, pages of 1 000), as a route
 * planner reads it; at least `least` bins (the bench's devices, its bystanders too).
 * Returns the phase's window: one snapshot.
 */
async function snapshot(w, least) {
  const cpu0 = workerdCpuNs();
  const w0 = Date.now();
  let after = null;
  let bins = 0;
  let pages = 0;
  do {
    const r = await get(w.call, `/v1/bins?limit=1000${after === null ? "" : `&after=${encodeURIComponent(after)}`}`);
    if (r.status !== 200) fail(`GET /v1/bins answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    bins += r.body.bins.length;
    pages += 1;
    after = r.body.next;
  } while (after !== null);
  const w1 = Date.now() + 1;
  if (bins < least) fail(`GET /v1/bins listed ${bins} bins, fewer than the bench's ${least} devices`);
  return { n: 1, w0, w1, cpuNs: workerdCpuNs() - cpu0, late: 0, bins, pages };
}

/** Runs `jobs` (async functions), SETUP_AT_ONCE at a time. */
async function atOnce(jobs) {
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: SETUP_AT_ONCE }, lane));
}

/**
 * A window's meter lines (those that start in it: `inWindow`) and origin POSTs as
 * figures per uplink (÷ n): Durable Object requests (calls the runtime made: RPC, alarm,
 * fetch), rows, setAlarms, storage calls, cold starts, the calls by class and method,
 * and time: `activeMs` (per object, the union of its calls), `heldMs` (what pending
 * timers add to it: an object with a timer pending cannot hibernate) and `billedMs`
 * (their union, per object).
 */
function figures(allLines, inWindow, posts, n, isShared) {
  const lines = allLines.filter((l) => inWindow(l) && l.kind !== "wake");
  const calls = lines.filter((l) => l.event === "meter" && l.kind !== "background");
  const work = lines.filter((l) => l.event === "meter");
  const sum = (key) => work.reduce((t, l) => t + l[key], 0);
  const byMethod = {};
  for (const c of calls) byMethod[`${c.class}.${c.method}`] = (byMethod[`${c.class}.${c.method}`] ?? 0) + 1;
  const storage = {};
  for (const l of work) for (const [k, v] of Object.entries(l.storage)) storage[k] = (storage[k] ?? 0) + v;
  const bySql = {};
  for (const l of work) {
    for (const [sql, [k, r, wr]] of Object.entries(l.by_sql ?? {})) {
      const t = (bySql[sql] ??= { sql, statements: 0, rowsRead: 0, rowsWritten: 0 });
      t.statements += k / n;
      t.rowsRead += r / n;
      t.rowsWritten += wr / n;
    }
  }
  const settled = allLines.filter((l) => l.event === "meter_timer" && l.phase === "settled");
  const time = timeOf(calls, [...lines.filter((l) => l.event === "meter_timer" && l.phase === "set"), ...settled]);
  const per = (x) => x / n;
  const byClass = (cls) => calls.filter((c) => c.class === cls);
  return {
    requests: per(calls.length),
    rowsRead: per(sum("rows_read") + sum("kv_rows_read")),
    rowsWritten: per(sum("rows_written") + sum("kv_rows_written")),
    setAlarms: per(sum("set_alarms")),
    statements: per(sum("statements")),
    cold: per(calls.filter((c) => c.cold).length),
    coldShared: per(calls.filter((c) => c.cold && isShared(c.object)).length),
    sharedTouched: new Set(calls.filter((c) => isShared(c.object)).map((c) => c.object)).size,
    alarmsPerGroup: byClass("GroupObject").filter((c) => c.kind === "alarm").length,
    originPosts: per(posts.length),
    originReadings: per(posts.reduce((t, p) => t + (p.readings ?? 0), 0)),
    activeMs: per(time.active),
    heldMs: per(time.billed - time.active),
    billedMs: per(time.billed),
    unattributedMs: per(time.unattributed),
    byMethod: Object.fromEntries(Object.entries(byMethod).map(([k, v]) => [k, per(v)])),
    storage: Object.fromEntries(Object.entries(storage).map(([k, v]) => [k, per(v)])),
    bySql: Object.values(bySql),
  };
}

/** Milliseconds of object time: per object, the union of its calls, and of its calls and its timers. */
function timeOf(calls, timerLines) {
  const spans = new Map(); // object → {calls: [[from, to]], timers: [[from, to]]}
  const of = (object) => spans.get(object) ?? spans.set(object, { calls: [], timers: [] }).get(object);
  for (const c of calls) of(c.object).calls.push([c.at, c.at + c.wall_ms]);
  const settled = new Map(timerLines.filter((t) => t.phase === "settled").map((t) => [t.id, t.at]));
  let unattributed = 0;
  /** How much of `span` the calls of `object` cover. */
  const covered = (object, [from, to]) => (spans.get(object)?.calls ?? []).reduce((t, [a, b]) => t + Math.max(0, Math.min(b, to) - Math.max(a, from)), 0);
  for (const t of timerLines.filter((l) => l.phase === "set")) {
    // A timer still pending at the end holds its object until it is due.
    const span = [t.at, settled.get(t.id) ?? t.at + t.delay_ms];
    // A timer set while several objects' calls ran (the meter could not tell whose):
    // the one whose calls cover it most, as a timer of a call is cleared when it ends.
    const owner = t.object ?? (t.candidates ?? []).reduce((best, o) => (best === null || covered(o, span) > covered(best, span) ? o : best), null);
    if (owner) of(owner).timers.push(span);
    else unattributed += span[1] - span[0];
  }
  let active = 0;
  let billed = unattributed;
  for (const s of spans.values()) {
    active += union(s.calls);
    billed += union([...s.calls, ...s.timers]);
  }
  return { active, billed, unattributed };
}

/** The length of the union of intervals `[from, to]`. */
function union(spans) {
  let total = 0;
  let end = -Infinity;
  for (const [from, to] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return total;
}
// --- the kinds ------------------------------------------------------------------------

const started = Date.now();
const commit = (() => {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    return dirty ? `${head} (src/ modified)` : head;
  } catch {
    return "unknown";
  }
})();
const ledgerDevices = PER_GROUP * LEDGER_GROUPS;
console.log(`reconnect-dedupe cost per uplink (issue 21)  ${new Date().toISOString()}  commit ${commit}`);
console.log(machine());
console.log(
  `Fleet: ${fmt(FLEET_BINS)} bins, one uplink each every ${PERIOD_S} s: ${fmt(FLEET_BINS / PERIOD_S, 1)} uplinks/s in all, ` +
    `${fmt(RATE, 3)} uplinks/s per group (÷ ${GROUPS} groups), one every ${fmt(1000 / RATE, 1)} ms. ` +
    `Driven: ${K} groups (${DRIVEN.join(", ")}; seed ${SEED}) at that rate, ${PER_GROUP} devices a group per kind, one uplink each a phase; ` +
    `a phase: ${LEAD_S} s lead-in, then the ${WINDOW_S} s window measured (~${fmt(RATE * WINDOW_S * K, 0)} uplinks).`,
);
console.log(
  `Worker: TTL_MS 6 h, LEDGER_RETENTION_MS ${LEDGER_DAYS} d, STATS_FLUSH_MS ${FLUSH_MS} (the deployed value), ORIGIN_TIMEOUT_MS 10000, DELIVERY_BATCH as deployed; ` +
    `origin answering 200 on 127.0.0.1. Ledger kinds: ${LEDGER_GROUPS} group(s) (${LEDGER_DRIVEN.join(", ")}), ${fmt(ledgerDevices)} devices with ${fmt(LEDGER_ROWS)} rows each. ` +
    `Each driven group holds ${fmt(GROUP_DEVICES)} devices${GROUP_DEVICES === Math.round(DEVICES_PER_GROUP) ? `, as a fleet's (F ÷ ${GROUPS})` : ` (a fleet's: ${fmt(DEVICES_PER_GROUP)})`}: ` +
      `the kinds' and bystanders, registered with one reading each in the setup and silent in the windows.`,
);

/**
 * Measures one kind: a phase of `storage`'s sending `plan` in real time. Returns its
 * figures per uplink of the window, as kind `key` (`label`).
 */
async function kind(storage, key, label, plan, options) {
  const groups = new Set(plan.map((u) => u.g)).size;
  const figures = await storage.phase(key, (w, keys) => drive(storage, w, keys, plan), options);
  console.log(`  measured ${key}: ${figures.n} uplinks in the ${WINDOW_S} s window, ${fmt(figures.n / groups / WINDOW_S, 3)}/s a group; phase ${fmt(figures.seconds, 0)} s`);
  return { key, label, groups, ...figures };
}

/** A setup phase of `storage`'s (not measured): `jobs(w, keys)` (async functions), SETUP_AT_ONCE at a time. */
async function setup(storage, name, jobs) {
  const t = Date.now();
  await storage.phase(name, async (w, keys) => {
    await atOnce(jobs(w, keys));
    return {};
  });
  console.log(`  set up ${name} (not measured): ${fmt((Date.now() - t) / 1000, 0)} s`);
}

/**
 * Measures every kind, each in its phase: on the main storage (new readings,
 * duplicates, raw and parked uplinks), on the ledger's and on the retention's. Returns
 * `{kinds, classes, bytesPerDevice}`.
 */
async function measure() {
  const kinds = [];
  const main = new Storage("main", {}, DRIVEN);
  const bins = fleetIds("cost-n", DRIVEN);
  const configured = fleetIds("DF703C", DRIVEN);
  const unconfigured = fleetIds("DF703B", DRIVEN);
  const mainBystanders = bystanders(main, "cost-b", DRIVEN, [bins, configured, unconfigured]);
  try {
    // Not measured: every device's first uplink (its registration with its shard), the
    // raw devices' configuration, the bystanders.
    await setup(main, "main", (w, keys) => [
      ...mainBystanders.jobs(w, keys),
      ...all(bins).map((id) => () => main.uplink(w, ...native([reading(id, 1)]), keys)),
      ...all(configured).map((id) => async () => {
        await main.configure(w, id, DF703_CONFIG);
        await main.uplink(w, ...loriot(df703(id, 1), "admitted"), keys);
      }),
      ...all(unconfigured).map((id) => () => main.uplink(w, ...loriot(df703(id, 1), "parked"), keys)),
    ]);
    const second = new Map(all(bins).map((id) => [id, [reading(id, 2)]]));
    kinds.push(await kind(main, "new", "new reading", schedule(bins, (id) => native(second.get(id)))));
    kinds.push(await kind(main, "duplicate", "duplicate of it (re-sent)", schedule(bins, (id) => native(second.get(id), "duplicate"))));
    kinds.push(await kind(main, "raw", "raw DF703 (LORIOT), decoded", schedule(configured, (id) => loriot(df703(id, 2), "admitted"))));
    kinds.push(await kind(main, "parked", "raw DF703, parked (no config)", schedule(unconfigured, (id) => loriot(df703(id, 2), "parked"))));
    // The route planner's read: the whole fleet's bin states, every group asked (not
    // only the driven ones), once: its figures are per snapshot, not per uplink.
    const snap = await main.phase("bins", (w) => snapshot(w, all(bins).length + all(configured).length + all(unconfigured).length), { everyGroup: true });
    console.log(`  measured bins: ${snap.bins} bins in ${snap.pages} pages; phase ${fmt(snap.seconds, 0)} s`);
    kinds.push({ key: "bins", label: `GET /v1/bins, ${fmt(snap.bins)} bins (a snapshot)`, groups: GROUPS, ...snap });
  } finally {
    await main.remove();
  }

  // The 7-day ledger, on a storage of its own: its storage per device is the ledger's.
  // Its rows are admitted in the setup, within seconds: a seen-set rebuilt from them
  // would hold all of them, where a fleet's holds the readings of the last TTL_MS
  // (LIVE_KEYS). MAX_KEYS_PER_DEVICE = LIVE_KEYS makes it hold (and read) what a fleet's does.
  const ledger = new Storage("ledger", { MAX_KEYS_PER_DEVICE: String(LIVE_KEYS) }, LEDGER_DRIVEN);
  const ledgerIds = fleetIds("cost-l", LEDGER_DRIVEN);
  const ledgerBystanders = bystanders(ledger, "cost-c", LEDGER_DRIVEN, [ledgerIds]);
  let bytesPerDevice;
  try {
    const bursts = Math.ceil(LEDGER_ROWS / LEDGER_BURST);
    const devices = all(ledgerIds);
    await setup(ledger, "ledger bystanders", (w, keys) => ledgerBystanders.jobs(w, keys));
    const withoutLedgers = ledger.bytes();
    // Device-major within each burst round: every group busy at once.
    await setup(ledger, "ledger", (w, keys) =>
      Array.from({ length: bursts }, (_, b) =>
        devices.map((id) => () =>
          ledger.uplink(w, ...native(Array.from({ length: Math.min(LEDGER_BURST, LEDGER_ROWS - b * LEDGER_BURST) }, (_, k) => reading(id, b * LEDGER_BURST + k + 1))), keys),
        ),
      ).flat(),
    );
    const next = new Map(devices.map((id) => [id, [reading(id, LEDGER_ROWS + 1)]]));
    kinds.push(await kind(ledger, "ledgerNew", `new reading, ${fmt(LEDGER_ROWS)}-row ledger`, schedule(ledgerIds, (id) => native(next.get(id)))));
    kinds.push(await kind(ledger, "ledgerDuplicate", `duplicate, ${fmt(LEDGER_ROWS)}-row ledger`, schedule(ledgerIds, (id) => native(next.get(id), "duplicate"))));
    if (WARM_DEVICES) {
      // The same devices' next reading after a restart of the worker: groups warm (woken),
      // no device in memory. Its difference from ledgerNew is a device's rebuild, paid once
      // per start of its group.
      const after = new Map(devices.map((id) => [id, [reading(id, LEDGER_ROWS + 2)]]));
      const label = "  the same, device cold (restart)";
      kinds.push(await kind(ledger, "ledgerCold", label, schedule(ledgerIds, (id) => native(after.get(id))), { restart: true }));
    }
    // What the ledger's devices, with their ledgers, added to the databases (the groups' and the shards').
    bytesPerDevice = (ledger.bytes() - withoutLedgers) / devices.length;
  } finally {
    await ledger.remove();
  }

  // Retention: the new reading's whole life, on a storage whose rows expire after RETENTION_MS.
  const short = new Storage("retention", { TTL_MS: String(RETENTION_MS), LEDGER_RETENTION_MS: String(RETENTION_MS) }, DRIVEN);
  const retained = fleetIds("cost-r", DRIVEN, () => perGroup(LIFE_LEAD_S));
  const shortBystanders = bystanders(short, "cost-s", DRIVEN, [retained]);
  try {
    await setup(short, "retention", (w, keys) => [...shortBystanders.jobs(w, keys), ...all(retained).map((id) => () => short.uplink(w, ...native([reading(id, 1)]), keys))]);
    const deleted = (stats) => {
      if (stats.ledger_rows !== 0) fail(`retention: /v1/stats ledger_rows ${stats.ledger_rows} once quiet; retention did not delete every row`);
    };
    kinds.push(await kind(short, "life", `new reading, whole life (retention ${RETENTION_S} s)`, schedule(retained, (id) => native([reading(id, 2)]), LIFE_LEAD_S), { check: deleted }));
  } finally {
    await short.remove();
    await hub.close();
  }
  return {
    kinds,
    classes: new Set([...main.classes, ...ledger.classes, ...short.classes]),
    bytesPerDevice,
    ledgerDevices: all(ledgerIds).length,
    bystanders: { main: mainBystanders.count, ledger: ledgerBystanders.count, retention: shortBystanders.count },
  };
}

console.log("");
let measured;
try {
  measured = await measure();
} catch (e) {
  // A fetch that failed says why in its cause (workerd gone, a connection reset, ...).
  console.error(`bench:cost: ${e.message}${e.cause ? ` (${e.cause.message ?? e.cause})` : ""}`);
  if (process.env.BENCH_COST_STACK) console.error(e.stack);
  process.exit(1);
}
const { kinds, classes, bytesPerDevice } = measured;

// --- what it comes to -----------------------------------------------------------------

const byKey = Object.fromEntries(kinds.map((k) => [k.key, k]));
const METRICS = ["requests", "rowsRead", "rowsWritten", "setAlarms", "originPosts", "activeMs", "heldMs", "billedMs", "cold", "coldShared"];
// Retention's share: the whole life minus the same reading without retention.
const share = Object.fromEntries(METRICS.map((m) => [m, byKey.life[m] - byKey.new[m]]));
kinds.push({ key: "share", label: "  retention's share (life − new)", n: byKey.life.n, ...share, byMethod: {}, storage: {} });

const cpuMsPer = (k) => (k.cpuNs ? k.cpuNs / 1e6 / k.n : 0);
console.log(`\nMetered: ${[...METERED].join(", ")} (every class src/worker/index.js exports that extends DurableObject); met in the phases: ${[...classes].sort().join(", ")}`);
const cacheLine =
  CACHED_DEVICES === null
    ? `group.js's CACHED_DEVICES could not be read, so no device is taken to stay in its group's memory: a worker is started afresh for each phase and every uplink pays its device's rebuild (an upper bound)`
    : WARM_DEVICES
      ? `a group of this fleet holds ${fmt(DEVICES_PER_GROUP)} devices and keeps up to ${fmt(CACHED_DEVICES)} in memory (group.js CACHED_DEVICES), so a device is still in memory at its next reading: ` +
        `a storage's phases run on one worker, from its setup on, its devices and groups warm as a fleet's`
      : `a group of this fleet holds ${fmt(DEVICES_PER_GROUP)} devices and keeps ${fmt(CACHED_DEVICES)} in memory (group.js CACHED_DEVICES, least recently used first), so a device reporting once a period ` +
        `has been dropped by its next reading: a worker is started afresh for each phase, no device in memory, and each uplink pays its device's rebuild from its rows, as in the fleet`;
console.log(
  `Steady state: a phase per kind; ${K} groups driven at ${fmt(RATE, 3)} uplinks/s each (the fleet's per-group rate), every uplink its own POST at its time; ` +
    `everything metered that starts in the ${WINDOW_S} s window (after a ${LEAD_S} s lead-in) ÷ the uplinks sent in it: the uplinks' calls, the groups' alarms ` +
    `(deliveries, retention), their flushes to the roll-up, rows, setAlarm, origin POSTs, timers. ` +
    `Shared objects stay warm: the groups and the roll-up shards are started before each phase and woken every ${KEEP_WARM_MS / 1000} s during it without a product call, ` +
    `as a fleet's traffic keeps them ("cold shared" counts those still met cold). Devices: ${cacheLine}.`,
);
console.log(
  `Ledger: its ${fmt(LEDGER_ROWS)} rows a device are admitted within seconds in the setup; a fleet's device holds in its seen-set only those of the last 6 h (TTL_MS), ` +
    `${LIVE_KEYS} at one a period, so the ledger's worker runs with MAX_KEYS_PER_DEVICE = ${LIVE_KEYS}: its seen-set holds the ${LIVE_KEYS} newest keys, as a fleet's does. ` +
    `Its groups hold its devices' ${fmt(LEDGER_ROWS)} rows each and the bystanders' one: a statement whose rows grow with a group's whole readings table ` +
    `(a fleet's: ~${fmt((GROUP_DEVICES * LEDGER_ROWS) / 1e6, 1)} million rows) reads fewer here than there (the statements' list below shows what each reads).`,
);
if (byKey.ledgerCold) {
  const rebuild = Object.fromEntries(["rowsRead", "rowsWritten", "activeMs"].map((m) => [m, byKey.ledgerCold[m] - byKey.ledgerNew[m]]));
  const perDay = 86_400 / PERIOD_S;
  console.log(
    `A device's rebuild (its seen-set and state read back from its rows when it is not in memory: the ledger's new reading after a restart of the worker, groups woken warm, − the same warm): ` +
      `${fmt(rebuild.rowsRead, 1)} rows read, ${fmt(rebuild.rowsWritten, 2)} written, ${fmt(rebuild.activeMs, 2)} ms, per device. Paid once per start of its group ` +
      `(every device of it once), not per uplink: at one start a day, ÷ ${fmt(perDay)} uplinks a device a day, ${fmt(rebuild.rowsRead / perDay, 2)} rows read per uplink, left out of the bill.`,
  );
}
const starts = kinds.filter((k) => k.groupStart);
if (starts.length) {
  const most = (key) => Math.max(0, ...starts.map((k) => k.groupStart[key]));
  const heaviest = [...starts].sort((a, b) => b.groupStart.rowsRead - a.groupStart.rowsRead)[0];
  console.log(
    `A group's start (its constructor and what it does once per start: the statements before the window that the window did not run, its shard's share included; ` +
      `up to ${fmt(most("rowsRead"), 0)} rows read and ${fmt(most("rowsWritten"), 0)} written a group, the most by ` +
      `${heaviest.groupStart.statements.map((t) => `"${t.sql.slice(0, 60)}…" ${fmt(t.rowsRead, 0)}`).join(", ")} in ${heaviest.key}) ` +
      `is paid per start of the object, not per uplink, and kept out of the windows by the lead-in (${LEAD_S} s; by default STATS_FLUSH_MS and 2 s, a flush and what a start does). ` +
      `A fleet's groups never idle (one uplink every ${fmt(1000 / RATE, 0)} ms): a group starts again on a deploy or a move of its object; at one start a day that is ` +
      `${fmt(most("rowsRead") / (RATE * 86_400), 4)} rows read and ${fmt(most("rowsWritten") / (RATE * 86_400), 4)} written per uplink, left out of the bill.`,
  );
}
console.log(
  `Retention (due ${LEDGER_DAYS} d later) is measured on a storage with LEDGER_RETENTION_MS = TTL_MS = ${RETENTION_S} s (--retention-s), its phase's lead-in ${LIFE_LEAD_S} s ` +
    `(the retention, a tenth more of slack, and 2 s), until every row is deleted and flushed: in the steady state a group deletes rows as fast as it admits them, whatever the retention, ` +
    `and with a slack (${fmt(RETENTION_S / 10, 1)} s here, an hour for ${LEDGER_DAYS} d) longer than its alarms are apart, the deletes ride on the alarms it runs anyway.`,
);
console.log(
  `Time: "active" is each object's calls (their union, per object, wall clock in workerd); "held" what pending timers add (an object with a timer pending cannot hibernate; ` +
    `Cloudflare bills it as duration). CPU is the workerd process's in the window (every isolate, SQLite and the meter itself): an upper bound of the Worker's CPU time.\n`,
);
const cols = [
  ["DO req", (k) => k.requests, 3],
  ["rows read", (k) => k.rowsRead, 1],
  ["rows written", (k) => k.rowsWritten, 2],
  ["+ setAlarm", (k) => k.setAlarms, 3],
  ["origin POSTs", (k) => k.originPosts, 3],
  ["cold shared", (k) => k.coldShared, 3],
  ["active ms", (k) => k.activeMs, 2],
  ["held ms", (k) => k.heldMs, 2],
  ["CPU ms", cpuMsPer, 2],
];
const width = 44;
console.log(`${"per uplink".padEnd(width)}${cols.map(([h]) => h.padStart(13)).join("")}`);
for (const k of kinds) {
  console.log(`${`${k.label}${k.n && k.key !== "share" ? ` (N ${k.n})` : ""}`.padEnd(width)}${cols.map(([, f, d]) => (k.key === "share" && f === cpuMsPer ? "" : fmt(f(k), d)).padStart(13)).join("")}`);
}
const negative = METRICS.filter((m) => share[m] < 0);
if (negative.length) {
  console.log(
    `  (retention's share is below 0 in ${negative.join(", ")}: it is the difference of two windows on two storages, whose groups hold other rows and whose ` +
      `flushes and alarms fall where they fall; the bill counts max(0, share))`,
  );
}
console.log("\nCalls per uplink, by class and method (each one billed request), storage calls, and the window:");
for (const k of kinds.filter((x) => x.key !== "share")) {
  const calls = Object.entries(k.byMethod).map(([m, v]) => `${m} ${fmt(v, 3)}`).join(", ");
  const storage = Object.entries(k.storage).map(([m, v]) => `${m} ${fmt(v, 3)}`).join(", ");
  console.log(
    `  ${k.label}: ${calls}${storage ? `; storage: ${storage}` : ""}; ${fmt(k.originReadings, 2)} readings per origin POST's share; ` +
      `${fmt(k.alarmsPerGroup / k.groups / WINDOW_S, 2)} group alarms/s a group; ${k.sharedTouched} shared objects met; ` +
      `sent at most ${fmt(k.late, 0)} ms late; timers of no object ${fmt(k.unattributedMs, 2)} ms (counted as held)` +
      (k.groupStart
        ? `; a group's start (before the window: its constructor and the statements the window did not run, per group): ` +
          `${fmt(k.groupStart.rowsRead, 0)} rows read (${fmt(k.groupStart.constructorRowsRead, 0)} by the constructor), ${fmt(k.groupStart.rowsWritten, 0)} written`
        : ""),
  );
}

console.log("\nStatements that read or write the most rows, per uplink (statements, rows read, rows written; the meter's by_sql):");
for (const k of kinds.filter((x) => x.key !== "share")) {
  const top = (key) => [...k.bySql].sort((a, b) => b[key] - a[key]).filter((t) => t[key] >= 0.05).slice(0, 4);
  const seen = new Set();
  console.log(`  ${k.label}:`);
  for (const t of [...top("rowsRead"), ...top("rowsWritten")]) {
    if (seen.has(t.sql)) continue;
    seen.add(t.sql);
    console.log(`    ${fmt(t.statements, 2).padStart(6)} ${fmt(t.rowsRead, 1).padStart(8)} ${fmt(t.rowsWritten, 2).padStart(7)}  ${t.sql}`);
  }
}

// The bill: every new reading as the ledger's new reading plus retention's share, every
// replay as the ledger's duplicate.
const perNew = Object.fromEntries(METRICS.map((m) => [m, byKey.ledgerNew[m] + Math.max(0, share[m])]));
const perDup = byKey.ledgerDuplicate;
const monthly = (f) => READINGS_PER_MONTH * f(perNew) + REPLAYS_PER_MONTH * f(perDup);
const storedGb = (FLEET.bins * bytesPerDevice) / 1e9;
const usage = {
  subscription: 1,
  workerRequests: READINGS_PER_MONTH + REPLAYS_PER_MONTH,
  workerCpuMs: READINGS_PER_MONTH * cpuMsPer(byKey.ledgerNew) + REPLAYS_PER_MONTH * cpuMsPer(perDup),
  doRequests: monthly((f) => f.requests),
  doDuration: monthly((f) => (f.billedMs / 1000) * GB_PER_OBJECT),
  rowsRead: monthly((f) => f.rowsRead),
  rowsWritten: monthly((f) => f.rowsWritten + f.setAlarms),
  storedGbMonth: storedGb,
};
const UNITS = {
  subscription: "month",
  workerRequests: "requests",
  workerCpuMs: "CPU ms (upper bound)",
  doRequests: "requests",
  doDuration: "GB-s",
  rowsRead: "rows",
  rowsWritten: "rows (setAlarm included)",
  storedGbMonth: "GB-month",
};
const cost = (item, qty) => {
  const p = PRICES[item];
  return p.per === undefined ? p.price * qty : (Math.max(0, qty - p.included) / p.per) * p.price;
};
console.log(
  `\nMonthly bill, ${fmt(FLEET.bins)} bins every ${fmt(FLEET.periodMin, 1)} minutes for ${FLEET.days} days: ${fmt(READINGS_PER_MONTH / 1e9, 2)} billion new readings and ` +
    `${fmt(REPLAYS_PER_MONTH / 1e9, 2)} billion replays (${FLEET.replayShare * 100} % of uplinks), a ${fmt(LEDGER_ROWS)}-row (${LEDGER_DAYS}-day) ledger per bin; ` +
    `per-uplink figures measured at ${fmt(RATE, 3)} uplinks/s a group. ` +
    `A new reading costs the ledger's new reading plus retention's share, a replay the ledger's duplicate. ` +
    `Duration: billed time (active + held) × ${GB_PER_OBJECT * 1000} MB (Cloudflare bills 128 MB per object while active or unable to hibernate; the time is workerd's on this machine). ` +
    `Storage: ${fmt(bytesPerDevice / 1024, 0)} KiB per bin (what the ledger's ${fmt(measured.ledgerDevices)} devices with their ledgers added to the databases of the ledger's storage, groups' and shards', ÷ ${fmt(measured.ledgerDevices)}; GB = 10^9 bytes).`,
);
let total = 0;
for (const [item, qty] of Object.entries(usage)) {
  const dollars = cost(item, qty);
  total += dollars;
  const p = PRICES[item];
  console.log(`  ${item.padEnd(15)}${fmt(qty, item === "storedGbMonth" ? 1 : 0).padStart(24)} ${UNITS[item].padEnd(26)}$${fmt(dollars, 2).padStart(12)}`);
  console.log(`  ${"".padEnd(15)}  ${p.url}: "${p.quote}" (read in ${p.verified})`);
}
const perMillion = total / (READINGS_PER_MONTH / 1e6);
console.log(`  ${"total".padEnd(15)}${"".padStart(51)}$${fmt(total, 2).padStart(12)}  = $${fmt(perMillion, 2)} per million readings`);

console.log("\n$ per million uplinks of each kind (no allowance; Workers request and CPU included):");
for (const k of kinds.filter((x) => x.key !== "share")) {
  const one = (item, qty) => (PRICES[item].price * qty) / PRICES[item].per;
  const dollars =
    one("workerRequests", 1e6) +
    one("workerCpuMs", 1e6 * cpuMsPer(k)) +
    one("doRequests", 1e6 * k.requests) +
    one("doDuration", 1e6 * (k.billedMs / 1000) * GB_PER_OBJECT) +
    one("rowsRead", 1e6 * k.rowsRead) +
    one("rowsWritten", 1e6 * (k.rowsWritten + k.setAlarms));
  console.log(`  ${k.label.padEnd(width)}$${fmt(dollars, 2).padStart(9)}`);
}

// Issue 21's targets for the steady fleet, beside what was measured (not asserted).
const life = perNew.rowsWritten + perNew.setAlarms;
const targets = [
  ["rows written per new reading over its whole life (admission, delivery, retention), setAlarm included", "≤ 4", life, life <= 4],
  ["rows written per duplicate, setAlarm included", "≤ 0.2", perDup.rowsWritten + perDup.setAlarms, perDup.rowsWritten + perDup.setAlarms <= 0.2],
  ["rows read per uplink, the 7-day ledger's worst kind", "≤ 100", Math.max(perNew.rowsRead, perDup.rowsRead), Math.max(perNew.rowsRead, perDup.rowsRead) <= 100],
  ["Durable Object requests per uplink request (the fleet's mix)", "≤ 1.3", monthly((f) => f.requests) / usage.workerRequests, monthly((f) => f.requests) / usage.workerRequests <= 1.3],
  ["ms an object is held by a pending timer per uplink (the fleet's mix)", "0", monthly((f) => f.heldMs) / usage.workerRequests, monthly((f) => f.heldMs) / usage.workerRequests === 0],
  ["$ per million readings", "≤ 6", perMillion, perMillion <= 6],
];
console.log("\nIssue 21's targets (steady fleet), measured:");
for (const [what, target, value, met] of targets) console.log(`  ${met ? "met    " : "not met"}  ${what}: ${fmt(value, 3)} (target ${target})`);
console.log(`\nRun took ${fmt((Date.now() - started) / 1000, 0)} s.`);

if (JSON_OUT) {
  const params = { fleet: FLEET_BINS, periodS: PERIOD_S, groups: DRIVEN, ratePerGroup: RATE, windowS: WINDOW_S, leadInS: LEAD_S, perGroup: PER_GROUP, ledgerRows: LEDGER_ROWS, ledgerGroups: LEDGER_GROUPS, flushMs: FLUSH_MS };
  fs.writeFileSync(JSON_OUT, JSON.stringify({ commit, seed: SEED, params, kinds, perNew, bytesPerDevice, usage, total, perMillion, prices: PRICES }, null, 2));
}
process.exit(0);
