// The OpenAPI 3.1 description of the worker's HTTP API (docs/http-api.md "HTTP API"), served at
// GET /v1/openapi.json. Every route, method, status, error code, parameter and body is
// here, and the worker tests hold it to the worker both ways:
// tests/worker/openapi.test.mjs checks it against the official OAS 3.1 schema and the
// router's routes, and every reply a worker test receives is validated against the
// operation it answers (tests/support/openapi-replies.mjs, run by the harness's `call`).
// Schemas are strict where the worker owns the shape (`additionalProperties` or
// `unevaluatedProperties` false, codes enumerated), so a reply that drifts from this
// document fails the test that received it. A shared schema narrowed or extended by the
// members beside it is written `allOf: [$ref]` rather than `$ref` with siblings (valid
// in 3.1, but some tools drop a `$ref`'s siblings).
//
// A JS module rather than a .json file: Miniflare (the tests) has no module rule for
// JSON, and a Text rule would make the import a string there but an object where
// wrangler's bundler inlines it; an ES module is the same everywhere the worker runs.
// It is data but for the builders below (`op`, `errors`, `headOf`, `item`), which spell
// out what every operation repeats; the document they build (`openApi`) is served as its
// JSON text (`openApiJson`).
//
// Facts owned elsewhere are read from their owner, never restated: the codecs, those
// that need a reporting period, the configuration's ranges and a rejection's fields
// (the core's `limits()`), the window's totals (the core's SeqWindow), every rejection
// code (raw-uplinks.js `REJECTION_CODES`) and the field of a payload's rejection
// (decode.js), the health columns and /v1/stats' counters (fleet.js), the webhook
// routes, ChirpStack's events and the sizes of the API (routes.js, backfill.js,
// raw-uplinks.js), a configuration's codes and a bulk row's members
// (device-config-body.js), the number of groups (placement.js), the metrics' media type
// (prometheus-text.js), the version (version.js). The document is built on its first
// request (`openApiJson`). What cannot be read is checked against its owner by
// tests/worker/openapi.test.mjs: the version (version.js's, against package.json), the
// paths (index.js's router), the codes the worker's source names. The tests read the
// document the worker serves.

import { limits, SeqWindow } from "./core.js";
import { RECENT_SHOWN } from "./backfill.js";
import { BIN_COLUMNS } from "./bin-state.js";
import { BACKFILL_OUTCOMES, BACKLOG, COUNTERS, HEALTH_COLUMNS, HEALTH_COUNTS, HEALTH_RATIOS } from "./fleet.js";
import { METRICS_CONTENT_TYPE } from "./prometheus-text.js";
import { VERSION } from "./version.js";
import { PAYLOAD_FIELD } from "./decode.js";
import { REJECTION_CODES, UNPARK_PER_CALL } from "./raw-uplinks.js";
import { CONFIG_CODES, ROW_MEMBERS } from "./device-config-body.js";
import { GROUPS } from "./placement.js";
import { BULK_CONFIG_ROWS, CHIRPSTACK_EVENTS, FORGET_KEY_CHARS, PAGE_ROWS, REDRIVE_KEYS, UPLINK_ROUTES } from "./routes.js";

const schema = (name) => ({ $ref: `#/components/schemas/${name}` });
const nullable = (s) => ({ oneOf: [s, { type: "null" }] });
/** A stored reading's arrival by device time (docs/bin-state.md "Newest or late"). */
const ARRIVAL = {
  arrival: nullable({
    type: "string",
    enum: ["newest", "late", "ahead"],
    description: "Newest by device time when admitted, late (older than one admitted before), or ahead (dated more than 4.5 days after its admission: never the bin's state); null for a reading stored before arrivals were marked.",
  }),
  late_by_ms: nullable({ type: "number", exclusiveMinimum: 0, description: "How much older than the newest admitted reading (late only)." }),
};
const ARRIVAL_REQUIRED = Object.keys(ARRIVAL);
const integer = (minimum = 0, description) => ({ type: "integer", minimum, ...(description && { description }) });
const JSON_TYPE = "application/json";

/** Error codes per status that several operations share (besides those of every /v1 route: `errors`). */
const ERRORS_READ = { 400: ["invalid_device_id"], 503: ["device_unavailable"] };
const ERRORS_BODY = ["invalid_json", "body_incomplete"];
const ERRORS_INGEST = {
  400: ["invalid_json", "invalid_burst", "body_incomplete"],
  413: ["body_too_large", "too_many_readings", "too_many_devices"],
  415: ["unsupported_media_type"],
  503: ["retry_later", "device_unavailable"],
};

/** An error body whose code is one of `codes`. */
const coded = (codes) => ({ allOf: [schema("Error")], properties: { error: { properties: { code: { enum: codes } } } } });

/** The error replies every /v1 route but the open ones has, and every one: shared as components. */
const SHARED = {
  Unauthorized: {
    description: "`unauthorized`: the token is missing or wrong; the message names what was received and what is expected.",
    headers: { "WWW-Authenticate": { $ref: "#/components/headers/WWW-Authenticate" } },
    content: { [JSON_TYPE]: { schema: coded(["unauthorized"]) } },
  },
  ServerError: {
    description: "`invalid_config`, `internal_error`, `wasm_trap`",
    content: { [JSON_TYPE]: { schema: coded(["invalid_config", "internal_error", "wasm_trap"]) } },
  },
};

/**
 * The error replies of an operation: `codes` maps a status to the codes it may carry;
 * every /v1 route adds 500 (`invalid_config`, `internal_error`, `wasm_trap`), 503
 * `auth_not_configured` and, unless `open`, 401. With `retry`, a 503 is the ingest
 * routes' `retry_later` reply or an error. (A method a path does not document is
 * answered 405 by no operation: see `item`.)
 */
function errors(codes, { open = false, retry = false }) {
  const all = { ...codes, 503: ["auth_not_configured", ...(codes[503] ?? [])] };
  if (!open) all[401] = "Unauthorized";
  all[500] = "ServerError";
  const out = {};
  for (const [status, list] of Object.entries(all)) {
    if (typeof list === "string") {
      out[status] = { $ref: `#/components/responses/${list}` };
      continue;
    }
    const body = retry && status === "503" ? { oneOf: [schema("RetryLaterReply"), coded(list)] } : coded(list);
    out[status] = { description: `\`${list.join("`, `")}\``, content: { [JSON_TYPE]: { schema: body } } };
    if (status === "503") out[status].headers = { "Retry-After": { $ref: "#/components/headers/Retry-After" } };
  }
  return out;
}

/** An operation: `ok` its 200 content (media type → schema), `codes` its error statuses; `security: []` for a public one. */
function op({ id, tag, summary, description, parameters, body, ok, okDescription, okHeaders, codes = {}, open = false, retry = false }) {
  const o = { operationId: id, tags: [tag], summary };
  if (description) o.description = description;
  if (open) o.security = [];
  if (parameters) o.parameters = parameters;
  if (body) o.requestBody = body;
  const content = Object.fromEntries(Object.entries(ok).map(([type, s]) => [type, { schema: s }]));
  o.responses = { 200: { description: okDescription ?? summary, ...(okHeaders && { headers: okHeaders }), content }, ...errors(codes, { open, retry }) };
  return o;
}

/**
 * HEAD of a GET operation: the same statuses and headers, no body (index.js answers
 * HEAD wherever it answers GET).
 */
function headOf(get) {
  const head = { ...get, operationId: `${get.operationId}Head`, summary: `${get.summary} (headers only)` };
  delete head.description;
  head.responses = {};
  for (const [status, r] of Object.entries(get.responses)) {
    const { description, headers } = r.$ref ? SHARED[r.$ref.split("/").pop()] : r;
    head.responses[status] = { description: `As GET, without the body: ${description}`, ...(headers && { headers }) };
  }
  return head;
}

/**
 * A path item: `specs` maps a method (`get`, `put`, `post`) to its `op` spec; GET
 * brings HEAD. Another method is answered 405 `method_not_allowed` with `Allow`
 * naming these, in this order (index.js `byMethod`).
 */
