// `npm run bench:webhooks`: what the rule "the same frame twice" costs (docs/network-servers.md, "The
// same frame twice"). A reading keyed at the network server's receive time carries its
// frame's identity (a SHA-256 in the core's plan) and costs its device (in its group
// object) one indexed lookup (`reframe`, src/worker/frames.js) and a column + index
// entry per row.
// Three figures, each against the same uplink whose decoded payload carries its own
// `ts` (no frame identity, no lookup):
//   1. parseUplink of a The Things Stack uplink, outside workerd (Wasm only);
//   2. POST /v1/uplinks/ttn in workerd (Miniflare, storage on disk in a temporary
//      directory): new frames, then every frame delivered again later (duplicates);
//   3. the bytes the frame column and its index take per ledger row and per device
//      (SQLite's dbstat; a group's file holds several devices' rows, so its pages are
//      the group's, summed over the files and divided by the devices counted in them).
// Prints figures; asserts nothing about time.
//
//   node benches/webhooks.mjs [--uplinks N] [--devices N] [--concurrency N] [--rounds N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { databases, start } from "../tests/support/harness.mjs";
import { coreInNode, fmt, machine, microsPerItem, sqliteQueries, timedPosts, totals } from "./in-workerd.mjs";
import { option } from "./workload.mjs";

const UPLINKS = option("uplinks", 2000);
const DEVICES = option("devices", 50);
const CONCURRENCY = option("concurrency", 8);
const ROUNDS = option("rounds", 7);
const root = new URL("../", import.meta.url).pathname;
const glue = await coreInNode();

const sample = JSON.parse(fs.readFileSync(path.join(root, "tests/fixtures/webhooks/tts/uplink_message.json"), "utf8"));
const T0 = Date.parse("2026-07-16T09:00:00Z");

/** Uplink `i` as The Things Stack posts it; `ownTs` puts a `ts` in the decoded payload; `late` delivers it again 5 min later. */
function uplink(i, { ownTs = false, late = false } = {}) {
  const v = structuredClone(sample);
  v.end_device_ids.dev_eui = `B0${String(i % DEVICES).padStart(14, "0")}`;
  const m = v.uplink_message;
  m.f_cnt = Math.floor(i / DEVICES) + 1;
  m.frm_payload = Buffer.from([i & 0xff, (i >> 8) & 0xff, 0x2a]).toString("base64");
  m.received_at = new Date(T0 + i * 1000 + (late ? 300_000 : 0)).toISOString();
  m.decoded_payload = { fill_pct: (i % 1000) / 10, ...(ownTs ? { ts: new Date(T0 + i * 1000).toISOString() } : {}) };
  return JSON.stringify(v);
}

console.log(`reconnect-dedupe webhooks: the same frame twice  ${new Date().toISOString()}`);
console.log(machine());
console.log(`workload: ${fmt(UPLINKS)} The Things Stack uplinks (tests/fixtures/webhooks/tts/uplink_message.json), ${DEVICES} devices, one reading each`);

// 1. The core's plan, outside workerd.
const enc = new TextEncoder();
const bodies = (opts) => Array.from({ length: UPLINKS }, (_, i) => enc.encode(uplink(i, opts)));
console.log("1. parseUplink per uplink (median of rounds):");
for (const [name, opts] of [["decoded ts (no frame)", { ownTs: true }], ["receive time (frame identity)", {}]]) {
  const us = microsPerItem(bodies(opts), (b) => glue.parseUplink("ttn", b), ROUNDS);
  console.log(`   ${name.padEnd(32)} ${us.toFixed(2)} µs`);
}

// 2. The worker, in workerd.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-bench-webhooks-"));
// The worker as the worker tests start it (tests/support/harness.mjs), its storage on disk.
const worker = await start({ persist: dir });

const run = (name, list) => timedPosts(worker.call, name, "/v1/uplinks/ttn", list, CONCURRENCY);

try {
  console.log(`2. POST /v1/uplinks/ttn in workerd, ${CONCURRENCY} in flight (the devices' group objects warmed by a first pass):`);
  // Warm-up: every device registered in its group, the group's schema written (own-ts uplinks, other counters).
  await run("warm-up (not compared)", Array.from({ length: DEVICES }, (_, i) => uplink(UPLINKS * 10 + i, { ownTs: true })));
  // Each kind twice, in both orders, on fresh frames: the isolate warms up as it goes.
  const quarter = Math.floor(UPLINKS / 4);
  const chunk = (k, opts) => Array.from({ length: quarter }, (_, i) => uplink(k * quarter + i, opts));
  for (const [k, order] of [[0, ["own", "framed"]], [2, ["framed", "own"]]]) {
    for (const kind of order) {
      if (kind === "own") await run(`new, decoded ts (no lookup)`, chunk(k, { ownTs: true }));
      else await run(`new, receive time (a lookup that misses)`, chunk(k + 1, {}));
    }
  }
  await run("delivered again 5 min later (a lookup that hits)", chunk(1, { late: true }));
  await run("replay of decoded-ts ones (no lookup)", chunk(0, { ownTs: true }));
} finally {
  await worker.mf.dispose();
}

// 3. What the frame identity takes on disk: its column's bytes and the pages of the two
// partial indexes on framed rows (readings_by_frame, readings_live_by_ts: group.js SCHEMA).
const files = databases(dir, "GroupObject");
const disk = totals(sqliteQueries(files, {
  devices: "SELECT COUNT(DISTINCT device_id) FROM readings",
  rows: "SELECT COUNT(*) FROM readings",
  framed: "SELECT COUNT(*) FROM readings WHERE frame IS NOT NULL",
  index: "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'readings_by_frame'",
  byTs: "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'readings_live_by_ts'",
}));
console.log(`3. on disk, ${disk.devices} devices in ${files.length} group databases: ${fmt(disk.rows)} rows, ${fmt(disk.framed)} with a frame ` +
  `(${fmt(disk.framed / disk.devices)} a device); the frame column takes 17 bytes a framed row (16 hex digits + its ` +
  `record header byte); its partial indexes: readings_by_frame ${fmt(disk.index / disk.devices)} bytes of pages a device ` +
  `(${fmt(disk.index / Math.max(disk.framed, 1), 1)} a framed row), readings_live_by_ts ${fmt(disk.byTs / disk.devices)} ` +
  `(${fmt(disk.byTs / Math.max(disk.framed, 1), 1)} a framed row); pages are per group file: ${fmt(disk.index + disk.byTs)} B over the ${files.length} files`);
fs.rmSync(dir, { recursive: true, force: true });
