// The four strategies fed the same simulated stream, and the ground truth they are
// judged against. Pure: the Wasm deduplicator is passed in, nothing touches the DOM.
// Each strategy's rule is here and only here: the page and the tests run these.
import { SERVICE_DROP } from './sim.js';

/** The deduplicator's limits unless the page's form says otherwise: TTL in simulated minutes, max keys. */
export const DEDUP_DEFAULTS = { ttlMin: 360, maxKeys: 100_000 };

/** The schema check every strategy applies first (the core's fill_pct rule). */
const validFill = (f) => typeof f === 'number' && Number.isFinite(f) && f >= 0 && f <= 100;

/**
 * `key`: a keyed strategy's rule, the key its seen-set (unbounded, the run's whole
 * length) remembers; a reading whose key was seen is dropped. `none` passes every valid
 * copy; `wasm` is the core's `Deduplicator` (device, seq and a hash of the content).
 */
export const STRATEGIES = [
  { id: 'none', title: '1 · No dedupe', note: 'Every valid copy is passed on.' },
  {
    id: 'naive',
    title: '2 · Naive: device + timestamp',
    note: 'Drops a reading when its device and timestamp were seen: two real readings in one clock tick are one.',
    key: (r) => `${r.device_id}\u0000${r.ts}`,
  },
  {
    id: 'seq',
    title: '3 · Device + seq',
    note: 'Drops a reading when its device and seq were seen: after a battery swap the counter starts again, and new readings look like replays.',
    key: (r) => `${r.device_id}\u0000${r.seq}`,
  },
  { id: 'wasm', title: '4 · reconnect-dedupe', note: 'Key = device, seq and a hash of the content; bounded TTL seen-set (Wasm).', core: true },
];

function newTally(deviceCount) {
  return {
    passed: new Set(), // rids handed downstream at least once
    passes: 0, // readings handed downstream, copies included
    duplicatesPassed: 0, // passes of a rid already passed
    rejected: 0,
    falseServices: 0, // a passed duplicate dropped the level by SERVICE_DROP or more
    late: 0, // passes of a new reading older than one passed before (see `pass`)
    last: new Array(deviceCount).fill(null), // downstream's view: the last fill handed over
    newest: new Array(deviceCount).fill(-Infinity), // the latest device time handed over, ms
    series: Array.from({ length: deviceCount }, () => []), // [minute, fill, mark] per pass, mark 'dup' | 'late' | null
    dropped: new Set(), // rids a valid copy of which was dropped
    drops: Array.from({ length: deviceCount }, () => []), // [minute, fill, rid]: each rid's first drop
  };
}

/**
 * Hands a copy downstream. A new reading older than the newest handed over for its bin is
 * `late`: a replay brought it after newer ones (its first copies came corrupted), so a
 * planner that takes the last reading as the level sees a dip that a replay, not the bin, made.
 */
function pass(tally, u, minute) {
  const fill = u.reading.fill_pct;
  const dup = tally.passed.has(u.rid);
  const tMs = Date.parse(u.reading.ts);
  const late = !dup && tMs < tally.newest[u.dev];
  tally.passes++;
  if (dup) tally.duplicatesPassed++;
  else tally.passed.add(u.rid);
  if (late) tally.late++;
  const prev = tally.last[u.dev];
  if (dup && prev !== null && prev - fill >= SERVICE_DROP) tally.falseServices++;
  tally.last[u.dev] = fill;
  tally.newest[u.dev] = Math.max(tally.newest[u.dev], tMs);
  tally.series[u.dev].push([minute, fill, dup ? 'dup' : late ? 'late' : null]);
}

/** Drops a valid copy; its reading is lost if no copy of it is ever passed (`lostPoints`). */
function drop(tally, u, minute) {
  if (tally.dropped.has(u.rid)) return;
  tally.dropped.add(u.rid);
  tally.drops[u.dev].push([minute, u.reading.fill_pct, u.rid]);
}

/**
 * A bin's lost readings as `[minute, fill]`, where they were lost: the minute a strategy
 * first dropped one of their copies and the fill it carried. Every lost reading is one
 * (an intact copy is valid, so a strategy passed or dropped it).
 */
export function lostPoints(tally, dev) {
  return tally.drops[dev].filter(([, , rid]) => !tally.passed.has(rid)).map(([m, fill]) => [m, fill]);
}

/**
 * Steps a simulated stream through the four strategies.
 * `dedup` is a `Deduplicator` from the Wasm package (or anything with its
 * `processBurst` and `stats`).
 */
