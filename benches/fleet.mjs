// `npm run bench:fleet`: capacity on one machine (issue 21, part 1). A fleet of
// --devices devices (default 100 000) sends three rounds of one native reading each to
// the worker, at most --per-request devices a request (100), --in-flight requests at
// once (8), loopback only; round 2 carries 20 % replays (the round-1 reading sent
// again) and 80 % new readings; round 3 sends every round-2 reading again (a network
// server's second delivery: every one a duplicate, nothing new to hold, so the memory
// must not grow through it). Each target runs each scenario on fresh storage:
//
//   targets:   start    `npm start` itself (scripts/start.mjs: workerd on the dry
//                       run's bundle, a temporary --data directory, the token in a
//                       temporary --dev-vars file, the vars in its environment)
//              workerd  as `npm run serve:workerd` runs it (the dry run's bundle,
//                       selfhost/workerd.capnp, a temporary --data directory)
//              dev      `npm run dev` (wrangler dev, local persistence in a temporary
//                       --persist-to directory); only when asked for: it is for
//                       editing the worker, not for a fleet (docs/benchmarks.md says why)
//   scenarios: healthy  the origin stub answers 200 throughout
//              failing  it answers 503 to every POST during the three rounds, then 200:
//                       the run waits (bounded) until it holds every admitted key
//
//   npm run bench:fleet [-- --target start|workerd|dev|both] [-- --scenario healthy|failing|both]
//     [-- --devices 100000] [-- --per-request 100] [-- --in-flight 8] [-- --drain-s 300]
//     [-- --rounds 3] [-- --retry-max-ms 10000] [-- --max-minutes 60] [-- --log]
//
// It talks to the worker only through the HTTP API (POST /v1/readings, GET /v1/health,
// GET /v1/stats, GET /v1/devices/{id}/readings) and reads process facts (the RSS and
// open files of every workerd under this process), never the storage's layout. A
// non-2xx reply is never resent: network servers do not retry (docs/network-servers.md, "What a reply
// means for your data"), so each one is readings lost, counted with its status and
// error code. Throughout, GET /v1/health is polled on its own connection every 500 ms
// and GET /v1/stats every 2 s, and workerd's RSS sampled every second.
//
// Once quiet: GET /v1/stats must equal the sum of the replies' counts (received less
// their not_stored, unique, duplicates_suppressed; STATS_FLUSH_MS is 1000 here) with
// pending_deliveries 0; the origin must have received every key a reply admitted (a
// 503's included), under that key; a batch sent more than once must have kept its
// Idempotency-Key (and a key its body). The ledgers of 20 devices spread over the
// fleet are read and compared with the keys their replies admitted (reported only).
// The figures are printed per target and scenario, then as one table; the exit code
// is 1 when a target of the issue is missed (a non-2xx reply, /v1/health slower than
// 1 s or failing, /v1/stats slower than 2 s or failing, workerd RSS at 1 GiB or more,
// /v1/stats not exact, keys missing at the origin, a batch's key changed, a verdict
// against the plan), 2 when the run had to stop (a worker that did not start, the
// --max-minutes deadline). Every wait has a deadline (a poll's is 10 s: a latency
// of 10 s is a poll that got no answer); every child process is stopped on exit,
// Ctrl-C included.
//
// RETRY_MAX_MS is --retry-max-ms (10 s) rather than wrangler.toml's hour, so that a
// recovered origin is retried within seconds of recovering, not at the end of a
// backoff that doubled through the whole run; ORIGIN_URL points at the stub.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { prepare, startWorkerd, workerdEnv } from "../scripts/serve-workerd.mjs";
import { outcomeOf, send } from "./http-client.mjs";
import { fmt, machine, percentile, workerdPids } from "./in-workerd.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const WRANGLER = path.join(ROOT, "node_modules/wrangler/bin/wrangler.js");

const { values: opt } = parseArgs({
  options: {
    target: { type: "string", default: "both" },
    scenario: { type: "string", default: "both" },
    devices: { type: "string", default: "100000" },
    rounds: { type: "string", default: "3" },
    "per-request": { type: "string", default: "100" },
    "in-flight": { type: "string", default: "8" },
    "drain-s": { type: "string", default: "300" },
    "retry-max-ms": { type: "string", default: "10000" },
    "max-minutes": { type: "string", default: "60" },
    log: { type: "boolean", default: false },
  },
});
const whole = (name, min) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min) throw new Error(`--${name} ${opt[name]}: a whole number >= ${min}`);
  return v;
};
const DEVICES = whole("devices", 1);
/** Rounds sent: 1 (first readings), 2 (20 % replays), then each one more sends round 2's readings again (all duplicates). */
const ROUNDS = whole("rounds", 3);
const PER_REQUEST = whole("per-request", 1);
const IN_FLIGHT = whole("in-flight", 1);
const DRAIN_MS = whole("drain-s", 1) * 1000;
const RETRY_MAX_MS = whole("retry-max-ms", 1000);
const MAX_MS = whole("max-minutes", 1) * 60_000;
const choose = (name, all, more = []) => {
  if (opt[name] === "both") return all;
  if (![...all, ...more].includes(opt[name])) throw new Error(`--${name} ${opt[name]}: one of ${[...all, ...more].join(", ")} or both (${all.join(" and ")})`);
  return [opt[name]];
};
const TARGETS = choose("target", ["start", "workerd"], ["dev"]);
const SCENARIOS = choose("scenario", ["healthy", "failing"]);

/** The share of devices whose round-2 reading is their round-1 reading again. */
const REPLAY_SHARE = 0.2;
/** The issue's limits (part 1, "What to reach"). */
const HEALTH_LIMIT_MS = 1000;
const STATS_LIMIT_MS = 2000;
const RSS_LIMIT = 1024 ** 3;
/** RSS after a round of duplicates (3 and later) over RSS after the round before it, at most: such a round holds no new reading. */
const FLAT_LIMIT = 1.1;
const STATS_FLUSH_MS = 1000;
const HEALTH_EVERY_MS = 500;
const STATS_EVERY_MS = 2000;
const RSS_EVERY_MS = 1000;
/** Deadlines: an ingest request, a poll, the worker's start, the roll-up's catching up, a child's exit. */
const REQUEST_TIMEOUT_MS = 60_000;
const POLL_TIMEOUT_MS = 10_000;
const START_MS = 180_000;
const STATS_SETTLE_MS = 30_000;
const STOP_MS = 15_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MiB = (b) => (Number.isFinite(b) ? `${(b / 1048576).toFixed(0)} MiB` : "-");
const ms = (x) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : "-");
const pctOf = (part, all) => (all ? `${((100 * part) / all).toFixed(1)} %` : "-");
const say = (line) => console.log(`bench:fleet: ${line}`);

