// The OpenAPI document (src/worker/openapi.js) itself: valid by the official OAS 3.1
// schema (@seriousme/openapi-schema-validator), lint-clean under redocly's recommended
// rules (@redocly/cli, with redocly.yaml), complete enough to generate a client
// from (unique operationIds, every $ref resolving, every component used, every schema
// compiling in strict ajv), served at /v1/openapi.json as it is, and the same routes
// as index.js's router both ways: every documented path answers its documented methods
// in workerd and 405 with exactly those in `Allow` to the others, and every route the
// router's source names is documented. That every reply matches it is checked by the
// harness on every call of every worker test (tests/support/openapi-replies.mjs); the last test here
// shows such a check failing a test.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { Validator } from "@seriousme/openapi-schema-validator";
import { start, TOKEN } from "../support/harness.mjs";
import { checkReply, templateOf, useDocument, validatorAt } from "../support/openapi-replies.mjs";

const root = new URL("../../", import.meta.url);
const pkg = await import("../../pkg/reconnect_dedupe.js");
pkg.initSync({ module: fs.readFileSync(new URL("pkg/reconnect_dedupe_bg.wasm", root)) });
const LIMITS = pkg.limits();

const worker = await start();
after(() => worker.mf.dispose());
// The document as the worker serves it: what every other test checks replies against.
const OPENAPI_JSON = await (await worker.call("/v1/openapi.json")).text();
const OPENAPI = JSON.parse(OPENAPI_JSON);

const AUTH = { authorization: `Bearer ${TOKEN}` };
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];
const operations = () =>
  Object.entries(OPENAPI.paths).flatMap(([p, item]) =>
    Object.entries(item)
      .filter(([method]) => method !== "description")
      .map(([method, o]) => ({ path: p, method, op: o })),
  );

/** Every `$ref` in the document with where it is: `[{at, ref}]`. */
function refsOf(value, at = "") {
  if (Array.isArray(value)) return value.flatMap((v, i) => refsOf(v, `${at}/${i}`));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => (k === "$ref" ? [{ at, ref: v }] : refsOf(v, `${at}/${k}`)));
}

const resolve = (ref) =>
  ref
    .slice(2)
    .split("/")
    .reduce((o, p) => o?.[p.replaceAll("~1", "/").replaceAll("~0", "~")], OPENAPI);

test("the document is valid OpenAPI 3.1 by the official schema", async () => {
  const validator = new Validator();
  const res = await validator.validate(structuredClone(OPENAPI));
  assert.deepEqual(res.errors, undefined);
  assert.equal(res.valid, true);
  assert.equal(validator.version, "3.1");
});

/**
 * `redocly lint` of `document` (written to a temp file) under redocly's recommended
 * rules and the repository's redocly.yaml: its problems, `[{ruleId, severity, pointer}]`.
 */
