// `npm run bench:load`: a bounded end-to-end load run on loopback. The worker
// (src/worker/, in workerd through Miniflare with the bindings wrangler.toml declares,
// as tests/support/harness.mjs starts it; in-memory Durable Object storage) and the
// pass-through worker (benches/passthrough-worker.js: same route, auth and
// placement, one SQLite ledger per group of devices, no dedupe) each get the same
// seeded bursts as `POST /v1/readings` with a fixed number of requests in flight; each
// run stops after a fixed request count or a time cap, whichever comes first. Prints
// requests/s, readings/s and p50/p99 latency, then the ratios. Asserts nothing about
// time; exits non-zero when any answer, warm-up included, is not a 200 (a failure path
// timed is no figure).
//
//   node benches/load.mjs [--requests N] [--concurrency N] [--max-seconds N] [--seed N] [--devices N]
import { Miniflare } from "miniflare";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { generateWorkload, option } from "./workload.mjs";

const REQUESTS = option("requests", 3000);
const CONCURRENCY = option("concurrency", 16);
const MAX_SECONDS = option("max-seconds", 60);
const WARMUP = 200;
const SEED = option("seed", 20260716);
// A steady fleet: the warm-up reaches every device once, so the measured requests see
// no first-contact work (a device's registration with its shard, its group's schema,
// the group's first roll-up report).
const DEVICES = option("devices", 300);
const TOKEN = "dev-token";

const root = new URL("../", import.meta.url).pathname;
if (!fs.existsSync(path.join(root, "pkg/reconnect_dedupe_bg.wasm"))) throw new Error("pkg/ is missing: run `npm run build`");

const common = {
  modules: true,
  modulesRoot: root,
  modulesRules: [
    { type: "ESModule", include: ["**/*.js"] },
    { type: "CompiledWasm", include: ["**/*.wasm"] },
  ],
  compatibilityDate: "2026-04-01",
  bindings: { INGEST_TOKEN: TOKEN },
  durableObjectsPersist: false,
  handleRuntimeStdio: (stdout, stderr) => {
    stdout.resume();
    stderr.resume();
  },
};
const workers = {
  "pass-through (no dedupe)": {
    ...common,
    scriptPath: path.join(root, "benches/passthrough-worker.js"),
    durableObjects: { GROUPS: { className: "PassthroughGroup", useSQLite: true } },
  },
  "worker with dedupe (src/worker)": {
    ...common,
    scriptPath: path.join(root, "src/worker/index.js"),
    // As wrangler.toml (and tests/support/harness.mjs): groups, the legacy per-device objects, the roll-up.
    durableObjects: {
      GROUPS: { className: "GroupObject", useSQLite: true },
      DEVICES: { className: "DeviceObject", useSQLite: true },
      FLEET: { className: "FleetObject", useSQLite: true },
    },
  },
};

const w = generateWorkload({ seed: SEED, readings: 1_000_000, devices: DEVICES });
const bursts = w.bursts.slice(0, WARMUP + REQUESTS);
const fmt = (x, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`reconnect-dedupe load run  ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}`);
console.log(`workload: seed ${SEED}, ${DEVICES} devices, ${WARMUP} warm-up + ${REQUESTS} requests of 1-100 readings (~30 % replayed, 1-4 devices each), ` +
  `${CONCURRENCY} in flight, cap ${MAX_SECONDS} s; loopback (127.0.0.1) only`);

async function run(name, options) {
  const mf = new Miniflare(options);
  const url = new URL("/v1/readings", await mf.ready);
  const statuses = {};
  /** Answers other than 200, warm-up included: their count and the first one. */
  const failed = { count: 0, first: null };
  const post = async (b) => {
    const t0 = performance.now();
    const res = await mf.dispatchFetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: b.body,
    });
    const text = await res.text();
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status !== 200) {
      failed.count += 1;
      failed.first ??= `${res.status} ${text.slice(0, 300)}`;
    }
    return performance.now() - t0;
  };
  try {
    for (let i = 0; i < WARMUP; i += CONCURRENCY) await Promise.all(bursts.slice(i, Math.min(i + CONCURRENCY, WARMUP)).map(post));
    if (failed.count) throw new Error(`${name}: ${failed.count} of ${WARMUP} warm-up answers not 200 (statuses ${JSON.stringify(statuses)}), the first: ${failed.first}`);
    for (const k of Object.keys(statuses)) delete statuses[k];
    const latencies = [];
    let next = WARMUP;
    let readings = 0;
    const start = performance.now();
    const deadline = start + MAX_SECONDS * 1000;
    const lane = async () => {
      while (next < bursts.length && performance.now() < deadline) {
        const b = bursts[next++];
        latencies.push(await post(b));
        readings += b.readings.length;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    const seconds = (performance.now() - start) / 1000;
    latencies.sort((a, b) => a - b);
    const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
    const r = { requests: latencies.length, seconds, rps: latencies.length / seconds, readingsPerS: readings / seconds, p50: pct(50), p99: pct(99) };
    console.log(`  ${name.padEnd(32)} ${fmt(r.requests)} requests in ${r.seconds.toFixed(1)} s: ${fmt(r.rps)} requests/s, ${fmt(r.readingsPerS)} readings/s, ` +
      `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms; statuses ${JSON.stringify(statuses)}`);
    if (failed.count) throw new Error(`${name}: ${failed.count} answers not 200, the first: ${failed.first}`);
    return r;
  } finally {
    await mf.dispose();
  }
}

const results = {};
for (const [name, options] of Object.entries(workers)) results[name] = await run(name, options);
const [pass, dedupe] = Object.values(results);
console.log("ratios:");
console.log(`  dedupe / pass-through requests/s   ${(dedupe.rps / pass.rps).toFixed(2)}   target >= 0.50`);
console.log(`  dedupe / pass-through p99 latency  ${(dedupe.p99 / pass.p99).toFixed(2)}   target <= 2`);
