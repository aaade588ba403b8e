// Asking a sensor for what is missing (docs/sequence-health.md "Asking the sensor for what is missing"). A Milesight EM500 keeps its
// readings and sends again those of a time range when asked by a downlink (`fd 6c`,
// start and end in Unix seconds, u32 little-endian, on fPort 85). When a device's
// sequence window has a gap that its reconnect replay did not close within
// BACKFILL_AFTER_MS, its object asks for that range through the network server that
// delivered the uplink: The Things Stack's webhook downlink API (the X-Downlink-Push
// URL and X-Downlink-Apikey key the uplink's request carried) or ChirpStack's REST API
// (CHIRPSTACK_API_URL, CHIRPSTACK_API_TOKEN). The records that come back are ordinary
// uplinks: deduplicated like any other, they close the gap.
//
// One device has at most one open request (a row in state `queued` or `sent`; a unique
// index holds it). Everything happens at an uplink of the device, after its burst is
// stored: a Class A sensor only receives a downlink after an uplink, and the uplink's
// request carries the TTS key, which is never stored. A send that fails is retried at
// a later uplink, with backoff (RETRY_BASE_MS doubling to RETRY_MAX_MS), at most
// BACKFILL_ATTEMPTS sends; a refusal (4xx other than 408 and 429) is final; a redirect
// is a failure, never followed (it could lead off the hosts BACKFILL_HOSTS allows). A
// request the network server accepted waits BACKFILL_WAIT_MS for its records, then
// expires; its range is not asked for again. A request whose range has no missing slot
// left without its records coming back (a queued one the replay closed by itself, a
// sent one the window forgot: a reset) is cancelled. A device asks at most once per
// BACKFILL_INTERVAL_MS. A network server's error text is kept and logged without the
// credential it was sent.

import { CODEC_INFO, guarded, hex, historyRequest } from "./core.js";
import { countBackfill } from "./figures.js";
import { fetchWithin } from "./http.js";

/** Closed requests GET /v1/devices/{id}/gaps shows, newest first. */
export const RECENT_SHOWN = 10;

/** Requests kept per device (open and closed, newest); older closed ones are deleted. */
const KEPT = 100;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS backfill (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id TEXT NOT NULL,
  from_seq INTEGER NOT NULL,       -- the window's slots asked for, inclusive
  to_seq INTEGER NOT NULL,
  start_s INTEGER NOT NULL,        -- the device-time range asked for, Unix seconds, inclusive
  end_s INTEGER NOT NULL,
  via TEXT NOT NULL,               -- tts | chirpstack
  payload TEXT NOT NULL,           -- the downlink's bytes, hex
  f_port INTEGER NOT NULL,
  state TEXT NOT NULL,             -- queued (not yet accepted) | sent (accepted, waiting) | answered | expired | failed | cancelled
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  next_attempt_at INTEGER,         -- queued: the earliest next send (a send in flight holds it)
  sent_at INTEGER,
  closed_at INTEGER,
  recovered INTEGER NOT NULL DEFAULT 0, -- slots of the range that arrived after it was sent
  last_error TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS backfill_one_open ON backfill (device_id) WHERE state IN ('queued', 'sent');
CREATE INDEX IF NOT EXISTS backfill_by_device ON backfill (device_id, id);
`;

/** Creates the group's table of its devices' history requests. Idempotent. */
export function prepareBackfill(sql) {
  sql.exec(SCHEMA);
}

/**
 * Where a history request for the device of this uplink would go, from the request
 * (index.js): `{via: "tts", url, api_key}` from The Things Stack's headers,
 * `{via: "chirpstack"}` when the ChirpStack API is configured, or null (BACKFILL off, no
 * target, or a TTS URL whose host BACKFILL_HOSTS does not allow: logged WARN
 * downlink_target_refused, and the uplink is ingested as ever).
 */
export function downlinkTarget(request, cfg, format, burst_id) {
  if (!cfg.BACKFILL) return null;
  if (format === "chirpstack") return cfg.CHIRPSTACK_API_URL ? { via: "chirpstack" } : null;
  if (format !== "ttn" && format !== "tts") return null;
  const push = request.headers.get("x-downlink-push");
  const key = request.headers.get("x-downlink-apikey");
  if (!push || !key) return null;
  const refused = ttsTargetProblem(push, key, cfg.BACKFILL_HOSTS);
  if (refused) {
    console.log(JSON.stringify({ level: "WARN", event: "downlink_target_refused", burst_id, reason: refused }));
    return null;
  }
  return { via: "tts", url: push, api_key: key };
}

/** Why a TTS downlink URL and key cannot be used, or null. */
function ttsTargetProblem(push, key, hosts) {
  let u;
  try {
    u = new URL(push);
  } catch {
    return "X-Downlink-Push is not a URL";
  }
  const host = u.hostname.toLowerCase();
  const allowed = hosts.some((h) => {
    if (h.port !== u.port) return false;
    if (h.http !== (u.protocol === "http:") || (u.protocol !== "http:" && u.protocol !== "https:")) return false;
    return h.suffix ? host.endsWith(`.${h.host}`) : host === h.host;
  });
  if (!allowed) return `X-Downlink-Push names ${u.protocol}//${u.host}, which BACKFILL_HOSTS does not allow`;
  if (u.search || u.hash || u.username || u.password || !/^\/api\/v3\/as\/applications\/[^/]+\/webhooks\/[^/]+\/devices\/[^/]+\/down\/push$/.test(u.pathname)) {
    return "X-Downlink-Push is not a The Things Stack downlink push path (/api/v3/as/applications/{app}/webhooks/{webhook}/devices/{device}/down/push)";
  }
  if (!/^[\x21-\x7e]{1,1024}$/.test(key)) return "X-Downlink-Apikey is not a printable token";
  return null;
}

