// The chosen bin's sequence health, as the worker keeps it for a sensor dated by its
// own clock (an EM500-UDL's history records): each reading's slot of the reporting
// period fed into the core's SeqWindow (Wasm), the gaps that opens and closes, and a
// simulated backfill — a Milesight history-retrieval downlink (the core's
// `historyRequest`) for a gap left open too long, answered by the simulated sensor
// with the records it still holds, which go through the core's Deduplicator like any
// other reading. Pure: the Wasm package is passed in, nothing touches the DOM, time is
// the simulation's.

/** The simulation's reporting period: one reading a minute, so one slot a minute. */
export const PERIOD_S = 60;
/** The panel's settings, with defaults and ranges (normalizeParams in sim.js reads them). */
export const GAP_PARAMS = {
  backfillMin: { def: 30, min: 1, max: 1440 }, // a gap open this long gets a history-retrieval downlink
  historyRecords: { def: 120, min: 0, max: 100_000 }, // the records the sensor keeps, newest
};

/** A reading's device time in whole unix seconds (its `ts`). */
export const deviceSeconds = (reading) => Math.floor(Date.parse(reading.ts) / 1000);
/** A reading's slot: floor(device time in seconds / reporting period). */
export const slotOf = (reading, periodS = PERIOD_S) => Math.floor(deviceSeconds(reading) / periodS);

/** The device-time seconds the slots `from ..= to` cover: [from × period, (to + 1) × period − 1]. */
export function slotSeconds(from, to, periodS = PERIOD_S) {
  return { startS: from * periodS, endS: (to + 1) * periodS - 1 };
}

/** The simulated sensor's codec: the one whose history request the backfill sends. */
export const CODEC = 'milesight-iot/em500-udl';

/** The history-retrieval downlink for `startS ..= endS` as the core writes it: `{port, hex}`. */
export function historyDownlink(core, startS, endS) {
  const bytes = core.historyRequest(CODEC, startS, endS);
  return { port: core.limits().codecInfo[CODEC].historyFPort, hex: Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('') };
}

/** How many seqs of `from ..= to` the gaps list as missing. */
function missingIn(gaps, from, to) {
  let n = 0;
  for (const g of gaps) n += Math.max(0, Math.min(to, g.to) - Math.max(from, g.from) + 1);
  return n;
}

/**
 * One bin's sequence health over a simulated stream (sim.js), stepped minute by minute
 * like the run (strategies.js). `core` is the Wasm package (its `SeqWindow`,
 * `Deduplicator`, `historyRequest` and `limits`); the deduplicator is this bin's own, as a device object of the worker keeps
 * one per device (`dedupOptions` as the run's).
 *
 * Each minute: the bin's copies go through `processBurst`; each admitted or duplicate
 * one feeds its slot to the window (a rejected one never: the worker's rule). A
 * `recovered` slot is closed by a `replay` (a retransmitted copy) or the `backfill`.
 * Then the backfill: a request queued earlier goes out after the bin's next uplink
 * (Class A: a downlink rides on the receive window of an uplink) and the sensor's
 * answer arrives that minute — the records of the range among the `historyRecords`
 * it made last; records older than that are gone, and the gap stays open, unanswered.
 * With no request open, the lowest gap open at least `backfillMin` minutes that no
 * earlier request covered gets one: at most one open request per device.
 */
