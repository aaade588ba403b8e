// Raw payloads of real bin sensors through the worker in workerd: uplinks that carry
// only their bytes (tests/fixtures/webhooks/raw/, sources in that folder's README)
// decoded with the device's configuration or the uplink's own hints, history records
// keyed by device time across a rejoin, one LORIOT frame posted twice (rx and gw), a
// sentinel, a port the codec does not read, and an unconfigured device whose uplinks
// are parked and decoded when it is configured.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { assertReconciles, fixture, putConfig, readingsOf, sendUplink, start, statsOf, until } from "../support/harness.mjs";

let worker;
before(async () => {
  worker = await start({ vars: { STATS_FLUSH_MS: "10" } });
});
after(() => worker.mf.dispose());

const raw = (name) => JSON.parse(fixture(`raw/${name}`));
const sendTo = (w, route, body) => sendUplink(w.call, route, body);
const send = (route, body) => sendTo(worker, route, body);
const configure = (id, body, w = worker) => putConfig(w.call, id, body);
const ledger = (id) => readingsOf(worker.call, id);
const stats = () => statsOf(worker.call);
const reconciles = assertReconciles;
/** A TTS body's device, as the worker names it (the DevEUI in upper case). */
const ttsDevice = (body) => body.end_device_ids.dev_eui.toUpperCase();
/** The worker's log lines of `event`, parsed. */
const logged = (event) => worker.lines.filter((l) => l.includes(`"event":"${event}"`)).map((l) => JSON.parse(l));

test("a configured EM500-UDL's history uplink becomes one reading per record, keyed by device time; after a rejoin it is suppressed", async () => {
  const first = raw("tts-em500-udl-history.json");
  const id = ttsDevice(first);
  // The codec comes from the uplink's version_ids: the configuration gives the bin only.
  assert.equal((await configure(id, { bin_depth_mm: 1500 })).status, 200);

  const a = await send("ttn", first);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  reconciles(a.body);
  assert.deepEqual(a.body.decoded, { codec: "milesight-iot/em500-udl", f_port: 85 });
  assert.deepEqual([a.body.received, a.body.unique, a.body.duplicates_suppressed, a.body.rejected.length], [2, 2, 0, 0]);
  assert.deepEqual(a.body.admitted.map((r) => r.index), [0, 1]);
  const rows = await ledger(id);
  // Records 1665561758 (1234 mm) and 1665565242 (1232 mm) of a 1500 mm bin.
  assert.deepEqual(
    rows.map(({ seq, ts, fill_pct }) => ({ seq, ts, fill_pct })),
    [
      { seq: 1665561758, ts: "2022-10-12T08:02:38+00:00", fill_pct: 17.7 },
      { seq: 1665565242, ts: "2022-10-12T09:00:42+00:00", fill_pct: 17.9 },
    ],
  );
  assert.deepEqual(a.body.admitted.map((r) => r.key), rows.map((r) => r.key));

  // The same records after a rejoin: a new session, frame counter 1, a day later.
  const b = await send("ttn", raw("tts-em500-udl-history-rejoin.json"));
  assert.equal(b.status, 200, JSON.stringify(b.body));
  reconciles(b.body);
  assert.deepEqual([b.body.received, b.body.unique, b.body.duplicates_suppressed], [2, 0, 2]);
  assert.deepEqual(b.body.duplicates, [0, 1]);

  // A later uplink repeating the second record and bringing a new one.
  const c = await send("ttn", raw("tts-em500-udl-history-more.json"));
  reconciles(c.body);
  assert.deepEqual([c.body.received, c.body.unique, c.body.duplicates_suppressed], [2, 1, 1]);
  assert.equal((await ledger(id)).length, 3);
});

