// docs/network-servers.md against the worker: its per-server set-up (below); and
// docs/operations.md's /v1/stats example against what the worker writes. The worker
// builds `as_of` with the core's isoTime (src/worker/fleet.js), "one timestamp style
// in everything the worker emits" (issue 8; docs/delivery.md "Delivery to the origin": Python's
// isoformat() of the UTC instant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });

test("docs/operations.md's /v1/stats example writes as_of as the worker does", () => {
  const operations = fs.readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const example = operations.match(/```json\n(\{"devices":[\s\S]*?\})\n```/);
  assert.ok(example, 'docs/operations.md has a /v1/stats example');
  const { as_of } = JSON.parse(example[1]);
  assert.equal(as_of, pkg.isoTime(Date.parse(as_of)));
});

// The per-server set-up steps against the fixtures of every event type
// (tests/fixtures/webhooks/<server>/, from the servers' own sources) and what the core
// makes of each: an operator who follows the steps meets no surprise.
const page = fs.readFileSync(new URL('../../docs/network-servers.md', import.meta.url), 'utf8');
const fixtures = new URL('../fixtures/webhooks/', import.meta.url);
const events = (server) => fs.readdirSync(new URL(`${server}/`, fixtures)).map((f) => f.replace(/\.json$/, '')).sort();
const body = (server, event) => fs.readFileSync(new URL(`${server}/${event}.json`, fixtures));
/** The page's text from `start` to the next blank line or numbered step. */
const paragraph = (start) => {
  const at = page.indexOf(start);
  assert.ok(at >= 0, `docs/network-servers.md has "${start}"`);
  const rest = page.slice(at + start.length);
  const end = rest.search(/\n\n|\n\d+\. /);
  return start + (end < 0 ? rest : rest.slice(0, end));
};
const ticks = (text) => [...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);

test('The Things Stack: ticking every event type is safe, as docs/network-servers.md says, for every type it lists', () => {
  const step = paragraph('4. Enabled event types');
  const listed = ticks(step.slice(0, step.indexOf(' is answered 200')));
  const others = events('tts').filter((e) => e !== 'uplink_message' && e !== 'simulated_uplink');
  assert.deepEqual([...listed].sort(), others, 'the page lists exactly the non-uplink types the fixtures hold');
  for (const e of others) {
    const plan = JSON.parse(pkg.parseUplink('ttn', body('tts', e)));
    assert.deepEqual([plan.ignored, plan.event, plan.received], [true, e, 0], e);
  }
  const up = JSON.parse(pkg.parseUplink('ttn', body('tts', 'uplink_message')));
  assert.deepEqual([up.ignored, up.simulated, up.received], [false, false, 1]);
});

test('The Things Stack: Simulate uplink and the field mask, as docs/network-servers.md describes them', () => {
  const sim = paragraph('7. Try it with **Simulate uplink**');
  assert.match(sim, /"simulated": true, "stored": false/);
  const plan = JSON.parse(pkg.parseUplink('ttn', body('tts', 'simulated_uplink')));
  assert.deepEqual([plan.simulated, plan.received], [true, 1]);
  // The paths the page tells to keep are the ones the worker's 400 names.
  const mask = paragraph('5. Filter event data');
  const kept = [...mask.slice(0, mask.indexOf('The Things\n   Stack keeps')).matchAll(/`([a-z_.]+)`/g)].map((m) => m[1]);
  const masked = JSON.parse(body('tts', 'uplink_message'));
  delete masked.end_device_ids;
  assert.throws(
    () => pkg.parseUplink('ttn', JSON.stringify(masked)),
    (e) => e.code === 'field_mask_incomplete' && kept.every((p) => e.message.includes(p)) && kept.length >= 9,
  );
});

test('ChirpStack, Helium, LORIOT: the events docs/network-servers.md says are acknowledged are the ones their fixtures hold', () => {
  const step = paragraph('2. Event endpoint URL(s)');
  const acknowledged = ticks(step.slice(step.indexOf('its other'), step.indexOf('are answered 200')));
  assert.deepEqual([...new Set(acknowledged)].sort(), events('chirpstack').filter((e) => e !== 'up'));
  const helium = JSON.parse(pkg.parseUplink('helium', body('helium', 'join')));
  assert.deepEqual([helium.ignored, helium.event], [true, 'join']);
  assert.match(paragraph('## Helium\n\n'), /`type: join`/);
  const loriot = paragraph('## LORIOT\n\n');
  for (const cmd of ['rx', 'gw']) {
    assert.match(loriot, new RegExp(`\`${cmd}\``));
    const plan = JSON.parse(pkg.parseUplink('loriot', body('loriot', cmd)));
    // No fill level, raw bytes: the worker decodes them or parks the uplink (one frame for both).
    assert.deepEqual([plan.ignored, plan.event, plan.raw?.payload], [false, cmd, [0x01, 0x02, 0xaa, 0xbb]], cmd);
  }
  for (const [file, cmd] of [['tx', 'tx'], ['cq_response', 'cq']]) {
    assert.match(loriot, new RegExp(`\`${cmd}\``));
    const plan = JSON.parse(pkg.parseUplink('loriot', body('loriot', file)));
    assert.deepEqual([plan.ignored, plan.event], [true, cmd], file);
  }
  assert.equal(JSON.parse(pkg.parseUplink('loriot', body('loriot', 'rx'))).raw.frame, JSON.parse(pkg.parseUplink('loriot', body('loriot', 'gw'))).raw.frame);
  assert.match(loriot, /names no device\s+model: `PUT \/v1\/devices\/\{EUI\}\/config` with the `codec`/);
  assert.match(loriot, /parked \(`device_not_configured`\)/);
});
