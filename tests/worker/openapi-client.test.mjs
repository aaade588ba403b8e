// "A client can be generated from the OpenAPI document": the served /v1/openapi.json
// through openapi-typescript (types) and openapi-fetch (the client), type-checked by
// tsc in strict mode, then run against the worker in workerd over real HTTP.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import openapiTS, { astToString } from "openapi-typescript";
import { transform } from "esbuild";
import { fixture, start, TOKEN } from "../support/harness.mjs";

const root = new URL("../../", import.meta.url).pathname;
let w;
let base;
let dir;
before(async () => {
  w = await start();
  base = (await w.mf.ready).href.replace(/\/$/, "");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-client-"));
});
after(async () => {
  await w?.mf.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

// What a user of the API writes: typed calls through the generated `paths`. The
// @ts-expect-error lines must be errors, so the types are real, not `any`.
const CLIENT = `
import createClient from "openapi-fetch";
import type { paths } from "./api";

export async function run(baseUrl: string, token: string) {
  const api = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
  const reading = { device_id: "bin-client", seq: 7, ts: "2026-07-16T09:00:00Z", fill_pct: 40 };
  const first = await api.POST("/v1/readings", { body: [reading, reading] });
  if (!first.data) throw new Error(JSON.stringify(first.error));
  const unique: number = first.data.unique;
  const stored = await api.GET("/v1/devices/{device_id}/readings", { params: { path: { device_id: "bin-client" } } });
  if (!stored.data) throw new Error(JSON.stringify(stored.error));
  const keys: string[] = stored.data.readings.map((r) => r.key);
  const refused = await api.GET("/v1/devices/{device_id}/config", { params: { path: { device_id: "bin-client" } } });
  const code: string | undefined = refused.error?.error.code;
  // Readings and network-server messages as the user's code has them: with members
  // the API does not read (README: other members are ignored).
  const extra = await api.POST("/v1/readings", { body: { readings: [{ ...reading, seq: 8, battery_mv: 3600 }], source: "gateway-7" } });
  if (!extra.data) throw new Error(JSON.stringify(extra.error));
  const joined = await api.POST("/v1/uplinks/ttn", { body: ${fixture("tts/join_accept.json").trim()} });
  if (!joined.data || !("ignored" in joined.data)) throw new Error(JSON.stringify(joined.error ?? joined.data));
  const status = await api.POST("/v1/uplinks/chirpstack", { params: { query: { event: "status" } }, body: { deviceInfo: { devEui: "0101010101010101" }, batteryLevel: 87.5 } });
  if (!status.data || !("ignored" in status.data)) throw new Error(JSON.stringify(status.error ?? status.data));
  // A text reply (CSV, Prometheus) is read as text: openapi-fetch parses JSON unless
  // told. A route that answers JSON or CSV types its data as either.
  const csv = await api.GET("/v1/devices/{device_id}/health", { params: { path: { device_id: "bin-client" }, query: { format: "csv" } }, parseAs: "text" });
  const csvHeader = (csv.data ?? "").split("\\r\\n")[0];
  const health = await api.GET("/v1/devices/{device_id}/health", { params: { path: { device_id: "bin-client" } } });
  if (!health.data || typeof health.data === "string") throw new Error(JSON.stringify(health.error ?? health.data));
  const healthOf: string = health.data.device_id;
  // @ts-expect-error: the API has no such route
  await api.GET("/v1/nowhere");
  // @ts-expect-error: fill_pct is a number
  await api.POST("/v1/readings", { body: [{ ...reading, fill_pct: "40" }] });
  const ignored: string[] = [joined.data.event, status.data.event];
  return { unique, duplicates: first.data.duplicates_suppressed, keys, status: refused.response.status, code, admitted: extra.data.unique, ignored, csvHeader, healthOf };
}
`;

test("a TypeScript client generated from /v1/openapi.json type-checks and talks to the worker", async () => {
  const res = await w.call("/v1/openapi.json");
  assert.equal(res.status, 200);
  fs.writeFileSync(path.join(dir, "api.d.ts"), astToString(await openapiTS(await res.json())));
  fs.writeFileSync(path.join(dir, "client.ts"), CLIENT);
  // The repository's openapi-fetch, as the client project's installed dependency.
  fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
  fs.writeFileSync(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "es2022",
        module: "esnext",
        moduleResolution: "bundler",
        skipLibCheck: false,
        types: [],
      },
      files: ["client.ts"],
    }),
  );
  try {
    execFileSync(path.join(root, "node_modules/.bin/tsc"), ["-p", dir], { encoding: "utf8" });
  } catch (e) {
    assert.fail(`tsc refused the generated client:\n${e.stdout}`);
  }
  // Types checked; run it (esbuild strips them) against the worker's HTTP port.
  const { code } = await transform(fs.readFileSync(path.join(dir, "client.ts"), "utf8"), { loader: "ts", format: "esm" });
  fs.writeFileSync(path.join(dir, "client.mjs"), code);
  const { run } = await import(path.join(dir, "client.mjs"));
  assert.deepEqual(await run(base, TOKEN), {
    unique: 1,
    duplicates: 1,
    keys: [await keyOf({ device_id: "bin-client", seq: 7, ts: "2026-07-16T09:00:00Z", fill_pct: 40 })],
    status: 404,
    code: "not_configured",
    admitted: 1,
    ignored: ["join_accept", "status"],
    csvHeader: "device_id,received,unique,duplicates_suppressed,seq_reuses,rejected,parked,missing_seqs,recovered_seqs,seq_resets,duplicate_ratio,seq_reuse_ratio,gap_ratio,flushed_at",
    healthOf: "bin-client",
  });
});

/** The key the core gives a reading (the Node build of pkg/). */
async function keyOf(reading) {
  const pkg = await import("../../pkg/reconnect_dedupe.js");
  pkg.initSync({ module: fs.readFileSync(path.join(root, "pkg/reconnect_dedupe_bg.wasm")) });
  return pkg.idempotencyKey(reading);
}
