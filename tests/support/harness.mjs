// Runs src/worker/ in workerd through Miniflare (no mocks of the runtime), with the
// bindings wrangler.toml declares, and a real HTTP origin on 127.0.0.1 for delivery.
import { Miniflare } from "miniflare";
import assert from "node:assert/strict";
import http from "node:http";
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { checkReply, documentInUse, useDocument } from "./openapi-replies.mjs";
import * as pkgCore from "../../pkg/reconnect_dedupe.js";
import { groupName } from "../../src/worker/placement.js";

export { checkReply };

const root = new URL("../../", import.meta.url).pathname;
export const TOKEN = "test-token";
/** A time as the worker writes it (Python's isoformat in UTC): no fraction at a whole second, else six digits. */
export const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/;
export const fixture = (name) => fs.readFileSync(path.join(root, "tests/fixtures/webhooks", name), "utf8");
export const keyVectors = JSON.parse(fs.readFileSync(path.join(root, "tests/vectors/keys.json"), "utf8")).vectors;

/** A persistence directory that outlives one Miniflare instance (restart tests). */
export function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), "rd-worker-"));
}

const WORKER = "src/worker/index.js";
// Set by `node --test` in each test file's process: the worker tests validate replies,
// a benchmark run with plain `node` does not (its latencies are the worker's alone).
const UNDER_TEST = process.env.NODE_TEST_CONTEXT !== undefined;

/**
 * Starts the worker. `vars`: the variables and secrets it is given (the rest take their
 * defaults, src/worker/variables.js); `persist` is a directory or undefined.
 * `lines` holds what the worker printed to stdout (its audit lines), line by line.
 * `script`: the module to run instead of src/worker/index.js (a benchmark's variant
 * of the worker, exporting the same classes), relative to the repository.
 * `validate`: `call` checks every reply against the OpenAPI document
 * (src/worker/openapi.js; `checkReply`) and throws, failing the test that made the
 * call, when one does not match; on by default for the worker itself under `node --test`.
 */
export async function start({ vars = {}, persist, log = false, script = WORKER, validate = UNDER_TEST && script === WORKER } = {}) {
  const lines = [];
  let partial = "";
  assertBuilt();
  const mf = new Miniflare({
    modules: true,
    modulesRoot: root,
    scriptPath: path.join(root, script),
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    bindings: { INGEST_TOKEN: TOKEN, ...vars },
    durableObjects: {
      GROUPS: { className: "GroupObject", useSQLite: true },
      DEVICES: { className: "DeviceObject", useSQLite: true },
      FLEET: { className: "FleetObject", useSQLite: true },
    },
    durableObjectsPersist: persist ?? false,
    handleRuntimeStdio: log
      ? undefined
      : (stdout, stderr) => {
          stdout.setEncoding("utf8").on("data", (chunk) => {
            const parts = (partial + chunk).split("\n");
            partial = parts.pop();
            lines.push(...parts);
          });
          stderr.resume();
        },
  });
  await mf.ready;
  const url = await mf.ready;
  if (validate && !documentInUse()) await loadDocument(mf, url);
  const call = async (p, init = {}) => {
    const target = new URL(p, url);
    const res = await mf.dispatchFetch(target, init);
    if (validate) await assertDocumented(init.method ?? "GET", target, typeof init.body === "string" ? init.body : undefined, new Headers(init.headers).get("content-type"), res.clone());
    return res;
  };
  return { mf, call, lines };
}

/**
 * Reads the OpenAPI document replies are checked against from what a worker serves:
 * this one's, or, when it cannot serve it (no token, a bad configuration), that of a
 * worker started for it.
 */
async function loadDocument(mf, url) {
  const read = async (worker, at) => {
    const res = await worker.dispatchFetch(new URL("/v1/openapi.json", at));
    return { status: res.status, text: await res.text() };
  };
  let got = await read(mf, url);
  if (got.status !== 200) {
    const served = await start({ validate: false });
    try {
      got = await read(served.mf, await served.mf.ready);
    } finally {
      await served.mf.dispose();
    }
  }
  assert.equal(got.status, 200, `GET /v1/openapi.json: ${got.text.slice(0, 200)}`);
  useDocument(JSON.parse(got.text));
}

/** Asserts that `res`, the reply to `method` `url` with `requestBody` (text or undefined) of `requestType` (or null), is as the OpenAPI document says (openapi-replies.mjs). */
async function assertDocumented(method, url, requestBody, requestType, res) {
  checkReply({ method, url, requestBody, requestType, status: res.status, headers: res.headers, body: await res.text() });
}

function assertBuilt() {
  if (!fs.existsSync(path.join(root, "pkg/reconnect_dedupe_bg.wasm"))) {
    throw new Error("pkg/ is missing: run `npm run build` first");
  }
}

