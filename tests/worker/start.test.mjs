// `npm start` (scripts/start.mjs): the worker on workerd with local defaults — the
// demo page and the API on one port (PORT), the values from wrangler.toml, .dev.vars
// and the environment in that order, and the Durable Objects where `wrangler dev`
// (`npm run dev`, and npm start before it) keeps them, read as they are.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DATA, portOf, startEnv } from "../../scripts/start.mjs";
import { tempDir, until } from "../support/harness.mjs";
import { freePort, npmRunDev, npmStart } from "../support/launch.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A temporary directory, removed after the file's tests. */
function scratch() {
  const dir = tempDir();
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** npm start on fresh data with `devVars` (text) as its .dev.vars; stopped after the file. */
async function started(devVars, env) {
  const dir = scratch();
  fs.writeFileSync(path.join(dir, "dev.vars"), devVars);
  const w = await npmStart({ data: path.join(dir, "do"), devVars: path.join(dir, "dev.vars"), env });
  cleanup.push(() => w.stop());
  return { ...w, devVars: path.join(dir, "dev.vars") };
}

/** npm start run to its end (one that is refused): `--data data --dev-vars devVars`, PORT `port`, no INGEST_TOKEN of this process's. */
function refusedStart({ data, devVars, port }) {
  const env = { ...process.env, PORT: String(port) };
  delete env.INGEST_TOKEN;
  return spawnSync(process.execPath, [path.join(ROOT, "scripts/start.mjs"), "--data", data, "--dev-vars", devVars], { cwd: ROOT, env, encoding: "utf8", timeout: 120_000 });
}

const reading = (device, seq) => [{ device_id: device, seq, ts: new Date(Date.UTC(2026, 6, 16, 9, seq)).toISOString(), fill_pct: 10 + seq }];
const postAs = (w, token, body) => w.call("/v1/readings", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });

test("npm start's values: wrangler.toml [vars], then .dev.vars, then the environment; names the worker does not read are reported", () => {
  // As wrangler reads a wrangler.toml whose [vars] sets these (TOML integers).
  const vars = { MAX_READINGS: 500, RETRY_MAX_MS: 60000 };
  const made = startEnv(vars, "INGEST_TOKEN=from-file\nTTL_MS=1000\n# a comment\nRETRY_MAX_MS=5000\nBACKFILL=on\nNOT_A_VAR=1\n", { TTL_MS: "2000", PATH: "/bin", HOME: "/root" });
  assert.equal(made.env.INGEST_TOKEN, "from-file");
  assert.equal(made.env.TTL_MS, "2000", "the environment is over .dev.vars");
  assert.equal(made.env.RETRY_MAX_MS, "5000", ".dev.vars is over wrangler.toml");
  assert.equal(made.env.MAX_READINGS, "500", "wrangler.toml's value where neither sets one");
  assert.equal(made.env.BACKFILL, "on", "a variable wrangler.toml does not set, from .dev.vars");
  assert.deepEqual(Object.keys(made.env).sort(), ["BACKFILL", "INGEST_TOKEN", "MAX_READINGS", "RETRY_MAX_MS", "TTL_MS"], "only the names the worker reads reach workerd, and only those set: the rest take the worker's defaults");
  assert.deepEqual(made.fromFile.sort(), ["BACKFILL", "INGEST_TOKEN", "RETRY_MAX_MS"], "TTL_MS came from the environment");
  assert.deepEqual(made.fromEnvironment, ["TTL_MS"]);
  assert.deepEqual(made.ignored, ["NOT_A_VAR"]);
  assert.equal(startEnv(vars, "INGEST_TOKEN=from-file\n", { INGEST_TOKEN: "from-env" }).env.INGEST_TOKEN, "from-env");
  assert.throws(() => startEnv(vars, "INGEST_TOKEN=\n", {}), /^Error: INGEST_TOKEN is empty: set it in \.dev\.vars/);
  assert.throws(() => startEnv(vars, "# nothing\n", {}), /INGEST_TOKEN is empty/);
});

test("npm start's PORT: 8787 unless set, a whole number 1-65535 otherwise refused", () => {
  assert.equal(portOf(undefined), 8787);
  assert.equal(portOf("9000"), 9000);
  for (const bad of ["", "0", "65536", "80a", " 80", "-1", "8e3", "0x50"]) assert.throws(() => portOf(bad), /^Error: PORT=.*: give a port number from 1 to 65535/, bad);
});

test("npm start serves the demo page and the API on PORT, with the token of its .dev.vars", async () => {
  const w = await started("INGEST_TOKEN=file-token\n");
  const page = await w.call("/");
  assert.equal(page.status, 200);
  assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
  assert.equal(await page.text(), fs.readFileSync(path.join(ROOT, "www/index.html"), "utf8"));
  const wasm = await w.call("/pkg/reconnect_dedupe_bg.wasm");
  assert.equal(wasm.headers.get("content-type"), "application/wasm", "a browser compiles it only with this type");
  assert.ok(Buffer.from(await wasm.arrayBuffer()).equals(fs.readFileSync(path.join(ROOT, "www/pkg/reconnect_dedupe_bg.wasm"))));
  assert.equal((await w.call("/app.js")).headers.get("content-type"), "text/javascript; charset=utf-8");
  assert.equal((await w.call("/no-such-file.js")).status, 404);
  assert.equal((await w.call("/pkg")).status, 404, "a directory is not listed");
  assert.equal((await postAs(w, "dev-token", reading("bin-start", 1))).status, 401, "dev-token is only the example's");
  const stored = await postAs(w, "file-token", reading("bin-start", 1));
  assert.equal(stored.status, 200);
  assert.equal((await stored.json()).unique, 1);
  assert.ok(w.log().includes(`npm start: vars: wrangler.toml [vars]; from ${w.devVars}: INGEST_TOKEN; from the environment: none\n`), w.log());
  await until(() => /npm start: listening on/.test(w.log()), "npm start's listening line");
  assert.match(w.log(), new RegExp(`npm start: listening on http://127\\.0\\.0\\.1:${w.port}: the demo page at`));
});

