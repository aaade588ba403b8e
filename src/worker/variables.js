// The worker's configuration variables, each defined here once: its name, its kind, its
// default and, for a number, its range. config.js validates a deployment's values by
// this table (an absent or empty variable takes its default); scripts/serve-workerd.mjs
// and scripts/start.mjs hand workerd these names and no other, and
// selfhost/workerd.capnp binds each of them (tests/worker/selfhost.test.mjs holds it
// to this list); README.md "Configuration" describes them for operators
// (tests/js/variables.test.mjs holds its names, defaults and ranges to this table).
// wrangler.toml [vars] sets only what a deployment changes.
//
// Pure: it imports nothing (no Wasm, no `cloudflare:` module), so that Node scripts and
// tests load it as it is. The three numbers whose range is the core's (its `limits()`)
// are named here and filled in by `variables(limits)`.

const DAY = 24 * 3600 * 1000;
const MIB = 1_048_576;
const number = (dflt, min, max) => ({ kind: "number", default: dflt, min, max });
/** A number whose default and range are the core's `limits()[name]`. */
const core = (name) => ({ kind: "number", core: name });
const string = (dflt, values) => (values ? { kind: "string", default: dflt, values } : { kind: "string", default: dflt });
const SECRET = { kind: "secret" };

/**
 * Every variable by name, in the order config.js checks them (a value that breaks two
 * rules is refused for the first). `kind`:
 * - "number": a whole number from `min` to `max`, `default` when unset; `core` names the
 *   member of the core's `limits()` that holds the three (see `variables`);
 * - "string": `default` when unset or empty; `values`, where present, the only ones
 *   allowed;
 * - "secret": set with `wrangler secret put` (locally .dev.vars or the environment),
 *   never in wrangler.toml; unset or empty means not configured.
 */
export const VARIABLES = deepFreeze({
  TTL_MS: core("ttlMs"), // how long a key suppresses replays
  MAX_KEYS_PER_DEVICE: core("maxKeys"), // the seen-set's cap per device
  MAX_BODY_BYTES: number(MIB, 1, 100 * MIB), // a larger body is 413
  MAX_READINGS: core("maxReadings"), // more readings in one request is 413
  LEDGER_RETENTION_MS: number(7 * DAY, 0, 3650 * DAY), // stored or delivered rows are kept this long (and at least TTL_MS)
  ORIGIN_TIMEOUT_MS: number(10_000, 1, 300_000), // per delivery request
  RETRY_BASE_MS: number(1_000, 1, DAY), // the first retry after this, doubling per failure
  RETRY_MAX_MS: number(3_600_000, 1, 7 * DAY), // the backoff's ceiling (at least RETRY_BASE_MS)
  DELIVERY_BATCH: number(500, 1, 10_000), // readings per POST to the origin
  MAX_DEVICES_PER_REQUEST: number(100, 1, 10_000), // more distinct devices in one request is 413
  STATS_FLUSH_MS: number(10_000, 1, 3_600_000), // a group reports to /v1/stats at most this often
  // A datalog record within this of a live reading's receive time, with its fill level,
  // is that reading (frames.js `crossPath`); 0 turns the rule off.
  CROSS_PATH_TOLERANCE_MS: number(120_000, 0, 3_600_000),
  // A bin's state (bin-state.js): a fall of more than this many percentage points
  // between consecutive newest readings, confirmed by the next, is a collection; a bin
  // is stale when its newest reading is older than this many reporting periods.
  COLLECTION_DROP_PCT: number(30, 1, 100),
  STALE_PERIODS: number(3, 1, 1000),
  // History retrieval (backfill.js), when BACKFILL is "on": how long a gap stays open
  // before the sensor is asked for it; the least time between two requests of one
  // device; how long a sent request waits for its records; the most slots one asks
  // for; sends of one request before it is given up; how far back the sensors keep
  // their records (0: no bound).
  BACKFILL_AFTER_MS: number(3_600_000, 0, 30 * DAY),
  BACKFILL_INTERVAL_MS: number(6 * 3_600_000, 0, 30 * DAY),
  BACKFILL_WAIT_MS: number(12 * 3_600_000, 1, 30 * DAY),
  BACKFILL_MAX_SLOTS: number(48, 1, 2048),
  BACKFILL_ATTEMPTS: number(5, 1, 20),
  BACKFILL_MAX_AGE_MS: number(0, 0, 3650 * DAY),
  ORIGIN_URL: string(""), // where admitted readings are POSTed; empty: they stay in the ledger
  INGEST_TOKEN: SECRET, // the token every /v1 route but health needs; unset: 503
  BASIC_AUTH_USER: string(""), // the one user name HTTP Basic auth accepts; empty: any
  AUTH_HEADER: string("authorization"), // the header that carries the token
  BACKFILL: string("off", ["on", "off"]), // "on": ask Milesight EM500s for the history they miss
  // The hosts a The Things Stack downlink URL (X-Downlink-Push) may name: The Things
  // Stack Cloud and The Things Network unless set.
  BACKFILL_HOSTS: string("*.cloud.thethings.industries,*.cloud.thethings.network"),
  CHIRPSTACK_API_URL: string(""), // ChirpStack's REST API, with CHIRPSTACK_API_TOKEN
  CHIRPSTACK_API_TOKEN: SECRET,
  // Where the decoded payload holds each field: a member name or a JSON Pointer.
  UPLINK_SEQ_FIELD: string("seq"),
  UPLINK_TS_FIELD: string("ts"),
  UPLINK_FILL_FIELD: string("fill_pct"),
});

/** The name of every variable the worker reads, secrets included. */
export const NAMES = Object.freeze(Object.keys(VARIABLES));
/** The secrets among them. */
export const SECRETS = Object.freeze(NAMES.filter((name) => VARIABLES[name].kind === "secret"));

/**
 * VARIABLES with the core's numbers complete: each `core` entry takes `default`, `min`
 * and `max` from `limits[core]` (`limits` being the core's `limits()`). Throws when
 * `limits` lacks one.
 */
export function variables(limits) {
  const out = {};
  for (const [name, v] of Object.entries(VARIABLES)) {
    if (!v.core) {
      out[name] = v;
      continue;
    }
    const range = limits?.[v.core];
    if (!range || ![range.default, range.min, range.max].every(Number.isSafeInteger)) {
      throw new Error(`${name}: the core's limits() gives no whole-number range ${v.core} { min, max, default }`);
    }
    out[name] = Object.freeze({ ...v, default: range.default, min: range.min, max: range.max });
  }
  return Object.freeze(out);
}

function deepFreeze(table) {
  for (const v of Object.values(table)) {
    if (v.values) Object.freeze(v.values);
    Object.freeze(v);
  }
  return Object.freeze(table);
}