function item(specs) {
  const allow = Object.keys(specs)
    .flatMap((m) => (m === "get" ? ["GET", "HEAD"] : [m.toUpperCase()]))
    .join(", ");
  const out = { description: `Another method: 405 \`method_not_allowed\`, \`Allow: ${allow}\`.` };
  for (const [method, spec] of Object.entries(specs)) {
    // Every method that can change state refuses a browser's cross-site request (index.js `refuseCrossSite`).
    const codes = method === "get" ? spec.codes : { ...spec.codes, 403: [...(spec.codes?.[403] ?? []), "cross_site_request"] };
    out[method] = op({ ...spec, codes });
    if (method === "get") out.head = headOf(out.get);
  }
  return out;
}

const parameter = (name) => ({ $ref: `#/components/parameters/${name}` });
const DEVICE_ID = parameter("DeviceId");
const PAGE = [parameter("Limit"), parameter("After")];
const FORMAT = parameter("Format");
const NEGOTIATED = { Vary: { required: true, description: "The format is chosen by `Accept` when `format` is not given.", schema: { type: "string", pattern: "^[Aa]ccept$" } } };

/** A JSON request body. */
const jsonBody = (s, description) => ({ required: true, ...(description && { description }), content: { [JSON_TYPE]: { schema: s } } });

/** A network server's webhook route (the core maps its body: src/uplink/). */
function webhook({ id, summary, description, body, parameters, codes = {}, ok = schema("IngestReply") }) {
  const c = { ...ERRORS_INGEST };
  for (const [status, list] of Object.entries(codes)) c[status] = [...(c[status] ?? []), ...list];
  return item({
    post: {
      id,
      tag: "ingest",
      summary,
      description,
      parameters,
      body: jsonBody(schema(body), "JSON (`application/json` or any `+json` type), at most `MAX_BODY_BYTES`; the Protobuf encodings are answered 415."),
      ok: { [JSON_TYPE]: ok },
      okDescription: "Every reading accounted for by its index: admitted, duplicate, rejected or parked (`verdicts`); or the message acknowledged (`ignored`), or a simulated uplink's would-be outcome.",
      codes: c,
      retry: true,
    },
  });
}

/**
 * A device id as readings give it: the core's rules (src/dedupe/reading.rs
 * `check_device_id`) as far as a schema can say them: not the 128 bytes (128 characters
 * is the most they can be), nor the invisible characters.
 */
const DEVICE_ID_RULE = {
  type: "string",
  minLength: 1,
  maxLength: 128,
  pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
  not: { enum: [".", ".."] },
  description: "1-128 UTF-8 bytes without control or invisible (format, U+2028, U+2029) characters; not `.` or `..`.",
};

/** Where a bulk configuration's result stands in the body: its row, and a CSV record's line. */
const BULK_ROW_PLACE = {
  row: integer(0, "The row's place among the body's rows, from 0 (a CSV body: among its records after the header, blank ones skipped)."),
  line: integer(2, "A CSV body's: the line of the file the record starts on (the header is line 1), as a spreadsheet numbers its rows."),
};

/** A configuration number's schema: its range from the core's `limits().deviceConfig`. */
const within = ({ min, max }, more = {}) => ({ type: "integer", minimum: min, maximum: max, ...more });

