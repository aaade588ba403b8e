// `npm run bench`: throughput, memory and snapshot figures from one run on one seeded
// workload. Prints figures and ratios; asserts nothing about time. It loads the package
// built with the cargo feature `bench` (target/bench-pkg/), which adds the floor's
// `benchHashFloor`; everything else is byte for byte the code of pkg/.
//
//   node benches/bench.mjs [--seed N] [--readings N] [--rounds N]
import fs from 'node:fs';
import os from 'node:os';
import { generateWorkload, option } from './workload.mjs';
import { PlainDeduplicator, validate, canonicalContent } from './plain-js-dedupe.mjs';

const SEED = option('seed', 20260716);
const READINGS = option('readings', 200_000);
const ROUNDS = option('rounds', 9);
const TTL_MS = 3600_000;
const MAX_KEYS = 200_000;

const pkgDir = new URL('../target/bench-pkg/', import.meta.url);
const wasmFile = new URL('reconnect_dedupe_bg.wasm', pkgDir);
if (!fs.existsSync(wasmFile)) throw new Error('target/bench-pkg/ is missing: run `npm run bench`');
const wasmModule = new WebAssembly.Module(fs.readFileSync(wasmFile));
let instances = 0;
/** A fresh Wasm instance (its own linear memory): the glue module imported anew. */
async function instance() {
  const glue = await import(new URL(`reconnect_dedupe.js?instance=${instances++}`, pkgDir));
  const exports = glue.initSync({ module: wasmModule });
  return { ...glue, memory: exports.memory };
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const MB = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const fmt = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

// ---- the workload ------------------------------------------------------------------
const w = generateWorkload({ seed: SEED, readings: READINGS });
const sizes = w.bursts.map((b) => b.readings.length);
console.log(`reconnect-dedupe bench  ${new Date().toISOString()}`);
console.log(`machine: ${os.cpus()[0].model}, ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; node ${process.version}`);
console.log(`workload: seed ${w.seed}, ${fmt(w.total)} readings in ${fmt(w.bursts.length)} bursts (1–${Math.max(...sizes)}, mean ${(w.total / w.bursts.length).toFixed(1)}), ${fmt(w.devices)} devices`);
console.log(`  replayed ${(100 * w.counts.replayed / w.total).toFixed(1)} %, same-second ${fmt(w.counts.sameSecond)}, seq resets ${w.counts.seqResets}, malformed ${w.counts.malformed}; ttlMs ${TTL_MS}, maxKeys ${MAX_KEYS}`);

// Bodies arrive as bytes (request.arrayBuffer()); both the Wasm bulk path and the
// plain-JS baseline start from them and end with JSON text to forward.
const encoder = new TextEncoder();
const decoder = new TextDecoder();
for (const b of w.bursts) b.bytes = encoder.encode(b.body);

const wasm = await instance();
const runs = {
  'Wasm bulk   processBurstJson(bytes) -> text': () => {
    const d = new wasm.Deduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
    for (const b of w.bursts) d.processBurstJson(b.bytes, b.nowMs);
    d.free();
  },
  'Wasm object processBurst(objects) -> objects': () => {
    const d = new wasm.Deduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
    for (const b of w.bursts) d.processBurst(b.readings, b.nowMs);
    d.free();
  },
  'plain JS    bytes -> JSON.parse -> dedupe -> JSON.stringify': () => {
    const d = new PlainDeduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
    for (const b of w.bursts) JSON.stringify(d.processBurst(JSON.parse(decoder.decode(b.bytes)), b.nowMs));
  },
  'plain JS    dedupe(objects) -> objects': () => {
    const d = new PlainDeduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
    for (const b of w.bursts) d.processBurst(b.readings, b.nowMs);
  },
  'Wasm bulk   processBurstJson(string) -> text': () => {
    const d = new wasm.Deduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
    for (const b of w.bursts) d.processBurstJson(b.body, b.nowMs);
    d.free();
  },
};
const [BULK, OBJECT, PLAIN_TEXT, PLAIN_OBJ, BULK_STRING] = Object.keys(runs);

// ---- the three implementations agree (also the warm-up) -------------------------------
function summary(outs) {
  const s = { keys: [], duplicates: 0, rejected: [], seqReuses: 0, evicted: 0 };
  for (const o of outs) {
    for (const u of o.unique) s.keys.push(u.key);
    s.duplicates += o.duplicates_suppressed;
    for (const r of o.rejected) s.rejected.push(`${r.index}:${r.code}`);
    s.seqReuses += o.seq_reuses;
    s.evicted += o.audit.payload.evicted_before_ttl;
  }
  return s;
}
{
  const dBulk = new wasm.Deduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
  const dObj = new wasm.Deduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
  const dPlain = new PlainDeduplicator({ ttlMs: TTL_MS, maxKeys: MAX_KEYS });
  const bulk = summary(w.bursts.map((b) => JSON.parse(dBulk.processBurstJson(b.bytes, b.nowMs))));
  const obj = summary(w.bursts.map((b) => dObj.processBurst(b.readings, b.nowMs)));
  const plain = summary(w.bursts.map((b) => dPlain.processBurst(JSON.parse(b.body), b.nowMs)));
  dBulk.free();
  dObj.free();
  for (const [name, s] of [['object path', obj], ['plain JS', plain]]) {
    for (const f of ['duplicates', 'seqReuses', 'evicted']) {
      if (s[f] !== bulk[f]) throw new Error(`${name} disagrees with the bulk path on ${f}: ${s[f]} vs ${bulk[f]}`);
    }
    if (s.keys.join() !== bulk.keys.join()) throw new Error(`${name} admits other keys than the bulk path`);
    if (s.rejected.join() !== bulk.rejected.join()) throw new Error(`${name} rejects other readings than the bulk path`);
  }
  console.log(`agreement: bulk, object and plain JS admit the same ${fmt(bulk.keys.length)} keys in the same order; ` +
    `${fmt(bulk.duplicates)} duplicates, ${bulk.rejected.length} rejected, ${bulk.seqReuses} seq reuses, ${bulk.evicted} evicted`);
}

// ---- the floor: SHA-256 of each reading's canonical content, in Wasm -------------------
const contents = [];
for (const b of w.bursts) {
  for (const raw of b.readings) {
    try {
      contents.push(canonicalContent(validate(raw)));
    } catch {
      // malformed readings are never hashed
    }
  }
}
const enc = new TextEncoder();
const encoded = contents.map((c) => enc.encode(c));
const floorBytes = new Uint8Array(encoded.reduce((n, e) => n + e.length, 0));
const floorLengths = new Uint32Array(encoded.length);
encoded.reduce((at, e, i) => {
  floorBytes.set(e, at);
  floorLengths[i] = e.length;
  return at + e.length;
}, 0);
runs['floor       SHA-256 of canonical content only (Wasm)'] = () => wasm.benchHashFloor(floorBytes, floorLengths);
const FLOOR = Object.keys(runs)[5];

// ---- throughput: every implementation, interleaved rounds, median ---------------------
const times = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
// Warm-up: V8 tiers Wasm and JS up in the background, which takes a while on 2 cores.
for (let i = 0; i < 2; i++) for (const run of Object.values(runs)) run();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(runs)) {
    const t0 = process.hrtime.bigint();
    run();
    times[name].push(ms(t0));
  }
}
console.log(`\nthroughput (median of ${ROUNDS} rounds, the whole workload each, one thread):`);
const per = {};
for (const [name, ts] of Object.entries(times)) {
  const n = name === FLOOR ? contents.length : w.total;
  const t = median(ts);
  per[name] = (t * 1e6) / n;
  console.log(`  ${name.padEnd(60)} ${fmt(n / (t / 1000)).padStart(11)} readings/s ${fmt(per[name]).padStart(7)} ns/reading`);
}
const ratio = (a, b) => (per[b] / per[a]).toFixed(2);
console.log('ratios (readings/s):');
console.log(`  Wasm bulk / plain JS (text in, text out)    ${ratio(BULK, PLAIN_TEXT)}x   target >= 5`);
console.log(`  Wasm bulk / plain JS (objects, no JSON)     ${ratio(BULK, PLAIN_OBJ)}x`);
console.log(`  floor / Wasm bulk (bulk is this x slower)   ${ratio(FLOOR, BULK)}x   target <= 4`);
console.log(`  Wasm bulk / object path (boundary cost)     ${ratio(BULK, OBJECT)}x   target <= 2`);
console.log(`  bytes in / string in (UTF-16 -> UTF-8)      ${ratio(BULK, BULK_STRING)}x`);

