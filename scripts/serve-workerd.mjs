// `npm run serve:workerd`: the worker on the open-source workerd runtime, on this
// machine, for those who cannot use Cloudflare (docs/self-hosting.md "Self-hosting on workerd").
// It runs what `wrangler deploy` would upload (bundle.mjs), with selfhost/workerd.capnp:
// Durable Objects in SQLite files under the data directory, and the worker's variables
// (src/worker/variables.js): the values wrangler.toml [vars] gives, each overridable from
// the environment, and the secrets from the environment; the rest take their defaults.
//
//   INGEST_TOKEN=… npm run serve:workerd [-- --listen 127.0.0.1:8788] [-- --data .selfhost/data]
//
// Foreground; Ctrl-C (SIGINT) or SIGTERM stops workerd. tests/worker/selfhost.test.mjs
// starts it through `prepare` and `startWorkerd`, as here.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import workerd from 'workerd';
import { NAMES, SECRETS } from '../src/worker/variables.js';
import { bundle } from './bundle.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CONFIG = path.join(ROOT, 'selfhost/workerd.capnp');

/**
 * What selfhost/workerd.capnp (`text`), wrangler.toml (`wrangler`, as wrangler reads
 * it) and the worker's variables disagree on, one line each; empty when they agree: the
 * compatibility date and flags, the Durable Object bindings and their SQLite storage,
 * the names bound from the environment, which must be exactly the variables of
 * src/worker/variables.js (secrets included), and the names wrangler.toml [vars] sets,
 * each of which must be one of them. The capnp is read as
 * the committed file writes it, one `(name = …, kind = …)` binding a line. The
 * compatibility date is every worker's (the demo page's assets worker has one too),
 * and wrangler.toml's [assets] binding must be the assets service.
 */
export function configProblems(text, wrangler) {
  const capnp = text.replace(/#.*$/gm, '');
  const all = (re) => [...capnp.matchAll(re)];
  const problems = [];
  const dates = all(/compatibilityDate = "([^"]*)"/g).map((m) => m[1]);
  for (const date of dates.length ? dates : [undefined]) {
    if (date !== wrangler.compatibility_date) problems.push(`compatibilityDate is ${JSON.stringify(date)}, wrangler.toml compatibility_date is ${JSON.stringify(wrangler.compatibility_date)}`);
  }
  const flags = /compatibilityFlags = \[([^\]]*)\]/.exec(capnp)?.[1].match(/"[^"]*"/g)?.map((f) => JSON.parse(f)) ?? [];
  if (flags.join() !== (wrangler.compatibility_flags ?? []).join()) problems.push(`compatibilityFlags are [${flags}], wrangler.toml compatibility_flags are [${wrangler.compatibility_flags}]`);
  const objects = new Map(all(/\(name = "([^"]+)", durableObjectNamespace = "([^"]+)"\)/g).map((m) => [m[1], m[2]]));
  const sqlite = new Set(all(/\(className = "([^"]+)",[^)]*enableSql = true/g).map((m) => m[1]));
  const sqliteClasses = (wrangler.migrations ?? []).flatMap((m) => m.new_sqlite_classes ?? []);
  for (const { name, class_name } of wrangler.durable_objects?.bindings ?? []) {
    if (objects.get(name) !== class_name) problems.push(`Durable Object binding ${name} must be durableObjectNamespace = "${class_name}", as in wrangler.toml`);
    if (sqliteClasses.includes(class_name) && !sqlite.has(class_name)) problems.push(`${class_name} must be declared with enableSql = true (new_sqlite_classes in wrangler.toml)`);
  }
  const assets = wrangler.assets?.binding;
  if (assets && !capnp.includes(`(name = "${assets}", service = "assets")`)) problems.push(`${assets} (wrangler.toml [assets]) must be bound to the assets service: (name = "${assets}", service = "assets")`);
  const bound = new Map(all(/\(name = "([^"]+)", fromEnvironment = "([^"]+)"\)/g).map((m) => [m[1], m[2]]));
  for (const name of NAMES) {
    if (!bound.has(name)) problems.push(`${name} (a variable of src/worker/variables.js) is not bound: add (name = "${name}", fromEnvironment = "${name}")`);
  }
  for (const [name, from] of bound) {
    if (!NAMES.includes(name)) problems.push(`${name} is bound from the environment but is no variable of src/worker/variables.js`);
    else if (from !== name) problems.push(`${name} must be bound from the environment variable of the same name, not ${from}`);
  }
  for (const name of Object.keys(wrangler.vars ?? {})) {
    if (!NAMES.includes(name)) problems.push(`wrangler.toml [vars] sets ${name}, which the worker does not read (src/worker/variables.js; README "Configuration")`);
  }
  return problems;
}

