// `npm start`: the worker on this machine for trying it and for development, on
// workerd exactly as `npm run serve:workerd` runs it (the dry run's bundle,
// selfhost/workerd.capnp, the demo page from www/), with local defaults:
//
//   - listening on http://127.0.0.1:$PORT (PORT: 8787 unless set);
//   - the values: wrangler.toml [vars], then .dev.vars (made from .dev.vars.example,
//     INGEST_TOKEN=dev-token, on the first start), then the environment, each over the
//     one before, for the names the worker reads (src/worker/variables.js, the secrets
//     included); a variable none of them sets takes the worker's default;
//   - the Durable Objects in .wrangler/state/v3/do, where `wrangler dev` (`npm run dev`,
//     and `npm start` before this release) keeps them: same directories, same object
//     ids (selfhost/workerd.capnp's uniqueKeys are wrangler's), so that data is read
//     as it is. Not both at once: the lock socket keeps a second workerd out, but
//     wrangler dev does not look for it.
//
//   [PORT=8787] npm start [-- --data <dir>] [-- --dev-vars <file>]
//
// The lines it prints name the values taken from .dev.vars and from the environment
// (wrangler dev reads no environment: an INGEST_TOKEN exported for serve:workerd is
// used here, and said so). .dev.vars is read with Node's util.parseEnv: KEY=value
// lines, # comments, quoted values (wrangler reads it with dotenv; they differ only at
// the edges, e.g. dotenv also takes `KEY: value`).
//
// It does not reload on edits: an edit to src/ takes effect at the next start;
// `npm run dev` (wrangler dev) rebuilds and reloads the worker on every save.
// Foreground; Ctrl-C (SIGINT) or SIGTERM stops workerd.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, parseEnv } from 'node:util';
import { NAMES, SECRETS } from '../src/worker/variables.js';
import { claimData, prepare, runInForeground, startWorkerd, workerdEnv } from './serve-workerd.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Where `wrangler dev` keeps the Durable Objects by default: its state directory (.wrangler/state beside wrangler.toml), then v3/do (Miniflare's). */
export const DATA = path.join(ROOT, '.wrangler/state/v3/do');
/** npm start's .dev.vars, made from .dev.vars.example on the first start. */
export const DEV_VARS = path.join(ROOT, '.dev.vars');

/**
 * What `npm start` gives workerd: `vars` (wrangler.toml [vars]) with `devVars` (the
 * text of .dev.vars) and then `environment` over them, for the worker's variables
 * (src/worker/variables.js). Returns `{env, fromFile, fromEnvironment, ignored}`:
 * workerd's environment (workerdEnv), the names whose value came from .dev.vars and
 * from the environment, and the names .dev.vars sets that the worker does not read (a
 * misspelling, a wrangler-only name). Throws when no INGEST_TOKEN results, naming where
 * to set it.
 */
export function startEnv(vars, devVars, environment) {
  const known = new Set(NAMES);
  const file = parseEnv(devVars);
  const ignored = Object.keys(file).filter((name) => !known.has(name));
  const fromEnvironment = [...known].filter((name) => environment[name] !== undefined);
  const fromFile = Object.keys(file).filter((name) => known.has(name) && environment[name] === undefined);
  const values = {};
  for (const name of known) {
    const value = environment[name] ?? file[name];
    if (value !== undefined) values[name] = value;
  }
  const noToken = 'INGEST_TOKEN is empty: set it in .dev.vars (INGEST_TOKEN=… ; .dev.vars.example has dev-token) or in the environment';
  return { env: workerdEnv(vars, values, noToken).env, fromFile, fromEnvironment, ignored };
}

/** The port of PORT (8787 when unset): a whole number 1–65535, else throws. */
export function portOf(value = '8787') {
  if (!/^[0-9]{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
    throw new Error(`PORT=${value}: give a port number from 1 to 65535 (PORT=8787 npm start)`);
  }
  return Number(value);
}

async function main() {
  const say = (line) => console.log(`npm start: ${line}`);
  let w;
  let url;
  // Its own bundle directory, so that two starts (on two data directories) do not empty
  // each other's; removed at exit, workerd having read it at its start.
  const bundleDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rd-start-'));
  process.on('exit', () => fs.rmSync(bundleDir, { recursive: true, force: true }));
  try {
    const { values } = parseArgs({ options: { data: { type: 'string', default: DATA }, 'dev-vars': { type: 'string', default: DEV_VARS } } });
    const port = portOf(process.env.PORT);
    const devVars = path.resolve(values['dev-vars']);
    const shown = devVars.startsWith(ROOT) ? path.relative(ROOT, devVars) : devVars;
    if (!fs.existsSync(devVars)) {
      if (devVars !== DEV_VARS) throw new Error(`--dev-vars ${values['dev-vars']}: no such file`);
      fs.copyFileSync(path.join(ROOT, '.dev.vars.example'), devVars);
      say(`${shown}: made from .dev.vars.example (INGEST_TOKEN=dev-token); set your own token there`);
    }
    // Refused now rather than after the dry run when another workerd serves the data.
    await claimData(values.data);
    const { modules, vars } = await prepare(bundleDir);
    const made = startEnv(vars, fs.readFileSync(devVars, 'utf8'), process.env);
    say(`bundle: ${modules.map((m) => m.name).join(', ')} (wrangler deploy --dry-run)`);
    say(`data: ${path.resolve(values.data)}`);
    say(`vars: wrangler.toml [vars]; from ${shown}: ${made.fromFile.join(', ') || 'none'}; from the environment: ${made.fromEnvironment.join(', ') || 'none'}`);
    if (made.fromEnvironment.includes('INGEST_TOKEN')) say(`INGEST_TOKEN is this shell's (exported), not ${shown}'s: clients must present that one`);
    if (made.ignored.length) say(`${shown} sets ${made.ignored.join(', ')}, which the worker does not read (README "Configuration" lists what it reads, the secrets ${SECRETS.join(', ')} among them): ignored`);
    url = `http://127.0.0.1:${port}`;
    w = await startWorkerd({ bundleDir, dataDir: values.data, listen: `127.0.0.1:${port}`, env: made.env });
  } catch (e) {
    console.error(`npm start: ${e.message}`);
    process.exit(1);
  }
  await runInForeground(w, {
    listening: () => say(`listening on ${url}: the demo page at ${url}/, the API at ${url}/v1/ (Ctrl-C stops)`),
    failed: (e) => console.error(`npm start: ${e.message}; why is in its message above (is port ${new URL(url).port} taken? PORT=… npm start)`),
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
