// A memory of recent keys bounded by time and by count, with time as an argument:
// what a group remembers of the bursts it counted without a row of their own
// (admission.js `countedWithoutRows`), so that the worker's retry of such a call counts
// nothing again. Two generations: keys go into the current one; it becomes the older
// one when it is `forMs` old or holds half of `cap`, and the older one is dropped then.
// So a key is remembered for at least `forMs` unless `cap / 2` keys came after it
// within that time, never for more than `2 * forMs` while keys keep coming, and at
// most `cap` keys are held at once: memory follows the rate of keys, not their total.

export class RecentKeys {
  constructor(forMs, cap) {
    this.forMs = forMs;
    this.half = Math.max(1, Math.floor(cap / 2));
    this.current = new Set();
    this.older = new Set();
    /** When the current generation began (ms). */
    this.since = -Infinity;
  }

  /** Remembers `key`, added at `now` (ms). */
  add(key, now) {
    if (now - this.since >= this.forMs || this.current.size >= this.half) {
      // A current generation twice as old as the bound holds nothing to keep.
      this.older = now - this.since >= 2 * this.forMs ? new Set() : this.current;
      this.current = new Set();
      this.since = now;
    }
    this.current.add(key);
  }

  /** Whether `key` is remembered. */
  has(key) {
    return this.current.has(key) || this.older.has(key);
  }

  /** How many keys are held. */
  get size() {
    return this.current.size + this.older.size;
  }
}
