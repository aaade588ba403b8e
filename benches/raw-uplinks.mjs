// `npm run bench:raw`: what a raw uplink costs the worker (docs/devices.md, "Configure a
// device"). An uplink whose decoded payload has no fill level hands on its raw bytes
// (the plan's `raw`); the device, in its group object (src/worker/group.js), decodes
// them with its configuration (src/worker/decode.js, the core's readingsFromPayload)
// and admits the samples. An unconfigured device's uplink is parked (a `parked` row of
// its group's database holding the raw uplink's JSON) and decoded by the next PUT of
// its configuration (raw-uplinks.js `unpark`).
//   1. outside workerd (Wasm in Node): the core's plan of each kind of uplink
//      (parseUplink) and the decoding of a raw one (readingsFromPayload);
// In workerd (Miniflare, tests/support/harness.mjs, storage on disk in a temporary
// directory):
//   2. POST requests/s, p50 and p99 of (a) The Things Stack EM500-UDL history uplinks
//      whose decoded payload gives both records' readings with fill_pct (a payload
//      formatter that computes it: today's path, the baseline), (b) the same uplinks
//      with their bytes only, from configured devices, new frames, (c) those raw
//      uplinks replayed (duplicates), (d) raw Dingtek DF703 frames through LORIOT;
//   3. parking: unconfigured devices' uplinks POSTed (parked), the bytes a parked
//      uplink takes on disk (SQLite's dbstat, table `parked` and its primary-key
//      index: pages are per group file, which can hold several parked devices, so a
//      file's pages are shared among its devices by their parked rows; rows and JSON
//      are counted per device_id), then the PUT of the configuration that decodes
//      them: its duration per parked uplink, up to one device with UNPARK_PER_CALL parked.
// Prints figures; asserts nothing about time.
//
//   node benches/raw-uplinks.mjs [--uplinks N] [--devices N] [--concurrency N] [--rounds N]
//                                    [--parked 1,10,100,1000] [--parked-devices N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { databases, fixture, start, TOKEN } from "../tests/support/harness.mjs";
import { coreInNode, fmt, machine, mean, microsPerItem, percentile, sqliteQueries, timedPosts, totals } from "./in-workerd.mjs";
import { option } from "./workload.mjs";

const root = new URL("../", import.meta.url).pathname;
/** A constant of src/worker/raw-uplinks.js, read from its source (importing it needs workerd). */
const deviceConstant = (name) =>
  Number(fs.readFileSync(path.join(root, "src/worker/raw-uplinks.js"), "utf8").match(new RegExp(`export const ${name} = ([\\d_]+);`))[1].replaceAll("_", ""));
const UNPARK_PER_CALL = deviceConstant("UNPARK_PER_CALL");
const MAX_PARKED_PER_DEVICE = deviceConstant("MAX_PARKED_PER_DEVICE");

const UPLINKS = option("uplinks", 2000);
const DEVICES = option("devices", 20);
const CONCURRENCY = option("concurrency", 8);
const ROUNDS = option("rounds", 7);
const at = process.argv.indexOf("--parked");
const PARKED = (at > 0 ? process.argv[at + 1] : `1,10,100,${UNPARK_PER_CALL}`).split(",").map(Number);
const PARKED_DEVICES = option("parked-devices", 3);

const em500 = JSON.parse(fixture("raw/tts-em500-udl-history.json"));
const df703 = JSON.parse(fixture("raw/loriot-df703-rx.json"));
const T0 = Date.parse("2026-07-16T09:00:00Z");
const EM500 = { codec: "milesight-iot/em500-udl", bin_depth_mm: 1500 };
const DF703 = { codec: "dingtek/df703", bin_depth_mm: 2500, offset_mm: 100 };
/** Device `n` of a group: 16 hex digits, the group's first. */
const eui = (group, n) => `${group}${n.toString(16).toUpperCase().padStart(16 - group.length, "0")}`;
const iso = (ms) => new Date(ms).toISOString();
/** The README's fill level of a distance, one decimal. */
const fillOf = (mm, { bin_depth_mm: depth, offset_mm: offset = 0 }) => Math.round(Math.min(100, Math.max(0, (100 * (depth - (mm - offset))) / depth)) * 10) / 10;

/**
 * Uplink `n` of an EM500-UDL as The Things Stack posts it (the fixture's layout): two
 * history records `20 CE` + u32 LE unix seconds + u16 LE distance mm, 10 min apart,
 * received 10 min after the second. `decoded`: the decoded payload gives both
 * readings with their fill level (the baseline) instead of leaving the bytes to us.
 */
