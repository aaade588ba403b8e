// The worker's configuration: the variables of variables.js (their names, defaults and
// ranges are there), as wrangler.toml [vars], the secrets or workerd's environment give
// them, read once per env object and validated; a bad value makes every request answer
// 500 `invalid_config`.
import { checkUplinkOptions, HttpError, limits } from "./core.js";
import { variables } from "./variables.js";

// The core's own limits (defined once, in Rust) complete the table: TTL and cap of the
// seen-set, readings per request.
const VARIABLES = variables(limits());
// Whole numbers, given as plain decimal digits ("1048576") or as a TOML integer (a JS
// number); "0x10", "1e2", " 100 " or "+5" are refused.
const NUMBERS = Object.entries(VARIABLES).filter(([, v]) => v.kind === "number");
/** Whether `raw` leaves its variable unset: absent, empty, or null (workerd binds an unset environment variable as null). */
const unset = (raw) => raw === undefined || raw === null || raw === "";
/** The value of the string variable `name` in `env`, trimmed; its default when that leaves nothing. */
const text = (env, name) => (typeof env[name] === "string" ? env[name].trim() : "") || (VARIABLES[name].default ?? "");

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
  for (const [name, { default: dflt, min, max }] of NUMBERS) {
    const raw = env[name];
    const v = unset(raw) ? dflt : typeof raw === "number" || /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
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
  c.ORIGIN_URL = text(env, "ORIGIN_URL");
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
  c.INGEST_TOKEN = text(env, "INGEST_TOKEN");
  // A header value cannot carry a newline, and non-ASCII or inner white space does not
  // survive every client and proxy: such a token could never be presented. (Never echoed.)
  if (c.INGEST_TOKEN && !/^[\x21-\x7e]+$/.test(c.INGEST_TOKEN)) {
    return new HttpError(500, "invalid_config", "INGEST_TOKEN must be printable ASCII without white space inside (0x21-0x7E after trimming); the value is not shown");
  }
  // The one user name Basic auth accepts (else any). RFC 7617: a user-id holds no
  // colon; printable ASCII, as any client can send it. Not a secret: shown when wrong.
  c.BASIC_AUTH_USER = text(env, "BASIC_AUTH_USER");
  if (c.BASIC_AUTH_USER && !/^[\x20-\x39\x3b-\x7e]+$/.test(c.BASIC_AUTH_USER)) {
    return new HttpError(500, "invalid_config", `BASIC_AUTH_USER must be printable ASCII (0x20-0x7E) without ":", got ${JSON.stringify(env.BASIC_AUTH_USER)}`);
  }
  c.AUTH_HEADER = text(env, "AUTH_HEADER").toLowerCase();
  const unfit = authHeaderProblem(c.AUTH_HEADER);
  if (unfit) return new HttpError(500, "invalid_config", `AUTH_HEADER ${JSON.stringify(env.AUTH_HEADER)} ${unfit}`);
  const backfill = backfillConfig(env);
  if (backfill instanceof HttpError) return backfill;
  Object.assign(c, backfill);
  c.uplink = { maxReadings: c.MAX_READINGS };
  // A member name of the decoded payload, or a JSON Pointer into it (`/level/fill_pct`).
  for (const [name, option] of [["UPLINK_SEQ_FIELD", "seqField"], ["UPLINK_TS_FIELD", "tsField"], ["UPLINK_FILL_FIELD", "fillField"]]) {
    const value = unset(env[name]) ? VARIABLES[name].default : env[name];
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
 * "off"), `BACKFILL_HOSTS` (the hosts a TTS downlink URL may name: a comma-separated
 * list of `host`, `host:port` or `*.domain`, https; `http://host:port` allows plain
 * http to that one), `CHIRPSTACK_API_URL` and `CHIRPSTACK_API_TOKEN` (a secret; both or
 * neither).
 */
function backfillConfig(env) {
  const bad = (message) => new HttpError(500, "invalid_config", message);
  const on = text(env, "BACKFILL").toLowerCase();
  const { values } = VARIABLES.BACKFILL;
  if (!values.includes(on)) return bad(`BACKFILL must be ${values.map((v) => JSON.stringify(v)).join(" or ")}, got ${JSON.stringify(env.BACKFILL)}`);
  const hosts = [];
  for (const entry of text(env, "BACKFILL_HOSTS").split(",").map((h) => h.trim().toLowerCase()).filter(Boolean)) {
    const m = /^(http:\/\/)?(\*\.)?([a-z0-9.-]+)(:[0-9]{1,5})?$/.exec(entry);
    if (!m || (m[1] && (m[2] || !m[4]))) return bad(`BACKFILL_HOSTS: ${JSON.stringify(entry)} is not a host, host:port, *.domain or http://host:port`);
    hosts.push({ http: Boolean(m[1]), suffix: Boolean(m[2]), host: m[3], port: m[4] ? m[4].slice(1) : "" });
  }
  const api = text(env, "CHIRPSTACK_API_URL").replace(/\/+$/, "");
  const token = text(env, "CHIRPSTACK_API_TOKEN");
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