test("npm start refuses a taken PORT and says so", async () => {
  const taken = net.createServer();
  await new Promise((r) => taken.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise((r) => taken.close(r)));
  const dir = scratch();
  fs.writeFileSync(path.join(dir, "dev.vars"), "INGEST_TOKEN=t\n");
  const run = refusedStart({ data: path.join(dir, "do"), devVars: path.join(dir, "dev.vars"), port: taken.address().port });
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(run.stderr, new RegExp(`npm start: workerd exited \\(code \\d+\\) before listening; why is in its message above \\(is port ${taken.address().port} taken\\? PORT=… npm start\\)`));
});

test("npm start reads what wrangler dev stored: a replay of a reading it admitted is a duplicate, its ledger is there", async () => {
  const state = scratch();
  const dev = await npmRunDev({ persist: state, vars: { INGEST_TOKEN: "tok" } });
  let first;
  try {
    first = await (await postAs(dev, "tok", reading("bin-handed", 1))).json();
    assert.equal(first.unique, 1);
  } finally {
    await dev.stop();
  }
  // wrangler dev's --persist-to <dir> keeps the objects in <dir>/v3/do; npm start's
  // default data directory is .wrangler/state/v3/do, wrangler dev's default state.
  const dir = scratch();
  fs.writeFileSync(path.join(dir, "dev.vars"), "INGEST_TOKEN=tok\n");
  const w = await npmStart({ data: path.join(state, "v3/do"), devVars: path.join(dir, "dev.vars") });
  try {
    const again = await (await postAs(w, "tok", reading("bin-handed", 1))).json();
    assert.equal(again.unique, 0, JSON.stringify(again));
    assert.deepEqual(again.duplicates, [0]);
    assert.deepEqual(again.verdicts.map((v) => v.key), first.admitted.map((a) => a.key));
    const ledger = await (await w.call("/v1/devices/bin-handed/readings", { headers: { authorization: "Bearer tok" } })).json();
    assert.deepEqual(ledger.readings.map((r) => r.key), first.admitted.map((a) => a.key));
  } finally {
    await w.stop();
  }
});

test("a second npm start on the same data is refused while the first runs", async () => {
  const w = await started("INGEST_TOKEN=t\n");
  const dataArg = w.log().match(/npm start: data: (.*)\n/)[1];
  const dir = scratch();
  fs.writeFileSync(path.join(dir, "dev.vars"), "INGEST_TOKEN=t\n");
  const run = refusedStart({ data: dataArg, devVars: path.join(dir, "dev.vars"), port: await freePort() });
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.match(run.stderr, /is in use: another workerd serves it/);
});

test("npm start keeps its data where wrangler dev keeps it by default: .wrangler/state (beside wrangler.toml), then Miniflare's v3/do", () => {
  assert.equal(DATA, path.join(ROOT, ".wrangler", "state", "v3", "do"));
});

test("npm start says when the token is the shell's, not .dev.vars'", async () => {
  const w = await started("INGEST_TOKEN=file-token\n", { INGEST_TOKEN: "shell-token" });
  assert.match(w.log(), /from the environment: INGEST_TOKEN\n/);
  assert.match(w.log(), /npm start: INGEST_TOKEN is this shell's \(exported\), not .*dev\.vars's: clients must present that one\n/);
  assert.equal((await postAs(w, "file-token", reading("bin-shell", 1))).status, 401);
  assert.equal((await postAs(w, "shell-token", reading("bin-shell", 1))).status, 200);
});

test("npm start refuses a --dev-vars file that is not there, rather than making one with the example's token", () => {
  const dir = scratch();
  const missing = path.join(dir, "dev.varz");
  const run = refusedStart({ data: path.join(dir, "do"), devVars: missing, port: 8787 });
  assert.equal(run.status, 1, run.stdout + run.stderr);
  assert.equal(run.stderr, `npm start: --dev-vars ${missing}: no such file\n`);
  assert.equal(fs.existsSync(missing), false);
});

test("SIGTERM or SIGINT to npm start's own process stops its workerd too, and the data is free again", async () => {
  for (const signal of ["SIGTERM", "SIGINT"]) {
    const dir = scratch();
    fs.writeFileSync(path.join(dir, "dev.vars"), "INGEST_TOKEN=t\n");
    const opts = { data: path.join(dir, "do"), devVars: path.join(dir, "dev.vars") };
    const w = await npmStart(opts);
    const workerds = childrenOf(w.pid);
    assert.equal(workerds.length, 1, `one workerd under npm start: ${workerds}`);
    process.kill(w.pid, signal); // npm start's process alone, not its group
    assert.deepEqual(await w.exited, { code: 0, signal: null }, signal);
    await until(() => !fs.existsSync(`/proc/${workerds[0]}`) || /^State:\s+Z/m.test(fs.readFileSync(`/proc/${workerds[0]}/status`, "utf8")), `workerd ${workerds[0]} to exit after ${signal}`);
    const again = await npmStart(opts);
    assert.equal((await again.call("/v1/health")).status, 200, signal);
    await again.stop();
  }
});

/** The pids of the processes whose parent is `pid` (from /proc). */
function childrenOf(pid) {
  return fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      return fs.readFileSync(`/proc/${d}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1] === String(pid);
    } catch {
      return false;
    }
  }).map(Number);
}
