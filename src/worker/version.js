// The worker's version, package.json's `version`, for the OpenAPI document's
// `info.version` and /v1/metrics' `reconnect_dedupe_build_info`. Stated here once
// rather than imported: Miniflare loads src/worker/ unbundled and has no JSON module
// type, so package.json cannot be imported where the tests run the worker.
// tests/worker/openapi.test.mjs and tests/worker/metrics.test.mjs compare it with
// package.json.

/** package.json's `version`. */
export const VERSION = "0.1.0";