test("a LORIOT rx and gw of one DF703 frame are one reading; the next frame is another", async () => {
  const rx = raw("loriot-df703-rx.json");
  const id = rx.EUI.toUpperCase();
  assert.equal((await configure(id, { codec: "dingtek/df703", bin_depth_mm: 2500, offset_mm: 100 })).status, 200);

  const a = await send("loriot", rx);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.deepEqual([a.body.received, a.body.unique, a.body.rejected.length], [1, 1, 0], JSON.stringify(a.body));
  assert.deepEqual(a.body.decoded, { codec: "dingtek/df703", f_port: rx.port });
  const b = await send("loriot", raw("loriot-df703-gw.json"));
  assert.deepEqual([b.body.received, b.body.unique, b.body.duplicates_suppressed], [1, 0, 1], JSON.stringify(b.body));
  const c = await send("loriot", raw("loriot-df703-next.json"));
  assert.deepEqual([c.body.received, c.body.unique], [1, 1], JSON.stringify(c.body));
  const rows = await ledger(id);
  assert.equal(rows.length, 2);
  // seq is the DF703's own frame counter, one apart.
  assert.equal(rows[1].seq - rows[0].seq, 1);
});

test("a DF703 counter that wraps at 65 535 keeps counting up: neither a replay nor a conflict", async () => {
  const body = raw("loriot-df703-rx.json");
  const id = "A0B1C2D3E4F50001";
  await configure(id, { codec: "dingtek/df703", bin_depth_mm: 2500 });
  // The 17-byte frame with its counter (bytes 13 ..= 14) set.
  const frame = (counter, fcnt) => {
    const hex = body.data.slice(0, 26) + counter.toString(16).padStart(4, "0") + body.data.slice(30);
    return { ...body, EUI: id, fcnt, ts: body.ts + fcnt * 600_000, data: hex };
  };
  for (const [counter, fcnt] of [[65_534, 1], [65_535, 2], [0, 3], [1, 4]]) {
    const r = await send("loriot", frame(counter, fcnt));
    assert.equal(r.body.unique, 1, JSON.stringify(r.body));
  }
  assert.deepEqual((await ledger(id)).map((r) => r.seq), [65_534, 65_535, 65_536, 65_537]);
});