// --- child processes: every one is stopped on exit -----------------------------------

/** Stoppers of what this run started, each `{stop(): Promise, kill(): void}` (kill: synchronous, on exit). */
const children = new Set();
/** The temporary directories of the run under way (storage, bundle, token file). */
const dirs = new Set();
async function stopAll() {
  await Promise.all([...children].map((c) => c.stop().catch(() => {})));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
}
process.on("exit", () => {
  for (const c of children) c.kill();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    say(`${signal}: stopping the worker and exiting`);
    stopAll().finally(() => process.exit(130));
    // A stop waits STOP_MS for SIGTERM, then as long again after SIGKILL.
    setTimeout(() => process.exit(130), 2 * STOP_MS + 5000).unref();
  });
}
const watchdog = setTimeout(() => {
  say(`FAILED: the run did not finish within --max-minutes ${MAX_MS / 60_000}; stopped`);
  stopAll().finally(() => process.exit(2));
}, MAX_MS);

/** Whether `pid` is (still) a workerd: a pid can be reused once its process is gone. */
function isWorkerd(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === "workerd";
  } catch {
    return false;
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * What the worker printed, read line by line: WARN and ERROR events counted by
 * `event` (one example each), and lines naming SQLITE_NOMEM. With --log the lines
 * go to this process's stderr too.
 */
function logReader() {
  const events = new Map();
  const runtime = { n: 0, example: null };
  let nomem = 0;
  // wrangler dev restarts workerd whenever a file it bundles or watches changes (its
  // esbuild runs in watch mode): the requests in flight then fail, POSTs with the
  // proxy's 503 "Your worker restarted mid-request".
  let reloads = 0;
  let partial = "";
  const line = (l) => {
    if (opt.log) process.stderr.write(`${l}\n`);
    if (l.includes("SQLITE_NOMEM")) nomem++;
    if (l.includes("Reloading local server")) reloads++;
    // The runtime's own complaints (workerd's, not the worker's JSON lines).
    if (!l.includes('"level":') && /error|exceeded|overloaded|crash|received signal|segmentation fault|fatal/i.test(l)) {
      runtime.n++;
      runtime.example ??= l.slice(0, 300);
    }
    if (!l.includes('"level":"WARN"') && !l.includes('"level":"ERROR"')) return;
    const m = /"level":"(WARN|ERROR)","event":"([a-z_]+)"/.exec(l);
    const name = m ? `${m[1]} ${m[2]}` : "WARN/ERROR (no event)";
    const e = events.get(name) ?? { n: 0, example: l.slice(0, 300) };
    e.n++;
    events.set(name, e);
  };
  const feed = (stream) => {
    stream.setEncoding("utf8");
    stream.on("data", (chunk) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop();
      parts.forEach(line);
    });
  };
  return { feed, summary: () => ({ nomem, events, runtime, reloads }) };
}

// --- the two targets ---------------------------------------------------------------

/**
 * `npm start` itself: scripts/start.mjs as the npm script runs it after its build, on
 * 127.0.0.1 and a free PORT, its data in `dir`, the token in a --dev-vars file there
 * (so the user's .dev.vars stays unread), `vars` in its environment (over .dev.vars
 * and wrangler.toml, as start.mjs reads them). Its own process group, so that
 * stopping it stops its workerd too.
 */
