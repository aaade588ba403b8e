// Configuration from wrangler.toml [vars] (and secrets), read once per env object
// and validated; a bad value makes every request answer 500 `invalid_config`.
import { checkUplinkOptions, HttpError, limits } from "./core.js";

const DAY = 24 * 3600 * 1000;
// The core's own limits (defined once, in Rust): TTL and cap of the seen-set,
// readings per request.
const { ttlMs, maxKeys, maxReadings } = limits();
const range = (r) => [r.default, r.min, r.max];

// name: [default, min, max]; whole numbers, given as plain decimal digits ("1048576")
// or as a TOML integer (a JS number); "0x10", "1e2", " 100 " or "+5" are refused.
const NUMBERS = {
  TTL_MS: range(ttlMs),
  MAX_KEYS_PER_DEVICE: range(maxKeys),
  MAX_BODY_BYTES: [1_048_576, 1, 100 * 1_048_576],
  MAX_READINGS: range(maxReadings),
  LEDGER_RETENTION_MS: [7 * DAY, 0, 3650 * DAY],
  ORIGIN_TIMEOUT_MS: [10_000, 1, 300_000],
  RETRY_BASE_MS: [1_000, 1, DAY],
  RETRY_MAX_MS: [3_600_000, 1, 7 * DAY],
  DELIVERY_BATCH: [500, 1, 10_000],
  MAX_DEVICES_PER_REQUEST: [100, 1, 10_000],
  STATS_FLUSH_MS: [10_000, 1, 3_600_000],
  // A datalog record within this of a live reading's receive time, with its fill
  // level, is that reading (frames.js `crossPath`); 0 turns the rule off.
  CROSS_PATH_TOLERANCE_MS: [120_000, 0, 3_600_000],
  // History retrieval (backfill.js), when BACKFILL is "on": how long a gap stays open
  // before the sensor is asked for it; the least time between two requests of one
  // device; how long a sent request waits for its records; the most slots one asks
  // for; sends of one request before it is given up; how far back the sensors keep
  // their records (0: no bound).
  BACKFILL_AFTER_MS: [3_600_000, 0, 30 * DAY],
  BACKFILL_INTERVAL_MS: [6 * 3_600_000, 0, 30 * DAY],
  BACKFILL_WAIT_MS: [12 * 3_600_000, 1, 30 * DAY],
  BACKFILL_MAX_SLOTS: [48, 1, 2048],
  BACKFILL_ATTEMPTS: [5, 1, 20],
  BACKFILL_MAX_AGE_MS: [0, 0, 3650 * DAY],
};
// The hosts a The Things Stack downlink URL (X-Downlink-Push) may name when
// BACKFILL_HOSTS is not set: The Things Stack Cloud and The Things Network.
const TTS_HOSTS = "*.cloud.thethings.industries,*.cloud.thethings.network";

const cache = new WeakMap();

/** The validated configuration of `env`. Throws an HttpError 500 `invalid_config`. */
export function config(env) {
  let c = cache.get(env);
  if (!c) {
    c = read(env);
    cache.set(env, c);
  }
  if (c instanceof HttpError) throw c;
  return c;
}

function read(env) {
  const c = {};
  for (const [name, [dflt, min, max]] of Object.entries(NUMBERS)) {
    const raw = env[name];
    const v = raw === undefined || raw === "" ? dflt : typeof raw === "number" || /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(v) || v < min || v > max) {
      return new HttpError(500, "invalid_config", `${name} must be a whole number in ${min}..${max} written in decimal digits, got ${JSON.stringify(raw)}`);
    }
    c[name] = v;
  }
  if (c.RETRY_MAX_MS < c.RETRY_BASE_MS) {
    return new HttpError(500, "invalid_config", "RETRY_MAX_MS must be at least RETRY_BASE_MS");
  }
  // The ledger rows are the seen-set's source of truth: keep them at least a TTL.
  c.RETENTION_MS = Math.max(c.LEDGER_RETENTION_MS, c.TTL_MS);
  c.ORIGIN_URL = typeof env.ORIGIN_URL === "string" ? env.ORIGIN_URL.trim() : "";
  if (c.ORIGIN_URL) {
    let u;
    try {
      u = new URL(c.ORIGIN_URL);
    } catch {
      return new HttpError(500, "invalid_config", "ORIGIN_URL is not a URL");
    }
    if (u.protocol !== "https:" && u.protocol !== "http:") {
      return new HttpError(500, "invalid_config", "ORIGIN_URL must be http(s)");
    }
  }
  // Trimmed like the presented token; empty after trimming means not configured.
  c.INGEST_TOKEN = typeof env.INGEST_TOKEN === "string" ? env.INGEST_TOKEN.trim() : "";
  // A header value cannot carry a newline, and non-ASCII or inner white space does not
  // survive every client and proxy: such a token could never be presented. (Never echoed.)
  if (c.INGEST_TOKEN && !/^[\x21-\x7e]+$/.test(c.INGEST_TOKEN)) {
    return new HttpError(500, "invalid_config", "INGEST_TOKEN must be printable ASCII without white space inside (0x21-0x7E after trimming); the value is not shown");
  }
  // The one user name Basic auth accepts (else any). RFC 7617: a user-id holds no
  // colon; printable ASCII, as any client can send it. Not a secret: shown when wrong.
  c.BASIC_AUTH_USER = typeof env.BASIC_AUTH_USER === "string" ? env.BASIC_AUTH_USER.trim() : "";
  if (c.BASIC_AUTH_USER && !/^[\x20-\x39\x3b-\x7e]+$/.test(c.BASIC_AUTH_USER)) {
    return new HttpError(500, "invalid_config", `BASIC_AUTH_USER must be printable ASCII (0x20-0x7E) without ":", got ${JSON.stringify(env.BASIC_AUTH_USER)}`);
  }
  const header = typeof env.AUTH_HEADER === "string" ? env.AUTH_HEADER.trim().toLowerCase() : "";
  c.AUTH_HEADER = header || "authorization";
  const unfit = authHeaderProblem(c.AUTH_HEADER);
  if (unfit) return new HttpError(500, "invalid_config", `AUTH_HEADER ${JSON.stringify(env.AUTH_HEADER)} ${unfit}`);
  const backfill = backfillConfig(env);
  if (backfill instanceof HttpError) return backfill;
  Object.assign(c, backfill);
  c.uplink = { maxReadings: c.MAX_READINGS };
  // A member name of the decoded payload, or a JSON Pointer into it (`/level/fill_pct`).
  for (const [name, option] of [["UPLINK_SEQ_FIELD", "seqField"], ["UPLINK_TS_FIELD", "tsField"], ["UPLINK_FILL_FIELD", "fillField"]]) {
    const value = env[name];
    if (value === undefined || value === "") continue;
    try {
      if (typeof value !== "string") throw new Error("must be a string");
      checkUplinkOptions({ [option]: value });
    } catch (e) {
      return new HttpError(500, "invalid_config", `${name} ${JSON.stringify(value)}: ${String(e?.message ?? e).replace(/^invalid configuration: \w+: /, "")}`);
    }
    c.uplink[option] = value;
  }
  return c;
}