// ---- memory --------------------------------------------------------------------------
/** `count` distinct valid readings as JSON bodies of `size`, starting at `from`. */
function* uniqueBodies(from, count, size = 1000) {
  for (let i = from; i < from + count; i += size) {
    const parts = [];
    for (let j = i; j < Math.min(i + size, from + count); j++) {
      parts.push(`{"device_id":"bin-${j % 50_000}","seq":${j},"ts":"2026-07-16T09:00:${String(j % 60).padStart(2, '0')}Z","fill_pct":${j % 1001 / 10}}`);
    }
    yield `[${parts.join(',')}]`;
  }
}
const NOW = Date.parse('2026-07-16T10:00:00Z');

console.log('\nmemory (Wasm linear memory; it never shrinks, so growth = peak):');
for (const keys of [100_000, 1_000_000]) {
  const m = await instance();
  const d = new m.Deduplicator({ ttlMs: 6 * 3600_000, maxKeys: keys });
  d.processBurstJson('[]', NOW);
  const before = m.memory.buffer.byteLength;
  for (const body of uniqueBodies(0, keys)) d.processBurstJson(body, NOW);
  const s = d.stats();
  const grown = m.memory.buffer.byteLength - before;
  console.log(`  ${fmt(keys).padStart(9)} keys (maxKeys ${fmt(keys)}): linear memory ${MB(m.memory.buffer.byteLength)}, ` +
    `growth ${MB(grown)} = ${(grown / s.keys).toFixed(1)} B/key; seen-set allocations ${(s.memory_bytes / s.keys).toFixed(1)} B/key`);
}
for (const [path, call] of [
  ['bulk', (d, body) => d.processBurstJson(body, NOW)],
  ['object', (d, body) => d.processBurst(JSON.parse(body), NOW)],
]) {
  const m = await instance();
  const d = new m.Deduplicator();
  d.processBurstJson('[]', NOW);
  const before = m.memory.buffer.byteLength;
  const [body] = uniqueBodies(0, 10_000, 10_000);
  call(d, body);
  const grown = m.memory.buffer.byteLength - before;
  console.log(`  one 10,000-reading burst, ${path} path: growth ${MB(grown)} (of it ${MB(d.stats().memory_bytes)} the seen-set keeps)`);
}
{
  const m = await instance();
  const ttl = 600_000;
  const d = new m.Deduplicator({ ttlMs: ttl, maxKeys: 1_000_000 });
  const line = [];
  let next = 0;
  for (let win = 1; win <= 6; win++) {
    // One TTL window: 60 bursts of 1000 new readings, 10 s apart.
    for (let b = 0; b < 60; b++) {
      const [body] = uniqueBodies(next, 1000);
      next += 1000;
      d.processBurstJson(body, NOW + (win - 1) * ttl + b * 10_000);
    }
    line.push(`${MB(m.memory.buffer.byteLength)} (${fmt(d.stats().keys)} keys)`);
  }
  console.log(`  after each of 6 TTL windows (60,000 new keys a window): ${line.join(', ')}`);
}

