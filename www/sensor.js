// The "Real sensor bytes" section: one sensor's raw uplinks (`fPort hex`, one per
// line) through the core's codec (decodePayload for the samples, readingsFromPayload
// for the keyed readings) and one Deduplicator, then the same uplinks again after a
// rejoin. It shares only the Wasm module with the simulation (app.js).
import init, { Deduplicator, decodePayload, readingsFromPayload, limits } from './pkg/reconnect_dedupe.js';
import { el } from './dom.js';

/** The one device of this section (the README's example DevEUI). */
export const DEVICE_ID = '24E124136B502217';
/** The first uplink's receive time; each further line arrives a minute later. */
export const START_MS = Date.UTC(2026, 6, 16, 12, 0, 30);
export const LINE_MS = 60_000;
/** How long the device was away before its rejoin. */
export const REJOIN_GAP_MS = 2 * 3600_000;
/** The frame counter of the first uplink sent (the device has been up a while); a rejoin restarts it at 0. */
export const FIRST_F_CNT = 100;

/**
 * Each codec's prefilled uplinks, `[source, fPort, hex]`, from the device vectors the
 * Rust, browser and worker tests read (tests/vectors/devices/<file>.json, the vector
 * named by its "from"; tests/demo/sensor.test.mjs checks each is there). The few
 * marked CONSTRUCTED are no vendor's.
 */
export const VECTORS = {
  // tests/vectors/devices/milesight-em310-udl.json
  'milesight-iot/em310-udl': [
    ['TTN em310-udl-codec.yaml (verbatim)', 85, '01755C03824408040001'],
  ],
  // tests/vectors/devices/milesight-em500-udl.json
  'milesight-iot/em500-udl': [
    ['SensorDecoders README + codec.json (verbatim)', 85, '01756403821E00'],
    ['TTN em500-udl-codec.yaml (verbatim)', 85, '01755C03821E00'],
    ['CONSTRUCTED: two 20 CE history records, checked with the official em500-udl-decoder.js', 85, '20CE9E744663D20420CE3A824663D004'],
    ['TTN vendor/milesight-iot/em500-udl.js header comment (verbatim)', 85, '01755A03821E00'],
  ],
  // tests/vectors/devices/dingtek-df703.json
  'dingtek/df703': [
    ["df703-codec.yaml 'heartbeat upload without gps'", 3, '800001011107D000190000000000010081'],
    ["df703-codec.yaml 'heartbeat upload with gps'", 3, '800001011907D001CD03E942EF272042190000000000010081'],
    ["df703-codec.yaml 'parameter packet' (no level)", 3, '8000010319010418011E4B1E00000000000000000000000081'],
  ],
  // tests/vectors/devices/decentlab-dl-mbx.json
  'decentlab/dl-mbx': [
    ['dl-mbx-codec.yaml Example 1 (verbatim)', 1, '02012F000304D200010BB1'],
    ['dl-mbx-codec.yaml Example 2 (verbatim, battery only)', 1, '02012F00020BB1'],
  ],
  // tests/vectors/devices/tekelek-tek766.json
  'tekelek/tek766': [
    ['public test file: a measurement (verbatim)', 16, '1000000001121B7701131BAA01121BA90114F274'],
    ["akenza TEK766 uplink.spec.js 'measurement + measurement_history' (verbatim)", 1, '1000000001121B7701131BAA01121BA90114F274'],
    ["akenza TEK766 uplink.spec.js 'lifecycle' (verbatim)", 1, '300000010106360063006300040600181BAA'],
  ],
  // tests/vectors/devices/dragino-ldds75.json
  'dragino/ldds75': [
    ['ldds75-codec.yaml "Distance Detection" (verbatim; a 4-byte frame reads as no sensor)', 2, '0E1C0B05'],
    ['ldds75-codec.yaml "Unknown FPort" (verbatim)', 42, '0E1C0B05'],
    ['CONSTRUCTED: a 5-byte frame, 2821 mm (src/codec/dragino.rs tests)', 2, '0B450B0501'],
  ],
  // tests/vectors/devices/dragino-dds75-lb.json
  'dragino/dds75-lb': [
    ['dds75-lb-codec.yaml "Temperature" (verbatim; another device\'s 11-byte frame)', 2, '0CF6010103000C01DD01FF'],
    ['CONSTRUCTED: a datalog of 2821 mm, an empty entry, 15 mm (src/codec/dragino.rs datalog test)', 3,
      '0B450B0501054160065F97' + '0000000000000000000000' + '0B45000F01054160066DA7'],
  ],
};

