// HTTP to the worker for the benches that talk to it over a socket (fleet.mjs and its
// poller thread, poller.mjs): one request with its latency, and what its answer was.
import http from "node:http";

/** One request; resolves to `{status, text, ms}`, status 0 with `error` when no answer came (timeout, reset). */
export function send(port, agent, method, route, headers, body, timeoutMs) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const done = (r) => resolve({ ...r, ms: performance.now() - t0 });
    const req = http.request({ host: "127.0.0.1", port, method, path: route, agent, headers: body ? { ...headers, "content-length": Buffer.byteLength(body) } : headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => done({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (e) => done({ status: 0, error: e.code ?? e.message }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error("timeout"), { code: "timeout" })));
    req.on("error", (e) => done({ status: 0, error: e.code ?? e.message }));
    req.end(body);
  });
}

/**
 * `status code` of a reply: its body's error.code; the start of its body when it has
 * none (an answer of the runtime, not of the worker); or why no answer came.
 */
export function outcomeOf(res) {
  if (res.status === 0) return `no answer (${res.error})`;
  let code = null;
  try {
    code = JSON.parse(res.text)?.error?.code ?? null;
  } catch {}
  return `${res.status} ${code ?? `(no error code: ${JSON.stringify(res.text.slice(0, 60))})`}`;
}
