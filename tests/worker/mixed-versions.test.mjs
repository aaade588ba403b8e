// A deployment runs two versions at once. With a gradual deployment the stateless
// worker's version is drawn per request while each Durable Object keeps the version
// it was assigned (Cloudflare, "Gradual deployments: With Durable Objects"); with a
// plain `wrangler deploy` an object already running keeps its code until it restarts.
// So this version's worker calls device objects and roll-up shards of the previous
// release and the reverse, and a rollback runs the previous device objects against
// shards this version wrote. Each pairing must store and count as either version
// alone does, and no counter of /v1/metrics may go down.
//
// The previous release is read from git (PREVIOUS: the last merge before rejections
// were counted by code) into target/, and run beside src/worker/ in workerd
// (Miniflare), each class from the version a test names. Both load the Wasm core in
// pkg/: the Rust is unchanged since PREVIOUS. Move PREVIOUS to the release in
// production when the next change of an object's calls lands.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { start, post, putConfig, until, tempDir, origin, TOKEN } from "./harness.mjs";
import { EM500, history, live, tts } from "./em500.mjs";

const PREVIOUS = "602b445d40085852e5b7f71798f9c33e0bad9d17";
const root = new URL("../../", import.meta.url).pathname;
// Two levels below the repository, as src/worker/ is: its `../../pkg/` imports find pkg/.
const previousDir = path.join(root, "target", `previous-${PREVIOUS.slice(0, 12)}`);
const git = (...args) => execFileSync("git", ["-C", root, ...args], { stdio: ["ignore", "pipe", "ignore"] });
let skip = false;
try {
  git("cat-file", "-e", `${PREVIOUS}^{commit}`);
} catch {
  // Said in the test report, not hidden: only a clone without that history gets here.
  skip = `the previous release (${PREVIOUS}) is not in this clone's history (a shallow clone?)`;
}
if (!skip) {
  fs.mkdirSync(previousDir, { recursive: true });
  for (const file of git("ls-tree", "--name-only", PREVIOUS, "src/worker/").toString().split("\n").filter(Boolean)) {
    fs.writeFileSync(path.join(previousDir, path.basename(file)), git("show", `${PREVIOUS}:${file}`));
  }
}

/**
 * Starts a worker whose stateless tier (`worker`), device objects (`devices`) and roll-up
 * shards (`shards`) each run "previous" or "current" code.
 */
function mixed({ worker, devices, shards }, options = {}) {
  const from = (version) => (version === "previous" ? "./index.js" : "../../src/worker/index.js");
  const name = `mixed-${worker}-${devices}-${shards}.js`;
  fs.writeFileSync(
    path.join(previousDir, name),
    `export { default } from "${from(worker)}";\nexport { DeviceObject } from "${from(devices)}";\nexport { FleetObject } from "${from(shards)}";\n`,
  );
  return start({ ...options, vars: { STATS_FLUSH_MS: "50", ...options.vars }, script: path.relative(root, path.join(previousDir, name)) });
}

const reading = (device_id, seq, fill_pct) => ({ device_id, seq, ts: "2026-07-16T09:00:00Z", fill_pct });
const noDevice = { seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 1 };