async function startNpmStart(dir, vars, token, log) {
  const port = await freePort();
  const devVars = path.join(dir, "dev.vars");
  fs.writeFileSync(devVars, `INGEST_TOKEN=${token}\n`, { mode: 0o600 });
  const env = { ...process.env, ...vars, PORT: String(port) };
  delete env.INGEST_TOKEN;
  const child = spawn(process.execPath, [path.join(ROOT, "scripts/start.mjs"), "--data", path.join(dir, "data"), "--dev-vars", devVars], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  return grouped(child, port, log);
}

/**
 * `npm run dev`'s worker: wrangler dev on 127.0.0.1 and a free port, its Durable
 * Objects persisted under `dir`, `vars` given with --var and the token in an env file
 * of `dir` (--env-file: wrangler then reads no .dev.vars, so the user's stays as it
 * is and unread). Its own process group, so that stopping it stops its workerd too.
 */
async function startWrangler(dir, vars, token, log) {
  const port = await freePort();
  const inspector = await freePort();
  const envFile = path.join(dir, "fleet.env");
  fs.writeFileSync(envFile, `INGEST_TOKEN=${token}\n`, { mode: 0o600 });
  // wrangler dev watches what it bundles and restarts workerd when a file changes,
  // failing the requests in flight: it runs on a copy of the tree made now, so that
  // an edit in the working tree during the run (another engineer's, a build) does not
  // reach it.
  const tree = path.join(dir, "tree");
  for (const part of ["wrangler.toml", "src/worker", "pkg", "www"]) fs.cpSync(path.join(ROOT, part), path.join(tree, part), { recursive: true });
  const args = [WRANGLER, "dev", "--config", path.join(tree, "wrangler.toml"), "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector),
    "--persist-to", path.join(dir, "persist"), "--env-file", envFile, "--show-interactive-dev-session=false", ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`])];
  // No banner, so no update check (wrangler asks the npm registry for its newest
  // version); no fetch of Request.cf's data from Cloudflare (Miniflare's default: a
  // placeholder); and only --env-file's token, not process.env's
  // (CLOUDFLARE_INCLUDE_PROCESS_ENV) nor .dev.vars.
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CLOUDFLARE_CF_FETCH_ENABLED: "false", CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "true", NO_COLOR: "1", FORCE_COLOR: "0" };
  delete env.CLOUDFLARE_INCLUDE_PROCESS_ENV;
  const child = spawn(process.execPath, args, { cwd: tree, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  return grouped(child, port, log);
}

/** A launcher `child` in its own process group, its output read by `log`: `{port, exited, kill, stop}`, stop() ending the group (every workerd in it too). */
function grouped(child, port, log) {
  log.feed(child.stdout);
  log.feed(child.stderr);
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  let seen = [];
  const group = (signal) => {
    seen = [...new Set([...seen, ...workerdPids(child.pid)])];
    try {
      process.kill(-child.pid, signal);
    } catch {}
    // A workerd that left the group (none should) goes by its own pid.
    for (const pid of seen) if (isWorkerd(pid)) try { process.kill(pid, signal); } catch {}
  };
  const handle = {
    kill: () => group("SIGKILL"),
    stop: async () => {
      group("SIGTERM");
      const done = await Promise.race([exited, sleep(STOP_MS).then(() => null)]);
      if (!done) group("SIGKILL");
      await Promise.race([exited, sleep(STOP_MS)]);
      for (const pid of seen) if (isWorkerd(pid)) try { process.kill(pid, "SIGKILL"); } catch {}
      children.delete(handle);
    },
  };
  children.add(handle);
  return { port, exited, ...handle };
}

/**
 * `npm run serve:workerd`'s worker: the bundle `prepare` makes (wrangler deploy
 * --dry-run) in `dir`, workerd on it with selfhost/workerd.capnp, its data under `dir`,
 * the token and `vars` in its environment (workerdEnv: the rest as wrangler.toml
 * [vars] sets them, else the worker's defaults).
 */
async function startSelfhosted(dir, vars, token, log) {
  const bundleDir = path.join(dir, "bundle");
  const bundled = await prepare(bundleDir);
  const { env } = workerdEnv(bundled.vars, { INGEST_TOKEN: token, ...vars });
  const w = await startWorkerd({ bundleDir, dataDir: path.join(dir, "data"), listen: "127.0.0.1:0", env, stdio: "pipe" });
  log.feed(w.child.stdout);
  log.feed(w.child.stderr);
  const handle = {
    kill: () => w.child.kill("SIGKILL"),
    stop: async () => {
      const done = await Promise.race([w.stop(), sleep(STOP_MS).then(() => null)]);
      if (!done) {
        w.child.kill("SIGKILL");
        await Promise.race([w.exited, sleep(STOP_MS)]);
      }
      children.delete(handle);
    },
  };
  children.add(handle);
  const port = await Promise.race([w.port, sleep(START_MS).then(() => Promise.reject(new Error(`workerd did not listen within ${START_MS / 1000} s`)))]);
  return { port, exited: w.exited, ...handle };
}

// --- the origin stub -----------------------------------------------------------------

/**
 * Every `key` of a `readings` array's elements, wherever such an array is in `tree`
 * (today a batch is `{device_id, readings: [{key, ...}]}`; a batch of many devices
 * may nest them otherwise).
 */
function readingKeys(tree, out = [], depth = 0) {
  if (depth > 32 || tree === null || typeof tree !== "object") return out;
  if (Array.isArray(tree)) {
    for (const x of tree) readingKeys(x, out, depth + 1);
    return out;
  }
  for (const [name, value] of Object.entries(tree)) {
    if (name === "readings" && Array.isArray(value)) for (const x of value) if (typeof x?.key === "string") out.push(x.key);
    readingKeys(value, out, depth + 1);
  }
  return out;
}

/**
 * The origin on 127.0.0.1: answers 200 while up, 503 while down (`setUp`). Records the
 * keys of every batch it answered 200 (`delivered`: key → times), and of every POST,
 * answered or refused, its body's hash and Idempotency-Key, both ways, so that a
 * retry that changed either shows.
 */
async function startOrigin(up) {
  const o = { up, posts: 0, refused: 0, unreadable: 0, withoutKey: 0, delivered: new Map(), keysOfBody: new Map(), bodiesOfKey: new Map(), bodyPosts: new Map() };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      o.posts++;
      const hash = createHash("sha256").update(body).digest("hex");
      const key = req.headers["idempotency-key"];
      o.bodyPosts.set(hash, (o.bodyPosts.get(hash) ?? 0) + 1);
      if (typeof key !== "string" || !key) o.withoutKey++;
      else {
        if (!o.keysOfBody.has(hash)) o.keysOfBody.set(hash, new Set());
        o.keysOfBody.get(hash).add(key);
        if (!o.bodiesOfKey.has(key)) o.bodiesOfKey.set(key, new Set());
        o.bodiesOfKey.get(key).add(hash);
      }
      if (!o.up) {
        o.refused++;
        res.writeHead(503, { "content-type": "application/json" }).end('{"error":"origin down (bench:fleet)"}');
        return;
      }
      let keys = [];
      try {
        keys = readingKeys(JSON.parse(body.toString("utf8")));
      } catch {
        o.unreadable++;
      }
      for (const k of keys) o.delivered.set(k, (o.delivered.get(k) ?? 0) + 1);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  o.url = `http://127.0.0.1:${server.address().port}/ingest`;
  o.close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  };
  return o;
}

/**
 * A poller of `route` every `everyMs` on its own connection and its own thread
 * (poller.mjs): so that this process's other work (the origin stub reading batches of
 * 500 readings, the fleet's replies) cannot delay a poll's answer and have it counted
 * as the worker's. `stop()` ends it and fills in its latencies (ms), when each poll
 * was sent (this thread's `performance.now()`) and its failures by outcome (not 200).
 */
function poller(port, route, headers, everyMs) {
  const thread = new Worker(new URL("./poller.mjs", import.meta.url), { workerData: { port, route, headers, everyMs, timeoutMs: POLL_TIMEOUT_MS } });
  const p = { latencies: [], at: [], failures: new Map() };
  const result = new Promise((resolve, reject) => {
    thread.once("message", resolve);
    thread.once("error", reject);
  });
  p.stop = async () => {
    thread.postMessage("stop");
    const r = await result;
    p.latencies = r.latencies;
    // Sent at, in ms since the epoch there: this thread's clock here.
    p.at = r.sentAt.map((t) => t - performance.timeOrigin);
    p.failures = new Map(r.failures);
    await thread.terminate();
  };
  return p;
}


/**
 * What a workerd process runs, from its command line: under `npm run dev`, wrangler's
 * proxy (its ProxyWorker, listening on the port the fleet sends to, `port`) or the
 * worker (wrangler's second workerd, behind it); else the worker of npm start or
 * serve:workerd (selfhost/workerd.capnp).
 */
function roleOf(pid, port) {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    if (args.some((a) => a.endsWith(`entry=127.0.0.1:${port}`))) return "wrangler's proxy";
    return args.includes("--binary") ? "the worker (wrangler dev)" : "the worker (selfhost/workerd.capnp)";
  } catch {
    return "workerd";
  }
}

