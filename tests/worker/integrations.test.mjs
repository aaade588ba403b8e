// integrations/: The Things Stack webhook template and the ChirpStack HTTP integration
// snippet, each checked against its format's own rules and then used the way the
// network server uses it, against the worker in workerd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { execFile, execFileSync } from "node:child_process";
import os from "node:os";
import YAML from "yaml";
import { parseTemplate } from "url-template";
import Ajv from "ajv";
import { start, fixture, TOKEN, assertReconciles } from "../support/harness.mjs";

const root = new URL("../../", import.meta.url).pathname;
const read = (p) => fs.readFileSync(path.join(root, p), "utf8");

let w;
let workerUrl; // where the worker listens on loopback, as http://127.0.0.1:<port>/
before(async () => {
  w = await start();
  workerUrl = (await w.mf.ready).href;
});
after(() => w?.mf.dispose());

// --- The Things Stack ---------------------------------------------------------------

/**
 * The rules of TheThingsNetwork/lorawan-webhook-templates, as its CI applies them
 * (schema/validate.go and schema/lorawan_webhook_templates.go at 080bcb72 / 4e77ff32:
 * identifiers, lengths, every `{name}` in the base URL, paths and headers a field or
 * a built-in), plus what its Go types say is there at all (an unknown key would be
 * dropped silently by TTS's YAML decoding: a typo must fail here instead) and its
 * index (templates.yml lists the id; the file is `<id>.yml`). The URLs are not
 * fetched: their CI GETs them, which needs the internet; they must be empty or https.
 * Returns the list of violations.
 */
function templateViolations(t) {
  const out = [];
  const IDENTIFIER = /^[a-z0-9](?:[-]?[a-z0-9]){2,}$/;
  const FIELD_ID = /^([A-Za-z0-9_\-\\.]|%[0-9A-Fa-f][0-9A-Fa-f])+$/;
  const BUILTIN = ["appID", "applicationID", "appEUI", "joinEUI", "devID", "deviceID", "devEUI", "devAddr"];
  const KEYS = ["template-id", "name", "description", "logo-url", "info-url", "documentation-url", "tts-documentation-url", "base-url", "headers", "format", "fields", "create-downlink-api-key", "paths", "field-mask"];
  const FIELD_KEYS = ["id", "name", "description", "secret", "default-value", "optional"];
  const PATHS = ["uplink-message", "uplink-normalized", "join-accept", "downlink-ack", "downlink-nack", "downlink-sent", "downlink-failed", "downlink-queued", "downlink-queue-invalidated", "location-solved", "service-data"];
  // Go's len(), which validate.go's limits use: UTF-8 bytes, not characters.
  const bytes = (s) => Buffer.byteLength(s ?? "");
  const unknown = (obj, keys, where) => Object.keys(obj ?? {}).filter((k) => !keys.includes(k)).forEach((k) => out.push(`${where}: unknown key ${k}`));
  const fields = t.fields ?? [];
  unknown(t, KEYS, "template");
  if (!IDENTIFIER.test(t["template-id"] ?? "") || bytes(t["template-id"]) > 32) out.push(`template-id ${t["template-id"]} is not valid`);
  if (typeof t.name !== "string" || bytes(t.name) > 20) out.push("name: a string of at most 20 bytes");
  if (typeof t.description !== "string" || bytes(t.description) > 100) out.push("description: a string of at most 100 bytes");
  if (!IDENTIFIER.test(t.format ?? "")) out.push(`format ${t.format} is not valid`);
  for (const k of ["logo-url", "info-url", "documentation-url", "tts-documentation-url"]) {
    if (t[k] !== undefined && t[k] !== "" && !/^https:\/\/[^\s]+$/.test(t[k])) out.push(`${k} is not an https URL`);
  }
  if (typeof t["create-downlink-api-key"] !== "boolean") out.push("create-downlink-api-key: true or false");
  for (const f of fields) {
    unknown(f, FIELD_KEYS, `field ${f.id}`);
    if (typeof f.id !== "string" || !FIELD_ID.test(f.id) || bytes(f.id) > 32) out.push(`field id ${f.id} is not valid`);
    if (bytes(f.name) > 20) out.push(`field ${f.id}: name longer than 20 bytes`);
    if (bytes(f.description) > 100) out.push(`field ${f.id}: description longer than 100 bytes`);
    if (bytes(f["default-value"]) > 100) out.push(`field ${f.id}: default-value longer than 100 bytes`);
  }
  const defined = (name) => BUILTIN.includes(name) || fields.some((f) => f.id === name);
  const uri = (text, where) => {
    const names = templateNames(text);
    if (names === null) return out.push(`${where}: ${JSON.stringify(text)} is not an RFC 6570 URI template`);
    for (const n of names) if (!defined(n)) out.push(`${where}: undefined field {${n}}`);
  };
  uri(t["base-url"] ?? "", "base-url");
  for (const [k, v] of Object.entries(t.headers ?? {})) {
    uri(k, `header key ${k}`);
    uri(String(v), `header ${k}`);
  }
  unknown(t.paths, PATHS, "paths");
  for (const [k, v] of Object.entries(t.paths ?? {})) {
    if (typeof v !== "string" || bytes(v) > 64) out.push(`paths.${k}: a string of at most 64 bytes`);
    else uri(v, `paths.${k}`);
  }
  return out;
}

