// The page: controls, playback, rendering and the worker switch. The simulation
// (sim.js), the scoring (strategies.js), the chart bin's gaps and backfill (gaps.js)
// and its state and collections (bin-state.js) are pure and live elsewhere.
import init, * as core from './pkg/reconnect_dedupe.js';
import { PARAMS, START_MS, TICK_MS, simulate, telltaleBin, normalizeParams } from './sim.js';
import { DEDUP_DEFAULTS, STRATEGIES, createRun, compareWithWorker, lostPoints } from './strategies.js';
import { GAP_PARAMS, PERIOD_S, createBinHealth } from './gaps.js';
import { createBinState } from './bin-state.js';
import { MARKS, chartSvg, markSvg } from './chart.js';
import { el } from './dom.js';

const { Deduplicator } = core;

const $ = (id) => document.getElementById(id);
const fmt = (n) => Number(n).toLocaleString('en-US');
const PLAY_INTERVAL_MS = 40;

let run = null; // the current run (strategies.js)
let health = null; // the chart bin's sequence health (gaps.js), stepped up to the run's minute
let binState = null; // the chart bin's state and collections (bin-state.js), likewise
let dedupOptions = null; // the run's deduplicator limits, which the bin's own deduplicator shares
let timer = null;
let busy = false; // a step (possibly awaiting the worker) is in flight
let runTag = ''; // device-id prefix for the worker, new per run
const workerLog = [];
let workerAgree = 0;
let workerDiffer = 0;

// ---------- parameters --------------------------------------------------------

/** The form's values of the parameters in `specs`, clamped into their ranges. */
function formParams(specs) {
  const f = $('params').elements;
  const p = {};
  for (const name of Object.keys(specs)) p[name] = f[name].value;
  return normalizeParams(p, specs);
}

function readForm() {
  const f = $('params').elements;
  return { sim: formParams(PARAMS), ttlMin: Number(f.ttlMin.value), maxKeys: Number(f.maxKeys.value) };
}

function writeForm({ sim, ttlMin, maxKeys, gap }) {
  const f = $('params').elements;
  for (const [name, value] of Object.entries({ ...sim, ...gap })) f[name].value = String(value);
  f.ttlMin.value = String(ttlMin);
  f.maxKeys.value = String(maxKeys);
  showRangeValues();
}

function showRangeValues() {
  for (const out of document.querySelectorAll('output[for]')) {
    out.textContent = `${$(out.htmlFor.value).value} ${out.dataset.unit}`;
  }
}

/** Initial values: defaults, overridden by the query string (?seed=7&fleet=20&backfillMin=20...). */
function initialValues() {
  const q = new URLSearchParams(location.search);
  const fromQuery = (specs) => {
    const p = {};
    for (const name of Object.keys(specs)) if (q.has(name)) p[name] = q.get(name);
    return normalizeParams(p, specs);
  };
  const num = (k) => (q.has(k) ? Number(q.get(k)) : DEDUP_DEFAULTS[k]);
  return { sim: fromQuery(PARAMS), ttlMin: num('ttlMin'), maxKeys: num('maxKeys'), gap: fromQuery(GAP_PARAMS) };
}

// ---------- run lifecycle -----------------------------------------------------

function reset() {
  pause();
  const { sim, ttlMin, maxKeys } = readForm();
  let dedup;
  try {
    dedupOptions = { ttlMs: Math.round(ttlMin * 60_000), maxKeys };
    dedup = new Deduplicator(dedupOptions);
    $('config-error').hidden = true;
  } catch (e) {
    $('config-error').textContent = `The deduplicator refused this configuration (${e.code}): ${e.message}`;
    $('config-error').hidden = false;
    dedupOptions = { ttlMs: DEDUP_DEFAULTS.ttlMin * 60_000, maxKeys: DEDUP_DEFAULTS.maxKeys };
    dedup = new Deduplicator(dedupOptions);
  }
  if (run) run.free?.();
  const stream = simulate(sim);
  run = createRun(stream, dedup);
  run.free = () => dedup.free();
  runTag = `r${Date.now().toString(36)}`;
  workerLog.length = 0;
  workerAgree = workerDiffer = 0;
  fillBinSelect(stream);
  buildCards();
  newHealth();
  newBinState();
  document.body.dataset.run = 'idle';
  render();
}