/** The textarea's text for a codec: each vector under a `#` line naming its source. */
export function prefill(codec) {
  return (VECTORS[codec] ?? []).map(([from, port, hex]) => `# ${from}\n${port} ${hex}`).join('\n');
}

const codedError = (code, message) => Object.assign(new Error(message), { code });

/** `fPort hex` → `{ fPort, bytes }`; throws `invalid_line` (a code of this page, not the core's). */
export function parseLine(text) {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 2) throw codedError('invalid_line', 'expected "fPort hex"');
  const [port, hex] = parts;
  if (!/^\d{1,3}$/.test(port) || Number(port) > 255) throw codedError('invalid_line', `fPort "${port.slice(0, 16)}" is not 0 … 255`);
  if (!/^([0-9a-f]{2})*$/i.test(hex)) throw codedError('invalid_line', 'the payload is not an even number of hex digits');
  return { fPort: Number(port), bytes: Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16)) };
}

/** The uplinks of the textarea: every line but blank ones and `#` comments, with its line number. */
export function uplinkLines(text) {
  return text
    .split('\n')
    .map((line, i) => ({ n: i + 1, text: line.trim() }))
    .filter((l) => l.text && !l.text.startsWith('#'));
}

/**
 * One device's state: its deduplicator, next frame counter and receive time, and the
 * application-counter reference carried from uplink to uplink, as the worker keeps them.
 */
export function createDevice(config) {
  return { config, dedup: new Deduplicator(), fCnt: FIRST_F_CNT, clockMs: START_MS, counterRef: null, sends: 0 };
}

/**
 * Sends the lines as uplinks, each one burst: decoded (the samples), keyed
 * (readingsFromPayload) and deduplicated (processBurst at its receive time). With
 * `rejoin`, the frame counter restarts at 0 and the first uplink arrives
 * REJOIN_GAP_MS after the last. Never throws for a line: its error is in its result.
 */
export function sendUplinks(device, lines, { rejoin = false } = {}) {
  if (rejoin) {
    device.fCnt = 0;
    device.clockMs += REJOIN_GAP_MS - LINE_MS;
  }
  device.sends++;
  return lines.map((line) => {
    const fCnt = device.fCnt++;
    const nowMs = device.clockMs;
    device.clockMs += LINE_MS;
    const up = { n: line.n, text: line.text, fCnt, receivedAt: new Date(nowMs).toISOString(), battery: null, rows: [], seqReuses: 0, error: null };
    try {
      const { fPort, bytes } = parseLine(line.text);
      up.fPort = fPort;
      const decoded = decodePayload(device.config.codec, fPort, bytes);
      const keyed = readingsFromPayload(DEVICE_ID, device.config, fPort, bytes, {
        received_at: up.receivedAt,
        f_cnt: fCnt,
        counter_ref: device.counterRef,
      });
      device.counterRef = keyed.counter_ref;
      up.battery = keyed.battery;
      up.rows = decoded.samples.map((s) => ({ ...s, reading: null, key: null, verdict: 'rejected', code: null }));
      for (const r of keyed.rejected) Object.assign(up.rows[r.index], { code: r.code, message: r.message });
      const burst = keyed.readings.map((r) => {
        Object.assign(up.rows[r.index], { reading: r, key: r.key });
        return { device_id: DEVICE_ID, seq: r.seq, ts: r.ts, fill_pct: r.fill_pct };
      });
      if (burst.length) {
        const out = device.dedup.processBurst(burst, nowMs);
        const row = (i) => up.rows[keyed.readings[i].index];
        for (const a of out.unique) Object.assign(row(a.index), { verdict: 'admitted', key: a.key });
        for (const i of out.duplicates) row(i).verdict = 'duplicate';
        for (const i of out.pending) row(i).verdict = 'pending';
        for (const r of out.rejected) Object.assign(row(r.index), { verdict: 'rejected', code: r.code, message: r.message });
        up.seqReuses = out.seq_reuses;
      }
    } catch (e) {
      up.error = { code: e.code ?? 'error', message: e.message };
    }
    return up;
  });
}

