// The edge worker: routes, authenticates, enforces limits and hands each device's
// readings to the Durable Object of its group (group.js), one call per group a request
// names. Parsing and mapping webhooks happens in the Wasm core (parseUplink);
// deduplication and storage in src/worker/admission.js, delivery in delivery.js.
import { authenticate, requireConfiguredToken } from "./auth.js";
import { downlinkTarget } from "./backfill.js";
import { config } from "./config.js";
import { ADMITTED, auditLine, checkDeviceId, CONFLICT, DUPLICATE, guarded, HttpError, isoTime, logNothingStored, parseUplink, SeqWindow } from "./core.js";
import { bulkRow, bulkRows, CONFIG_MEMBERS, configOf, readMembers } from "./device-config-body.js";
import { mapAtMost, yieldToIo } from "./fanout.js";
import { decodedView, decodeRaw, PAYLOAD_FIELD, previewNotDecoded } from "./decode.js";
import { BIN_COLUMNS, stateOf } from "./bin-state.js";
import { byCode, countMessage, countUnroutable, deviceHealth, fleetBins, fleetFigures, fleetHealth, fleetStats, HEALTH_COLUMNS, IGNORED, knows } from "./fleet.js";
import { group } from "./group.js";
import { groupOf } from "./placement.js";
import { exposition } from "./metrics.js";
import { METRICS_CONTENT_TYPE } from "./prometheus-text.js";
import { openApiJson } from "./openapi.js";
import { BULK_CONFIG_ROWS, CHIRPSTACK_EVENTS, FORGET_KEY_CHARS, PAGE_ROWS, REDRIVE_KEYS, UPLINK_ROUTES } from "./routes.js";

export { FleetObject } from "./fleet.js";
export { GroupObject } from "./group.js";
export { DeviceObject } from "./legacy.js";

const UPLINK_FORMATS = new Set(UPLINK_ROUTES);
// Group objects one request calls at a time: a request naming many devices (at most
// MAX_DEVICES_PER_REQUEST) must not hold the isolate's every connection.
const DEVICE_CALLS_AT_ONCE = 16;
// Calls of one group's share of a request, the first included, while they throw.
const DEVICE_CALL_ATTEMPTS = 3;

export default {
  async fetch(request, env) {
    let response;
    try {
      response = await route(request, env);
    } catch (e) {
      if (e instanceof HttpError) response = error(e.status, e.code, e.message, e.headers);
      else {
        console.log(JSON.stringify({ level: "ERROR", event: "unhandled", error: String(e?.stack ?? e) }));
        response = error(500, "internal_error", "unexpected error; see the worker log");
      }
    }
    if (request.body && !request.bodyUsed) await discard(request);
    // Every /v1 reply is about this moment and, but for health and the OpenAPI document,
    // for one token's holder: no shared cache may keep it. A cache keeps answers to
    // requests with Authorization apart (RFC 9111, section 3.5), not those with the
    // token in AUTH_HEADER. A route that may be cached says so itself.
    if (/^\/v1(\/|$)/.test(new URL(request.url).pathname) && !response.headers.has("cache-control")) {
      response = new Response(response.body, response);
      response.headers.set("cache-control", "no-store");
    }
    if (request.method === "HEAD") return new Response(null, { status: response.status, headers: response.headers });
    return response;
  },
};

async function route(request, env) {
  const url = new URL(request.url);
  // The runtime has resolved dot segments already (`/devices/%2E%2E/readings` arrives as
  // `/readings`), which is why the core refuses the device ids "." and "..".
  const path = url.pathname.replace(/\/+$/, "") || "/";
  // HEAD is GET without the body (dropped in fetch above).
  const method = request.method === "HEAD" ? "GET" : request.method;
  if (!path.startsWith("/v1/")) {
    // The demo page (www/): on Cloudflare and under wrangler dev its files are served
    // before the worker runs; under workerd (npm start, serve:workerd) the worker asks
    // ASSETS (selfhost/assets.js) first, before reading its configuration, so that a
    // bad var does not take the page with it there either.
    if (env.ASSETS && method === "GET") {
      const file = await env.ASSETS.fetch(request);
      if (file.status !== 404) return file;
    }
    config(env);
    throw new HttpError(404, "not_found", `no route for ${path}`);
  }
  // A bad configuration answers 500 invalid_config on every route, health included.
  const cfg = config(env);
  if (path === "/v1/health") {
    // No token needed, but "ok" only when one is configured.
    requireConfiguredToken(cfg);
    return only(method, "GET", () => json(200, { ok: true }));
  }
  if (path === "/v1/openapi.json") {
    // No token, like health: the document holds no secret (the README says as much),
    // and client generators fetch it without one. A worker that cannot serve (bad
    // configuration, no token) still says so, as on every route.
    requireConfiguredToken(cfg);
    return only(method, "GET", () => new Response(openApiJson(), { headers: OPENAPI_HEADERS }));
  }
  // Before the credentials: a cross-site request is refused whatever it carries.
  if (method !== "GET") refuseCrossSite(request, url);
  await authenticate(request, cfg);
  let m;
  if ((m = path.match(/^\/v1\/uplinks\/([a-z]+)$/)) && UPLINK_FORMATS.has(m[1])) {
    return only(method, "POST", () => {
      const event = m[1] === "chirpstack" ? chirpStackEvent(url.searchParams.getAll("event")) : "up";
      // Read no further: its body may be in a Protobuf encoding the worker does not read.
      if (event !== "up") return acknowledge(env, "chirpstack", event, crypto.randomUUID());
      return ingest(request, env, cfg, m[1], `uplinks/${m[1]}`);
    });
  }
  if (path === "/v1/readings") return only(method, "POST", () => ingest(request, env, cfg, "readings", "readings"));
  if (path === "/v1/stats") return only(method, "GET", () => stats(env));
  if (path === "/v1/metrics") return only(method, "GET", () => metrics(env));
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/readings$/))) {
    return only(method, "GET", () => ledger(env, deviceIdOf(m[1]), url.searchParams));
  }
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/gaps$/))) {
    return only(method, "GET", () => gaps(env, deviceIdOf(m[1])));
  }
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/state$/))) {
    return only(method, "GET", () => binStateOf(env, deviceIdOf(m[1])));
  }
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/collections$/))) {
    return only(method, "GET", () => collectionsOf(env, deviceIdOf(m[1]), url.searchParams));
  }
  if (path === "/v1/bins") return only(method, "GET", () => binsOf(request, env, url));
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/redrive$/))) {
    return only(method, "POST", () => redrive(request, env, deviceIdOf(m[1]), url.searchParams));
  }
  if (path === "/v1/devices/health") return only(method, "GET", () => fleetHealthOf(request, env, url));
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/health$/))) {
    return only(method, "GET", () => healthOfDevice(request, env, deviceIdOf(m[1]), url.searchParams));
  }
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/forget$/))) {
    return only(method, "POST", () => forget(request, env, cfg, deviceIdOf(m[1])));
  }
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/reset$/))) {
    return only(method, "POST", () => reset(request, env, deviceIdOf(m[1])));
  }
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/history$/))) {
    return only(method, "GET", () => history(env, deviceIdOf(m[1]), url.searchParams));
  }
  if (path === "/v1/devices/config") return only(method, "POST", () => configureAll(request, env, cfg));
  if ((m = path.match(/^\/v1\/devices\/([^/]*)\/config$/))) {
    return byMethod(method, {
      GET: () => configuration(env, deviceIdOf(m[1])),
      PUT: () => configure(request, env, cfg, deviceIdOf(m[1])),
    });
  }
  throw new HttpError(404, "not_found", `no route for ${path}`);
}

