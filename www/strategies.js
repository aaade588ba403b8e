// The three strategies fed the same simulated stream, and the ground truth they are
// judged against. Pure: the Wasm deduplicator is passed in, nothing touches the DOM.
import { SERVICE_DROP } from './sim.js';

/** The schema check every strategy applies first (the core's fill_pct rule). */
const validFill = (f) => typeof f === 'number' && Number.isFinite(f) && f >= 0 && f <= 100;

export const STRATEGIES = [
  { id: 'none', title: '1 · No dedupe', note: 'Every valid copy is passed on.' },
  { id: 'naive', title: '2 · Naive: device + timestamp', note: 'Drops a reading when its device and timestamp were seen.' },
  { id: 'wasm', title: '3 · reconnect-dedupe', note: 'Key = device, seq and a hash of the content; bounded TTL seen-set (Wasm).' },
];

function newTally(deviceCount) {
  return {
    passed: new Set(), // rids handed downstream at least once
    passes: 0, // readings handed downstream, copies included
    duplicatesPassed: 0, // passes of a rid already passed
    rejected: 0,
    falseServices: 0, // a passed duplicate dropped the level by SERVICE_DROP or more
    last: new Array(deviceCount).fill(null), // downstream's view: the last fill handed over
    series: Array.from({ length: deviceCount }, () => []), // [minute, fill, duplicate?] per pass
  };
}

function pass(tally, u, minute) {
  const fill = u.reading.fill_pct;
  const dup = tally.passed.has(u.rid);
  tally.passes++;
  if (dup) tally.duplicatesPassed++;
  else tally.passed.add(u.rid);
  const prev = tally.last[u.dev];
  if (dup && prev !== null && prev - fill >= SERVICE_DROP) tally.falseServices++;
  tally.last[u.dev] = fill;
  tally.series[u.dev].push([minute, fill, dup]);
}

/**
 * Steps a simulated stream through the three strategies.
 * `dedup` is a `Deduplicator` from the Wasm package (or anything with its
 * `processBurst` and `stats`).
 */
export function createRun(stream, dedup) {
  const n = stream.devices.length;
  const tallies = { none: newTally(n), naive: newTally(n), wasm: newTally(n) };
  const naiveSeen = new Set(); // device + timestamp, unbounded
  const truth = {
    copies: 0, // uplinks delivered
    retransmits: 0, // copies re-sent by a device (unconfirmed tail or buffer replays)
    replays: 0, // copies of a reading that had been delivered before
    corrupted: 0,
    intact: new Set(), // rids delivered intact at least once: the real readings to keep
    delivered: new Set(), // rids delivered at all
    services: 0,
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

    for (const u of uplinks) {
      if (!validFill(u.reading.fill_pct)) {
        tallies.none.rejected++;
        tallies.naive.rejected++;
        continue;
      }
      pass(tallies.none, u, minute);
      const key = `${u.reading.device_id}\u0000${u.reading.ts}`;
      if (!naiveSeen.has(key)) {
        naiveSeen.add(key);
        pass(tallies.naive, u, minute);
      }
    }

    const out = dedup.processBurst(burst, nowMs);
    for (const a of out.unique) pass(tallies.wasm, uplinks[a.index], minute);
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