/** A new sequence health for the chart bin; render() steps it up to the run's minute. */
function newHealth() {
  health?.free();
  health = createBinHealth({
    stream: run.stream,
    dev: Number($('bin').value) || 0,
    core,
    dedupOptions,
    ...formParams(GAP_PARAMS),
  });
}

/** A new state of the chart bin; render() steps it up to the run's minute. */
function newBinState() {
  binState?.free();
  binState = createBinState({ stream: run.stream, dev: Number($('bin').value) || 0, core, dedupOptions });
}

function fillBinSelect(stream) {
  const sel = $('bin');
  const pick = telltaleBin(stream);
  sel.replaceChildren(
    ...stream.devices.map((id, i) => new Option(i === pick ? `${id} (most telling)` : id, String(i), i === pick, i === pick)),
  );
}

async function stepOnce() {
  const res = run.step();
  if (res && $('useWorker').checked) await sendToWorker(res);
  return res;
}

async function advance(n) {
  if (busy) return;
  busy = true;
  try {
    for (let i = 0; i < n && !run.done; i++) await stepOnce();
  } catch (e) {
    pause();
    showLoadError(`Step failed: ${e.message}`);
  } finally {
    busy = false;
  }
  if (run.done) {
    pause();
    document.body.dataset.run = 'done';
  }
  render();
}

function play() {
  if (run.done) return;
  $('play').textContent = 'Pause';
  $('play').setAttribute('aria-pressed', 'true');
  document.body.dataset.run = 'playing';
  const tick = async () => {
    await advance(1);
    if (timer !== null && !run.done) timer = setTimeout(tick, PLAY_INTERVAL_MS);
  };
  timer = setTimeout(tick, 0);
}

function pause() {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  $('play').textContent = 'Play';
  $('play').setAttribute('aria-pressed', 'false');
  if (run && !run.done) document.body.dataset.run = 'idle';
}

/** Runs up to `minute` (every remaining one by default); resolves with the summary then. */
async function runTo(minute = Infinity) {
  pause();
  while (busy) await new Promise((r) => setTimeout(r, 0));
  await advance(minute - run.minute);
  return snapshot();
}
const runToEnd = () => runTo();

// ---------- the worker switch -------------------------------------------------

async function sendToWorker({ minute, burst, out }) {
  const body = JSON.stringify(burst.map((r) => ({ ...r, device_id: `${runTag}/${r.device_id}` })));
  let text;
  let status;
  try {
    const res = await fetch('/v1/readings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${$('token').value}` },
      body,
    });
    status = res.status;
    text = await res.text();
  } catch (e) {
    return workerFailed(`the request failed (${e.message}). Is the page served by the worker (npm start)?`);
  }
  let reply;
  try {
    reply = JSON.parse(text);
  } catch {
    return workerFailed(`HTTP ${status}, not JSON. Is the page served by the worker (npm start)?`);
  }
  if (status !== 200) return workerFailed(`HTTP ${status}: ${reply.error?.code ?? reply.code ?? text.slice(0, 120)}`);
  const diffs = compareWithWorker(out, reply);
  if (diffs.length) workerDiffer++;
  else workerAgree++;
  const p = out.audit.payload;
  workerLog.push(
    `minute ${minute}: browser received ${p.received} unique ${p.unique} dup ${p.duplicates_suppressed} rejected ${p.rejected}` +
      ` | worker received ${reply.received} unique ${Array.isArray(reply.unique) ? reply.unique.length : reply.unique}` +
      ` dup ${reply.duplicates_suppressed} rejected ${Array.isArray(reply.rejected) ? reply.rejected.length : reply.rejected}` +
      (diffs.length ? `  DIFFER: ${diffs.join('; ')}` : '  agree'),
  );
  if (workerLog.length > 12) workerLog.shift();
}

function workerFailed(why) {
  $('useWorker').checked = false;
  $('worker-status').textContent = `Worker switched off: ${why}`;
  $('worker-panel').hidden = false;
}

// ---------- rendering -----------------------------------------------------------

function buildCards() {
  $('cards').replaceChildren(
    ...STRATEGIES.map((s) => {
      const card = document.createElement('article');
      card.className = `card ${s.id}`;
      card.setAttribute('aria-labelledby', `h-${s.id}`);
      card.innerHTML =
        `<h3 id="h-${s.id}">${s.title}</h3><p class="note">${s.note}</p>` +
        `<div class="big"><div><span class="num" data-stat="${s.id}-dups">0</span><span class="lbl">duplicates passed</span></div>` +
        `<div><span class="num" data-stat="${s.id}-lost">0</span><span class="lbl">real readings lost</span></div></div>` +
        `<p class="small" data-stat="${s.id}-passes"></p><div class="chart" data-chart="${s.id}"></div>` +
        `<p class="small marks" data-stat="${s.id}-bin"></p>`;
      return card;
    }),
  );
}