// A body the answer did not need (a 401, 404, 405, 413 or 415, a ChirpStack event
// other than `up`) is read to its end and dropped when it is at most this long (four
// times MAX_BODY_BYTES's default: a 413's body is read too), within this time; a longer
// one, or one still arriving after it, is cancelled.
const DISCARD_MAX_BYTES = 4 * 1_048_576;
const DISCARD_MS = 1_000;

/**
 * Reads and drops what is left of `request`'s body. A cancelled body breaks the
 * connection it came on under `wrangler dev` (npm start): its proxy's next request on
 * that connection was answered 503 "Your worker restarted mid-request" without
 * reaching the worker, or hung, so a ChirpStack `status` event lost the uplink that
 * followed it; a 413 for a body over MAX_BODY_BYTES lost the next uplink the same way.
 * Cancelling stays for a body declared longer than DISCARD_MAX_BYTES and for one that
 * is slower than DISCARD_MS (a Content-Length lie gets its 413 after DISCARD_MS,
 * rather than after bytes that may never come).
 */
async function discard(request) {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > DISCARD_MAX_BYTES) return request.body.cancel().catch(() => {});
  const reader = request.body.getReader();
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(resolve, DISCARD_MS, null)));
  let size = 0;
  let done = false;
  try {
    while (!done && size <= DISCARD_MAX_BYTES) {
      const chunk = await Promise.race([reader.read(), late]);
      if (chunk === null) break;
      done = chunk.done;
      size += chunk.value?.byteLength ?? 0;
    }
  } catch {
    // The client went away: nothing is left to read, and nobody to answer.
    done = true;
  } finally {
    clearTimeout(timer);
  }
  if (!done) await reader.cancel().catch(() => {});
}

/**
 * A browser sends a user's ambient credentials (Basic, cached for the worker's origin)
 * with a form or `fetch()` another site makes it send: a page on evil.example could
 * POST .../reset for an operator who once signed in. Every route that can change state
 * refuses a request a browser marks as from another site (`Sec-Fetch-Site`, sent by
 * every current browser), or, from a browser that does not send it, whose `Origin` is
 * not the worker's. Network servers send neither header; the demo page is same-origin.
 */
function refuseCrossSite(request, url) {
  const site = request.headers.get("sec-fetch-site");
  const origin = request.headers.get("origin");
  const foreign = site !== null ? site !== "same-origin" && site !== "none" : origin !== null && origin !== url.origin;
  if (foreign) {
    const from = site !== null ? `Sec-Fetch-Site: ${site}` : `Origin: ${origin.slice(0, 200)}`;
    throw new HttpError(403, "cross_site_request", `a request from another site (${from}) cannot change state; send it from a server or from this worker's own pages`);
  }
}

/**
 * What an operator route that changes state accepts as a body: none, or JSON. A form
 * (application/x-www-form-urlencoded, multipart/form-data, text/plain) is what a page on
 * another site can make a browser send without asking; it is refused even where the
 * route reads no body.
 */
function refuseNonJson(request) {
  const type = mediaType(request);
  if (type !== "" && !isJson(type)) throw new HttpError(415, "unsupported_media_type", `send no body or Content-Type: application/json, not ${JSON.stringify(type.slice(0, 100))}`);
}

/** The media type of `request`'s Content-Type, lower case, without parameters; "" when absent. */
function mediaType(request) {
  return (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}

function isJson(type) {
  return type === "application/json" || type.endsWith("+json");
}

/** GET routes also answer HEAD; a 405 names what is allowed. */
function only(method, allowed, handler) {
  return byMethod(method, { [allowed]: handler });
}

/** The handler of `method` among `handlers` (method → handler), else a 405 naming them (GET with HEAD). */
function byMethod(method, handlers) {
  if (!Object.hasOwn(handlers, method)) {
    const allow = Object.keys(handlers)
      .flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m]))
      .join(", ");
    throw new HttpError(405, "method_not_allowed", `use ${allow}`, { allow });
  }
  return handlers[method]();
}

/** ChirpStack's `?event=` (every value given), any case, as one of CHIRPSTACK_EVENTS; `up` when absent. */
function chirpStackEvent(events) {
  if (events.length > 1) throw new HttpError(400, "unknown_event", `event is given more than once (${events.map((e) => JSON.stringify(e)).join(", ")}); give one of ${CHIRPSTACK_EVENTS.join(", ")}`);
  const event = events[0];
  const e = (event ?? "up").toLowerCase();
  if (CHIRPSTACK_EVENTS.includes(e)) return e;
  throw new HttpError(400, "unknown_event", `unknown ChirpStack event ${JSON.stringify(event)}; known: ${CHIRPSTACK_EVENTS.join(", ")}`);
}

/**
 * The device of a path segment: `id`, checked by the core's own rule and written as
 * readings name their device (as at ingest: a DevEUI in any case is one device), and
 * `given`, the id as the path spells it.
 */
function deviceIdOf(segment) {
  let given;
  try {
    given = decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, "invalid_device_id", "the device id in the path is not valid percent-encoded UTF-8");
  }
  try {
    return { id: guarded(() => checkDeviceId(given)), given };
  } catch (e) {
    if (e instanceof HttpError || typeof e?.code !== "string") throw e;
    throw new HttpError(400, "invalid_device_id", e.message);
  }
}

// --- ingest ---------------------------------------------------------------------