/**
 * After a stored burst of the device (raw-uplinks.js): closes the open request when its
 * range has arrived or its wait is over, sends it again when a retry is due, or asks
 * for the oldest gap open longer than BACKFILL_AFTER_MS. `device`: `{codec, period,
 * port, enabled}` (`port`: its configured application port, null for the codec's;
 * `enabled`: the device's own switch, null for the default); `health`:
 * `{at, gaps(), recovered}`: the burst's time, the window's gaps after it (`[{from,
 * to, first_noticed_ms}]`, read when needed) and the seqs it recovered;
 * `target`: `downlinkTarget`'s; `context`: the burst's, for the log lines.
 * Returns a promise of the send it started (for waitUntil), or null. Never throws
 * for the network server: its failures are logged and recorded.
 */
export function backfillStep(storage, cfg, now, { device, health, target, context }) {
  const sql = storage.sql;
  const { device_id } = context;
  let open = openRequest(sql, device_id);
  if (open) open = settle(sql, cfg, now, open, health, context);
  // The sensors that answer a history request: their codec names its port (the core's
  // `limits().codecInfo`), the application port, which the device's config may have set.
  const historyPort = CODEC_INFO[device.codec]?.historyFPort ?? null;
  const f_port = historyPort === null ? null : (device.port ?? historyPort);
  const enabled = cfg.BACKFILL && device.enabled !== false && f_port !== null && device.period && target;
  if (!enabled) return null;
  if (open) {
    if (open.state !== "queued" || open.next_attempt_at > now) return null;
    // Sent again to the port the configuration names now (the sensor's may have been set since).
    return send(storage, cfg, now, { ...open, f_port }, target, context);
  }
  const last = sql.exec("SELECT MAX(created_at) AS at FROM backfill WHERE device_id = ?", device_id).one().at;
  if (last !== null && now - last < cfg.BACKFILL_INTERVAL_MS) return null;
  // Never older than the sensor keeps: from the first slot that ended within BACKFILL_MAX_AGE_MS.
  const oldest = cfg.BACKFILL_MAX_AGE_MS ? Math.ceil((now - cfg.BACKFILL_MAX_AGE_MS) / 1000 / device.period) - 1 : -Infinity;
  const range = wanted(sql, device_id, cfg, now, health, oldest);
  if (!range) return null;
  // Never a time the sensor has not reached: a clock running ahead dates the window's
  // highest slot, and the gaps below it, after now. Only slots wholly past are asked for.
  range.to = Math.min(range.to, Math.floor(now / 1000 / device.period) - 1);
  if (range.to < range.from) return null;
  const start_s = range.from * device.period;
  const end_s = (range.to + 1) * device.period - 1;
  if (start_s < 0 || end_s > 0xffff_ffff) return null; // not a time the sensor can hold
  // The downlink's bytes as the codec writes them (the core's `historyRequest`), kept as hex.
  const payload = hex(guarded(() => historyRequest(device.codec, start_s, end_s)));
  const row = sql
    .exec(
      `INSERT INTO backfill (device_id, from_seq, to_seq, start_s, end_s, via, payload, f_port, state, created_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?) RETURNING *`,
      device_id, range.from, range.to, start_s, end_s, target.via, payload, f_port, now, now,
    )
    .one();
  countBackfill(sql, device_id, "requested");
  // The device's closed requests but the newest KEPT.
  sql.exec(
    "DELETE FROM backfill WHERE device_id = ?1 AND state NOT IN ('queued', 'sent') AND id <= (SELECT id FROM backfill WHERE device_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
    device_id,
    KEPT,
  );
  return send(storage, cfg, now, row, target, context);
}

