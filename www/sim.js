// The seeded fleet simulation: pure, no DOM, no clock, no Math.random. The same
// parameters always give the same stream of uplinks, together with the ground truth
// the deduplication strategies are judged against.

/** Defaults and ranges of every simulation parameter (the page's controls). */
export const PARAMS = {
  // A seed whose most telling bin (telltaleBin) shows every argument in a default run: a
  // battery swap (device + seq loses what follows it) and a gap the backfill closes.
  seed: { def: 20260722, min: 0, max: 4294967295 },
  fleet: { def: 50, min: 1, max: 500 },
  minutes: { def: 240, min: 10, max: 1440 },
  outagePerHour: { def: 40, min: 0, max: 100 }, // % chance a device drops off, per device-hour
  replayTwicePct: { def: 30, min: 0, max: 100 }, // % of reconnect flushes sent again later
  coarseSec: { def: 15, options: [1, 5, 15, 60] }, // sensor clock resolution
  swapPerHour: { def: 5, min: 0, max: 100 }, // % chance of a battery swap (seq reset), per device-hour
  corruptPct: { def: 5, min: 0, max: 100 }, // % of retransmitted copies with a damaged fill byte
};

export const START_MS = Date.UTC(2026, 6, 16, 6, 0, 0); // 2026-07-16T06:00:00Z
export const TICK_MS = 60_000; // one simulated minute per step
const UNCONFIRMED = 3; // the last readings a device keeps until acknowledged
const EXTRA_READING = 0.03; // chance per device-minute of an event reading (threshold crossed)
const SERVICE_AT = 80; // fill % from which a bin may be serviced
const SERVICE_CHANCE = 0.04; // per minute, once at or above SERVICE_AT
const CORRUPT_FILL = 255; // what a damaged fill byte decodes to
/** A drop of at least this many points in a bin's level reads as "serviced". */
export const SERVICE_DROP = 30;

/** Fills in defaults and clamps every parameter of `specs` (PARAMS unless given) into its range. */
export function normalizeParams(p = {}, specs = PARAMS) {
  const out = {};
  for (const [name, spec] of Object.entries(specs)) {
    let v = Number(p[name]);
    if (!Number.isFinite(v)) v = spec.def;
    if (spec.options) v = spec.options.includes(v) ? v : spec.def;
    else v = Math.min(spec.max, Math.max(spec.min, Math.round(v)));
    out[name] = v;
  }
  return out;
}

/** mulberry32: a small, fast, well-mixed 32-bit generator; returns floats in [0, 1). */
export function rng32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A per-hour probability as a per-minute one. */
const perMinute = (pctPerHour) => 1 - Math.pow(1 - Math.min(pctPerHour, 99.999) / 100, 1 / 60);

/** RFC 3339 in UTC, whole seconds without a fraction: "2026-07-16T06:00:15Z". */
export const rfc3339 = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

export const deviceId = (i) => `bin-${String(i).padStart(3, '0')}`;

/**
 * Simulates the fleet and returns every uplink delivered, minute by minute.
 *
 * Each bin fills at its own rate and drops to ~0 when serviced. Its sensor sends a
 * reading every minute (plus one when serviced or when a threshold is crossed) with
 * a timestamp truncated to `coarseSec`, so two real readings can share a timestamp.
 * Delivered readings stay unconfirmed for a while; when the device goes offline it
 * buffers, and on reconnect replays the unconfirmed tail plus the buffer — sometimes
 * a second time, minutes later. Retransmitted copies may be corrupted. A battery swap
 * resets `seq` to 0.
 *
 * Returns `{ params, devices, ticks, trueFill, trueServices, trueSwaps, readings }`:
 * `ticks[m] = { nowMs, uplinks: [{ reading, rid, dev, retransmit, corrupted }] }`,
 * where `rid` identifies the real reading a copy carries (ground truth), and
 * `trueFill[dev][m]` is the bin's real fill at the end of minute `m`.
 */