/** Resident memory (bytes) and open files of every workerd under this process, summed; null when none runs. */
function workerdFacts() {
  let rss = 0;
  let files = 0;
  let n = 0;
  const pids = workerdPids(process.pid);
  const each = new Map(); // pid → its RSS
  const parts = new Map(); // pid → {anon, file}: RssAnon (heaps, caches in memory) and RssFile (mapped files)
  for (const pid of pids) {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
      const kib = (name) => 1024 * Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      const own = kib("VmRSS");
      rss += own;
      each.set(pid, own);
      parts.set(pid, { anon: kib("RssAnon"), file: kib("RssFile") });
      files += fs.readdirSync(`/proc/${pid}/fd`).length;
      n++;
    } catch {}
  }
  return n ? { rss, files, processes: n, pids, each, parts } : null;
}

// --- the fleet ---------------------------------------------------------------------------

const T0_MS = Date.parse("2026-07-16T09:00:00Z");
const deviceId = (i) => `fleet-${String(i).padStart(6, "0")}`;
/** Whether device `i`'s round-2 reading is a replay: every fifth, spread by a multiplicative hash. */
const replays = (i) => Math.imul(i + 1, 2654435761) >>> 0 < REPLAY_SHARE * 2 ** 32;
/** Device `i`'s reading `seq` (1: round 1, 2: round 2's new reading): 10 minutes apart, its own fill level. */
/** The devices whose ledgers are read at the end (sampleLedgers). */
const LEDGER_SAMPLE = Math.min(20, DEVICES);
const SAMPLED = new Set(Array.from({ length: LEDGER_SAMPLE }, (_, k) => Math.floor((k * DEVICES) / LEDGER_SAMPLE)));
let REPLAYS = 0;
for (let i = 0; i < DEVICES; i++) REPLAYS += replays(i) ? 1 : 0;
/** The seq device `i` sends in `round`: round 3 sends round 2's reading again (a replay of it, or of round 1's). */
const seqOf = (i, round) => (round === 1 || replays(i) ? 1 : 2);
const reading = (i, seq) => ({ device_id: deviceId(i), seq, ts: new Date(T0_MS + (i % 600) * 1000 + (seq - 1) * 600_000).toISOString(), fill_pct: ((i * 7 + seq * 31) % 1000) / 10 });

/**
 * Whether /v1/stats `stats` holds what the replies counted and nothing waits for the
 * origin (it has received every admitted key by then, or the run has failed anyway).
 */
const exact = (stats, counted) => Object.entries(counted).every(([k, v]) => stats?.[k] === v) && stats?.pending_deliveries === 0;

/**
 * Sends one round: every device's reading, PER_REQUEST devices a request in device
 * order, IN_FLIGHT at once, none resent. `tally` collects what the replies said.
 */
async function sendRound(port, token, round, tally) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const requests = Math.ceil(DEVICES / PER_REQUEST);
  const latencies = [];
  let next = 0;
  const lane = async () => {
    while (next < requests) {
      const r = next++;
      const first = r * PER_REQUEST;
      const devices = [];
      for (let i = first; i < Math.min(DEVICES, first + PER_REQUEST); i++) devices.push(i);
      const kinds = devices.map((i) => (round === 1 ? "first" : round >= 3 ? "again" : replays(i) ? "replay" : "new"));
      const body = JSON.stringify(devices.map((i, n) => reading(i, seqOf(i, round))));
      const res = await send(port, agent, "POST", "/v1/readings", headers, body, REQUEST_TIMEOUT_MS);
      latencies.push(res.ms);
      tally.reply(round, res, devices, kinds);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, requests) }, lane));
  const wall = performance.now() - t0;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { round, requests, readings: DEVICES, ms: wall, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) };
}

/**
 * What the replies said: requests by outcome, the readings of non-2xx replies (lost:
 * no network server resends them), the counts the replies add up to (what /v1/stats
 * must hold: a 503's body counts what was stored), every admitted key, and verdicts
 * that contradict the plan (a first reading or a new one answered duplicate, a replay
 * of an admitted reading admitted again).
 */
function tally() {
  const t = {
    sent: 0, ok: 0, outcomes: new Map(), lostReadings: 0, lostByRound: new Array(ROUNDS + 1).fill(0), refusedByRound: new Array(ROUNDS + 1).fill(0),
    counted: { received: 0, unique: 0, duplicates_suppressed: 0 }, admitted: new Map(), keysOf: new Map(), notStored: 0, uncounted: 0, deviceErrors: new Map(), wrong: 0, wrongExamples: [],
    firstAdmitted: new Uint8Array(DEVICES),
    secondAdmitted: new Uint8Array(DEVICES),
  };
  t.reply = (round, res, devices, kinds) => {
    t.sent++;
    if (res.status >= 200 && res.status < 300) t.ok++;
    else {
      const why = outcomeOf(res);
      t.outcomes.set(why, (t.outcomes.get(why) ?? 0) + 1);
      t.lostReadings += devices.length;
      t.lostByRound[round] += devices.length;
      t.refusedByRound[round]++;
    }
    let body;
    try {
      body = JSON.parse(res.text);
    } catch {
      return;
    }
    if (typeof body?.received !== "number") {
      // Not the worker's answer: what it stored of these readings is unknown.
      if (!(res.status >= 200 && res.status < 300)) t.uncounted += devices.length;
      return;
    }
    // A reply's `received` counts its not_stored readings too; /v1/stats does not
    // (a device that failed stored nothing of the burst, its counts included).
    const notStored = body.not_stored?.length ?? 0;
    for (const k of Object.keys(t.counted)) t.counted[k] += (body[k] ?? 0) - (k === "received" ? notStored : 0);
    t.notStored += notStored;
    for (const e of body.errors ?? []) t.deviceErrors.set(e.code, (t.deviceErrors.get(e.code) ?? 0) + 1);
    const dup = new Set(body.duplicates ?? []);
    const wrong = (n, what) => {
      t.wrong++;
      if (t.wrongExamples.length < 5) t.wrongExamples.push(`round ${round}: ${deviceId(devices[n])}'s ${kinds[n]} reading ${what}`);
    };
    for (const { index, key } of body.admitted ?? []) {
      t.admitted.set(key, (t.admitted.get(key) ?? 0) + 1);
      if (SAMPLED.has(devices[index])) t.keysOf.set(devices[index], [...(t.keysOf.get(devices[index]) ?? []), key]);
      if (kinds[index] === "first") t.firstAdmitted[devices[index]] = 1;
      if (kinds[index] === "new") t.secondAdmitted[devices[index]] = 1;
      if (kinds[index] === "replay" && t.firstAdmitted[devices[index]]) wrong(index, "was admitted again, its first copy admitted in round 1");
      const stored = replays(devices[index]) ? t.firstAdmitted : t.secondAdmitted;
      if (kinds[index] === "again" && stored[devices[index]]) wrong(index, "was admitted again, its copy admitted before");
    }
    for (const index of dup) if (kinds[index] !== "replay" && kinds[index] !== "again") wrong(index, "was answered duplicate");
  };
  return t;
}

