// The page: controls, playback, rendering and the worker switch. The simulation
// (sim.js) and the scoring (strategies.js) are pure and live elsewhere.
import init, { Deduplicator } from './pkg/reconnect_dedupe.js';
import { PARAMS, START_MS, TICK_MS, simulate, telltaleBin, normalizeParams } from './sim.js';
import { STRATEGIES, createRun, compareWithWorker } from './strategies.js';
import { chartSvg } from './chart.js';

const $ = (id) => document.getElementById(id);
const fmt = (n) => Number(n).toLocaleString('en-US');
const PLAY_INTERVAL_MS = 40;
const DEDUP_DEFAULTS = { ttlMin: 360, maxKeys: 100_000 };

let run = null; // the current run (strategies.js)
let timer = null;
let busy = false; // a step (possibly awaiting the worker) is in flight
let runTag = ''; // device-id prefix for the worker, new per run
const workerLog = [];
let workerAgree = 0;
let workerDiffer = 0;

// ---------- parameters --------------------------------------------------------

function readForm() {
  const f = $('params').elements;
  const sim = {};
  for (const name of Object.keys(PARAMS)) sim[name] = f[name].value;
  return { sim: normalizeParams(sim), ttlMin: Number(f.ttlMin.value), maxKeys: Number(f.maxKeys.value) };
}

function writeForm(sim, ttlMin, maxKeys) {
  const f = $('params').elements;
  for (const name of Object.keys(PARAMS)) f[name].value = String(sim[name]);
  f.ttlMin.value = String(ttlMin);
  f.maxKeys.value = String(maxKeys);
  showRangeValues();
}

function showRangeValues() {
  for (const out of document.querySelectorAll('output[for]')) {
    out.textContent = `${$(out.htmlFor.value).value} ${out.dataset.unit}`;
  }
}

/** Initial values: defaults, overridden by the query string (?seed=7&fleet=20...). */
function initialValues() {
  const q = new URLSearchParams(location.search);
  const sim = {};
  for (const name of Object.keys(PARAMS)) sim[name] = q.has(name) ? q.get(name) : PARAMS[name].def;
  const num = (k) => (q.has(k) ? Number(q.get(k)) : DEDUP_DEFAULTS[k]);
  return [normalizeParams(sim), num('ttlMin'), num('maxKeys')];
}

// ---------- run lifecycle -----------------------------------------------------

function reset() {
  pause();
  const { sim, ttlMin, maxKeys } = readForm();
  let dedup;
  try {
    dedup = new Deduplicator({ ttlMs: Math.round(ttlMin * 60_000), maxKeys });
    $('config-error').hidden = true;
  } catch (e) {
    $('config-error').textContent = `The deduplicator refused this configuration (${e.code}): ${e.message}`;
    $('config-error').hidden = false;
    dedup = new Deduplicator({ ttlMs: DEDUP_DEFAULTS.ttlMin * 60_000, maxKeys: DEDUP_DEFAULTS.maxKeys });
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
  document.body.dataset.run = 'idle';
  render();
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

/** Runs every remaining minute; resolves with the summary once the run is done. */
async function runToEnd() {
  pause();
  while (busy) await new Promise((r) => setTimeout(r, 0));
  await advance(Infinity);
  return snapshot();
}

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
        `<p class="small" data-stat="${s.id}-passes"></p><div class="chart" data-chart="${s.id}"></div>`;
      return card;
    }),
  );
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
      dd.textContent = fmt(value);
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
    document.querySelector(`[data-chart="${s.id}"]`).innerHTML = chartSvg({
      truth: stream.trueFill[dev],
      points: run.tallies[s.id].series[dev],
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

  if ($('useWorker').checked || workerLog.length) {
    $('worker-panel').hidden = false;
    if (workerLog.length)
      $('worker-status').textContent = `${workerAgree} bursts agree, ${workerDiffer} differ (worker limits must match the TTL and max keys here).`;
    logList($('worker-log'), workerLog);
  }
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
  writeForm(...initialValues());
  $('params').addEventListener('input', (e) => {
    if (e.target.type === 'range') showRangeValues();
  });
  $('params').addEventListener('change', (e) => {
    if (e.target.id === 'useWorker' || e.target.id === 'token') return render();
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
  $('bin').addEventListener('change', () => render());
  window.demo = { runToEnd, snapshot, reset };
  reset();
}

main();
