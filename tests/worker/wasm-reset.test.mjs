// The re-instantiation the worker relies on (src/worker/core.js `guarded`): after a
// trap the pkg/ glue's reinstantiate() gives a working instance, and objects of
// the trapped instance refuse use instead of touching the new memory.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
const exports = pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });
const burst = [{ device_id: "bin-T", seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 1 }];

test("a trap is a WebAssembly.RuntimeError and reinstantiate recovers", () => {
  assert.equal(typeof pkg.reinstantiate, "function", "build with scripts/bin/wasm-bindgen, then scripts/lib-pkg.mjs (npm run build)");
  const old = new pkg.Deduplicator();
  old.processBurst(burst, 1);
  // A pointer far outside linear memory: the kind of fault a core bug would cause.
  assert.throws(() => exports.deduplicator_confirm(0xfffffff0, 1), WebAssembly.RuntimeError);
  pkg.reinstantiate();
  const fresh = new pkg.Deduplicator();
  assert.equal(fresh.processBurst(burst, 1).unique.length, 1);
  assert.equal(fresh.processBurst(burst, 2).duplicates_suppressed, 1);
  assert.throws(() => old.processBurst(burst, 3), { code: "instance_stale" });
  old.free(); // frees nothing: its memory went with the trapped instance
  assert.equal(fresh.processBurst(burst, 4).duplicates_suppressed, 1);
});
