// What the benchmarks of the worker in workerd share (webhooks.mjs, raw-uplinks.mjs,
// seq-window.mjs, soak.mjs):
// the machine line, the core's calls timed in Node, requests posted a few at a time
// with their latencies, and SQL over the objects' SQLite files (SQLite's dbstat) once
// workerd has let go of them; the workerd processes and the CPU time they used.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { post } from "../tests/support/harness.mjs";

const root = new URL("../", import.meta.url).pathname;

/**
 * The built core (pkg/), instantiated in Node, to time its calls outside workerd: the
 * package's exports and `memory`, its linear memory.
 */
export async function coreInNode() {
  const wasm = path.join(root, "pkg/reconnect_dedupe_bg.wasm");
  if (!fs.existsSync(wasm)) throw new Error("pkg/ is missing: run `npm run build`");
  const glue = await import(path.join(root, "pkg/reconnect_dedupe.js"));
  const { memory } = glue.initSync({ module: fs.readFileSync(wasm) });
  return { ...glue, memory };
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
export const mean = (xs) => xs.reduce((t, x) => t + x, 0) / xs.length;

/** µs per item of `fn` over all `items`, the median of `rounds` passes. */
export function microsPerItem(items, fn, rounds) {
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (const item of items) fn(item);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3 / items.length);
  }
  return median(times);
}

export const fmt = (x, d = 0) => x.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

export const machine = () =>
  `machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; node ${process.version}`;

/** The `p`th percentile of ascending `sorted`. */
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/**
 * POSTs `bodies` to `route` with the token, `concurrency` at a time, and prints one
 * line: requests/s, p50, p99 and the replies' counts summed (`received`, `unique`,
 * `duplicates_suppressed`, `rejected`, `parked`; `other`: answers that are not 200).
 * Returns `{rps, p50, p99, counts}`.
 */
export async function timedPosts(call, name, route, bodies, concurrency) {
  const latencies = [];
  const counts = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, parked: 0, other: 0 };
  let next = 0;
  const lane = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const t0 = performance.now();
      const res = await post(call, route, body);
      const reply = await res.json();
      latencies.push(performance.now() - t0);
      if (res.status !== 200) {
        counts.other += 1;
        continue;
      }
      for (const k of ["received", "unique", "duplicates_suppressed"]) counts[k] += reply[k];
      counts.rejected += reply.rejected.length;
      counts.parked += reply.parked?.length ?? 0;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, lane));
  const rps = bodies.length / ((performance.now() - start) / 1000);
  latencies.sort((a, b) => a - b);
  const [p50, p99] = [percentile(latencies, 50), percentile(latencies, 99)];
  console.log(`   ${name.padEnd(44)} ${fmt(rps).padStart(5)} requests/s, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms; ${JSON.stringify(counts)}`);
  return { rps, p50, p99, counts };
}

/**
 * Runs `queries` (`{name: SQL answering one value}`) on each SQLite file, read only
 * (python3's sqlite3, which has dbstat), while no runtime holds them; one
 * `{name: value}` per file.
 */
export function sqliteQueries(files, queries) {
  const script = `
import sqlite3, sys, json
queries = json.loads(sys.argv[1])
out = []
for f in sys.argv[2:]:
    c = sqlite3.connect("file:" + f + "?mode=ro", uri=True)
    out.append({name: c.execute(q).fetchone()[0] for name, q in queries.items()})
    c.close()
print(json.dumps(out))`;
  return JSON.parse(execFileSync("python3", ["-c", script, JSON.stringify(queries), ...files], { encoding: "utf8", maxBuffer: 64 << 20 }));
}

/** The sum of each numeric member over `rows` (one object per file, as sqliteQueries answers). */
export const totals = (rows) =>
  Object.fromEntries(Object.keys(rows[0] ?? {}).filter((k) => typeof rows[0][k] === "number").map((k) => [k, rows.reduce((t, r) => t + r[k], 0)]));

/** The workerd processes Miniflare started: children (or grandchildren) of process `root`. */
export function workerdPids(root) {
  const parent = new Map();
  for (const p of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parent.set(Number(p), { ppid, comm });
    } catch {}
  }
  const descends = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 5; p = parent.get(p)?.ppid ?? 0, hops++) if (parent.get(p)?.ppid === root) return true;
    return false;
  };
  return [...parent].filter(([pid, p]) => p.comm === "workerd" && descends(pid)).map(([pid]) => pid);
}

/**
 * Nanoseconds process `pid` has run on a CPU, its live threads summed (/proc schedstat):
 * what a stretch of work cost it, whatever else the machine's cores were doing.
 */
export function cpuNs(pid) {
  return fs
    .readdirSync(`/proc/${pid}/task`)
    .reduce((t, task) => {
      try {
        return t + Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        return t;
      }
    }, 0);
}
