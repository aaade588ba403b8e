// The worker with replies that drift from the OpenAPI document, for
// tests/worker/openapi.test.mjs to show that the harness's check of every reply fails
// a test that receives one. /v1/health answers `{"ok": "yes"}` (the document says
// `true`); with `?status=418` a status it does not document, with `?type=text` a media
// type it does not document. DELETE /v1/stats answers 405 with `Allow: GET` (the
// document: GET, HEAD). Everything else is the worker's own answer.
import worker from "../../src/worker/index.js";

export { DeviceObject, FleetObject } from "../../src/worker/index.js";

const ERROR = { error: { code: "method_not_allowed", message: "use GET" } };

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/v1/stats" && request.method === "DELETE") return Response.json(ERROR, { status: 405, headers: { allow: "GET" } });
    if (url.pathname !== "/v1/health") return worker.fetch(request, env);
    if (url.searchParams.has("status")) return Response.json({ ok: true }, { status: Number(url.searchParams.get("status")) });
    if (url.searchParams.has("type")) return new Response('{"ok":true}', { headers: { "content-type": "text/plain" } });
    return Response.json({ ok: "yes" });
  },
};