/** The device's open request (`queued` or `sent`), or null. */
function openRequest(sql, device_id) {
  return sql.exec("SELECT * FROM backfill WHERE device_id = ? AND state IN ('queued', 'sent')", device_id).toArray()[0] ?? null;
}

/**
 * A request whose range has no missing slot left is answered when this burst brought
 * some of it back to a sent request, else cancelled (a queued one the replay closed by
 * itself: it is not sent; a sent one whose range the window forgot, a reset or a
 * dropped gap: nothing came back). A sent one older than BACKFILL_WAIT_MS expires.
 * Counts the slots of a sent request's range this burst recovered. Returns the request
 * if still open, else null.
 */
function settle(sql, cfg, now, open, health, context) {
  const sent = open.state === "sent";
  const back = sent ? health.recovered.filter((seq) => seq >= open.from_seq && seq <= open.to_seq).length : 0;
  const missing = health.gaps().some((g) => g.from <= open.to_seq && g.to >= open.from_seq);
  const state = !missing ? (back > 0 ? "answered" : "cancelled") : sent && now - open.sent_at >= cfg.BACKFILL_WAIT_MS ? "expired" : null;
  sql.exec("UPDATE backfill SET recovered = recovered + ?, state = COALESCE(?, state), closed_at = CASE WHEN ? IS NULL THEN closed_at ELSE ? END WHERE id = ?", back, state, state, now, open.id);
  if (!state) return open;
  countBackfill(sql, open.device_id, state);
  const line = { ...context, request: open.id, from: open.from_seq, to: open.to_seq, start_s: open.start_s, end_s: open.end_s, recovered: open.recovered + back, waited_ms: sent ? now - open.sent_at : null };
  console.log(JSON.stringify({ level: state === "answered" || !sent ? "INFO" : "WARN", event: `backfill_${state}`, ...line }));
  return null;
}

/**
 * The slots to ask for: the oldest gap open longer than BACKFILL_AFTER_MS and noticed
 * before this burst (its replay may still be under way), from its first slot at or
 * after `oldest` that no expired or failed request asked for, at most
 * BACKFILL_MAX_SLOTS, up to its end or the next slot asked for already. Null when there
 * is none.
 */
function wanted(sql, device_id, cfg, now, { at, gaps }, oldest) {
  const asked = sql.exec("SELECT from_seq, to_seq FROM backfill WHERE device_id = ? AND state IN ('expired', 'failed') ORDER BY from_seq", device_id).toArray();
  for (const gap of gaps()) {
    if (gap.first_noticed_ms >= at || gap.first_noticed_ms + cfg.BACKFILL_AFTER_MS > now) continue;
    let from = Math.max(gap.from, oldest);
    for (const a of asked) if (a.from_seq <= from && a.to_seq >= from) from = a.to_seq + 1;
    if (from > gap.to) continue;
    let to = Math.min(gap.to, from + cfg.BACKFILL_MAX_SLOTS - 1);
    for (const a of asked) if (a.from_seq > from && a.from_seq <= to) to = a.from_seq - 1;
    return { from, to };
  }
  return null;
}

/**
 * Sends `row` through `target` and records the outcome, unless the row was closed
 * meanwhile (`settle`). The row holds the send (its next attempt is pushed past the
 * timeout first), so a concurrent burst does not send it again. Resolves when
 * recorded; never rejects.
 */