/** POSTs a burst that must answer 200: its reply. */
async function ingest(call, burst) {
  const res = await post(call, "/v1/readings", burst);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

/** /v1/stats once `ready(stats)` holds (it answered 200 with the flushes awaited). */
async function statsWhen(call, ready, what) {
  let last;
  await until(async () => {
    const res = await call("/v1/stats", { headers: { authorization: `Bearer ${TOKEN}` } });
    last = { status: res.status, body: await res.json() };
    return last.status === 200 && ready(last.body);
  }, what).catch(() => assert.fail(`${what}: ${JSON.stringify(last)}`));
  return last.body;
}

/** GET /v1/metrics: the text, and each family's samples as `{labels text: value}`. */
async function scrape(call) {
  const res = await call("/v1/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const families = {};
  for (const f of parsePrometheusTextFormat(text)) {
    families[f.name.replace(/^reconnect_dedupe_/, "")] = Object.fromEntries(f.metrics.map((m) => [Object.entries(m.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(","), m.value]));
  }
  return { text, families };
}

test("device objects of the previous release called by this worker: rejected readings, an unreadable payload and a parked uplink are stored and counted", { skip }, async () => {
  const w = await mixed({ worker: "current", devices: "previous", shards: "current" });
  try {
    const burst = await ingest(w.call, [reading("mx-A", 1, 10), reading("mx-A", 2, 101)]);
    assert.deepEqual([burst.unique, burst.rejected.map((r) => r.code)], [1, ["invalid_fill_pct"]]);
    assert.equal((await putConfig(w.call, "A84041000000F001", EM500)).status, 200);
    const unreadable = await tts(w, "A84041000000F001", "bin-mx-1", Buffer.from([0xff, 0x00]));
    assert.deepEqual(unreadable.rejected.map((r) => r.code), ["invalid_payload"]);
    const parked = await tts(w, "A84041000000F002", "bin-mx-2", history([0, 1, 2]));
    assert.deepEqual(parked.parked.map((p) => p.code), ["device_not_configured"]);
    // The previous release counts no codes: its rejections are not_recorded.
    const s = await statsWhen(w.call, (s) => s.received === 4, "the three devices' flushes");
    assert.deepEqual(
      [s.received, s.unique, s.duplicates_suppressed, s.rejected, s.parked, s.rejected_by_code],
      [4, 1, 0, 2, 1, { not_recorded: 2 }],
    );
  } finally {
    await w.mf.dispose();
  }
});

test("roll-up shards of the previous release read and written by this worker: /v1/stats and /v1/metrics answer, a reading without a device counts", { skip }, async () => {
  const w = await mixed({ worker: "current", devices: "current", shards: "previous" });
  try {
    const burst = await ingest(w.call, [reading("mx-B", 1, 10), reading("mx-B", 2, 101), noDevice]);
    assert.deepEqual([burst.received, burst.unique, burst.rejected.length], [3, 1, 2]);
    // The previous shards keep no codes and no flush time.
    const s = await statsWhen(w.call, (s) => s.unique === 1, "the device's flush");
    assert.deepEqual(
      [s.received, s.unique, s.rejected, s.rejected_by_code, s.last_flush_at],
      [3, 1, 2, { not_recorded: 2 }, null],
    );
    const { text, families } = await scrape(w.call);
    assert.doesNotMatch(text, /NaN/);
    assert.deepEqual(
      [families.readings_received_total, families.readings_unique_total, families.rejected_total, families.stats_last_flush_timestamp_seconds],
      [{ "": "3" }, { "": "1" }, { "code=not_recorded": "2" }, {}],
    );
  } finally {
    await w.mf.dispose();
  }
});

test("this release's roll-up shards called by a worker of the previous release: a reading without a device counts as received and rejected", { skip }, async () => {
  const w = await mixed({ worker: "previous", devices: "current", shards: "current" });
  try {
    await ingest(w.call, [reading("mx-C", 1, 10), reading("mx-C", 2, 101), noDevice]);
    const s = await statsWhen(w.call, (s) => s.unique === 1, "the device's flush");
    assert.deepEqual([s.received, s.unique, s.rejected], [3, 1, 2]);
  } finally {
    await w.mf.dispose();
  }
});

test("a rollback: device objects back on the previous release flush to this release's shards, and no counter goes down", { skip }, async () => {
  const dir = tempDir();
  // The Things Stack's downlink API, accepting every history request.
  const ns = await origin({ answer: () => ({ status: 200 }) });
  const base = `http://127.0.0.1:${ns.port}`;
  const vars = { BACKFILL: "on", BACKFILL_AFTER_MS: "0", BACKFILL_INTERVAL_MS: "0", BACKFILL_HOSTS: base };
  const eui = "A84041000000F003";
  const counted = async (call) => {
    const { families } = await scrape(call);
    return [families.rejected_total, families.backfill_requests_total, families.backfill_requests_sent_total];
  };
  const before = [{ "code=invalid_fill_pct": "1" }, { "": "1" }, { "": "1" }];
  try {
    const first = await mixed({ worker: "current", devices: "current", shards: "current" }, { persist: dir, vars });
    try {
      await ingest(first.call, [reading("mx-D", 1, 10), reading("mx-D", 2, 101)]);
      // A replay that leaves slots 3 and 4 missing, then a live reading: the device asks for them.
      assert.equal((await putConfig(first.call, eui, EM500)).status, 200);
      const push = { "x-downlink-push": `${base}/api/v3/as/applications/bins/webhooks/dedupe/devices/bin-mx-3/down/push`, "x-downlink-apikey": "NNSXS.KEY" };
      await tts(first, eui, "bin-mx-3", history([0, 1, 2, 5]), push);
      await tts(first, eui, "bin-mx-3", live(700), push);
      await statsWhen(first.call, (s) => s.unique === 6 && s.backfill_requests.sent === 1, "the first flushes");
      assert.deepEqual(await counted(first.call), before);
    } finally {
      await first.mf.dispose();
    }
    // Rolled back, but for the shards: each device flushes figures without codes or history requests.
    const back = await mixed({ worker: "previous", devices: "previous", shards: "current" }, { persist: dir, vars });
    try {
      await ingest(back.call, [reading("mx-D", 3, 30), reading(eui, 1, 30)]);
      await statsWhen(back.call, (s) => s.unique === 8, "the previous devices' flushes");
    } finally {
      await back.mf.dispose();
    }
    // Forward again: scraped before and after the devices' next flushes.
    const again = await mixed({ worker: "current", devices: "current", shards: "current" }, { persist: dir, vars });
    try {
      assert.deepEqual(await counted(again.call), before, "as before the rollback");
      await ingest(again.call, [reading("mx-D", 4, 40), reading(eui, 2, 40)]);
      const s = await statsWhen(again.call, (s) => s.unique === 10, "the current devices' flushes");
      assert.deepEqual([s.rejected, s.rejected_by_code, s.backfill_requests.requested, s.backfill_requests.sent], [1, { invalid_fill_pct: 1 }, 1, 1]);
      assert.deepEqual(await counted(again.call), before, "counted once");
    } finally {
      await again.mf.dispose();
    }
  } finally {
    await ns.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("shards upgraded after the devices: rejections a previous shard counted without codes stay not_recorded, and no rejected_total series goes down", { skip }, async () => {
  const dir = tempDir();
  try {
    // This release's devices flush their codes to shards of the previous release, which keep none.
    const first = await mixed({ worker: "current", devices: "current", shards: "previous" }, { persist: dir });
    try {
      await ingest(first.call, [reading("mx-E", 1, 10), reading("mx-E", 2, 101)]);
      await statsWhen(first.call, (s) => s.unique === 1, "the first flush");
    } finally {
      await first.mf.dispose();
    }
    const again = await mixed({ worker: "current", devices: "current", shards: "current" }, { persist: dir });
    try {
      const rejected = async () => (await scrape(again.call)).families.rejected_total;
      assert.deepEqual(await rejected(), { "code=not_recorded": "1" }, "counted by a shard that kept no code");
      // The device's next flush names the code of that rejection: counted already.
      await ingest(again.call, [reading("mx-E", 3, 30)]);
      await statsWhen(again.call, (s) => s.unique === 2, "the next flush");
      assert.deepEqual(await rejected(), { "code=not_recorded": "1" });
      // A new rejection has its code.
      await ingest(again.call, [reading("mx-E", 4, 104)]);
      const s = await statsWhen(again.call, (s) => s.rejected === 2, "the new rejection's flush");
      assert.deepEqual([s.received, s.rejected_by_code], [4, { invalid_fill_pct: 1, not_recorded: 1 }]);
      assert.deepEqual(await rejected(), { "code=invalid_fill_pct": "1", "code=not_recorded": "1" });
    } finally {
      await again.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
