// The baseline of `npm run bench`: the same algorithm in plain JavaScript, as a user
// would write it instead of loading the Wasm package. Same key (device_id:seq: +
// 16 hex of SHA-256 over {"fill_pct":<Python repr>,"ts":"<isoformat UTC>"}), same
// validation order and codes, same seen-set semantics: first write wins, TTL from first
// admission (expired at exactly admitted + ttl), a cap that drops the oldest admission,
// a clock that never runs backwards, seq reuse counted. A `Map` is the ordered seen-set
// (insertion order = admission order, so expiry and eviction take from the front), and
// node:crypto hashes (the one-shot `crypto.hash` where Node has it: it is the faster).
// bench.mjs checks that it admits exactly the keys the Wasm deduplicator admits.
import crypto from 'node:crypto';

const sha256hex = crypto.hash
  ? (s) => crypto.hash('sha256', s, 'hex')
  : (s) => crypto.createHash('sha256').update(s).digest('hex');

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const TS_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const MIN_MICROS = -62_135_596_800_000_000;
const MAX_MICROS = 253_402_300_800_000_000 - 1;
const utf8 = new TextEncoder();

class Reject extends Error {
  constructor(field, code, message) {
    super(message);
    this.field = field;
    this.code = code;
  }
}

/** UTF-8 length, encoding only when it could matter (a UTF-16 unit is ≤ 3 bytes). */
const utf8Length = (s) => (s.length * 3 <= 128 ? s.length : utf8.encode(s).length);