async function ingest(request, env, cfg, format, routeName) {
  const body = await readJson(request, cfg);
  // The one parse of the body, validation and keying of each reading: in Wasm.
  let plan;
  try {
    plan = JSON.parse(guarded(() => parseUplink(format, body, cfg.uplink)));
  } catch (e) {
    // An exception without a code is not the body's fault: 500 internal_error (fetch).
    if (e instanceof HttpError || typeof e?.code !== "string") throw e;
    const status = { too_many_readings: 413, invalid_json: 400, invalid_burst: 400, field_mask_incomplete: 400, invalid_config: 500 }[e.code] ?? 400;
    throw new HttpError(status, e.code, e.message);
  }
  // A raw payload's bytes, from here on as bytes: the group hands them to the codec as they are.
  if (plan.raw) plan.raw.payload = Uint8Array.from(plan.raw.payload);
  const burst_id = crypto.randomUUID();
  if (plan.ignored) return acknowledge(env, format, plan.event, burst_id);
  if (plan.simulated) return simulate(env, plan, { route: routeName, burst_id });
  const context = { route: routeName, burst_id };
  // Where a history request for the raw uplink's device would go (backfill.js).
  const downlink = plan.raw ? downlinkTarget(request, cfg, format, burst_id) : null;
  const refusedBy = new Map(); // device → its readings rejected here
  const unroutable = [];
  for (const r of plan.rejected) {
    if (r.device_id === null) unroutable.push(r);
    else if (refusedBy.has(r.device_id)) refusedBy.get(r.device_id).push(r);
    else refusedBy.set(r.device_id, [r]);
  }
  // Devices with only refused readings still get their audit line and counters.
  const groups = plan.devices.slice();
  const planned = new Set(groups.map((g) => g.device_id));
  for (const id of refusedBy.keys()) if (!planned.has(id)) groups.push({ device_id: id, readings: [] });
  if (groups.length > cfg.MAX_DEVICES_PER_REQUEST) {
    // Refused before any group object is contacted: nothing stored, nothing counted.
    throw new HttpError(413, "too_many_devices", `the request names ${groups.length} devices; at most ${cfg.MAX_DEVICES_PER_REQUEST} (MAX_DEVICES_PER_REQUEST) per request`);
  }
  // One call per group object, carrying its devices' shares of the request.
  const calls = new Map(); // group → the indices in `groups` of its devices
  groups.forEach(({ device_id }, i) => {
    const g = groupOf(device_id);
    if (!calls.has(g)) calls.set(g, []);
    calls.get(g).push(i);
  });
  const replies = new Array(groups.length);
  await mapAtMost(DEVICE_CALLS_AT_ONCE, [...calls.values()], async (members) => {
    const args = members.map((i) => {
      const { device_id, readings } = groups[i];
      const refused = refusedBy.get(device_id) ?? [];
      const raw = rawOf(plan, device_id);
      return { device_id, readings, refused: refused.length, refused_codes: byCode(refused), raw, downlink: raw ? downlink : null, ...context };
    });
    // A retried call may have stored the burst before its answer was lost: `attempt` >
    // 0 makes the object answer such readings as admitted (ingest.js, ingest).
    const failed = (e, attempt) => console.log(JSON.stringify({ level: "WARN", event: "device_call_failed", devices: args.map((a) => a.device_id), burst_id, attempt, error: String(e?.message ?? e) }));
    const { answers, error } = await callGroup(env, args[0].device_id, (stub, attempt) => stub.ingestMany(args.map((a) => ({ ...a, attempt }))), failed);
    if (answers) {
      members.forEach((i, k) => (replies[i] = answers[k]));
      return;
    }
    // No outcome at all: nothing of these devices' readings is known to be stored (a
    // raw uplink's refused readings are its readings: the reply lists them in not_stored).
    for (const i of members) {
      const { device_id, readings } = groups[i];
      const refused = refusedBy.get(device_id) ?? [];
      const raw = rawOf(plan, device_id) !== null;
      logNothingStored({ device_id, ...context }, readings.length + (raw ? refused.length : 0), raw ? 0 : refused.length, "device_unavailable");
      replies[i] = { ok: false, status: 503, code: "device_unavailable", message: String(error?.message ?? error) };
    }
  });
  if (unroutable.length) {
    const n = unroutable.length;
    const counts = { received: n, rejected: n };
    console.log(auditLine("burst_deduplicated", counts, Date.now(), context));
    await countUnroutable(env, burst_id, byCode(unroutable));
  }
  const { body: answer, notStored, errors } = outcome(plan, groups, replies, burst_id);
  if (errors.length) {
    // A group object was unreachable or a device's write failed: its readings (and the
    // counts of its rejected ones) were not stored. The sender's retry is admitted;
    // what was stored comes back as duplicates.
    const what = notStored.length ? `${notStored.length} reading(s) not stored` : "the burst's counts were not stored";
    const error = { code: "retry_later", message: `${what}; retry the request` };
    return json(503, { ...answer, not_stored: notStored, errors, error }, { "retry-after": "1" });
  }
  return json(200, answer);
}

/**
 * `call(stub, attempt)` on the group object of `device_id`: `{answers}`, what it
 * answered, or `{error}` when every attempt threw. A call that threw is made again, with
 * a new stub (DEVICE_CALL_ATTEMPTS in all, unless the object is overloaded: Cloudflare
 * advises against adding load); `failed(error, attempt)` hears of each that threw.
 */
async function callGroup(env, device_id, call, failed) {
  let error;
  for (let attempt = 0; attempt < DEVICE_CALL_ATTEMPTS && !error?.overloaded; attempt++) {
    // Before each call, the runtime reads its sockets (fanout.js): health, stats and
    // other senders' requests are answered while a fleet's uplinks keep it busy.
    await yieldToIo();
    try {
      return { answers: await call(group(env, device_id), attempt) };
    } catch (e) {
      error = e;
      failed(e, attempt);
    }
  }
  return { error };
}

/** The plan's raw uplink when it is `device_id`'s (the readings without a fill level are its), else null. */
function rawOf(plan, device_id) {
  return plan.raw?.device_id === device_id ? plan.raw : null;
}

/**
 * A network-server message that is not an uplink (a join, a downlink
 * acknowledgement, ...): answered 200 so that the network server keeps the webhook
 * healthy, nothing stored, counted in /v1/stats `ignored_events` as `<route>/<event>`.
 */
async function acknowledge(env, route, event, burst_id) {
  const known = event !== "unknown" && event !== "other";
  console.log(JSON.stringify({ level: known ? "INFO" : "WARN", event: "event_ignored", route, type: event, burst_id }));
  await countMessage(env, burst_id, `${IGNORED}${route}/${event}`);
  const message = known
    ? `a ${event} event is not an uplink: acknowledged, nothing stored`
    : "not an uplink of a kind this worker knows: acknowledged, nothing stored";
  return json(200, { burst_id, ignored: true, route, event, message });
}

