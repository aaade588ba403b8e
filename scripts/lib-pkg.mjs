// Makes pkg/ (wasm-pack's output, `npm run build`) the npm package `reconnect-dedupe`:
// pkg/package.json from lib/package.json.in, the library's README (lib/README.md)
// instead of the repository's, which wasm-pack copies, the repository's CHANGELOG.md,
// the Node entry (lib/node.js), and the glue and its declarations without
// wasm-bindgen's internal names (`start`, `__wbg_reset_state`: below) and with the
// instance guard. `npm run pack:lib` packs the result; tests/e2e/package.test.mjs
// installs the packed tarball into a fresh project and uses it from Node, tsc,
// a browser page bundled by esbuild and a Worker bundled by wrangler.
//
// Why the manifest is what it is:
// * version, description, license: Cargo.toml's, the one source (wasm-pack writes
//   them too, but this file replaces its manifest).
// * repository, homepage, bugs: from Cargo.toml's `repository` (and `homepage`), set
//   by whoever publishes (lib/README.md "Publishing"). The project has no public
//   repository yet, so Cargo.toml names none and the manifest has none: a URL made up
//   here would be a 404 on the package's npm page.
// * exports ".": one set of declarations for every condition, because every entry
//   exports the same API. workerd, worker and browser get wasm-bindgen's web glue
//   (`init()` / `initSync()`), and are listed before node so that a toolchain that
//   sets both (a Worker build with Node compatibility) still gets it; node gets
//   lib/node.js, which instantiates on import; anything else the web glue.
// * "./reconnect_dedupe_bg.wasm": a Worker imports the module itself
//   (`import wasm from "reconnect-dedupe/reconnect_dedupe_bg.wasm"`), and a bundler
//   that cannot follow the glue's `new URL(..., import.meta.url)` (esbuild) copies it
//   with its `file` loader.
// * files: the glue, its declarations, the .wasm, the Node entry and CHANGELOG.md (npm
//   adds package.json, README.md and LICENSE). Not reconnect_dedupe_bg.wasm.d.ts: it
//   declares the raw Wasm exports, which no user imports (a Worker's
//   `import wasm from "….wasm"` is a WebAssembly.Module, declared by
//   @cloudflare/workers-types).
// * sideEffects: only lib/node.js runs code on import (instantiation); a bundler may
//   drop the rest of what is unused.
// * No dependencies: the package is self-contained.
import fs from 'node:fs';

const root = new URL('../', import.meta.url);
const read = (p) => fs.readFileSync(new URL(p, root), 'utf8');