function redoclyProblems(document) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-redocly-"));
  try {
    const file = path.join(dir, "openapi.json");
    fs.writeFileSync(file, typeof document === "string" ? document : JSON.stringify(document));
    const cli = new URL("node_modules/@redocly/cli/bin/cli.js", root).pathname;
    // Exits non-zero on an error: the report is read either way.
    let out;
    try {
      out = execFileSync(process.execPath, [cli, "lint", "--extends=recommended", "--config", "redocly.yaml", "--format=json", file], {
        cwd: root.pathname,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      });
    } catch (e) {
      if (!e.stdout) throw e;
      out = e.stdout;
    }
    const report = JSON.parse(out);
    const problems = report.problems.map((p) => ({ ruleId: p.ruleId, severity: p.severity, pointer: p.location[0]?.pointer, message: p.message }));
    assert.deepEqual([report.totals.errors, report.totals.warnings], [problems.filter((p) => p.severity === "error").length, problems.filter((p) => p.severity === "warn").length]);
    return problems;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test("the document is lint-clean under redocly's recommended rules (redocly.yaml), and the open routes' exemption is that narrow", () => {
  assert.deepEqual(redoclyProblems(OPENAPI_JSON), []);
  // redocly.yaml replaces operation-4xx-response by the same check on every operation
  // but the open ones, which take nothing a client can get wrong. Both halves bite: a
  // token-checked operation without its 401, and an open one given a parameter.
  const changed = structuredClone(OPENAPI);
  delete changed.paths["/v1/stats"].get.responses["401"];
  changed.paths["/v1/health"].get.parameters = [{ name: "verbose", in: "query", schema: { type: "string" } }];
  delete changed.servers;
  assert.deepEqual(
    redoclyProblems(changed)
      .map(({ ruleId, pointer }) => [ruleId, pointer])
      .sort(),
    [
      ["no-empty-servers", "#/openapi"],
      ["rule/operation-4xx-response", "#/paths/~1v1~1stats/get/responses"],
      ["rule/open-operation-takes-no-parameter", "#/paths/~1v1~1health/get/parameters"],
    ].sort(),
  );
});

test("a client can be generated: unique operationIds, every $ref resolves, every component is used, every schema compiles (strict)", () => {
  const ids = operations().map(({ op }) => op.operationId);
  assert.equal(ids.length, 36);
  assert.ok(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id)), ids.join(", "));
  assert.equal(new Set(ids).size, ids.length, "operationIds are unique");
  const refs = refsOf(OPENAPI);
  for (const { at, ref } of refs) {
    assert.match(ref, /^#\/components\/(schemas|responses|parameters|headers)\/[A-Za-z-]+$/, at);
    assert.notEqual(resolve(ref), undefined, `${at}: ${ref} resolves`);
  }
  const used = new Set(refs.map(({ ref }) => ref));
  for (const [kind, members] of Object.entries(OPENAPI.components)) {
    if (kind === "securitySchemes") continue;
    for (const name of Object.keys(members)) assert.ok(used.has(`#/components/${kind}/${name}`), `components.${kind}.${name} is referenced`);
  }
  for (const name of Object.keys(OPENAPI.components.securitySchemes)) assert.ok(OPENAPI.security.some((s) => name in s), name);
  // Every schema, as ajv compiles it for the replies (strict: an unknown keyword fails).
  for (const name of Object.keys(OPENAPI.components.schemas)) validatorAt(`/components/schemas/${name}`);
  for (const { path: p, method, op } of operations()) {
    for (const [status, r] of Object.entries(op.responses)) {
      for (const type of Object.keys(r.content ?? {})) validatorAt(`/paths/${p.replaceAll("/", "~1")}/${method}/responses/${status}/content/${type.replaceAll("/", "~1")}/schema`);
    }
  }
  // Each operation's error codes are stable codes of ErrorCode.
  const codes = OPENAPI.components.schemas.ErrorCode.oneOf.map((c) => c.const);
  for (const r of [...operations().flatMap(({ op }) => Object.values(op.responses)), ...Object.values(OPENAPI.components.responses)]) {
    const s = r.content?.["application/json"]?.schema;
    for (const narrowed of [s, ...(s?.oneOf ?? [])]) for (const c of narrowed?.properties?.error?.properties?.code?.enum ?? []) assert.ok(codes.includes(c), c);
  }
});

test("the document holds its owners' facts: the core's codecs and configuration ranges, the codecs that need a period, the webhook routes, the version", () => {
  const s = OPENAPI.components.schemas;
  assert.deepEqual(s.Codec.enum, LIMITS.codecs);
  for (const [name, { min, max }] of Object.entries(LIMITS.deviceConfig)) {
    for (const shape of [s.DeviceConfigRequest.properties[name], s.BulkConfigRow.properties[name], s.DeviceConfigMembers.properties[name]]) {
      const range = shape.oneOf?.[0] ?? shape;
      assert.deepEqual([range.minimum, range.maximum], [min, max], name);
    }
  }
  // The codecs that need a reporting period: the core's codecInfo (Tekelek's, which dates by the schedule).
  const [period, port] = s.DeviceConfigRequest.allOf;
  assert.deepEqual(period.if.properties.codec.enum, LIMITS.codecs.filter((c) => LIMITS.codecInfo[c].needsPeriod));
  assert.deepEqual(period.if.properties.codec.enum, ["tekelek/tek766"]);
  // The codecs an application port may be given with: the core's codecInfo (Milesight's).
  assert.deepEqual(port.then.properties.codec.enum, LIMITS.codecs.filter((c) => LIMITS.codecInfo[c].applicationPort !== null));
  assert.deepEqual(port.then.properties.codec.enum, ["milesight-iot/em310-udl", "milesight-iot/em500-udl"]);
  const formats = LIMITS.formats.filter((f) => f !== "readings");
  assert.deepEqual(s.IgnoredReply.properties.route.enum, formats);
  assert.equal(OPENAPI.info.version, JSON.parse(fs.readFileSync(new URL("package.json", root), "utf8")).version);
});

