// The values the built package returns, checked against the declarations generated
// from the Rust types (pkg/reconnect_dedupe.d.ts): every declared member present
// (optional ones may be absent), no member undeclared, each of its declared type.
// Most shapes are serialised by serde derives, so their declarations cannot drift;
// this covers the ones written by hand (a reading's members, `ts` as text, the
// verdict bytes, the JSON text of processBurstJson and parseUplink) and the naming
// of each return type. The types are read with the TypeScript compiler API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const pkgDir = new URL('../../pkg/', import.meta.url);
const wasmPath = new URL('reconnect_dedupe_bg.wasm', pkgDir);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import(new URL('reconnect_dedupe.js', pkgDir));
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { Deduplicator, limits, parseUplink, readObject, SeqWindow } = pkg;

const dts = fileURLToPath(new URL('reconnect_dedupe.d.ts', pkgDir));
const program = ts.createProgram([dts], {
  strict: true,
  noEmit: true,
  types: [],
  lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts', 'lib.dom.d.ts'],
});
const checker = program.getTypeChecker();
const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(dts)));

/** The type a name of the .d.ts declares. */
function declared(name) {
  const symbol = exported.find((s) => s.name === name);
  assert.ok(symbol, `pkg/reconnect_dedupe.d.ts declares no ${name}`);
  return checker.getDeclaredTypeOfSymbol(symbol);
}

/** The return type of an exported function or Deduplicator method. */
function returns(name, method) {
  let symbol = exported.find((s) => s.name === name);
  if (method) symbol = checker.getPropertyOfType(checker.getDeclaredTypeOfSymbol(symbol), method);
  const type = checker.getTypeOfSymbolAtLocation(symbol, symbol.valueDeclaration);
  return checker.getReturnTypeOfSignature(type.getCallSignatures()[0]);
}

const show = (v) => (v instanceof Uint8Array ? 'a Uint8Array' : JSON.stringify(v) ?? String(v));