test("ChirpStack device tags choose the codec and give the bin: decoded without a configuration call", async () => {
  const body = raw("chirpstack-df703-tags.json");
  const r = await send("chirpstack?event=up", body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual([r.body.received, r.body.unique], [1, 1], JSON.stringify(r.body));
  assert.equal(r.body.decoded.codec, "dingtek/df703");
  const [row] = await ledger(body.deviceInfo.devEui.toUpperCase());
  assert.ok(row.fill_pct >= 0 && row.fill_pct <= 100);
});

test("a sentinel is rejected no_reading, never 0 % or 100 %; a port the codec does not read is rejected unsupported_port", async () => {
  const body = raw("helium-ldds75-sentinel.json");
  const id = body.dev_eui.toUpperCase();
  await configure(id, { codec: "dragino/ldds75", bin_depth_mm: 1000 });
  const r = await send("helium", body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  reconciles(r.body);
  assert.equal(r.body.unique, 0);
  assert.deepEqual(r.body.rejected.map((x) => [x.device_id, x.code]), [[id, "no_reading"]]);

  const other = await send("helium", { ...body, port: 9 });
  reconciles(other.body);
  assert.deepEqual(other.body.rejected.map((x) => [x.index, x.field, x.code]), [[0, "payload", "unsupported_port"]]);
  assert.match(other.body.rejected[0].message, /dragino\/ldds75/);
  assert.deepEqual(await ledger(id), []);
  // The bytes are in the log: a person can still read them with another codec.
  const hex = Buffer.from(body.payload, "base64").toString("hex");
  assert.ok(logged("payload_not_decoded").some((l) => l.device_id === id && l.payload === hex && l.code === "unsupported_port"));
});

test("a Milesight set to another application port: kept there until its config names the port, then decoded; 85 is still read, any other port kept", async () => {
  const fixed = raw("tts-no-version-ids.json"); // an EM310-UDL frame, 2116 mm
  const id = "A0B1C2D3E4F50086";
  const on = (f_port, f_cnt, received_at) => ({ ...fixed, end_device_ids: { ...fixed.end_device_ids, dev_eui: id, device_id: "bin-86" }, uplink_message: { ...fixed.uplink_message, f_port, f_cnt, received_at } });
  const kept = (f_port) => `device "${id}" sends on port ${f_port}, which milesight-iot/em310-udl reads only as its configuration's application_port (its sensor sends on 85 unless set to another): the uplink is kept undecoded, and decoded when PUT /v1/devices/{device_id}/config gives application_port ${f_port}`;
  assert.equal((await send("ttn", on(86, 1, "2026-07-16T09:00:00Z"))).body.parked?.[0]?.code, "device_not_configured");
  // Configured as from the factory: the parked uplink stays parked (port 86 is not read) ...
  const factory = await configure(id, { codec: "milesight-iot/em310-udl", bin_depth_mm: 3000 });
  assert.deepEqual([factory.body.unparked.uplinks, factory.body.unparked.still_parked], [0, 1]);
  // ... and a live uplink there is kept too, saying how to read it (a network server
  // does not send it again: refused, it would be lost).
  const live = await send("ttn", on(86, 2, "2026-07-16T09:10:00Z"));
  reconciles(live.body);
  assert.deepEqual(live.body.parked.map((p) => [p.code, p.message]), [["device_not_configured", kept(86)]]);
  assert.deepEqual([live.body.unique, live.body.rejected], [0, []]);
  // The port named: both kept uplinks are decoded with it.
  const set = await configure(id, { codec: "milesight-iot/em310-udl", bin_depth_mm: 3000, application_port: 86 });
  assert.deepEqual([set.body.application_port, set.body.unparked.uplinks, set.body.unparked.unique, set.body.unparked.still_parked], [86, 2, 2, 0]);
  // A sensor reset to its factory settings sends on 85 again: still read.
  const reset = await send("ttn", on(85, 3, "2026-07-16T09:20:00Z"));
  reconciles(reset.body);
  assert.equal(reset.body.unique, 1, JSON.stringify(reset.body));
  // Each read as port 85's bytes are: 2116 mm in a 3000 mm bin.
  assert.deepEqual((await ledger(id)).map((r) => [r.ts, r.fill_pct]).sort(), [["2026-07-16T09:00:00+00:00", 29.5], ["2026-07-16T09:10:00+00:00", 29.5], ["2026-07-16T09:20:00+00:00", 29.5]]);
  // Set to yet another port: kept, naming it.
  const moved = await send("ttn", on(87, 4, "2026-07-16T09:30:00Z"));
  reconciles(moved.body);
  assert.deepEqual(moved.body.parked.map((p) => [p.code, p.message]), [["device_not_configured", kept(87)]]);
});

test("an unconfigured device's uplinks are parked, not lost, and decoded when it is configured", async () => {
  // A device of its own (the fixture's DevEUI is the EM500-UDL's above).
  const id = "A0B1C2D3E4F50004";
  const fixed = raw("tts-no-version-ids.json");
  const body = { ...fixed, end_device_ids: { ...fixed.end_device_ids, dev_eui: id, device_id: "bin-4" } };
  const before = await stats();

  const a = await send("ttn", body);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  reconciles(a.body);
  assert.equal(a.body.unique, 0);
  assert.deepEqual(a.body.parked.map((p) => [p.index, p.device_id, p.code]), [[0, id, "device_not_configured"]]);
  assert.match(a.body.parked[0].message, /codec and bin_depth_mm/);
  assert.deepEqual(a.body.verdicts, [{ index: 0, verdict: "parked", code: "device_not_configured" }]);
  // The same frame again (a redelivery) is kept once.
  const copy = await send("ttn", body);
  reconciles(copy.body);
  assert.deepEqual([copy.body.duplicates_suppressed, copy.body.parked], [1, undefined]);
  assert.deepEqual(await ledger(id), []);
  await until(async () => (await stats()).parked_uplinks === before.parked_uplinks + 1, "the parked uplink in /v1/stats");
  const s = await stats();
  assert.equal(s.parked, before.parked + 1);
  assert.equal(s.received, s.unique + s.duplicates_suppressed + s.rejected + s.parked);

  // A configuration without a codec still cannot decode it: it stays parked.
  const partial = await configure(id, { bin_depth_mm: 1000 });
  assert.deepEqual(partial.body.unparked, { uplinks: 0, received: 0, unique: 0, duplicates_suppressed: 0, rejected: 0, still_parked: 1 });

  const done = await configure(id, { codec: "milesight-iot/em310-udl", bin_depth_mm: 1000 });
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.deepEqual(done.body.unparked, { uplinks: 1, received: 1, unique: 1, duplicates_suppressed: 0, rejected: 0, still_parked: 0 });
  const rows = await ledger(id);
  assert.equal(rows.length, 1);
  // Keyed by the frame's receive time: the same frame delivered again now is its duplicate.
  const again = await send("ttn", body);
  assert.deepEqual([again.body.unique, again.body.duplicates_suppressed], [0, 1], JSON.stringify(again.body));
  await until(async () => (await stats()).parked_uplinks === before.parked_uplinks, "no parked uplink in /v1/stats");
});

test("uplinks the configured codec does not read stay parked without holding back the ones after them: a PUT decodes past a full page of them", async () => {
  const rx = raw("loriot-df703-rx.json");
  const id = "A0B1C2D3E4F5C0DE";
  const frame = (fcnt, port) => ({ ...rx, EUI: id, fcnt, port });
  // More uplinks on a port the DF703 sends no levels on than one call decodes
  // (UNPARK_PER_CALL), then one it reads; all parked (no configuration yet).
  const unread = 1_000;
  for (let fcnt = 1; fcnt <= unread; fcnt++) assert.equal((await send("loriot", frame(fcnt, 85))).body.parked?.[0]?.code, "device_not_configured");
  assert.equal((await send("loriot", frame(unread + 1, rx.port))).body.parked?.[0]?.code, "device_not_configured");
  const put = await configure(id, { codec: "dingtek/df703", bin_depth_mm: 2500 });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.deepEqual([put.body.unparked.uplinks, put.body.unparked.unique, put.body.unparked.still_parked], [1, 1, unread]);
  assert.equal((await ledger(id)).length, 1);
});

test("a Tekelek without its reporting period is parked, and decoded once the period is configured", async () => {
  const body = raw("tts-em310-udl-live.json");
  const id = "A0B1C2D3E4F50002";
  const tek = { ...body, end_device_ids: { ...body.end_device_ids, dev_eui: id, device_id: "tek-1" } };
  tek.uplink_message = { ...body.uplink_message, version_ids: { ...body.uplink_message.version_ids, brand_id: "tekelek", model_id: "tek766" } };
  // The TEK766 measurement frame of tests/vectors/devices/tekelek-tek766.json (fPort 1).
  const vector = JSON.parse(fixture("../../vectors/devices/tekelek-tek766.json")).vectors.find((v) => v.fPort === 1 && v.hex.startsWith("10"));
  tek.uplink_message.f_port = 1;
  tek.uplink_message.frm_payload = Buffer.from(vector.hex, "hex").toString("base64");
  const a = await send("ttn", tek);
  assert.equal(a.body.parked?.[0]?.code, "device_not_configured", JSON.stringify(a.body));
  // The bin alone is not enough: the codec (from version_ids) times its readings by the period.
  const bin = await configure(id, { bin_depth_mm: 2000 });
  assert.deepEqual([bin.body.unparked.uplinks, bin.body.unparked.still_parked], [0, 1], JSON.stringify(bin.body));
  const b = await send("ttn", { ...tek, uplink_message: { ...tek.uplink_message, f_cnt: tek.uplink_message.f_cnt + 1 } });
  assert.match(b.body.parked?.[0]?.message ?? "", /has no reporting_period_s \(tekelek\/tek766 times its readings by it\)/, JSON.stringify(b.body));
  const done = await configure(id, { bin_depth_mm: 2000, reporting_period_s: 3600 });
  // Both uplinks (the same four readings, one counter apart, the same receive time): four readings.
  assert.deepEqual([done.body.unparked.uplinks, done.body.unparked.received, done.body.unparked.unique], [2, 8, 4], JSON.stringify(done.body));
  assert.equal((await ledger(id)).length, 4);
});

test("a Tekelek whose schedule is half a period off the clock's grid: the readings the next uplink repeats are its duplicates", async () => {
  // Period 600 s, uplink B 604 s after A, B's last three readings A's first three.
  // Before, received at 09:04:58 / 09:15:02, B's slot was 09:20 (its receive time
  // rounded on the grid from the epoch): 4 new readings, 0 duplicates, conflicts.
  const body = raw("tts-em310-udl-live.json");
  const id = "A0B1C2D3E4F50012";
  const uplink = (fCnt, hex, received_at) => {
    const m = { ...body.uplink_message, f_port: 1, f_cnt: fCnt, frm_payload: Buffer.from(hex, "hex").toString("base64"), received_at };
    m.version_ids = { ...m.version_ids, brand_id: "tekelek", model_id: "tek766" };
    return { ...body, received_at, end_device_ids: { ...body.end_device_ids, dev_eui: id, device_id: "tek-phase" }, uplink_message: m };
  };
  await configure(id, { codec: "tekelek/tek766", bin_depth_mm: 3000, reporting_period_s: 600 });
  const a = await send("ttn", uplink(40, "1000000001121B7701131BAA01121BA90114F274", "2026-07-16T09:04:58Z"));
  assert.deepEqual([a.body.unique, a.body.duplicates_suppressed], [4, 0], JSON.stringify(a.body));
  const b = await send("ttn", uplink(41, "1000000001101B7701121B7701131BAA01121BA9", "2026-07-16T09:15:02Z"));
  assert.deepEqual([b.body.unique, b.body.duplicates_suppressed], [1, 3], JSON.stringify(b.body));
  const rows = await ledger(id);
  assert.deepEqual(rows.map((r) => r.ts).sort(), ["08:30", "08:40", "08:50", "09:00", "09:10"].map((t) => `2026-07-16T${t}:00+00:00`));
  assert.ok(rows.every((r) => r.verdict === "admitted"), JSON.stringify(rows));
  // The next one, 597 s later (jitter the other way): one new, three duplicates again.
  const c = await send("ttn", uplink(42, "1000000001111B7701101B7701121B7701131BAA", "2026-07-16T09:24:59Z"));
  assert.deepEqual([c.body.unique, c.body.duplicates_suppressed], [1, 3], JSON.stringify(c.body));
});

test("Simulate uplink with only bytes answers the decoded verdicts and stores nothing", async () => {
  const body = raw("tts-em500-udl-history.json");
  const id = "A0B1C2D3E4F50003";
  const sim = { ...body, simulated: true, end_device_ids: { ...body.end_device_ids, dev_eui: id, device_id: "sim-1" } };
  // Unknown device, codec from version_ids, no bin: it would be parked.
  const a = await send("ttn", sim);
  assert.equal(a.body.simulated, true);
  assert.equal(a.body.parked?.[0]?.code, "device_not_configured", JSON.stringify(a.body));
  await configure(id, { bin_depth_mm: 1500 });
  const b = await send("ttn", sim);
  assert.deepEqual([b.body.simulated, b.body.stored, b.body.received, b.body.unique], [true, false, 2, 2], JSON.stringify(b.body));
  assert.deepEqual(await ledger(id), []);
});
