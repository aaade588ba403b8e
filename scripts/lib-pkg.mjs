// Makes pkg/ (wasm-pack's output, `npm run build`) the npm package `reconnect-dedupe`:
// pkg/package.json from lib/package.json.in, the library's README (lib/README.md)
// instead of the repository's, which wasm-pack copies, and the Node entry
// (lib/node.js). `npm run pack:lib` packs the result; tests/e2e/package.test.mjs
// installs the packed tarball into a fresh project and uses it from Node, tsc,
// a browser page bundled by esbuild and a Worker bundled by wrangler.
//
// Why the manifest is what it is:
// * version, description, license: Cargo.toml's, the one source (wasm-pack writes
//   them too, but this file replaces its manifest).
// * exports ".": one set of declarations for every condition, because every entry
//   exports the same API. workerd, worker and browser get wasm-bindgen's web glue
//   (`init()` / `initSync()`), and are listed before node so that a toolchain that
//   sets both (a Worker build with Node compatibility) still gets it; node gets
//   lib/node.js, which instantiates on import; anything else the web glue.
// * "./reconnect_dedupe_bg.wasm": a Worker imports the module itself
//   (`import wasm from "reconnect-dedupe/reconnect_dedupe_bg.wasm"`), and a bundler
//   that cannot follow the glue's `new URL(..., import.meta.url)` (esbuild) copies it
//   with its `file` loader.
// * files: the glue, its declarations, the .wasm and the Node entry (npm adds
//   package.json, README.md and LICENSE). Not reconnect_dedupe_bg.wasm.d.ts: it
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
// The glue's classes, guarded against a call after free(), free() within their own
// call and use after the Wasm instance started over (lib/instance-guard.js says why);
// once per glue wasm-pack writes (`npm run build` always writes one).
const glue = new URL('reconnect_dedupe.js', out);
const glueText = fs.readFileSync(glue, 'utf8');
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
const cargo = cargoPackage();
const { '//': _why, name, ...rest } = JSON.parse(read('lib/package.json.in'));
const manifest = { name, version: cargo.version, description: cargo.description, license: cargo.license, ...rest };
fs.writeFileSync(new URL('package.json', out), `${JSON.stringify(manifest, null, 2)}\n`);
fs.copyFileSync(new URL('lib/README.md', root), new URL('README.md', out));
fs.copyFileSync(new URL('lib/node.js', root), new URL('node.js', out));
console.log(`lib-pkg: pkg/ is ${name}@${cargo.version} (package.json, README.md, node.js)`);
