// `node benches/instance-guard.mjs` (after `npm run build`): what the instance guard
// (lib/instance-guard.js, appended to pkg/'s glue by scripts/lib-pkg.mjs) costs a call.
// The same calls through pkg/ and through a copy of pkg/ whose glue is cut before the
// guard, each in its own Node process, alternating, RUNS times: SeqWindow.observe (the
// cheapest call the worker makes per reading), Deduplicator.stats and processBurst of
// one reading. Prints the median per call of each and their difference.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const RUNS = 7;
const PKG = fileURLToPath(new URL('../pkg/', import.meta.url));
const GUARD = fs.readFileSync(new URL('../lib/instance-guard.js', import.meta.url), 'utf8');
// Where lib-pkg.mjs appended the guard: its first line, after a newline.
const MARK = `\n${GUARD.slice(0, GUARD.indexOf('\n'))}`;

if (process.argv[2] === '--child') {
  const dir = process.argv[3];
  const pkg = await import(path.join(dir, 'reconnect_dedupe.js'));
  pkg.initSync({ module: fs.readFileSync(path.join(dir, 'reconnect_dedupe_bg.wasm')) });
  const per = (n, f) => {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f(i);
    return Number(process.hrtime.bigint() - t) / n;
  };
  const w = new pkg.SeqWindow();
  per(100_000, (i) => w.observe(i, 1784192400000));
  const observe = per(2_000_000, (i) => w.observe(100_000 + i, 1784192400000));
  const d = new pkg.Deduplicator();
  const burst = [{ device_id: 'bin-1', seq: 1, ts: '2026-07-16T09:00:00Z', fill_pct: 10 }];
  const stats = per(200_000, () => d.stats());
  const processBurst = per(200_000, (i) => d.processBurst(burst, 1784192400000 + i));
  console.log(JSON.stringify({ observe, stats, processBurst }));
  process.exit(0);
}

const glue = fs.readFileSync(path.join(PKG, 'reconnect_dedupe.js'), 'utf8');
if (!glue.includes(MARK)) throw new Error('pkg/reconnect_dedupe.js has no instance guard: run `npm run build`');
const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'rd-unguarded-'));
try {
  fs.writeFileSync(path.join(bare, 'reconnect_dedupe.js'), glue.slice(0, glue.indexOf(MARK)) + '\n');
  fs.copyFileSync(path.join(PKG, 'reconnect_dedupe_bg.wasm'), path.join(bare, 'reconnect_dedupe_bg.wasm'));
  const runs = { guarded: [], unguarded: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const [name, dir] of r % 2 ? [['unguarded', bare], ['guarded', PKG]] : [['guarded', PKG], ['unguarded', bare]]) {
      const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', dir], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(out.stderr);
      runs[name].push(JSON.parse(out.stdout));
    }
  }
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  console.log(`instance guard, node ${process.version}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; median of ${RUNS} runs each:`);
  for (const call of ['observe', 'stats', 'processBurst']) {
    const [g, u] = [median(runs.guarded.map((x) => x[call])), median(runs.unguarded.map((x) => x[call]))];
    console.log(`  ${call.padEnd(13)} unguarded ${u.toFixed(0).padStart(6)} ns   guarded ${g.toFixed(0).padStart(6)} ns   difference ${(g - u).toFixed(0).padStart(5)} ns`);
  }
} finally {
  fs.rmSync(bare, { recursive: true, force: true });
}
