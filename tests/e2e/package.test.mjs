// The library as an npm user gets it: pkg/ (`npm run build`, then scripts/lib-pkg.mjs)
// packed by `npm pack`, installed offline into a fresh project in a temporary
// directory, and used there by its name. The package README's examples run as written
// (each is a whole file whose first line names it): in Node, in Chromium bundled by
// esbuild and without a bundler, and in workerd bundled by wrangler; what they print
// must be what the README says they print; so must the Errors example in Node. tsc
// checks the declarations from the project, the key vectors go through the installed
// package in Node, and the README's error codes are the core's.
// Tools come from this repository's node_modules (the fresh project cannot install
// them offline); each resolves `reconnect-dedupe` from the fresh project.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';
import { wwwHandler } from '../../scripts/serve-www.mjs';
import { closeAll, launchChromium, listen, WAIT, watch } from '../support/browser.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = (p) => path.join(root, 'node_modules', p);
const vectors = JSON.parse(fs.readFileSync(path.join(root, 'tests/vectors/keys.json'))).vectors;
const rejections = JSON.parse(fs.readFileSync(path.join(root, 'tests/vectors/rejections.json'))).cases;
const SEED_KEY = vectors.find((v) => v.name === 'seed-example').key; // the README's reading

// npm, as `npm test` runs this file, hands its own settings down in npm_* variables
// (npm_config_local_prefix is this repository): the fresh project must see none.
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
const exec = promisify(execFile);
/** Runs `file args` in `cwd`; resolves with its stdout, rejects with its stderr. */
async function run(file, args, cwd, env = {}) {
  try {
    return (await exec(file, args, { cwd, env: { ...cleanEnv, ...env }, maxBuffer: 16 << 20 })).stdout;
  } catch (e) {
    throw new Error(`${file} ${args.join(' ')} (in ${cwd}) failed:\n${e.stderr || e.message}`);
  }
}
const lines = (text) => text.trimEnd().split('\n');

/** The README's example files: each fenced block whose first line names a file. */
function examples(readme) {
  const files = {};
  for (const [, body] of readme.matchAll(/```[a-z]+\n([\s\S]*?)```/g)) {
    const name = body.match(/^(?:\/\/|<!--)\s*([\w/.-]+\.[a-z]+)/)?.[1];
    if (name) files[name] = body;
  }
  return files;
}
/** What an example says it prints: the comment after each `console.log(...);`. */
const documented = (example) => [...example.matchAll(/console\.log\(.*\);\s*\/\/ (.*)$/gm)].map((m) => m[1]);

let tmp; // the temporary directory: the tarball and app/, the fresh project
let app;
let packed; // `npm pack --json`'s description of the tarball
let readme; // the installed package's README.md
before(async () => {
  assert.ok(fs.existsSync(path.join(root, 'pkg/reconnect_dedupe_bg.wasm')), 'pkg/ is missing: run `npm run build` first');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reconnect-dedupe-package-'));
  [packed] = JSON.parse(await run('npm', ['pack', path.join(root, 'pkg'), '--pack-destination', tmp, '--json'], tmp));
  app = path.join(tmp, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(tmp, packed.filename)], app);
  readme = fs.readFileSync(path.join(app, 'node_modules/reconnect-dedupe/README.md'), 'utf8');
  for (const [name, body] of Object.entries(examples(readme))) {
    fs.mkdirSync(path.dirname(path.join(app, name)), { recursive: true });
    fs.writeFileSync(path.join(app, name), body);
  }
});
after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

test('the tarball holds the package files and nothing else, at the version of Cargo.toml', async () => {
  assert.deepEqual(packed.files.map((f) => f.path).sort(), [
    'CHANGELOG.md',
    'LICENSE',
    'README.md',
    'node.js',
    'package.json',
    'reconnect_dedupe.d.ts',
    'reconnect_dedupe.js',
    'reconnect_dedupe_bg.wasm',
  ]);
  const metadata = JSON.parse(await run('cargo', ['metadata', '--no-deps', '--offline', '--format-version', '1'], root));
  const crate = metadata.packages.find((p) => p.name === 'reconnect-dedupe');
  const installed = JSON.parse(fs.readFileSync(path.join(app, 'node_modules/reconnect-dedupe/package.json')));
  assert.equal(packed.name, 'reconnect-dedupe');
  assert.equal(installed.version, crate.version);
  assert.equal(installed.license, crate.license);
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'scripts']) {
    assert.equal(installed[field], undefined, `the published package has no ${field}`);
  }
  assert.equal(readme, fs.readFileSync(path.join(root, 'lib/README.md'), 'utf8'), 'the README is the library\'s');
  const changelog = fs.readFileSync(path.join(app, 'node_modules/reconnect-dedupe/CHANGELOG.md'), 'utf8');
  assert.equal(changelog, fs.readFileSync(path.join(root, 'CHANGELOG.md'), 'utf8'), 'the version history is the repository\'s');
  // Its release's section: the version's own heading (until a release renames
  // "Unreleased", the version is the last release's).
  assert.ok(changelog.split('\n').includes(`## ${crate.version}`), `CHANGELOG.md has a "## ${crate.version}" section`);
  assert.deepEqual(Object.keys(examples(readme)).sort(), ['dedupe.mjs', 'index.html', 'page.js', 'src/index.js']);
});

