// The demo page (www/) on workerd, as the worker's ASSETS binding: what Cloudflare's
// static assets ([assets] in wrangler.toml) serve for a deploy, for `npm start` and
// `npm run serve:workerd` (selfhost/workerd.capnp binds it). The files come from
// workerd's disk service (WWW), which answers every file as application/octet-stream:
// this names the type by the file's extension (a browser runs /pkg/*.wasm only as
// application/wasm) and serves nothing else. GET and HEAD; "/" and "…/" are their
// index.html. A path with no file, or a file of a type not listed, answers 404 with
// no body, as Cloudflare's assets do (not_found_handling "none").
// scripts/serve-www.mjs (`npm run demo`) reads TYPES from here.

/** Content-Type by extension: the files www/ holds, and what a page may add. */
export const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm", // instantiateStreaming insists on it
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

/** The Content-Type of the file at `path`, or undefined when it is not a type served. */
export function typeOf(path) {
  const dot = path.lastIndexOf(".");
  return dot > path.lastIndexOf("/") ? TYPES[path.slice(dot).toLowerCase()] : undefined;
}

export default {
  async fetch(request, env) {
    if (request.method !== "GET" && request.method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
    const url = new URL(request.url);
    const path = url.pathname.endsWith("/") ? `${url.pathname}index.html` : url.pathname;
    const type = typeOf(path);
    if (!type) return new Response(null, { status: 404 });
    const file = await env.WWW.fetch(new URL(path, "http://www/"), { method: request.method });
    if (file.status !== 200) return new Response(null, { status: 404 });
    const headers = { "content-type": type, "cache-control": "public, max-age=0, must-revalidate" };
    const length = file.headers.get("content-length");
    if (length) headers["content-length"] = length;
    return new Response(request.method === "HEAD" ? null : file.body, { status: 200, headers });
  },
};