// ---- snapshot and restore of a 100k-key set ------------------------------------------
{
  const m = await instance();
  const d = new m.Deduplicator({ maxKeys: 100_000 });
  for (const body of uniqueBodies(0, 100_000)) d.processBurstJson(body, NOW);
  const snap = [];
  const rest = [];
  let bytes;
  for (let i = 0; i < 7; i++) {
    let t0 = process.hrtime.bigint();
    bytes = d.snapshot();
    snap.push(ms(t0));
    t0 = process.hrtime.bigint();
    const again = m.Deduplicator.restore(bytes);
    rest.push(ms(t0));
    if (again.stats().keys !== 100_000) throw new Error('restore lost keys');
    again.free();
  }
  console.log(`\nsnapshot of 100,000 keys: ${median(snap).toFixed(1)} ms, ${MB(bytes.length)}; restore: ${median(rest).toFixed(1)} ms (median of 7)`);
}

// ---- per-device memory ---------------------------------------------------------------
// An isolate hosts many device objects, each with its own Deduplicator in the one
// shared linear memory: what one costs with default options, empty and holding 1, 40
// (a bin reporting every 10 minutes holds ~36 in a 6 h window) and 400 keys.
{
  const BURST = 10;
  const pad2 = (n) => String(n).padStart(2, '0');
  /** One burst of `count` distinct readings of device `dev`, seqs from `from`. */
  const deviceBurst = (dev, from, count) => {
    const parts = [];
    for (let seq = from; seq < from + count; seq++) {
      const ts = `2026-07-16T${pad2(9 + Math.floor(seq / 3600) % 12)}:${pad2(Math.floor(seq / 60) % 60)}:${pad2(seq % 60)}Z`;
      parts.push(`{"device_id":"bin-${String(dev).padStart(5, '0')}","seq":${seq},"ts":"${ts}","fill_pct":${(seq * 7 + dev) % 1001 / 10}}`);
    }
    return `[${parts.join(',')}]`;
  };
  /** The same burst as keys, one per line, as a device object receives them. */
  const deviceKeys = (dev, from, count) => {
    const lines = [];
    for (let seq = from; seq < from + count; seq++) {
      const hex = ((dev * 2654435761 + seq * 40503) >>> 0).toString(16).padStart(8, '0');
      lines.push(`bin-${String(dev).padStart(5, '0')}:${seq}:${hex}${hex}`);
    }
    return lines.join('\n');
  };
  const PATHS = {
    worker: (d, dev, from, count, now) => d.admitKeys(deviceKeys(dev, from, count), now),
    library: (d, dev, from, count, now) => d.processBurstJson(deviceBurst(dev, from, count), now),
  };
  console.log(`\nper-device memory (default options: ttlMs 6 h, maxKeys 100,000; Deduplicators in one fresh instance, bursts of ${BURST} readings 1 min apart;` +
    ` worker: keys through admitKeys, as a group's devices; library: readings through processBurstJson):`);
  for (const [keys, devices, path] of [[0, 10_000, 'worker'], [1, 10_000, 'worker'], [40, 10_000, 'worker'], [40, 10_000, 'library'], [400, 1_000, 'worker']]) {
    const m = await instance();
    const before = m.memory.buffer.byteLength;
    const ds = [];
    for (let dev = 0; dev < devices; dev++) ds.push(new m.Deduplicator());
    for (let from = 0, b = 0; from < keys; from += BURST, b++) {
      const count = Math.min(BURST, keys - from);
      for (let dev = 0; dev < devices; dev++) PATHS[path](ds[dev], dev, from, count, NOW + b * 60_000);
    }
    const grown = m.memory.buffer.byteLength - before;
    let held = 0;
    for (const d of ds) {
      const s = d.stats();
      if (s.keys !== keys || s.admitted !== keys) throw new Error(`a device holds ${s.keys} keys (admitted ${s.admitted}), not ${keys}`);
      held += s.memory_bytes;
    }
    const what = keys === 0 ? 'idle (empty)' : `${keys} key${keys > 1 ? 's' : ''} each (${Math.ceil(keys / BURST)} burst${keys > BURST ? 's' : ''}, ${path})`;
    console.log(`  ${what.padEnd(34)} ${fmt(devices).padStart(6)} devices: linear memory ${MB(m.memory.buffer.byteLength)}, ` +
      `growth ${MB(grown)} = ${fmt(grown / devices)} B/device; seen-set allocations ${fmt(held / devices)} B/device`);
    for (const d of ds) d.free();
  }
}