/** Where `value` departs from `type`: a list of `path: problem` lines. */
function mismatches(value, type, path = '$') {
  const f = type.flags;
  const bad = () => [`${path}: ${show(value)} is not ${checker.typeToString(type)}`];
  if (type.isUnion()) {
    return type.types.some((t) => mismatches(value, t, path).length === 0) ? [] : bad();
  }
  if (f & ts.TypeFlags.StringLiteral) return value === type.value ? [] : bad();
  if (f & ts.TypeFlags.NumberLiteral) return value === type.value ? [] : bad();
  if (f & ts.TypeFlags.String) return typeof value === 'string' ? [] : bad();
  if (f & ts.TypeFlags.Number) return typeof value === 'number' ? [] : bad();
  if (f & ts.TypeFlags.BooleanLike) return typeof value === 'boolean' ? [] : bad();
  if (f & ts.TypeFlags.Null) return value === null ? [] : bad();
  if (f & ts.TypeFlags.Undefined) return value === undefined ? [] : bad();
  if (f & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return [`${path}: declared ${checker.typeToString(type)}`];
  if (checker.isArrayType(type)) {
    if (!Array.isArray(value)) return bad();
    const [element] = checker.getTypeArguments(type);
    return value.flatMap((v, i) => mismatches(v, element, `${path}[${i}]`));
  }
  if (type.symbol?.name === 'Uint8Array') return value instanceof Uint8Array ? [] : bad();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return bad();
  const members = checker.getPropertiesOfType(type);
  // A record (`Record<string, T>`): every own member is a T.
  const each = checker.getIndexInfoOfType(type, ts.IndexKind.String)?.type;
  if (each && members.length === 0) return Object.entries(value).flatMap(([k, v]) => mismatches(v, each, `${path}.${k}`));
  const out = [];
  for (const m of members) {
    const optional = (m.flags & ts.SymbolFlags.Optional) !== 0;
    if (!Object.hasOwn(value, m.name)) {
      if (!optional) out.push(`${path}.${m.name}: missing`);
      continue;
    }
    const t = checker.getTypeOfSymbolAtLocation(m, m.valueDeclaration);
    out.push(...mismatches(value[m.name], t, `${path}.${m.name}`));
  }
  const names = new Set(members.map((m) => m.name));
  for (const k of Object.keys(value)) if (!names.has(k)) out.push(`${path}.${k}: not declared`);
  return out;
}

function conforms(value, type, what) {
  assert.deepEqual(mismatches(value, type), [], `${what} against ${checker.typeToString(type)}`);
}

const NOW = Date.parse('2026-07-16T09:00:11.204Z');
const reading = (seq, fill) => ({ device_id: 'bin-A17', seq, ts: '2026-07-16T09:00:00Z', fill_pct: fill });
// A burst with something in every bucket: admitted, duplicate, rejected, seq reuse.
const burst = [reading(1, 10), reading(1, 10), reading(2, 'x'), reading(1, 11)];

test('the checker finds an undeclared, a missing and a mistyped member', () => {
  const r = declared('Reading');
  assert.deepEqual(mismatches(reading(1, 10), r), []);
  assert.deepEqual(mismatches({ ...reading(1, 10), extra: 1 }, r), ['$.extra: not declared']);
  const { seq: _, ...noSeq } = reading(1, 10);
  assert.deepEqual(mismatches(noSeq, r), ['$.seq: missing']);
  assert.deepEqual(mismatches(reading(1, '10'), r), ['$.fill_pct: "10" is not number']);
  // A record's every member is checked against its value type.
  const info = checker.getTypeOfSymbol(checker.getPropertyOfType(declared('Limits'), 'codecInfo'));
  const good = { needsPeriod: false, seqIsCounter: false, historyFPort: null, applicationPort: null };
  assert.deepEqual(mismatches({ 'a/b': good }, info), []);
  assert.deepEqual(mismatches({ 'a/b': { ...good, historyFPort: '85' } }, info), ['$.a/b.historyFPort: "85" is not number | null']);
});

test('processBurst and processBurstJson return a BurstOutcome, as declared', () => {
  const type = declared('BurstOutcome');
  const dedup = new Deduplicator();
  const out = dedup.processBurst(burst, NOW);
  assert.ok(out.unique.length && out.duplicates.length && out.rejected.length && out.seq_reuses);
  conforms(out, type, 'processBurst');
  conforms(out, returns('Deduplicator', 'processBurst'), 'processBurst (its signature)');
  // Provisional: a ticket; a copy of a still-provisional key is pending.
  const open = dedup.processBurst([reading(3, 30)], NOW, true);
  assert.equal(typeof open.ticket, 'number');
  conforms(open, type, 'processBurst, provisional');
  const waiting = dedup.processBurst([reading(3, 30)], NOW);
  assert.equal(waiting.audit.payload.pending, 1);
  conforms(waiting, type, 'processBurst, pending');
  const text = dedup.processBurstJson(JSON.stringify({ readings: burst }), NOW + 1);
  conforms(JSON.parse(text), type, 'processBurstJson (JSON text)');
});

test('stats, limits and admitKeys return their declared types', () => {
  const dedup = new Deduplicator({ ttlMs: 60_000 });
  dedup.processBurst(burst, NOW);
  conforms(dedup.stats(), returns('Deduplicator', 'stats'), 'stats');
  conforms(limits(), returns('limits'), 'limits');
  const keys = ['bin-A17:9:0123456789abcdef', 'bin-A17:9:0123456789abcdef'].join('\n');
  const out = dedup.admitKeys(keys, NOW, 1, { device_id: 'bin-A17', route: 'readings' });
  assert.deepEqual([...out.verdicts], [0, 2]);
  conforms(out, returns('Deduplicator', 'admitKeys'), 'admitKeys');
});

test('readObject returns an ObjectBody: every kind of member, and a refusal', () => {
  const body = new TextEncoder().encode('{"n": 1.0, "big": 1e400, "s": "x", "t": true, "z": null, "a": [1], "o": {}}');
  const out = readObject(body, ['n', 'big', 's', 't', 'z', 'a', 'o']);
  conforms(out, returns('readObject'), 'readObject');
  assert.deepEqual(out.members.map((m) => [m.name, m.kind, m.value, m.whole, m.text]), [
    ['n', 'number', 1, true, '1.0'], ['big', 'number', Infinity, false, '1e400'], ['s', 'string', 'x', false, '"x"'], ['t', 'boolean', true, false, 'true'],
    ['z', 'null', undefined, false, 'null'], ['a', 'array', undefined, false, '[1]'], ['o', 'object', undefined, false, '{}'],
  ]);
  conforms(readObject(body, ['n']), returns('readObject'), 'readObject, refused');
  assert.match(readObject(body, ['n']).refused, /^unknown member "big"; the members are n$/);
});

test('parseUplink returns the JSON text of an UplinkPlan', () => {
  const type = declared('UplinkPlan');
  const native = JSON.stringify([reading(1, 10), { ...reading(2, 20), device_id: '' }, reading(3, 'x'), 7]);
  const plan = JSON.parse(parseUplink('readings', native));
  // A rejection that names its device, one that cannot (device_id null), a keyed reading.
  assert.deepEqual(plan.rejected.map((r) => r.device_id), [null, 'bin-A17', null]);
  conforms(plan, type, 'parseUplink readings');
  const fixtures = new URL('../fixtures/webhooks/with-fill/', import.meta.url);
  for (const [format, file] of [['ttn', 'tts-v3-uplink.json'], ['chirpstack', 'chirpstack-v4-up.json']]) {
    const body = fs.readFileSync(new URL(file, fixtures));
    const p = JSON.parse(parseUplink(format, body));
    assert.ok(p.devices.length > 0, file);
    conforms(p, type, `parseUplink ${format}`);
  }
  // A plan with a raw payload (ChirpStack tags give both hints; LORIOT neither).
  const up = JSON.parse(fs.readFileSync(new URL('../chirpstack/up.json', fixtures), 'utf8'));
  up.deviceInfo.tags = { codec: 'dingtek/df703', bin_depth_mm: '1200' };
  const tagged = JSON.parse(parseUplink('chirpstack', JSON.stringify(up)));
  assert.deepEqual(tagged.raw, {
    device_id: '0101010101010101', f_port: 1, payload: [0xaa], received_at: '2022-07-18T09:34:15.775023+00:00',
    f_cnt: 0, frame: '886722ea6b2e38d9', codec_hint: 'dingtek/df703', config_hint: { bin_depth_mm: 1200 },
  });
  conforms(tagged, type, 'parseUplink chirpstack, raw');
  const gw = JSON.parse(parseUplink('loriot', fs.readFileSync(new URL('../loriot/gw.json', fixtures))));
  assert.deepEqual(gw.raw.payload, [0x01, 0x02, 0xaa, 0xbb]);
  conforms(gw, type, 'parseUplink loriot, raw');
});

test('readingsFromPayload returns a PayloadReadings, with and without a frame identity', () => {
  const type = returns('readingsFromPayload');
  const config = { codec: 'milesight-iot/em310-udl', bin_depth_mm: 1500 };
  const live = Uint8Array.of(0x01, 0x75, 0x64, 0x03, 0x82, 0xd2, 0x04);
  const frame = { received_at: '2026-07-16T09:00:00Z', f_cnt: 3, frame: '0123456789abcdef' };
  const framed = pkg.readingsFromPayload('24E124136B502217', config, 85, live, frame);
  // SHA-256 of "16:0123456789abcdef1:0", as src/uplink/payload.rs pins it.
  assert.equal(framed.readings[0].frame, 'f38390fddd9cd03d');
  conforms(framed, type, 'readingsFromPayload, framed');
  const { frame: _, ...unframed } = frame;
  const plain = pkg.readingsFromPayload('24E124136B502217', config, 85, live, unframed);
  assert.equal(plain.readings[0].frame, null);
  conforms(plain, type, 'readingsFromPayload');
});

test('FillTracker returns its declared types: newest, late, a collection, a glitch, the state', () => {
  const t = new pkg.FillTracker(30);
  const key = (seq) => `bin-7:${seq}:0123456789abcdef`;
  const seen = [
    [1, '2026-07-16T08:00:00Z', 90], [2, '2026-07-16T08:10:00Z', 5], [3, '2026-07-16T07:00:00Z', 50],
    [4, '2026-07-16T08:20:00Z', 6], [5, '2026-07-16T08:30:00Z', 70], [6, '2026-07-16T08:40:00Z', 2], [7, '2026-07-16T08:50:00Z', 71],
  ].map(([seq, ts, fill]) => t.observe(ts, fill, key(seq)));
  assert.deepEqual(seen.map((o) => [o.arrival, o.collection !== null, o.glitch]), [
    ['newest', false, false], ['newest', false, false], ['late', false, false], ['newest', true, false],
    ['newest', false, false], ['newest', false, false], ['newest', false, true],
  ]);
  for (const o of seen) conforms(o, returns('FillTracker', 'observe'), `observe (${o.arrival})`);
  conforms(t.state(), returns('FillTracker', 'state'), 'state');
  conforms(new pkg.FillTracker(30).state(), returns('FillTracker', 'state'), 'state, empty');
  t.free();
});

test('SeqWindow returns its declared types: observations of every kind, gaps, totals', () => {
  const w = new SeqWindow();
  // 5 000 is a jump beyond the window (2048) from 2 000: a reset, not a gap.
  const seen = [1, 4, 3, 3, 2_000, 5_000].map((seq, i) => w.observe(seq, NOW + i));
  assert.deepEqual(seen.map((o) => o.kind), ['new', 'new', 'recovered', 'repeat', 'new', 'reset']);
  for (const o of seen) conforms(o, returns('SeqWindow', 'observe'), `observe (${o.kind})`);
  // The device goes on from the jump (5 001): the window starts over at 5 000.
  w.observe(5_001, NOW);
  w.observe(4_996, NOW);
  w.observe(5_004, NOW);
  assert.deepEqual(w.gaps().map((g) => [g.from, g.to]), [[5_002, 5_003]]);
  conforms(w.gaps(), returns('SeqWindow', 'gaps'), 'gaps');
  conforms(w.totals(), returns('SeqWindow', 'totals'), 'totals');
  const back = SeqWindow.fromBytes(w.toBytes());
  assert.deepEqual([back.highest, back.gaps(), back.totals()], [w.highest, w.gaps(), w.totals()]);
  assert.throws(() => SeqWindow.fromBytes(new Uint8Array([9])), { code: 'invalid_snapshot' });
  assert.throws(() => w.observe(1.5, NOW), { code: 'invalid_seq' });
  assert.throws(() => w.observe(2 ** 53, NOW), { code: 'invalid_seq' });
  assert.throws(() => w.observe(1, NaN), { code: 'invalid_time' });
  assert.equal(new SeqWindow().highest, undefined);
  back.free();
  w.free();
});
