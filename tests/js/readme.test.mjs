// The README's /v1/stats example against what the worker writes. The worker
// builds `as_of` with the core's isoTime (src/worker/fleet.js), "one timestamp style
// in everything the worker emits" (issue 8; README "Errors are ...": Python's
// isoformat() of the UTC instant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });

test("the README's /v1/stats example writes as_of as the worker does", () => {
  const readme = fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const example = readme.match(/```json\n(\{"devices":[\s\S]*?\})\n```/);
  assert.ok(example, 'the README has a /v1/stats example');
  const { as_of } = JSON.parse(example[1]);
  assert.equal(as_of, pkg.isoTime(Date.parse(as_of)));
});
