// The demo's "Real sensor bytes" logic (www/sensor.js) in Node with the page's Wasm
// package (www/pkg/): the prefilled uplinks are the device vectors' bytes, every
// codec's lines go through send and replay without a line throwing, and bad lines are
// counted by their code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const pkg = await import('../../www/pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(new URL('../../www/pkg/reconnect_dedupe_bg.wasm', import.meta.url)) });
const { VECTORS, prefill, uplinkLines, parseLine, createDevice, sendUplinks, sendSummary } = await import('../../www/sensor.js');

const DIR = new URL('../../tests/vectors/devices/', import.meta.url);
/** Every `{fPort, hex}` of the vector files, as "port hex" (a vector's fPort, else its file's). */
const vendorLines = new Set(
  fs.readdirSync(DIR).flatMap((f) => {
    const doc = JSON.parse(fs.readFileSync(new URL(f, DIR), 'utf8'));
    return doc.vectors.map((v) => `${v.fPort ?? doc.fPort} ${v.hex.toUpperCase()}`);
  }),
);
const config = (codec) => ({ codec, bin_depth_mm: 3000, offset_mm: 0, reporting_period_s: codec === 'tekelek/tek766' ? 21600 : null });

test('every codec has prefilled lines, and each is a device vector unless marked CONSTRUCTED', () => {
  assert.deepEqual(Object.keys(VECTORS).sort(), [...pkg.limits().codecs].sort());
  for (const [codec, lines] of Object.entries(VECTORS)) {
    for (const [from, port, hex] of lines) {
      if (from.startsWith('CONSTRUCTED') && !from.includes('em500-udl')) continue; // from src/codec tests
      assert.ok(vendorLines.has(`${port} ${hex}`), `${codec}: "${from}" (${port} ${hex}) is in no vector file`);
    }
  }
});

test('a line is "fPort hex"; anything else is invalid_line', () => {
  assert.deepEqual(parseLine(' 85  01ff '), { fPort: 85, bytes: Uint8Array.from([1, 255]) });
  for (const bad of ['85', '85 0', '85 zz', '256 00', '-1 00', 'x 00', '85 00 00'])
    assert.throws(() => parseLine(bad), { code: 'invalid_line' }, bad);
  assert.deepEqual(uplinkLines('# a\n\n85 00\n  # b\n2 01').map((l) => l.n), [3, 5]);
});

test('send and replay every codec: no line throws, dated readings replay as duplicates', () => {
  let dated = 0;
  for (const codec of pkg.limits().codecs) {
    const device = createDevice(config(codec));
    const lines = uplinkLines(prefill(codec));
    const first = sendUplinks(device, lines);
    const again = sendUplinks(device, lines, { rejoin: true });
    assert.equal(again[0].fCnt, 0, 'a rejoin restarts the frame counter');
    assert.ok(Date.parse(again[0].receivedAt) - Date.parse(first.at(-1).receivedAt) >= 3600_000);
    for (const [i, up] of again.entries()) {
      assert.equal(up.error?.code, first[i].error?.code, `${codec} line ${up.n}`);
      for (const [j, row] of up.rows.entries()) {
        if (row.device_time_s !== null && first[i].rows[j].verdict === 'admitted') {
          assert.equal(row.verdict, 'duplicate', `${codec} line ${up.n} sample ${j}`);
          assert.equal(row.key, first[i].rows[j].key);
          dated++;
        }
      }
    }
    device.dedup.free();
  }
  assert.equal(dated, 3, 'the EM500-UDL history records and the DDS75-LB datalog entry');
});

test('bad lines are counted by their code in the send summary, good ones in the verdicts', () => {
  const device = createDevice(config('milesight-iot/em500-udl'));
  const text = ['85 01756403821E00', '85 0175', 'hello', '10 01756403821E00', '85 zz', '85 01755C03821E00'].join('\n');
  const ups = sendUplinks(device, uplinkLines(text));
  const sum = sendSummary(ups);
  assert.deepEqual(ups.map((u) => u.error?.code ?? null), [null, 'invalid_payload', 'invalid_line', 'unsupported_port', 'invalid_line', null]);
  assert.equal(sum.lineErrors, 4);
  assert.deepEqual(sum.errorCodes, { invalid_payload: 1, invalid_line: 2, unsupported_port: 1 });
  assert.equal(sum.admitted, 2);
  assert.equal(sum.text, 'Sent: 6 uplinks, 2 admitted, 0 duplicate, 0 rejected; 4 lines with an error (invalid_payload, invalid_line ×2, unsupported_port).');
  assert.equal(sendSummary(ups.slice(0, 1)).text, 'Sent: 1 uplink, 1 admitted, 0 duplicate, 0 rejected.', 'no error, no error clause');
  device.dedup.free();
});