/** wrangler.toml as `wrangler deploy` reads it. */
export async function readWrangler() {
  // Importing wrangler installs SIGINT and SIGTERM handlers that exit this process at
  // once, which would leave workerd running without its parent: they are removed, and
  // main() forwards the signals to workerd instead.
  const before = new Set([...process.listeners('SIGINT'), ...process.listeners('SIGTERM')]);
  const { unstable_readConfig } = await import('wrangler');
  for (const signal of ['SIGINT', 'SIGTERM']) {
    for (const listener of process.listeners(signal)) if (!before.has(listener)) process.removeListener(signal, listener);
  }
  return unstable_readConfig({ config: path.join(ROOT, 'wrangler.toml') });
}

/**
 * Checks selfhost/workerd.capnp against wrangler.toml and the worker's variables, makes
 * the bundle in `bundleDir` (`wrangler deploy --dry-run`) and writes there bundle.capnp,
 * the module list the config imports. Returns `{modules, vars}` (vars: wrangler.toml
 * [vars], only what it sets). Throws on a disagreement, naming each.
 */
export async function prepare(bundleDir) {
  const wrangler = await readWrangler();
  const problems = configProblems(fs.readFileSync(CONFIG, 'utf8'), wrangler);
  if (problems.length) throw new Error(`selfhost/workerd.capnp does not match wrangler.toml and src/worker/variables.js:\n  ${problems.join('\n  ')}`);
  const { modules } = await bundle(bundleDir);
  // `embed` reads each file relative to bundle.capnp; names are as index.js imports them.
  const lines = modules.map((m) => `  (name = ${JSON.stringify(m.name)}, ${m.type} = embed ${JSON.stringify(m.name)}),`);
  const capnp = ['# Written by scripts/serve-workerd.mjs from the dry run beside it.', '@0xc4a1f7e25b3d9e61;', 'using Workerd = import "/workerd/workerd.capnp";', 'const modules :List(Workerd.Worker.Module) = [', ...lines, '];', ''];
  fs.writeFileSync(path.join(bundleDir, 'bundle.capnp'), capnp.join('\n'));
  return { modules, vars: wrangler.vars ?? {} };
}

/** serve:workerd's words for a missing INGEST_TOKEN. */
const NO_TOKEN = 'INGEST_TOKEN is not set. Set it in the environment to the token network servers will present (a long random string, e.g. from `openssl rand -hex 32`, kept in a file only the service reads): INGEST_TOKEN=… npm run serve:workerd. .dev.vars (npm start\'s local dev-token) is not read.';

/**
 * workerd's environment: each variable of the worker (src/worker/variables.js, secrets
 * included) as `from` sets it, else as `vars` (wrangler.toml [vars]) gives it, as text;
 * one neither sets is left out (the worker takes its default), and so is every other
 * name of `from`. `overridden`: the names, secrets aside, whose value `from` set.
 * Throws `noToken` (what to say, naming where the caller reads it) when INGEST_TOKEN
 * is not set: every /v1 route would answer 503.
 */
