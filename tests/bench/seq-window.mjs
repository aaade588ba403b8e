// `npm run bench:window`: what the sequence window costs a device (docs/sequence-health.md "Sequence
// health per device"). The device object keeps no window in memory between bursts: a
// burst whose seqs feed it (every native `POST /v1/readings`) reads the `seq_window`
// row, parses it (`SeqWindow.fromBytes`), observes each seq, takes its totals,
// serialises it (`toBytes`) and writes the row back, in the burst's transaction
// (src/worker/window.js `observeSeqs`, `seqWindow`). Two device histories, each
// primed with PRIME seqs so that the whole ring (W = 2 048) is in use: "in order"
// (consecutive seqs: the typical device) and "lossy" (one seq in 30 lost: 64 gaps
// listed, the bound, so the stored bytes are the largest). Then bursts of a few
// consecutive seqs, as a device sends them.
//   1. outside workerd (Wasm in Node): the window's bytes, the core's share of a burst
//      (fromBytes, observe × readings, totals, toBytes, free) and its parts, and the
//      linear memory a window takes while it is in use;
// In workerd (Miniflare, tests/worker/harness.mjs, storage on disk in a temporary
// directory):
//   2. the same native bursts against the worker, against
//      tests/bench/no-window-worker.js (its device object does not feed the window,
//      nothing else changed) and against tests/bench/cached-window-worker.js (its device
//      object keeps the window in memory: what caching would save), all three running,
//      in many short runs that alternate between them (the order reversed every other
//      pass): requests/s, p50,
//      p99, and workerd's CPU time per burst (each variant's own workerd process, its
//      threads' time on a CPU from /proc: unlike requests/s it does not move with what
//      else the shared cores run); per pass, the two adjacent runs compared, and the
//      median over the passes is the window's share;
//   3. on disk: the `seq_window` row's bytes and the pages its table takes per device
//      (SQLite's dbstat), and the whole database file against the no-window worker's.
// Prints figures; asserts nothing about time.
//
//   node tests/bench/seq-window.mjs [--bursts N] [--readings N] [--devices N] [--concurrency N] [--passes N] [--rounds N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { databases, post, start } from "../worker/harness.mjs";
import { coreInNode, cpuNs, fmt, machine, mean, median, microsPerItem, sqliteQueries, timedPosts, totals, workerdPids } from "./in-workerd.mjs";
import { option } from "./workload.mjs";

const BURSTS = option("bursts", 250);
const READINGS = option("readings", 5);
const DEVICES = option("devices", 20);
const CONCURRENCY = option("concurrency", 8);
const PASSES = option("passes", 10);
const ROUNDS = option("rounds", 7);
/** Seqs each device is primed with: past W = 2 048, so its ring is in use. */
const PRIME = 2300;
/** Lossy history: seq i is lost when i mod LOSS = LOSS / 2 (one in 30; ~77 gaps over PRIME, 64 listed). */
const LOSS = 30;
const START = 1_000_000;
const T0 = Date.parse("2026-07-16T09:00:00Z");

const histories = {
  inOrder: { name: "in order (typical)", group: "W1", keeps: () => true },
  lossy: { name: "lossy (64 gaps, largest)", group: "W2", keeps: (i) => i % LOSS !== LOSS / 2 },
};
/** The primed seqs of a history. */
const primed = (h) => Array.from({ length: PRIME }, (_, i) => i).filter(h.keeps).map((i) => START + i);
/** A native reading of seq `seq`, a minute per seq. */
const reading = (device_id, seq) => ({ device_id, seq, ts: new Date(T0 + (seq - START) * 60_000).toISOString(), fill_pct: (seq % 1000) / 10 });

console.log(`reconnect-dedupe sequence window: its cost per burst and per device  ${new Date().toISOString()}`);
console.log(machine());
console.log(
  `workload: devices primed with ${fmt(PRIME)} seqs (in order, or one in ${LOSS} lost), then bursts of ${READINGS} consecutive seqs; ` +
    `in workerd ${fmt(BURSTS)} bursts a run over ${DEVICES} devices a history, ${CONCURRENCY} in flight, ${PASSES} passes`,
);