/** The charts' legend, each mark drawn as the charts draw it (chart.js owns both). */
function buildLegend() {
  $('legend').innerHTML = Object.entries(MARKS)
    .map(([kind, text]) => `<span class="item" data-mark="${kind}">${markSvg(kind)} ${text}</span>`)
    .join('');
}

/** One strategy's marks on the chart bin: its lost readings, for the chart, and the line that counts every mark. */
function binMarks(s, dev, bin) {
  const t = run.tallies[s.id];
  const series = t.series[dev];
  const n = (mark) => series.filter((p) => p[2] === mark).length;
  const lost = lostPoints(t, dev);
  return {
    lost,
    text: `On ${bin}: ${plural(lost.length, 'real reading')} lost (×), ${plural(n('dup'), 'duplicate')} passed (●), ${plural(n('late'), 'late arrival')} (◆).`,
  };
}

function setNum(el, value) {
  el.textContent = fmt(value);
  el.classList.toggle('bad', value > 0);
}

function dl(el, rows) {
  el.replaceChildren(
    ...rows.flatMap(([label, value, key, title]) => {
      const dt = document.createElement('dt');
      dt.textContent = label;
      if (title) dt.title = title;
      const dd = document.createElement('dd');
      dd.textContent = typeof value === 'number' ? fmt(value) : value;
      if (key) dd.dataset.counter = key;
      return [dt, dd];
    }),
  );
}

function logList(ol, lines) {
  ol.replaceChildren(
    ...lines.map((line) => {
      const li = document.createElement('li');
      li.textContent = line;
      return li;
    }),
  );
}

function render() {
  if (!run) return;
  while (health.minute < run.minute) health.step();
  binState.stepTo(run.minute);
  const { stream, truth, core } = run;
  const minutes = stream.params.minutes;
  const now = START_MS + run.minute * TICK_MS;
  $('clock').textContent = `minute ${run.minute} / ${minutes} · ${new Date(now).toISOString().slice(11, 16)} UTC`;
  $('progress-bar').style.width = `${(100 * run.minute) / minutes}%`;
  $('step').disabled = $('toEnd').disabled = $('play').disabled = run.done;

  const sum = run.summary();
  const dev = Number($('bin').value) || 0;
  for (const s of STRATEGIES) {
    const r = sum[s.id];
    setNum(document.querySelector(`[data-stat="${s.id}-dups"]`), r.duplicatesPassed);
    setNum(document.querySelector(`[data-stat="${s.id}-lost"]`), r.lost);
    document.querySelector(`[data-stat="${s.id}-passes"]`).textContent =
      `${fmt(r.passes)} readings passed · ${fmt(r.rejected)} rejected · ` +
      `a replay made a bin look serviced ${fmt(r.falseServices)}×`;
    const marks = binMarks(s, dev, stream.devices[dev]);
    document.querySelector(`[data-stat="${s.id}-bin"]`).textContent = marks.text;
    document.querySelector(`[data-chart="${s.id}"]`).innerHTML = chartSvg({
      truth: stream.trueFill[dev],
      points: run.tallies[s.id].series[dev],
      lost: marks.lost,
      upto: run.minute,
      minutes,
      startMs: START_MS,
      tickMs: TICK_MS,
      label: `Fill level of ${stream.devices[dev]} as ${s.title} hands it downstream`,
    });
  }

  dl($('truth'), [
    ['copies delivered', truth.copies, 'copies'],
    ['replays (copy of a reading already delivered)', truth.replays, 'replays'],
    ['corrupted copies', truth.corrupted, 'corrupted'],
    ['real readings arrived intact', truth.intact.size, 'intact'],
    ['real readings only seen corrupted', truth.delivered.size - truth.intact.size, 'corrupt-only'],
    ['bins really serviced', truth.services, 'services'],
    ['battery swaps (seq back to 0)', truth.swaps, 'swaps', 'the readings after a swap reuse seqs a device + seq key has seen'],
  ]);

  const st = run.stats();
  dl($('counters'), [
    ['received', core.received, 'received'],
    ['unique', core.unique, 'unique'],
    ['duplicates_suppressed', core.duplicates_suppressed, 'duplicates_suppressed'],
    ['rejected', core.rejected, 'rejected'],
    ['seq_reuses', core.seq_reuses, 'seq_reuses', 'a battery swap reset the counter'],
    ['keys held', st.keys, 'keys'],
    ['bytes held', st.memory_bytes, 'memory_bytes'],
    ['evicted_before_ttl', st.evicted_before_ttl, 'evicted_before_ttl', 'pushed out by max keys: raise the cap'],
    ['expired (TTL)', st.expired, 'expired'],
  ]);
  document.querySelector('[data-counter="evicted_before_ttl"]').classList.toggle('bad', st.evicted_before_ttl > 0);
  const ok = core.received === core.unique + core.duplicates_suppressed + core.rejected;
  const rec = $('reconcile');
  rec.textContent = `${ok ? '✓' : '✗'} received ${fmt(core.received)} = unique ${fmt(core.unique)} + duplicates_suppressed ${fmt(core.duplicates_suppressed)} + rejected ${fmt(core.rejected)}`;
  rec.classList.toggle('bad', !ok);

  logList($('audit'), run.audits.slice(-8));

  renderHealth();
  renderBinState();

  if ($('useWorker').checked || workerLog.length) {
    $('worker-panel').hidden = false;
    if (workerLog.length)
      $('worker-status').textContent = `${workerAgree} bursts agree, ${workerDiffer} differ (worker limits must match the TTL and max keys here).`;
    logList($('worker-log'), workerLog);
  }
}