/** The variable names of an RFC 6570 URI template (section 2), or null when it is not one. */
function templateNames(text) {
  const names = [];
  const VARSPEC = /^([A-Za-z0-9_]|%[0-9A-Fa-f]{2})(\.?([A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(:[1-9][0-9]{0,3}|\*)?$/;
  for (const part of text.split(/(\{[^{}]*\})/)) {
    if (part.startsWith("{")) {
      const body = part.slice(1, -1).replace(/^[+#./;?&]/, "");
      for (const spec of body.split(",")) {
        if (!VARSPEC.test(spec)) return null;
        names.push(spec.replace(/(:\d+|\*)$/, ""));
      }
    } else if (/[{}]/.test(part)) return null;
  }
  return names;
}

/**
 * What The Things Stack Console makes of a template and the user's values
 * (lorawan-stack pkg/webui/console/containers/webhook-add/index.js,
 * `convertTemplateToWebhook`): each header value's first `{field}` replaced as is
 * (an empty result drops the header), the base URL and each path expanded with
 * url-template.
 */
function instantiate(t, values) {
  const headers = {};
  for (const [k, v] of Object.entries(t.headers ?? {})) {
    const value = v.replace(/{([a-z0-9_-]+)}/i, (_, f) => values[f]);
    if (value !== "") headers[k] = value;
  }
  const paths = Object.fromEntries(Object.entries(t.paths ?? {}).map(([k, p]) => [k, parseTemplate(p).expand(values)]));
  return { base_url: parseTemplate(t["base-url"]).expand(values), headers, paths, format: t.format };
}

/**
 * Where The Things Stack posts a message (lorawan-stack pkg/applicationserver/io/web/
 * request.go `NewRequest`, v3.32; path.Join only before v3.7): the message path, its
 * leading slashes dropped, resolved against the base URL with a slash added to its
 * path, so that a path prefix in the base URL is kept.
 */
function webhookUrl(hook, message) {
  const base = new URL(hook.base_url);
  const messagePath = hook.paths[message];
  if (messagePath.split(/[?#]/)[0] !== "" && !base.pathname.endsWith("/")) base.pathname += "/";
  return new URL(messagePath.replace(/^\/+/, ""), base).href;
}

const template = () => YAML.parse(read("integrations/tts/reconnect-dedupe.yml"), { strict: true, uniqueKeys: true });

test("the TTS webhook template keeps the rules of lorawan-webhook-templates and is listed in its index", () => {
  const t = template();
  assert.deepEqual(templateViolations(t), []);
  assert.deepEqual(YAML.parse(read("integrations/tts/templates.yml")), [t["template-id"]]);
  assert.equal(`${t["template-id"]}.yml`, "reconnect-dedupe.yml");
  // Two fields for the user, both used; the token is hidden in the Console.
  assert.deepEqual(t.fields.map((f) => [f.id, f.secret]), [["host", false], ["token", true]]);
  assert.equal(t.format, "json");
});

test("the rules catch what the lorawan-webhook-templates CI refuses", () => {
  const t = template();
  const broken = (edit) => {
    const c = structuredClone(t);
    edit(c);
    return templateViolations(c);
  };
  assert.deepEqual(broken((c) => (c["template-id"] = "Reconnect_Dedupe")), ["template-id Reconnect_Dedupe is not valid"]);
  assert.deepEqual(broken((c) => (c.paths["uplink-message"] = "/v1/uplinks/{route}")), ["paths.uplink-message: undefined field {route}"]);
  assert.deepEqual(broken((c) => (c.paths["join-accept"] = `/${"x".repeat(64)}`)), ["paths.join-accept: a string of at most 64 bytes"]);
  assert.deepEqual(broken((c) => (c.paths["uplink-mesage"] = "/v1/uplinks/ttn")), ["paths: unknown key uplink-mesage"]);
  assert.deepEqual(broken((c) => (c.name = "reconnect-dedupe for bins")), ["name: a string of at most 20 bytes"]);
  // Go's len() counts bytes: 60 characters of two bytes each are 120.
  assert.deepEqual(broken((c) => (c.description = "é".repeat(60))), ["description: a string of at most 100 bytes"]);
  assert.deepEqual(broken((c) => (c.fields[0].name = "Hôte du worker (é)")), []);
  assert.deepEqual(broken((c) => (c.fields[0].name = "Hôte du worker (éé)")), ["field host: name longer than 20 bytes"]);
  assert.deepEqual(broken((c) => (c["base-url"] = "https://{host")), ['base-url: "https://{host" is not an RFC 6570 URI template']);
  assert.deepEqual(broken((c) => (c.headers.Authorization = "Bearer {tokn}")), ["header Authorization: undefined field {tokn}"]);
});

test("a webhook made from the template, as the Console makes it, delivers uplinks and join accepts", async () => {
  const t = template();
  const hook = instantiate(t, { host: "rd.example.workers.dev", token: TOKEN });
  assert.deepEqual(hook, {
    base_url: "https://rd.example.workers.dev",
    headers: { Authorization: `Bearer ${TOKEN}` },
    paths: { "uplink-message": "/v1/uplinks/ttn", "join-accept": "/v1/uplinks/ttn" },
    format: "json",
  });
  // A host with a port and a path prefix stays as typed ({+host}).
  const prefixed = instantiate(t, { host: "dedupe.example.org:8443/lora", token: TOKEN });
  assert.equal(webhookUrl(prefixed, "uplink-message"), "https://dedupe.example.org:8443/lora/v1/uplinks/ttn");

  // What The Things Stack posts: the JSON message, its Content-Type, the headers.
  const send = (message, body) =>
    w.call(webhookUrl(hook, message), { method: "POST", headers: { ...hook.headers, "content-type": "application/json" }, body });
  const uplink = fixture("with-fill/tts-v3-uplink.json");
  const first = await (await send("uplink-message", uplink)).json();
  assertReconciles(first);
  assert.deepEqual([first.received, first.unique, first.duplicates_suppressed], [1, 1, 0]);
  const again = await (await send("uplink-message", uplink)).json();
  assert.deepEqual([again.received, again.unique, again.duplicates_suppressed], [1, 0, 1]);
  const join = await send("join-accept", fixture("tts/join_accept.json"));
  assert.equal(join.status, 200);
  assert.deepEqual(
    (({ ignored, route, event }) => ({ ignored, route, event }))(await join.json()),
    { ignored: true, route: "ttn", event: "join_accept" },
  );
  // A wrong token in the field is refused, not ingested.
  const wrong = instantiate(t, { host: "rd.example.workers.dev", token: "not-the-token" });
  const refused = await w.call(webhookUrl(wrong, "uplink-message"), { method: "POST", headers: { ...wrong.headers, "content-type": "application/json" }, body: uplink });
  assert.equal(refused.status, 401);
  assert.equal((await refused.json()).error.code, "unauthorized");
});

// --- ChirpStack ---------------------------------------------------------------------

/**
 * A stand-in for ChirpStack v4's REST API holding one application's HTTP integration
 * (`api.integration`, null while there is none), answering as ChirpStack does
 * (chirpstack/chirpstack at d77207c; chirpstack-rest-api is grpc-gateway, which answers
 * a gRPC error as `{code, message, details}` with the HTTP status of its code):
 * - an API key other than `key`: Unauthenticated (src/api/auth/mod.rs) → 401;
 * - POST, CreateHttpIntegration: inserts the row keyed (application_id, kind)
 *   (src/storage/application.rs `create_integration`). When the application has one,
 *   the insert's unique violation is no AlreadyExists: `Error::from_diesel` maps only
 *   NotFound (src/storage/error.rs), so it is Internal (src/api/error.rs) → 500;
 * - PUT, UpdateHttpIntegration: updates the row (`update_integration`); when there is
 *   none, diesel's NotFound → NotFound → 404.
 * And the device profiles of `profiles` (id → profile, without its id):
 * - GET /api/device-profiles/{id}, DeviceProfileService_Get: `{deviceProfile, createdAt,
 *   updatedAt}`; an id it does not hold → NotFound → 404;
 * - PUT /api/device-profiles/{id}, DeviceProfileService_Update: the body's
 *   `deviceProfile` replaces the stored one whole (src/api/device_profile.rs `update`
 *   writes every field, the ones not sent at their defaults: here, absent).
 * Every request is recorded.
 */
async function chirpstackApi({ key = "cs-api-key", integration = null, profiles = {} } = {}) {
  const api = { requests: [], integration, profiles: structuredClone(profiles) };
  const answer = (res, status, body) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  const error = (res, status, code, message) => answer(res, status, { code, message, details: [] });
  const server = http.createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      const body = data ? JSON.parse(data) : null;
      api.requests.push({ method: req.method, path: req.url, headers: req.headers, body });
      if (req.headers["grpc-metadata-authorization"] !== `Bearer ${key}`) return error(res, 401, 16, "InvalidToken");
      const profile = req.url.match(/^\/api\/device-profiles\/([^/?]+)$/);
      if (profile) {
        const id = decodeURIComponent(profile[1]);
        if (!Object.hasOwn(api.profiles, id)) return error(res, 404, 5, `Object does not exist (id: ${id})`);
        if (req.method === "PUT") api.profiles[id] = body.deviceProfile;
        else return answer(res, 200, { deviceProfile: { id, ...api.profiles[id] }, createdAt: "2026-07-01T08:00:00Z", updatedAt: "2026-07-01T08:00:00Z" });
        return answer(res, 200, {});
      }
      if (req.method === "POST" && api.integration) {
        return error(res, 500, 13, 'duplicate key value violates unique constraint "application_integration_pkey"');
      }
      if (req.method === "PUT" && !api.integration) return error(res, 404, 5, `Object does not exist (id: ${APP})`);
      api.integration = body.integration;
      answer(res, 200, {});
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  server.unref(); // a test that fails before close() must not keep the file running
  api.url = `http://127.0.0.1:${server.address().port}`;
  api.close = () => new Promise((r) => server.close(r));
  return api;
}

/** Runs `program` with `args` and `env` (and no proxy: every server is on loopback): `{code, stdout, stderr}`. */
function runProgram(program, args, env) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/proxy/i.test(k)));
  return new Promise((resolve) => {
    execFile(program, args, { env: { ...clean, ...env } }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}
/** Runs integrations/chirpstack/http-integration.sh with `env`. */
const runSnippet = (env) => runProgram("bash", [path.join(root, "integrations/chirpstack/http-integration.sh")], env);

const APP = "17c82e96-be03-4f38-aef3-f83d48582d97";
// The worker the snippet checks and points ChirpStack at: this file's, over real HTTP.
const snippetEnv = (api) => ({
  CHIRPSTACK_URL: api.url,
  CHIRPSTACK_API_TOKEN: "cs-api-key",
  APPLICATION_ID: APP,
  WORKER_URL: workerUrl,
  INGEST_TOKEN: TOKEN,
});
// Swagger 2.0 names formats (int64, ...) JSON Schema does not define: not checked.
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const integrationBody = ajv.compile(JSON.parse(read("tests/fixtures/chirpstack-rest-api/http-integration-body.schema.json")));

test("the ChirpStack snippet creates the HTTP integration through ChirpStack's REST API, and replaces it when run again", async () => {
  const api = await chirpstackApi();
  const integration = (endpoint) => ({ encoding: "JSON", eventEndpointUrl: endpoint, headers: { Authorization: `Bearer ${TOKEN}` } });
  const methods = [];
  // The second run replaces the first's integration, here with another URL of the worker.
  for (const url of [workerUrl, workerUrl.replace("127.0.0.1", "localhost")]) {
    const endpoint = `${url}v1/uplinks/chirpstack`;
    const run = await runSnippet({ ...snippetEnv(api), WORKER_URL: url });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `http-integration.sh: application ${APP} now posts its events to ${endpoint}\n`);
    assert.deepEqual(api.integration, integration(endpoint));
    const requests = api.requests.splice(0);
    methods.push(requests.map((r) => r.method));
    for (const r of requests) {
      assert.equal(r.path, `/api/applications/${APP}/integrations/http`);
      assert.equal(r.headers["grpc-metadata-authorization"], "Bearer cs-api-key");
      assert.ok(integrationBody(r.body), JSON.stringify(integrationBody.errors));
      assert.deepEqual(r.body, { integration: integration(endpoint) });
    }
  }
  await api.close();
  // A PUT first: ChirpStack answers 404 when there is no integration to replace, and
  // the POST creates it; a POST when one exists would be a 500.
  assert.deepEqual(methods, [["PUT", "POST"], ["PUT"]]);
});

test("the ChirpStack snippet escapes a token for JSON, and refuses to start without its settings or over http", async () => {
  const api = await chirpstackApi();
  // A worker whose token needs escaping in JSON (and none in the header it checks).
  const quoted = await start({ vars: { INGEST_TOKEN: 'a"b\\c' } });
  try {
    const run = await runSnippet({ ...snippetEnv(api), WORKER_URL: (await quoted.mf.ready).href, INGEST_TOKEN: 'a"b\\c' });
    assert.equal(run.code, 0, run.stderr);
  } finally {
    await quoted.mf.dispose();
  }
  assert.equal(api.integration.headers.Authorization, 'Bearer a"b\\c');
  const made = api.requests.length;
  const missing = await runSnippet({ ...snippetEnv(api), APPLICATION_ID: "" });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /set APPLICATION_ID/);
  // Plain http only to this machine: not to a host whose name merely begins like it.
  for (const url of ["http://rd.example.org", "http://localhost.example.org", "http://127.0.0.1.nip.io/", "http://localhost:8787@rd.example.org/"]) {
    const plain = await runSnippet({ ...snippetEnv(api), WORKER_URL: url });
    assert.equal(plain.code, 2, url);
    assert.match(plain.stderr, /must start with https:\/\//);
  }
  const port = new URL(workerUrl).port;
  for (const url of [`http://localhost:${port}`, `http://127.0.0.1:${port}/`, `http://localhost:${port}/`]) {
    const local = await runSnippet({ ...snippetEnv(api), WORKER_URL: url });
    assert.equal(local.code, 0, `${url}: ${local.stderr}`);
  }
  assert.equal(api.integration.eventEndpointUrl, `http://localhost:${port}/v1/uplinks/chirpstack`);
  // ChirpStack's reply to a key it does not know, passed on.
  const failed = await runSnippet({ ...snippetEnv(api), CHIRPSTACK_API_TOKEN: "x" });
  assert.equal(failed.code, 1);
  assert.equal(failed.stderr, 'http-integration.sh: ChirpStack answered 401: {"code":16,"message":"InvalidToken","details":[]}\n');
  await api.close();
  assert.equal(api.requests.length, made + 3 + 1, "nothing sent without its settings or over http; nothing after a refusal");
});

test("the ChirpStack snippet asks the worker first, and stops with what is wrong, before ChirpStack is asked anything", async () => {
  const api = await chirpstackApi();
  const stopped = async (env, message) => {
    const run = await runSnippet({ ...snippetEnv(api), ...env });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, message);
    assert.match(run.stderr, /; nothing was changed in ChirpStack\n$/);
    assert.equal(run.stdout, "");
  };
  // Nothing listens: a port that was free a moment ago.
  const closed = http.createServer();
  await new Promise((r) => closed.listen(0, "127.0.0.1", r));
  const down = `http://127.0.0.1:${closed.address().port}`;
  await new Promise((r) => closed.close(r));
  await stopped({ WORKER_URL: down }, new RegExp(`^http-integration.sh: the worker does not answer at ${down}/v1/health \\(curl: \\(7\\) [^\\n]+\\); check WORKER_URL and that the worker runs`));
  // Another server at that URL.
  const other = http.createServer((req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>it works</html>"));
  await new Promise((r) => other.listen(0, "127.0.0.1", r));
  const otherUrl = `http://127.0.0.1:${other.address().port}`;
  await stopped({ WORKER_URL: otherUrl }, /answered 200, not reconnect-dedupe's \{"ok":true\}: <html>it works<\/html>;/);
  await new Promise((r) => other.close(r));
  // The worker, without a token of its own: its health says so.
  const tokenless = await start({ vars: { INGEST_TOKEN: "" } });
  try {
    await stopped({ WORKER_URL: (await tokenless.mf.ready).href }, /answered 503, not reconnect-dedupe's \{"ok":true\}: \{"error":\{"code":"auth_not_configured","message":"INGEST_TOKEN is not set/);
  } finally {
    await tokenless.mf.dispose();
  }
  // The worker, and a token that is not its own.
  await stopped({ INGEST_TOKEN: "not-the-token" }, /^http-integration.sh: the worker refuses INGEST_TOKEN \(401 to GET \/v1\/stats\): \{"error":\{"code":"unauthorized",.*; set INGEST_TOKEN to the worker's token;/);
  await api.close();
  assert.deepEqual(api.requests, [], "ChirpStack was asked nothing");
});

test("the ChirpStack snippet puts no secret on a command line, where any local user reads it (ps, /proc/<pid>/cmdline)", async (t) => {
  // The real curl, behind a script of the same name first on PATH that records the
  // arguments it is started with.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-curl-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const real = execFileSync("bash", ["-c", "command -v curl"], { encoding: "utf8" }).trim();
  fs.writeFileSync(path.join(dir, "curl"), `#!/bin/sh\nprintf '%s\\n' "$@" >> "${dir}/argv"\nexec ${real} "$@"\n`, { mode: 0o755 });
  const api = await chirpstackApi({ key: "cs-api-key-4f1d" });
  const run = await runSnippet({ ...snippetEnv(api), CHIRPSTACK_API_TOKEN: "cs-api-key-4f1d", PATH: `${dir}:${process.env.PATH}` });
  await api.close();
  assert.equal(run.code, 0, run.stderr);
  const argv = fs.readFileSync(path.join(dir, "argv"), "utf8");
  // Its calls of the worker (the token in /v1/stats's) and of ChirpStack's API.
  for (const url of ["/v1/health", "/v1/stats", "/api/applications/"]) assert.ok(argv.includes(url), `the spy saw curl's arguments for ${url}`);
  assert.equal(argv.includes("cs-api-key-4f1d"), false, "the ChirpStack API key is on curl's command line");
  assert.equal(argv.includes(TOKEN), false, "the ingest token is on curl's command line");
  assert.equal(api.requests.at(-1).headers["grpc-metadata-authorization"], "Bearer cs-api-key-4f1d");
});

/** Posts `body` as ChirpStack's HTTP integration does with `integration`: each endpoint, `?event=`, its headers. */
async function chirpstackPost(integration, event, body) {
  const replies = [];
  for (const endpoint of integration.eventEndpointUrl.split(",").map((s) => s.trim())) {
    const url = new URL(endpoint);
    url.searchParams.append("event", event);
    const res = await w.call(url.href, { method: "POST", headers: { ...integration.headers, "content-type": "application/json" }, body });
    replies.push({ status: res.status, body: await res.json() });
  }
  return replies;
}

test("every ChirpStack event fixture, posted as the configured integration posts it, is answered 200", async () => {
  const api = await chirpstackApi();
  await runSnippet(snippetEnv(api));
  await api.close();
  const { integration } = api;
  const dir = path.join(root, "tests/fixtures/webhooks/chirpstack");
  const events = fs.readdirSync(dir).map((f) => f.replace(/\.json$/, "")).sort();
  assert.deepEqual(events, ["ack", "integration", "join", "location", "log", "status", "txack", "up"]);
  for (const event of events) {
    const [reply] = await chirpstackPost(integration, event, fs.readFileSync(path.join(dir, `${event}.json`), "utf8"));
    assert.equal(reply.status, 200, `${event}: ${JSON.stringify(reply.body)}`);
    if (event === "up") assertReconciles(reply.body);
    else assert.deepEqual([reply.body.ignored, reply.body.event], [true, event]);
  }
});

test("device-profiles.py applies the settings to existing device profiles, keeping every other field, and changes nothing when one cannot be", async () => {
  // Two profiles as an operator made them: their radio settings are the network's.
  const made = (name, tags) => ({
    tenantId: "52f14cd4-c6f1-4fbd-8f87-4025e1d49242",
    name,
    description: "",
    region: "EU868",
    macVersion: "LORAWAN_1_0_3",
    regParamsRevision: "RP002_1_0_3",
    adrAlgorithmId: "default",
    payloadCodecRuntime: "JS",
    payloadCodecScript: "function decodeUplink(input) { return { data: {} }; }",
    flushQueueOnActivate: true,
    uplinkInterval: 3600,
    deviceStatusReqInterval: 1,
    supportsOtaa: true,
    supportsClassB: false,
    supportsClassC: false,
    tags,
    measurements: {},
    autoDetectMeasurements: true,
  });
  const DF703 = "0b9f3e4c-7a52-4d0e-9b6f-3c1d2e4f5a60";
  const EM500 = "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d";
  const profiles = { [DF703]: made("DF703 EU868", { site: "north" }), [EM500]: made("EM500-UDL EU868", {}) };
  const api = await chirpstackApi({ profiles });
  const env = { CHIRPSTACK_URL: api.url, CHIRPSTACK_API_TOKEN: "cs-api-key" };
  const script = path.join(root, "integrations/chirpstack/device-profiles.py");
  const run = (args, more = {}) => runProgram("python3", [script, ...args], { ...env, ...more });
  const args = [`${DF703}=dingtek/df703`, `${EM500}=milesight-iot/em500-udl`];
  const expected = {
    [DF703]: { ...profiles[DF703], payloadCodecRuntime: "NONE", tags: { site: "north", codec: "dingtek/df703" } },
    [EM500]: { ...profiles[EM500], payloadCodecRuntime: "NONE", tags: { codec: "milesight-iot/em500-udl" } },
  };
  const schema = ajv.compile({ ...JSON.parse(read("tests/fixtures/chirpstack-rest-api/device-profile.schema.json")), additionalProperties: false });
  // Twice: the second run finds the settings made and writes the same.
  for (let i = 0; i < 2; i++) {
    const done = await run(args);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout, `device-profiles.py: device profile 'DF703 EU868' (${DF703}): codec None, tag codec=dingtek/df703\ndevice-profiles.py: device profile 'EM500-UDL EU868' (${EM500}): codec None, tag codec=milesight-iot/em500-udl\n`);
    assert.deepEqual(api.profiles, expected);
    const requests = api.requests.splice(0);
    assert.deepEqual(requests.map((r) => `${r.method} ${r.path}`), [`GET /api/device-profiles/${DF703}`, `GET /api/device-profiles/${EM500}`, `PUT /api/device-profiles/${DF703}`, `PUT /api/device-profiles/${EM500}`]);
    for (const r of requests.filter((q) => q.method === "PUT")) assert.ok(schema(r.body.deviceProfile), JSON.stringify(schema.errors));
    assert.ok(requests.every((r) => r.headers["grpc-metadata-authorization"] === "Bearer cs-api-key"));
  }
  // An id ChirpStack does not hold, after one it does: read first, so nothing is written.
  api.profiles = structuredClone(profiles);
  const unknown = "00000000-0000-4000-8000-000000000000";
  const missing = await run([`${DF703}=dingtek/df703`, `${unknown}=dingtek/df703`]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, new RegExp(`^device-profiles.py: ChirpStack answered 404 to GET ${api.url}/api/device-profiles/${unknown}: .*"Object does not exist.*; nothing was changed\\n$`));
  const refused = await run(args, { CHIRPSTACK_API_TOKEN: "x" });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /answered 401 to GET .*InvalidToken.*; nothing was changed\n$/);
  assert.deepEqual(api.requests.splice(0).map((r) => r.method), ["GET", "GET", "GET"]);
  assert.deepEqual(api.profiles, profiles);
  // A codec device-profiles.json does not have, or no settings: refused before any request.
  const codec = await run([`${DF703}=dingtek/df999`]);
  assert.deepEqual([codec.code, codec.stderr], [2, `device-profiles.py: 'dingtek/df999' is not a codec of device-profiles.json: ${Object.keys(JSON.parse(read("integrations/chirpstack/device-profiles.json")).profiles).join(", ")}\n`]);
  const unset = await run(args, { CHIRPSTACK_URL: "" });
  assert.deepEqual([unset.code, unset.stderr], [2, "device-profiles.py: set CHIRPSTACK_URL (see the top of this file)\n"]);
  await api.close();
  assert.deepEqual(api.requests, []);
});

test("the device-profile settings name every codec the worker has, and decode the fixtures' raw bytes", async () => {
  const settings = JSON.parse(read("integrations/chirpstack/device-profiles.json"));
  const pkg = await import("../../pkg/reconnect_dedupe.js");
  pkg.initSync({ module: fs.readFileSync(path.join(root, "pkg/reconnect_dedupe_bg.wasm")) });
  assert.deepEqual(Object.keys(settings.profiles).sort(), [...pkg.limits().codecs].sort());
  const profile = ajv.compile({ ...JSON.parse(read("tests/fixtures/chirpstack-rest-api/device-profile.schema.json")), additionalProperties: false });
  for (const [codec, p] of Object.entries(settings.profiles)) {
    assert.ok(profile(p), `${codec}: ${JSON.stringify(profile.errors)}`);
    assert.deepEqual(p, { payloadCodecRuntime: "NONE", tags: { codec } });
  }
  const integration = { eventEndpointUrl: "https://rd.example.workers.dev/v1/uplinks/chirpstack", headers: { Authorization: `Bearer ${TOKEN}` } };
  // ChirpStack sends the device profile's tags merged with the device's, the device's
  // winning (chirpstack/src/uplink/data.rs: `tags.extend(device.tags)`).
  const withTags = (body, codec, eui) => {
    body.deviceInfo.tags = { ...settings.profiles[codec].tags, ...settings.deviceTags };
    body.deviceInfo.devEui = eui;
    return JSON.stringify(body);
  };
  const df703 = JSON.parse(fixture("raw/chirpstack-df703-tags.json"));
  const [a] = await chirpstackPost(integration, "up", withTags(df703, "dingtek/df703", "0101010101010199"));
  assert.equal(a.status, 200);
  assert.deepEqual([a.body.unique, a.body.decoded?.codec], [1, "dingtek/df703"]);
  // The EM500-UDL's history frame as TTS carried it (raw/tts-em500-udl-history.json), in
  // ChirpStack's `up` event: its two records give the keys the fixtures' README lists
  // for that frame with these tags (depth 1200 mm, offset 150 mm).
  const em500 = JSON.parse(fixture("raw/tts-em500-udl-history.json")).uplink_message;
  const up = { ...df703, fPort: em500.f_port, data: em500.frm_payload };
  const [b] = await chirpstackPost(integration, "up", withTags(up, "milesight-iot/em500-udl", "0004A30B001C0530"));
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assertReconciles(b.body);
  assert.equal(b.body.decoded?.codec, "milesight-iot/em500-udl");
  assert.deepEqual(b.body.admitted.map((a) => a.key), ["0004A30B001C0530:1665561758:33dbc933f35a30d9", "0004A30B001C0530:1665565242:acaf965478288a1d"]);
});
