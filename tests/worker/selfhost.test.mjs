// The deployable bundle and the self-hosted worker (docs/deploy.md "Deploy", "Self-hosting on
// workerd"): one `wrangler deploy --dry-run` per run, made without an account or a
// network (scripts/bundle.mjs), its sizes held to the budget in docs/benchmarks.md, and that
// same bundle run by the real workerd binary with selfhost/workerd.capnp
// (scripts/serve-workerd.mjs), stopped and started again on its data directory.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { budget, bundle, overBudget, report, sizes } from "../../scripts/bundle.mjs";
import { CONFIG, configProblems, lockPath, prepare, readWrangler, startWorkerd, workerdEnv } from "../../scripts/serve-workerd.mjs";
import { NAMES, SECRETS } from "../../src/worker/variables.js";

/** An admitted reading's arrival when it is its device's newest by device time (docs/bin-state.md). */
const NEWEST = { arrival: "newest", late_by_ms: null };
import { get, origin, post, sqlite, tempDir, TOKEN, until } from "../support/harness.mjs";

const pkg = await import(new URL("../../pkg/reconnect_dedupe.js", import.meta.url));
const wasm = fs.readFileSync(new URL("../../pkg/reconnect_dedupe_bg.wasm", import.meta.url));
pkg.initSync({ module: wasm });

const bundleDir = tempDir();
let bundled;
before(async () => {
  bundled = await prepare(bundleDir);
});
const cleanup = [() => fs.rmSync(bundleDir, { recursive: true, force: true })];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** Retries every 100 ms at first and at least every second: an alarm armed before a stop is soon due after it. */
const QUICK_RETRIES = { RETRY_BASE_MS: "100", RETRY_MAX_MS: "1000" };

/** workerd on the dry run's bundle and `data`, the test token and `vars` in its environment, stopped after the file's tests: `{...startWorkerd(), call}`. */
async function serve(data, vars) {
  const { env } = workerdEnv(bundled.vars, { INGEST_TOKEN: TOKEN, ...vars });
  const w = await startWorkerd({ bundleDir, dataDir: data, listen: "127.0.0.1:0", env, stdio: "ignore" });
  cleanup.push(() => w.stop());
  const base = `http://127.0.0.1:${await w.port}`;
  return { ...w, call: (p, init) => fetch(new URL(p, base), init) };
}