/**
 * The ledgers of LEDGER_SAMPLE devices spread over the fleet, read through GET
 * /v1/devices/{id}/readings: how many hold exactly the keys the replies admitted for
 * that device (a reading stored by a request answered without counts would differ),
 * with the first disagreement.
 */
async function sampleLedgers(port, auth, t) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out = { read: 0, agree: 0, example: null };
  for (const i of SAMPLED) {
    const res = await send(port, agent, "GET", `/v1/devices/${deviceId(i)}/readings?limit=1000`, auth, null, POLL_TIMEOUT_MS);
    let keys = null;
    try {
      keys = res.status === 200 ? JSON.parse(res.text).readings.map((r) => r.key).sort() : null;
    } catch {}
    const want = [...new Set(t.keysOf.get(i))].sort();
    if (keys) out.read++;
    if (keys && keys.join() === want.join()) out.agree++;
    else out.example ??= `${deviceId(i)}: ${keys ? `ledger ${JSON.stringify(keys)}` : outcomeOf(res)}, replies admitted ${JSON.stringify(want)}`;
  }
  agent.destroy();
  return out;
}

// --- one run: a target, a scenario ------------------------------------------------------

async function run(target, scenario) {
  const name = `${{ start: "npm start", workerd: "serve:workerd", dev: "npm run dev" }[target]}, ${scenario === "healthy" ? "healthy origin" : "origin 503 then recovering"}`;
  say(`--- ${name}: ${fmt(DEVICES)} devices, ${PER_REQUEST} a request, ${IN_FLIGHT} in flight`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-fleet-"));
  dirs.add(dir);
  const failures = [];
  const f = { name, target, scenario, failures };
  const origin = await startOrigin(scenario === "healthy");
  const token = randomBytes(24).toString("hex");
  const vars = { ORIGIN_URL: origin.url, STATS_FLUSH_MS: String(STATS_FLUSH_MS), RETRY_MAX_MS: String(RETRY_MAX_MS) };
  const log = logReader();
  let worker;
  try {
    const t0 = performance.now();
    worker = await { start: startNpmStart, workerd: startSelfhosted, dev: startWrangler }[target](dir, vars, token, log);
    // Ready when /v1/health answers 200 (npm start and wrangler dev bundle first).
    const deadline = performance.now() + START_MS;
    const probe = new http.Agent({ keepAlive: false });
    let exited = null;
    worker.exited.then((e) => (exited = e));
    for (;;) {
      const res = await send(worker.port, probe, "GET", "/v1/health", {}, null, 2000);
      if (res.status === 200) break;
      if (exited) throw new Error(`the worker exited (${exited.signal ?? `code ${exited.code}`}) before /v1/health answered 200`);
      if (performance.now() > deadline) throw new Error(`/v1/health did not answer 200 within ${START_MS / 1000} s (last: ${outcomeOf(res)})`);
      await sleep(250);
    }
    f.startMs = performance.now() - t0;
    say(`worker ready on 127.0.0.1:${worker.port} after ${(f.startMs / 1000).toFixed(1)} s`);
  } catch (e) {
    say(`FAILED to start: ${e.message}`);
    failures.push(`the worker did not start: ${e.message}`);
    f.aborted = true;
    await worker?.stop();
    await origin.close();
    fs.rmSync(dir, { recursive: true, force: true });
    dirs.delete(dir);
    return f;
  }

  // A worker that ends mid-run (workerd 1.20260426 crashed so: docs/self-hosting.md "Self-hosting on
  // workerd") is said at once, and nothing waits for it any longer.
  let ended = null;
  let stopping = false;
  worker.exited.then((e) => {
    ended = e;
    if (!stopping) say(`the worker exited (${e.signal ?? `code ${e.code}`}) during the run`);
  });
  const auth = { authorization: `Bearer ${token}` };
  const health = poller(worker.port, "/v1/health", {}, HEALTH_EVERY_MS);
  const statsPoll = poller(worker.port, "/v1/stats", auth, STATS_EVERY_MS);
  const rss = { samples: [], peak: 0, peakFiles: 0, pids: new Set(), peakOf: new Map(), roleOf: new Map() };
  const sample = () => {
    const x = workerdFacts();
    if (x) {
      rss.samples.push(x.rss);
      rss.peak = Math.max(rss.peak, x.rss);
      rss.peakFiles = Math.max(rss.peakFiles, x.files);
      rss.processes = x.processes;
      for (const pid of x.pids) rss.pids.add(pid);
      for (const [pid, own] of x.each) {
        rss.peakOf.set(pid, Math.max(rss.peakOf.get(pid) ?? 0, own));
        if (!rss.roleOf.has(pid)) rss.roleOf.set(pid, roleOf(pid, worker.port));
      }
    }
    return x;
  };
  sample();
  const sampler = setInterval(sample, RSS_EVERY_MS);
  const t = tally();
  f.rounds = [];
  const runStart = performance.now();
  const phases = []; // [name, start] in order: where a slow poll fell
  f.after = []; // [round] → {rss, each}: RSS after each round, summed and per process
  for (let round = 1; round <= ROUNDS; round++) {
    phases.push([`round ${round}`, performance.now()]);
    const r = await sendRound(worker.port, token, round, t);
    f.rounds.push(r);
    say(`round ${round}: ${fmt(r.requests)} requests in ${(r.ms / 1000).toFixed(1)} s (${fmt(r.readings / (r.ms / 1000))} uplinks/s), ${fmt(t.refusedByRound[round])} answered non-2xx; latency p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, max ${ms(r.max)}`);
    f.after[round] = sample();
  }

  // Quiet: the origin (recovered) holds every admitted key, then /v1/stats is exact.
  if (scenario === "failing") {
    f.refusedWhileDown = origin.refused;
    origin.up = true;
    say(`origin recovered (it answered 503 to ${fmt(origin.refused)} POSTs)`);
  }
  const drainStart = performance.now();
  phases.push(["after the load", drainStart]);
  const missingNow = () => {
    let n = 0;
    for (const k of t.admitted.keys()) if (!origin.delivered.has(k)) n++;
    return n;
  };
  let missing = missingNow();
  while (missing && !ended && performance.now() - drainStart < DRAIN_MS) {
    await sleep(500);
    missing = missingNow();
  }
  f.drainMs = performance.now() - drainStart;
  f.missing = missing;
  const statsStart = performance.now();
  const statsAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let stats = null;
  for (;;) {
    const res = await send(worker.port, statsAgent, "GET", "/v1/stats", auth, null, POLL_TIMEOUT_MS);
    if (res.status === 200) stats = JSON.parse(res.text);
    if (stats && exact(stats, t.counted)) break;
    if (ended || performance.now() - statsStart > STATS_SETTLE_MS) break;
    await sleep(500);
  }
  statsAgent.destroy();
  f.statsSettleMs = performance.now() - statsStart;
  f.stats = stats;
  f.ledgers = await sampleLedgers(worker.port, auth, t);
  f.endRss = sample()?.rss;
  clearInterval(sampler);
  await Promise.all([health.stop(), statsPoll.stop()]);
  const exitedEarly = await Promise.race([worker.exited, sleep(0).then(() => null)]);
  stopping = true;
  await worker.stop();
  await origin.close();
  fs.rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);

  // Figures and checks.
  // Facts, not targets: what they cost shows in the replies and polls.
  f.notes = [];
  if (exitedEarly) f.notes.push(`the worker exited during the run (${exitedEarly.signal ?? `code ${exitedEarly.code}`})`);
  if (rss.pids.size > (rss.processes ?? 0)) f.notes.push(`${rss.pids.size - rss.processes} workerd process(es) went away during the run (${rss.pids.size} seen, ${rss.processes} at the end)`);
  Object.assign(f, { t, origin, rss, log: log.summary() });
  const sorted = (xs) => xs.slice().sort((a, b) => a - b);
  f.health = { max: Math.max(...health.latencies), p99: percentile(sorted(health.latencies), 99), polls: health.latencies.length, failures: health.failures };
  // The slowest polls, with when they were sent: a stall has a place in the run.
  const phaseAt = (t0) => phases.filter(([, start]) => start <= t0).at(-1)?.[0] ?? "before the load";
  f.health.slowest = health.latencies
    .map((ms, i) => ({ ms, at: health.at[i] }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5)
    .map(({ ms, at }) => `${Math.round(ms)} ms at ${((at - runStart) / 1000).toFixed(0)} s (${phaseAt(at)})`);
  f.rssEach = [...rss.peakOf].map(([pid, peak]) => `${pid} ${rss.roleOf?.get(pid) ?? "workerd"}: ${MiB(peak)}`);
  f.statsLat = { max: Math.max(...statsPoll.latencies), p99: percentile(sorted(statsPoll.latencies), 99), polls: statsPoll.latencies.length, failures: statsPoll.failures };
  f.redelivered = [...origin.delivered.values()].reduce((n, c) => n + c - 1, 0);
  f.unexplained = [...origin.delivered.keys()].filter((k) => !t.admitted.has(k)).length;
  f.keyChanged = [...origin.keysOfBody.values()].filter((s) => s.size > 1).length;
  f.bodyChanged = [...origin.bodiesOfKey.values()].filter((s) => s.size > 1).length;
  f.retriedBodies = [...origin.bodyPosts.values()].filter((n) => n > 1).length;
  const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0);
  if (t.sent - t.ok) failures.push(`${fmt(t.sent - t.ok)} of ${fmt(t.sent)} requests answered non-2xx (${[...t.outcomes].map(([k, n]) => `${n}x ${k}`).join(", ")}): ${fmt(t.lostReadings)} readings lost, as no network server resends them`);
  if (f.health.max > HEALTH_LIMIT_MS || f.health.failures.size) failures.push(`/v1/health: max ${ms(f.health.max)} (limit ${HEALTH_LIMIT_MS} ms), ${sum(f.health.failures)} failed polls ${JSON.stringify(Object.fromEntries(f.health.failures))}`);
  if (f.statsLat.max > STATS_LIMIT_MS || f.statsLat.failures.size) failures.push(`/v1/stats: max ${ms(f.statsLat.max)} (limit ${STATS_LIMIT_MS} ms), ${sum(f.statsLat.failures)} failed polls ${JSON.stringify(Object.fromEntries(f.statsLat.failures))}`);
  // Per workerd process: `npm run dev` runs two, wrangler's proxy (its ProxyWorker, which
  // holds none of the worker's data) and the worker's; both are held to the limit, and
  // their sum is reported.
  for (const [pid, peak] of rss.peakOf) if (peak >= RSS_LIMIT) failures.push(`workerd ${pid} (${rss.roleOf.get(pid)}) RSS peaked at ${MiB(peak)} (limit: under 1 GiB)`);
  // Rounds 3 and later store nothing new (every reading a duplicate): memory that grows
  // through one grows per request, not per reading held. Each is held to the limit.
  // Per process too: under npm run dev, wrangler's proxy and the worker each.
  f.flat = [];
  for (let round = 3; round <= ROUNDS; round++) {
    for (const [pid, before] of f.after[round - 1]?.each ?? []) f.flat.push({ round, pid, role: rss.roleOf.get(pid), before, after: f.after[round]?.each?.get(pid) ?? 0 });
  }
  for (const { round, pid, role, before, after } of f.flat) {
    if (after > FLAT_LIMIT * before) failures.push(`workerd ${pid} (${role}) RSS grew from ${MiB(before)} to ${MiB(after)} through round ${round}, which stores nothing new (limit: ${Math.round((FLAT_LIMIT - 1) * 100)} %)`);
  }
  const slack = t.uncounted ? ` (${fmt(t.uncounted)} readings were in replies without counts)` : "";
  for (const [k, v] of Object.entries(t.counted)) if (stats?.[k] !== v) failures.push(`/v1/stats ${k} = ${stats?.[k] ?? "no answer"} after ${(f.statsSettleMs / 1000).toFixed(0)} s, the replies counted ${v}${slack}`);
  if (stats && stats.pending_deliveries !== 0) failures.push(`/v1/stats pending_deliveries = ${stats.pending_deliveries} after ${(f.statsSettleMs / 1000).toFixed(0)} s, 0 expected once the origin has every admitted key`);
  if (missing) failures.push(`${fmt(missing)} of ${fmt(t.admitted.size)} admitted keys never reached the origin within ${DRAIN_MS / 1000} s`);
  if (f.keyChanged || f.bodyChanged || origin.withoutKey) failures.push(`Idempotency-Key: ${f.keyChanged} bodies sent under more than one key, ${f.bodyChanged} keys sent with more than one body, ${origin.withoutKey} POSTs without one`);
  if (t.wrong) failures.push(`${fmt(t.wrong)} verdicts contradict the plan, e.g. ${t.wrongExamples.join("; ")}`);
  report(f);
  return f;
}