/**
 * One send's figures and its status line: the verdicts of the readings, how many dated
 * readings came out duplicate, and the lines that made no reading because of an error,
 * counted by code (a bad line is otherwise only its own red line among the results).
 */
export function sendSummary(ups, { rejoin = false } = {}) {
  const now = { uplinks: ups.length, admitted: 0, duplicate: 0, rejected: 0, dated: 0, datedDup: 0, lineErrors: 0, errorCodes: {} };
  for (const up of ups) {
    if (up.error) {
      now.lineErrors++;
      now.errorCodes[up.error.code] = (now.errorCodes[up.error.code] ?? 0) + 1;
    }
    for (const s of up.rows) {
      if (s.verdict in now) now[s.verdict]++;
      if (s.device_time_s !== null && s.reading) {
        now.dated++;
        if (s.verdict === 'duplicate') now.datedDup++;
      }
    }
  }
  const what = rejoin ? `Replayed after a rejoin, ${REJOIN_GAP_MS / 3600_000} h later` : 'Sent';
  const codes = Object.entries(now.errorCodes).map(([code, n]) => (n === 1 ? code : `${code} ×${n}`));
  now.text =
    `${what}: ${ups.length} uplink${ups.length === 1 ? '' : 's'}, ${now.admitted} admitted, ${now.duplicate} duplicate, ` +
    `${now.rejected} rejected` + (now.dated ? `; ${now.datedDup} of ${now.dated} dated readings duplicate` : '') +
    (now.lineErrors ? `; ${now.lineErrors} line${now.lineErrors === 1 ? '' : 's'} with an error (${codes.join(', ')})` : '') + '.';
  return now;
}

// ---------- the page ------------------------------------------------------------

const $ = (id) => document.getElementById(id);
let device = null;
const totals = { uplinks: 0, line_errors: 0, readings: 0, admitted: 0, duplicate: 0, rejected: 0 };

/** Whether the codec's configuration needs a reporting period (the core's `limits().codecInfo`). */
function needsPeriod(codec) {
  return limits().codecInfo[codec]?.needsPeriod === true;
}

function readConfig() {
  const codec = $('sensor-codec').value;
  const num = (id) => ($(id).value.trim() === '' ? null : Number($(id).value));
  return {
    codec,
    bin_depth_mm: num('sensor-depth'),
    offset_mm: num('sensor-offset') ?? 0,
    reporting_period_s: needsPeriod(codec) ? num('sensor-period') : null,
  };
}

/** A new device (an empty seen-set) for the current configuration; clears the results. */
function resetDevice() {
  device?.dedup.free();
  device = createDevice(readConfig());
  for (const k of Object.keys(totals)) totals[k] = 0;
  $('sensor-period-field').hidden = !needsPeriod(device.config.codec);
  $('sensor-replay').disabled = true;
  $('sensor-status').textContent = '';
  $('sensor-results').replaceChildren();
  renderTotals();
}

const utc = (iso) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
const battery = (b) => (!b ? '—' : 'percent' in b ? `${b.percent} %` : `${b.millivolts} mV`);

function sampleTime(s) {
  if (s.device_time_s !== null) return `device ${utc(new Date(s.device_time_s * 1000).toISOString())}`;
  if (s.periods_ago !== null) return `${s.periods_ago} period${s.periods_ago === 1 ? '' : 's'} ago`;
  if (s.app_counter !== null) return `counter ${s.app_counter}`;
  return '— (receive time)';
}