/** Python's repr() of a finite, non-negative float. */
export function pyRepr(x) {
  if (x === 0) return '0.0';
  if (x < 1e-4 || x >= 1e16) {
    const [m, e] = x.toExponential().split('e'); // shortest digits: "1e-5"
    const n = Number(e);
    return `${m}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  }
  const s = String(x);
  return s.includes('.') ? s : `${s}.0`;
}

/** Parses RFC 3339 with a mandatory offset to UTC microseconds, or returns a reason. */
function parseTs(s) {
  const m = TS_RE.exec(s);
  if (!m) {
    return /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?$/.test(s)
      ? 'has no UTC offset; add Z or ±hh:mm'
      : 'must be an RFC 3339 date-time such as 2026-07-16T09:00:00Z';
  }
  const [y, mo, d, h, mi, sec] = [1, 2, 3, 4, 5, 6].map((i) => +m[i]);
  const dim = [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  const offH = m[10] ? +m[10] : 0;
  const offM = m[11] ? +m[11] : 0;
  if (mo < 1 || mo > 12 || d < 1 || d > dim[mo - 1] || h > 23 || mi > 59 || sec > 59 || offH > 23 || offM > 59) {
    return 'has a date, time or offset field out of range';
  }
  let ms = Date.UTC(y, mo - 1, d, h, mi, sec);
  if (y < 100) ms = new Date(ms).setUTCFullYear(y);
  const offset = (offH * 60 + offM) * 60_000 * (m[9] === '-' ? -1 : 1);
  const micros = (ms - offset) * 1000 + (m[7] ? +m[7].slice(0, 6).padEnd(6, '0') : 0);
  if (micros < MIN_MICROS || micros > MAX_MICROS) return 'falls outside years 0001-9999 in UTC';
  return micros;
}

/** Python's isoformat() of a UTC instant in microseconds. */
function isoformat(micros) {
  const us = ((micros % 1_000_000) + 1_000_000) % 1_000_000;
  const base = new Date((micros - us) / 1000).toISOString().slice(0, 19);
  return us ? `${base}.${String(us).padStart(6, '0')}+00:00` : `${base}+00:00`;
}

/** Validates a reading: its normalised form, or throws a `Reject` with field and code. */
export function validate(raw) {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Reject('reading', 'invalid_reading', 'a reading must be a JSON object');
  }
  const { device_id: id, seq, ts, fill_pct: fill } = raw;
  if (id === undefined) throw new Reject('device_id', 'missing_device_id', 'device_id is missing');
  if (typeof id !== 'string' || id.length === 0 || utf8Length(id) > 128 || /\p{Cc}/u.test(id)) {
    throw new Reject('device_id', 'invalid_device_id', 'device_id is invalid');
  }
  if (seq === undefined) throw new Reject('seq', 'missing_seq', 'seq is missing');
  if (typeof seq !== 'number' || !Number.isInteger(seq) || Math.abs(seq) > MAX_SAFE) {
    throw new Reject('seq', 'invalid_seq', 'seq must be a whole number within ±(2^53−1)');
  }
  if (ts === undefined) throw new Reject('ts', 'missing_ts', 'ts is missing');
  const micros = typeof ts === 'string' ? parseTs(ts) : 'must be an RFC 3339 string';
  if (typeof micros === 'string') throw new Reject('ts', 'invalid_ts', `ts ${micros}`);
  if (fill === undefined) throw new Reject('fill_pct', 'missing_fill_pct', 'fill_pct is missing');
  if (typeof fill !== 'number' || !(fill >= 0 && fill <= 100)) {
    throw new Reject('fill_pct', 'invalid_fill_pct', 'fill_pct must be between 0 and 100');
  }
  return { device_id: id, seq, ts: isoformat(micros), fill_pct: fill + 0 };
}

/** The canonical content that is hashed, of a validated reading. */
export const canonicalContent = (r) => `{"fill_pct":${pyRepr(r.fill_pct)},"ts":"${r.ts}"}`;

export class PlainDeduplicator {
  constructor({ ttlMs = 6 * 3600_000, maxKeys = 100_000 } = {}) {
    this.ttlMs = ttlMs;
    this.maxKeys = maxKeys;
    this.seen = new Map(); // key -> admission time (ms), in admission order
    this.held = new Map(); // "device_id:seq" -> number of held keys (seq reuse)
    this.clock = 0;
  }

  #drop(key) {
    this.seen.delete(key);
    const ds = key.slice(0, key.lastIndexOf(':'));
    const n = this.held.get(ds);
    if (n === 1) this.held.delete(ds);
    else this.held.set(ds, n - 1);
  }

  /** Same outcome shape as Deduplicator.processBurst (non-provisional). */
  processBurst(body, nowMs) {
    const readings = Array.isArray(body) ? body : body.readings;
    this.clock = Math.max(this.clock, Math.floor(nowMs));
    const now = this.clock;
    for (const [key, at] of this.seen) {
      if (at + this.ttlMs > now) break;
      this.#drop(key);
    }
    const unique = [];
    const duplicates = [];
    const rejected = [];
    let seqReuses = 0;
    let evicted = 0;
    for (let index = 0; index < readings.length; index++) {
      let r;
      try {
        r = validate(readings[index]);
      } catch (e) {
        if (!(e instanceof Reject)) throw e;
        rejected.push({ index, field: e.field, code: e.code, message: e.message });
        continue;
      }
      const ds = `${r.device_id}:${r.seq}`;
      const key = `${ds}:${sha256hex(canonicalContent(r)).slice(0, 16)}`;
      if (this.seen.has(key)) {
        duplicates.push(index);
        continue;
      }
      if (this.held.has(ds)) seqReuses++; // looked up before an eviction, as Wasm does
      if (this.seen.size >= this.maxKeys) {
        this.#drop(this.seen.keys().next().value);
        evicted++;
      }
      this.held.set(ds, (this.held.get(ds) ?? 0) + 1);
      this.seen.set(key, now);
      unique.push({ index, key, ...r });
    }
    return {
      unique,
      duplicates_suppressed: duplicates.length,
      duplicates,
      pending: [],
      rejected,
      seq_reuses: seqReuses,
      ticket: null,
      audit: {
        logged_at: isoformat(now * 1000),
        level: 'INFO',
        event: 'burst_deduplicated',
        payload: {
          received: readings.length,
          unique: unique.length,
          duplicates_suppressed: duplicates.length,
          pending: 0,
          rejected: rejected.length,
          seq_reuses: seqReuses,
          evicted_before_ttl: evicted,
        },
      },
    };
  }
}