// 1. The core's share, outside workerd.
const core = await coreInNode();
const { SeqWindow } = core;
/** A window fed `seqs`, a minute apart. */
function windowOf(seqs) {
  const w = new SeqWindow();
  seqs.forEach((s, i) => w.observe(s, T0 + i * 60_000));
  return w;
}
const items = Array.from({ length: 20_000 }, (_, i) => i);
console.log(`1. the core in Node (Wasm), µs per burst of ${READINGS} readings, median of ${ROUNDS} rounds over ${fmt(items.length)} bursts:`);
const NEW_BURST = microsPerItem(items, () => {
  const w = new SeqWindow();
  for (let k = 0; k < READINGS; k++) w.observe(START + k, T0);
  w.totals();
  w.toBytes();
  w.free();
}, ROUNDS);
const first = windowOf([START]);
console.log(`   ${"a new device (no row yet)".padEnd(28)} ${fmt(first.toBytes().length).padStart(3)} B stored after its first seq; whole burst ${NEW_BURST.toFixed(2)} µs`);
first.free();
const inNode = {};
for (const [key, h] of Object.entries(histories)) {
  const seqs = primed(h);
  const live = windowOf(seqs);
  const bytes = live.toBytes();
  const gaps = live.gaps().length;
  const clock = () => {
    let next = seqs.at(-1) + 1;
    let at = T0 + seqs.length * 60_000;
    return () => [(next += READINGS) - READINGS, (at += 60_000)];
  };
  // The worker's burst: the row's bytes parsed, the seqs observed, the totals, the bytes back.
  let stored = bytes;
  let tick = clock();
  const whole = microsPerItem(items, () => {
    const [from, at] = tick();
    const w = SeqWindow.fromBytes(stored);
    for (let k = 0; k < READINGS; k++) w.observe(from + k, at);
    w.totals();
    stored = w.toBytes();
    w.free();
  }, ROUNDS);
  const parse = microsPerItem(items, () => SeqWindow.fromBytes(bytes).free(), ROUNDS);
  tick = clock();
  const observe = microsPerItem(items, () => {
    const [from, at] = tick();
    for (let k = 0; k < READINGS; k++) live.observe(from + k, at);
  }, ROUNDS);
  const sums = microsPerItem(items, () => live.totals(), ROUNDS);
  const serialise = microsPerItem(items, () => live.toBytes(), ROUNDS);
  // Memory while in use (the worker holds one window, during a burst): the linear-memory
  // growth of N more windows held at once, after N held first have taken up the free space.
  const held = 10_000;
  const hold = () => Array.from({ length: held }, () => SeqWindow.fromBytes(bytes));
  const first = hold();
  const before = core.memory.buffer.byteLength;
  const second = hold();
  const grown = (core.memory.buffer.byteLength - before) / held;
  [...first, ...second].forEach((w) => w.free());
  inNode[key] = { bytes: bytes.length, gaps, whole };
  console.log(
    `   ${h.name.padEnd(28)} ${fmt(bytes.length).padStart(3)} B stored (${gaps} gaps listed); whole burst ${whole.toFixed(2)} µs = ` +
      `fromBytes+free ${parse.toFixed(2)} + observe × ${READINGS} ${observe.toFixed(2)} + totals ${sums.toFixed(2)} + toBytes ${serialise.toFixed(2)}; ` +
      `in use: ${fmt(grown)} B of linear memory a window (growth over ${fmt(held)} more held at once)`,
  );
  live.free();
}

// 2. In workerd: the worker and the worker without the window, the same bursts.
const variants = {
  window: { name: "worker (window fed)", script: "src/worker/index.js" },
  none: { name: "no-window worker", script: "tests/bench/no-window-worker.js" },
  cached: { name: "cached-window worker", script: "tests/bench/cached-window-worker.js" },
};
const devicesOf = (h) => Array.from({ length: DEVICES }, (_, d) => `${h.group}${String(d).padStart(14, "0")}`);
/** Per variant and device, the next seq it sends. */
const nextSeq = {};
/** `count` bursts of READINGS consecutive seqs, device after device of history `h`, in variant `v`. */
function bursts(v, h, count) {
  return Array.from({ length: count }, (_, j) => {
    const id = devicesOf(h)[j % DEVICES];
    const k = `${v}/${id}`;
    const from = nextSeq[k];
    nextSeq[k] += READINGS;
    return JSON.stringify(Array.from({ length: READINGS }, (_, r) => reading(id, from + r)));
  });
}

