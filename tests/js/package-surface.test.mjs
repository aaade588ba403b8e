// What the npm package (pkg/, assembled by scripts/lib-pkg.mjs) shows its users: the
// names its entries export are the names its declarations declare, none of them
// wasm-bindgen's internals (`start`, `__wbg_reset_state`, `__wbg_*`), the reset among
// them as `reinstantiate`; and its manifest's links come from Cargo.toml, or are absent
// while Cargo.toml names no repository. scripts/test.sh builds pkg/ first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkgDir = path.join(root, 'pkg');
assert.ok(fs.existsSync(path.join(pkgDir, 'reconnect_dedupe_bg.wasm')), 'pkg/ is missing: run `npm run build` first');

/** The values (functions, classes) pkg/reconnect_dedupe.d.ts exports, by name. */
function declaredValues() {
  const dts = path.join(pkgDir, 'reconnect_dedupe.d.ts');
  const program = ts.createProgram([dts], { noEmit: true, types: [] });
  const checker = program.getTypeChecker();
  return checker
    .getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(dts)))
    .filter((s) => s.flags & ts.SymbolFlags.Value)
    .map((s) => s.name)
    .sort();
}

const INTERNAL = /^(start|__wbg_reset_state|__wbg|__wbindgen)/;

test('the entries export what the declarations declare, without wasm-bindgen internals', async () => {
  const declared = declaredValues();
  // The web glue (browsers, bundlers, workerd), and the Node entry, which instantiates it.
  const web = await import(path.join(pkgDir, 'reconnect_dedupe.js'));
  const node = await import(path.join(pkgDir, 'node.js'));
  for (const [entry, m] of [['reconnect_dedupe.js', web], ['node.js', node]]) {
    assert.deepEqual(Object.keys(m).sort(), declared, entry);
  }
  assert.deepEqual(declared.filter((n) => INTERNAL.test(n)), []);
  for (const name of ['default', 'initSync', 'reinstantiate', 'Deduplicator', 'idempotencyKey']) assert.ok(declared.includes(name), name);
  // Nor is an internal name declared some other way (a type, a namespace member).
  const text = fs.readFileSync(path.join(pkgDir, 'reconnect_dedupe.d.ts'), 'utf8');
  assert.doesNotMatch(text, /export (declare )?(function|const|let|class) (start|__wbg_reset_state)\b/);
});

test('reinstantiate() gives a new Wasm instance, and the instance guard still tells the objects of the old one', async () => {
  // In a child process: it starts the module over for the whole process.
  const script = `
    import * as pkg from ${JSON.stringify(path.join(pkgDir, 'node.js'))};
    const burst = [{ device_id: 'bin-R', seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 1 }];
    const old = new pkg.Deduplicator();
    old.processBurst(burst, 1);
    pkg.reinstantiate();
    const fresh = new pkg.Deduplicator();
    let stale;
    try { old.stats(); } catch (e) { stale = e.code; }
    console.log(JSON.stringify({ unique: fresh.processBurst(burst, 2).unique.length, stale }));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), { unique: 1, stale: 'instance_stale' });
});

/**
 * scripts/lib-pkg.mjs run on a copy of what it reads (Cargo.toml with `cargoExtra`
 * added to its [package] table, CHANGELOG.md, lib/, pkg/), twice: the manifest it
 * writes, and whether the second run changed the glue or the declarations.
 */
function assemble(cargoExtra = '') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rd-lib-pkg-'));
  try {
    fs.mkdirSync(path.join(dir, 'scripts'));
    fs.copyFileSync(path.join(root, 'scripts/lib-pkg.mjs'), path.join(dir, 'scripts/lib-pkg.mjs'));
    fs.cpSync(path.join(root, 'lib'), path.join(dir, 'lib'), { recursive: true });
    fs.copyFileSync(path.join(root, 'CHANGELOG.md'), path.join(dir, 'CHANGELOG.md'));
    fs.mkdirSync(path.join(dir, 'pkg'));
    for (const f of ['reconnect_dedupe.js', 'reconnect_dedupe.d.ts', 'reconnect_dedupe_bg.wasm']) fs.copyFileSync(path.join(pkgDir, f), path.join(dir, 'pkg', f));
    const cargo = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8');
    fs.writeFileSync(path.join(dir, 'Cargo.toml'), cargo.replace(/^\[package\]\n/m, `[package]\n${cargoExtra}`));
    const run = () => execFileSync(process.execPath, [path.join(dir, 'scripts/lib-pkg.mjs')], { encoding: 'utf8' });
    const built = (f) => fs.readFileSync(path.join(dir, 'pkg', f), 'utf8');
    run();
    const first = [built('reconnect_dedupe.js'), built('reconnect_dedupe.d.ts')];
    run();
    return {
      manifest: JSON.parse(built('package.json')),
      changelog: built('CHANGELOG.md'),
      stable: first[0] === built('reconnect_dedupe.js') && first[1] === built('reconnect_dedupe.d.ts'),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const links = ({ repository, homepage, bugs }) => ({ repository, homepage, bugs });

test("the manifest's repository, homepage and bugs come from Cargo.toml, and none while it names no repository", () => {
  // This repository's own: Cargo.toml names no repository (none is public yet).
  const cargo = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8');
  assert.doesNotMatch(cargo, /^(repository|homepage)\s*=/m);
  const none = assemble();
  assert.deepEqual(links(none.manifest), { repository: undefined, homepage: undefined, bugs: undefined });
  assert.deepEqual(links(JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'))), links(none.manifest), 'pkg/ is as lib-pkg.mjs writes it');
  assert.ok(none.stable, 'a second run changes nothing');
  assert.equal(none.changelog, fs.readFileSync(path.join(root, 'CHANGELOG.md'), 'utf8'));

  const github = assemble('repository = "https://github.com/example-owner/reconnect-dedupe"\n');
  assert.deepEqual(links(github.manifest), {
    repository: { type: 'git', url: 'git+https://github.com/example-owner/reconnect-dedupe.git' },
    homepage: 'https://github.com/example-owner/reconnect-dedupe#readme',
    bugs: { url: 'https://github.com/example-owner/reconnect-dedupe/issues' },
  });
  // Another host: its issue tracker is not guessed; a homepage given is taken as it is.
  const other = assemble('repository = "https://git.example.org/bins/reconnect-dedupe.git"\nhomepage = "https://docs.example.org/reconnect-dedupe"\n');
  assert.deepEqual(links(other.manifest), {
    repository: { type: 'git', url: 'git+https://git.example.org/bins/reconnect-dedupe.git' },
    homepage: 'https://docs.example.org/reconnect-dedupe',
    bugs: undefined,
  });
});