export function simulate(rawParams) {
  const params = normalizeParams(rawParams);
  const rand = rng32(params.seed);
  const uniform = (lo, hi) => lo + (hi - lo) * rand();
  const pOutage = perMinute(params.outagePerHour);
  const pSwap = perMinute(params.swapPerHour);
  const pTwice = params.replayTwicePct / 100;
  const pCorrupt = params.corruptPct / 100;
  const coarseMs = params.coarseSec * 1000;

  const devices = [];
  for (let i = 0; i < params.fleet; i++) {
    devices.push({
      id: deviceId(i),
      fill: uniform(0, 70),
      rate: uniform(0.25, 1.2), // % per minute
      phaseMs: Math.floor(uniform(0, 50_000)),
      // Counted since the battery went in, shortly before the run: a swap during the run
      // brings back seqs the strategies have seen (far up, it would take days to).
      seq: Math.floor(uniform(0, 60)),
      online: true,
      outageLeft: 0,
      unconfirmed: [], // readings delivered but not yet acknowledged
      buffer: [], // readings waiting for a reconnect
      later: [], // flushes to send again: { at, copies }
    });
  }
  const trueFill = devices.map(() => new Float32Array(params.minutes));
  const trueServices = devices.map(() => []);
  const trueSwaps = devices.map(() => []); // minutes of each bin's battery swaps (seq back to 0)
  const readings = []; // every real reading, by rid: { dev, tMs, reading }
  const ticks = [];

  const emit = (d, dev, tMs, fill) => {
    const reading = {
      device_id: d.id,
      seq: d.seq++,
      ts: rfc3339(Math.floor(tMs / coarseMs) * coarseMs),
      fill_pct: Math.round(Math.min(100, Math.max(0, fill)) * 10) / 10,
    };
    readings.push({ dev, tMs, reading });
    return { reading, rid: readings.length - 1, dev };
  };
  // A retransmitted copy of a reading, possibly damaged in flight.
  const copy = (r) => {
    const corrupted = rand() < pCorrupt;
    const reading = corrupted ? { ...r.reading, fill_pct: CORRUPT_FILL } : r.reading;
    return { reading, rid: r.rid, dev: r.dev, retransmit: true, corrupted };
  };

  for (let m = 0; m < params.minutes; m++) {
    const t0 = START_MS + m * TICK_MS;
    const uplinks = [];
    devices.forEach((d, dev) => {
      if (rand() < pSwap) {
        d.seq = 0; // new battery: the counter starts again
        trueSwaps[dev].push(m);
      }

      // This minute's readings: the periodic one, then a service or threshold event.
      const fresh = [];
      const tRead = t0 + d.phaseMs + Math.floor(uniform(0, 2000));
      const before = d.fill;
      d.fill = Math.min(100, d.fill + d.rate * uniform(0.5, 1.5));
      fresh.push(emit(d, dev, tRead, d.fill + uniform(-0.4, 0.4)));
      const gap = Math.floor(uniform(200, 8000));
      if (d.fill >= SERVICE_AT && rand() < SERVICE_CHANCE) {
        d.fill = uniform(0, 3);
        trueServices[dev].push(m);
        fresh.push(emit(d, dev, tRead + gap, d.fill));
      } else if (rand() < EXTRA_READING || Math.floor(before / 25) !== Math.floor(d.fill / 25)) {
        fresh.push(emit(d, dev, tRead + gap, d.fill + uniform(-0.4, 0.4)));
      }
      trueFill[dev][m] = d.fill;

      // Connectivity.
      let reconnect = false;
      if (d.online && rand() < pOutage) {
        d.online = false;
        d.outageLeft = Math.min(120, 2 + Math.floor(-Math.log(1 - rand()) * 18));
        d.buffer = d.unconfirmed;
        d.unconfirmed = [];
      } else if (!d.online && --d.outageLeft <= 0) {
        d.online = true;
        reconnect = true;
      }

      // Deliveries: a due second flush, then the reconnect flush, then live readings.
      d.later = d.later.filter((f) => {
        if (f.at > m) return true;
        for (const r of f.copies) uplinks.push(copy(r));
        return false;
      });
      if (reconnect) {
        const flush = d.buffer;
        d.buffer = [];
        for (const r of flush) uplinks.push(copy(r));
        if (flush.length && rand() < pTwice) {
          d.later.push({ at: m + 5 + Math.floor(uniform(0, 85)), copies: flush });
        }
      }
      if (d.online) {
        for (const r of fresh) uplinks.push({ ...r, retransmit: false, corrupted: false });
        d.unconfirmed = d.unconfirmed.concat(fresh).slice(-UNCONFIRMED);
      } else {
        d.buffer.push(...fresh);
      }
    });
    ticks.push({ nowMs: t0 + TICK_MS, uplinks });
  }
  return { params, devices: devices.map((d) => d.id), ticks, trueFill, trueServices, trueSwaps, readings };
}

/**
 * The bin whose chart tells the story best: the one where replayed copies most often
 * drop the level it shows by SERVICE_DROP points or more (a full bin looking serviced), then
 * the one with the most retransmitted copies.
 */
export function telltaleBin(stream) {
  const score = new Array(stream.devices.length).fill(0);
  const last = new Array(stream.devices.length).fill(null);
  const delivered = new Set();
  for (const t of stream.ticks) {
    for (const u of t.uplinks) {
      if (u.retransmit) score[u.dev] += 1;
      if (u.corrupted) continue;
      if (delivered.has(u.rid) && last[u.dev] !== null && last[u.dev] - u.reading.fill_pct >= SERVICE_DROP) score[u.dev] += 1000;
      delivered.add(u.rid);
      last[u.dev] = u.reading.fill_pct;
    }
  }
  let best = 0;
  score.forEach((c, i) => {
    if (c > score[best]) best = i;
  });
  return best;
}
