// The two local ways to run the worker, as real processes for the tests that need the
// launcher itself and not only the worker (harness.mjs runs the worker in Miniflare):
// `npm start` (scripts/start.mjs: workerd on the dry run's bundle) and `npm run dev`
// (wrangler dev). Each runs in its own process group, so that stopping it stops the
// workerd it started; each resolves once /v1/health answers, with
// `{port, pid, exited, call(path, init), log(), stop()}` (pid: the launcher's own
// process; stop() signals its whole group).
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { tempDir, until } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A port on 127.0.0.1 nothing listens on now. */
export function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** `command args` in its own process group, in ROOT; resolves once GET /v1/health on `port` answers (any status) or rejects with its output. */
async function launch(what, command, args, { port, env }) {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  let gone = null;
  exited.then((e) => (gone = e));
  const stop = async (signal = "SIGTERM") => {
    try {
      process.kill(-child.pid, signal);
    } catch {}
    return exited;
  };
  const base = `http://127.0.0.1:${port}`;
  try {
    await until(async () => {
      if (gone) throw new Error(`${what} exited (${gone.signal ?? `code ${gone.code}`}) before answering:\n${out}`);
      try {
        await fetch(`${base}/v1/health`);
        return true;
      } catch {
        return false;
      }
    }, `${what} to answer /v1/health`, 120_000);
  } catch (e) {
    await stop("SIGKILL");
    throw gone ? e : new Error(`${e.message}; its output:\n${out}`);
  }
  return { port, pid: child.pid, exited, call: (p, init) => fetch(new URL(p, base), init), log: () => out, stop };
}

/**
 * `npm start` without its build (scripts/start.mjs): PORT a free port (or `port`),
 * `--data data`, `--dev-vars devVars` (a file), `env` over this process's environment
 * with no INGEST_TOKEN of its own.
 */
export async function npmStart({ data, devVars, env = {}, port }) {
  port ??= await freePort();
  const childEnv = { ...process.env, PORT: String(port), ...env };
  if (!("INGEST_TOKEN" in env)) delete childEnv.INGEST_TOKEN;
  return launch("npm start", process.execPath, [path.join(ROOT, "scripts/start.mjs"), "--data", data, "--dev-vars", devVars], { port, env: childEnv });
}

/**
 * `npm run dev` without its build: wrangler dev on a free port, its state under
 * `persist` (a temporary directory unless given; then removed by stop()), `vars` as
 * --var (the token among them).
 */
export async function npmRunDev({ persist, vars }) {
  const port = await freePort();
  const state = persist ?? tempDir();
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", state, "--show-interactive-dev-session=false", ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`])];
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CLOUDFLARE_CF_FETCH_ENABLED: "false", CI: "1" };
  const w = await launch("wrangler dev", path.join(ROOT, "node_modules/.bin/wrangler"), args, { port, env });
  const stop = async () => {
    const e = await w.stop();
    if (!persist) fs.rmSync(state, { recursive: true, force: true });
    return e;
  };
  return { ...w, stop };
}