/** Python: the rows of the ledger of the SQLite file argv[1], or "no ledger". */
const LEDGER_ROWS = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); t=c.execute(\"SELECT 1 FROM sqlite_master WHERE name='readings'\").fetchall(); print(c.execute('SELECT COUNT(*) FROM readings').fetchone()[0] if t else 'no ledger')";

/** An origin that answers 503 until its `healthy` is set, and an empty data directory; both go after the file's tests. */
async function outage() {
  const o = await origin({ answer: () => ({ status: o.healthy ? 200 : 503 }) });
  cleanup.push(() => o.close());
  const data = tempDir();
  cleanup.push(() => fs.rmSync(data, { recursive: true, force: true }));
  return { o, data };
}

/** One native reading of `device` per seq, nine minutes apart at most. */
const readings = (device, seqs) => seqs.map((seq) => ({ device_id: device, seq, ts: `2026-07-16T09:0${seq}:00Z`, fill_pct: 10 * seq }));

test("the dry run uploads index.js and pkg/'s Wasm unchanged, under wrangler's content-hash name", () => {
  const sha1 = crypto.createHash("sha1").update(wasm).digest("hex");
  assert.deepEqual(bundled.modules.map((m) => [m.name, m.type]), [["index.js", "esModule"], [`${sha1}-reconnect_dedupe_bg.wasm`, "wasm"]]);
  assert.ok(bundled.modules[1].bytes.equals(wasm));
  // Beside them: wrangler's README.md and the source map (not uploaded), and the module list.
  assert.deepEqual(fs.readdirSync(bundleDir).sort(), [`${sha1}-reconnect_dedupe_bg.wasm`, "README.md", "bundle.capnp", "index.js", "index.js.map"].sort());
});

test("the bundle is within the budget of docs/benchmarks.md (Bundle size)", (t) => {
  const measured = sizes(bundled);
  const limit = budget();
  for (const line of report(measured, limit).split("\n")) t.diagnostic(line);
  const over = overBudget(measured, limit);
  assert.deepEqual(over, [], `over the budget in docs/benchmarks.md ("Bundle size"): ${over.join("; ")}; if the growth is wanted, say why there and raise the budget`);
});

test("the budget is read from its table, and a size over it is named", () => {
  const doc = "# B\n\n## Bundle size\n\ntext\n\n| module | raw | gzip | raw budget | gzip budget |\n| --- | ---: | ---: | ---: | ---: |\n| Wasm | 1 | 1 | 400 000 | 168 000 |\n| JS | 1 | 1 | 197000 | 51 000 |\n\n## Next\n";
  const limit = budget(doc);
  assert.deepEqual(limit, { wasm: { raw: 400000, gzip: 168000 }, js: { raw: 197000, gzip: 51000 } });
  const measured = { wasm: { raw: 400001, gzip: 168000 }, js: { raw: 1, gzip: 56100 }, total: { raw: 0, gzip: 0 } };
  assert.deepEqual(overBudget(measured, limit), ["Wasm raw 400 001 bytes > budget 400 000 (+0.0 %)", "JS gzip 56 100 bytes > budget 51 000 (+10.0 %)"]);
  assert.throws(() => budget("# B\n\n## Bundle sizes?\n"), /^Error: docs\/benchmarks\.md: no "## Bundle size" section;/);
  assert.throws(() => budget(doc.replace("| JS |", "| Javascript |")), /^Error: docs\/benchmarks\.md: no row "JS";/);
});

test("the dry run fails, showing wrangler's output, when wrangler reaches for the network: its update check after a config warning", async () => {
  // wrangler 4.86 checks for a newer version of itself (the npm registry, over node's
  // https, which ignores proxy variables) when wrangler.toml has a field it does not
  // know, as a typo or a field of a newer wrangler.
  const dir = tempDir();
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "index.js"), "export default { fetch: () => new Response('ok') };\n");
  fs.writeFileSync(path.join(dir, "wrangler.toml"), 'name = "typo"\nmain = "index.js"\ncompatibility_date = "2026-04-01"\nsend_metrics = false\ncompatibilty_flags = []\n');
  await assert.rejects(bundle(path.join(dir, "out"), { config: path.join(dir, "wrangler.toml") }), (e) => {
    assert.match(e.message, /^wrangler deploy --dry-run opened 1 connection\(s\) through the proxy: it must need no account and no network\. Its output:\n/);
    assert.match(e.message, /Unexpected fields found in top-level field: "compatibilty_flags"/);
    return true;
  });
});