function history(device, n, { decoded = false } = {}) {
  const v = structuredClone(em500);
  v.end_device_ids.dev_eui = device;
  v.end_device_ids.device_id = `bin-${device.toLowerCase()}`;
  const m = v.uplink_message;
  m.f_cnt = n + 1;
  const records = [0, 1].map((r) => ({ s: T0 / 1000 + n * 1200 + r * 600, mm: 200 + ((n * 37 + r * 11) % 1200) }));
  const bytes = Buffer.alloc(16);
  records.forEach(({ s, mm }, r) => {
    bytes.writeUInt16BE(0x20ce, r * 8);
    bytes.writeUInt32LE(s, r * 8 + 2);
    bytes.writeUInt16LE(mm, r * 8 + 6);
  });
  m.frm_payload = bytes.toString("base64");
  m.received_at = v.received_at = iso(T0 + n * 1_200_000 + 1_200_000);
  if (decoded) m.decoded_payload = { readings: records.map(({ s, mm }) => ({ seq: s, ts: iso(s * 1000), fill_pct: fillOf(mm, EM500) })) };
  return JSON.stringify(v);
}

/** Frame `n` of a DF703 as LORIOT posts it (`rx`): level (bytes 5-6) and counter (bytes 13-14), big-endian. */
function dingtek(device, n) {
  const bytes = Buffer.from(df703.data, "hex");
  bytes.writeUInt16BE(300 + ((n * 37) % 2000), 5);
  bytes.writeUInt16BE((n + 1) & 0xffff, 13);
  return JSON.stringify({ ...df703, EUI: device, fcnt: n + 1, ts: T0 + n * 600_000, data: bytes.toString("hex") });
}

/** Uplinks `from` … `from + count − 1` of a group, uplink i from device i mod `devices`, its (i div `devices`)th. */
const uplinks = (make, group, from, count, devices = DEVICES, opts = {}) =>
  Array.from({ length: count }, (_, j) => make(eui(group, (from + j) % devices), Math.floor((from + j) / devices), opts));

console.log(`reconnect-dedupe raw uplinks: decoded in the group object, parked until configured  ${new Date().toISOString()}`);
console.log(machine());
console.log(
  `workload: ${fmt(UPLINKS)} uplinks a run, ${DEVICES} devices a kind, ${CONCURRENCY} in flight; EM500-UDL history uplinks of 2 records ` +
    `(tests/fixtures/webhooks/raw/tts-em500-udl-history.json), DF703 frames (tests/fixtures/webhooks/raw/loriot-df703-rx.json); ` +
    `parked: ${PARKED.join(", ")} uplinks on ${PARKED_DEVICES} devices each`,
);

const kinds = {
  a: { name: "(a) decoded fill_pct (baseline)", route: "/v1/uplinks/ttn", make: history, group: "B1", opts: { decoded: true } },
  b: { name: "(b) raw EM500-UDL, configured, new", route: "/v1/uplinks/ttn", make: history, group: "B2", config: EM500 },
  c: { name: "(c) raw EM500-UDL replayed (duplicates)", route: "/v1/uplinks/ttn", make: history, group: "B2" },
  d: { name: "(d) raw DF703 via LORIOT, new", route: "/v1/uplinks/loriot", make: dingtek, group: "B4", config: DF703 },
};