/**
 * The Things Stack's "Simulate uplink": answered with the outcome the readings would
 * have had (a key the device's seen-set holds, or one earlier in this uplink, is a
 * duplicate: preview.js `preview`), and nothing else: not stored, not forwarded, not counted
 * with real readings, no storage written for a device without a ledger.
 * Counted in /v1/stats `simulated_uplinks`.
 */
async function simulate(env, plan, context) {
  // A raw uplink's rows are its device's (plan.devices has none): decoded by it.
  const groups = plan.raw ? [{ device_id: plan.raw.device_id, readings: [] }] : plan.devices;
  const previews = await mapAtMost(DEVICE_CALLS_AT_ONCE, groups, async ({ device_id, readings }) => {
    const raw = rawOf(plan, device_id);
    const { device } = await knownDevice(env, { id: device_id, given: device_id });
    if (device) {
      const reply = await fromDevice(() => device.preview({ device_id, readings, raw }));
      if (!reply.ok) throw new HttpError(503, "device_unavailable", `device ${JSON.stringify(device_id)} could not preview the readings (${reply.code}: ${reply.message}); a real uplink would not be stored either`, { "retry-after": "1" });
      return reply;
    }
    // A device without a ledger has no configuration either: only the uplink's hints.
    const decoded = raw ? decodeRaw(raw, null, null) : null;
    const undecoded = decoded && previewNotDecoded(decoded);
    if (undecoded) return undecoded;
    const seen = new Set();
    const verdicts = (decoded?.readings ?? readings).map(({ key }) => (seen.has(key) ? DUPLICATE : (seen.add(key), 0)));
    return { ok: true, verdicts, decoded: decoded && decodedView(raw, decoded) };
  });
  const { body } = outcome(plan, groups, previews, context.burst_id);
  const out = { ...body, simulated: true, stored: false, message: "a simulated uplink: this is what its readings would do; nothing was stored or forwarded" };
  console.log(JSON.stringify({ level: "INFO", event: "simulated_uplink", ...context, received: out.received, unique: out.unique, duplicates_suppressed: out.duplicates_suppressed, rejected: out.rejected.length, parked: out.parked?.length ?? 0 }));
  await countMessage(env, context.burst_id, "simulated_uplinks");
  return json(200, out);
}

/**
 * Per-device verdicts back into one answer with the request's indices: `{body,
 * notStored, errors}`, `body.received = unique + duplicates_suppressed +
 * len(rejected) + len(parked) + len(notStored)`, and `body.verdicts`, one entry per
 * index in index order (`verdictsOf`). A raw uplink's readings without a
 * fill level are replaced by what its device made of the payload (ingest.js
 * `ingest`): the decoded samples (indices: their places in the payload; the reply
 * names the codec in `decoded`), or those readings parked, or rejected with the
 * codec's code.
 */
function outcome(plan, groups, replies, burst_id) {
  const out = { burst_id, received: 0, unique: 0, duplicates_suppressed: 0, admitted: [], duplicates: [], rejected: [] };
  const parked = [];
  const notStored = [];
  const errors = [];
  const notes = new Map(); // index → a duplicate's first admission, an admitted one's arrival and a conflict's link
  const collections = []; // confirmed by this burst's readings (bin-state.js)
  const rawRows = plan.raw ? plan.rejected.filter((r) => r.device_id === plan.raw.device_id) : [];
  out.rejected.push(...plan.rejected.filter((r) => !rawRows.includes(r)));
  groups.forEach(({ device_id, readings }, g) => {
    const r = replies[g];
    if (!r.ok) errors.push({ device_id, code: r.code, message: r.message });
    const raw = rawOf(plan, device_id) !== null;
    // A device that failed still says what it decoded (its samples are not stored) or
    // refused (those readings are rejected), as its audit line counts them.
    if (raw && r.ok && r.parked) {
      for (const { index } of rawRows) {
        if (r.parked.copy) {
          // A copy of an uplink parked already: never admitted, so no key, no first admission.
          out.duplicates.push(index);
          notes.set(index, { key: null, first_admitted_at: null, first_burst_id: null });
        } else parked.push({ index, device_id, code: r.parked.code, message: r.parked.message });
      }
    } else if (raw && r.refused_as) {
      out.rejected.push(...rawRows.map((row) => ({ ...row, field: PAYLOAD_FIELD, code: r.refused_as.code, message: r.refused_as.message })));
    } else if (raw && !r.ok && !r.decoded) {
      notStored.push(...rawRows.map(({ index }) => index));
    }
    if (raw && r.decoded) {
      out.decoded = { codec: r.decoded.codec, f_port: r.decoded.f_port };
      out.rejected.push(...r.decoded.rejected);
      // Datalog copies of live readings: among the duplicates, named apart (frames.js `crossPath`).
      if (r.decoded.cross_path.length) out.cross_path_duplicates = r.decoded.cross_path;
    }
    (r.decoded?.readings ?? readings).forEach(({ index, key }, i) => {
      // A device that failed stored nothing of this burst, its counts included: all
      // of its readings are not stored, replays too (a reply counts what /v1/stats holds).
      const verdict = r.ok ? r.verdicts[i] : undefined;
      // A copy of a frame is keyed by the first copy's receive time (frames.js `reframe`).
      const stored = r.keys?.[i] ?? key;
      const note = r.notes?.[i] ?? {};
      if (verdict === DUPLICATE) {
        out.duplicates.push(index);
        notes.set(index, { key: stored, first_admitted_at: note.first_admitted_at ?? null, first_burst_id: note.first_burst_id ?? null });
      } else if (ADMITTED.has(verdict)) {
        out.admitted.push({ index, key: stored });
        // Its arrival by device time (a device object of an earlier release tells none: nulls).
        const arrival = { arrival: note.arrival ?? null, late_by_ms: note.late_by_ms ?? null };
        notes.set(index, verdict === CONFLICT ? { conflict: true, conflicts_with: note.conflicts_with ?? null, ...arrival } : arrival);
        if (note.collection) collections.push({ device_id, ...note.collection });
      } else notStored.push(index);
    });
  });
  out.unique = out.admitted.length;
  out.duplicates_suppressed = out.duplicates.length;
  out.received = out.unique + out.duplicates_suppressed + out.rejected.length + parked.length + notStored.length;
  out.admitted.sort((a, b) => a.index - b.index);
  out.duplicates.sort((a, b) => a - b);
  out.rejected.sort((a, b) => a.index - b.index);
  notStored.sort((a, b) => a - b);
  if (parked.length) out.parked = parked;
  if (collections.length) out.collections = collections;
  out.verdicts = verdictsOf(out, parked, notStored, notes);
  return { body: out, notStored, errors };
}