function uplinkView(up) {
  const head = el('h3', {}, `Line ${up.n} · f_cnt ${up.fCnt} · received ${utc(up.receivedAt)}`);
  const art = el('article', { className: 'uplink' }, head);
  art.dataset.line = String(up.n);
  art.append(el('p', { className: 'bytes' }, el('code', {}, up.text)));
  if (up.error) {
    const p = el('p', { className: 'error' }, el('code', {}, up.error.code), ` ${up.error.message}`);
    p.dataset.code = up.error.code;
    art.append(p);
    return art;
  }
  art.append(el('p', { className: 'small' }, `battery ${battery(up.battery)}`,
    up.seqReuses ? ` · ${up.seqReuses} seq reuse${up.seqReuses === 1 ? '' : 's'} (a seq already held with other content)` : ''));
  if (!up.rows.length) {
    art.append(el('p', { className: 'small' }, 'No level sample in this uplink.'));
    return art;
  }
  const th = (t) => el('th', { scope: 'col' }, t);
  const rows = up.rows.map((s, i) => {
    const verdict = el('td', { className: `verdict ${s.verdict}` }, s.verdict, s.code ? ` (${s.code})` : '');
    if (s.message) verdict.title = s.message;
    const tr = el('tr', {},
      el('td', {}, String(i)),
      verdict,
      el('td', { className: s.no_reading ? '' : 'n' }, s.distance_mm ?? `none: ${s.no_reading}`),
      el('td', {}, sampleTime(s)),
      el('td', { className: 'n' }, s.reading ? `${s.reading.fill_pct}` : '—'),
      el('td', { className: 'key' }, s.key ?? '—'));
    tr.dataset.verdict = s.verdict;
    if (s.device_time_s !== null) tr.dataset.dated = '';
    return tr;
  });
  const table = el('table', {},
    el('thead', {}, el('tr', {}, th('#'), th('verdict'), th('distance mm'), th('time'), th('fill %'), th('key'))),
    el('tbody', {}, ...rows));
  art.append(el('div', { className: 'table-scroll' }, table));
  return art;
}

function renderTotals() {
  const rows = [
    ['uplinks', totals.uplinks], ['lines with an error', totals.line_errors], ['readings', totals.readings],
    ['admitted', totals.admitted], ['duplicate', totals.duplicate], ['rejected', totals.rejected],
    ['keys held', device.dedup.stats().keys],
  ];
  $('sensor-counts').replaceChildren(
    ...rows.flatMap(([label, value]) => {
      const dd = el('dd', {}, String(value));
      dd.dataset.sensorCount = label.split(' ')[0];
      return [el('dt', {}, label), dd];
    }),
  );
}

function send(rejoin) {
  const lines = uplinkLines($('sensor-lines').value);
  const ups = sendUplinks(device, lines, { rejoin });
  const now = sendSummary(ups, { rejoin });
  totals.uplinks += now.uplinks;
  totals.line_errors += now.lineErrors;
  totals.readings += now.admitted + now.duplicate + now.rejected;
  for (const k of ['admitted', 'duplicate', 'rejected']) totals[k] += now[k];
  $('sensor-status').textContent = now.text;
  $('sensor-status').classList.toggle('bad', now.lineErrors > 0);
  $('sensor-results').replaceChildren(...ups.map(uplinkView));
  $('sensor-replay').disabled = !lines.length;
  renderTotals();
}

async function main() {
  const section = $('sensor');
  try {
    await init(); // the module app.js instantiates: the same promise, one fetch
  } catch {
    section.dataset.sensor = 'error'; // app.js shows why
    return;
  }
  const { codecs, deviceConfig } = limits();
  const select = $('sensor-codec');
  select.replaceChildren(...codecs.map((c) => new Option(c, c, c === 'milesight-iot/em500-udl', c === 'milesight-iot/em500-udl')));
  for (const [id, name] of [['sensor-depth', 'bin_depth_mm'], ['sensor-offset', 'offset_mm'], ['sensor-period', 'reporting_period_s']]) {
    $(id).min = String(deviceConfig[name].min);
    $(id).max = String(deviceConfig[name].max);
  }
  $('sensor-lines').value = prefill(select.value);
  $('sensor-form').addEventListener('change', (e) => {
    if (e.target.id === 'sensor-lines') return;
    if (e.target.id === 'sensor-codec') $('sensor-lines').value = prefill(select.value);
    resetDevice();
  });
  $('sensor-form').addEventListener('submit', (e) => {
    e.preventDefault();
    send(false);
  });
  $('sensor-replay').addEventListener('click', () => send(true));
  $('sensor-reset').addEventListener('click', () => resetDevice());
  resetDevice();
  section.dataset.sensor = 'ready';
}

if (typeof document !== 'undefined') main();
