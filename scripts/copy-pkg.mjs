// Copies the browser's share of the Wasm package (pkg/) into www/pkg/, so that a
// server of www/ alone (the worker's static assets, `npm run demo`) serves it too.
import fs from 'node:fs';

const root = new URL('../', import.meta.url);
const files = ['reconnect_dedupe.js', 'reconnect_dedupe_bg.wasm'];
const to = new URL('www/pkg/', root);
fs.mkdirSync(to, { recursive: true });
for (const f of files) {
  const from = new URL(`pkg/${f}`, root);
  if (!fs.existsSync(from)) {
    console.error(`copy-pkg: pkg/${f} is missing; run \`npm run build\``);
    process.exit(1);
  }
  fs.copyFileSync(from, new URL(f, to));
}
console.log(`copy-pkg: ${files.join(', ')} -> www/pkg/`);