function send(storage, cfg, now, row, target, context) {
  const sql = storage.sql;
  const attempt = row.attempts + 1;
  sql.exec("UPDATE backfill SET attempts = ?, next_attempt_at = ?, via = ?, f_port = ? WHERE id = ?", attempt, now + cfg.ORIGIN_TIMEOUT_MS + 1000, target.via, row.f_port, row.id);
  const line = { ...context, request: row.id, via: target.via, attempt, from: row.from_seq, to: row.to_seq, start_s: row.start_s, end_s: row.end_s, f_port: row.f_port, payload: row.payload };
  return post(cfg, target, context.device_id, row)
    .then(() => {
      const open = sql.exec("UPDATE backfill SET state = 'sent', sent_at = ?, next_attempt_at = NULL, last_error = NULL WHERE id = ? AND state = 'queued'", Date.now(), row.id).rowsWritten;
      if (open) countBackfill(sql, row.device_id, "sent");
      // Closed while it was on its way (its gap closed by itself): the sensor may still answer, harmlessly.
      console.log(JSON.stringify({ level: "INFO", event: "backfill_requested", ...line, ...(open ? {} : { closed_meanwhile: true }) }));
    })
    .catch((e) => {
      const error = String(e?.message ?? e).slice(0, 500);
      const final = e?.final || attempt >= cfg.BACKFILL_ATTEMPTS;
      const retryAt = Date.now() + Math.min(cfg.RETRY_MAX_MS, cfg.RETRY_BASE_MS * 2 ** (attempt - 1));
      try {
        if (final) {
          const closed = sql.exec("UPDATE backfill SET state = 'failed', closed_at = ?, next_attempt_at = NULL, last_error = ? WHERE id = ? AND state = 'queued'", Date.now(), error, row.id).rowsWritten;
          if (closed) countBackfill(sql, row.device_id, "failed");
        } else sql.exec("UPDATE backfill SET next_attempt_at = ?, last_error = ? WHERE id = ? AND state = 'queued'", retryAt, error, row.id);
      } catch (w) {
        // The row keeps its hold: the next burst after it retries.
        console.log(JSON.stringify({ level: "ERROR", event: "backfill_not_recorded", ...line, error: String(w?.message ?? w) }));
      }
      console.log(JSON.stringify({ level: final ? "ERROR" : "WARN", event: final ? "backfill_failed" : "backfill_retry", ...line, error, ...(final ? {} : { retry_at: new Date(retryAt).toISOString() }) }));
    });
}

/**
 * POSTs the request's downlink to the network server; rejects with `final` for a
 * refusal, and for a redirect (not followed) or another failure with its status and
 * text, the credential sent cut out of it (a server may echo it).
 */
async function post(cfg, target, device_id, row) {
  const frm = btoa(String.fromCharCode(...row.payload.match(/../g).map((h) => parseInt(h, 16))));
  const [url, headers, body] =
    target.via === "tts"
      ? [target.url, { authorization: `Bearer ${target.api_key}` }, { downlinks: [{ f_port: row.f_port, frm_payload: frm, priority: "NORMAL" }] }]
      : [
          `${cfg.CHIRPSTACK_API_URL}/api/devices/${encodeURIComponent(device_id.toLowerCase())}/queue`,
          { "grpc-metadata-authorization": `Bearer ${cfg.CHIRPSTACK_API_TOKEN}` },
          { queueItem: { confirmed: false, fPort: row.f_port, data: frm } },
        ];
  const init = { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), redirect: "manual" };
  const { res, text } = await fetchWithin(url, init, cfg.ORIGIN_TIMEOUT_MS, async (res) => ({ res, text: await res.text().catch(() => "") }));
  if (res.ok) return;
  const secret = target.via === "tts" ? target.api_key : cfg.CHIRPSTACK_API_TOKEN;
  const e = new Error(`${target.via} answered ${res.status}: ${redacted(text, secret).slice(0, 300)}`);
  e.final = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
  throw e;
}

/** How much of a network server's answer is searched for the credential (and at most 300 characters of it shown). */
const ECHO_SEARCHED = 65_536;

/**
 * `text` (its first ECHO_SEARCHED characters) with every spelling of `secret` a server
 * may echo replaced by "[credential]": as it is, in base64 or base64url (inside a
 * longer encoded text too), and each of those with any of its characters
 * percent-encoded (either case of hex digits, `+` for a space) or written as a JSON
 * escape (`\uXXXX`, `\"`, `\\`, `\/`; escaped again, up to 8 backslashes, when quoted
 * again). Base64 writes 3 bytes as 4 characters, so the secret's characters depend on
 * where it starts modulo 3: for each of the three starts, the characters that depend on
 * nothing but the secret's bytes, when there are at least 4 of them (fewer would cut
 * ordinary words out of the message; both network servers' keys are far longer). The
 * expression has no unbounded repetition and matches a run of backslashes one way
 * only, so its cost is linear in the text.
 */
