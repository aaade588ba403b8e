// A seeded, realistic stream of uplink bursts for the benchmarks (bench.mjs, load.mjs).
//
// Many devices (bin-XXXX names and 16-hex DevEUIs); each burst carries 1–100 readings
// from one to four devices (a device reconnecting and flushing its buffer, or a network
// server batching uplinks). About 30 % of readings are replays of readings already sent
// (an earlier burst or the same burst); some devices send two readings in the same
// second; batteries get swapped (seq restarts at 0); a few readings are malformed.
// Timestamps mix `Z`, milliseconds, nanoseconds (The Things Stack) and `+02:00`.

// The demo's seeded generator (mulberry32): pure, no DOM.
import { rng32 as rng } from '../www/sim.js';

/** A whole-number command-line option `--name N`, or `dflt`. */
export function option(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

const START_MS = Date.parse('2026-07-16T00:00:00Z');
const pad = (n, w) => String(n).padStart(w, '0');

function formatTs(ms, style, r) {
  const iso = new Date(ms).toISOString(); // 2026-07-16T09:00:00.000Z
  switch (style) {
    case 0: return iso.slice(0, 19) + 'Z';
    case 1: return iso; // milliseconds
    case 2: return iso.slice(0, 23) + pad(Math.floor(r() * 1e6), 6) + 'Z'; // nanoseconds
    default: { // the same instant written at +02:00
      const local = new Date(ms + 2 * 3600_000).toISOString();
      return local.slice(0, 19) + '+02:00';
    }
  }
}

function fill(r) {
  const x = r();
  if (x < 0.6) return Math.round(r() * 1000) / 10; // one decimal: 62.5
  if (x < 0.9) return Math.round(r() * 100); // integral: hashed as 62.0
  return r() * 100; // a full double: 33.333333333333336
}

/**
 * Generates bursts until `readings` readings exist.
 * Returns { seed, bursts: [{ nowMs, readings, body }], total, counts }.
 */
export function generateWorkload({ seed = 20260716, readings = 200_000, devices = 20_000 } = {}) {
  const r = rng(seed);
  const devs = [];
  for (let i = 0; i < devices; i++) {
    const id = i % 2 ? `bin-${pad(i, 5)}` : `70B3D57ED0${pad(i.toString(16).toUpperCase(), 6)}`;
    devs.push({ id, seq: Math.floor(r() * 5000), tsMs: START_MS - Math.floor(r() * 3600_000), style: i % 4, sent: [] });
  }
  const counts = { fresh: 0, replayed: 0, sameSecond: 0, seqResets: 0, malformed: 0 };
  const bursts = [];
  let nowMs = START_MS;
  let total = 0;
  while (total < readings) {
    nowMs += Math.floor(r() * 3000); // bursts arrive every 0–3 s: ≈ 3.5 h simulated
    const size = Math.min(readings - total, 1 + Math.floor(100 * r() ** 2)); // 1–100, mostly small
    const group = [];
    const nDev = 1 + Math.floor(r() * 4);
    for (let i = 0; i < nDev; i++) group.push(devs[Math.floor(r() * devices)]);
    const list = [];
    for (let i = 0; i < size; i++) {
      const d = group[Math.floor(r() * group.length)];
      if (d.sent.length > 0 && r() < 0.3) {
        // A replay: an exact copy of one of this device's recent readings.
        list.push({ ...d.sent[Math.floor(r() * d.sent.length)] });
        counts.replayed++;
        continue;
      }
      if (r() < 0.002) {
        d.seq = 0; // battery swap
        counts.seqResets++;
      }
      if (r() < 0.08) counts.sameSecond++; // same second as the previous reading
      else d.tsMs += 1000 * (60 + Math.floor(r() * 840));
      d.seq += 1;
      const reading = { device_id: d.id, seq: d.seq, ts: formatTs(d.tsMs, d.style, r), fill_pct: fill(r), rssi: -60 - Math.floor(r() * 60) };
      if (r() < 0.002) {
        counts.malformed++;
        if (r() < 0.5) reading.fill_pct = 101;
        else reading.ts = reading.ts.replace(/(Z|\+02:00)$/, '');
      }
      list.push(reading);
      counts.fresh++;
      d.sent.push(reading);
      if (d.sent.length > 32) d.sent.shift();
    }
    bursts.push({ nowMs, readings: list, body: JSON.stringify(list) });
    total += list.length;
  }
  return { seed, bursts, total, counts, devices };
}
