// The keyed path of the built package (pkg/) in Node: `admitKeys` on a
// deduplicator that also serves the documented provisional use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

const wasmPath = new URL('../../pkg/reconnect_dedupe_bg.wasm', import.meta.url);
assert.ok(fs.existsSync(wasmPath), 'pkg/ is missing: run `npm run build` first');
const pkg = await import('../../pkg/reconnect_dedupe.js');
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const { Deduplicator } = pkg;
const NOW = Date.parse('2026-07-16T09:00:11.204Z');

// docs/semantics.md "Semantics of the seen-set": "While pending, another burst's copy is reported
// in `pending` — neither a duplicate nor admitted twice", because the pending rows
// may yet fail to store. admitKeys opens no ticket itself, but another call's ticket
// may be open: its copy gets the pending verdict (3).
test('admitKeys does not call a copy of a provisionally admitted key a duplicate', () => {
  const dedup = new Deduplicator();
  const reading = { device_id: 'svc-9', seq: 7, ts: '2026-07-16T09:00:00Z', fill_pct: 40 };
  const first = dedup.processBurst([reading], NOW, true); // its rows are being written
  const [{ key }] = first.unique;
  const copy = dedup.admitKeys(key, NOW + 1);
  dedup.release(first.ticket); // ... and the write failed
  assert.equal(dedup.stats().keys, 0, 'the first copy is gone');
  assert.equal(copy.verdicts[0], 3, 'pending: not suppressed as a duplicate of a reading never stored');
  assert.deepEqual([copy.counts.duplicates_suppressed, copy.counts.pending], [0, 1]);
  assert.deepEqual([...dedup.admitKeys(key, NOW + 2).verdicts], [0], 'the retry after the release is admitted');
});
