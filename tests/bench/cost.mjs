// `npm run bench:cost`: what Cloudflare bills per uplink (issue 21, "Cost per reading"),
// counted in workerd, and the monthly bill of a fleet from Cloudflare's published prices.
//
// The worker runs as tests/bench/metered-worker.js (src/worker/ with a meter on every
// Durable Object class index.js exports, whatever their names): per call into an object,
// the SQL cursors' own rowsRead / rowsWritten (what Cloudflare bills, index entries
// included), every setAlarm (a row written), every storage method by name, its wall time;
// and the timers that keep an object from hibernating. The origin is a local HTTP server
// that counts the POSTs it gets.
//
// Each kind of uplink is measured over a window of its own: N uplinks of that kind, one
// per device (N devices), sent one at a time to a freshly started worker on the same
// storage (so every object starts cold, as it does for a sensor reporting every 10
// minutes); the window lasts until quiet (no call running, no alarm or setTimeout due
// within ALARM_HORIZON_MS, every admitted reading at the origin, every meter line read)
// and everything metered in it is divided by N: the uplink's own call, and the alarms,
// deliveries and roll-up flushes it caused. Afterwards (outside the window) GET
// /v1/stats must show every reading the replies counted, and the origin every admitted
// key. Alarms due later than the horizon (retention, a week on) fall outside the window,
// so retention is a kind of its own: the same new reading on a worker whose
// LEDGER_RETENTION_MS and TTL_MS are RETENTION_MS, its window running until the rows
// are deleted (/v1/stats ledger_rows 0) and flushed.
//
// Prints figures; asserts nothing about time. Exits non-zero when something is wrong: an
// answer other than 200, a reply that is not the kind's verdict, an object call that
// threw, the origin missing a reading, /v1/stats not matching the replies, no quiet.
//
//   node tests/bench/cost.mjs [--devices N] [--ledger-devices N] [--ledger-rows N]
//                             [--seed N] [--flush-ms N] [--json FILE]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { get, origin, post, putConfig, start, tempDir } from "../worker/harness.mjs";
import { cpuNs, fmt, machine, workerdPids } from "./in-workerd.mjs";
import { option } from "./workload.mjs";
import { rng32 } from "../../www/sim.js";

const DEVICES = option("devices", 24);
const LEDGER_DEVICES = option("ledger-devices", 4);
const LEDGER_ROWS = option("ledger-rows", 7 * 144); // 7 days of a reading every 10 minutes
const SEED = option("seed", 21);
const FLUSH_MS = option("flush-ms", 2_000); // STATS_FLUSH_MS
const at = process.argv.indexOf("--json");
const JSON_OUT = at > 0 ? process.argv[at + 1] : null;

const SCRIPT = "tests/bench/metered-worker.js";
/** Alarms and setTimeouts due within this are waited for; later ones (retention) are outside the window. */
const ALARM_HORIZON_MS = 120_000;
/** How often shared objects are woken during a window: well within workerd's 10 s of inactivity before eviction. */
const KEEP_WARM_MS = 3_000;
/** A window not quiet by then is a failure. */
const PHASE_DEADLINE_MS = 180_000;
/** The retention (and TTL) of the retention kind's worker. */
const RETENTION_MS = 1_000;
/** Cloudflare bills duration for 128 MB per object ("Duration ... GB-s", footnote 5): 128 MB / 1 GB, as its examples compute. */
const GB_PER_OBJECT = 0.128;
const DAY = 86_400_000;
const T0 = Date.parse("2026-07-16T00:00:00Z");
const VARS = { TTL_MS: String(6 * 3_600_000), LEDGER_RETENTION_MS: String(7 * DAY), STATS_FLUSH_MS: String(FLUSH_MS), ORIGIN_TIMEOUT_MS: "10000" };
const DF703_CONFIG = { codec: "dingtek/df703", bin_depth_mm: 2500, offset_mm: 100 };
const DF703_FRAME = "800001011107d000190000000000010081"; // tests/fixtures/webhooks/raw/loriot-df703-rx.json

// --- the fleet and the prices ---------------------------------------------------------

const FLEET = { bins: 1_000_000, periodMin: 10, replayShare: 0.2, days: 30 };
const READINGS_PER_MONTH = (FLEET.bins * FLEET.days * 24 * 60) / FLEET.periodMin;
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