// ---------- the chart bin's gaps and backfill ----------------------------------

const hhmm = (ms) => new Date(ms).toISOString().slice(11, 16);
const hhmmss = (ms) => new Date(ms).toISOString().slice(11, 19);
const slotMs = (slot) => slot * PERIOD_S * 1000;
const plural = (n, word) => `${fmt(n)} ${word}${n === 1 ? '' : 's'}`;
const mins = (ms) => `${fmt(Math.round(ms / 60_000))} min`;
/** Slots `from ..= to` as the device times they start at: "06:29" or "06:01 to 06:06". */
const slotsLabel = (from, to) => (from === to ? hhmm(slotMs(from)) : `${hhmm(slotMs(from))} to ${hhmm(slotMs(to))}`);
const slotNumbers = (from, to) => (from === to ? `slot ${from}` : `slots ${from}–${to}`);
const BY = { replay: 'a replayed copy', backfill: 'the backfill', live: 'a live reading' };
const STATUS = { waiting: 'waiting', answered: 'answered', unanswered: 'unanswered' };

/** What an open gap's backfill is at: its request's status, or when it is due. */
function gapBackfill(g, v) {
  const r = g.request;
  if (r?.status === 'waiting') return `requested (#${r.id} at ${hhmm(r.atMs)}), waiting for the bin's next uplink`;
  if (r) return `unanswered (#${r.id}): the sensor no longer holds ${plural(r.answer.stillMissing, 'slot')} of it`;
  const left = v.backfillMs - (v.nowMs - g.first_noticed_ms);
  return left > 0 ? `due in ${mins(left)}` : 'due: after the open request';
}

function gapRow(g, v) {
  const td = (text, className = '') => el('td', { className }, text);
  const tr = el(
    'tr',
    {},
    el('th', { scope: 'row' }, slotsLabel(g.from, g.to)),
    td(slotNumbers(g.from, g.to), 'key'),
    td(fmt(g.to - g.from + 1), 'n'),
    td(hhmm(g.first_noticed_ms)),
    td(mins(v.nowMs - g.first_noticed_ms), 'n'),
    td(gapBackfill(g, v), 'backfill'),
  );
  tr.dataset.gap = `${g.from}-${g.to}`;
  return tr;
}