const dirs = {};
const workers = {};
const results = {};
try {
  for (const [v, variant] of Object.entries(variants)) {
    dirs[v] = fs.mkdtempSync(path.join(os.tmpdir(), `rd-bench-window-${v}-`));
    const others = workerdPids(process.pid);
    workers[v] = await start({ persist: dirs[v], script: variant.script });
    workers[v].pid = workerdPids(process.pid).find((pid) => !others.includes(pid));
    // Prime every device: its history in bursts of up to 500 readings, one device a burst.
    for (const h of Object.values(histories)) {
      const seqs = primed(h);
      for (const id of devicesOf(h)) {
        for (let i = 0; i < seqs.length; i += 500) {
          const res = await post(workers[v].call, "/v1/readings", seqs.slice(i, i + 500).map((s) => reading(id, s)));
          if (res.status !== 200) throw new Error(`priming ${id} in ${variant.name}: ${res.status} ${await res.text()}`);
          await res.arrayBuffer();
        }
        nextSeq[`${v}/${id}`] = START + PRIME;
      }
    }
  }
  console.log(`2. POST /v1/readings in workerd, bursts of ${READINGS} consecutive seqs (each run after a warm-up burst a device, not counted):`);
  const runs = Object.keys(histories).flatMap((h) => Object.keys(variants).map((v) => [h, v]));
  for (let pass = 0; pass < PASSES; pass++) {
    for (const [h, v] of pass % 2 ? [...runs].reverse() : runs) {
      const call = workers[v].call;
      // Warm-up: each device's object awake (an idle one is evicted after 10 s) and its seen-set rebuilt.
      await Promise.all(bursts(v, histories[h], DEVICES).map((b) => post(call, "/v1/readings", b).then((r) => r.arrayBuffer())));
      const cpu0 = cpuNs(workers[v].pid);
      const r = await timedPosts(call, `${histories[h].name}, ${variants[v].name}`, "/v1/readings", bursts(v, histories[h], BURSTS), CONCURRENCY);
      r.cpu = (cpuNs(workers[v].pid) - cpu0) / 1e3 / BURSTS;
      console.log(`      workerd CPU ${fmt(r.cpu)} µs a burst`);
      if (r.counts.unique !== BURSTS * READINGS || r.counts.other) console.log(`   NOTE: expected ${BURSTS * READINGS} unique readings and no other answer`);
      (results[`${h}/${v}`] ??= []).push(r);
    }
  }
  console.log(
    `   summary (${PASSES} runs each; per pass, the worker against each variant: the difference of workerd's CPU time per burst, ` +
      `and the ratio of requests/s):`,
  );
  for (const [h, hist] of Object.entries(histories)) {
    for (const [v, list] of Object.keys(variants).map((v) => [v, results[`${h}/${v}`]])) {
      console.log(
        `   ${`${hist.name}, ${variants[v].name}`.padEnd(50)} requests/s mean ${fmt(mean(list.map((r) => r.rps)))} (${fmt(Math.min(...list.map((r) => r.rps)))}–` +
          `${fmt(Math.max(...list.map((r) => r.rps)))}), p50 median ${median(list.map((r) => r.p50)).toFixed(1)} ms, p99 median ${median(list.map((r) => r.p99)).toFixed(1)} ms; ` +
          `workerd CPU median ${fmt(median(list.map((r) => r.cpu)))} µs a burst (${fmt(Math.min(...list.map((r) => r.cpu)))}–${fmt(Math.max(...list.map((r) => r.cpu)))})`,
      );
    }
    const w = results[`${h}/window`];
    for (const [v, what] of [["none", "worker − no-window"], ["cached", "worker − cached-window"]]) {
      const n = results[`${h}/${v}`];
      const ratios = w.map((r, i) => r.rps / n[i].rps);
      const extra = w.map((r, i) => r.cpu - n[i].cpu);
      const share = w.map((r, i) => 1 - n[i].cpu / r.cpu);
      const list = (xs, f) => [...xs].sort((a, b) => a - b).map(f).join(" ");
      const signed = (x) => `${x >= 0 ? "+" : ""}${fmt(x)}`;
      console.log(
        `   ${`${hist.name}: ${what}`.padEnd(50)} workerd CPU median ${signed(median(extra))} µs a burst = ${(median(share) * 100).toFixed(1)} % of the worker's ` +
          `(passes, µs: ${list(extra, signed)}); requests/s ratio median ${median(ratios).toFixed(3)} (${list(ratios, (x) => x.toFixed(2))})`,
      );
    }
    console.log(`   ${`${hist.name}: the core's own share (1.)`.padEnd(50)} ${inNode[h].whole.toFixed(2)} µs a burst`);
  }
} finally {
  for (const w of Object.values(workers)) await w.mf.dispose();
}

// 3. On disk, per device, while no runtime holds the files.
const queries = {
  device: "SELECT (SELECT device_id FROM readings LIMIT 1)",
  rows: "SELECT COUNT(*) FROM readings",
  file: "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
  bytes: "SELECT COALESCE((SELECT LENGTH(bytes) FROM seq_window), 0)",
  missing: "SELECT COALESCE((SELECT missing FROM seq_window), 0)",
  payload: "SELECT COALESCE(SUM(payload), 0) FROM dbstat WHERE name = 'seq_window'",
  pages: "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'seq_window'",
};
const [window, none, cached] = [dirs.window, dirs.none, dirs.cached].map((dir) => sqliteQueries(databases(dir, "GroupObject"), queries));
console.log("3. on disk, per device (dbstat; the whole file: page_count × page_size):");
for (const h of Object.values(histories)) {
  const mine = (files) => files.filter((f) => f.device?.startsWith(h.group));
  const [w, n, c] = [mine(window), mine(none), mine(cached)];
  const [t, u] = [totals(w), totals(n)];
  const per = (x) => fmt(x / w.length);
  console.log(
    `   ${h.name.padEnd(28)} seq_window row: ${per(t.bytes)} B of bytes (${per(t.missing)} missing), record ${per(t.payload)} B, its table ${per(t.pages)} B of pages ` +
      `(${fmt(u.pages / n.length)} B without the window: the schema makes the table, empty); whole file ${per(t.file)} B against ${fmt(u.file / n.length)} B ` +
      `without the window (${per(t.rows)} and ${fmt(u.rows / n.length)} readings a device; ${w.length} and ${n.length} devices); ` +
      `the cached-window worker's rows ${fmt(totals(c).bytes / c.length)} B (${fmt(totals(c).missing / c.length)} missing)`,
  );
}
for (const dir of Object.values(dirs)) fs.rmSync(dir, { recursive: true, force: true });