function report(f) {
  const { t, origin, rss } = f;
  const bad = [...t.outcomes].map(([k, n]) => `${fmt(n)}x ${k}`).join(", ") || "none";
  const polls = (p) => `max ${ms(p.max)}, p99 ${ms(p.p99)} over ${fmt(p.polls)} polls, ${[...p.failures.values()].reduce((a, b) => a + b, 0)} failed${p.failures.size ? ` ${JSON.stringify(Object.fromEntries(p.failures))}` : ""}`;
  say(`requests: ${fmt(t.sent)} sent, ${fmt(t.ok)} 2xx, ${fmt(t.sent - t.ok)} non-2xx (${bad}); readings lost (in non-2xx replies) ${fmt(t.lostReadings)}: ${f.rounds.map((r, k) => `round ${k + 1} ${pctOf(t.refusedByRound[k + 1], r.requests)}`).join(", ")} of requests`);
  if (t.lostReadings) say(`  of those readings ${fmt(t.notStored)} not stored (the replies' not_stored), ${fmt(t.uncounted)} in replies without counts (unknown), the rest stored all the same; devices failed in the replies, by code: ${JSON.stringify(Object.fromEntries(t.deviceErrors))}`);
  say(`readings: ${fmt(t.counted.received)} counted by replies, ${fmt(t.counted.unique)} admitted, ${fmt(t.counted.duplicates_suppressed)} duplicates (${fmt(REPLAYS)} of the ${fmt(f.rounds[1].readings)} round-2 readings are replays); ${fmt(t.wrong)} verdicts against the plan`);
  say(`/v1/health ${polls(f.health)}; /v1/stats ${polls(f.statsLat)}`);
  say(`slowest /v1/health polls: ${f.health.slowest.join("; ")}`);
  say(`workerd RSS peak by process: ${f.rssEach.join("; ")}`);
  say(`workerd RSS after each round, anonymous + file-backed, by process: ${[...(f.after[1]?.parts?.keys() ?? [])].map((pid) => `${pid}: ${f.after.slice(1).map((x) => `${MiB(x?.parts?.get(pid)?.anon)} + ${MiB(x?.parts?.get(pid)?.file)}`).join(" / ")}`).join("; ")}`);
  say(`workerd RSS through each round of duplicates, by process: ${f.flat.map(({ round, pid, role, before, after }) => `round ${round}, ${pid} ${role}: ${MiB(before)} → ${MiB(after)} (${(after / before).toFixed(2)})`).join("; ")}`);
  say(`workerd (${rss.processes ?? 0} process(es) at once, ${rss.pids.size} seen: more means one was restarted): RSS peak ${MiB(rss.peak)}, after rounds ${f.after.slice(1).map((x) => MiB(x?.rss)).join(" / ")}, at the end ${MiB(f.endRss)}; open files up to ${fmt(rss.peakFiles)}`);
  say(`origin: ${fmt(origin.delivered.size)} distinct keys received of ${fmt(t.admitted.size)} admitted, ${fmt(f.missing)} missing after ${(f.drainMs / 1000).toFixed(1)} s, ${fmt(f.redelivered)} redelivered, ${fmt(f.unexplained)} no reply admitted; ${fmt(origin.posts)} POSTs (${fmt(origin.refused)} answered 503), ${fmt(f.retriedBodies)} bodies sent more than once, ${f.keyChanged} changed key, ${f.bodyChanged} keys reused for another body`);
  const s = f.stats;
  say(`/v1/stats once quiet (after ${(f.statsSettleMs / 1000).toFixed(1)} s): ${s ? ["devices", "received", "unique", "duplicates_suppressed", "pending_deliveries", "delivered", "failed_attempts"].map((k) => `${k} ${s[k]}${k in t.counted && s[k] !== t.counted[k] ? ` (replies: ${t.counted[k]})` : ""}`).join(", ") : "no answer"}`);
  const l = f.ledgers;
  say(`GET /v1/devices/{id}/readings of ${LEDGER_SAMPLE} devices: ${l.read} read, ${l.agree} hold exactly the keys their replies admitted${l.example ? `; e.g. ${l.example}` : ""}`);
  const { nomem, events, runtime, reloads } = f.log;
  if (reloads) say(`wrangler dev reloaded the worker ${reloads} time(s) during the run ("Reloading local server": a file it watches changed), each restarting workerd under the requests in flight`);
  say(`worker log: ${fmt(nomem)} lines naming SQLITE_NOMEM${[...events].map(([k, e]) => `; ${fmt(e.n)}x ${k}`).join("")}; ${fmt(runtime.n)} runtime error lines${runtime.example ? `, e.g. ${runtime.example}` : ""}`);
  for (const [k, e] of events) say(`  e.g. ${k}: ${e.example}`);
  for (const x of f.notes) say(`note: ${x}`);
  if (f.failures.length) {
    say(`MISSED ${f.failures.length} target(s):`);
    for (const x of f.failures) say(`  ${x}`);
  } else say("OK: every target of the issue met");
}