export function redacted(text, secret) {
  if (!secret) return text;
  const bytes = new TextEncoder().encode(secret);
  const spellings = new Set([secret]);
  for (let start = 0; start < 3; start++) {
    const padded = new Uint8Array(start + bytes.length);
    padded.set(bytes, start);
    const b64 = btoa(String.fromCharCode(...padded));
    // Characters before ceil(4·start/3) hold filler bits; those from floor(4·(start + n)/3) on, the bytes after.
    const core = b64.slice(Math.ceil((4 * start) / 3), Math.floor((4 * (start + bytes.length)) / 3));
    if (core.length < 4) continue;
    spellings.add(core);
    spellings.add(core.replaceAll("+", "-").replaceAll("/", "_"));
  }
  // Longest first: a spelling inside another is replaced with it. Each as it is, then with
  // its characters in any of their spellings.
  const runs = { n: 0 };
  const patterns = [...spellings].sort((a, b) => b.length - a.length).flatMap((s) => [literal(s), [...s].map((c) => anySpelling(c, runs)).join("")]);
  return text.slice(0, ECHO_SEARCHED).replace(new RegExp(patterns.join("|"), "g"), "[credential]");
}

const literal = (s) => s.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");

/**
 * A regular expression matching the character `c` as it is, percent-encoded or
 * JSON-escaped (one to eight backslashes). A backslash's own spellings are a lone
 * backslash, or a whole run of 2 to 9 taken at once (a lookahead and a backreference,
 * named from `runs`), so that no run is split two ways.
 */
function anySpelling(c, runs) {
  const hex = (n, width) => [...n.toString(16).padStart(width, "0")].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join("");
  const ways = [[...new TextEncoder().encode(c)].map((b) => `%${hex(b, 2)}`).join("")];
  ways.push([...Array(c.length).keys()].map((i) => `\\\\{1,8}u${hex(c.charCodeAt(i), 4)}`).join(""));
  if (c === "\\") {
    const name = `run${runs.n++}`;
    ways.push("\\\\(?!\\\\)", `(?=(?<${name}>\\\\{2,9}))\\k<${name}>`);
  } else {
    ways.push(literal(c));
  }
  if (c === " ") ways.push("\\+");
  if (c === '"' || c === "/") ways.push(`\\\\{1,8}\\${c}`);
  return `(?:${ways.join("|")})`;
}

/**
 * The device's requests for GET /v1/devices/{id}/gaps: the open one and the last
 * RECENT_SHOWN closed, newest first, times as ISO strings. Reads only.
 */
export function backfillView(sql, device_id, iso) {
  const rows = sql.exec("SELECT * FROM backfill WHERE device_id = ? ORDER BY id DESC LIMIT ?", device_id, RECENT_SHOWN + 1).toArray();
  const view = (r) => ({
    id: r.id,
    state: r.state,
    via: r.via,
    from: r.from_seq,
    to: r.to_seq,
    start: iso(r.start_s * 1000),
    end: iso(r.end_s * 1000),
    f_port: r.f_port,
    payload: r.payload,
    attempts: r.attempts,
    created_at: iso(r.created_at),
    sent_at: r.sent_at === null ? null : iso(r.sent_at),
    closed_at: r.closed_at === null ? null : iso(r.closed_at),
    recovered: r.recovered,
    last_error: r.last_error,
  });
  const open = rows.find((r) => r.state === "queued" || r.state === "sent");
  return { open: open ? view(open) : null, recent: rows.filter((r) => r !== open).slice(0, RECENT_SHOWN).map(view) };
}

/**
 * Closes the open request as `cancelled` (a reset of the device's memory), inside the
 * caller's transaction. Returns whether there was one: the caller counts it
 * (`backfill_cancelled`) once that transaction committed (window.js `windowRestarted`).
 */
export function cancelBackfill(sql, device_id, now) {
  return sql.exec("UPDATE backfill SET state = 'cancelled', closed_at = ?, next_attempt_at = NULL WHERE device_id = ? AND state IN ('queued', 'sent')", now, device_id).rowsWritten > 0;
}