/**
 * Every reading of a reply in index order, with what happened to it (README, HTTP
 * API): `admitted` and `conflict` (with `key`, `arrival` and `late_by_ms`; a
 * conflict's `conflicts_with`), from `admitted`; `duplicate` (`key`, `first_admitted_at`, `first_burst_id`), from
 * `duplicates`; `rejected` and `parked` (`code`); `not_stored` (a 503's). So
 * `len(verdicts) = received`.
 */
function verdictsOf(out, parked, notStored, notes) {
  return [
    ...out.admitted.map(({ index, key }) => {
      const { conflict = false, ...note } = notes.get(index);
      return { index, verdict: conflict ? "conflict" : "admitted", key, ...note };
    }),
    ...out.duplicates.map((index) => ({ index, verdict: "duplicate", ...notes.get(index) })),
    ...out.rejected.map(({ index, code }) => ({ index, verdict: "rejected", code })),
    ...parked.map(({ index, code }) => ({ index, verdict: "parked", code })),
    ...notStored.map((index) => ({ index, verdict: "not_stored" })),
  ].sort((a, b) => a.index - b.index);
}

/** The body of a request that must be JSON (else 415), at most MAX_BODY_BYTES (else 413). */
async function readJson(request, cfg) {
  const type = mediaType(request);
  if (!isJson(type)) {
    const hint = /protobuf|octet-stream/.test(type)
      ? "the Protobuf encoding is not supported; choose JSON (The Things Stack: the webhook format; ChirpStack: the HTTP integration's payload encoding)"
      : "send Content-Type: application/json";
    throw new HttpError(415, "unsupported_media_type", hint);
  }
  return readBody(request, cfg.MAX_BODY_BYTES);
}

async function readBody(request, limit) {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      // The client went away (or the connection broke) before sending what it
      // declared: its fault, not ours, and nobody may be left to read the answer.
      console.log(JSON.stringify({ level: "WARN", event: "body_incomplete", received_bytes: size, declared_bytes: Number.isFinite(declared) ? declared : null, error: String(e?.message ?? e) }));
      throw new HttpError(400, "body_incomplete", "the body ended before its declared length or the connection was lost; send the request again");
    }
    const { done, value } = chunk;
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.byteLength;
  }
  return body;
}

function tooLarge(limit) {
  return new HttpError(413, "body_too_large", `the body exceeds ${limit} bytes`);
}

// --- reads ----------------------------------------------------------------------

/** Fleet-wide figures from the roll-up shards (src/worker/fleet.js), never from devices. */
async function stats(env) {
  return json(200, await fromRollup(() => fleetStats(env, config(env))));
}

/** The same figures for Prometheus (src/worker/metrics.js): the text exposition format 0.0.4. */
async function metrics(env) {
  const figures = await fromRollup(() => fleetFigures(env));
  return new Response(exposition(figures, config(env)), { status: 200, headers: { "content-type": METRICS_CONTENT_TYPE } });
}

async function ledger(env, path, params) {
  const page = pageOf(params);
  const { device_id, device } = await knownDevice(env, path);
  if (!device) return json(200, { device_id, readings: [], next: null });
  return json(200, { device_id, ...(await fromDevice(() => device.list({ device_id, ...page }))) });
}

/** `{limit, after}` of a paged read: `limit` in PAGE_ROWS, `after` a cursor from `next`; else 400 `invalid_query`. */
function pageOf(params) {
  const limit = limitOf(params);
  const after = decimal(params, "after", 0);
  if (limit === null || after === null) {
    throw new HttpError(400, "invalid_query", `limit must be ${PAGE_ROWS.min}..${PAGE_ROWS.max} and after a cursor from \`next\`, each given at most once in decimal digits`);
  }
  return { limit, after };
}

/** A paged read's `limit` (PAGE_ROWS), null when it is not one. */
function limitOf(params) {
  const limit = decimal(params, "limit", PAGE_ROWS.default);
  return limit !== null && limit >= PAGE_ROWS.min && limit <= PAGE_ROWS.max ? limit : null;
}

/**
 * GET /v1/devices/{device_id}/gaps: the device's sequence health (window.js `gaps`). A
 * device never seen answers an empty window without its object being started.
 */
async function gaps(env, path) {
  const { device_id, device } = await knownDevice(env, path);
  let health = device ? await fromDevice(() => device.gaps({ device_id })) : null;
  if (!health) {
    const empty = new SeqWindow();
    try {
      health = { highest: null, gaps: [], totals: empty.totals(), backfill: { open: null, recent: [] } };
    } finally {
      empty.free();
    }
  }
  return json(200, { device_id, ...health });
}

// --- bin state ------------------------------------------------------------------

/**
 * GET /v1/devices/{device_id}/state: the bin's fill by device time (bin-state.js
 * `binState`). A device never seen answers no reading, without its object being started.
 */
async function binStateOf(env, path) {
  const { device_id, device } = await knownDevice(env, path);
  if (!device) return json(200, stateOf(device_id, null, null, null, null, config(env), Date.now()));
  return json(200, await fromDevice(() => device.binState({ device_id })));
}

/** GET /v1/devices/{device_id}/collections: the collections its readings confirmed, a page at a time (bin-state.js `collections`). */
async function collectionsOf(env, path, params) {
  const page = pageOf(params);
  const { device_id, device } = await knownDevice(env, path);
  if (!device) return json(200, { device_id, collections: [], next: null });
  return json(200, { device_id, ...(await fromDevice(() => device.collections({ device_id, ...page }))) });
}

/**
 * GET /v1/bins: every bin's row (bin-state.js BIN_COLUMNS) that passes the filters
 * (`binFilter`), from the groups' memory (fleet.js `fleetBins`), a page at a time in
 * the order of GET /v1/devices/health, as JSON or CSV.
 */
async function binsOf(request, env, url) {
  const params = url.searchParams;
  const { limit, after } = devicePageOf(params);
  const filter = binFilter(params);
  const asCsv = wantsCsv(request, params);
  const as_of = isoTime(Date.now());
  const page = await fromGroups(() => fleetBins(env, { after, limit, filter }));
  const headers = { ...NEGOTIATED, ...linkToNext(url, page.next) };
  if (asCsv) return csv(BIN_COLUMNS, page.bins, { ...headers, "content-disposition": 'attachment; filename="bins.csv"' });
  return json(200, { bins: page.bins, next: page.next, as_of }, headers);
}

