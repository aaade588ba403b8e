// Checks a reply of the worker against the OpenAPI document it serves (GET
// /v1/openapi.json, built by src/worker/openapi.js; `useDocument`):
// the operation it answered (path template and method, HEAD as GET's headers), the
// status, each documented header, the media type and the body against its schema, with
// ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect); and a request body the worker took
// against the operation's request schema. tests/support/harness.mjs runs it on every
// reply a worker test receives, so a reply that drifts from the document, or a body the
// worker takes that the document refuses, fails the test that received it. Validators
// are compiled once per schema and process.
import assert from "node:assert/strict";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const DOC_ID = "openapi.json";
// strict: an unknown keyword (a typo) in a schema of the document is an error.
// strictTypes off: `{$ref, properties}` without `type` is how the document narrows a
// shared schema (an error's codes per operation).
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
addFormats(ajv);
// The document is added whole, so that its `#/components/...` references resolve; ajv
// compiles its root when it follows one, and must know the root's OpenAPI members.
ajv.addVocabulary(["openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components", "security", "tags", "externalDocs"]);

const JSON_TYPE = "application/json";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

let OPENAPI = null;
/** Path templates as the worker matches them: a parameter is any segment, empty included (index.js `([^/]*)`). */
let ROUTES = [];

/**
 * Checks replies against `doc`, the document a worker served (tests/support/harness.mjs
 * reads it from the first worker it starts). One per process: a worker of the same
 * build serves the same document; a second one given here must equal the first.
 */
export function useDocument(doc) {
  if (OPENAPI !== null) {
    assert.deepEqual(doc, OPENAPI, "a worker served another OpenAPI document than the first");
    return;
  }
  OPENAPI = doc;
  ajv.addSchema(OPENAPI, DOC_ID);
  ROUTES = Object.keys(OPENAPI.paths)
    .map((template) => ({ template, re: new RegExp(`^${template.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]*")}$`), literal: !template.includes("{") }))
    .sort((a, b) => Number(b.literal) - Number(a.literal));
}

/** Whether a document was given (`useDocument`). */
export function documentInUse() {
  return OPENAPI !== null;
}

const validators = new Map();
/** The compiled validator of the schema at `pointer` (a JSON Pointer into the document), once per process. */
export function validatorAt(pointer) {
  let v = validators.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `${DOC_ID}#${pointer.split("/").map(encodeURIComponent).join("/")}` });
    validators.set(pointer, v);
  }
  return v;
}

const escape = (part) => part.replaceAll("~", "~0").replaceAll("/", "~1");
const pointerOf = (...parts) => parts.map((p) => `/${escape(String(p))}`).join("");

/** `{at, value}` of a `$ref`'d object of the document (a response, a header), followed to its target. */
function deref(at, value) {
  while (value?.$ref) {
    at = value.$ref.slice(1);
    value = at.split("/").slice(1).reduce((o, p) => o[p.replaceAll("~1", "/").replaceAll("~0", "~")], OPENAPI);
  }
  return { at, value };
}

/** The document's path template for a request path (as the worker normalises it), or null. */
export function templateOf(pathname) {
  const path = pathname.replace(/\/+$/, "") || "/";
  return ROUTES.find((r) => r.re.test(path))?.template ?? null;
}

/** The methods a path item documents, as index.js names them in `Allow` (GET with HEAD). */
function allowOf(pathItem) {
  return Object.keys(pathItem)
    .filter((k) => METHODS.includes(k) && k !== "head")
    .flatMap((m) => (m === "get" ? ["GET", "HEAD"] : [m.toUpperCase()]))
    .join(", ");
}

/** A media type's essence and parameters, lower case: `{essence, params}`. */
function mediaType(text) {
  const [essence, ...rest] = text.split(";").map((p) => p.trim().toLowerCase());
  return { essence, params: new Map(rest.filter(Boolean).map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)])) };
}

/** Whether a reply's Content-Type is the document's media type `key` (its essence, and every parameter it names). */
function sameType(key, contentType) {
  const want = mediaType(key);
  const got = mediaType(contentType);
  return want.essence === got.essence && [...want.params].every(([k, v]) => got.params.get(k) === v);
}

/**
 * Asserts that a reply matches the document. `method`, `url` (a URL), `requestBody`
 * (text, when the request had one as text) and `requestType` (its Content-Type, or
 * null) are the request's; `status`, `headers` (a
 * Headers) and `body` (text) the reply's. Throws an AssertionError naming the route, the
 * status and what does not match.
 */