// ---- sensor codecs: one uplink's raw payload → samples (decodePayload) ----------------
// Each codec's vectors (tests/vectors/devices/) that decode, cycled; the cost per
// uplink includes crossing the boundary both ways (bytes in, a DecodedPayload object out).
{
  const m = await instance();
  const files = {
    'milesight-iot/em310-udl': 'milesight-em310-udl', 'milesight-iot/em500-udl': 'milesight-em500-udl',
    'dingtek/df703': 'dingtek-df703', 'decentlab/dl-mbx': 'decentlab-dl-mbx', 'tekelek/tek766': 'tekelek-tek766',
    'dragino/ldds75': 'dragino-ldds75', 'dragino/dds75-lb': 'dragino-dds75-lb',
  };
  const CALLS = 200_000;
  console.log(`\nsensor codecs (decodePayload; median of ${ROUNDS} rounds of ${fmt(CALLS)} uplinks, the codec's decodable vectors cycled):`);
  for (const codec of m.limits().codecs) {
    const file = JSON.parse(fs.readFileSync(new URL(`../tests/vectors/devices/${files[codec]}.json`, import.meta.url), 'utf8'));
    const frames = file.vectors
      .map((v) => ({ port: v.fPort ?? file.fPort, bytes: Uint8Array.from(Buffer.from(v.hex.replace(/\s+/g, ''), 'hex')) }))
      .filter(({ port, bytes }) => {
        try {
          return m.decodePayload(codec, port, bytes).samples.length > 0;
        } catch {
          return false;
        }
      });
    if (!frames.length) {
      console.log(`  ${codec.padEnd(26)} no vector with a sample (see tests/vectors/devices/${files[codec]}.json)`);
      continue;
    }
    const rounds = [];
    let samples = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < CALLS; i++) {
        const f = frames[i % frames.length];
        samples += m.decodePayload(codec, f.port, f.bytes).samples.length;
      }
      rounds.push(ms(t0));
    }
    const ns = (median(rounds) * 1e6) / CALLS;
    console.log(`  ${codec.padEnd(26)} ${fmt(ns).padStart(6)} ns/uplink  (${frames.length} vector${frames.length > 1 ? 's' : ''}, ${fmt(samples / ROUNDS / CALLS, 2)} samples/uplink)`);
  }
}