/**
 * The filters of GET /v1/bins, each given at most once (else 400 `invalid_query`):
 * `min_fill` (0 … 100, decimal), `stale` (`true` or `false`), `collected_since` (an
 * RFC 3339 instant). Absent: null.
 */
function binFilter(params) {
  const one = (name) => {
    const values = params.getAll(name);
    if (values.length > 1) throw new HttpError(400, "invalid_query", `${name} may be given at most once`);
    return values[0] ?? null;
  };
  const [fill, stale, since] = [one("min_fill"), one("stale"), one("collected_since")];
  if (fill !== null && !(/^[0-9]{1,3}(\.[0-9]+)?$/.test(fill) && Number(fill) <= 100)) throw new HttpError(400, "invalid_query", "min_fill must be a fill level 0..100 in decimal digits (a fraction with a dot)");
  if (stale !== null && stale !== "true" && stale !== "false") throw new HttpError(400, "invalid_query", "stale must be true or false");
  const at = since === null ? null : Date.parse(since);
  if (since !== null && !(RFC3339.test(since) && Number.isFinite(at))) throw new HttpError(400, "invalid_query", "collected_since must be an RFC 3339 instant, e.g. 2026-07-16T09:00:00Z");
  return { min_fill: fill === null ? null : Number(fill), stale: stale === null ? null : stale === "true", collected_since: at };
}

const RFC3339 = /^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$/;

/** Reads the groups with `read`; a group that cannot answer is 503 `device_unavailable`. */
async function fromGroups(read) {
  try {
    return await read();
  } catch (e) {
    console.log(JSON.stringify({ level: "WARN", event: "bins_unavailable", error: String(e?.message ?? e) }));
    throw new HttpError(503, "device_unavailable", `a group object could not be read (${e?.message ?? e}); retry`, { "retry-after": "1" });
  }
}

/**
 * Puts the device's readings the origin refused (delivery state `refused`) back in
 * the outbox: all of them, or those named by `key` parameters (at most REDRIVE_KEYS).
 */
async function redrive(request, env, path, params) {
  refuseNonJson(request);
  const keys = params.getAll("key");
  if (keys.length > REDRIVE_KEYS || keys.some((k) => k === "")) {
    throw new HttpError(400, "invalid_query", `give at most ${REDRIVE_KEYS} non-empty \`key\` parameters, or none to re-drive every refused reading`);
  }
  const { device_id, device } = await knownDevice(env, path);
  const { redriven } = device ? await fromDevice(() => device.redrive({ device_id, keys: keys.length ? keys : undefined })) : { redriven: 0 };
  console.log(JSON.stringify({ level: "INFO", event: "redrive", device_id, keys: keys.length || "all", redriven }));
  return json(200, { device_id, redriven });
}

// --- operator controls ----------------------------------------------------------

/**
 * POST /v1/devices/{device_id}/forget, body `{"key": "..."}`: the device's memory
 * forgets that key (operator.js `forget`); its ledger row and delivery stay. 404
 * `unknown_device` for a device that never ingested (its object is not started),
 * `unknown_key` for a key without a ledger row.
 */
async function forget(request, env, cfg, path) {
  const { key } = jsonObjectOf(await readJson(request, cfg), ["key"], "invalid_forget_body");
  // Characters are code points, as the document's maxLength counts them (JSON Schema),
  // not UTF-16 units (`length`: an emoji is 2).
  if (key?.kind !== "string" || key.value === "" || [...key.value].length > FORGET_KEY_CHARS) {
    throw new HttpError(400, "invalid_forget_body", `key must be a ledger row's key: a non-empty string of at most ${FORGET_KEY_CHARS} characters`);
  }
  const { device_id, device } = await existingDevice(env, path);
  return operatorReply(device_id, () => device.forget({ device_id, key: key.value }));
}

/**
 * POST /v1/devices/{device_id}/reset: the device's memory starts afresh (operator.js
 * `reset`): every key forgotten, its sequence window and codec counter reference
 * deleted; its ledger, outbox, configuration, parked uplinks and counters kept.
 */
async function reset(request, env, path) {
  refuseNonJson(request);
  const { device_id, device } = await existingDevice(env, path);
  return operatorReply(device_id, () => device.reset({ device_id }));
}

/** The reply to an operator call made by `call` (a device object's `{ok, ...}`). */
async function operatorReply(device_id, call) {
  const { ok, status, code, message, ...done } = await fromDevice(call);
  if (!ok) throw new HttpError(status, code, message, status === 503 ? { "retry-after": "1" } : {});
  return json(200, { device_id, ...done });
}

/** The device's history of operator events (operator.js `history`), oldest first; empty for a device never seen. */
async function history(env, path, params) {
  const page = pageOf(params);
  const { device_id, device } = await knownDevice(env, path);
  if (!device) return json(200, { device_id, events: [], next: null });
  return json(200, { device_id, ...(await fromDevice(() => device.history({ device_id, ...page }))) });
}

/** knownDevice, but a device that never ingested is 404 `unknown_device` (its object is not started). */
async function existingDevice(env, path) {
  const known = await knownDevice(env, path);
  if (!known.device) throw new HttpError(404, "unknown_device", `device ${JSON.stringify(known.device_id)} never reported and has no configuration: it has no memory to change`);
  return known;
}

// --- health ---------------------------------------------------------------------

/**
 * GET /v1/devices/health: every device's counts and ratios (fleet.js `fleetHealth`)
 * from the roll-up shards, a page at a time in device id order (`limit`: PAGE_ROWS;
 * `after`: the `next` of the previous page), as JSON or CSV.
 */
async function fleetHealthOf(request, env, url) {
  const params = url.searchParams;
  const { limit, after } = devicePageOf(params);
  const asCsv = wantsCsv(request, params);
  const page = await fromRollup(() => fleetHealth(env, { after, limit }));
  const headers = { ...NEGOTIATED, ...linkToNext(url, page.next) };
  if (asCsv) return csv(HEALTH_COLUMNS, page.devices, { ...headers, "content-disposition": 'attachment; filename="devices-health.csv"' });
  return json(200, { devices: page.devices, next: page.next, ...asOf(env) }, headers);
}

/**
 * `{limit, after}` of a page of the fleet's devices (health, bins): `limit` in PAGE_ROWS,
 * `after` the `next` of the previous page (a device id; "" for the first); else 400
 * `invalid_query`.
 */
function devicePageOf(params) {
  const limit = limitOf(params);
  const afters = params.getAll("after");
  if (limit === null || afters.length > 1) {
    throw new HttpError(400, "invalid_query", `limit must be ${PAGE_ROWS.min}..${PAGE_ROWS.max} in decimal digits and after the \`next\` of the previous page, each given at most once`);
  }
  return { limit, after: afters[0] ?? "" };
}

