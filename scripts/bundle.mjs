// The worker exactly as `wrangler deploy` would upload it, made without an account or
// a network: `wrangler deploy --dry-run --outdir <dir>`. The self-hosted worker
// (serve-workerd.mjs) runs these files, and their sizes are checked against the budget
// in docs/benchmarks.md ("Bundle size"). `npm run deploy:check` prints them.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const WRANGLER = path.join(ROOT, 'node_modules/wrangler/bin/wrangler.js');
const BENCHMARKS = path.join(ROOT, 'docs/benchmarks.md');

/**
 * Runs the dry run of `config` (default: the repository's wrangler.toml) into `outDir`
 * (emptied first) and returns `{dir, modules}`: the modules wrangler would upload, main
 * module first, each `{name, type, bytes}` (type `esModule` or `wasm`). Not uploaded,
 * so left out: README.md and the source map.
 *
 * wrangler runs with no Cloudflare credentials in its environment, a fresh HOME (no
 * `wrangler login`) and TMPDIR, no banner and no metrics, and every proxy variable set
 * to a local port that counts connections and closes them: a dry run that tried to
 * reach Cloudflare's API would fail and be seen. So is wrangler's check for a newer
 * version of itself, which a config warning sets off (a field it does not know): it
 * asks the npm registry over node's https, which ignores the proxy variables, so the
 * registry is that port too (`npm_registry`, read by its registry-url), and its
 * day-long cache in TMPDIR starts empty. Throws with wrangler's output when it fails
 * or connects.
 */
export async function bundle(outDir, { config = path.join(ROOT, 'wrangler.toml') } = {}) {
  fs.rmSync(outDir, { recursive: true, force: true });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'rd-wrangler-home-'));
  let connections = 0;
  const trap = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise((resolve) => trap.listen(0, '127.0.0.1', resolve));
  const proxy = `http://127.0.0.1:${trap.address().port}`;
  fs.mkdirSync(path.join(home, 'tmp'));
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    TMPDIR: path.join(home, 'tmp'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    WRANGLER_HIDE_BANNER: 'true',
    WRANGLER_SEND_METRICS: 'false',
    npm_registry: `${proxy}/`,
  };
  try {
    // Asynchronous, so that this process's trap can accept while wrangler runs.
    const { code, output } = await run(process.execPath, [WRANGLER, 'deploy', '--dry-run', '--outdir', outDir, '--config', config], { cwd: ROOT, env });
    if (code !== 0) throw new Error(`wrangler deploy --dry-run failed (exit ${code}):\n${output}`);
    if (connections) throw new Error(`wrangler deploy --dry-run opened ${connections} connection(s) through the proxy: it must need no account and no network. Its output:\n${output}`);
  } finally {
    trap.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
  const files = fs.readdirSync(outDir);
  const modules = [];
  for (const name of files.sort()) {
    const type = name.endsWith('.wasm') ? 'wasm' : name.endsWith('.js') ? 'esModule' : null;
    if (type) modules.push({ name, type, bytes: fs.readFileSync(path.join(outDir, name)) });
  }
  const main = modules.findIndex((m) => m.name === 'index.js');
  if (main < 0) throw new Error(`wrangler deploy --dry-run wrote no index.js in ${outDir} (${files.join(', ')})`);
  modules.unshift(...modules.splice(main, 1));
  return { dir: outDir, modules };
}

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/**
 * The sizes of the bundle's modules by kind, `{wasm: {raw, gzip}, js: {raw, gzip}}`,
 * and `total`: raw, and gzip of all modules at once, as wrangler reports "Total Upload"
 * (node:zlib gzip at its default level, as wrangler's getSize) and as Cloudflare's
 * Worker size limit counts it.
 */
export function sizes({ modules }) {
  const gzip = (buffers) => zlib.gzipSync(Buffer.concat(buffers)).length;
  const of = (type) => {
    const parts = modules.filter((m) => m.type === type).map((m) => m.bytes);
    return { raw: parts.reduce((n, b) => n + b.length, 0), gzip: gzip(parts) };
  };
  // In wrangler's order (getSize in printBundleSize): the other modules, then the main one.
  const all = [...modules.slice(1), modules[0]].map((m) => m.bytes);
  return { wasm: of('wasm'), js: of('esModule'), total: { raw: all.reduce((n, b) => n + b.length, 0), gzip: gzip(all) } };
}