test("selfhost/workerd.capnp agrees with wrangler.toml and binds the worker's variables, and each disagreement is named", async () => {
  const wrangler = await readWrangler();
  const text = fs.readFileSync(CONFIG, "utf8");
  assert.deepEqual(configProblems(text, wrangler), []);
  const drifted = text
    .replace('compatibilityDate = "2026-04-01"', 'compatibilityDate = "2026-05-01"')
    .replace('(name = "TTL_MS", fromEnvironment = "TTL_MS"),', '(name = "OLD_MS", fromEnvironment = "OLD_MS"),')
    .replace('(className = "FleetObject", uniqueKey = "reconnect-dedupe-FleetObject", enableSql = true)', '(className = "FleetObject", uniqueKey = "reconnect-dedupe-FleetObject")');
  assert.deepEqual(configProblems(drifted, wrangler), [
    'compatibilityDate is "2026-05-01", wrangler.toml compatibility_date is "2026-04-01"',
    "FleetObject must be declared with enableSql = true (new_sqlite_classes in wrangler.toml)",
    'TTL_MS (a variable of src/worker/variables.js) is not bound: add (name = "TTL_MS", fromEnvironment = "TTL_MS")',
    "OLD_MS is bound from the environment but is no variable of src/worker/variables.js",
  ]);
  // Every variable and secret of the module is bound, by its own name, and nothing else
  // is bound from the environment.
  const bound = [...text.replace(/#.*$/gm, "").matchAll(/\(name = "([^"]+)", fromEnvironment = "([^"]+)"\)/g)].map((m) => [m[1], m[2]]);
  assert.deepEqual(bound.map(([name]) => name).sort(), [...NAMES].sort());
  assert.ok(bound.every(([name, from]) => name === from));
  assert.ok(SECRETS.length > 0 && SECRETS.every((name) => NAMES.includes(name)));
  const secretDropped = text.replace('(name = "CHIRPSTACK_API_TOKEN", fromEnvironment = "CHIRPSTACK_API_TOKEN"),', "").replace('(name = "BACKFILL", fromEnvironment = "BACKFILL")', '(name = "BACKFILL", fromEnvironment = "BACKFILL_ON")');
  assert.deepEqual(configProblems(secretDropped, wrangler), [
    'CHIRPSTACK_API_TOKEN (a variable of src/worker/variables.js) is not bound: add (name = "CHIRPSTACK_API_TOKEN", fromEnvironment = "CHIRPSTACK_API_TOKEN")',
    "BACKFILL must be bound from the environment variable of the same name, not BACKFILL_ON",
  ]);
  // wrangler.toml [vars] may set any variable, and nothing the worker does not read.
  assert.deepEqual(configProblems(text, { ...wrangler, vars: { ORIGIN_URL: "https://o.example/", TTL_MS: 60000 } }), []);
  assert.deepEqual(configProblems(text, { ...wrangler, vars: { TTL_MS: 60000, TTL_MSS: 60000 } }), ['wrangler.toml [vars] sets TTL_MSS, which the worker does not read (src/worker/variables.js; README "Configuration")']);
  // The demo page's worker has a date of its own, and the worker reaches it as ASSETS.
  const last = text.lastIndexOf('compatibilityDate = "2026-04-01"');
  assert.ok(last > text.indexOf('compatibilityDate = "2026-04-01"'), "the assets worker's date");
  const assetsDrifted = `${text.slice(0, last)}compatibilityDate = "2026-06-01"${text.slice(last + 'compatibilityDate = "2026-04-01"'.length)}`.replace('(name = "ASSETS", service = "assets"),', "");
  assert.deepEqual(configProblems(assetsDrifted, wrangler), [
    'compatibilityDate is "2026-06-01", wrangler.toml compatibility_date is "2026-04-01"',
    'ASSETS (wrangler.toml [assets]) must be bound to the assets service: (name = "ASSETS", service = "assets")',
  ]);
});

test("self-hosted: the demo page (www/) is served as Cloudflare's assets serve it, each file with its type", async () => {
  const data = tempDir();
  cleanup.push(() => fs.rmSync(data, { recursive: true, force: true }));
  const w = await serve(data);
  const www = new URL("../../www/", import.meta.url);
  for (const [p, file, type] of [["/", "index.html", "text/html; charset=utf-8"], ["/style.css", "style.css", "text/css; charset=utf-8"], ["/app.js", "app.js", "text/javascript; charset=utf-8"], ["/pkg/reconnect_dedupe_bg.wasm", "pkg/reconnect_dedupe_bg.wasm", "application/wasm"]]) {
    const r = await w.call(p);
    assert.equal(r.status, 200, p);
    assert.equal(r.headers.get("content-type"), type, p);
    assert.ok(Buffer.from(await r.arrayBuffer()).equals(fs.readFileSync(new URL(file, www))), p);
  }
  const head = await w.call("/", { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("content-length"), String(fs.statSync(new URL("index.html", www)).size));
  assert.equal(await head.text(), "");
  // No directory listing (www/pkg is one), no file that is not there: the worker's 404.
  for (const p of ["/pkg", "/pkg/", "/no-such.html", "/no-such"]) {
    const r = await w.call(p);
    assert.equal(r.status, 404, p);
    assert.equal((await r.json()).error.code, "not_found", p);
  }
  const put = await w.call("/index.html", { method: "PUT", body: "x" });
  assert.equal(put.status, 404, "the worker's own answer to a method assets do not take");
  assert.equal((await put.json()).error.code, "not_found");
});

test("self-hosted: a bad var answers 500 invalid_config on /v1, and the demo page is still served, as Cloudflare serves assets before the worker", async () => {
  const data = tempDir();
  cleanup.push(() => fs.rmSync(data, { recursive: true, force: true }));
  const w = await serve(data, { TTL_MS: "6h" });
  const health = await w.call("/v1/health");
  assert.equal(health.status, 500);
  assert.equal((await health.json()).error.code, "invalid_config");
  const page = await w.call("/");
  assert.equal(page.status, 200);
  assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
  const missing = await w.call("/no-such-page");
  assert.equal(missing.status, 500, "what is not a file is the worker's, and its configuration is bad");
});

test("the lock socket's path: absolute when it fits in a socket address, else from the working directory, else refused", () => {
  assert.equal(lockPath("data", "/srv/rd"), "/srv/rd/data/workerd.sock");
  // A checkout deep in a home directory: its npm start data is inside it, and npm runs
  // scripts from its root.
  const deep = `/home/someone/${"projects/".repeat(8)}reconnect-dedupe`;
  assert.equal(lockPath(`${deep}/.wrangler/state/v3/do`, deep), "./.wrangler/state/v3/do/workerd.sock");
  assert.equal(lockPath(".wrangler/state/v3/do", deep), "./.wrangler/state/v3/do/workerd.sock");
  assert.throws(() => lockPath(`${deep}/${"x".repeat(100)}`, "/"), /workerd\.sock is 2\d\d bytes long \(2\d\d from the current directory\), a Unix socket path at most 103: use a data directory with a shorter path$/);
});

test("workerd's environment: the worker's variables, from the environment or else wrangler.toml's vars as text; the rest unset; no token, no start", () => {
  const vars = { TTL_MS: 60000, ORIGIN_URL: "", BACKFILL: "on" };
  assert.deepEqual(workerdEnv(vars, { INGEST_TOKEN: "t", ORIGIN_URL: "http://o/", HOME: "/root" }), {
    env: { TTL_MS: "60000", ORIGIN_URL: "http://o/", BACKFILL: "on", INGEST_TOKEN: "t" },
    overridden: ["ORIGIN_URL"],
  });
  // A variable wrangler.toml does not set comes from the environment all the same; one
  // neither sets is not in workerd's environment (bound as null: the worker's default),
  // nor is any name the worker does not read.
  assert.deepEqual(workerdEnv({}, { INGEST_TOKEN: "t", RETRY_MAX_MS: "5000", CHIRPSTACK_API_TOKEN: "c", TTL_MSS: "1", PATH: "/bin" }), {
    env: { INGEST_TOKEN: "t", RETRY_MAX_MS: "5000", CHIRPSTACK_API_TOKEN: "c" },
    overridden: ["RETRY_MAX_MS"],
  });
  assert.throws(() => workerdEnv(vars, { INGEST_TOKEN: "  " }), /^Error: INGEST_TOKEN is not set\./);
  assert.throws(() => workerdEnv(vars, {}), /\.dev\.vars \(npm start's local dev-token\) is not read\.$/);
});

test("self-hosted: after a restart replays are still suppressed and the alarm armed before it delivers the outbox", async () => {
  const { o, data } = await outage();
  const run = () => serve(data, { ORIGIN_URL: o.url, ...QUICK_RETRIES });

  const device = "bin-selfhost";
  const burst = readings(device, [1, 2, 3]);
  const keys = burst.map((r) => pkg.idempotencyKey(r));
  let w = await run();
  const res = await post(w.call, "/v1/readings", burst);
  assert.equal(res.status, 200);
  const first = await res.json();
  assert.match(first.burst_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(first, {
    burst_id: first.burst_id,
    received: 3,
    unique: 3,
    duplicates_suppressed: 0,
    admitted: keys.map((key, index) => ({ index, key })),
    duplicates: [],
    rejected: [],
    verdicts: keys.map((key, index) => ({ index, verdict: "admitted", key, ...NEWEST })),
  });
  // Delivery was tried, and failed: the batch waits in the outbox, its retry armed as an alarm.
  await until(() => o.requests.length >= 1, "the first delivery attempt");
  assert.deepEqual(o.accepted(), []);
  assert.deepEqual(await w.stop(), { code: 0, signal: null }, "workerd stops on SIGTERM with status 0");
  // The lock socket stays after a stop; the next start removes it (nothing answers there).
  assert.deepEqual(fs.readdirSync(data).sort(), ["reconnect-dedupe-DeviceObject", "reconnect-dedupe-FleetObject", "reconnect-dedupe-GroupObject", "workerd.sock"]);
  // The earlier release's per-device class (legacy.js) is never started for a device first seen by this one.
  assert.deepEqual(fs.readdirSync(path.join(data, "reconnect-dedupe-DeviceObject")).filter((f) => !f.startsWith("metadata.sqlite")), []);
  // The objects' -wal files outlive the stop and hold the latest writes: a copy of the
  // device's file without its -wal has no ledger yet (docs/self-hosting.md "Self-hosting", Data).
  const objects = path.join(data, "reconnect-dedupe-GroupObject");
  const file = fs.readdirSync(objects).find((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  assert.deepEqual(fs.readdirSync(objects).filter((f) => f.startsWith(file)).sort(), [file, `${file}-shm`, `${file}-wal`]);
  const copy = (parts) => {
    const dir = tempDir();
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    for (const part of parts) fs.copyFileSync(path.join(objects, file + part), path.join(dir, `copy.sqlite${part}`));
    return path.join(dir, "copy.sqlite");
  };
  const ledgerRows = (db) => execFileSync("python3", ["-c", LEDGER_ROWS, db]).toString().trim();
  assert.equal(ledgerRows(copy([""])), "no ledger");
  assert.equal(ledgerRows(copy(["", "-wal"])), "3");

  o.healthy = true;
  const attemptsBefore = o.requests.length;
  w = await run();
  // No request reaches the worker until the origin has the batch: workerd reloads the
  // alarm from the data directory (metadata.sqlite) and runs it.
  await until(() => o.accepted().length === 3, "the outbox delivered after the restart, by the alarm alone");
  assert.deepEqual(o.accepted(), keys);
  assert.equal(o.requests.filter((r) => r.status === 200).length, 1, "one batch");
  assert.ok(o.requests.slice(attemptsBefore).every((r) => r.status === 200), "nothing failed after the restart");
  const batch = o.requests.find((r) => r.status === 200);
  assert.deepEqual(o.requests.slice(0, attemptsBefore).map((r) => r.idempotencyKey), Array(attemptsBefore).fill(batch.idempotencyKey), "the same batch, under one Idempotency-Key, before and after the restart");

  const ledger = (await get(w.call, `/v1/devices/${device}/readings`)).body.readings;
  assert.deepEqual(ledger.map((r) => [r.key, r.delivery]), keys.map((k) => [k, "delivered"]));
  const replay = await (await post(w.call, "/v1/readings", burst)).json();
  assert.deepEqual(replay, {
    burst_id: replay.burst_id,
    received: 3,
    unique: 0,
    duplicates_suppressed: 3,
    admitted: [],
    duplicates: [0, 1, 2],
    rejected: [],
    verdicts: keys.map((key, index) => ({ index, verdict: "duplicate", key, first_admitted_at: ledger[index].admitted_at, first_burst_id: first.burst_id })),
  });
  assert.notEqual(replay.burst_id, first.burst_id);
  assert.deepEqual(o.accepted(), keys, "each reading delivered exactly once");
});

test("self-hosted: restored without metadata.sqlite, a device's waiting batch goes out at its next uplink", async () => {
  const { o, data } = await outage();
  const device = "bin-restored";
  const [burst, later] = [readings(device, [1, 2, 3]), readings(device, [4])];
  let w = await serve(data, { ORIGIN_URL: o.url, ...QUICK_RETRIES });
  assert.equal((await post(w.call, "/v1/readings", burst)).status, 200);
  await until(() => o.requests.length >= 1, "the first delivery attempt");
  await w.stop();

  // A backup restored without the pending-alarm index (metadata.sqlite), an hour after
  // it was taken: the object's own file (workerd's _cf_METADATA, key 1: the alarm in ns
  // since the epoch) still holds the alarm, now an hour overdue (more than the five
  // minutes after which device.js takes an alarm as lost), which workerd no longer
  // knows to run. Nothing runs it until a request reaches the object.
  const objects = path.join(data, "reconnect-dedupe-GroupObject");
  for (const f of fs.readdirSync(objects)) if (f.startsWith("metadata.sqlite")) fs.rmSync(path.join(objects, f));
  const files = fs.readdirSync(objects).filter((f) => f.endsWith(".sqlite")).map((f) => path.join(objects, f));
  assert.equal(files.length, 1);
  sqlite(files, "UPDATE _cf_METADATA SET value = value - 3600000000000 WHERE key = 1;");

  o.healthy = true;
  w = await serve(data, { ORIGIN_URL: o.url, ...QUICK_RETRIES });
  assert.equal((await post(w.call, "/v1/readings", later)).status, 200);
  const keys = [...burst, ...later].map((r) => pkg.idempotencyKey(r));
  await until(() => o.accepted().length === 4, "the waiting batch and the new reading delivered");
  assert.deepEqual(o.accepted(), keys, "the waiting batch first, then the new reading, each once");
  const ledger = (await get(w.call, `/v1/devices/${device}/readings`)).body.readings;
  assert.deepEqual(ledger.map((r) => [r.key, r.delivery]), keys.map((k) => [k, "delivered"]));
});

test("self-hosted: a second workerd on a data directory in use is refused, naming both, and the first goes on", async () => {
  const data = tempDir();
  cleanup.push(() => fs.rmSync(data, { recursive: true, force: true }));
  const first = await serve(data, {});
  const device = "bin-one-instance";
  assert.equal((await post(first.call, "/v1/readings", readings(device, [1]))).status, 200);
  await assert.rejects(serve(data, {}), {
    message: `${data} is in use: another workerd serves it (it listens on ${path.join(data, "workerd.sock")}). Stop that one first: two on one data directory each keep their own seen-set, and admit the same replay twice.`,
  });
  const replay = await (await post(first.call, "/v1/readings", readings(device, [1]))).json();
  assert.deepEqual([replay.unique, replay.duplicates_suppressed], [0, 1]);
});

test("npm run serve:workerd -- --listen with a port alone stops at once, saying what it takes", () => {
  // workerd reads "8799" as the IPv4 address 0.0.34.95 (port 80) and dies with "Cannot
  // assign requested address", after the whole dry run.
  const data = tempDir();
  cleanup.push(() => fs.rmSync(data, { recursive: true, force: true }));
  const script = fileURLToPath(new URL("../../scripts/serve-workerd.mjs", import.meta.url));
  const run = spawnSync(process.execPath, [script, "--listen", "8799", "--data", data], { env: { PATH: process.env.PATH, INGEST_TOKEN: TOKEN }, encoding: "utf8" });
  assert.deepEqual([run.status, run.stdout, run.stderr], [1, "", "serve:workerd: --listen 8799: give an address and a port, as 127.0.0.1:8788 (this machine only) or 0.0.0.0:8788 (every interface)\n"]);
  assert.deepEqual(fs.readdirSync(data), [], "nothing started");
});
