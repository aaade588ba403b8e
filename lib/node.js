// The package's entry for Node (the `node` condition of package.json `exports`): the
// web glue, instantiated on import from the .wasm beside it. The glue's own `init()`
// fetches its .wasm by a file: URL, which Node's fetch refuses ("fetch failed", cause
// "not implemented... yet..."), so Node reads the bytes from disk instead. Synchronous
// (no top-level await), so that `require()` of this module works where Node allows
// require() of an ES module.
import { readFileSync } from 'node:fs';
import { initSync } from './reconnect_dedupe.js';

initSync({ module: wasmBytes() });

/**
 * reconnect_dedupe_bg.wasm, read from beside this file. A bundle for Node that inlines
 * this file has no .wasm beside it (or, as CommonJS, no import.meta.url): that is said
 * in the error, not left to an ENOENT or "Invalid URL" from inside the bundle.
 */
function wasmBytes() {
  try {
    return readFileSync(new URL('./reconnect_dedupe_bg.wasm', import.meta.url));
  } catch (cause) {
    throw new Error(
      `reconnect-dedupe: cannot read reconnect_dedupe_bg.wasm beside its Node entry (${cause.message}); ` +
        'a bundle for Node must leave reconnect-dedupe external (esbuild --external:reconnect-dedupe)',
      { cause },
    );
  }
}

export * from './reconnect_dedupe.js';
// `init()` returns at once when the module is instantiated, so code written for the
// browser (`await init()`) runs unchanged in Node.
export { default } from './reconnect_dedupe.js';