const rand = rng32(SEED);
const fail = (message) => {
  throw new Error(message);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const iso = (ms) => new Date(ms).toISOString();
const hub = await origin();

/** The classes the meter wraps (GET /__meter): every one index.js exports that extends DurableObject. */
const METERED = new Set();
/** Every device id the bench uses, in upper case: an object named otherwise serves many devices. */
const DEVICE_NAMES = new Set();
/** The ids of a kind's devices: `prefix` + 16 hex digits in all (a DevEUI for the raw kinds). */
function ids(prefix, n) {
  const out = Array.from({ length: n }, (_, i) => `${prefix}${(SEED * 1000 + i).toString(16).toUpperCase().padStart(16 - prefix.length, "0")}`);
  for (const id of out) DEVICE_NAMES.add(id.toUpperCase());
  return out;
}
const reading = (device_id, seq) => [{ device_id, seq, ts: iso(T0 + seq * 600_000), fill_pct: Math.round(rand() * 1000) / 10 }];
/** Frame `counter` of a DF703 as LORIOT posts it: the fixture's frame, its level (bytes 5-6) and counter (bytes 13-14) set. */
function df703(eui, counter) {
  const bytes = Buffer.from(DF703_FRAME, "hex");
  bytes.writeUInt16BE(300 + Math.floor(rand() * 2000), 5);
  bytes.writeUInt16BE(counter, 13);
  return { cmd: "rx", EUI: eui, ts: T0 + counter * 600_000, ack: false, bat: 254, fcnt: counter, port: 3, data: bytes.toString("hex") };
}

/** One worker's storage (a directory), started afresh for each window. */
class Storage {
  constructor(name, vars) {
    this.name = name;
    this.dir = tempDir();
    this.vars = { ORIGIN_URL: hub.url, ...VARS, ...vars };
    this.totals = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, parked: 0 };
    this.sizes = new Map(); // object → its database's last size
    this.objects = new Map(); // object → {class, name}
    this.classes = new Set();
  }

  /**
   * Starts the worker, runs `send(w, keys)` (which posts the window's uplinks and pushes
   * each admitted key on `keys`), waits for quiet, checks the origin and /v1/stats, stops
   * the worker. Returns the window's figures per uplink (`send` returns the uplink count).
   */
  async window(name, send, check = () => {}) {
    const w = await start({ persist: this.dir, script: SCRIPT, vars: this.vars });
    // Objects that serve many devices are busy in a real fleet: warm, kept so.
    const warm = () => wake(w, this.shared());
    let keepWarm;
    try {
      await warm();
      keepWarm = setInterval(() => warm().catch(() => {}), KEEP_WARM_MS);
      const firstPost = hub.requests.length;
      const cpu0 = workerdCpuNs();
      const t0 = Date.now();
      const keys = [];
      const n = await send(w, keys);
      const lines = await quiet(w, keys, name);
      const cpu = workerdCpuNs() - cpu0;
      const seconds = (Date.now() - t0) / 1000;
      clearInterval(keepWarm);
      const posts = hub.requests.slice(firstPost);
      const got = new Set(hub.accepted());
      const lost = keys.filter((k) => !got.has(k));
      if (lost.length) fail(`${name}: the origin lacks ${lost.length} admitted readings (${lost.slice(0, 3).join(", ")})`);
      const unreadable = lines.reduce((t, l) => t + (l.unreadable_cursors ?? 0), 0);
      if (unreadable) fail(`${name}: ${unreadable} SQL cursors could not be read at the end of a call: their rows are not all counted`);
      const thrown = lines.filter((l) => l.error);
      if (thrown.length) fail(`${name}: ${thrown.length} object calls threw; the first: ${thrown[0].class}.${thrown[0].method}: ${thrown[0].error}`);
      for (const l of lines.filter((x) => x.event === "meter")) {
        if (l.db_bytes !== null) this.sizes.set(l.object, l.db_bytes);
        this.objects.set(l.object, { class: l.class, name: l.name });
        this.classes.add(l.class);
      }
      const stats = (await get(w.call, "/v1/stats")).body;
      for (const [k, v] of Object.entries(this.totals)) {
        if (stats[k] !== v) fail(`${name}: /v1/stats ${k} is ${stats[k]} once quiet, the replies counted ${v}: the window ended before the figures were flushed`);
      }
      if (stats.pending_deliveries !== 0) fail(`${name}: /v1/stats pending_deliveries ${stats.pending_deliveries} once quiet`);
      check(stats);
      // A device flushes its figures at most every STATS_FLUSH_MS: the next window's
      // uplinks come later than that, as a sensor's next reading does.
      await sleep(FLUSH_MS);
      return { name, n, seconds, cpuNs: cpu, ...figures(lines, posts, n, (object) => this.isShared(object)) };
    } finally {
      clearInterval(keepWarm);
      await w.mf.dispose();
    }
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
    if (!verdicts.length || verdicts.some((v) => v !== verdict)) fail(`POST ${route}: verdicts ${verdicts.join(", ")}, expected ${verdict}: ${text.slice(0, 300)}`);
    this.totals.received += reply.received;
    this.totals.unique += reply.unique;
    this.totals.duplicates_suppressed += reply.duplicates_suppressed;
    this.totals.rejected += reply.rejected.length;
    this.totals.parked += reply.parked?.length ?? 0;
    keys.push(...reply.admitted.map((a) => a.key));
    return reply;
  }

  async configure(w, id, config) {
    const r = await putConfig(w.call, id, config);
    if (r.status !== 200) fail(`PUT /v1/devices/${id}/config answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    if (r.body.unparked.uplinks !== 0) fail(`PUT /v1/devices/${id}/config unparked ${r.body.unparked.uplinks} uplinks; the bench configures before any uplink`);
  }

  /** Σ database sizes / devices: what a device costs on disk, shared objects' share included. */
  bytesPerDevice(devices) {
    return [...this.sizes.values()].reduce((t, b) => t + b, 0) / devices;
  }

  remove() {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** CPU time of the workerd processes so far (ns), every isolate and SQLite included. */
function workerdCpuNs() {
  return workerdPids(process.pid).reduce((t, pid) => t + cpuNs(pid), 0);
}

/** Starts (or keeps from eviction) the objects `ids`, without a product call (metered-worker.js `wake`). */
async function wake(w, ids) {
  if (!ids.length) return;
  const res = await w.mf.dispatchFetch("http://bench/__meter/wake", { method: "POST", body: JSON.stringify(ids) });
  const { woken } = await res.json();
  if (woken !== ids.length) fail(`woke ${woken} of ${ids.length} shared objects`);
}

/** The meter's lines so far (parsed). */
function meterLines(w) {
  return w.lines.filter((l) => l.startsWith('{"event":"meter')).map((l) => JSON.parse(l));
}

/**
 * Waits until nothing is left to happen soon: no object call running, no alarm or
 * setTimeout due within ALARM_HORIZON_MS (the isolate's figures, GET /__meter, which calls
 * no object), every admitted key at the origin, and every meter line the isolate wrote
 * read; twice in a row, 100 ms apart. Returns the meter lines.
 */
async function quiet(w, keys, name) {
  const deadline = Date.now() + PHASE_DEADLINE_MS;
  let calm = 0;
  for (;;) {
    const m = await (await w.mf.dispatchFetch("http://bench/__meter")).json();
    for (const c of m.classes) METERED.add(c);
    const lines = meterLines(w);
    const soon = m.now + ALARM_HORIZON_MS;
    const got = new Set(hub.accepted());
    const waiting = {
      running: m.running,
      alarms: m.alarms.filter((t) => t <= soon).length,
      timers: m.timers.filter((t) => t.kind === "setTimeout" && t.due <= soon).length,
      unread: m.lines - lines.length,
      undelivered: keys.filter((k) => !got.has(k)).length,
    };
    calm = Object.values(waiting).every((v) => v === 0) ? calm + 1 : 0;
    if (calm >= 2) return lines;
    if (Date.now() > deadline) fail(`${name}: not quiet after ${PHASE_DEADLINE_MS / 1000} s: ${JSON.stringify(waiting)}`);
    await sleep(100);
  }
}

/**
 * A window's meter lines and origin POSTs as figures per uplink (÷ n): Durable Object
 * requests (calls the runtime made: RPC, alarm, fetch), rows, setAlarms, storage calls,
 * cold starts, the calls by class and method, and time: `activeMs` (per object, the
 * union of its calls), `heldMs` (what pending timers add to it: an object with a timer
 * pending cannot hibernate) and `billedMs` (their union, per object).
 */
function figures(lines, posts, n, isShared) {
  const calls = lines.filter((l) => l.event === "meter" && l.kind !== "background");
  const work = lines.filter((l) => l.event === "meter");
  const sum = (key) => work.reduce((t, l) => t + l[key], 0);
  const byMethod = {};
  for (const c of calls) byMethod[`${c.class}.${c.method}`] = (byMethod[`${c.class}.${c.method}`] ?? 0) + 1;
  const storage = {};
  for (const l of work) for (const [k, v] of Object.entries(l.storage)) storage[k] = (storage[k] ?? 0) + v;
  const time = timeOf(calls, lines.filter((l) => l.event === "meter_timer"));
  const per = (x) => x / n;
  return {
    requests: per(calls.length),
    rowsRead: per(sum("rows_read") + sum("kv_rows_read")),
    rowsWritten: per(sum("rows_written") + sum("kv_rows_written")),
    setAlarms: per(sum("set_alarms")),
    statements: per(sum("statements")),
    cold: per(calls.filter((c) => c.cold).length),
    coldShared: per(calls.filter((c) => c.cold && isShared(c.object)).length),
    sharedTouched: new Set(calls.filter((c) => isShared(c.object)).map((c) => c.object)).size,
    originPosts: per(posts.length),
    originReadings: per(posts.reduce((t, p) => t + (p.body?.readings?.length ?? 0), 0)),
    activeMs: per(time.active),
    heldMs: per(time.billed - time.active),
    billedMs: per(time.billed),
    byMethod: Object.fromEntries(Object.entries(byMethod).map(([k, v]) => [k, per(v)])),
    storage: Object.fromEntries(Object.entries(storage).map(([k, v]) => [k, per(v)])),
  };
}

/** Milliseconds of object time: per object, the union of its calls, and of its calls and its timers. */
function timeOf(calls, timerLines) {
  const spans = new Map(); // object → {calls: [[from, to]], timers: [[from, to]]}
  const of = (object) => spans.get(object) ?? spans.set(object, { calls: [], timers: [] }).get(object);
  for (const c of calls) of(c.object).calls.push([c.at, c.at + c.wall_ms]);
  const settled = new Map(timerLines.filter((t) => t.phase === "settled").map((t) => [t.id, t.at]));
  let unattributed = 0;
  for (const t of timerLines.filter((l) => l.phase === "set")) {
    // A timer still pending at the window's end holds its object until it is due.
    const span = [t.at, settled.get(t.id) ?? t.at + t.delay_ms];
    if (t.object) of(t.object).timers.push(span);
    else unattributed += span[1] - span[0];
  }
  let active = 0;
  let billed = unattributed;
  for (const s of spans.values()) {
    active += union(s.calls);
    billed += union([...s.calls, ...s.timers]);
  }
  return { active, billed };
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
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
})();
console.log(`reconnect-dedupe cost per uplink (issue 21)  ${new Date().toISOString()}  commit ${commit}`);
console.log(machine());
console.log(
  `seed ${SEED}; ${DEVICES} devices per kind, one uplink each per window; ledger kinds: ${LEDGER_DEVICES} devices with ${LEDGER_ROWS} rows; ` +
    `TTL_MS 6 h, LEDGER_RETENTION_MS 7 d, STATS_FLUSH_MS ${FLUSH_MS}, ORIGIN_TIMEOUT_MS 10000; origin answering 200 on 127.0.0.1`,
);

/**
 * POSTs `uplinks` (`[route, body, verdict]` each, one at a time) in a window of
 * `storage`'s; every reply's verdicts must be the uplink's `verdict`. Returns the
 * window's figures per uplink, as kind `key` (`label`), or nothing for a setup window.
 */
async function kind(storage, key, label, uplinks, check) {
  const figures = await storage.window(
    key,
    async (w, keys) => {
      for (const [route, body, verdict] of uplinks) await storage.uplink(w, route, body, verdict, keys);
      return uplinks.length;
    },
    check,
  );
  return label ? { key, label, ...figures } : undefined;
}

const native = (body, verdict = "admitted") => ["/v1/readings", body, verdict];
const loriot = (body, verdict) => ["/v1/uplinks/loriot", body, verdict];

/**
 * Measures every kind, each in its window: on the main worker (a device's first reading,
 * then new readings, duplicates, raw and parked uplinks), on the ledger's worker and on
 * the retention worker. Returns `{kinds, classes, bytesPerDevice}`.
 */
async function measure() {
  const kinds = [];
  const main = new Storage("main", {});
  const bins = ids("cost-n", DEVICES);
  const configured = ids("DF703C", DEVICES);
  const unconfigured = ids("DF703B", DEVICES);
  try {
    // Not measured: the raw devices' configuration and first frames, the first parked frames.
    await main.window("setup", async (w, keys) => {
      for (const id of configured) await main.configure(w, id, DF703_CONFIG);
      for (const id of configured) await main.uplink(w, ...loriot(df703(id, 1), "admitted"), keys);
      for (const id of unconfigured) await main.uplink(w, ...loriot(df703(id, 1), "parked"), keys);
      return 1;
    });
    kinds.push(await kind(main, "first", "new reading, the device's first", bins.map((id) => native(reading(id, 1)))));
    const second = bins.map((id) => reading(id, 2));
    kinds.push(await kind(main, "new", "new reading", second.map((body) => native(body))));
    kinds.push(await kind(main, "duplicate", "duplicate of it", second.map((body) => native(body, "duplicate"))));
    kinds.push(await kind(main, "raw", "raw DF703 (LORIOT), decoded, new frame", configured.map((id) => loriot(df703(id, 2), "admitted"))));
    kinds.push(await kind(main, "parked", "raw DF703, parked (no configuration)", unconfigured.map((id) => loriot(df703(id, 2), "parked"))));
  } finally {
    main.remove();
  }

  // The 7-day ledger, on a worker of its own: its storage per device is the ledger's.
  // Its readings are dated 10 minutes apart over 7 days and admitted now.
  const ledger = new Storage("ledger", {});
  const ledgerIds = ids("cost-l", LEDGER_DEVICES);
  let bytesPerDevice;
  try {
    const BURST = 504;
    const bursts = ledgerIds.flatMap((id) =>
      Array.from({ length: Math.ceil(LEDGER_ROWS / BURST) }, (_, b) =>
        native(Array.from({ length: Math.min(BURST, LEDGER_ROWS - b * BURST) }, (_, k) => reading(id, b * BURST + k + 1)[0])),
      ),
    );
    await kind(ledger, "ledger setup", null, bursts);
    const next = ledgerIds.map((id) => reading(id, LEDGER_ROWS + 1));
    kinds.push(await kind(ledger, "ledgerNew", `new reading, ${fmt(LEDGER_ROWS)}-row ledger`, next.map((body) => native(body))));
    kinds.push(await kind(ledger, "ledgerDuplicate", `duplicate, ${fmt(LEDGER_ROWS)}-row ledger`, next.map((body) => native(body, "duplicate"))));
    bytesPerDevice = ledger.bytesPerDevice(LEDGER_DEVICES);
  } finally {
    ledger.remove();
  }

  // Retention: the new reading's whole life, on a worker whose rows expire after RETENTION_MS.
  const short = new Storage("retention", { TTL_MS: String(RETENTION_MS), LEDGER_RETENTION_MS: String(RETENTION_MS) });
  const retained = ids("cost-r", DEVICES);
  try {
    await kind(short, "retention setup", null, retained.map((id) => native(reading(id, 1))));
    const deleted = (stats) => {
      if (stats.ledger_rows !== 0) fail(`retention: /v1/stats ledger_rows ${stats.ledger_rows} once quiet; retention deleted nothing in the window`);
    };
    kinds.push(await kind(short, "life", `new reading, whole life (retention ${RETENTION_MS / 1000} s)`, retained.map((id) => native(reading(id, 2))), deleted));
  } finally {
    short.remove();
    await hub.close();
  }
  return { kinds, classes: new Set([...main.classes, ...ledger.classes, ...short.classes]), bytesPerDevice };
}

let measured;
try {
  measured = await measure();
} catch (e) {
  console.error(`bench:cost: ${e.message}`);
  process.exit(1);
}
const { kinds, classes, bytesPerDevice } = measured;

// --- what it comes to -----------------------------------------------------------------

const byKey = Object.fromEntries(kinds.map((k) => [k.key, k]));
const METRICS = ["requests", "rowsRead", "rowsWritten", "setAlarms", "originPosts", "activeMs", "heldMs", "billedMs", "cold", "coldShared"];
// Retention's share: the whole life minus the same reading without retention in the window.
const share = Object.fromEntries(METRICS.map((m) => [m, byKey.life[m] - byKey.new[m]]));
kinds.push({ key: "share", label: "  retention's share (whole life − new reading)", n: byKey.life.n, ...share, byMethod: {}, storage: {} });

const cpuMsPer = (k) => (k.cpuNs ? k.cpuNs / 1e6 / k.n : 0);
console.log(`\nMetered: ${[...METERED].join(", ")} (every class src/worker/index.js exports that extends DurableObject); met in the windows: ${[...classes].sort().join(", ")}`);
console.log(
  `Window of a kind: its N uplinks, one per device, sent one at a time to a worker started afresh (objects named after a device start cold, as a sensor's do ` +
    `between readings 10 minutes apart; objects that serve many devices, met in earlier windows, are woken before and during the window without a product call, ` +
    `as a real fleet keeps them busy; "cold shared" counts those it still met cold); until quiet (no call running, no alarm or setTimeout due within ${ALARM_HORIZON_MS / 1000} s, ` +
    `every admitted reading at the origin); everything metered in it ÷ N: the uplink's own calls, the alarms, deliveries and roll-up flushes it caused. ` +
    `Retention (due 7 d later) is outside those windows; its kind runs the new reading on a worker with LEDGER_RETENTION_MS = TTL_MS = ${RETENTION_MS / 1000} s until its row is deleted and flushed.`,
);
console.log(
  `Time: "active" is each object's calls (their union, per object, wall clock in workerd); "held" what pending timers add (an object with a timer pending cannot hibernate; ` +
    `Cloudflare bills it as duration). CPU is the workerd process's (every isolate, SQLite and the meter itself): an upper bound of the Worker's CPU time.\n`,
);
const cols = [
  ["DO req", (k) => k.requests, 2],
  ["rows read", (k) => k.rowsRead, 1],
  ["rows written", (k) => k.rowsWritten, 1],
  ["+ setAlarm", (k) => k.setAlarms, 2],
  ["origin POSTs", (k) => k.originPosts, 2],
  ["cold starts", (k) => k.cold, 2],
  ["cold shared", (k) => k.coldShared, 2],
  ["active ms", (k) => k.activeMs, 1],
  ["held ms", (k) => k.heldMs, 0],
  ["CPU ms", cpuMsPer, 1],
];
const width = 46;
console.log(`${"per uplink".padEnd(width)}${cols.map(([h]) => h.padStart(13)).join("")}`);
for (const k of kinds) {
  console.log(`${`${k.label}${k.n && k.key !== "share" ? ` (N ${k.n})` : ""}`.padEnd(width)}${cols.map(([, f, d]) => (k.key === "share" && f === cpuMsPer ? "" : fmt(f(k), d)).padStart(13)).join("")}`);
}
console.log("\nCalls per uplink, by class and method (each one billed request), and storage calls:");
for (const k of kinds.filter((x) => x.key !== "share")) {
  const calls = Object.entries(k.byMethod).map(([m, v]) => `${m} ${fmt(v, 2)}`).join(", ");
  const storage = Object.entries(k.storage).map(([m, v]) => `${m} ${fmt(v, 2)}`).join(", ");
  console.log(`  ${k.label}: ${calls}${storage ? `; storage: ${storage}` : ""}; shared objects met: ${k.sharedTouched} (${fmt(k.n / Math.max(1, k.sharedTouched), 1)} uplinks each)`);
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
  `\nMonthly bill, ${fmt(FLEET.bins)} bins every ${FLEET.periodMin} minutes for ${FLEET.days} days: ${fmt(READINGS_PER_MONTH / 1e9, 2)} billion new readings and ` +
    `${fmt(REPLAYS_PER_MONTH / 1e9, 2)} billion replays (${FLEET.replayShare * 100} % of uplinks), a ${fmt(LEDGER_ROWS)}-row (7-day) ledger per bin. ` +
    `A new reading costs the ledger's new reading plus retention's share, a replay the ledger's duplicate. ` +
    `Duration: billed time (active + held) × ${GB_PER_OBJECT * 1000} MB (Cloudflare bills 128 MB per object while active or unable to hibernate; the time is workerd's on this machine). ` +
    `Storage: ${fmt(bytesPerDevice / 1024, 0)} KiB per bin (Σ database sizes of the ledger worker ÷ its ${LEDGER_DEVICES} devices, shared objects included; GB = 10^9 bytes).`,
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
for (const [what, target, value, met] of targets) console.log(`  ${met ? "met    " : "not met"}  ${what}: ${fmt(value, 2)} (target ${target})`);
console.log(`\nRun took ${fmt((Date.now() - started) / 1000, 0)} s.`);

if (JSON_OUT) {
  fs.writeFileSync(JSON_OUT, JSON.stringify({ commit, seed: SEED, devices: DEVICES, kinds, perNew, bytesPerDevice, usage, total, perMillion, prices: PRICES }, null, 2));
}
