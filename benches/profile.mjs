// `npm run bench:profile`: where the time of the worker's path goes (benches/worker-path.mjs,
// request body → row values), function by function: the path is run under `node
// --cpu-prof` with a build that keeps the core's function names (`wasm-pack build
// --profiling`, target/prof-pkg; Cargo.toml's profiling profile keeps the name section),
// and the samples taken inside its `request` are summed by function. Prints figures,
// asserts nothing; the shares move with the machine, the order of the top rarely does.
//
//   node benches/profile.mjs [--pkg DIR] [--readings N] [--rounds N] [--top N]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { option } from "./workload.mjs";

const args = process.argv;
const pkgDir = path.resolve(args.includes("--pkg") ? args[args.indexOf("--pkg") + 1] : new URL("../target/prof-pkg/", import.meta.url).pathname);
const READINGS = option("readings", 50_000);
const ROUNDS = option("rounds", 5);
const TOP = option("top", 25);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-profile-"));
const script = new URL("worker-path.mjs", import.meta.url).pathname;
const out = execFileSync(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${dir}`, script, "--pkg", pkgDir, "--readings", String(READINGS), "--rounds", String(ROUNDS)], { encoding: "utf8" });
console.log(out.split("\n").filter((l) => /^(reconnect-dedupe|machine|package|workload|request body)/.test(l)).join("\n"));

const profile = JSON.parse(fs.readFileSync(path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))), "utf8"));
fs.rmSync(dir, { recursive: true, force: true });

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
/** A function's name as a reader knows it: a Rust symbol without its hash, a JS function with its file. */
const nameOf = ({ callFrame: f }) => {
  const name = f.functionName.replace(/::h[0-9a-f]{16}$/, "");
  return name || `(anonymous) ${path.basename(f.url)}:${f.lineNumber + 1}`;
};
/** Whether the sample's stack passes through the path's `request` (worker-path.mjs). */
const inRequest = (id) => {
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const f = nodes.get(at).callFrame;
    if (f.functionName === "request" && f.url.endsWith("worker-path.mjs")) return true;
  }
  return false;
};

const self = new Map();
let total = 0;
profile.samples.forEach((id, i) => {
  if (!inRequest(id)) return;
  const dt = profile.timeDeltas[i] ?? 0;
  const name = nameOf(nodes.get(id));
  self.set(name, (self.get(name) ?? 0) + dt);
  total += dt;
});
/** Wasm (a Rust function), glue (wasm-bindgen's JS and its shims, a call across) or JS. */
const kind = (name) => {
  if (/^wasm-to-js|^__wbg|shim|reconnect_dedupe\.js:|^(getDataViewMemory|getUint8ArrayMemory|passString|getStringFromWasm|getArrayU8FromWasm)/.test(name)) return "glue";
  return name.includes("::") ? "Wasm" : "JS";
};
const byKind = new Map();
for (const [name, t] of self) byKind.set(kind(name), (byKind.get(kind(name)) ?? 0) + t);
const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)} %`;

console.log(`\ntime inside request(), ${(total / 1000).toFixed(0)} ms sampled: ${[...byKind].sort((a, b) => b[1] - a[1]).map(([k, t]) => `${k} ${pct(t).trim()}`).join(", ")}`);
console.log(`the ${TOP} functions with the most time of their own:`);
for (const [name, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${pct(t)}  ${kind(name).padEnd(4)}  ${name.slice(0, 110)}`);