/** "round 1 / 2 / 3": the rounds, as the table's rows name them. */
const ROUND_NAMES = `round ${Array.from({ length: ROUNDS }, (_, k) => k + 1).join(" / ")}`;

/** One table of the runs' figures, a column a run. */
function table(runs) {
  const cell = (f, fn) => (f.aborted ? "did not start" : fn(f));
  const rows = [
    ["requests sent", (f) => fmt(f.t.sent)],
    ["2xx", (f) => fmt(f.t.ok)],
    ["non-2xx (status code: requests)", (f) => [...f.t.outcomes].map(([k, n]) => `${k}: ${fmt(n)}`).join("; ") || "0"],
    [`requests non-2xx, ${ROUND_NAMES}`, (f) => f.rounds.map((r, k) => pctOf(f.t.refusedByRound[k + 1], r.requests)).join(" / ")],
    ["readings lost (in non-2xx replies)", (f) => fmt(f.t.lostReadings)],
    ["readings admitted / duplicates", (f) => `${fmt(f.t.counted.unique)} / ${fmt(f.t.counted.duplicates_suppressed)}`],
    ["/v1/health max / p99", (f) => `${ms(f.health.max)} / ${ms(f.health.p99)}`],
    ["/v1/health failed polls", (f) => fmt([...f.health.failures.values()].reduce((a, b) => a + b, 0))],
    ["/v1/stats max / p99", (f) => `${ms(f.statsLat.max)} / ${ms(f.statsLat.p99)}`],
    ["/v1/stats failed polls", (f) => fmt([...f.statsLat.failures.values()].reduce((a, b) => a + b, 0))],
    ["/v1/stats exact once quiet", (f) => (exact(f.stats, f.t.counted) ? `yes, after ${(f.statsSettleMs / 1000).toFixed(1)} s` : "no")],
    ["workerd RSS peak", (f) => MiB(f.rss.peak)],
    [`workerd RSS after ${ROUND_NAMES}`, (f) => f.after.slice(1).map((x) => MiB(x?.rss)).join(" / ")],
    ["workerd RSS peak by process", (f) => f.rssEach.join("; ")],
    ["workerd RSS through each round of duplicates, by process", (f) => f.flat.map(({ round, role, before, after }) => `round ${round}, ${role}: ${MiB(before)} → ${MiB(after)} (${(after / before).toFixed(2)})`).join("; ")],
    ["workerd open files, peak", (f) => fmt(f.rss.peakFiles)],
    [ROUND_NAMES, (f) => f.rounds.map((r) => `${(r.ms / 1000).toFixed(1)} s`).join(" / ")],
    [`uplinks/s, ${ROUND_NAMES}`, (f) => f.rounds.map((r) => fmt(r.readings / (r.ms / 1000))).join(" / ")],
    [`ingest latency p99, ${ROUND_NAMES}`, (f) => f.rounds.map((r) => ms(r.p99)).join(" / ")],
    ["origin keys received / missing / redelivered", (f) => `${fmt(f.origin.delivered.size)} / ${fmt(f.missing)} / ${fmt(f.redelivered)}`],
    ["origin POSTs (503 while down)", (f) => `${fmt(f.origin.posts)} (${fmt(f.origin.refused)})`],
    ["time to deliver every admitted key", (f) => `${(f.drainMs / 1000).toFixed(1)} s`],
    ["Idempotency-Key kept on retries", (f) => (f.keyChanged || f.bodyChanged || f.origin.withoutKey ? "no" : `yes (${fmt(f.retriedBodies)} bodies resent)`)],
    ["sampled ledgers agreeing with the replies", (f) => `${f.ledgers.agree} of ${LEDGER_SAMPLE}`],
    ["SQLITE_NOMEM lines in the log", (f) => fmt(f.log.nomem)],
    ["targets missed", (f) => fmt(f.failures.length)],
  ];
  const head = ["", ...runs.map((f) => f.name)];
  const lines = [head, head.map(() => "---"), ...rows.map(([label, fn]) => [label, ...runs.map((f) => cell(f, fn))])];
  return lines.map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

// --- main --------------------------------------------------------------------------------

if (!fs.existsSync(path.join(ROOT, "pkg/reconnect_dedupe_bg.wasm"))) {
  say("pkg/ is missing: run `npm run build` (npm run bench:fleet does)");
  process.exit(2);
}
say(machine());
say(`${fmt(DEVICES)} devices x ${ROUNDS} rounds (round 2: ${REPLAY_SHARE * 100} % replays; rounds 3${ROUNDS > 3 ? `–${ROUNDS}` : ""}: round 2 again), ${PER_REQUEST} devices a request, ${IN_FLIGHT} in flight; targets ${TARGETS.join(", ")}; scenarios ${SCENARIOS.join(", ")}; STATS_FLUSH_MS ${STATS_FLUSH_MS}, RETRY_MAX_MS ${RETRY_MAX_MS}`);
const runs = [];
for (const target of TARGETS) for (const scenario of SCENARIOS) runs.push(await run(target, scenario));
clearTimeout(watchdog);
console.log(`\nbench:fleet: ${fmt(DEVICES)} devices, ${ROUNDS} rounds, ${PER_REQUEST} a request, ${IN_FLIGHT} in flight (${machine()})\n`);
console.log(table(runs));
const missed = runs.flatMap((f) => f.failures.map((x) => `${f.name}: ${x}`));
console.log(missed.length ? `\nbench:fleet: MISSED ${missed.length} target(s):\n  ${missed.join("\n  ")}` : "\nbench:fleet: OK, every target met");
await stopAll();
process.exit(runs.some((f) => f.aborted) ? 2 : missed.length ? 1 : 0);