test('the README lists every error code of the core (src/dedupe/error.rs)', () => {
  const source = fs.readFileSync(path.join(root, 'src/dedupe/error.rs'), 'utf8');
  const body = source.slice(source.indexOf('pub fn code(&self)'), source.indexOf('pub fn field(&self)'));
  const codes = [...body.matchAll(/=>\s*\{?\s*"([a-z_]+)"/g)].map((m) => m[1]);
  const listed = readme.match(/^Codes: ([\s\S]*?)\.$/m)[1].match(/`[a-z_]+`/g).map((c) => c.slice(1, -1));
  assert.deepEqual([...listed].sort(), [...new Set(codes)].sort());
  // And the codes of the instance guard the glue carries (lib/instance-guard.js).
  const guard = fs.readFileSync(path.join(root, 'lib/instance-guard.js'), 'utf8');
  const misuse = [...new Set([...guard.matchAll(/coded\('([a-z_]+)'/g)].map((m) => m[1]))].sort();
  assert.deepEqual(misuse, ['instance_busy', 'instance_freed', 'instance_stale']);
  const said = readme.match(/^Misusing an instance throws ([\s\S]*?)\.$/m)[1].match(/`[a-z_]+`/g).map((c) => c.slice(1, -1));
  assert.deepEqual([...new Set(said)].sort(), misuse);
});

test("Node: the README's example, importing the package by name, prints what the README says", async () => {
  const example = examples(readme)['dedupe.mjs'];
  assert.deepEqual(documented(example), [SEED_KEY, '1 unique, 1 duplicate']);
  assert.deepEqual(lines(await run(process.execPath, ['dedupe.mjs'], app)), documented(example));
  const resolved = await run(process.execPath, ['--input-type=module', '-e', "console.log(import.meta.resolve('reconnect-dedupe'))"], app);
  assert.equal(resolved.trim(), `file://${path.join(app, 'node_modules/reconnect-dedupe/node.js')}`);
});

test('Node: every key vector and rejection vector through the installed package', async () => {
  const script = `
    import init, { Deduplicator, idempotencyKey } from "reconnect-dedupe";
    await init(); // instantiated on import already: returns at once, fetches nothing
    const vectors = ${JSON.stringify(vectors)};
    const rejections = ${JSON.stringify(rejections)};
    const codeOf = (reading) => { try { idempotencyKey(reading); } catch (e) { return e instanceof Error && e.code; } };
    const out = new Deduplicator().processBurst(vectors.map((v) => v.reading), Date.parse("2026-07-16T09:00:11.204Z"));
    console.log(JSON.stringify({
      keys: vectors.map((v) => idempotencyKey(v.reading)),
      codes: rejections.map((c) => codeOf(c.reading)),
      unique: out.unique.map((u) => u.key),
      audit: out.audit,
    }));`;
  const got = JSON.parse(await run(process.execPath, ['--input-type=module', '-e', script], app));
  const keys = vectors.map((v) => v.key);
  assert.deepEqual(got.keys, keys);
  assert.deepEqual(got.codes, rejections.map((c) => c.code));
  // First write wins: each key once, in arrival order.
  assert.deepEqual(got.unique, [...new Set(keys)]);
  assert.deepEqual(got.audit, {
    logged_at: '2026-07-16T09:00:11.204000+00:00',
    level: 'INFO',
    event: 'burst_deduplicated',
    // seq_reuses: distinct keys whose device:seq an earlier key holds (most vectors vary
    // the content of bin-A17 seq 41).
    payload: { received: 48, unique: 38, duplicates_suppressed: 10, rejected: 0, seq_reuses: 26, evicted_before_ttl: 0 },
  });
  const deviceSeq = (key) => key.slice(0, key.lastIndexOf(':'));
  assert.equal(got.unique.filter((k, i) => got.unique.slice(0, i).some((h) => deviceSeq(h) === deviceSeq(k))).length, 26);
});

test("Node: the README's error example, run as written, gives the code and message its comments say", async () => {
  const block = readme.match(/^## Errors\n[\s\S]*?```js\n([\s\S]*?)```/m)?.[1];
  assert.ok(block, 'the README has an Errors example');
  const said = [...block.matchAll(/^(\s*)(e\.\w+);\s*\/\/ (".*")$/gm)];
  assert.deepEqual(said.map((m) => m[2]), ['e.code', 'e.message']);
  // Each `e.member; // "value"` line prints the member instead.
  const script = `import { idempotencyKey } from "reconnect-dedupe";\n${block.replace(/^(\s*)(e\.\w+);/gm, '$1console.log(JSON.stringify($2));')}`;
  const printed = lines(await run(process.execPath, ['--input-type=module', '-e', script], app));
  assert.deepEqual(printed, said.map((m) => m[3]));
});

test('Node: bundled for Node (which the README advises against), the Node entry says why it cannot start', async () => {
  // esbuild --platform=node resolves the `node` condition and inlines lib/node.js, whose
  // .wasm is then not beside the bundle (format esm) or has no import.meta.url (cjs).
  for (const [format, out] of [['esm', 'node-bundle/esm.mjs'], ['cjs', 'node-bundle/cjs.cjs']]) {
    await run(bin('.bin/esbuild'), ['dedupe.mjs', '--bundle', '--platform=node', `--format=${format}`, `--outfile=${out}`, '--log-level=error'], app);
    const failed = await run(process.execPath, [out], app).then(() => null, (e) => e.message);
    assert.ok(failed, `${format}: the bundle ran`);
    assert.match(failed, /Error: reconnect-dedupe: cannot read reconnect_dedupe_bg\.wasm beside its Node entry \(.+\); a bundle for Node must leave reconnect-dedupe external/, format);
  }
});

test('Node: require() of the package, where Node loads ES modules with require()', { skip: !process.features.require_module && `Node ${process.version} cannot require() an ES module` }, async () => {
  const script = "const { idempotencyKey } = require('reconnect-dedupe'); console.log(require.resolve('reconnect-dedupe')); " +
    "console.log(idempotencyKey({ device_id: 'bin-A17', seq: 41, ts: '2026-07-16T09:00:00Z', fill_pct: 62.5 }));";
  const out = await run(process.execPath, ['--input-type=commonjs', '-e', script], app);
  assert.deepEqual(lines(out), [path.join(app, 'node_modules/reconnect-dedupe/node.js'), SEED_KEY]);
});

test('TypeScript: the declarations, from the fresh project, with module nodenext and with bundler resolution', async () => {
  fs.writeFileSync(path.join(app, 'usage.ts'), `
    import init, { initSync, Deduplicator, idempotencyKey } from "reconnect-dedupe";
    import type { BurstOutcome, Reading } from "reconnect-dedupe";
    import wasm from "reconnect-dedupe/reconnect_dedupe_bg.wasm";
    await init();
    initSync({ module: wasm });
    const reading: Reading = { device_id: "bin-A17", seq: 41, ts: "2026-07-16T09:00:00Z", fill_pct: 62.5 };
    export const key: string = idempotencyKey(reading);
    const out: BurstOutcome = new Deduplicator({ ttlMs: 60_000 }).processBurst([reading, reading], Date.now());
    export const suppressed: number = out.duplicates_suppressed;
    // @ts-expect-error fill_pct is a number
    idempotencyKey({ ...reading, fill_pct: "62.5" });
    // @ts-expect-error no such option
    new Deduplicator({ ttl: 60_000 });
  `);
  // The README's declaration of a Worker's .wasm import (what `wrangler types` writes).
  const declaration = readme.match(/```ts\n(declare module "\*\.wasm".*)\n```/);
  assert.ok(declaration, 'the README declares the .wasm import for TypeScript');
  fs.writeFileSync(path.join(app, 'wasm.d.ts'), `${declaration[1]}\n`);
  const options = { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', lib: ['es2022', 'esnext.disposable', 'dom'], types: [] };
  const configs = {
    'tsconfig.nodenext.json': { ...options, module: 'nodenext', moduleResolution: 'nodenext' },
    'tsconfig.bundler.json': { ...options, module: 'esnext', moduleResolution: 'bundler' },
  };
  await Promise.all(Object.entries(configs).map(([name, compilerOptions]) => {
    fs.writeFileSync(path.join(app, name), JSON.stringify({ compilerOptions, files: ['usage.ts', 'wasm.d.ts'] }));
    return run(process.execPath, [bin('typescript/bin/tsc'), '-p', name], app);
  }));
});

test("browsers: the README's pages, bundled by esbuild and without a bundler, print what the README says", async () => {
  // The README's command, run as written by this repository's esbuild, in the project.
  const command = readme.match(/^npx esbuild (.*)$/m);
  assert.ok(command, 'the README has an esbuild command');
  await run(bin('.bin/esbuild'), [...command[1].split(' '), '--metafile=meta.json', '--log-level=warning'], app);
  const { inputs } = JSON.parse(fs.readFileSync(path.join(app, 'meta.json')));
  assert.deepEqual(Object.keys(inputs).sort(), [
    'node_modules/reconnect-dedupe/reconnect_dedupe.js', // the browser condition: the web glue, not node.js
    'node_modules/reconnect-dedupe/reconnect_dedupe_bg.wasm',
    'page.js',
  ]);
  fs.writeFileSync(path.join(app, 'bundled.html'), '<!doctype html>\n<script type="module" src="dist/page.js"></script>\n');

  // The project's files; no icon (Chromium asks for one the README's page does not name).
  const files = wwwHandler(`${app}${path.sep}`);
  const server = http.createServer((req, res) => (req.url === '/favicon.ico' ? res.writeHead(204).end() : files(req, res)));
  let browser;
  try {
    const base = await listen(server);
    browser = await launchChromium();
    const pages = {
      'bundled.html': { example: examples(readme)['page.js'], wasm: new RegExp(`^${base}dist/reconnect_dedupe_bg-\\w+\\.wasm$`) },
      'index.html': { example: examples(readme)['index.html'], wasm: new RegExp(`^${base}node_modules/reconnect-dedupe/reconnect_dedupe_bg\\.wasm$`) },
    };
    for (const [file, { example, wasm }] of Object.entries(pages)) {
      const page = await browser.newPage();
      const problems = watch(page, base);
      const printed = [];
      const wasmLoads = [];
      page.on('console', (m) => m.type() === 'log' && printed.push(m.text()));
      page.on('request', (r) => r.url().endsWith('.wasm') && wasmLoads.push(r.url()));
      const done = page.waitForEvent('console', { predicate: (m) => m.text().endsWith(' duplicate'), ...WAIT });
      await page.goto(`${base}${file}`);
      await done;
      assert.deepEqual(documented(example), [SEED_KEY, '1 unique, 1 duplicate'], file);
      assert.deepEqual(printed, documented(example), file);
      assert.equal(wasmLoads.length, 1, `${file} fetches the module once: ${wasmLoads}`);
      assert.match(wasmLoads[0], wasm);
      assert.deepEqual(problems, [], file);
      await page.close();
    }
  } finally {
    await closeAll(browser, server);
  }
});

test("Cloudflare Workers: the README's worker, bundled by wrangler, runs in workerd", async () => {
  fs.writeFileSync(path.join(app, 'wrangler.toml'), 'name = "app"\nmain = "src/index.js"\ncompatibility_date = "2026-04-01"\n');
  // No banner: it is what asks the registry for a newer wrangler. Logs stay in tmp.
  await run(process.execPath, [bin('wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', 'dist-worker'], app, {
    WRANGLER_HIDE_BANNER: 'true',
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_LOG_PATH: path.join(tmp, 'wrangler-logs'),
  });
  const mf = new Miniflare({
    modules: true,
    scriptPath: path.join(app, 'dist-worker/index.js'),
    modulesRoot: path.join(app, 'dist-worker'),
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: '2026-04-01',
  });
  try {
    const reading = { device_id: 'bin-A17', seq: 41, ts: '2026-07-16T09:00:00Z', fill_pct: 62.5 };
    const post = (body) => mf.dispatchFetch('http://worker/', { method: 'POST', body });
    const first = await post(JSON.stringify([reading, reading]));
    assert.equal(first.status, 200);
    const out = await first.json();
    assert.deepEqual([out.unique.map((u) => u.key), out.duplicates_suppressed], [[SEED_KEY], 1]);
    // The isolate's Deduplicator still holds the key.
    const again = await (await post(JSON.stringify({ readings: [reading] }))).json();
    assert.deepEqual([again.unique, again.duplicates_suppressed], [[], 1]);
    // A thrown Error's code, as the example answers it.
    const bad = await post('{');
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error, 'invalid_json');
  } finally {
    await mf.dispose();
  }
});