test("every stable code the worker's source names is in the document", () => {
  const documented = new Set([
    ...OPENAPI.components.schemas.ErrorCode.oneOf.map((c) => c.const),
    ...OPENAPI.components.schemas.RejectionCode.enum,
    ...OPENAPI.components.schemas.DeviceError.properties.code.enum,
    ...OPENAPI.components.schemas.BulkConfigRowCode.enum,
    OPENAPI.components.schemas.Parked.properties.code.const,
  ]);
  const named = new Set();
  for (const file of fs.readdirSync(new URL("src/worker/", root))) {
    const text = fs.readFileSync(new URL(`src/worker/${file}`, root), "utf8");
    // HttpError(status, "code", ...), {code: "code"}, and a code given when one is missing (`code ?? "code"`).
    for (const m of text.matchAll(/HttpError\([^,]+, "([a-z_]+)"|\bcode: "([a-z_]+)"|code \?\? "([a-z_]+)"/g)) named.add(m[1] ?? m[2] ?? m[3]);
    for (const m of text.matchAll(/export const NOT_CONFIGURED = "([a-z_]+)"/g)) named.add(m[1]);
  }
  assert.ok(named.size > 25, [...named].join(", "));
  assert.deepEqual([...named].filter((c) => !documented.has(c)), []);
});

test("GET /v1/openapi.json serves the document, without a token, cacheable; HEAD its headers", async () => {
  const res = await worker.call("/v1/openapi.json");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
  assert.equal(res.headers.get("cache-control"), "public, max-age=300");
  // Built once: every request serves the same text, the document the replies are checked against.
  assert.equal(await res.text(), OPENAPI_JSON);
  useDocument(OPENAPI);
  const head = await worker.call("/v1/openapi.json", { method: "HEAD" });
  assert.deepEqual([head.status, head.headers.get("content-type"), await head.text()], [200, "application/json; charset=utf-8", ""]);
  // The token is not needed, and a wrong one does not matter.
  assert.equal((await worker.call("/v1/openapi.json", { headers: { authorization: "Bearer wrong" } })).status, 200);
  const post = await worker.call("/v1/openapi.json", { method: "POST", headers: AUTH });
  assert.deepEqual([post.status, post.headers.get("allow"), (await post.json()).error.code], [405, "GET, HEAD", "method_not_allowed"]);
});

test("a viewer on another origin may read the document (CORS), and no other route", async () => {
  // Swagger Editor, Redocly and the like fetch the document from the browser, on their
  // own origin; it is public, so any origin may read it. No credentials are involved.
  const origin = { origin: "https://editor.swagger.io" };
  const doc = await worker.call("/v1/openapi.json", { headers: origin });
  await doc.arrayBuffer();
  assert.equal(doc.headers.get("access-control-allow-origin"), "*");
  const stats = await worker.call("/v1/stats", { headers: { ...origin, ...AUTH } });
  await stats.arrayBuffer();
  assert.equal(stats.headers.get("access-control-allow-origin"), null);
});

test("without a token configured /v1/openapi.json fails closed like every /v1 route", async () => {
  const w = await start({ vars: { INGEST_TOKEN: "" } });
  try {
    const res = await w.call("/v1/openapi.json");
    assert.deepEqual([res.status, (await res.json()).error.code], [503, "auth_not_configured"]);
  } finally {
    await w.mf.dispose();
  }
});

test("every documented path answers each documented method, and 405 naming exactly those to the others", async () => {
  for (const [template, item] of Object.entries(OPENAPI.paths)) {
    const p = template.replace("{device_id}", "oa-probe");
    const documented = HTTP_METHODS.filter((m) => item[m.toLowerCase()]);
    for (const method of HTTP_METHODS) {
      // Validated by the harness as every reply: a status or body the path's operation
      // does not document fails here.
      const res = await worker.call(p, { method, headers: AUTH });
      // /v1/metrics answers text; every other reply is JSON.
      const body = method === "HEAD" || !res.headers.get("content-type")?.startsWith("application/json") ? null : await res.json();
      const what = `${method} ${p} → ${res.status} ${JSON.stringify(body)}`;
      if (documented.includes(method)) {
        assert.ok(res.status !== 404 || body?.error.code !== "not_found", what);
        assert.notEqual(res.status, 405, what);
      } else {
        assert.deepEqual([res.status, res.headers.get("allow"), body?.error.code ?? null], [405, documented.join(", "), method === "HEAD" ? null : "method_not_allowed"], what);
      }
    }
  }
});

test("every route index.js's router names is documented, and no other", () => {
  const source = fs.readFileSync(new URL("src/worker/index.js", root), "utf8");
  const router = source.slice(source.indexOf("async function route("), source.indexOf("/** GET routes also answer HEAD"));
  const routed = new Set();
  for (const [, literal] of router.matchAll(/path === "(\/v1\/[^"]+)"/g)) routed.add(literal);
  for (const [, re] of router.matchAll(/path\.match\(\/\^(.+?)\$\/\)/g)) {
    const template = re.replaceAll("\\/", "/").replace("([^/]*)", "{device_id}");
    if (template.includes("([a-z]+)")) {
      // The webhook routes: the core's formats but the native one (UPLINK_FORMATS).
      for (const f of LIMITS.formats.filter((x) => x !== "readings")) routed.add(template.replace("([a-z]+)", f));
    } else routed.add(template);
  }
  assert.ok(routed.size >= 17, [...routed].join(", "));
  for (const r of routed) assert.equal(templateOf(r.replace("{device_id}", "x")), r, `${r} is documented`);
  assert.deepEqual(Object.keys(OPENAPI.paths).filter((p) => !routed.has(p)), [], "documented paths the router does not name");
});

test("a reply that does not match the document fails the test that received it", async () => {
  // tests/support/drifting-worker.js: the worker, with a few replies changed.
  const w = await start({ script: "tests/support/drifting-worker.js", validate: true });
  try {
    const drifts = [
      ["/v1/health", {}, /GET \/v1\/health → 200: .*schema: body\/ok must be equal to constant/s],
      ["/v1/health?status=418", {}, /GET \/v1\/health → 418: status 418 is not documented \(documented: 200, 500, 503\)/],
      ["/v1/health?type=text", {}, /GET \/v1\/health → 200: Content-Type "text\/plain" is not documented \(application\/json\)/],
      ["/v1/stats", { method: "DELETE", headers: AUTH }, /DELETE \/v1\/stats → 405: Allow must name the documented methods, GET, HEAD; got GET/],
    ];
    for (const [p, init, message] of drifts) await assert.rejects(w.call(p, init), (e) => e instanceof assert.AssertionError && message.test(e.message), p);
    // Everything else is the worker's own: it passes.
    assert.equal((await w.call("/v1/stats", { headers: AUTH })).status, 200);
  } finally {
    await w.mf.dispose();
  }
});

test("a request body the worker took that the document refuses fails the test that sent it", () => {
  const stored = { device_id: "bin-1", codec: null, bin_depth_mm: 1200, offset_mm: 0, reporting_period_s: null, application_port: null, backfill: null, updated_at: "2026-07-16T09:00:00+00:00" };
  const unparked = { uplinks: 0, received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, still_parked: 0 };
  const reply = {
    method: "PUT",
    url: new URL("http://127.0.0.1/v1/devices/bin-1/config"),
    status: 200,
    headers: new Headers({ "content-type": "application/json; charset=utf-8" }),
    body: JSON.stringify({ ...stored, unparked }),
  };
  checkReply({ ...reply, requestBody: '{"bin_depth_mm": 1200}' });
  const refused = /PUT \/v1\/devices\/bin-1\/config \(\/v1\/devices\/\{device_id\}\/config\) → 200: the request body was taken, but the document's request schema refuses it: request must NOT have additional properties/;
  assert.throws(() => checkReply({ ...reply, requestBody: '{"bin_depth_mm": 1200, "colour": "red"}' }), refused);
});