export function checkReply({ method, url, requestBody, requestType = null, status, headers, body }) {
  method = method.toUpperCase();
  const template = templateOf(url.pathname);
  const pathItem = template === null ? null : OPENAPI.paths[template];
  const operation = METHODS.includes(method.toLowerCase()) ? pathItem?.[method.toLowerCase()] : undefined;
  const route = `${method} ${url.pathname}${template && template !== url.pathname ? ` (${template})` : ""} → ${status}`;
  const fail = (what) => assert.fail(`reply not as the OpenAPI document says: ${route}: ${what}\n  body: ${body.slice(0, 600)}`);
  if (!operation) {
    // No operation: a path the worker has no route for (404 not_found), a method the
    // path does not document (405 method_not_allowed, `Allow` naming those it does), or
    // what the worker answers before routing (401, 500, 503).
    checkBody(fail, pointerOf("components", "schemas", "Error"), headers, body, method, "application/json");
    const [expected, code] = template === null ? [404, "not_found"] : [405, "method_not_allowed"];
    if (![expected, 401, 500, 503].includes(status)) fail(`${template === null ? "a path without a route" : `${method} (not documented)`} answered ${status}`);
    const got = safeJson(body)?.error?.code;
    if (status === expected && method !== "HEAD" && got !== code) fail(`expected ${code}, got ${got}`);
    if (status === 405 && headers.get("allow") !== allowOf(pathItem)) fail(`Allow must name the documented methods, ${allowOf(pathItem)}; got ${headers.get("allow")}`);
    return;
  }
  const response = operation.responses[status];
  if (!response) fail(`status ${status} is not documented (documented: ${Object.keys(operation.responses).join(", ")})`);
  checkResponse(fail, [template, method.toLowerCase()], response, status, headers, body, method);
  if (requestBody !== undefined && operation.requestBody) checkTaken(fail, pointerOf("paths", template, method.toLowerCase(), "requestBody"), operation.requestBody, requestBody, requestType, status, body);
  if (method === "HEAD") {
    // HEAD answers GET's headers: its Content-Type is one GET documents for that status.
    const { value: get } = deref("", pathItem.get.responses[status]);
    const type = headers.get("content-type");
    if (get.content && type !== null && !Object.keys(get.content).some((k) => sameType(k, type))) fail(`HEAD's Content-Type ${type} is not one GET documents (${Object.keys(get.content).join(", ")})`);
  }
}

function checkResponse(fail, [template, method], response, status, headers, body, requestMethod) {
  const { at, value } = deref(pointerOf("paths", template, method, "responses", status), response);
  for (const [name, h] of Object.entries(value.headers ?? {})) {
    const { at: hAt, value: header } = deref(`${at}/headers/${escape(name)}`, h);
    const got = headers.get(name);
    if (got === null) {
      if (header.required) fail(`header ${name} is required`);
      continue;
    }
    const v = validatorAt(`${hAt}/schema`);
    if (!v(got)) fail(`header ${name}: ${JSON.stringify(got)} ${ajv.errorsText(v.errors, { dataVar: name })}`);
  }
  if (!value.content) {
    if (body !== "") fail("a reply documented without a body has one");
    return;
  }
  const type = headers.get("content-type") ?? "";
  const key = Object.keys(value.content).find((k) => sameType(k, type));
  if (key === undefined) fail(`Content-Type ${JSON.stringify(type)} is not documented (${Object.keys(value.content).join(", ")})`);
  checkBody(fail, `${at}/content/${escape(key)}/schema`, headers, body, requestMethod, key);
}

/**
 * A request body the worker took (a 2xx reply) is one the operation's request schema
 * accepts: the document tells clients what to send, and must not refuse what works.
 * Not a message acknowledged unread (`ignored`: ChirpStack's events other than `up`),
 * nor a burst with rejected readings, nor a bulk configuration with failed rows (those
 * broke a reading's or a row's rule, and the reply says which). The body is checked
 * against the schema of the request's media type where the operation documents it
 * (a CSV body as text), else as JSON.
 */
function checkTaken(fail, pointer, documented, requestBody, requestType, status, replyText) {
  if (status < 200 || status > 299) return;
  const reply = safeJson(replyText);
  if (reply?.ignored === true || reply?.rejected?.length || reply?.failed) return;
  const key = (requestType !== null && Object.keys(documented.content).find((k) => sameType(k, requestType))) || JSON_TYPE;
  const isJson = /^application\/(.+\+)?json$/.test(mediaType(key).essence);
  const data = isJson ? safeJson(requestBody) : requestBody;
  if (data === undefined) fail("a request body that is not JSON was taken");
  const v = validatorAt(`${pointer}/content/${escape(key)}/schema`);
  if (!v(data)) fail(`the request body was taken, but the document's request schema refuses it: ${ajv.errorsText(v.errors, { dataVar: "request", separator: "\n    " })}\n  request: ${requestBody.slice(0, 600)}`);
}

function checkBody(fail, pointer, headers, body, method, key) {
  if (method === "HEAD") {
    if (body !== "") fail("a HEAD reply has a body");
    return;
  }
  const { essence } = mediaType(key);
  const json = essence === "application/json" || essence.endsWith("+json");
  if (json && !mediaType(headers.get("content-type") ?? "").essence.match(/^application\/(.+\+)?json$/)) fail(`Content-Type ${headers.get("content-type")} is not JSON`);
  const data = json ? safeJson(body) : body;
  if (data === undefined) fail("the body is not JSON");
  const v = validatorAt(pointer);
  if (!v(data)) fail(`${pointer}: ${ajv.errorsText(v.errors, { dataVar: "body", separator: "\n    " })}`);
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