export function workerdEnv(vars, from = process.env, noToken = NO_TOKEN) {
  if (!from.INGEST_TOKEN?.trim()) throw new Error(noToken);
  const env = {};
  const overridden = [];
  for (const name of NAMES) {
    if (from[name] !== undefined && !SECRETS.includes(name)) overridden.push(name);
    const value = from[name] ?? vars[name];
    if (value !== undefined) env[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return { env, overridden };
}

/** The data directory's lock: the Unix socket workerd listens on there (selfhost/workerd.capnp, socket "lock"). */
const LOCK = 'workerd.sock';
/** The longest Unix socket path: sun_path holds 104 bytes on macOS and the BSDs, 108 on Linux, its closing NUL included. */
const SOCKET_PATH_BYTES = 103;

/**
 * How this process and the workerd it starts (in the same working directory, `cwd`)
 * name `dataDir`'s lock socket: its absolute path, or the path relative to `cwd` when
 * only that one fits in a socket address (a checkout deep in a home directory: npm
 * start's data is inside it, and npm runs scripts from its root). Throws when neither
 * fits.
 */
export function lockPath(dataDir, cwd = process.cwd()) {
  const absolute = path.resolve(cwd, dataDir, LOCK);
  const relative = `./${path.relative(cwd, absolute)}`;
  for (const p of [absolute, relative]) if (Buffer.byteLength(p) <= SOCKET_PATH_BYTES) return p;
  throw new Error(`${dataDir}: its lock socket ${absolute} is ${Buffer.byteLength(absolute)} bytes long (${Buffer.byteLength(relative)} from the current directory), a Unix socket path at most ${SOCKET_PATH_BYTES}: use a data directory with a shorter path`);
}

/**
 * The path of `dataDir`'s lock socket (lockPath), free for a new workerd to listen on.
 * Throws when something answers there (a workerd serving the directory, also one
 * whose parent was killed), or when the path is too long for a socket. Removes the
 * socket file a stopped workerd left (it refuses connections). Two starting at once
 * both pass only if one stalls between its probe and that removal for as long as the
 * other takes to start workerd: workerd does not replace a socket file, so otherwise
 * the second one's listen fails. Also called before the slow steps of a start (the
 * dry run), to refuse early.
 */
export async function claimData(dataDir) {
  const lock = lockPath(dataDir);
  const answered = await new Promise((resolve, reject) => {
    const probe = net.connect(lock);
    probe.on('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.on('error', (e) => (e.code === 'ENOENT' || e.code === 'ECONNREFUSED' ? resolve(false) : reject(e)));
  });
  if (answered) {
    throw new Error(`${dataDir} is in use: another workerd serves it (it listens on ${path.join(dataDir, LOCK)}). Stop that one first: two on one data directory each keep their own seen-set, and admit the same replay twice.`);
  }
  fs.rmSync(lock, { force: true });
  return lock;
}

/**
 * Starts workerd with selfhost/workerd.capnp on the bundle in `bundleDir`, its objects
 * in `dataDir` (created; refused when another workerd serves it, see claimData),
 * listening on `listen` (port 0: any free one), with exactly `env` as its environment.
 * Resolves to `{child, port, exited, stop}`: `port` resolves once workerd listens (from
 * its --control-fd messages), `exited` to `{code, signal}`; `stop()` sends SIGTERM and
 * waits for the exit. `stdio`: workerd's stdout and stderr ("inherit", or "pipe" to
 * read them from `child`).
 */
export async function startWorkerd({ bundleDir, dataDir, listen, env, stdio = 'inherit' }) {
  fs.mkdirSync(dataDir, { recursive: true });
  const lock = await claimData(dataDir);
  // The paths absolute (but the lock's, see lockPath): workerd runs in this directory.
  const args = ['serve', '-I', path.resolve(bundleDir), CONFIG, `--socket-addr=http=${listen}`, `--socket-addr=lock=unix:${lock}`, `--directory-path=data=${path.resolve(dataDir)}`, `--directory-path=www=${path.join(ROOT, 'www')}`, '--control-fd=3'];
  const child = spawn(workerd.default, args, { env, stdio: ['ignore', stdio, stdio, 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = new Promise((resolve, reject) => {
    readline.createInterface(child.stdio[3]).on('line', (line) => {
      const m = JSON.parse(line);
      if (m.event === 'listen' && m.socket === 'http') resolve(m.port);
    });
    exited.then(({ code, signal }) => reject(new Error(`workerd exited (${signal ?? `code ${code}`}) before listening`)));
  });
  const stop = () => {
    child.kill('SIGTERM');
    return exited;
  };
  return { child, port, exited, stop };
}

/** Whether pkg/ is missing or older than the Rust it is built from. */
function needsBuild() {
  const wasm = path.join(ROOT, 'pkg/reconnect_dedupe_bg.wasm');
  if (!fs.existsSync(wasm)) return true;
  const built = fs.statSync(wasm).mtimeMs;
  const sources = ['Cargo.toml', 'Cargo.lock', ...fs.readdirSync(path.join(ROOT, 'src'), { recursive: true }).filter((f) => f.endsWith('.rs')).map((f) => path.join('src', f))];
  return sources.some((f) => fs.statSync(path.join(ROOT, f)).mtimeMs > built);
}

async function main() {
  const say = (line) => console.log(`serve:workerd: ${line}`);
  let values;
  let w;
  try {
    ({ values } = parseArgs({ options: { listen: { type: 'string', default: '127.0.0.1:8788' }, data: { type: 'string', default: path.join(ROOT, '.selfhost/data') } } }));
    // workerd reads a bare number as an IPv4 address ("8799" is 0.0.34.95, port 80).
    if (!/^.+:[0-9]+$/.test(values.listen)) {
      throw new Error(`--listen ${values.listen}: give an address and a port, as 127.0.0.1:8788 (this machine only) or 0.0.0.0:8788 (every interface)`);
    }
    // This process's INGEST_TOKEN, checked before anything is built: the commonest mistake.
    workerdEnv({});
    if (needsBuild()) {
      say('pkg/ is missing or older than the Rust sources: npm run build');
      if (spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) process.exit(1);
    }
    const bundleDir = path.join(ROOT, '.selfhost/bundle');
    const { modules, vars } = await prepare(bundleDir);
    const made = workerdEnv(vars);
    say(`bundle: ${modules.map((m) => m.name).join(', ')} (wrangler deploy --dry-run, in ${path.relative(ROOT, bundleDir)}/)`);
    say(`data: ${path.resolve(values.data)}`);
    say(`vars: wrangler.toml [vars]${made.overridden.length ? `; from the environment: ${made.overridden.join(', ')}` : ''}`);
    w = await startWorkerd({ bundleDir, dataDir: values.data, listen: values.listen, env: made.env });
  } catch (e) {
    console.error(`serve:workerd: ${e.message}`);
    process.exit(1);
  }
  await runInForeground(w, {
    listening: (port) => say(`listening on http://${values.listen.replace(/:[0-9]+$/, '')}:${port} (Ctrl-C stops)`),
    failed: (e) => console.error(`serve:workerd: ${e.message}; why is in its message above`),
  });
}

/**
 * Runs the started workerd `w` (startWorkerd) in the foreground of this process: SIGINT
 * and SIGTERM go on to it; `listening(port)` once it listens, or `failed(error)` when it
 * exits before; then this process exits as workerd did (0 when a signal stopped it).
 * `npm start` (start.mjs) and `npm run serve:workerd` end so.
 */
export async function runInForeground(w, { listening, failed }) {
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => w.child.kill(signal));
  w.port.then(listening, failed);
  const { code, signal } = await w.exited;
  await w.port.catch(() => {}); // its line is printed first
  process.exit(code ?? (signal === 'SIGINT' || signal === 'SIGTERM' ? 0 : 1));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
