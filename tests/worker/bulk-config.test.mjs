// Many devices configured in one call (POST /v1/devices/config, docs/devices.md
// "Configuring many devices at once") in workerd: a city's 10 000 bins from one CSV, all
// stored and read back, in one call per group object; the same call again changes
// nothing (one history event and one log line per device); bad rows answered by row
// with their codes while the others are applied; a JSON body; the documented curl
// one-liner importing the documented CSV; the uplinks parked while the devices had no
// configuration decoded; the limits on rows and bytes; and a group
// object that fails answering its rows `device_unavailable`, the others applied.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { acrossRestart, databases, get, logged, logSettled, readingsOf, sqlite, start, statsOf, TOKEN, until } from "../support/harness.mjs";
import { EM500, live, tts } from "../support/em500.mjs";
import { GROUPS, groupOf } from "../../src/worker/placement.js";

const worker = await start();
after(() => worker.mf.dispose());

const AUTH = { authorization: `Bearer ${TOKEN}` };
/** POST /v1/devices/config with `body` (CSV text, or an object sent as JSON): `{status, body}`. */
async function bulk(w, body, type = typeof body === "string" ? "text/csv" : "application/json") {
  const res = await w.call("/v1/devices/config", { method: "POST", headers: { ...AUTH, "content-type": type }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}
const configOf = (id) => get(worker.call, `/v1/devices/${id}/config`);
const historyOf = async (id) => (await get(worker.call, `/v1/devices/${id}/history`)).body.events;
/** A result's outcome in brief: `[row, device_id, code]`, code null for a row applied. */
const brief = (r) => [r.row, r.device_id, r.ok ? null : r.code];
const HEADER = "device_id,codec,bin_depth_mm,offset_mm,reporting_period_s,backfill,application_port";

test("10 000 rows of CSV in one call: every device stored, one call per group object; the same call again changes nothing", async () => {
  const N = 10_000;
  // DevEUIs in lower case: each device is its id in upper case, as readings name it.
  const ids = Array.from({ length: N }, (_, i) => (0xa840410000000000n + BigInt(i)).toString(16));
  const depth = (i) => 800 + (i % 1200);
  const csv = `${HEADER}\r\n${ids.map((id, i) => `${id},milesight-iot/em500-udl,${depth(i)},${i % 200},,,`).join("\r\n")}\r\n`;
  const devicesBefore = (await statsOf(worker.call)).devices;

  const first = await bulk(worker, csv);
  assert.equal(first.status, 200, JSON.stringify(first.body).slice(0, 500));
  assert.deepEqual([first.body.received, first.body.configured, first.body.changed, first.body.failed, first.body.unparked_uplinks], [N, N, N, 0, 0]);
  assert.equal(first.body.results.length, N);
  first.body.results.forEach((r, i) => {
    // Row i is the CSV's record on line i + 2 (the header is line 1).
    assert.deepEqual([r.row, r.line, r.device_id, r.ok, r.changed], [i, i + 2, ids[i].toUpperCase(), true, true]);
    assert.deepEqual([r.config.codec, r.config.bin_depth_mm, r.config.offset_mm, r.config.reporting_period_s, r.config.backfill], ["milesight-iot/em500-udl", depth(i), i % 200, null, null]);
  });
  // One call per group object the rows reach (the stateless tier's log line), at most GROUPS.
  await logSettled(worker);
  const [done] = logged(worker, "devices_configured").filter((l) => l.received === N);
  assert.equal(done.group_calls, new Set(ids.map((id) => groupOf(id.toUpperCase()))).size);
  assert.ok(done.group_calls <= GROUPS);

  // Stored: a sample read back, and every device registered.
  for (const i of [0, 1, 4321, N - 1]) {
    const stored = await configOf(ids[i]);
    assert.deepEqual(stored, { status: 200, body: first.body.results[i].config });
  }
  await until(async () => (await statsOf(worker.call)).devices === devicesBefore + N, "10 000 more devices in /v1/stats");

  // The same call again (a retry): nothing changes, nothing is logged or recorded again.
  const again = await bulk(worker, csv);
  assert.deepEqual([again.body.received, again.body.configured, again.body.changed, again.body.failed], [N, N, 0, 0]);
  again.body.results.forEach((r, i) => {
    assert.equal(r.changed, false);
    assert.deepEqual(r.config, first.body.results[i].config, "updated_at included");
  });
  for (const i of [0, 4321, N - 1]) {
    const events = await historyOf(ids[i]);
    assert.deepEqual(events.map((e) => [e.event, e.detail.before]), [["device_config", null]]);
  }
  await logSettled(worker);
  const wanted = new Set(ids.map((id) => id.toUpperCase()));
  assert.equal(logged(worker, "device_config").filter((l) => wanted.has(l.device_id)).length, N, "one device_config line per device");
});

test("bad rows are answered by row with their codes, and every other row is applied", async () => {
  const csv = [
    HEADER,
    "bad-1,milesight-iot/em500-udl,1200,150,,,",
    "bad-2,acme/bin-9000,1200,,,,", // unknown codec
    "bad-3,dingtek/df703,100001,,,,", // depth out of range
    "bad-4,tekelek/tek766,1500,,,,", // Tekelek without its period
    "bad-5,tekelek/tek766,1500,,900,,",
    ".,dingtek/df703,1200,,,,", // not a device id
    "bad-6,dingtek/df703,1200,,,,",
    "BAD-7,,1200,,,,",
    "bad-6,dingtek/df703,1300,,,,", // bad-6 again
    "bad-8,,1200,,,TRUE,", // a spreadsheet's boolean
    ',,,,,,', // a blank row: no row
    '"bad,9 ""quoted""",,1e3,-0,600,false,',
    "bad-10,,12 00,,,,",
    "bad-11,,1200,,,",
    "bad-12,,1200,,,maybe,",
    "bad-13,milesight-iot/em310-udl,1200,,,,86", // its application port set to 86
    "bad-14,dingtek/df703,1200,,,,86", // a port the DF703 cannot be set to
    "bad-15,milesight-iot/em310-udl,1200,,,,224", // not an application port
  ].join("\n");
  const { status, body } = await bulk(worker, csv);
  assert.equal(status, 200);
  assert.deepEqual(body.results.map(brief), [
    [0, "bad-1", null],
    [1, "bad-2", "unknown_codec"],
    [2, "bad-3", "invalid_bin_depth"],
    [3, "bad-4", "missing_reporting_period"],
    [4, "bad-5", null],
    [5, ".", "invalid_device_id"],
    [6, "bad-6", "duplicate_device_id"],
    [7, "BAD-7", null],
    [8, "bad-6", "duplicate_device_id"],
    [9, "bad-8", null],
    [10, 'bad,9 "quoted"', null],
    [11, "bad-10", "invalid_bin_depth"],
    [12, "bad-11", "invalid_config_body"],
    [13, "bad-12", "invalid_backfill"],
    [14, "bad-13", null],
    [15, "bad-14", "invalid_application_port"],
    [16, "bad-15", "invalid_application_port"],
  ]);
  // Lines as a spreadsheet numbers them: the blank row is skipped, not renumbered.
  assert.deepEqual(body.results.map((r) => r.line), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19]);
  assert.deepEqual([body.received, body.configured, body.changed, body.failed], [17, 6, 6, 11]);
  const messages = Object.fromEntries(body.results.filter((r) => !r.ok).map((r) => [r.row, r.message]));
  assert.match(messages[1], /codec must be null .* got "acme\/bin-9000"/);
  assert.match(messages[2], /bin_depth_mm must be a whole number of millimetres, 1 … 100000; got 100001/);
  assert.match(messages[3], /codec tekelek\/tek766 needs reporting_period_s/);
  // Named by the lines a spreadsheet shows.
  assert.match(messages[6], /device "bad-6" is in lines 8, 10; give each device once/);
  assert.match(messages[11], /got "12 00"/);
  assert.match(messages[12], /the record has 6 fields; the header row names 7/);
  assert.match(messages[13], /backfill must be true, false or null .*; got "maybe"/);
  assert.match(messages[15], /application_port is for a device whose codec is one of milesight-iot\/em310-udl \(85 unless set\), milesight-iot\/em500-udl \(85 unless set\); dingtek\/df703 reads its own ports/);
  assert.match(messages[16], /application_port must be a whole number, 1 … 223; got 224/);
  assert.equal((await configOf("bad-13")).body.application_port, 86);
  // What was applied is stored as a PUT would store it; what was refused is not.
  assert.equal((await configOf("bad-5")).body.reporting_period_s, 900);
  assert.equal((await configOf("bad-8")).body.backfill, true);
  const quoted = await configOf(encodeURIComponent('bad,9 "quoted"'));
  assert.deepEqual([quoted.body.bin_depth_mm, quoted.body.offset_mm, quoted.body.reporting_period_s, quoted.body.backfill], [1000, 0, 600, false]);
  for (const id of ["bad-2", "bad-3", "bad-4", "bad-6", "bad-10", "bad-12", "bad-14", "bad-15"]) assert.deepEqual([id, (await configOf(id)).status], [id, 404]);
});


test("a device in two rows is refused in each it would be applied in, also when its other row breaks a rule or has another field count", async () => {
  const csv = [
    HEADER,
    "dup-mixed,,0,,,,", // breaks a rule
    "dup-mixed,,1000,,,,",
    "dup-count,,1000,,,,",
    "dup-count,,1000,,,", // a field short
    "dup-case-a0b1c2d3e4f5a6b7,,1000,,,,",
  ].join("\n");
  const { status, body } = await bulk(worker, `${csv}\n`);
  assert.equal(status, 200);
  assert.deepEqual(body.results.map(brief), [
    [0, "dup-mixed", "invalid_bin_depth"],
    [1, "dup-mixed", "duplicate_device_id"],
    [2, "dup-count", "duplicate_device_id"],
    [3, "dup-count", "invalid_config_body"],
    [4, "dup-case-a0b1c2d3e4f5a6b7", null],
  ]);
  for (const id of ["dup-mixed", "dup-count"]) assert.equal((await configOf(id)).status, 404, id);
  // A DevEUI in two cases is one device.
  const eui = await bulk(worker, `${HEADER}\nA0B1C2D3E4F5A6B8,,1000,,,,\na0b1c2d3e4f5a6b8,,1200,,,,\n`);
  assert.deepEqual(eui.body.results.map((r) => r.code), ["duplicate_device_id", "duplicate_device_id"]);
  assert.match(eui.body.results[0].message, /is in lines 2, 3/);
});

test("a CSV names every column: one left out would reset that setting on every device of the file", async () => {
  assert.equal((await bulk(worker, `${HEADER}\nkeep-1,tekelek/tek766,1500,80,900,,\n`)).body.configured, 1);
  const r = await bulk(worker, "device_id,bin_depth_mm\nkeep-1,1600\n");
  assert.deepEqual([r.status, r.body.error.code], [400, "invalid_csv"]);
  assert.match(r.body.error.message, /the header row has no column codec, offset_mm, reporting_period_s, application_port, backfill/);
  const kept = (await configOf("keep-1")).body;
  assert.deepEqual([kept.codec, kept.bin_depth_mm, kept.offset_mm, kept.reporting_period_s], ["tekelek/tek766", 1500, 80, 900]);
  // A file of the columns before application_port: refused, naming it; a device's port is kept.
  assert.equal((await bulk(worker, `${HEADER}\nkeep-2,milesight-iot/em310-udl,1500,,,,86\n`)).body.configured, 1);
  const earlier = await bulk(worker, "device_id,codec,bin_depth_mm,offset_mm,reporting_period_s,backfill\nkeep-2,milesight-iot/em310-udl,1500,,,\n");
  assert.deepEqual([earlier.status, earlier.body.error.code], [400, "invalid_csv"]);
  assert.match(earlier.body.error.message, /the header row has no column application_port;/);
  assert.equal((await configOf("keep-2")).body.application_port, 86);
});
test("a JSON body: the PUT's rules by row, an unknown member or another shape refused in its row, a DevEUI in any case", async () => {
  const { status, body } = await bulk(worker, {
    devices: [
      { device_id: "0004a30b001c0530", ...EM500, offset_mm: 120, backfill: false },
      { device_id: "json-2", bin_depth_mm: 900, depth: 3 },
      { device_id: 17, bin_depth_mm: 900 },
      "json-4",
      { device_id: "json-5", bin_depth_mm: 900.5 },
      { device_id: "json-6", codec: null, bin_depth_mm: 900, offset_mm: null, reporting_period_s: null, backfill: null },
      { device_id: "j".repeat(129), bin_depth_mm: 900 },
      { device_id: "json-8" },
      ...Array.from({ length: 7 }, () => ({ device_id: "json-dup", bin_depth_mm: 900 })),
    ],
  });
  assert.equal(status, 200);
  assert.deepEqual(body.results.map(brief), [
    [0, "0004A30B001C0530", null],
    [1, null, "invalid_config_body"],
    [2, null, "invalid_device_id"],
    [3, null, "invalid_config_body"],
    [4, "json-5", "invalid_bin_depth"],
    [5, "json-6", null],
    [6, "j".repeat(129), "invalid_device_id"],
    [7, "json-8", "invalid_bin_depth"],
    ...[8, 9, 10, 11, 12, 13, 14].map((row) => [row, "json-dup", "duplicate_device_id"]),
  ]);
  // A device in many rows: each message names a few of them.
  assert.ok(body.results.slice(8).every((r) => r.message === 'device "json-dup" is in rows 8, 9, 10, 11, 12 and 2 more; give each device once'));
  assert.ok(body.results.every((r) => r.line === undefined), "a JSON row has no line");
  assert.match(body.results[1].message, /unknown member "depth"; the members are device_id, codec, bin_depth_mm/);
  assert.match(body.results[2].message, /device_id must be the device's id, a string; got 17/);
  assert.match(body.results[7].message, /it is required/);
  const stored = await configOf("0004A30B001C0530");
  assert.deepEqual([stored.body.codec, stored.body.bin_depth_mm, stored.body.offset_mm, stored.body.reporting_period_s, stored.body.backfill], [EM500.codec, EM500.bin_depth_mm, 120, EM500.reporting_period_s, false]);
  assert.equal((await configOf("json-6")).body.offset_mm, 0);

  // A body that is not {"devices": [...]}, or not JSON, is refused whole.
  for (const [sent, code] of [
    ["[]", "invalid_config_body"],
    ['{"devices": {}}', "invalid_config_body"],
    ['{"devices": [], "more": 1}', "invalid_config_body"],
    ['{"devices": [{"device_id": "x", "bin_depth_mm": 1, "bin_depth_mm": 2}]}', "invalid_json"],
    ['{"devices": [', "invalid_json"],
  ]) {
    const r = await bulk(worker, sent, "application/json");
    assert.deepEqual([sent, r.status, r.body.error.code], [sent, 400, code]);
  }
  const empty = await bulk(worker, { devices: [] });
  assert.deepEqual([empty.status, empty.body.received, empty.body.results], [200, 0, []]);
});

test("a CSV body whose columns or quoting cannot be read is refused whole, nothing applied", async () => {
  const cases = [
    ["device_id,codec,depth\ncsv-1,,1200\n", /unknown column "depth" in the header row; the columns are device_id, codec, bin_depth_mm/],
    ["codec,bin_depth_mm,offset_mm,reporting_period_s,application_port,backfill\n,1200,,,,\n", /the header row has no column device_id;/],
    ["device_id,bin_depth_mm,bin_depth_mm\ncsv-1,1200,1200\n", /column "bin_depth_mm" appears twice/],
    ['device_id,bin_depth_mm\ncsv-1,1200\n"csv-2,1200\n', /line 3 of the CSV body: a quoted field is never closed/],
    ['device_id,bin_depth_mm\ncsv-1,12"00\n', /line 2 of the CSV body: a quote inside an unquoted field/],
    ['device_id,bin_depth_mm\n"csv-1"x,1200\n', /line 2 of the CSV body: text after a closing quote/],
    ["", /no header row/],
    ["device_id;codec;bin_depth_mm;offset_mm;reporting_period_s;backfill\ncsv-1;;1200;;;\n", /in the header row \(separated by semicolons\? RFC 4180's separator is the comma\)/],
  ];
  for (const [csv, message] of cases) {
    const r = await bulk(worker, csv);
    assert.deepEqual([r.status, r.body.error.code], [400, "invalid_csv"], csv);
    assert.match(r.body.error.message, message);
  }
  const latin1 = await worker.call("/v1/devices/config", { method: "POST", headers: { ...AUTH, "content-type": "text/csv" }, body: Uint8Array.from([...Buffer.from("device_id,bin_depth_mm\ncsv-\xe9,1200\n", "latin1")]) });
  assert.deepEqual([latin1.status, (await latin1.json()).error.code], [400, "invalid_csv"]);
  assert.equal((await configOf("csv-1")).status, 404);
  // A spreadsheet's byte order mark and bare LFs are read; the header's columns in any
  // order, spaces around their names dropped (a cell's are kept: its rule judges them).
  const spaced = await bulk(worker, "device_id, codec, bin_depth_mm, offset_mm, reporting_period_s, application_port, backfill\ncsv-3,,1200,,,,\n");
  assert.deepEqual(spaced.body.results.map(brief), [[0, "csv-3", null]]);
  const ok = await bulk(worker, "\uFEFFbin_depth_mm,device_id,codec,offset_mm,reporting_period_s,backfill,application_port\n1200,csv-1,,,,,\n");
  assert.deepEqual(ok.body.results.map(brief), [[0, "csv-1", null]]);
  // Another media type is refused before the body is read.
  const plain = await bulk(worker, "device_id,bin_depth_mm\ncsv-2,1200\n", "text/plain");
  assert.deepEqual([plain.status, plain.body.error.code], [415, "unsupported_media_type"]);
});

test("the documented one-liner imports the documented CSV (docs/devices.md)", async () => {
  const page = fs.readFileSync(new URL("../../docs/devices.md", import.meta.url), "utf8");
  const section = page.slice(page.indexOf("### Configuring many devices at once"));
  const command = section.match(/```sh\n([\s\S]*?)```/)[1];
  const sample = section.match(/```text\n([\s\S]*?)```/)[1];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rd-bulk-"));
  try {
    fs.writeFileSync(path.join(dir, "bins.csv"), sample);
    // Run as an operator would, curl against the worker's own address (not through `call`).
    const address = String(await worker.mf.ready).replace(/\/$/, "");
    const { stdout } = await promisify(execFile)("bash", ["-c", command], { cwd: dir, env: { ...process.env, URL: address, TOKEN } });
    const reply = JSON.parse(stdout);
    assert.deepEqual(reply.results.map(brief), [
      [0, "24E124136B502217", null],
      [1, "24E124136B502218", null],
      [2, "A84041000181A2B3", null],
    ]);
    assert.equal((await configOf("24E124136B502218")).body.application_port, 86);
    const tekelek = (await configOf("A84041000181A2B3")).body;
    assert.deepEqual([tekelek.codec, tekelek.bin_depth_mm, tekelek.offset_mm, tekelek.reporting_period_s, tekelek.backfill], ["tekelek/tek766", 1500, 80, 900, false]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the uplinks parked while the devices had no configuration are decoded, once", async () => {
  const ids = ["24E124136B500001", "24E124136B500002"];
  // Its codec from the uplink (version_ids), no bin: each uplink is parked.
  for (const id of ids) for (const mm of [400, 500, 600]) assert.equal((await tts(worker, id, `dev-${id}`, live(mm))).parked?.[0]?.code, "device_not_configured");
  const csv = `${HEADER}\n${ids.map((id) => `${id},,2000,,,,`).join("\n")}\n`;
  const first = await bulk(worker, csv);
  assert.equal(first.body.unparked_uplinks, 6);
  for (const r of first.body.results) assert.deepEqual(r.unparked, { uplinks: 3, received: 3, unique: 3, duplicates_suppressed: 0, rejected: 0, still_parked: 0 });
  for (const id of ids) assert.deepEqual((await readingsOf(worker.call, id)).map((r) => r.fill_pct), [80, 75, 70]);
  const again = await bulk(worker, csv);
  assert.equal(again.body.unparked_uplinks, 0);
  for (const id of ids) assert.equal((await readingsOf(worker.call, id)).length, 3);
});

test("more rows than BULK_CONFIG_ROWS is 413 too_many_rows, a body over MAX_BODY_BYTES 413 body_too_large: nothing applied", async () => {
  const rows = Array.from({ length: 10_001 }, (_, i) => `many-${i},,1200,,,,`);
  const r = await bulk(worker, `${HEADER}\n${rows.join("\n")}\n`);
  assert.deepEqual([r.status, r.body.error.code], [413, "too_many_rows"]);
  assert.match(r.body.error.message, /the body has 10001 rows; at most 10000 per request, nothing was applied/);
  const json = await bulk(worker, { devices: Array.from({ length: 10_001 }, (_, i) => ({ device_id: `m-${i}`, bin_depth_mm: 1 })) });
  assert.deepEqual([json.status, json.body.error.code], [413, "too_many_rows"]);
  assert.equal((await configOf("many-0")).status, 404);

  const small = await start({ vars: { MAX_BODY_BYTES: "256" } });
  try {
    const big = `${HEADER}\n${Array.from({ length: 20 }, (_, i) => `big-${i},,1200,,,,`).join("\n")}\n`;
    assert.ok(big.length > 256);
    const res = await bulk(small, big);
    assert.deepEqual([res.status, res.body.error.code], [413, "body_too_large"]);
    assert.equal((await get(small.call, "/v1/devices/big-0/config")).status, 404);
  } finally {
    await small.mf.dispose();
  }
});

test("a group object that fails answers its rows device_unavailable; the other groups' rows are applied", async () => {
  const home = "fault-home";
  const g = groupOf(home);
  // Three new devices of the failing group (so their group call registers them together), and two elsewhere.
  const inGroup = [];
  const elsewhere = [];
  for (let i = 0; inGroup.length < 3 || elsewhere.length < 2; i++) {
    const id = `fault-${i}`;
    if (groupOf(id) === g) inGroup.length < 3 && inGroup.push(id);
    else if (elsewhere.length < 2) elsewhere.push(id);
  }
  await acrossRestart({
    before: async (w) => {
      // The group's storage exists once one of its devices is configured.
      const res = await bulk(w, `${HEADER}\n${home},,1000,,,,\n`);
      assert.equal(res.body.configured, 1);
    },
    // A real fault: the group's registration of a device fails (SQLite raises).
    between: (dir) => sqlite(databases(dir, "GroupObject"), "CREATE TRIGGER no_devices BEFORE INSERT ON devices BEGIN SELECT RAISE(ABORT, 'injected fault'); END;"),
    after: async (w) => {
      const ids = [...inGroup, ...elsewhere];
      const { status, body } = await bulk(w, `${HEADER}\n${ids.map((id) => `${id},,1000,,,,`).join("\n")}\n`);
      assert.equal(status, 200);
      assert.deepEqual(body.results.map(brief), ids.map((id, i) => [i, id, inGroup.includes(id) ? "device_unavailable" : null]));
      assert.deepEqual([body.configured, body.failed], [2, 3]);
      for (const r of body.results.filter((x) => !x.ok)) assert.match(r.message, /could not register the device with its roll-up shard: injected fault/);
      // The group's call threw (registering its new devices together) and was made again,
      // once: the second answered for each device, which could not register either.
      await logSettled(w);
      const failed = logged(w, "device_call_failed").filter((l) => l.route === "devices/config");
      assert.deepEqual(failed.map((l) => [l.attempt, l.devices]), [[0, inGroup]]);
      assert.match(failed[0].error, /injected fault/);
      for (const id of inGroup) assert.equal((await get(w.call, `/v1/devices/${id}/config`)).status, 404);
      for (const id of elsewhere) assert.equal((await get(w.call, `/v1/devices/${id}/config`)).status, 200);
    },
  });
});