// The rows of the budget table, by their first cell, and what they measure.
const ROWS = { Wasm: 'wasm', JS: 'js' };

/**
 * The budget, from the first table under "## Bundle size" in docs/benchmarks.md: the
 * columns "raw budget" and "gzip budget" of its rows "Wasm" and "JS", in bytes (digits,
 * grouped by spaces or not). Throws naming the file when the table is not there.
 */
export function budget(text = fs.readFileSync(BENCHMARKS, 'utf8')) {
  const fail = (what) => new Error(`docs/benchmarks.md: ${what}; the bundle budget is the first table under "## Bundle size" with columns "raw budget" and "gzip budget" and rows ${Object.keys(ROWS).join(', ')}`);
  const lines = text.split('\n');
  const start = lines.findIndex((l) => /^## Bundle size\b/.test(l));
  if (start < 0) throw fail('no "## Bundle size" section');
  const table = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,2} /.test(line)) break;
    if (line.startsWith('|')) table.push(line.split('|').slice(1, -1).map((c) => c.trim()));
    else if (table.length) break;
  }
  if (!table.length) throw fail('no table under "## Bundle size"');
  const [header, , ...rows] = table;
  const column = (name) => {
    const i = header.indexOf(name);
    if (i < 0) throw fail(`no column "${name}"`);
    return i;
  };
  const raw = column('raw budget');
  const gz = column('gzip budget');
  const bytes = (cell, row) => {
    const digits = cell.replace(/[\s\u202f\u00a0]/g, '');
    if (!/^[0-9]+$/.test(digits)) throw fail(`row ${row}: "${cell}" is not a number of bytes`);
    return Number(digits);
  };
  const out = {};
  for (const [label, kind] of Object.entries(ROWS)) {
    const row = rows.find((r) => r[0] === label);
    if (!row) throw fail(`no row "${label}"`);
    out[kind] = { raw: bytes(row[raw], label), gzip: bytes(row[gz], label) };
  }
  return out;
}

/** The lines of `measured` over `limit` (from `budget()`), e.g. "Wasm gzip 170 000 bytes > budget 168 000"; empty when within. */
export function overBudget(measured, limit) {
  const over = [];
  for (const [label, kind] of Object.entries(ROWS)) {
    for (const form of ['raw', 'gzip']) {
      const m = measured[kind][form];
      const b = limit[kind][form];
      if (m > b) over.push(`${label} ${form} ${group(m)} bytes > budget ${group(b)} (+${(((m - b) / b) * 100).toFixed(1)} %)`);
    }
  }
  return over;
}

/** A report of `measured` against `limit`, one line a row, for people. */
export function report(measured, limit) {
  const line = (label, m, b) => `${label.padEnd(6)} ${group(m.raw).padStart(9)} B raw ${group(m.gzip).padStart(9)} B gzip` + (b ? `   budget ${group(b.raw)} / ${group(b.gzip)}` : '');
  return [line('Wasm', measured.wasm, limit.wasm), line('JS', measured.js, limit.js), line('total', measured.total)].join('\n');
}

const group = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  // `npm run deploy:check`: the bundle in target/worker-bundle/, its sizes, the budget.
  const outDir = path.join(ROOT, 'target/worker-bundle');
  const b = await bundle(outDir);
  const measured = sizes(b);
  const limit = budget();
  console.log(`wrangler deploy --dry-run: ${b.modules.map((m) => m.name).join(', ')} in ${path.relative(ROOT, outDir)}/ (no account, no network)`);
  console.log(report(measured, limit));
  const over = overBudget(measured, limit);
  if (over.length) {
    console.error(`over the bundle budget in docs/benchmarks.md ("Bundle size"):\n  ${over.join('\n  ')}`);
    process.exit(1);
  }
}