/** The document. */
function openApi() {
  const { codecs, codecInfo, deviceConfig, rejection } = limits();
  // The codecs whose configuration needs `reporting_period_s`.
  const NEEDS_PERIOD = codecs.filter((c) => codecInfo[c].needsPeriod);
  // The codecs whose sensor lets its application port be set.
  const PORTED = codecs.filter((c) => codecInfo[c].applicationPort !== null);
  const ported = PORTED.map((c) => `\`${c}\` (${codecInfo[c].applicationPort} unless set)`).join(", ");
  // The members of the window's totals, as the core writes them.
  const window = new SeqWindow();
  const SEQ_TOTALS = Object.keys(window.totals());
  window.free();
  const routes = UPLINK_ROUTES.join("|");
  // A configuration as a request gives it (PUT's body; with `device_id`, a bulk row).
  const configRequest = (more, description) => ({
    type: "object",
    ...(description && { description }),
    required: [...Object.keys(more), "bin_depth_mm"],
    additionalProperties: false,
    properties: {
      ...more,
      codec: nullable(schema("Codec")),
      bin_depth_mm: within(deviceConfig.bin_depth_mm, { description: "The bin's depth, from its full level to its bottom, millimetres." }),
      offset_mm: nullable(within(deviceConfig.offset_mm, { default: 0, description: "The sensor's height above the full level, millimetres." })),
      reporting_period_s: nullable(within(deviceConfig.reporting_period_s, { description: `Required with ${NEEDS_PERIOD.map((c) => `\`${c}\``).join(", ")}.` })),
      application_port: nullable(within(deviceConfig.application_port, { description: `The LoRaWAN port the sensor was set to send on (and be sent downlinks on), for ${ported}; null: the codec's own.` })),
      backfill: nullable({ type: "boolean", description: "This device's switch for history requests; null: BACKFILL decides." }),
    },
    allOf: [
      // A codec that times its readings by the reporting period needs one (else 400 `missing_reporting_period`).
      { if: { required: ["codec"], properties: { codec: { enum: NEEDS_PERIOD } } }, then: { required: ["reporting_period_s"], properties: { reporting_period_s: { type: "integer" } } } },
      // An application port only with a codec that reads it (else 400 `invalid_application_port`).
      { if: { required: ["application_port"], properties: { application_port: { type: "integer" } } }, then: { required: ["codec"], properties: { codec: { enum: PORTED } } } },
    ],
  });
  // The whole numbers of /v1/stats: the devices, the counters and gauges (fleet.js), simulated uplinks.
  const statsIntegers = ["devices", ...COUNTERS, ...BACKLOG, "simulated_uplinks"];
  return {
    openapi: "3.1.0",
    info: {
      title: "reconnect-dedupe",
      version: VERSION,
      summary: "Removes replayed LoRaWAN sensor readings at the edge.",
      description: [
        "Webhook routes for The Things Stack, ChirpStack, Helium and LORIOT, a native burst route, and per-device reads and operator controls. docs/http-api.md is the long form of this document.",
        "",
        "Every `/v1` route but `/v1/health` and `/v1/openapi.json` needs the token (`INGEST_TOKEN`), as `Authorization: Bearer <token>`, as the password of `Authorization: Basic`, or as the bare value of the header `AUTH_HEADER` names when the deployment sets one (docs/network-servers.md \"Auth\"). Errors are `{\"error\": {\"code\", \"message\"}}` with a stable `code` (`ErrorCode`). On every route a bad configuration answers 500 `invalid_config` and a missing token 503 `auth_not_configured`; a path no route matches answers 404 `not_found` (after the token check under `/v1/`). HEAD is answered wherever GET is; a 405 names the allowed methods in `Allow`.",
      ].join("\n"),
      license: { name: "MIT", identifier: "MIT" },
    },
    // The worker that serves this document: OpenAPI resolves a relative server URL
    // against where the document was fetched from, so a viewer or generator given
    // https://<worker>/v1/openapi.json calls that worker, whatever its host (workers.dev,
    // a custom domain, a self-hosted workerd behind a proxy). It states OpenAPI's
    // default (no `servers` means `/`), which linters want written out; a templated
    // host would make every operator type in what the document's own URL already says.
    servers: [{ url: "/", description: "The origin this document is served from (GET /v1/openapi.json)." }],
    tags: [
      { name: "ingest", description: "Readings in: webhooks and native bursts." },
      { name: "devices", description: "Per-device reads: ledger, gaps, configuration, health." },
      { name: "operator", description: "Per-device changes: configuration, re-drive, forget, reset." },
      { name: "fleet", description: "Fleet-wide figures from the roll-up." },
      { name: "bins", description: "Bin state by device time: current fill, staleness, collections (docs/bin-state.md)." },
      { name: "meta", description: "Health and this document." },
    ],
    security: [{ bearerAuth: [] }, { basicAuth: [] }],
    paths: {
      "/v1/health": item({
        get: {
          id: "getHealth",
          tag: "meta",
          summary: "Liveness: ok while the configuration is valid and a token is set",
          open: true,
          ok: { [JSON_TYPE]: schema("Ok") },
        },
      }),
      "/v1/openapi.json": item({
        get: {
          id: "getOpenApi",
          tag: "meta",
          summary: "This document",
          description: "No token needed: it holds no secret. Cacheable for 5 minutes.",
          open: true,
          ok: { [JSON_TYPE]: { type: "object", required: ["openapi", "info", "paths"], properties: { openapi: { const: "3.1.0" }, info: { type: "object", additionalProperties: true }, paths: { type: "object", additionalProperties: true } } } },
          okHeaders: {
            "Cache-Control": { required: true, schema: { const: "public, max-age=300" } },
            "Access-Control-Allow-Origin": { description: "Any origin may read the document (a viewer in a browser).", required: true, schema: { const: "*" } },
          },
        },
      }),
      "/v1/readings": item({
        post: {
          id: "postReadings",
          tag: "ingest",
          summary: "A native burst of readings",
          body: jsonBody(schema("NativeBurst"), "JSON (`application/json` or any `+json` type), at most `MAX_BODY_BYTES` and `MAX_READINGS` readings."),
          ok: { [JSON_TYPE]: schema("IngestReply") },
          okDescription: "Every reading accounted for by its index (`verdicts`).",
          codes: ERRORS_INGEST,
          retry: true,
        },
      }),
      "/v1/uplinks/ttn": webhook({
        id: "postTtnUplink",
        summary: "The Things Stack v3 webhook, every message type",
        description: "Only uplinks are read; other messages are acknowledged (`ignored`). A simulated uplink answers its would-be outcome and stores nothing.",
        body: "TtsMessage",
        parameters: [
          { name: "X-Downlink-Push", in: "header", description: "The Things Stack's downlink push URL; with `X-Downlink-Apikey` and `BACKFILL` on, where a history request for the device goes (docs/sequence-health.md \"Asking the sensor for what is missing\").", schema: { type: "string", format: "uri" } },
          { name: "X-Downlink-Apikey", in: "header", description: "The webhook's downlink API key; used for that one call, never stored or logged.", schema: { type: "string" } },
        ],
        codes: { 400: ["field_mask_incomplete"] },
        ok: { oneOf: [schema("IngestReply"), schema("IgnoredReply"), schema("SimulatedReply")] },
      }),
      "/v1/uplinks/chirpstack": webhook({
        id: "postChirpStackEvent",
        summary: "ChirpStack v4 HTTP integration (JSON), every event",
        description: "Only `up` carries readings; the other documented events are acknowledged without reading the body (`ignored`).",
        body: "ChirpStackEvent",
        parameters: [
          {
            name: "event",
            in: "query",
            description: "The event ChirpStack appends, matched in any case, given at most once; absent means `up`. Another value is 400 `unknown_event`.",
            schema: { type: "string", enum: CHIRPSTACK_EVENTS, default: "up" },
          },
        ],
        codes: { 400: ["unknown_event"] },
        ok: { oneOf: [schema("IngestReply"), schema("IgnoredReply")] },
      }),
      "/v1/uplinks/helium": webhook({
        id: "postHeliumUplink",
        summary: "Helium console HTTP integration",
        description: "`uplink` is read; `join` and other types are acknowledged (`ignored`).",
        body: "HeliumMessage",
        ok: { oneOf: [schema("IngestReply"), schema("IgnoredReply")] },
      }),
      "/v1/uplinks/loriot": webhook({
        id: "postLoriotUplink",
        summary: "LORIOT HTTPS push output",
        description: "`rx` and `gw` are uplinks of one frame; other commands are acknowledged (`ignored`).",
        body: "LoriotMessage",
        ok: { oneOf: [schema("IngestReply"), schema("IgnoredReply")] },
      }),
      "/v1/stats": item({
        get: {
          id: "getStats",
          tag: "fleet",
          summary: "Fleet-wide figures from the roll-up",
          ok: { [JSON_TYPE]: schema("Stats") },
          codes: { 503: ["stats_unavailable"] },
        },
      }),
      "/v1/metrics": item({
        get: {
          id: "getMetrics",
          tag: "fleet",
          summary: "Fleet figures for Prometheus (its text exposition format, version 0.0.4)",
          ok: { [METRICS_CONTENT_TYPE]: schema("PrometheusText") },
          codes: { 503: ["stats_unavailable"] },
        },
      }),
      "/v1/devices/health": item({
        get: {
          id: "listDeviceHealth",
          tag: "fleet",
          summary: "Every device's counts and ratios, a page at a time: group by group, in device id order within a group",
          parameters: [
            PAGE[0],
            { name: "after", in: "query", description: "The `next` of the previous page (a device id), given at most once.", schema: { type: "string" } },
            FORMAT,
          ],
          ok: { [JSON_TYPE]: schema("FleetHealthPage"), "text/csv; charset=utf-8; header=present": schema("HealthCsv") },
          okHeaders: {
            ...NEGOTIATED,
            Link: { description: "`<…>; rel=\"next\"`: the next page, when there is one.", schema: { type: "string", pattern: "^<[^>]+>; rel=\"next\"$" } },
            "Content-Disposition": { description: "CSV only.", schema: { const: 'attachment; filename="devices-health.csv"' } },
          },
          codes: { 400: ["invalid_query"], 503: ["stats_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/readings": item({
        get: {
          id: "listReadings",
          tag: "devices",
          summary: "The device's ledger rows, oldest first",
          description: "A device that never reported answers an empty page without its object being started.",
          parameters: [DEVICE_ID, ...PAGE],
          ok: { [JSON_TYPE]: schema("LedgerPage") },
          codes: { 400: ["invalid_device_id", "invalid_query"], 503: ["device_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/gaps": item({
        get: {
          id: "getGaps",
          tag: "devices",
          summary: "The device's sequence health and history requests",
          parameters: [DEVICE_ID],
          ok: { [JSON_TYPE]: schema("Gaps") },
          codes: ERRORS_READ,
        },
      }),
      "/v1/devices/{device_id}/state": item({
        get: {
          id: "getBinState",
          tag: "bins",
          summary: "The bin's current fill by device time, its reporting period and staleness",
          description: "The newest reading by device time, never moved backwards by a late one (docs/bin-state.md). A device never seen answers no reading, without its object being started.",
          parameters: [DEVICE_ID],
          ok: { [JSON_TYPE]: schema("BinState") },
          codes: ERRORS_READ,
        },
      }),
      "/v1/devices/{device_id}/collections": item({
        get: {
          id: "listCollections",
          tag: "bins",
          summary: "The collections the device's readings confirmed, in that order",
          description: "From the rows of the readings that confirmed them, kept as long as the ledger (LEDGER_RETENTION_MS).",
          parameters: [DEVICE_ID, ...PAGE],
          ok: { [JSON_TYPE]: schema("CollectionPage") },
          codes: { 400: ["invalid_device_id", "invalid_query"], 503: ["device_unavailable"] },
        },
      }),
      "/v1/bins": item({
        get: {
          id: "listBins",
          tag: "bins",
          summary: "Every bin's current state, a page at a time, for a route planner",
          description:
            "From the group objects' memory, never from each device: each bin as its group held it when asked (every reading committed by then). Pages in the order of GET /v1/devices/health. The filters combine (all must hold).",
          parameters: [
            PAGE[0],
            { name: "after", in: "query", description: "The `next` of the previous page (a device id), given at most once.", schema: { type: "string" } },
            { name: "min_fill", in: "query", description: "Only bins whose newest fill is at least this (0 … 100).", schema: { type: "string", pattern: "^[0-9]{1,3}(\\.[0-9]+)?$" } },
            { name: "stale", in: "query", description: "Only stale bins (`true`) or fresh ones (`false`); a bin without a known period is neither.", schema: { type: "string", enum: ["true", "false"] } },
            { name: "collected_since", in: "query", description: "Only bins whose last collection ended at or after this instant (RFC 3339).", schema: { type: "string", format: "date-time" } },
            FORMAT,
          ],
          ok: { [JSON_TYPE]: schema("BinsPage"), "text/csv; charset=utf-8; header=present": schema("BinsCsv") },
          okHeaders: {
            ...NEGOTIATED,
            Link: { description: "`<…>; rel=\"next\"`: the next page, when there is one.", schema: { type: "string", pattern: "^<[^>]+>; rel=\"next\"$" } },
            "Content-Disposition": { description: "CSV only.", schema: { const: 'attachment; filename="bins.csv"' } },
          },
          codes: { 400: ["invalid_query"], 503: ["device_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/redrive": item({
        post: {
          id: "redrive",
          tag: "operator",
          summary: "Put the readings the origin refused back in the outbox",
          parameters: [
            DEVICE_ID,
            { name: "key", in: "query", description: `The keys to re-drive (at most ${REDRIVE_KEYS}, none empty); none: every refused reading.`, schema: { type: "array", maxItems: REDRIVE_KEYS, items: { type: "string", minLength: 1 } }, style: "form", explode: true },
          ],
          description: "No body, or JSON (one sent is not read): a form body is refused 415, as a page on another site could make a browser send one.",
          ok: { [JSON_TYPE]: schema("Redriven") },
          codes: { 400: ["invalid_device_id", "invalid_query"], 415: ["unsupported_media_type"], 503: ["device_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/health": item({
        get: {
          id: "getDeviceHealth",
          tag: "devices",
          summary: "One device's counts and ratios (zeros for a device never seen)",
          parameters: [DEVICE_ID, FORMAT],
          ok: { [JSON_TYPE]: schema("DeviceHealth"), "text/csv; charset=utf-8; header=present": schema("HealthCsv") },
          okHeaders: NEGOTIATED,
          codes: { 400: ["invalid_device_id", "invalid_query"], 503: ["stats_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/forget": item({
        post: {
          id: "forgetKey",
          tag: "operator",
          summary: "The device's memory forgets one key",
          parameters: [DEVICE_ID],
          body: jsonBody(schema("ForgetRequest")),
          ok: { [JSON_TYPE]: schema("Forgotten") },
          codes: {
            400: ["invalid_device_id", ...ERRORS_BODY, "invalid_forget_body"],
            404: ["unknown_device", "unknown_key"],
            413: ["body_too_large"],
            415: ["unsupported_media_type"],
            503: ["device_unavailable", "storage_unavailable"],
          },
        },
      }),
      "/v1/devices/{device_id}/reset": item({
        post: {
          id: "resetDevice",
          tag: "operator",
          summary: "The device's memory starts afresh (a re-commissioned sensor)",
          description: "No body, or JSON (one sent is not read): a form body is refused 415, as a page on another site could make a browser send one.",
          parameters: [DEVICE_ID],
          ok: { [JSON_TYPE]: schema("ResetReply") },
          codes: { 400: ["invalid_device_id"], 404: ["unknown_device"], 415: ["unsupported_media_type"], 503: ["device_unavailable", "storage_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/history": item({
        get: {
          id: "listHistory",
          tag: "devices",
          summary: "The device's operator events, oldest first",
          parameters: [DEVICE_ID, ...PAGE],
          ok: { [JSON_TYPE]: schema("HistoryPage") },
          codes: { 400: ["invalid_device_id", "invalid_query"], 503: ["device_unavailable"] },
        },
      }),
      "/v1/devices/{device_id}/config": item({
        get: {
          id: "getConfig",
          tag: "devices",
          summary: "The device's stored configuration",
          parameters: [DEVICE_ID],
          ok: { [JSON_TYPE]: schema("DeviceConfig") },
          codes: { 400: ["invalid_device_id"], 404: ["not_configured"], 503: ["device_unavailable"] },
        },
        put: {
          id: "putConfig",
          tag: "operator",
          summary: "Store the device's bin and sensor; decodes its parked uplinks",
          parameters: [DEVICE_ID],
          body: jsonBody(schema("DeviceConfigRequest"), "A JSON object with only these members, none twice; absent and null are the same."),
          ok: { [JSON_TYPE]: schema("StoredConfig") },
          codes: {
            400: ["invalid_device_id", ...ERRORS_BODY, "invalid_config_body", ...CONFIG_CODES],
            413: ["body_too_large"],
            415: ["unsupported_media_type"],
            503: ["device_unavailable", "storage_unavailable"],
          },
        },
      }),
      "/v1/devices/config": item({
        post: {
          id: "configureDevices",
          tag: "operator",
          summary: "Store many devices' bins and sensors at once (JSON or CSV); decodes their parked uplinks",
          description: [
            `At most ${BULK_CONFIG_ROWS} rows (else 413 \`too_many_rows\`, nothing applied) and \`MAX_BODY_BYTES\`. Each row is checked as a PUT of its device's configuration would be; a device in more than one row is refused in each (\`duplicate_device_id\`). The rows that break no rule are applied, the others not; one call per group object (at most ${GROUPS}).`,
            "The reply has a result per row, in the body's order. Applying the same configuration again changes nothing (`changed` false, no history event), so a whole call may be retried: a row answered `device_unavailable` or `storage_unavailable` is applied by the retry.",
          ].join("\n\n"),
          body: {
            required: true,
            description: "JSON (`application/json` or any `+json` type), or CSV (`text/csv`).",
            content: { [JSON_TYPE]: { schema: schema("BulkConfigRequest") }, "text/csv": { schema: schema("BulkConfigCsv") } },
          },
          ok: { [JSON_TYPE]: schema("BulkConfigReply") },
          okDescription: "A result per row: applied (`ok`, the stored configuration, the parked uplinks decoded) or refused with its code.",
          codes: {
            400: [...ERRORS_BODY, "invalid_config_body", "invalid_csv"],
            413: ["body_too_large", "too_many_rows"],
            415: ["unsupported_media_type"],
          },
        },
      }),
    },
    components: {
      securitySchemes: {
        bearerAuth: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <INGEST_TOKEN>`. A deployment that sets `AUTH_HEADER` also takes the bare token in that header." },
        basicAuth: { type: "http", scheme: "basic", description: "The token as the password; any user name unless `BASIC_AUTH_USER` is set (The Things Stack's \"Request authentication\")." },
      },
      parameters: {
        DeviceId: {
          name: "device_id",
          in: "path",
          required: true,
          description:
            "The device, percent-encoded; checked by the core's `device_id` rule (docs/http-api.md \"Readings and rejections\"), else 400 `invalid_device_id`. A DevEUI (16 hex digits) in any case is the device in upper case.",
          schema: { type: "string" },
        },
        Limit: { name: "limit", in: "query", description: "Rows per page, decimal digits, given at most once.", schema: { type: "integer", minimum: PAGE_ROWS.min, maximum: PAGE_ROWS.max, default: PAGE_ROWS.default } },
        // At most 2^53 - 1, as the worker reads it (a safe integer); a client would write a larger number as `1e+21`.
        After: { name: "after", in: "query", description: "The `next` of the previous page, decimal digits, given at most once.", schema: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 } },
        Format: {
          name: "format",
          in: "query",
          description: "`json` or `csv`, given at most once; without it, an `Accept` header that prefers `text/csv` to JSON answers CSV.",
          schema: { type: "string", enum: ["json", "csv"] },
        },
      },
      responses: SHARED,
      headers: {
        "WWW-Authenticate": {
          required: true,
          description: "One Basic challenge, which a browser answers with a sign-in prompt; a Bearer token is accepted all the same.",
          schema: { const: 'Basic realm="reconnect-dedupe", charset="UTF-8"' },
        },
        "Retry-After": { description: "Seconds; on every 503 but `auth_not_configured`.", schema: { const: "1" } },
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          additionalProperties: false,
          properties: {
            error: {
              type: "object",
              required: ["code", "message"],
              additionalProperties: false,
              properties: { code: schema("ErrorCode"), message: { type: "string", description: "For a person: what was wrong and what to do. Not stable." } },
            },
          },
        },
        ErrorCode: {
          description: "The stable code of an error reply (docs/http-api.md \"HTTP API\", status table).",
          oneOf: [
            ["invalid_json", "400: the body is not JSON (a member twice, a lone surrogate escape, a byte order mark, nesting over 128)."],
            ["invalid_burst", "400: the body is not the route's shape."],
            ["body_incomplete", "400: the body ended before its Content-Length, or the connection was lost."],
            ["invalid_device_id", "400: the path's device id breaks the device_id rule."],
            ["invalid_query", "400: a bad `limit`, `after`, `format` or `key` parameter."],
            ["unknown_event", "400: a ChirpStack `event` it does not document, or given twice."],
            ["field_mask_incomplete", "400: a The Things Stack uplink whose field mask removed `end_device_ids`."],
            ["invalid_config_body", "400: a configuration body that is not an object of its members (a bulk body: not `{\"devices\": [...]}`)."],
            ["invalid_csv", "400: a bulk configuration's CSV body that is not UTF-8 RFC 4180 with a header row naming every column of a configuration, and no other."],
            ["invalid_forget_body", "400: a forget body that is not `{\"key\": \"<string>\"}`."],
            ["unknown_codec", "400: a configuration's `codec` the core does not decode."],
            ["invalid_bin_depth", "400: a configuration's `bin_depth_mm` out of range or not whole."],
            ["invalid_offset", "400: a configuration's `offset_mm` out of range or not whole."],
            ["invalid_reporting_period", "400: a configuration's `reporting_period_s` out of range or not whole."],
            ["invalid_application_port", "400: a configuration's `application_port` out of range or not whole, or given with a codec whose ports are fixed (or none)."],
            ["missing_reporting_period", "400: a codec that needs `reporting_period_s` without it."],
            ["invalid_backfill", "400: a configuration's `backfill` that is not true, false or null."],
            ["unauthorized", "401: the token is missing or wrong."],
            ["cross_site_request", "403: a browser's request from another site (`Sec-Fetch-Site`, or `Origin` without it) to a route that can change state."],
            ["not_found", "404: no route for the path."],
            ["not_configured", "404: the device has no configuration."],
            ["unknown_device", "404: the device never reported and has no configuration."],
            ["unknown_key", "404: the device has no ledger row with that key."],
            ["method_not_allowed", "405: see `Allow`."],
            ["body_too_large", "413: the body is over MAX_BODY_BYTES."],
            ["too_many_readings", "413: over MAX_READINGS readings."],
            ["too_many_devices", "413: over MAX_DEVICES_PER_REQUEST devices; nothing was stored."],
            ["too_many_rows", `413: a bulk configuration of over ${BULK_CONFIG_ROWS} rows; nothing was applied.`],
            ["unsupported_media_type", "415: not JSON (the Protobuf encodings included); on reset and redrive, a form body."],
            ["invalid_config", "500: the worker's configuration is invalid; every route answers this."],
            ["wasm_trap", "500: the core trapped and was re-instantiated; retry."],
            ["internal_error", "500: unexpected; see the worker log."],
            ["retry_later", "503: some readings were not stored (`not_stored`); resend the request."],
            ["auth_not_configured", "503: no INGEST_TOKEN is set; the worker fails closed."],
            ["stats_unavailable", "503: a roll-up shard could not be read; retry."],
            ["device_unavailable", "503: a device object (or its roll-up shard) could not be reached; nothing changed, retry."],
            ["storage_unavailable", "503: a device object's write failed; nothing changed, retry."],
          ].map(([c, description]) => ({ const: c, description })),
        },
        Ok: { type: "object", required: ["ok"], additionalProperties: false, properties: { ok: { const: true } } },
        PrometheusText: { type: "string", description: "The Prometheus text exposition format, version 0.0.4." },
        Time: { type: "string", format: "date-time", description: "A UTC instant as Python's `isoformat()` writes it: `2026-07-16T09:00:11.204000+00:00`." },
        Key: { type: "string", pattern: "^.+:-?[0-9]+:[0-9a-f]{16}$", description: "`{device_id}:{seq}:{16 hex digits of SHA-256 of the content}` (docs/semantics.md \"The key\")." },
        Codec: { type: "string", enum: codecs, description: "A codec of the core, by the TTN device repository's `brand_id/model_id`." },

        Reading: {
          type: "object",
          description: "A reading; other members are ignored. A reading that breaks a rule is rejected (listed in the reply), not the request.",
          required: ["device_id", "seq", "ts", "fill_pct"],
          properties: {
            device_id: DEVICE_ID_RULE,
            seq: { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 },
            // The core's rule (timestamp.rs `parse_rfc3339`) as far as a schema can say it.
            ts: {
              type: "string",
              format: "date-time",
              pattern: "^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-5][0-9](\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
              description: "RFC 3339 with `Z` or `±hh:mm` (not `±hhmm`), at most 9 fraction digits, no leap second; within years 0001-9999 in UTC.",
            },
            fill_pct: { type: "number", minimum: 0, maximum: 100 },
          },
        },
        NativeBurst: {
          oneOf: [
            { type: "array", items: schema("Reading") },
            { type: "object", required: ["readings"], properties: { readings: { type: "array", items: schema("Reading") } } },
          ],
        },
        // A network server's message, described by its vendor: any members. Said
        // (`additionalProperties: true`) rather than left implicit, because generators type
        // an object schema without members as an empty object (openapi-typescript:
        // `Record<string, never>`), which no real message is.
        TtsMessage: { type: "object", additionalProperties: true, description: "The Things Stack v3 webhook message (JSON format): `end_device_ids` and one message member (`uplink_message`, `join_accept`, ...)." },
        ChirpStackEvent: { type: "object", additionalProperties: true, description: "A ChirpStack v4 HTTP integration event, JSON payload encoding." },
        HeliumMessage: { type: "object", additionalProperties: true, description: "A Helium console HTTP integration message (`type`: `uplink`, `join`)." },
        LoriotMessage: { type: "object", additionalProperties: true, description: "A LORIOT HTTPS push message (`cmd`: `rx`, `gw`, ...)." },

        Outcome: {
          type: "object",
          description: "What happened to each reading of a request, by its index (a decoded raw payload: each sample by its place). `received = unique + duplicates_suppressed + len(rejected) + len(parked)` (+ `len(not_stored)` on a 503).",
          required: ["burst_id", "received", "unique", "duplicates_suppressed", "admitted", "duplicates", "rejected", "verdicts"],
          properties: {
            burst_id: { type: "string", format: "uuid" },
            received: integer(),
            unique: integer(),
            duplicates_suppressed: integer(),
            admitted: { type: "array", items: schema("Admitted") },
            duplicates: { type: "array", items: integer() },
            rejected: { type: "array", items: schema("Rejection") },
            parked: { type: "array", items: schema("Parked") },
            decoded: schema("Decoded"),
            cross_path_duplicates: { type: "array", items: integer(), description: "Datalog records found to be a live reading (among `duplicates`)." },
            verdicts: { type: "array", items: schema("Verdict") },
            collections: { type: "array", items: schema("DeviceCollection"), description: "The collections this request's readings confirmed (absent when none)." },
          },
        },
        IngestReply: { allOf: [schema("Outcome")], unevaluatedProperties: false },
        SimulatedReply: {
          allOf: [schema("Outcome")],
          description: "The Things Stack's Simulate uplink: the readings' would-be outcome; nothing stored.",
          required: ["simulated", "stored", "message"],
          properties: { simulated: { const: true }, stored: { const: false }, message: { type: "string" } },
          unevaluatedProperties: false,
        },
        RetryLaterReply: {
          allOf: [schema("Outcome")],
          description: "503: the readings in `not_stored` were not stored (every reading of a device that failed); resend the request.",
          required: ["not_stored", "errors", "error"],
          properties: {
            not_stored: { type: "array", items: integer() },
            errors: { type: "array", items: schema("DeviceError") },
            error: {
              type: "object",
              required: ["code", "message"],
              additionalProperties: false,
              properties: { code: { const: "retry_later" }, message: { type: "string" } },
            },
          },
          unevaluatedProperties: false,
        },
        IgnoredReply: {
          type: "object",
          description: "A network-server message that is not an uplink: acknowledged, nothing stored, counted in /v1/stats `ignored_events`.",
          required: ["burst_id", "ignored", "route", "event", "message"],
          additionalProperties: false,
          properties: {
            burst_id: { type: "string", format: "uuid" },
            ignored: { const: true },
            route: { type: "string", enum: UPLINK_ROUTES },
            event: { type: "string", description: "The message type as the network server names it (`join_accept`, `status`, ...); `unknown` or `other` for a kind this worker does not know." },
            message: { type: "string" },
          },
        },
        Admitted: { type: "object", required: ["index", "key"], additionalProperties: false, properties: { index: integer(), key: schema("Key") } },
        Rejection: {
          type: "object",
          required: ["index", "field", "code", "message", "device_id"],
          additionalProperties: false,
          properties: {
            index: integer(),
            field: { type: "string", enum: [...rejection.fields, PAYLOAD_FIELD] },
            code: schema("RejectionCode"),
            message: { type: "string" },
            device_id: nullable({ type: "string" }),
          },
        },
        RejectionCode: {
          type: "string",
          description: "Why a reading was rejected (docs/http-api.md \"Readings and rejections\", \"Supported sensors\"): it can never be stored as sent.",
          enum: REJECTION_CODES,
        },
        Parked: {
          type: "object",
          description: "Raw bytes kept undecoded until the device is configured.",
          required: ["index", "device_id", "code", "message"],
          additionalProperties: false,
          properties: { index: integer(), device_id: { type: "string" }, code: { const: "device_not_configured" }, message: { type: "string" } },
        },
        Decoded: {
          type: "object",
          description: "The raw payload the worker decoded: its samples are the readings.",
          required: ["codec", "f_port"],
          additionalProperties: false,
          properties: { codec: schema("Codec"), f_port: integer() },
        },
        DeviceError: {
          type: "object",
          required: ["device_id", "code", "message"],
          additionalProperties: false,
          properties: {
            device_id: { type: "string" },
            code: { type: "string", enum: ["device_unavailable", "storage_unavailable", "invalid_key", "wasm_trap", "internal_error"], description: "`invalid_key`: the device's stored keys could not be read to rebuild its memory." },
            message: { type: "string" },
          },
        },
        Verdict: {
          description: "What happened to one reading (docs/http-api.md \"The verdict of each reading\").",
          oneOf: [schema("AdmittedVerdict"), schema("ConflictVerdict"), schema("DuplicateVerdict"), schema("RejectedVerdict"), schema("ParkedVerdict"), schema("NotStoredVerdict")],
        },
        AdmittedVerdict: {
          type: "object",
          required: ["index", "verdict", "key", ...ARRIVAL_REQUIRED],
          additionalProperties: false,
          properties: { index: integer(), verdict: { const: "admitted" }, key: schema("Key"), ...ARRIVAL },
        },
        ConflictVerdict: {
          type: "object",
          description: "Admitted, but its device and seq are held with other content.",
          required: ["index", "verdict", "key", "conflicts_with", ...ARRIVAL_REQUIRED],
          additionalProperties: false,
          properties: { index: integer(), verdict: { const: "conflict" }, key: schema("Key"), conflicts_with: nullable(schema("Key")), ...ARRIVAL },
        },
        DuplicateVerdict: {
          type: "object",
          required: ["index", "verdict", "key", "first_admitted_at", "first_burst_id"],
          additionalProperties: false,
          properties: {
            index: integer(),
            verdict: { const: "duplicate" },
            key: nullable(schema("Key")),
            first_admitted_at: nullable(schema("Time")),
            first_burst_id: nullable({ type: "string", format: "uuid" }),
          },
        },
        RejectedVerdict: { type: "object", required: ["index", "verdict", "code"], additionalProperties: false, properties: { index: integer(), verdict: { const: "rejected" }, code: schema("RejectionCode") } },
        ParkedVerdict: { type: "object", required: ["index", "verdict", "code"], additionalProperties: false, properties: { index: integer(), verdict: { const: "parked" }, code: { const: "device_not_configured" } } },
        NotStoredVerdict: { type: "object", required: ["index", "verdict"], additionalProperties: false, properties: { index: integer(), verdict: { const: "not_stored" } } },

        LedgerPage: {
          type: "object",
          required: ["device_id", "readings", "next"],
          additionalProperties: false,
          properties: { device_id: { type: "string" }, readings: { type: "array", items: schema("LedgerRow") }, next: nullable(integer(1, "The `after` of the next page.")) },
        },
        LedgerRow: {
          type: "object",
          required: ["key", "seq", "ts", "fill_pct", "admitted_at", "verdict", "conflicts_with", "delivery", "attempts", "delivered_at", "forgotten_at", ...ARRIVAL_REQUIRED, "collection"],
          additionalProperties: false,
          properties: {
            key: schema("Key"),
            seq: { type: "integer" },
            ts: schema("Time"),
            fill_pct: { type: "number", minimum: 0, maximum: 100 },
            admitted_at: schema("Time"),
            verdict: { type: "string", enum: ["admitted", "conflict"] },
            conflicts_with: nullable(schema("Key")),
            delivery: { type: "string", enum: ["stored", "pending", "delivered", "refused"], description: "`stored`: ledger only (no ORIGIN_URL); `refused` by the origin, until a re-drive." },
            attempts: integer(),
            delivered_at: nullable(schema("Time")),
            forgotten_at: nullable(schema("Time")),
            ...ARRIVAL,
            collection: nullable(schema("Collection")),
          },
        },
        FillSample: {
          type: "object",
          description: "A reading as the bin state names it.",
          required: ["ts", "fill_pct", "key"],
          additionalProperties: false,
          properties: { ts: schema("Time"), fill_pct: { type: "number", minimum: 0, maximum: 100 }, key: schema("Key") },
        },
        CollectionMembers: {
          type: "object",
          description: "The bin was emptied: its fill fell by more than COLLECTION_DROP_PCT from `before` to `after` (consecutive newest readings) and the next reading (`confirmed_by`) stayed down (docs/bin-state.md).",
          required: ["from", "to", "fill_before", "fill_after", "before", "after", "confirmed_by", "confirmed_at"],
          properties: {
            from: schema("Time"),
            to: schema("Time"),
            fill_before: { type: "number" },
            fill_after: { type: "number" },
            before: schema("FillSample"),
            after: schema("FillSample"),
            confirmed_by: schema("Key"),
            confirmed_at: schema("Time"),
          },
        },
        Collection: { allOf: [schema("CollectionMembers")], unevaluatedProperties: false },
        DeviceCollection: { allOf: [schema("CollectionMembers")], required: ["device_id"], properties: { device_id: { type: "string" } }, unevaluatedProperties: false },
        CollectionPage: {
          type: "object",
          required: ["device_id", "collections", "next"],
          additionalProperties: false,
          properties: { device_id: { type: "string" }, collections: { type: "array", items: schema("Collection") }, next: nullable(integer(1, "The `after` of the next page.")) },
        },
        BinState: {
          type: "object",
          required: ["device_id", "newest", "previous", "period_s", "period_source", "stale", "stale_after_s", "suspected_collection", "last_collection"],
          additionalProperties: false,
          properties: {
            device_id: { type: "string" },
            newest: nullable({
              type: "object",
              description: "The bin's state: its newest reading by device time.",
              required: ["ts", "fill_pct", "key", "age_s", "admitted_at"],
              additionalProperties: false,
              properties: {
                ts: schema("Time"),
                fill_pct: { type: "number", minimum: 0, maximum: 100 },
                key: schema("Key"),
                age_s: { type: "number", description: "Seconds since its device time (negative: the device clock is ahead)." },
                admitted_at: nullable({ ...schema("Time"), description: "When the worker admitted it (null: a state kept by a release before this was recorded); staleness is measured from it." }),
              },
            }),
            previous: nullable(schema("FillSample")),
            period_s: nullable({ type: "number", description: "The reporting period seen (the median interval of its newest readings), else the configured one." }),
            period_source: nullable({ type: "string", enum: ["seen", "configured"] }),
            stale: nullable({ type: "boolean", description: "No newer reading admitted for more than STALE_PERIODS periods, by the worker's clock (true without any reading); null without a period." }),
            stale_after_s: nullable({ type: "number" }),
            suspected_collection: nullable({
              type: "object",
              description: "A fall that awaits the next reading: a collection if it stays down, else a glitch.",
              required: ["before", "after"],
              additionalProperties: false,
              properties: { before: schema("FillSample"), after: schema("FillSample") },
            }),
            last_collection: nullable({
              type: "object",
              required: ["from", "to", "fill_before", "fill_after"],
              additionalProperties: false,
              properties: { from: schema("Time"), to: schema("Time"), fill_before: { type: "number" }, fill_after: { type: "number" } },
            }),
          },
        },
        BinRow: {
          type: "object",
          description: "One bin's state, flat (GET /v1/devices/{device_id}/state says each member).",
          required: BIN_COLUMNS,
          additionalProperties: false,
          properties: {
            device_id: { type: "string" },
            fill_pct: nullable({ type: "number" }),
            ts: nullable(schema("Time")),
            key: nullable(schema("Key")),
            age_s: nullable({ type: "number" }),
            admitted_at: nullable(schema("Time")),
            previous_fill_pct: nullable({ type: "number" }),
            previous_ts: nullable(schema("Time")),
            period_s: nullable({ type: "number" }),
            period_source: nullable({ type: "string", enum: ["seen", "configured"] }),
            stale: nullable({ type: "boolean" }),
            stale_after_s: nullable({ type: "number" }),
            collection_suspected: { type: "boolean" },
            last_collection_from: nullable(schema("Time")),
            last_collection_to: nullable(schema("Time")),
            last_collection_fill_before: nullable({ type: "number" }),
            last_collection_fill_after: nullable({ type: "number" }),
            configured: { type: "boolean" },
          },
        },
        BinsPage: {
          type: "object",
          required: ["bins", "next", "as_of"],
          additionalProperties: false,
          properties: { bins: { type: "array", items: schema("BinRow") }, next: nullable({ type: "string" }), as_of: schema("Time") },
        },
        BinsCsv: {
          type: "string",
          description: "RFC 4180: a header row of the columns, a row per bin, CRLF line ends; null is an empty field.",
          pattern: `^${BIN_COLUMNS.join(",")}\r\n`,
        },
        Gaps: {
          type: "object",
          required: ["device_id", "highest", "gaps", "totals", "backfill"],
          additionalProperties: false,
          properties: {
            device_id: { type: "string" },
            highest: nullable({ type: "integer" }),
            gaps: {
              type: "array",
              items: { type: "object", required: ["from", "to", "first_noticed_at"], additionalProperties: false, properties: { from: { type: "integer" }, to: { type: "integer" }, first_noticed_at: schema("Time") } },
            },
            totals: schema("SeqTotals"),
            backfill: {
              type: "object",
              required: ["open", "recent"],
              additionalProperties: false,
              properties: { open: nullable(schema("BackfillRequest")), recent: { type: "array", maxItems: RECENT_SHOWN, items: schema("BackfillRequest") } },
            },
          },
        },
        SeqTotals: {
          type: "object",
          required: SEQ_TOTALS,
          additionalProperties: false,
          properties: Object.fromEntries(SEQ_TOTALS.map((n) => [n, integer()])),
        },
        BackfillRequest: {
          type: "object",
          required: ["id", "state", "via", "from", "to", "start", "end", "f_port", "payload", "attempts", "created_at", "sent_at", "closed_at", "recovered", "last_error"],
          additionalProperties: false,
          properties: {
            id: integer(1),
            state: { type: "string", enum: ["queued", "sent", "answered", "expired", "failed", "cancelled"] },
            via: { type: "string", enum: ["tts", "chirpstack"] },
            from: { type: "integer" },
            to: { type: "integer" },
            start: schema("Time"),
            end: schema("Time"),
            f_port: integer(1),
            payload: { type: "string", pattern: "^([0-9a-f]{2})+$" },
            attempts: integer(),
            created_at: schema("Time"),
            sent_at: nullable(schema("Time")),
            closed_at: nullable(schema("Time")),
            recovered: integer(),
            last_error: nullable({ type: "string" }),
          },
        },
        Redriven: { type: "object", required: ["device_id", "redriven"], additionalProperties: false, properties: { device_id: { type: "string" }, redriven: integer() } },
        ForgetRequest: { type: "object", required: ["key"], additionalProperties: false, properties: { key: { type: "string", minLength: 1, maxLength: FORGET_KEY_CHARS, description: "A key of the device's ledger." } } },
        ForgottenMembers: {
          type: "object",
          required: ["key", "seq", "admitted_at", "held", "forgotten_at"],
          properties: {
            key: schema("Key"),
            seq: { type: "integer" },
            admitted_at: schema("Time"),
            held: { type: "boolean", description: "Whether the device's memory held the key." },
            forgotten_at: schema("Time"),
          },
        },
        Forgotten: { allOf: [schema("ForgottenMembers")], required: ["device_id"], properties: { device_id: { type: "string" } }, unevaluatedProperties: false },
        ResetMembers: {
          type: "object",
          required: ["forgotten", "held", "seq_window", "counter_ref", "backfill_cancelled", "bin_state", "reset_at"],
          properties: {
            forgotten: integer(),
            held: integer(),
            seq_window: nullable({
              type: "object",
              description: "The sequence window deleted.",
              required: ["highest", "missing", "gaps"],
              additionalProperties: false,
              properties: { highest: nullable({ type: "integer" }), missing: integer(), gaps: integer() },
            }),
            counter_ref: nullable({ type: "integer", description: "The codec's application-counter reference deleted (DF703)." }),
            backfill_cancelled: { type: "boolean" },
            bin_state: { type: "boolean", description: "Whether a bin state (GET .../state) was deleted." },
            reset_at: schema("Time"),
          },
        },
        ResetReply: { allOf: [schema("ResetMembers")], required: ["device_id"], properties: { device_id: { type: "string" } }, unevaluatedProperties: false },
        HistoryPage: {
          type: "object",
          required: ["device_id", "events", "next"],
          additionalProperties: false,
          properties: { device_id: { type: "string" }, events: { type: "array", items: schema("HistoryEvent") }, next: nullable(integer(1)) },
        },
        HistoryEvent: {
          oneOf: [
            {
              type: "object",
              required: ["at", "event", "detail"],
              additionalProperties: false,
              properties: {
                at: schema("Time"),
                event: { const: "device_config" },
                detail: { type: "object", required: ["before", "after"], additionalProperties: false, properties: { before: nullable(schema("DeviceConfig")), after: schema("DeviceConfig") } },
              },
            },
            { type: "object", required: ["at", "event", "detail"], additionalProperties: false, properties: { at: schema("Time"), event: { const: "key_forgotten" }, detail: { allOf: [schema("ForgottenMembers")], unevaluatedProperties: false } } },
            { type: "object", required: ["at", "event", "detail"], additionalProperties: false, properties: { at: schema("Time"), event: { const: "device_reset" }, detail: { allOf: [schema("ResetMembers")], unevaluatedProperties: false } } },
          ],
        },
        DeviceConfigRequest: configRequest({}),
        DeviceConfigMembers: {
          type: "object",
          required: ["device_id", "codec", "bin_depth_mm", "offset_mm", "reporting_period_s", "application_port", "backfill", "updated_at"],
          properties: {
            device_id: { type: "string" },
            codec: nullable(schema("Codec")),
            bin_depth_mm: within(deviceConfig.bin_depth_mm),
            offset_mm: within(deviceConfig.offset_mm),
            reporting_period_s: nullable(within(deviceConfig.reporting_period_s)),
            application_port: nullable(within(deviceConfig.application_port)),
            backfill: nullable({ type: "boolean" }),
            updated_at: schema("Time"),
          },
        },
        DeviceConfig: { allOf: [schema("DeviceConfigMembers")], unevaluatedProperties: false },
        StoredConfig: {
          allOf: [schema("DeviceConfigMembers")],
          required: ["unparked"],
          properties: { unparked: schema("Unparked") },
          unevaluatedProperties: false,
        },
        Unparked: {
          type: "object",
          description: `The parked uplinks this call decoded for the device (at most ${UNPARK_PER_CALL}; a call with the same values continues).`,
          required: ["uplinks", "received", "unique", "duplicates_suppressed", "rejected", "still_parked"],
          additionalProperties: false,
          properties: Object.fromEntries(["uplinks", "received", "unique", "duplicates_suppressed", "rejected", "still_parked"].map((n) => [n, integer()])),
        },
        BulkConfigRequest: {
          type: "object",
          required: ["devices"],
          additionalProperties: false,
          properties: { devices: { type: "array", maxItems: BULK_CONFIG_ROWS, items: schema("BulkConfigRow") } },
        },
        BulkConfigRow: configRequest({ device_id: DEVICE_ID_RULE }, "A device's configuration, as its PUT body, with its `device_id`; a DevEUI in any case is the device in upper case."),
        BulkConfigCsv: {
          type: "string",
          description: `RFC 4180 CSV in UTF-8 (a leading byte order mark is dropped): a header row naming every column of ${ROW_MEMBERS.join(", ")} once, in any order (a column left out would reset that setting on every device: a row replaces a configuration), then a record per device (at most ${BULK_CONFIG_ROWS}). An empty cell is an absent member; a number column's cell is read as a JSON number; \`backfill\` is \`true\` or \`false\` in any case. A record of empty cells only is skipped.`,
        },
        BulkConfigReply: {
          type: "object",
          description: "`received = configured + failed`: a result per row, in the body's order.",
          required: ["received", "configured", "changed", "failed", "unparked_uplinks", "results"],
          additionalProperties: false,
          properties: {
            received: integer(0, "Rows in the body."),
            configured: integer(0, "Rows applied: their device's configuration is stored."),
            changed: integer(0, "Among them, those whose stored configuration this call changed."),
            failed: integer(0, "Rows refused or not applied (`code`)."),
            unparked_uplinks: integer(0, "Parked uplinks decoded, over every device."),
            results: { type: "array", maxItems: BULK_CONFIG_ROWS, items: { oneOf: [schema("BulkConfigApplied"), schema("BulkConfigRefused")] } },
          },
        },
        BulkConfigApplied: {
          type: "object",
          required: ["row", "device_id", "ok", "changed", "config", "unparked"],
          additionalProperties: false,
          properties: {
            ...BULK_ROW_PLACE,
            device_id: { type: "string" },
            ok: { const: true },
            changed: { type: "boolean", description: "Whether this call changed the stored configuration (false: the same values were stored already)." },
            config: schema("DeviceConfig"),
            unparked: schema("Unparked"),
          },
        },
        BulkConfigRefused: {
          type: "object",
          required: ["row", "device_id", "ok", "code", "message"],
          additionalProperties: false,
          properties: {
            ...BULK_ROW_PLACE,
            device_id: nullable({ type: "string", description: "As the row gives it (checked: as readings name the device); null when it gives none that is a string." }),
            ok: { const: false },
            code: schema("BulkConfigRowCode"),
            message: { type: "string" },
          },
        },
        BulkConfigRowCode: {
          type: "string",
          description: "Why a row was not applied: a rule of the configuration (as the PUT's 400s), `invalid_config_body` (not an object of the row's members; a CSV record with another number of fields than the header), `invalid_device_id`, `duplicate_device_id` (a device in more than one row), or its group object's failure (`device_unavailable`, `storage_unavailable`: retry).",
          enum: ["invalid_config_body", "invalid_device_id", "duplicate_device_id", ...CONFIG_CODES, "device_unavailable", "storage_unavailable"],
        },
        Stats: {
          type: "object",
          required: [...statsIntegers, "oldest_undelivered_age_ms", "ignored_events", "rejected_by_code", "backfill_requests", "last_flush_at", "as_of", "stats_flush_ms"],
          additionalProperties: false,
          properties: {
            ...Object.fromEntries(statsIntegers.map((n) => [n, integer()])),
            oldest_undelivered_age_ms: nullable(integer()),
            ignored_events: { type: "object", description: "Acknowledged messages by `<route>/<event>`.", propertyNames: { pattern: `^(${routes})/.+$` }, additionalProperties: integer(1) },
            rejected_by_code: {
              type: "object",
              description: "`rejected` by code, adding up to it; `not_recorded`: rejections counted by an earlier version, which kept no code.",
              propertyNames: { anyOf: [schema("RejectionCode"), { const: "not_recorded" }] },
              additionalProperties: integer(1),
            },
            backfill_requests: {
              type: "object",
              description: "History requests (docs/sequence-health.md \"Asking the sensor for what is missing\") by step: made, accepted by the network server, then closed as answered, expired, failed or cancelled.",
              required: BACKFILL_OUTCOMES,
              additionalProperties: false,
              properties: Object.fromEntries(BACKFILL_OUTCOMES.map((n) => [n, integer()])),
            },
            last_flush_at: { ...nullable(schema("Time")), description: "When the newest device flush reached the roll-up; null before the first." },
            as_of: schema("Time"),
            stats_flush_ms: integer(1),
          },
        },
        HealthMembers: {
          type: "object",
          required: HEALTH_COLUMNS,
          properties: {
            device_id: { type: "string" },
            ...Object.fromEntries(HEALTH_COUNTS.map((n) => [n, integer()])),
            ...Object.fromEntries(HEALTH_RATIOS.map((n) => [n, nullable({ type: "number", minimum: 0, maximum: 1 })])),
            flushed_at: nullable(schema("Time")),
          },
        },
        HealthRow: { allOf: [schema("HealthMembers")], unevaluatedProperties: false },
        DeviceHealth: { allOf: [schema("HealthMembers")], required: ["as_of", "stats_flush_ms"], properties: { as_of: schema("Time"), stats_flush_ms: integer(1) }, unevaluatedProperties: false },
        FleetHealthPage: {
          type: "object",
          required: ["devices", "next", "as_of", "stats_flush_ms"],
          additionalProperties: false,
          properties: { devices: { type: "array", items: schema("HealthRow") }, next: nullable({ type: "string" }), as_of: schema("Time"), stats_flush_ms: integer(1) },
        },
        HealthCsv: {
          type: "string",
          description: "RFC 4180: a header row of the columns, a row per device, CRLF line ends; null is an empty field.",
          pattern: `^${HEALTH_COLUMNS.join(",")}\r\n`,
        },
      },
    },
  };
}

let served = null;

/**
 * The document's JSON text as served (index.js, GET /v1/openapi.json), built once per
 * isolate. A member whose value is undefined (an owner's fact misnamed here) throws
 * rather than vanish from the text.
 */
export function openApiJson() {
  served ??= JSON.stringify(openApi(), (name, value) => {
    if (value === undefined) throw new Error(`openapi.js: the member ${JSON.stringify(name)} is undefined`);
    return value;
  });
  return served;
}