/** The string values of Cargo.toml's [package] table (`key = "value"` lines). */
function cargoPackage(text = read('Cargo.toml')) {
  const table = text.split(/^\[/m).find((t) => t.startsWith('package]'));
  const fields = {};
  for (const m of table.matchAll(/^([a-z-]+)\s*=\s*("(?:[^"\\]|\\.)*")\s*$/gm)) fields[m[1]] = JSON.parse(m[2]);
  return fields;
}

const out = new URL('pkg/', root);
if (!fs.existsSync(new URL('reconnect_dedupe_bg.wasm', out))) {
  console.error('lib-pkg: pkg/reconnect_dedupe_bg.wasm is missing; run `npm run build`');
  process.exit(1);
}
const glue = new URL('reconnect_dedupe.js', out);
const declarations = new URL('reconnect_dedupe.d.ts', out);

/**
 * `text` with `edit` made once: `from` (a string) must occur exactly once, unless `done`
 * (a string) shows the edit made already (this script run again on the same pkg/).
 * Otherwise wasm-bindgen's output has changed shape, and the build stops here rather
 * than ship the internal names.
 */
function editOnce(text, file, { from, to, done }) {
  if (done !== undefined && text.includes(done)) return text;
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) {
    console.error(`lib-pkg: expected ${JSON.stringify(from)} once in pkg/${file}; has the glue changed shape?`);
    process.exit(1);
  }
  return text.replace(from, to);
}

// wasm-bindgen's internal names leave the package's exports and its declarations:
// `start` (the Rust `#[wasm_bindgen(start)]` function, which instantiation runs; called
// again it does nothing useful) and `__wbg_reset_state` (the reset that the build's
// --experimental-reset-state-function adds), which the package exports as
// `reinstantiate()`: what a user calls after a trap, under a name that says so and
// that a later wasm-bindgen cannot rename. Both functions stay in the glue: its call
// guard calls the reset itself, and `start` is left unused (instantiation runs the
// Wasm's own start export, `__wbindgen_start`).
const REINSTANTIATE_DOC = `/**
 * Starts the Wasm instance over, after a call trapped (threw a
 * \`WebAssembly.RuntimeError\`): the module is instantiated anew, and the memory of the
 * old instance is dropped with every object made from it. Those objects throw
 * \`instance_stale\` from then on (their \`free()\` only forgets them): make them
 * again, e.g. from a \`snapshot()\` taken before.
 */`;
let glueText = fs.readFileSync(glue, 'utf8');
glueText = editOnce(glueText, 'reconnect_dedupe.js', {
  from: 'export function __wbg_reset_state () {',
  to: `${REINSTANTIATE_DOC}\nexport function reinstantiate() {\n    __wbg_reset_state();\n}\n\nfunction __wbg_reset_state () {`,
  done: 'export function reinstantiate() {',
});
glueText = editOnce(glueText, 'reconnect_dedupe.js', { from: 'export function start() {', to: 'function start() {', done: '\nfunction start() {' });
fs.writeFileSync(glue, glueText);
let dts = fs.readFileSync(declarations, 'utf8');
// Written in the same run as reinstantiate's declaration above.
dts = editOnce(dts, 'reconnect_dedupe.d.ts', { from: '\nexport function start(): void;\n', to: '\n', done: 'export function reinstantiate(): void;' });
dts = editOnce(dts, 'reconnect_dedupe.d.ts', {
  from: 'export function __wbg_reset_state(): void;',
  to: `${REINSTANTIATE_DOC}\nexport function reinstantiate(): void;`,
  done: 'export function reinstantiate(): void;',
});
fs.writeFileSync(declarations, dts);

// The glue's classes, guarded against a call after free(), free() within their own
// call and use after the Wasm instance started over (lib/instance-guard.js says why);
// once per glue wasm-pack writes (`npm run build` always writes one).
const guard = read('lib/instance-guard.js');
// The guard's first line marks it in the glue (benches/instance-guard.mjs cuts there).
if (!glueText.includes(guard.slice(0, guard.indexOf('\n')))) {
  const classes = [...glueText.matchAll(/^export class (\w+) \{/gm)].map((m) => m[1]);
  if (classes.length === 0) {
    console.error('lib-pkg: no exported class in pkg/reconnect_dedupe.js; has the glue changed shape?');
    process.exit(1);
  }
  fs.appendFileSync(glue, `\n${guard}guardInstances({ ${classes.join(', ')} });\n`);
}
/**
 * repository, homepage and bugs, from Cargo.toml's `repository` and `homepage`: none
 * while it names no repository. bugs is the issue tracker a GitHub or GitLab repository
 * has at `/issues` (what npm itself infers from such a repository); on another host
 * it is left out rather than guessed.
 */
function projectLinks({ repository, homepage }) {
  if (!repository) return {};
  const base = repository.replace(/\.git$/, '').replace(/\/+$/, '');
  const tracked = /^https:\/\/(github\.com|gitlab\.com)\/[^/]+\/[^/]+$/.test(base);
  return {
    repository: { type: 'git', url: `git+${base}.git` },
    homepage: homepage ?? `${base}#readme`,
    ...(tracked && { bugs: { url: `${base}/issues` } }),
  };
}

const cargo = cargoPackage();
const { '//': _why, name, ...rest } = JSON.parse(read('lib/package.json.in'));
const manifest = { name, version: cargo.version, description: cargo.description, license: cargo.license, ...projectLinks(cargo), ...rest };
fs.writeFileSync(new URL('package.json', out), `${JSON.stringify(manifest, null, 2)}\n`);
fs.copyFileSync(new URL('lib/README.md', root), new URL('README.md', out));
// The version history (the library's changes under "The JavaScript API" of each release).
fs.copyFileSync(new URL('CHANGELOG.md', root), new URL('CHANGELOG.md', out));
fs.copyFileSync(new URL('lib/node.js', root), new URL('node.js', out));
console.log(`lib-pkg: pkg/ is ${name}@${cargo.version} (package.json, README.md, CHANGELOG.md, node.js)`);
