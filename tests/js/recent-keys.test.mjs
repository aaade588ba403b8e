// The group's memory of bursts counted without a row (src/worker/recent.js): bounded
// by time and by count, so that memory follows the rate of bursts, not their total.
import test from 'node:test';
import assert from 'node:assert/strict';
import { RecentKeys } from '../../src/worker/recent.js';

const MINUTE = 60_000;

test('a key is remembered for at least forMs, and forgotten once two generations have passed', () => {
  const keys = new RecentKeys(MINUTE, 1000);
  keys.add('a', 0);
  keys.add('b', MINUTE - 1);
  assert.ok(keys.has('a') && keys.has('b'));
  keys.add('c', MINUTE); // a new generation: a and b are the older one
  assert.ok(keys.has('a') && keys.has('b') && keys.has('c'));
  keys.add('d', 2 * MINUTE); // a and b dropped: both were added over a minute ago
  assert.deepEqual(['a', 'b', 'c', 'd'].map((k) => keys.has(k)), [false, false, true, true]);
});

test('after a pause of two generations, nothing earlier is kept', () => {
  const keys = new RecentKeys(MINUTE, 1000);
  keys.add('a', 0);
  keys.add('b', 30_000);
  keys.add('c', 2 * MINUTE + 30_000);
  assert.deepEqual(['a', 'b', 'c'].map((k) => keys.has(k)), [false, false, true]);
  assert.equal(keys.size, 1);
});

test('at most cap keys are held, however fast they come; the newest half always', () => {
  const keys = new RecentKeys(MINUTE, 100);
  for (let i = 0; i < 10_000; i++) {
    keys.add(`k${i}`, i); // 10 000 keys within one second
    assert.ok(keys.size <= 100, `${keys.size} at ${i}`);
  }
  for (let i = 10_000 - 50; i < 10_000; i++) assert.ok(keys.has(`k${i}`), `k${i}`);
  assert.equal(keys.has('k0'), false);
});

test('a steady rate of keys holds a steady number, not their total', () => {
  const keys = new RecentKeys(MINUTE, 1_000_000);
  const sizes = [];
  // 10 keys a second for an hour.
  for (let t = 0; t < 3600_000; t += 100) {
    keys.add(`k${t}`, t);
    if (t % MINUTE === 0) sizes.push(keys.size);
  }
  const late = sizes.slice(5);
  assert.ok(Math.max(...late) <= 2 * 600 + 1, `held ${Math.max(...late)}`);
  assert.ok(Math.min(...late) >= 600, `held ${Math.min(...late)}`);
});