/**
 * The switches and targets of history retrieval (backfill.js): `BACKFILL` ("on" or
 * "off", the default), `BACKFILL_HOSTS` (the hosts a TTS downlink URL may name: a
 * comma-separated list of `host`, `host:port` or `*.domain`, https; `http://host:port`
 * allows plain http to that one), `CHIRPSTACK_API_URL` and `CHIRPSTACK_API_TOKEN` (a
 * secret; both or neither).
 */
function backfillConfig(env) {
  const text = (name) => (typeof env[name] === "string" ? env[name].trim() : "");
  const bad = (message) => new HttpError(500, "invalid_config", message);
  const on = text("BACKFILL").toLowerCase() || "off";
  if (on !== "on" && on !== "off") return bad(`BACKFILL must be "on" or "off", got ${JSON.stringify(env.BACKFILL)}`);
  const hosts = [];
  for (const entry of (text("BACKFILL_HOSTS") || TTS_HOSTS).split(",").map((h) => h.trim().toLowerCase()).filter(Boolean)) {
    const m = /^(http:\/\/)?(\*\.)?([a-z0-9.-]+)(:[0-9]{1,5})?$/.exec(entry);
    if (!m || (m[1] && (m[2] || !m[4]))) return bad(`BACKFILL_HOSTS: ${JSON.stringify(entry)} is not a host, host:port, *.domain or http://host:port`);
    hosts.push({ http: Boolean(m[1]), suffix: Boolean(m[2]), host: m[3], port: m[4] ? m[4].slice(1) : "" });
  }
  const api = text("CHIRPSTACK_API_URL").replace(/\/+$/, "");
  const token = text("CHIRPSTACK_API_TOKEN");
  if (Boolean(api) !== Boolean(token)) return bad("CHIRPSTACK_API_URL and CHIRPSTACK_API_TOKEN are set together or not at all");
  if (api) {
    let u;
    try {
      u = new URL(api);
    } catch {
      return bad("CHIRPSTACK_API_URL is not a URL");
    }
    if (u.protocol !== "https:" && u.protocol !== "http:") return bad("CHIRPSTACK_API_URL must be http(s)");
  }
  if (token && !/^[\x21-\x7e]+$/.test(token)) return bad("CHIRPSTACK_API_TOKEN must be printable ASCII without white space inside; the value is not shown");
  return { BACKFILL: on === "on", BACKFILL_HOSTS: hosts, CHIRPSTACK_API_URL: api, CHIRPSTACK_API_TOKEN: token };
}

// Header names a proxy, the platform or the client sets, rewrites or strips: a token
// carried in one of them could be forged (Host) or lost on the way.
const RESERVED_HEADERS = new Set([
  "host", "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "content-length",
  "content-type", "content-encoding", "cookie", "forwarded", "x-real-ip", "via", "true-client-ip",
  "origin", "referer", "user-agent", "expect", "accept-encoding", "x-client-ip", "date", "range",
]);
// sec-*: set by browsers only; if-*: conditional requests, consumed by caches.
const RESERVED_PREFIXES = ["proxy-", "x-forwarded-", "cf-", "sec-", "if-"];

/** Why `name` (lower case) cannot carry the token, or null when it can. */
function authHeaderProblem(name) {
  // RFC 9110 token: the characters a field name may have.
  if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) return "is not a valid header name (RFC 9110 token characters only)";
  if (RESERVED_HEADERS.has(name) || RESERVED_PREFIXES.some((p) => name.startsWith(p))) {
    return "names a header that proxies or the platform set, rewrite or strip; choose another, e.g. x-ingest-token";
  }
  return null;
}
