// The package's entry for Node (the `node` condition of package.json `exports`): the
// web glue, instantiated on import from the .wasm beside it. The glue's own `init()`
// fetches its .wasm by a file: URL, which Node's fetch refuses ("fetch failed", cause
// "not implemented... yet..."), so Node reads the bytes from disk instead. Synchronous
// (no top-level await), so that `require()` of this module works where Node allows
// require() of an ES module.
import { readFileSync } from 'node:fs';
import { initSync } from './reconnect_dedupe.js';

initSync({ module: readFileSync(new URL('./reconnect_dedupe_bg.wasm', import.meta.url)) });

export * from './reconnect_dedupe.js';
// `init()` returns at once when the module is instantiated, so code written for the
// browser (`await init()`) runs unchanged in Node.
export { default } from './reconnect_dedupe.js';
