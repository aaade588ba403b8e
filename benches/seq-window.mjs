// `npm run bench:window`: what the sequence window costs a device (docs/sequence-health.md "Sequence
// health per device"). The group object holds each of its devices' windows in memory
// as their bytes (src/worker/figures.js), and writes them down with its checkpoint
// (the `figure_log` table: one row per STATS_FLUSH_MS at most, the changed devices'
// counters and windows as JSON, the window in base64), not with each burst. A burst
// whose seqs feed the window (every native `POST /v1/readings`) parses the held bytes
// (`SeqWindow.fromBytes`), observes each seq, takes its totals and serialises it
// (`toBytes`) inside the burst's transaction; the bytes replace the held ones once it
// committed (src/worker/window.js `observeSeqs`, `seqWindow`; figures.js
// `countBurst`). Each reading's row carries its window seq (`window_seq`), which a
// restarted group replays into the window past its last checkpoint. Two device histories, each
// primed with PRIME seqs so that the whole ring (W = 2 048) is in use: "in order"
// (consecutive seqs: the typical device) and "lossy" (one seq in 30 lost: 64 gaps
// listed, the bound, so the stored bytes are the largest). Then bursts of a few
// consecutive seqs, as a device sends them.
//   1. outside workerd (Wasm in Node): the window's bytes, the core's share of a burst
//      (fromBytes, observe × readings, totals, toBytes, free) and its parts, and the
//      linear memory a window takes while it is in use (during a burst; between bursts
//      the group holds its bytes); fromBytes + free is also all that keeping the parsed
//      window between bursts would save (the product already keeps it in memory, as
//      bytes: no row is read or written per burst), so no cached variant is run;
// In workerd (Miniflare, tests/support/harness.mjs, storage on disk in a temporary
// directory):
//   2. the same native bursts against the worker and against
//      benches/no-window-worker.js (no device's window is fed, nothing else
//      changed), both running, in many short runs that alternate between them (the
//      order reversed every other pass): requests/s, p50,
//      p99, and workerd's CPU time per burst (each variant's own workerd process, its
//      threads' time on a CPU from /proc: unlike requests/s it does not move with what
//      else the shared cores run); per pass, the two adjacent runs compared, and the
//      median over the passes is the window's share;
//   3. on disk, per device: its window's bytes as its group's last checkpoint holds
//      them (the last `figure_log` row naming it), and, per device of the group files
//      (a file holds several devices: its pages divided by the devices in it), the
//      pages of `figure_log` (SQLite's dbstat) and the whole database file, each
//      against the no-window worker's.
// Prints figures; asserts nothing about time.
//
//   node benches/seq-window.mjs [--bursts N] [--readings N] [--devices N] [--concurrency N] [--passes N] [--rounds N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { databases, post, start } from "../tests/support/harness.mjs";
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
console.log(`   ${"a new device (no window yet)".padEnd(28)} ${fmt(first.toBytes().length).padStart(3)} B stored after its first seq; whole burst ${NEW_BURST.toFixed(2)} µs`);
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
  // The worker's burst: the held bytes parsed, the seqs observed, the totals, the bytes back.
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
  // Memory while in use (a burst parses one window, freed at its end): the linear-memory
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
  none: { name: "no-window worker", script: "benches/no-window-worker.js" },
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
      // Warm-up: each device's group object awake (an idle one is evicted after 10 s: its figures
      // loaded again, the rows past its last checkpoint replayed), its Device and seen-set rebuilt.
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
    for (const [v, what] of [["none", "worker − no-window"]]) {
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

// 3. On disk, per device, while no runtime holds the files. A device's window is, on
// disk, in its group's checkpoints (figures.js): the last `figure_log` row naming it is
// what a restart loads (a `devices` row holds one only for a device handed over, or
// written by the release before checkpoints: none here). A group file holds several
// devices, both histories' among them: its pages are divided by the devices it holds.
/** SQL of one value over the last checkpoint entry of each device whose id begins with `prefix`. */
const lastCheckpoint = (prefix, value) => `WITH e AS (
    SELECT j.key AS device_id, l.id AS id, json_extract(j.value, '$.window') AS w, json_extract(j.value, '$.missing') AS missing
    FROM figure_log l, json_each(l.devices) j WHERE j.key LIKE '${prefix}%'),
  last AS (SELECT * FROM e WHERE id = (SELECT MAX(id) FROM e AS o WHERE o.device_id = e.device_id))
  SELECT ${value} FROM last`;
const queries = {
  devices: "SELECT COUNT(DISTINCT device_id) FROM readings",
  file: "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
  log: "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'figure_log'",
  ...Object.fromEntries(
    Object.values(histories).flatMap(({ group: g }) => [
      [`${g}.devices`, `SELECT COUNT(DISTINCT device_id) FROM readings WHERE device_id LIKE '${g}%'`],
      [`${g}.rows`, `SELECT COUNT(*) FROM readings WHERE device_id LIKE '${g}%'`],
      [`${g}.windows`, lastCheckpoint(g, "COUNT(w)")],
      // The base64 text's length, and the bytes it encodes (its padding taken off).
      [`${g}.base64`, lastCheckpoint(g, "COALESCE(SUM(LENGTH(w)), 0)")],
      [`${g}.bytes`, lastCheckpoint(g, "COALESCE(SUM(LENGTH(w) / 4 * 3 - (w LIKE '%=') - (w LIKE '%==')), 0)")],
      [`${g}.missing`, lastCheckpoint(g, "COALESCE(SUM(missing), 0)")],
    ]),
  ),
};
const files = { window: databases(dirs.window, "GroupObject"), none: databases(dirs.none, "GroupObject") };
const [window, none] = [files.window, files.none].map((list) => totals(sqliteQueries(list, queries)));
console.log(
  "3. on disk, per device (dbstat; its window as its group's last checkpoint holds it; pages are per group file, " +
    "divided by the devices the file holds; the whole file: page_count × page_size):",
);
for (const h of Object.values(histories)) {
  const [w, n] = [window, none].map((t) => Object.fromEntries(["devices", "rows", "windows", "base64", "bytes", "missing"].map((k) => [k, t[`${h.group}.${k}`]])));
  const per = (x) => fmt(x / w.windows);
  console.log(
    `   ${h.name.padEnd(28)} window in the last checkpoint: ${per(w.bytes)} B of bytes (${per(w.missing)} missing), ${per(w.base64)} B as base64 in the log's JSON ` +
      `(${w.windows} of ${w.devices} devices with one; ${n.windows} of ${n.devices} without the window); ` +
      `${fmt(w.rows / w.devices)} and ${fmt(n.rows / n.devices)} readings a device`,
  );
}
console.log(
  `   ${`all ${window.devices} and ${none.devices} devices`.padEnd(28)} in ${files.window.length} and ${files.none.length} group files: ` +
    `the checkpoint log (figure_log) ${fmt(window.log / window.devices)} B of pages a device against ${fmt(none.log / none.devices)} B without the window; ` +
    `whole file ${fmt(window.file / window.devices)} B a device against ${fmt(none.file / none.devices)} B without the window`,
);
for (const dir of Object.values(dirs)) fs.rmSync(dir, { recursive: true, force: true });
