// The chosen bin as the route planner sees it from the worker (docs/bin-state.md): each
// admitted reading fed, in arrival order, to the core's FillTracker (Wasm), which keeps
// the bin's state by device time, marks late readings and confirms collections; next to
// it, what a planner taking "the last reading received" as the level would have seen,
// and the bin's real services (the simulation's ground truth). Pure: the Wasm package is
// passed in, nothing touches the DOM, time is the simulation's.
import { SERVICE_DROP, START_MS, TICK_MS } from './sim.js';

/**
 * The fall, in percentage points, that makes a collection: the worker's
 * COLLECTION_DROP_PCT default (src/worker/variables.js), which is the simulation's own
 * "serviced" drop (a test holds the three equal).
 */
export const THRESHOLD_PCT = SERVICE_DROP;

/**
 * One bin's state and collections over a simulated stream (sim.js), stepped minute by
 * minute like the run. `core` is the Wasm package (its `Deduplicator` and `FillTracker`);
 * the deduplicator is this bin's own, as a group object of the worker keeps one per
 * device (`dedupOptions` as the run's).
 *
 * Each minute the bin's copies go through `processBurst`; each admitted reading goes to
 * the tracker (newest or late by device time, a collection confirmed by the reading
 * after the fall) and to the "last received" view, where any fall of THRESHOLD_PCT or
 * more from the reading received before is a collection as that planner would count it.
 * Each collection, the tracker's or that view's, names the real service between its two
 * readings' device times (`service`, its minute), or null. One of that view's is a
 * `phantom` when it is a fall to a late reading (a replay of an older level arriving
 * after a newer one: it may even span a real service, which the bin's newest readings
 * showed already), a fall with no service behind it (a glitch), or a fall whose only
 * service an earlier fall of that view showed already (a fall from a replayed level
 * across it): that planner counts each real service at most once.
 */
export function createBinState({ stream, dev, core, dedupOptions, thresholdPct = THRESHOLD_PCT }) {
  const dedup = new core.Deduplicator(dedupOptions);
  const tracker = new core.FillTracker(thresholdPct);
  const services = stream.trueServices[dev];
  const collections = []; // the tracker's, oldest first: { before, after, minute, service }
  const lastReceived = []; // "last received" falls: { from, to, minute, late, phantom }
  const glitches = []; // minutes a suspected fall was shown to be a glitch
  let last = null; // the last admitted reading, in arrival order: { ts, fill_pct }
  let late = 0;
  let admitted = 0;
  let minute = 0;

  const claimed = new Set(); // the services "last received" falls have shown

  /**
   * The real service a collection's device-time bounds hold, as the minute it happened
   * (the latest of them not in `taken`), or null.
   */
  function serviceWithin(beforeTs, afterTs, taken = new Set()) {
    const from = Date.parse(beforeTs);
    const to = Date.parse(afterTs);
    return services.findLast((m) => START_MS + (m + 1) * TICK_MS > from && START_MS + m * TICK_MS <= to && !taken.has(m)) ?? null;
  }

  function step() {
    if (minute >= stream.ticks.length) return false;
    const { nowMs, uplinks } = stream.ticks[minute];
    const mine = uplinks.filter((u) => u.dev === dev).map((u) => u.reading);
    if (mine.length) {
      const out = dedup.processBurst(mine, nowMs);
      // The tracker takes one burst's readings in device-time order, as the worker does
      // (they arrive together); "last received" takes them as they came.
      const seenOf = new Map();
      for (const r of [...out.unique].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts))) {
        const seen = tracker.observe(r.ts, r.fill_pct, r.key);
        seenOf.set(r.key, seen);
        if (seen.glitch) glitches.push(minute);
        if (seen.collection) {
          const { before, after } = seen.collection;
          collections.push({ before, after, minute, service: serviceWithin(before.ts, after.ts) });
        }
      }
      for (const r of out.unique) {
        // normalised, as admitted
        const seen = seenOf.get(r.key);
        admitted++;
        if (seen.arrival === 'late') late++;
        if (last && last.fill_pct - r.fill_pct >= thresholdPct) {
          // A fall to a late reading is to an older level, never a new emptying; a fall
          // from one (a replayed level) may span a service an earlier fall showed already.
          const isLate = seen.arrival === 'late';
          const service = isLate ? null : serviceWithin(last.ts, r.ts, claimed);
          if (service !== null) claimed.add(service);
          lastReceived.push({ from: last, to: { ts: r.ts, fill_pct: r.fill_pct }, minute, late: isLate, service, phantom: service === null });
        }
        last = { ts: r.ts, fill_pct: r.fill_pct };
      }
    }
    minute++;
    return true;
  }

  /** What the panel shows, up to the last minute stepped. */
  function view() {
    const state = tracker.state();
    return {
      dev,
      minute,
      thresholdPct,
      state, // the tracker's: newest, previous, suspected, period_s
      lastReceived: last,
      collections,
      lastReceivedFalls: lastReceived,
      phantoms: lastReceived.filter((f) => f.phantom).length,
      services: services.filter((m) => m < minute),
      glitches,
      late,
      admitted,
    };
  }

  /** Steps every minute before `upto` not stepped yet (the run's minute: the page catches up). */
  function stepTo(upto) {
    while (minute < upto && step());
  }

  const free = () => {
    tracker.free();
    dedup.free();
  };
  return { step, stepTo, view, free };
}
