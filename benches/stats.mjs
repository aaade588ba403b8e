// `npm run bench:stats`: GET /v1/stats latency against the fleet size. For each size
// the worker (src/worker/, workerd through Miniflare, storage in a temporary
// directory) gets that many devices, one reading each, as POST /v1/readings of 1 000
// readings; after each such request the time until /v1/stats shows its devices (the
// roll-up shards absorbing the group objects' reports: one per group, naming its
// devices, at most once per STATS_FLUSH_MS). Then sequential GET /v1/stats, p50/p99.
// Loopback only; asserts nothing about time.
//
// The devices live in the 256 group objects (src/worker/group.js), one SQLite database
// each, which one local workerd holds open at once (group.js "Why 256 groups"): the
// requests follow one another without a pause.
//
//   node benches/stats.mjs [--sizes 1000,10000] [--calls N]
import fs from "node:fs";
import os from "node:os";
import { start, post, get, tempDir } from "../tests/support/harness.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const SIZES = arg("sizes", "1000,10000").split(",").map(Number);
const CALLS = Number(arg("calls", 200));
const FLUSH_MS = 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

console.log(`reconnect-dedupe /v1/stats run  ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}`);
console.log(`fleet sizes ${SIZES.join(", ")}; ${CALLS} sequential calls each; STATS_FLUSH_MS ${FLUSH_MS}`);

for (const size of SIZES) {
  const dir = tempDir();
  const w = await start({ persist: dir, vars: { STATS_FLUSH_MS: String(FLUSH_MS), MAX_DEVICES_PER_REQUEST: "1000" } });
  try {
    let ingestMs = 0;
    let absorbMs = 0;
    for (let from = 0; from < size; from += 1000) {
      const t0 = performance.now();
      const burst = Array.from({ length: Math.min(1000, size - from) }, (_, k) => ({
        device_id: `bench-${from + k}`,
        seq: 1,
        ts: "2026-07-16T09:00:00Z",
        fill_pct: (from + k) % 100,
      }));
      const res = await post(w.call, "/v1/readings", burst);
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${JSON.stringify((await res.json()).errors?.slice(0, 3))}`);
      await res.arrayBuffer();
      const ingested = performance.now();
      const count = from + burst.length;
      for (;;) {
        const s = (await get(w.call, "/v1/stats")).body;
        if (s.devices === count && s.received === count) break;
        if (performance.now() - ingested > 600_000) throw new Error(`the roll-up did not absorb ${count} devices in 10 min`);
        await sleep(50);
      }
      ingestMs += ingested - t0;
      absorbMs += performance.now() - ingested;
    }
    const latencies = [];
    for (let i = 0; i < CALLS; i++) {
      const t = performance.now();
      await get(w.call, "/v1/stats");
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
    console.log(
      `  ${String(size).padStart(6)} devices: ingest ${(ingestMs / 1000).toFixed(1)} s, then their flushes in /v1/stats within ${(absorbMs / 1000).toFixed(1)} s; ` +
        `GET /v1/stats p50 ${pct(50)} ms, p99 ${pct(99)} ms`,
    );
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