/** The `Link` header to the next page (`next`: its `after`, or null on the last page: none). */
function linkToNext(url, next) {
  if (next === null) return {};
  const query = new URLSearchParams(url.searchParams);
  query.set("after", next);
  return { link: `<${url.pathname}?${query}>; rel="next"` };
}

/** GET /v1/devices/{device_id}/health: one device's row of the above, from its shard (zeros for a device never seen). */
async function healthOfDevice(request, env, { id, given }, params) {
  const asCsv = wantsCsv(request, params);
  const row = await fromRollup(() => deviceHealth(env, given === id ? [id] : [id, given]));
  if (asCsv) return csv(HEALTH_COLUMNS, [row], NEGOTIATED);
  return json(200, { ...row, ...asOf(env) }, NEGOTIATED);
}

/** The staleness of roll-up figures: when they were read, and how far behind a device's flush may be. */
function asOf(env) {
  return { as_of: isoTime(Date.now()), stats_flush_ms: config(env).STATS_FLUSH_MS };
}

/** Reads the roll-up shards with `read`; a shard that cannot answer is 503 `stats_unavailable`. */
async function fromRollup(read) {
  try {
    return await read();
  } catch (e) {
    // A shard could not answer (under load, local workerd's SQLite can run out of
    // memory: SQLITE_NOMEM). Nothing is lost: the figures are in the shards and the
    // device objects; the next call may well succeed.
    console.log(JSON.stringify({ level: "WARN", event: "stats_unavailable", error: String(e?.message ?? e) }));
    throw new HttpError(503, "stats_unavailable", `a roll-up shard could not be read (${e?.message ?? e}); retry`, { "retry-after": "1" });
  }
}

/** The header of an answer whose format `wantsCsv` chose: a cache keeps one per Accept. */
const NEGOTIATED = { vary: "accept" };

/**
 * Whether to answer CSV: `?format=csv` (or `json`, at most once; else 400
 * `invalid_query`), else an `Accept` header that prefers `text/csv` to JSON.
 */
function wantsCsv(request, params) {
  const formats = params.getAll("format");
  if (formats.length > 1 || (formats.length && !["json", "csv"].includes(formats[0]))) {
    throw new HttpError(400, "invalid_query", "format must be json or csv, given at most once");
  }
  if (formats.length) return formats[0] === "csv";
  const accept = request.headers.get("accept") ?? "";
  return acceptQ(accept, "text/csv") > acceptQ(accept, "application/json");
}

/** The quality `accept` (an Accept header) gives `type`: that of its most specific matching range, 0 when none matches. */
function acceptQ(accept, type) {
  let best = { specificity: -1, q: 0 };
  for (const part of accept.split(",")) {
    const [range, ...parameters] = part.split(";").map((x) => x.trim().toLowerCase());
    const specificity = range === type ? 2 : range === `${type.split("/")[0]}/*` ? 1 : range === "*/*" ? 0 : -1;
    if (specificity <= best.specificity) continue;
    const q = parameters.find((p) => p.startsWith("q="));
    const value = q === undefined ? 1 : Number(q.slice(2));
    best = { specificity, q: Number.isFinite(value) ? value : 0 };
  }
  return best.q;
}

/**
 * `{device_id, device}`: the device's group object, or null for a device that never
 * ingested. A device is looked up first in its roll-up shard, the registry its group
 * adds it to before its first write; an unknown one is never asked for. A device
 * whose id, as the path gives it, is a DevEUI in lower case and that is unknown in
 * upper case is looked up as given: an earlier version kept such an id of a native
 * burst as it was, and that ledger stays readable under it.
 */
async function knownDevice(env, { id, given }) {
  const known = async (name) => {
    try {
      return await knows(env, name);
    } catch (e) {
      throw new HttpError(503, "device_unavailable", `could not reach the device registry: ${e?.message ?? e}; retry`, { "retry-after": "1" });
    }
  };
  for (const device_id of given === id ? [id] : [id, given]) {
    if (await known(device_id)) return { device_id, device: group(env, device_id) };
  }
  return { device_id: id, device: null };
}

/** A query parameter given at most once as plain decimal digits (a safe integer), `dflt` when absent; else null. */
function decimal(params, name, dflt) {
  const values = params.getAll(name);
  if (values.length === 0) return dflt;
  if (values.length > 1 || !/^[0-9]+$/.test(values[0])) return null;
  const v = Number(values[0]);
  return Number.isSafeInteger(v) ? v : null;
}

// --- device configuration -------------------------------------------------------

/**
 * PUT /v1/devices/{device_id}/config: the body validated here, then stored by the
 * device's object (which registers with its roll-up shard first, like a first
 * write). Answers the stored configuration.
 */
async function configure(request, env, cfg, path) {
  const wanted = configOf(jsonObjectOf(await readJson(request, cfg), CONFIG_MEMBERS, "invalid_config_body"));
  if (!wanted.ok) throw new HttpError(400, wanted.code, wanted.message);
  const reply = await fromDevice(() => group(env, path.id).configure({ device_id: path.id, ...wanted.config }));
  if (!reply.ok) throw new HttpError(reply.status, reply.code, reply.message, { "retry-after": "1" });
  return json(200, { ...reply.config, unparked: reply.unparked });
}

/**
 * POST /v1/devices/config: many devices' configurations, a JSON body `{"devices":
 * [row, ...]}` or CSV (device-config-body.js `bulkRows`), at most BULK_CONFIG_ROWS rows
 * (else 413 `too_many_rows`, nothing applied). Each row is checked as a PUT of its
 * device would be (`bulkRow`), and a device named by more than one row is refused in
 * each (`duplicate_device_id`: which one was meant is not known). The valid rows go to
 * their group objects, one call per group carrying all its rows (group.js
 * `configureMany`), DEVICE_CALLS_AT_ONCE at a time: at most GROUPS calls, within a
 * Worker's subrequest limit even with every retry. Answers 200 with one result per row
 * in the body's order, and the totals; a row refused or not applied says why (`code`).
 * Applying a configuration again changes nothing (device-config.js), so the whole call
 * may be retried.
 */
