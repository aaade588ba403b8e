// `npm run bench:webhooks`: what the rule "the same frame twice" costs (README, "The
// same frame twice"). A reading keyed at the network server's receive time carries its
// frame's identity (a SHA-256 in the core's plan) and costs its device object one
// indexed lookup (`reframe`, src/worker/device.js) and a column + index entry per row.
// Three figures, each against the same uplink whose decoded payload carries its own
// `ts` (no frame identity, no lookup):
//   1. parseUplink of a The Things Stack uplink, outside workerd (Wasm only);
//   2. POST /v1/uplinks/ttn in workerd (Miniflare, storage on disk in a temporary
//      directory): new frames, then every frame delivered again later (duplicates);
//   3. the bytes the frame column and its index take per ledger row (SQLite's dbstat).
// Prints figures; asserts nothing about time.
//
//   node tests/bench/webhooks.mjs [--uplinks N] [--devices N] [--concurrency N] [--rounds N]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { post, start } from "../worker/harness.mjs";
import { option } from "./workload.mjs";

const UPLINKS = option("uplinks", 2000);
const DEVICES = option("devices", 50);
const CONCURRENCY = option("concurrency", 8);
const ROUNDS = option("rounds", 7);
const root = new URL("../../", import.meta.url).pathname;
const wasm = path.join(root, "pkg/reconnect_dedupe_bg.wasm");
if (!fs.existsSync(wasm)) throw new Error("pkg/ is missing: run `npm run build`");
const glue = await import(path.join(root, "pkg/reconnect_dedupe.js"));
glue.initSync({ module: fs.readFileSync(wasm) });

const fmt = (x, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sample = JSON.parse(fs.readFileSync(path.join(root, "tests/fixtures/webhooks/tts/uplink_message.json"), "utf8"));
const T0 = Date.parse("2026-07-16T09:00:00Z");

/** Uplink `i` as The Things Stack posts it; `ownTs` puts a `ts` in the decoded payload; `late` delivers it again 5 min later. */
function uplink(i, { ownTs = false, late = false } = {}) {
  const v = structuredClone(sample);
  v.end_device_ids.dev_eui = `B0${String(i % DEVICES).padStart(14, "0")}`;
  const m = v.uplink_message;
  m.f_cnt = Math.floor(i / DEVICES) + 1;
  m.frm_payload = Buffer.from([i & 0xff, (i >> 8) & 0xff, 0x2a]).toString("base64");
  m.received_at = new Date(T0 + i * 1000 + (late ? 300_000 : 0)).toISOString();
  m.decoded_payload = { fill_pct: (i % 1000) / 10, ...(ownTs ? { ts: new Date(T0 + i * 1000).toISOString() } : {}) };
  return JSON.stringify(v);
}

console.log(`reconnect-dedupe webhooks: the same frame twice  ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}`);
console.log(`workload: ${fmt(UPLINKS)} The Things Stack uplinks (tests/fixtures/webhooks/tts/uplink_message.json), ${DEVICES} devices, one reading each`);

// 1. The core's plan, outside workerd.
const enc = new TextEncoder();
const bodies = (opts) => Array.from({ length: UPLINKS }, (_, i) => enc.encode(uplink(i, opts)));
console.log("1. parseUplink per uplink (median of rounds):");
for (const [name, opts] of [["decoded ts (no frame)", { ownTs: true }], ["receive time (frame identity)", {}]]) {
  const bs = bodies(opts);
  const times = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (const b of bs) glue.parseUplink("ttn", b);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3 / bs.length);
  }
  console.log(`   ${name.padEnd(32)} ${median(times).toFixed(2)} µs`);
}

// 2. The worker, in workerd.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-bench-webhooks-"));
// The worker as the worker tests start it (tests/worker/harness.mjs), its storage on disk.
const worker = await start({ persist: dir });

/** Posts the bodies `CONCURRENCY` at a time; requests/s, p50, p99 and the verdict counts. */
async function run(name, list) {
  const latencies = [];
  const verdicts = { unique: 0, duplicates_suppressed: 0, other: 0 };
  let next = 0;
  const start = performance.now();
  const lane = async () => {
    while (next < list.length) {
      const body = list[next++];
      const t0 = performance.now();
      const res = await post(worker.call, "/v1/uplinks/ttn", body);
      const reply = await res.json();
      latencies.push(performance.now() - t0);
      if (res.status !== 200) verdicts.other += 1;
      else (verdicts.unique += reply.unique), (verdicts.duplicates_suppressed += reply.duplicates_suppressed);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
  console.log(`   ${name.padEnd(44)} ${fmt(list.length / seconds)} requests/s, p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms; ${JSON.stringify(verdicts)}`);
}

try {
  console.log(`2. POST /v1/uplinks/ttn in workerd, ${CONCURRENCY} in flight (the devices' objects warmed by a first pass):`);
  // Warm-up: every device object exists, registered, with its schema (own-ts uplinks, other counters).
  await run("warm-up (not compared)", Array.from({ length: DEVICES }, (_, i) => uplink(UPLINKS * 10 + i, { ownTs: true })));
  // Each kind twice, in both orders, on fresh frames: the isolate warms up as it goes.
  const quarter = Math.floor(UPLINKS / 4);
  const chunk = (k, opts) => Array.from({ length: quarter }, (_, i) => uplink(k * quarter + i, opts));
  for (const [k, order] of [[0, ["own", "framed"]], [2, ["framed", "own"]]]) {
    for (const kind of order) {
      if (kind === "own") await run(`new, decoded ts (no lookup)`, chunk(k, { ownTs: true }));
      else await run(`new, receive time (a lookup that misses)`, chunk(k + 1, {}));
    }
  }
  await run("delivered again 5 min later (a lookup that hits)", chunk(1, { late: true }));
  await run("replay of decoded-ts ones (no lookup)", chunk(0, { ownTs: true }));
} finally {
  await worker.mf.dispose();
}

// 3. What the frame identity takes on disk: its column's bytes and its index's pages.
const files = fs.readdirSync(path.join(dir, "-DeviceObject")).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite").map((f) => path.join(dir, "-DeviceObject", f));
const script = `
import sqlite3, sys, json
rows = index = table = framed = 0
for f in sys.argv[1:]:
    c = sqlite3.connect(f)
    rows += c.execute("SELECT COUNT(*) FROM readings").fetchone()[0]
    framed += c.execute("SELECT COUNT(*) FROM readings WHERE frame IS NOT NULL").fetchone()[0]
    index += c.execute("SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'readings_by_frame'").fetchone()[0]
print(json.dumps({"rows": rows, "framed": framed, "index": index}))`;
const disk = JSON.parse(execFileSync("python3", ["-c", script, ...files], { encoding: "utf8" }));
console.log(`3. on disk, ${files.length} device databases: ${fmt(disk.rows)} rows, ${fmt(disk.framed)} with a frame ` +
  `(${fmt(disk.framed / files.length)} a device); the frame column takes 17 bytes a framed row (16 hex digits + its ` +
  `record header byte), its partial index ${fmt(disk.index / files.length)} bytes of pages a device`);
fs.rmSync(dir, { recursive: true, force: true });
