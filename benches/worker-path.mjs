// `npm run bench:path`: the Wasm and JS work on one reading's way through the worker,
// from request body to the values of its row, outside workerd (no SQLite, no RPC: the
// structured clone of the RPC and the SQLite write are the same in every version), and
// the cold rebuild of a device's seen-set from its stored rows. Prints figures; asserts
// nothing about time.
//
//   node benches/worker-path.mjs [--pkg DIR] [--readings N] [--devices N] [--rounds N]
//
// --pkg points at another build of the package (default pkg/): the version before the
// keyed plan (its `parseUplink` returned unkeyed readings, and each device object then
// re-serialised, re-parsed, re-validated and hashed them) is measured from a build of
// an older commit; docs/benchmarks.md has the command. The script picks the path that the
// package supports from the shape of its plan.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { generateWorkload, option } from "./workload.mjs";

const args = process.argv;
const pkgDir = path.resolve(args.includes("--pkg") ? args[args.indexOf("--pkg") + 1] : new URL("../pkg/", import.meta.url).pathname);
const READINGS = option("readings", 100_000);
const DEVICES = option("devices", 300);
const ROUNDS = option("rounds", 7);
const REBUILD_KEYS = [40, 1_000, 100_000];

const glue = await import(path.join(pkgDir, "reconnect_dedupe.js"));
glue.initSync({ module: fs.readFileSync(path.join(pkgDir, "reconnect_dedupe_bg.wasm")) });
const { Deduplicator, parseUplink } = glue;
const keyed = typeof Deduplicator.fromKeys === "function";

const fmt = (x, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => {
  const t0 = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
};

const w = generateWorkload({ readings: READINGS, devices: DEVICES });
const enc = new TextEncoder();
const bodies = w.bursts.map((b) => ({ bytes: enc.encode(b.body), nowMs: b.nowMs }));
console.log(`reconnect-dedupe worker path  ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}`);
console.log(`package: ${pkgDir} (${keyed ? "keyed plan: admitKeys / fromKeys" : "unkeyed plan: processBurstJson in the device"})`);
console.log(`workload: ${fmt(w.total)} readings in ${fmt(w.bursts.length)} bursts, ${DEVICES} devices, POST /v1/readings bodies`);

/** The stateless tier and the device objects of one request, as the worker runs them. */
function request(devices, { bytes, nowMs }) {
  const plan = JSON.parse(parseUplink("readings", bytes));
  for (const g of plan.devices) {
    let d = devices.get(g.device_id);
    if (!d) devices.set(g.device_id, (d = new Deduplicator()));
    if (keyed) {
      // After: the device object joins the plan's keys and admits them.
      const out = d.admitKeys(g.readings.map((r) => r.key).join("\n"), nowMs, 0, { device_id: g.device_id });
      for (let i = 0; i < g.readings.length; i++) if (out.verdicts[i] !== 2) rowOf(g.device_id, g.readings[i]);
    } else {
      // Before: the device object re-serialised the readings, the core parsed,
      // validated and hashed them again, and its outcome was parsed in JS.
      const out = JSON.parse(d.processBurstJson(JSON.stringify(g.readings), nowMs, true));
      for (const u of out.unique) rowOf(g.device_id, u);
      d.confirm(out.ticket);
      JSON.stringify({ ...out.audit, device_id: g.device_id });
    }
  }
}
let sink = 0;
function rowOf(device_id, r) {
  sink += r.key.length + r.seq + r.ts.length + r.fill_pct + device_id.length;
}

const runs = [];
for (let round = 0; round < ROUNDS + 1; round++) {
  const devices = new Map();
  const t = time(() => bodies.forEach((b) => request(devices, b)));
  for (const d of devices.values()) d.free();
  if (round > 0) runs.push(t); // the first round warms V8 and Wasm tiers up
}
const t = median(runs);
console.log(`\nrequest body -> row values: ${fmt((t * 1e6) / w.total)} ns/reading, ${fmt(w.total / (t / 1000))} readings/s (median of ${ROUNDS})`);

// ---- cold rebuild: a device object's seen-set from its stored rows -------------------------
console.log("\ncold rebuild of one device's seen-set from its live rows (median of 7):");
for (const n of REBUILD_KEYS) {
  const t0 = Date.parse("2026-07-16T09:00:00Z");
  const rows = [];
  const readings = [];
  for (let i = 0; i < n; i++) {
    const r = { device_id: "70B3D57ED0041234", seq: i, ts: new Date(t0 + i * 1000).toISOString(), fill_pct: (i % 1001) / 10 };
    readings.push(r);
    rows.push({ key: glue.idempotencyKey(r), admitted_at: t0 + 60_000 + Math.floor(i / 10) * 1000, ...r });
  }
  const now = rows.at(-1).admitted_at + 1;
  const opts = { ttlMs: 6 * 3600_000, maxKeys: 100_000 };
  const ts = [];
  for (let i = 0; i < 8; i++) {
    let d;
    ts.push(
      time(() => {
        if (keyed) {
          d = Deduplicator.fromKeys(rows.map((r) => r.key).join("\n"), Float64Array.from(rows, (r) => r.admitted_at), opts);
        } else {
          // Before: rows grouped by admission time, each group re-admitted as a burst.
          d = new Deduplicator(opts);
          for (let j = 0; j < rows.length; ) {
            const at = rows[j].admitted_at;
            const batch = [];
            for (; j < rows.length && rows[j].admitted_at === at; j++) {
              const { device_id, seq, ts, fill_pct } = rows[j];
              batch.push({ device_id, seq, ts, fill_pct });
            }
            d.processBurstJson(JSON.stringify(batch), at);
          }
        }
      }),
    );
    if (d.stats().keys !== n) throw new Error(`rebuild holds ${d.stats().keys} keys, not ${n}`);
    const replay = JSON.parse(d.processBurstJson(JSON.stringify(readings.slice(0, 5)), now));
    if (replay.duplicates_suppressed !== Math.min(5, n)) throw new Error("the rebuilt set does not suppress its keys");
    d.free();
  }
  const m = median(ts.slice(1));
  console.log(`  ${fmt(n).padStart(7)} keys: ${m.toFixed(3)} ms, ${fmt((m * 1e6) / n)} ns/key`);
}
if (sink === 0) console.log(sink);
