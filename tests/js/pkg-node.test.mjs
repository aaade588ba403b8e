// Loads the wasm-pack `--target web` build in Node. Needs `npm run build` first
// (scripts/test.sh does that); this file builds nothing itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);

test('pkg/ instantiates synchronously in Node', async () => {
  assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
  const pkg = await import('../../pkg/reconnect_dedupe.js');
  const exports = pkg.initSync({ module: fs.readFileSync(wasmPath) });
  assert.ok(exports.memory instanceof WebAssembly.Memory);
});