// 1. The core's share, outside workerd: the stateless tier's plan, then the device's decoding of `raw` (in its group object).
const glue = await coreInNode();
const enc = new TextEncoder();
console.log(`1. the core in Node (Wasm), µs per uplink, median of ${ROUNDS} rounds over ${fmt(UPLINKS)} uplinks:`);
for (const key of ["a", "b", "d"]) {
  const k = kinds[key];
  const format = k.route.split("/").pop();
  const bodies = uplinks(k.make, k.group, 0, UPLINKS, DEVICES, k.opts).map((b) => enc.encode(b));
  const plan = microsPerItem(bodies, (b) => glue.parseUplink(format, b), ROUNDS);
  let decode = "";
  if (k.config) {
    // What decode.js hands the core: the plan's raw uplink, its hex payload as bytes.
    const raws = bodies.map((b) => JSON.parse(glue.parseUplink(format, b)).raw);
    const config = { offset_mm: 0, reporting_period_s: null, ...k.config };
    const us = microsPerItem(raws, (r) => glue.readingsFromPayload(r.device_id, config, r.f_port, Buffer.from(r.payload, "hex"), { received_at: r.received_at, f_cnt: r.f_cnt, counter_ref: null, frame: r.frame }), ROUNDS);
    decode = `; readingsFromPayload ${us.toFixed(2)} µs`;
  }
  console.log(`   ${k.name.padEnd(44)} parseUplink ${plan.toFixed(2)} µs${decode}`);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-bench-raw-"));
let worker = await start({ persist: dir });
const configure = async (id, body) => {
  const res = await worker.call(`/v1/devices/${id}/config`, {
    method: "PUT",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const reply = await res.json();
  if (res.status !== 200) throw new Error(`PUT config of ${id}: ${res.status} ${JSON.stringify(reply)}`);
  return reply;
};

// Parked devices: group B5 + the size's place; B6 warms the restarted isolate up.
const parkedDevices = PARKED.flatMap((size, k) => Array.from({ length: PARKED_DEVICES }, (_, j) => ({ size, id: eui(`B5${k}`, j) })));
const warmParked = { size: 10, id: eui("B6", 0) };

const results = { a: [], b: [], c: [], d: [] };
try {
  console.log(`2. POST a raw uplink vs one with fill_pct, in workerd (each kind twice, the second pass in the reverse order):`);
  for (const kind of Object.values(kinds)) {
    if (kind.config) for (let d = 0; d < DEVICES; d++) await configure(eui(kind.group, d), kind.config);
  }
  // Warm-up: every device registered in its group, the group's schema written (each device's uplink 0).
  for (const key of ["a", "b", "d"]) {
    const k = kinds[key];
    await timedPosts(worker.call, `warm-up ${key} (not compared)`, k.route, uplinks(k.make, k.group, 0, DEVICES, DEVICES, k.opts), CONCURRENCY);
  }
  // Run `pass` (0, 1) of a kind: its own fresh uplinks after the warm-up's; (c) replays pass 0's (b).
  const chunk = (key, pass) => {
    const k = kinds[key];
    return uplinks(k.make, k.group, DEVICES + (key === "c" ? 0 : pass) * UPLINKS, UPLINKS, DEVICES, k.opts);
  };
  for (const [pass, order] of [[0, ["a", "b", "c", "d"]], [1, ["d", "c", "b", "a"]]]) {
    for (const key of order) results[key].push(await timedPosts(worker.call, kinds[key].name, kinds[key].route, chunk(key, pass), CONCURRENCY));
  }
  const base = mean(results.a.map((r) => r.rps));
  console.log("   summary (two runs each; ratio: mean requests/s against (a)'s mean):");
  for (const [key, runs] of Object.entries(results)) {
    const rps = runs.map((r) => fmt(r.rps)).join(" and ");
    const p = (q) => runs.map((r) => r[q].toFixed(1)).join(" and ");
    console.log(`   ${kinds[key].name.padEnd(44)} ${rps} requests/s (${(mean(runs.map((r) => r.rps)) / base).toFixed(2)}x), p50 ${p("p50")} ms, p99 ${p("p99")} ms`);
  }

  console.log(`3. parking: unconfigured devices' raw EM500-UDL uplinks (the codec from version_ids, no bin: device_not_configured)`);
  // Round robin over the devices, so that the small ones are not all done before the large ones start.
  const devices = [warmParked, ...parkedDevices];
  const parked = [];
  for (let n = 0; n < Math.max(...PARKED); n++) for (const { size, id } of devices) if (n < size) parked.push(history(id, n));
  await timedPosts(worker.call, "POST, parked", "/v1/uplinks/ttn", parked, CONCURRENCY);
} finally {
  await worker.mf.dispose();
}

// The parked rows on disk, per device, while no runtime holds the files. A group's file
// can hold several parked devices: rows and payload bytes are counted per device_id, and each
// file's pages of `parked` and its index are shared among its devices by their rows.
const disk = sqliteQueries(databases(dir, "GroupObject"), {
  devices: "SELECT COALESCE((SELECT json_group_array(json_array(device_id, n, bytes)) FROM (SELECT device_id, COUNT(*) AS n, SUM(LENGTH(payload)) AS bytes FROM parked GROUP BY device_id)), '[]')",
  rows: "SELECT COUNT(*) FROM parked",
  table: "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'parked'",
  index: "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = 'sqlite_autoindex_parked_1'",
})
  .filter((f) => f.rows > 0)
  .flatMap((f) =>
    JSON.parse(f.devices).map(([device, rows, payload]) => ({ device, rows, payload, table: (f.table * rows) / f.rows, index: (f.index * rows) / f.rows, shared: f.rows > rows })),
  )
  .filter((d) => d.device !== warmParked.id);
const bySize = new Map(PARKED.map((size) => [size, disk.filter((d) => d.rows === size)]));
const sharing = disk.filter((d) => d.shared).length;
console.log(
  `   on disk (dbstat, pages of the table \`parked\` and of its primary key's index on \`frame\`; pages are per group file, ` +
    `shared among its parked devices by their rows: ${sharing} of ${disk.length} devices share theirs), per device:`,
);
for (const [size, devices] of bySize) {
  const t = totals(devices);
  console.log(
    `     ${fmt(size).padStart(5)} parked: ${fmt(t.table / devices.length)} B table + ${fmt(t.index / devices.length)} B index = ` +
      `${fmt((t.table + t.index) / t.rows, 1)} B per parked uplink (its payload ${fmt(t.payload / t.rows)} B; ${devices.length} devices)`,
  );
}
const full = totals(bySize.get(Math.max(...PARKED)));
const perRow = (full.table + full.index) / full.rows;
console.log(`     worst case a device: MAX_PARKED_PER_DEVICE ${fmt(MAX_PARKED_PER_DEVICE)} × ${fmt(perRow, 1)} B = ${fmt((MAX_PARKED_PER_DEVICE * perRow) / 2 ** 20, 1)} MiB`);

// The PUT that decodes them, in a restarted workerd (a device configured long after it parked is cold anyway: its group's figures loaded, its Device new).
worker = await start({ persist: dir });
try {
  // Start each device's group object and Device (GET of the configuration: 404 not_configured, from the group), then warm the PUT path up.
  for (const { id } of [warmParked, ...parkedDevices]) await worker.call(`/v1/devices/${id}/config`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.arrayBuffer());
  await configure(warmParked.id, EM500);
  console.log(`   PUT /v1/devices/{id}/config that decodes them (UNPARK_PER_CALL ${fmt(UNPARK_PER_CALL)}), sequential; then a second PUT (offset_mm changed) with nothing parked:`);
  const timed = async (id, body) => {
    const t0 = performance.now();
    const reply = await configure(id, body);
    return { ms: performance.now() - t0, reply };
  };
  const puts = new Map(PARKED.map((size) => [size, []]));
  const empty = [];
  for (let j = 0; j < PARKED_DEVICES; j++) {
    // Device j of each size, smallest first, then largest first for the next j.
    const these = parkedDevices.filter((_, i) => i % PARKED_DEVICES === j);
    for (const { size, id } of j % 2 ? these.reverse() : these) {
      const { ms, reply } = await timed(id, EM500);
      const u = reply.unparked;
      if (u.uplinks !== size) console.log(`     NOTE ${id}: ${size} parked, ${u.uplinks} decoded (${JSON.stringify(u)})`);
      puts.get(size).push({ ms, perUplink: ms / u.uplinks, readings: u.received, unique: u.unique });
      empty.push((await timed(id, { ...EM500, offset_mm: 10 })).ms);
    }
  }
  for (const [size, runs] of puts) {
    const ms = runs.map((r) => r.ms.toFixed(1)).join(", ");
    const per = runs.map((r) => r.perUplink.toFixed(2)).join(", ");
    console.log(`     ${fmt(size).padStart(5)} parked: PUT ${ms} ms = ${per} ms per uplink decoded (${runs[0].readings} readings, ${runs[0].unique} unique each)`);
  }
  const [lo, hi] = [Math.min(...PARKED), Math.max(...PARKED)];
  const avg = (size) => puts.get(size).reduce((t, r) => t + r.ms, 0) / puts.get(size).length;
  empty.sort((a, b) => a - b);
  console.log(
    `     per further parked uplink ((PUT of ${hi} − PUT of ${lo}) / ${hi - lo}): ${((avg(hi) - avg(lo)) / (hi - lo)).toFixed(2)} ms; ` +
      `a PUT with nothing parked: p50 ${percentile(empty, 50).toFixed(1)} ms (${empty.length} PUTs)`,
  );
} finally {
  await worker.mf.dispose();
}
fs.rmSync(dir, { recursive: true, force: true });