function requestItem(r, v) {
  const li = el(
    'li',
    { className: `request ${r.status}` },
    el('p', {}, el('strong', {}, `#${r.id} · ${hhmm(r.atMs)} · fPort ${r.port} `), el('code', { className: 'hex' }, r.hex)),
    el('p', { className: 'small' },
      `${slotNumbers(r.from, r.to)}: device time ${hhmmss(r.startS * 1000)}–${hhmmss(r.endS * 1000)} UTC ` +
        `(start ${r.startS}, end ${r.endS}, u32 little-endian after fd 6c)`),
  );
  li.dataset.request = String(r.id);
  li.dataset.status = r.status;
  const status = el('p', { className: 'status' }, el('strong', {}, STATUS[r.status]), ': ');
  if (!r.answer) {
    status.append("queued; it goes out after the bin's next uplink (Class A), the answer follows");
  } else {
    const a = r.answer;
    const held = a.records.map((x) => `${hhmmss(Date.parse(x.ts))} ${x.fill} % ${x.verdict}`);
    status.append(
      `the sensor answered at ${hhmm(a.atMs)} with ${plural(a.records.length, 'record')}` +
        (held.length ? ` (${held.slice(0, 6).join('; ')}${held.length > 6 ? '; …' : ''})` : '') +
        (a.gone ? `; ${fmt(a.gone)} gone from the sensor (it keeps its last ${fmt(v.historyRecords)})` : '') +
        `; closed ${a.closed.length ? a.closed.map((s) => hhmm(slotMs(s))).join(', ') : 'nothing'}` +
        (a.stillMissing ? `; ${plural(a.stillMissing, 'slot')} of the range still missing` : ''),
    );
  }
  li.append(status);
  return li;
}

function eventText(e) {
  const at = hhmm(e.atMs);
  if (e.kind === 'opened') return `${at} gap opened: ${slotsLabel(e.from, e.to)} (${slotNumbers(e.from, e.to)}), ${plural(e.to - e.from + 1, 'slot')} missing`;
  if (e.kind === 'recovered')
    return `${at} recovered ${slotsLabel(e.from, e.to)} (${slotNumbers(e.from, e.to)}) by ${BY[e.by]}, ${mins(e.delayMs)} after the gap was noticed`;
  return `${at} reset: the window starts over at slot ${e.to} (${hhmm(slotMs(e.to))}); it was at slot ${e.from}`;
}

function renderHealth() {
  const v = health.view();
  $('gaps-bin').textContent = run.stream.devices[v.dev];
  $('gaps-after').textContent = plural(Math.round(v.backfillMs / 60_000), 'simulated minute');
  const t = v.totals;
  const unanswered = v.requests.filter((r) => r.status === 'unanswered').length;
  dl($('gaps-counts'), [
    ['highest slot', v.highest === undefined ? '—' : `${hhmm(slotMs(v.highest))} (slot ${v.highest})`, 'gaps-highest'],
    ['open gaps', v.gaps.length, 'gaps-open'],
    ['missing slots', t.missing, 'gaps-missing'],
    ['recovered by a replayed copy', v.recoveredBy.replay, 'gaps-by-replay', 'slots closed late by a copy the bin retransmitted'],
    ['recovered by the backfill', v.recoveredBy.backfill, 'gaps-by-backfill', "slots closed by the sensor's answer to a history-retrieval downlink"],
    ['repeats', t.repeats, 'gaps-repeats', 'a slot seen again (a duplicate, or a second reading in the same minute)'],
    ['resets', t.resets, 'gaps-resets', 'the device clock went far back: the window starts over'],
    ['too old', t.too_old, 'gaps-too-old'],
    ['backfill requests', v.requests.length, 'gaps-requests'],
    ['unanswered', unanswered, 'gaps-unanswered', 'the sensor no longer held all of the range'],
  ]);
  $('gaps-none').hidden = v.gaps.length > 0;
  $('gaps-table').hidden = v.gaps.length === 0;
  $('gaps-open').replaceChildren(...v.gaps.map((g) => gapRow(g, v)));
  $('backfill-none').hidden = v.requests.length > 0;
  $('backfill').replaceChildren(...v.requests.slice(-8).map((r) => requestItem(r, v)));
  const shown = v.events.slice(-12);
  $('gap-log').replaceChildren(
    ...shown.map((e) => {
      const li = el('li', {}, eventText(e));
      Object.assign(li.dataset, { event: e.kind, from: String(e.from), to: String(e.to) }, e.by ? { by: e.by } : {});
      return li;
    }),
  );
}

// ---------- the chart bin's state and collections ------------------------------

const minuteLabel = (m) => hhmm(START_MS + m * TICK_MS);
/** A reading as the panel names it: "93 % at 08:14:15". */
const readingLabel = (r) => (r ? `${r.fill_pct} % at ${hhmmss(Date.parse(r.ts))}` : '—');