export function createBinHealth({ stream, dev, core, dedupOptions, backfillMin, historyRecords }) {
  const { SeqWindow, Deduplicator } = core;
  const seqWindow = new SeqWindow();
  const dedup = new Deduplicator(dedupOptions);
  const made = stream.readings.filter((r) => r.dev === dev); // what the sensor measured, in order
  const backfillMs = backfillMin * 60_000;
  const events = []; // { kind: 'opened' | 'recovered' | 'reset', from, to, minute, atMs, ... }, oldest first
  const requests = []; // every history-retrieval downlink, oldest first
  const verdicts = { admitted: 0, duplicate: 0, rejected: 0 };
  const recoveredBy = { live: 0, replay: 0, backfill: 0 }; // slots each source closed
  let madeSoFar = 0; // readings the sensor had made by the current minute's end
  let minute = 0;

  /** Feeds one slot to the window and records what it opened, closed or reset. */
  function observe(slot, by, nowMs) {
    const before = seqWindow.highest;
    const seen = seqWindow.observe(slot, nowMs);
    if (seen.kind === 'recovered') {
      recoveredBy[by]++;
      const last = events.at(-1);
      if (last?.kind === 'recovered' && last.minute === minute && last.by === by && last.to === slot - 1) {
        last.to = slot;
        last.delayMs = Math.max(last.delayMs, seen.delay_ms);
      } else {
        events.push({ kind: 'recovered', from: slot, to: slot, by, delayMs: seen.delay_ms, minute, atMs: nowMs });
      }
      return seen;
    }
    if (seen.kind === 'reset') events.push({ kind: 'reset', from: seen.from, to: seen.to, minute, atMs: nowMs });
    if (seen.kind === 'new' && before !== undefined && slot > before + 1) {
      // The jump opened one gap, up to the slot below this one: the core's.
      const g = seqWindow.gaps().find((gap) => gap.to === slot - 1);
      if (g) events.push({ kind: 'opened', from: g.from, to: g.to, minute, atMs: nowMs });
    }
    return seen;
  }

  /** One burst of the bin's copies (`{ reading, by }`): deduplicated, then fed to the window. */
  function feed(copies, nowMs) {
    const out = dedup.processBurst(copies.map((c) => c.reading), nowMs);
    const verdict = copies.map(() => 'rejected');
    for (const a of out.unique) verdict[a.index] = 'admitted';
    for (const i of out.duplicates) verdict[i] = 'duplicate';
    const closed = [];
    copies.forEach((c, i) => {
      verdicts[verdict[i]]++;
      if (verdict[i] === 'rejected') return;
      const slot = slotOf(c.reading);
      if (observe(slot, c.by, nowMs).kind === 'recovered') closed.push(slot);
    });
    return { verdict, closed };
  }

  /** The sensor's answer to `req`: the records of its range that it still holds. */
  function answer(req, nowMs) {
    const oldestHeld = Math.max(0, madeSoFar - historyRecords);
    const inRange = (r) => {
      const s = deviceSeconds(r.reading);
      return s >= req.startS && s <= req.endS;
    };
    const held = made.slice(oldestHeld, madeSoFar).filter(inRange);
    const gone = made.slice(0, oldestHeld).filter(inRange).length;
    const { verdict, closed } = feed(held.map((r) => ({ reading: r.reading, by: 'backfill' })), nowMs);
    const stillMissing = missingIn(seqWindow.gaps(), req.from, req.to);
    req.answer = {
      minute,
      atMs: nowMs,
      records: held.map((r, i) => ({ slot: slotOf(r.reading), ts: r.reading.ts, fill: r.reading.fill_pct, verdict: verdict[i] })),
      gone,
      closed,
      stillMissing,
    };
    req.status = stillMissing ? 'unanswered' : 'answered';
  }

  /** Queues a request for the lowest gap due and not asked for before, if there is one. */
  function request(nowMs) {
    const due = seqWindow
      .gaps()
      .find((g) => nowMs - g.first_noticed_ms >= backfillMs && !requests.some((r) => r.from <= g.from && g.to <= r.to));
    if (!due) return;
    const { startS, endS } = slotSeconds(due.from, due.to);
    requests.push({
      id: requests.length + 1,
      minute,
      atMs: nowMs,
      from: due.from,
      to: due.to,
      noticedMs: due.first_noticed_ms,
      startS,
      endS,
      ...historyDownlink(core, startS, endS),
      status: 'waiting',
      answer: null,
    });
  }

  function step() {
    if (minute >= stream.ticks.length) return false;
    const { nowMs, uplinks } = stream.ticks[minute];
    while (madeSoFar < made.length && made[madeSoFar].tMs < nowMs) madeSoFar++;
    const mine = uplinks.filter((u) => u.dev === dev);
    if (mine.length) feed(mine.map((u) => ({ reading: u.reading, by: u.retransmit ? 'replay' : 'live' })), nowMs);
    const open = requests.find((r) => r.status === 'waiting');
    if (open && open.minute < minute && mine.length) answer(open, nowMs);
    if (!requests.some((r) => r.status === 'waiting')) request(nowMs);
    minute++;
    return true;
  }

  /** What the panel shows; every gap with the request that covers it, if any. */
  function view() {
    const gaps = seqWindow.gaps().map((g) => ({
      ...g,
      request: requests.find((r) => r.from <= g.from && g.to <= r.to) ?? null,
    }));
    return {
      dev,
      minute,
      nowMs: minute ? stream.ticks[minute - 1].nowMs : null, // the last minute stepped, at its end
      highest: seqWindow.highest,
      gaps,
      totals: seqWindow.totals(),
      events,
      requests,
      verdicts,
      recoveredBy,
      backfillMs,
      historyRecords,
    };
  }

  return {
    step,
    view,
    get minute() {
      return minute;
    },
    free() {
      seqWindow.free();
      dedup.free();
    },
  };
}