export function createRun(stream, dedup) {
  const n = stream.devices.length;
  const tallies = Object.fromEntries(STRATEGIES.map((s) => [s.id, newTally(n)]));
  const keyed = STRATEGIES.filter((s) => s.key).map((s) => ({ ...s, seen: new Set(), tally: tallies[s.id] }));
  const truth = {
    copies: 0, // uplinks delivered
    retransmits: 0, // copies re-sent by a device (unconfirmed tail or buffer replays)
    replays: 0, // copies of a reading that had been delivered before
    corrupted: 0,
    intact: new Set(), // rids delivered intact at least once: the real readings to keep
    delivered: new Set(), // rids delivered at all
    services: 0,
    swaps: 0, // battery swaps: the bin's seq back to 0
  };
  const core = { received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, seq_reuses: 0, evicted_before_ttl: 0 };
  const audits = [];
  let minute = 0;

  function step() {
    if (minute >= stream.ticks.length) return null;
    const { nowMs, uplinks } = stream.ticks[minute];
    const burst = uplinks.map((u) => u.reading);

    for (const u of uplinks) {
      truth.copies++;
      if (u.retransmit) truth.retransmits++;
      if (truth.delivered.has(u.rid)) truth.replays++;
      truth.delivered.add(u.rid);
      if (u.corrupted) truth.corrupted++;
      else truth.intact.add(u.rid);
    }
    for (const d of stream.trueServices) for (const s of d) if (s === minute) truth.services++;
    for (const d of stream.trueSwaps) for (const s of d) if (s === minute) truth.swaps++;

    for (const u of uplinks) {
      if (!validFill(u.reading.fill_pct)) {
        tallies.none.rejected++;
        for (const s of keyed) s.tally.rejected++;
        continue;
      }
      pass(tallies.none, u, minute);
      for (const s of keyed) {
        const key = s.key(u.reading);
        if (s.seen.has(key)) drop(s.tally, u, minute);
        else {
          s.seen.add(key);
          pass(s.tally, u, minute);
        }
      }
    }

    const out = dedup.processBurst(burst, nowMs);
    for (const a of out.unique) pass(tallies.wasm, uplinks[a.index], minute);
    for (const i of out.duplicates) drop(tallies.wasm, uplinks[i], minute);
    tallies.wasm.rejected += out.rejected.length;
    for (const [k, v] of Object.entries(out.audit.payload)) core[k] += v;
    audits.push(JSON.stringify(out.audit));
    if (audits.length > 50) audits.shift();

    minute++;
    return { minute: minute - 1, nowMs, burst, out };
  }

  /** The headline numbers of each strategy against the ground truth so far. */
  function summary() {
    const result = {};
    for (const [id, t] of Object.entries(tallies)) {
      result[id] = {
        passes: t.passes,
        duplicatesPassed: t.duplicatesPassed,
        // Only intact copies pass, so every passed rid is an intact one.
        lost: truth.intact.size - t.passed.size,
        rejected: t.rejected,
        falseServices: t.falseServices,
        late: t.late,
      };
    }
    return result;
  }

  return {
    stream,
    tallies,
    truth,
    core,
    audits,
    step,
    summary,
    get minute() {
      return minute;
    },
    get done() {
      return minute >= stream.ticks.length;
    },
    stats: () => dedup.stats(),
  };
}

/**
 * Compares the in-browser outcome of a burst with the worker's reply to the same
 * burst. Returns a list of differences (empty when they agree).
 */
export function compareWithWorker(local, reply) {
  const diffs = [];
  const want = {
    received: local.audit.payload.received,
    unique: local.unique.length,
    duplicates_suppressed: local.duplicates_suppressed,
    rejected: local.rejected.map((r) => `${r.index}:${r.code}`).join(','),
    duplicates: local.duplicates.join(','),
    admitted: local.unique.map((u) => u.index).join(','),
  };
  const got = {
    received: reply.received,
    unique: Array.isArray(reply.unique) ? reply.unique.length : reply.unique,
    duplicates_suppressed: reply.duplicates_suppressed,
    rejected: Array.isArray(reply.rejected) ? reply.rejected.map((r) => `${r.index}:${r.code}`).join(',') : undefined,
    duplicates: Array.isArray(reply.duplicates) ? reply.duplicates.join(',') : undefined,
    admitted: Array.isArray(reply.admitted) ? reply.admitted.map((a) => a.index).join(',') : undefined,
  };
  for (const k of Object.keys(want)) {
    if (got[k] === undefined && !['received', 'unique', 'duplicates_suppressed'].includes(k)) continue; // a detail the reply leaves out
    if (String(got[k]) !== String(want[k])) diffs.push(`${k}: browser ${want[k]}, worker ${got[k]}`);
  }
  return diffs;
}