async function configureAll(request, env, cfg) {
  const type = mediaType(request);
  const csv = type === "text/csv";
  if (!csv && !isJson(type)) throw new HttpError(415, "unsupported_media_type", "send Content-Type: application/json or text/csv");
  const { rows } = bulkRows(await readBody(request, cfg.MAX_BODY_BYTES), csv);
  if (rows.length > BULK_CONFIG_ROWS) throw new HttpError(413, "too_many_rows", `the body has ${rows.length} rows; at most ${BULK_CONFIG_ROWS} per request, nothing was applied`);
  // A result names its row (and a CSV record's line), its device, then what became of it.
  const resultOf = ({ row, line }, { device_id, ok, ...rest }) => ({ row, ...(line !== undefined && { line }), device_id, ok, ...rest });
  const results = rows.map(({ line, text, refused }, row) => resultOf({ row, line }, refused ?? bulkRow(text)));
  // A device in two rows, valid or not (which one was meant is not known): each of its
  // rows that would be applied is refused. Ids compare as readings name the device.
  const rowsOf = new Map(); // device id → its rows
  for (const r of results) {
    if (typeof r.device_id !== "string") continue;
    // A row that passed the id check names its device so already.
    const id = r.ok ? r.device_id : sameDevice(r.device_id);
    if (!rowsOf.has(id)) rowsOf.set(id, []);
    rowsOf.get(id).push(r.row);
  }
  for (const named of rowsOf.values()) {
    if (named.length < 2) continue;
    // A few of its rows, by their lines in a CSV: a device in every row of a large file must not make each message list them all.
    const places = named.slice(0, 5).map((i) => results[i].line ?? i);
    const where = `${csv ? "lines" : "rows"} ${places.join(", ")}${named.length > 5 ? ` and ${named.length - 5} more` : ""}`;
    for (const i of named) {
      if (!results[i].ok) continue;
      results[i] = resultOf(results[i], { device_id: results[i].device_id, ok: false, code: "duplicate_device_id", message: `device ${JSON.stringify(results[i].device_id)} is in ${where}; give each device once` });
    }
  }
  const calls = new Map(); // group → the rows of its devices
  for (const r of results) {
    if (!r.ok) continue;
    const g = groupOf(r.device_id);
    if (!calls.has(g)) calls.set(g, []);
    calls.get(g).push(r.row);
  }
  await mapAtMost(DEVICE_CALLS_AT_ONCE, [...calls.values()], async (members) => {
    const args = members.map((i) => ({ device_id: results[i].device_id, ...results[i].config }));
    const failed = (e, attempt) => console.log(JSON.stringify({ level: "WARN", event: "device_call_failed", devices: args.map((a) => a.device_id), route: "devices/config", attempt, error: String(e?.message ?? e) }));
    const { answers, error } = await callGroup(env, args[0].device_id, (stub) => stub.configureMany(args), failed);
    members.forEach((i, k) => {
      const { device_id } = results[i];
      const a = answers?.[k] ?? { ok: false, code: "device_unavailable", message: `could not reach the device's group object: ${error?.message ?? error}; retry` };
      results[i] = resultOf(results[i], a.ok ? { device_id, ok: true, changed: a.changed, config: a.config, unparked: a.unparked } : { device_id, ok: false, code: a.code, message: a.message });
    });
  });
  const configured = results.filter((r) => r.ok);
  const totals = {
    received: results.length,
    configured: configured.length,
    changed: configured.filter((r) => r.changed).length,
    failed: results.length - configured.length,
    unparked_uplinks: configured.reduce((n, r) => n + r.unparked.uplinks, 0),
  };
  console.log(JSON.stringify({ level: "INFO", event: "devices_configured", format: csv ? "csv" : "json", ...totals, group_calls: calls.size }));
  return json(200, { ...totals, results });
}

/** A device id as readings name the device (a DevEUI upper-cased), or as given when it is no valid id. */
function sameDevice(id) {
  try {
    return guarded(() => checkDeviceId(id));
  } catch {
    return id;
  }
}

/** GET /v1/devices/{device_id}/config; 404 `not_configured` without starting an unknown device's object. */
async function configuration(env, path) {
  const { device_id, device } = await knownDevice(env, path);
  const stored = device ? await fromDevice(() => device.configuration({ device_id })) : null;
  if (!stored) throw new HttpError(404, "not_configured", `device ${JSON.stringify(device_id)} has no configuration; PUT one to this path`);
  return json(200, stored);
}

/** What `call()` (a call of a group object for a device) answers; when it throws, 503 `device_unavailable`. */
async function fromDevice(call) {
  try {
    return await call();
  } catch (e) {
    throw new HttpError(503, "device_unavailable", `could not reach the device's group object: ${e?.message ?? e}; retry`, { "retry-after": "1" });
  }
}

/**
 * The members (by name: `{name, kind, value, whole, text}`) of a body that must be a JSON
 * object with only `members`, none twice, read by the core's JSON reader
 * (device-config-body.js `readMembers`) by the rules of every other body: not JSON is
 * 400 `invalid_json`; another shape, an unknown member or one given twice is 400 `code`.
 */
function jsonObjectOf(bytes, members, code) {
  const out = readMembers(bytes, members);
  if (out.refused !== undefined) throw new HttpError(400, code, out.refused);
  return out.members;
}

// --- responses ------------------------------------------------------------------

// No media type for an OpenAPI document is registered with IANA yet: the IETF draft
// that would register application/openapi+json (draft-ietf-httpapi-rest-api-mediatypes,
// -09) says application/vnd.oai.openapi+json "is used, but not registered". So plain
// JSON, which every client and generator reads. Cacheable: it changes with a deployment.
// Readable from any origin: viewers such as Swagger Editor fetch it from the browser on
// their own origin, and it is public (no credentials are involved).
const OPENAPI_HEADERS = { "content-type": "application/json; charset=utf-8", "cache-control": "public, max-age=300", "access-control-allow-origin": "*" };

function json(status, body, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}

/**
 * A CSV answer (RFC 4180): a header row of `columns`, then a row per object of `rows`,
 * CRLF after each; a field holding a comma, a double quote, CR or LF is quoted, its
 * quotes doubled; null is an empty field.
 */
/**
 * A CSV reply (RFC 4180). A text cell a spreadsheet would run as a formula (one that
 * begins with `=`, `+`, `-`, `@`, a tab or a carriage return: a device id such as
 * `=HYPERLINK(...)`) is written with a leading `'`, which Excel, LibreOffice and
 * Google Sheets show as text; numbers are written as they are.
 */
function csv(columns, rows, headers = {}) {
  const field = (v) => {
    let text = v === null || v === undefined ? "" : String(v);
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  const lines = [columns, ...rows.map((r) => columns.map((c) => r[c]))].map((cells) => `${cells.map(field).join(",")}\r\n`);
  return new Response(lines.join(""), { status: 200, headers: { "content-type": "text/csv; charset=utf-8; header=present", ...headers } });
}

function error(status, code, message, headers = {}) {
  return json(status, { error: { code, message } }, headers);
}