/** One collection, the tracker's or "last received"'s, as a table row. */
function collectionRow({ seenBy, from, to, minute, service, late }) {
  const td = (text, className = '') => el('td', { className }, text);
  const real = service !== null;
  const why = late ? 'a replay of an older reading' : 'no service between the two readings';
  const tr = el(
    'tr',
    { className: real ? 'real' : 'phantom' },
    el('th', { scope: 'row' }, seenBy === 'tracker' ? 'reconnect-dedupe' : '"last received"'),
    td(`${hhmmss(Date.parse(from.ts))} → ${hhmmss(Date.parse(to.ts))}`),
    td(`${from.fill_pct} % → ${to.fill_pct} %`, 'n'),
    td(minuteLabel(minute)),
    td(real ? `yes, at ${minuteLabel(service)}` : `no: phantom (${why})`, 'service'),
  );
  Object.assign(tr.dataset, { seenBy, phantom: String(!real) });
  return tr;
}

function renderBinState() {
  const v = binState.view();
  $('state-bin').textContent = run.stream.devices[v.dev];
  $('state-threshold').textContent = fmt(v.thresholdPct);
  const { newest, suspected, period_s } = v.state;
  dl($('state-counts'), [
    ['state: newest by device time', readingLabel(newest), 'state-newest'],
    ['"last received" shows', readingLabel(v.lastReceived), 'state-last'],
    ['reporting period seen', period_s === null ? '—' : `${fmt(period_s)} s`, 'state-period'],
    ['late readings (never the state)', v.late, 'state-late', 'older by device time than one admitted before: a replay'],
    ['real services (ground truth)', v.services.length, 'state-services'],
    ['collections reported', v.collections.length, 'state-collections', 'a fall of more than the threshold, confirmed by the next reading'],
    ['awaiting confirmation', suspected ? `a fall from ${readingLabel(suspected)}` : 'none', 'state-suspected'],
    ['glitches recognised', v.glitches.length, 'state-glitches', 'a single low reading between two high ones'],
    ['"last received" collections', v.lastReceivedFalls.length, 'state-last-falls'],
    ['of them phantom', v.phantoms, 'state-phantoms', 'a full bin that looks emptied: the route skips it'],
  ]);
  document.querySelector('[data-counter="state-phantoms"]').classList.toggle('bad', v.phantoms > 0);
  const rows = [
    ...v.collections.map((c) => ({ seenBy: 'tracker', from: c.before, to: c.after, minute: c.minute, service: c.service, late: false })),
    ...v.lastReceivedFalls.map((f) => ({ seenBy: 'last', ...f })),
  ].sort((a, b) => a.minute - b.minute || (a.seenBy === 'tracker') - (b.seenBy === 'tracker')); // stable: arrival order within a kind
  $('collections-none').hidden = rows.length > 0;
  $('collections-table').hidden = rows.length === 0;
  $('collections').replaceChildren(...rows.slice(-16).map(collectionRow));
}

/** What the test (and a curious reader) can ask the page. */
function snapshot() {
  return { minute: run.minute, done: run.done, params: run.stream.params, summary: run.summary(), core: { ...run.core }, stats: run.stats(), workerAgree, workerDiffer };
}

function showLoadError(msg) {
  $('load-error').textContent = msg;
  $('load-error').hidden = false;
}

// ---------- wiring ------------------------------------------------------------

async function main() {
  try {
    await init(); // the one fetch and instantiation of the Wasm module
  } catch (e) {
    document.body.dataset.run = 'error';
    showLoadError(`Could not load the WebAssembly package (${e.message}). Run \`npm run build\` first.`);
    return;
  }
  for (const [name, spec] of Object.entries(GAP_PARAMS)) Object.assign($(name), { min: String(spec.min), max: String(spec.max) });
  writeForm(initialValues());
  buildLegend();
  $('params').addEventListener('input', (e) => {
    if (e.target.type === 'range') showRangeValues();
  });
  $('params').addEventListener('change', (e) => {
    if (e.target.id === 'useWorker' || e.target.id === 'token') return render();
    if (e.target.name in GAP_PARAMS) {
      newHealth(); // worked out again up to the current minute; the run goes on
      return render();
    }
    reset();
  });
  $('params').addEventListener('submit', (e) => e.preventDefault());
  $('play').addEventListener('click', () => (timer === null ? play() : pause()));
  $('step').addEventListener('click', () => {
    pause();
    advance(1);
  });
  $('toEnd').addEventListener('click', () => runToEnd());
  $('reset').addEventListener('click', () => reset());
  $('bin').addEventListener('change', () => {
    newHealth();
    newBinState();
    render();
  });
  window.demo = { runTo, runToEnd, snapshot, reset };
  reset();
}

main();