/** POST JSON with the token. */
export function post(call, p, body, headers = {}) {
  return call(p, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export async function get(call, p) {
  const res = await call(p, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

/** POSTs `body` to `/v1/uplinks/<route>` (`ttn`, `chirpstack?event=up`, ...) with the token: `{status, body}`. */
export async function sendUplink(call, route, body) {
  const res = await post(call, `/v1/uplinks/${route}`, body);
  return { status: res.status, body: await res.json() };
}

/**
 * The worker's retry of a raw uplink's group call (attempt > 0: the first call
 * committed, its answer lost), made as the stateless tier makes it (index.js `ingest`):
 * `body` of `route` planned by the core, the payload as bytes. The group's answer.
 */
export async function retryRawCall(w, route, body, burst_id, attempt = 1) {
  const plan = JSON.parse(core().parseUplink(route, new TextEncoder().encode(JSON.stringify(body)), { maxReadings: 10_000 }));
  const { device_id } = plan.raw;
  const raw = { ...plan.raw, payload: Uint8Array.from(plan.raw.payload) };
  const ns = await w.mf.getDurableObjectNamespace("GROUPS");
  return ns.get(ns.idFromName(groupName(device_id))).ingest({ device_id, readings: [], refused: plan.rejected.length, raw, route, burst_id, attempt });
}

/** The Wasm core of pkg/, loaded on first use. */
let loaded;
function core() {
  if (!loaded) {
    loaded = pkgCore;
    loaded.initSync({ module: fs.readFileSync(path.join(root, "pkg/reconnect_dedupe_bg.wasm")) });
  }
  return loaded;
}

/** PUT /v1/devices/{id}/config with `config` and the token: `{status, body}`. */
export async function putConfig(call, id, config) {
  const res = await call(`/v1/devices/${id}/config`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(config),
  });
  return { status: res.status, body: await res.json() };
}

/** The device's ledger rows (first page). */
export const readingsOf = async (call, id) => (await get(call, `/v1/devices/${id}/readings`)).body.readings;
/** GET /v1/stats. */
export const statsOf = async (call) => (await get(call, "/v1/stats")).body;
/** GET /v1/devices/{id}/gaps, which must answer 200: its body. */
export async function gapsOf(call, id) {
  const r = await get(call, `/v1/devices/${id}/gaps`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** An ingest reply accounts for every reading once (docs/http-api.md "HTTP API"). */
export function assertReconciles(b) {
  assert.equal(b.received, b.unique + b.duplicates_suppressed + b.rejected.length + (b.parked?.length ?? 0) + (b.not_stored?.length ?? 0), JSON.stringify(b));
}

/**
 * A real origin on 127.0.0.1, path `/ingest`. By default it answers 500 to the first
 * `failures` requests, then 200. `answer(request)` decides instead: it gets the
 * request's record (`n`, its index; `method`, `path`, `headers`, `idempotencyKey`, `raw` body
 * text, `body` parsed or null) and returns `{status, headers, body, delay}` to answer
 * (`body` a string, `{}` when absent; after `delay` ms, when given), or
 * `{hang: true}` to never answer (until `close()`); `commit` (default: a 2xx status)
 * says whether the origin stored the batch. `port` listens on a given port (a port
 * that refused connections until now).
 */
export async function origin({ failures = 0, answer, port = 0 } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      const n = requests.length;
      const r = { n, at: Date.now(), method: req.method, path: req.url, headers: req.headers, idempotencyKey: req.headers["idempotency-key"], raw: data, body: data ? JSON.parse(data) : null };
      const a = answer ? answer(r) : { status: n >= failures ? 200 : 500 };
      r.status = a.hang ? null : a.status;
      r.ok = a.commit ?? (r.status >= 200 && r.status < 300);
      requests.push(r);
      if (a.hang) return;
      setTimeout(() => {
        res.writeHead(a.status, { "content-type": "application/json", ...a.headers });
        res.end(a.body ?? "{}");
      }, a.delay ?? 0);
    });
  });
  await new Promise((r) => server.listen(port, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/ingest`,
    port: server.address().port,
    requests,
    /** Keys the origin accepted (stored), with repeats. */
    accepted: () => requests.filter((r) => r.ok).flatMap((r) => r.body?.readings?.map((x) => x.key) ?? []),
    close: () =>
      new Promise((r) => {
        server.close(r);
        server.closeAllConnections(); // hung requests too
      }),
  };
}

/** Polls `check` (async, returns truthy when done) until it holds; bounded. */
export async function until(check, what, deadlineMs = 20_000) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The worker's JSON log lines with this `event` (and this burst, when given). */
export const logged = (w, event, burst_id) =>
  w.lines
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l))
    .filter((l) => l.event === event && (burst_id === undefined || l.burst_id === burst_id));

/**
 * Waits until the log holds every line written so far: the worker writes its lines in
 * order, and they reach `w.lines` through a pipe; a burst of another device, sent now,
 * logs its audit line after them.
 */
let fences = 0;
export async function logSettled(w) {
  const res = await post(w.call, "/v1/readings", [{ device_id: "bin-fence", seq: ++fences, ts: "2026-07-16T09:00:00Z", fill_pct: 1 }]);
  const { burst_id } = await res.json();
  await until(() => logged(w, "burst_deduplicated", burst_id).length, "the fence's audit line");
}

/**
 * A worker stopped and started again on the same storage: `before(w)` on the first,
 * `between(dir)` while none runs (old state or faults written with `sqlite()`),
 * `after(w, dir)` on the second, `stopped(dir)` once it too has stopped. The storage
 * is removed at the end. Returns what `after` returns.
 */
export async function acrossRestart({ vars, before, between = () => {}, after, stopped = () => {} }) {
  const dir = tempDir();
  try {
    const first = await start({ persist: dir, vars });
    try {
      await before(first);
    } finally {
      await first.mf.dispose();
    }
    await between(dir);
    const second = await start({ persist: dir, vars });
    let result;
    try {
      result = await after(second, dir);
    } finally {
      await second.mf.dispose();
    }
    await stopped(dir);
    return result;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The objects' SQLite files of one class in a persistence directory. */
export function databases(dir, className) {
  const at = path.join(dir, `-${className}`);
  return fs
    .readdirSync(at)
    .filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")
    .map((f) => path.join(at, f));
}

/**
 * Runs SQL statements on each file with python3's sqlite3, while no runtime holds
 * them: how the tests inject real faults (triggers) and old state, without mocks.
 */
export function sqlite(files, script) {
  for (const file of files) {
    execFileSync("python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", file, script]);
  }
}
