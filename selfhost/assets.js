// The demo page (www/) on workerd, as the worker's ASSETS binding: what Cloudflare's
// static assets ([assets] in wrangler.toml) serve for a deploy, for `npm start` and
// `npm run serve:workerd` (selfhost/workerd.capnp binds it). The files come from
// workerd's disk service (WWW), which answers every file as application/octet-stream
// and a directory as a JSON listing: this names a file's type by its extension (a
// browser runs /pkg/*.wasm only as application/wasm; other extensions stay
// application/octet-stream, as in `npm run demo`) and lists no directory. GET and HEAD;
// "/" and "…/" are their index.html. A path with no file (a directory, a dotfile,
// which the disk service does not serve) answers 404 with no body, as Cloudflare's
// assets do (not_found_handling "none"). scripts/serve-www.mjs reads the types here.

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
    const file = await env.WWW.fetch(new URL(path, "http://www/"), { method: request.method });
    // A directory's answer is its listing, the one answer without a Content-Length.
    const length = file.headers.get("content-length");
    if (file.status !== 200 || length === null) {
      await file.body?.cancel();
      return new Response(null, { status: 404 });
    }
    const headers = { "content-type": typeOf(path) ?? "application/octet-stream", "content-length": length, "cache-control": "public, max-age=0, must-revalidate" };
    const modified = file.headers.get("last-modified");
    if (modified) headers["last-modified"] = modified;
    return new Response(request.method === "HEAD" ? null : file.body, { status: 200, headers });
  },
};
