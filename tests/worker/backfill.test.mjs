// Asking a sensor for what is missing (docs/sequence-health.md "Asking the sensor for what is missing") in workerd, against local
// stubs of The Things Stack's webhook downlink API and ChirpStack's REST API (real HTTP
// servers on 127.0.0.1): a Milesight EM500's history gap that its replay did not close
// is asked for once, with the right bytes, for the right device, through the network
// server that delivered its uplink; the records that come back close the gap; a gap
// that closed by itself is never asked for; failures are retried with backoff or given
// up; the switches, the host allowlist and "one open request per device" hold.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chirpstack, EM500, history, live, PERIOD, request, SLOT0, T0, tts as ttsUplink } from "../support/em500.mjs";
import { gapsOf, get, logged, logSettled, origin, post, putConfig, start, TOKEN, until } from "../support/harness.mjs";

/** The Things Stack's and ChirpStack's downlink APIs: one stub, answers decided per test. */
let answer = () => ({ status: 200 });
const ns = await origin({ answer: (r) => answer(r) });
const base = `http://127.0.0.1:${ns.port}`;
const BACKFILL = { BACKFILL: "on", BACKFILL_AFTER_MS: "0", BACKFILL_INTERVAL_MS: "0", BACKFILL_HOSTS: `http://127.0.0.1:${ns.port}`, STATS_FLUSH_MS: "10" };
const worker = await start({ vars: { ...BACKFILL, RETRY_BASE_MS: "1", CHIRPSTACK_API_URL: base, CHIRPSTACK_API_TOKEN: "cs-token" } });
after(async () => {
  await worker.mf.dispose();
  await ns.close();
});

const ttsPath = (dev) => `/api/v3/as/applications/bins/webhooks/dedupe/devices/${dev}/down/push`;
/** A TTS uplink with `dev`'s downlink headers (at this stub) unless others are given. */
const tts = (w, eui, dev, bytes, headers = ttsHeaders(dev), f_port = 85) => ttsUplink(w, eui, dev, bytes, headers, f_port);
const ttsHeaders = (dev, host = base) => ({ "x-downlink-push": `${host}${ttsPath(dev)}`, "x-downlink-replace": `${host}${ttsPath(dev).replace(/push$/, "replace")}`, "x-downlink-apikey": `NNSXS.KEY-OF-${dev}` });
const health = (w, id) => gapsOf(w.call, id);
const to = (path) => ns.requests.filter((r) => r.path === path);
const slots = (g) => g.gaps.map((x) => [x.from - SLOT0, x.to - SLOT0]);

test("a gap dated after now (the sensor's clock runs ahead) is never asked for, and one that reaches now only up to its last past slot", async () => {
  const eui = "A84041000000B0F1";
  assert.equal((await putConfig(worker.call, eui, EM500)).status, 200);
  const nowSlot = Math.floor(Date.now() / 1000 / PERIOD) - SLOT0;
  // Records dated two days ahead, with two slots missing between them.
  const ahead = nowSlot + 288;
  await tts(worker, eui, "bin-ahead", history([ahead, ahead + 1, ahead + 4]));
  assert.deepEqual(slots(await health(worker, eui)), [[ahead + 2, ahead + 3]]);
  await tts(worker, eui, "bin-ahead", live(700));
  await tts(worker, eui, "bin-ahead", live(710));
  await logSettled(worker);
  assert.equal(to(ttsPath("bin-ahead")).length, 0, "no downlink for a range the sensor has not reached");
  assert.equal((await health(worker, eui)).backfill.open, null);
  // A gap from the past into the future: asked for up to the last slot wholly past.
  const eui2 = "A84041000000B0F2";
  assert.equal((await putConfig(worker.call, eui2, EM500)).status, 200);
  await tts(worker, eui2, "bin-across", history([nowSlot - 3, nowSlot + 3]));
  await tts(worker, eui2, "bin-across", live(700));
  const [sent] = await until(() => to(ttsPath("bin-across")).length && to(ttsPath("bin-across")), "the downlink push");
  const range = sent.body.downlinks[0].frm_payload;
  const asked = Buffer.from(range, "base64");
  assert.equal(asked.readUInt32LE(2), T0 + (nowSlot - 2) * PERIOD);
  // It ends where the slot the worker's clock was in begins (the slot of the request's
  // moment, at or after the one this test started in).
  const end = asked.readUInt32LE(6) + 1;
  assert.equal((end - T0) % PERIOD, 0);
  assert.ok(end >= T0 + nowSlot * PERIOD && end <= Date.now() / 1000, `${end}`);
});

test("a gap below device time 0 (native readings with negative seqs) is never asked for, and nothing fails", async () => {
  // The sensor cannot hold a time before 1970: before, such a range was sent wrapped
  // around (u32), then the core's history request refused it on every uplink.
  const eui = "A84041000000B0F3";
  assert.equal((await putConfig(worker.call, eui, EM500)).status, 200);
  const native = (seq) => ({ device_id: eui, seq, ts: "2026-07-16T09:00:00Z", fill_pct: 10 + seq / 100 });
  assert.equal((await post(worker.call, "/v1/readings", [native(-10), native(-5)])).status, 200);
  assert.deepEqual((await health(worker, eui)).gaps.map((g) => [g.from, g.to]), [[-9, -6]]);
  await tts(worker, eui, "bin-negative", live(700));
  await logSettled(worker);
  assert.equal(to(ttsPath("bin-negative")).length, 0);
  assert.equal((await health(worker, eui)).backfill.open, null);
  assert.deepEqual(logged(worker, "backfill_step_failed"), []);
});

test("BACKFILL_MAX_AGE_MS: a gap older than the sensor keeps is never asked for, one across the bound only from it", async () => {
  // Before, the oldest gap was asked for however old: a sensor that keeps an hour of
  // records was asked for those of last week, and answered nothing, each time.
  const hour = 3_600_000;
  const w = await start({ vars: { ...BACKFILL, BACKFILL_MAX_AGE_MS: String(hour), RETRY_BASE_MS: "1" } });
  try {
    const eui = "A84041000000B0A1";
    assert.equal((await putConfig(w.call, eui, EM500)).status, 200);
    const n = Math.floor(Date.now() / 1000 / PERIOD) - SLOT0;
    // Gaps: slot n-13 (over two hours ago), n-10 ... n-5 (across the hour), n-3.
    await tts(w, eui, "bin-age", history([n - 14, n - 12, n - 11, n - 4, n - 2]));
    assert.deepEqual(slots(await gapsOf(w.call, eui)), [[n - 13, n - 13], [n - 10, n - 5], [n - 3, n - 3]]);
    await tts(w, eui, "bin-age", live(700));
    const [sent] = await until(() => to(ttsPath("bin-age")).length && to(ttsPath("bin-age")), "the downlink push");
    const asked = Buffer.from(sent.body.downlinks[0].frm_payload, "base64");
    // From the first slot that ended within the hour (at the request's moment), to the gap's end.
    const first = (asked.readUInt32LE(2) - T0) / PERIOD;
    const bound = Math.ceil((sent.at - hour) / 1000 / PERIOD) - 1 - SLOT0;
    assert.equal(first, bound, `asked from slot n${first - n}`);
    assert.ok(first > n - 10 && first <= n - 5, `n${first - n}`);
    assert.equal(asked.readUInt32LE(6), T0 + (n - 4) * PERIOD - 1);
    assert.equal(to(ttsPath("bin-age")).length, 1);
  } finally {
    await w.mf.dispose();
  }
});

test("an EM500 set to another application port is asked on that port, and the records it sends back there close the gap", async () => {
  const eui = "A84041000000B086";
  assert.equal((await putConfig(worker.call, eui, { ...EM500, application_port: 86 })).status, 200);
  const on86 = (bytes) => tts(worker, eui, "bin-port-86", bytes, ttsHeaders("bin-port-86"), 86);
  await on86(history([0, 1, 2, 5]));
  assert.deepEqual(slots(await health(worker, eui)), [[3, 4]]);
  await on86(live(700));
  const [sent] = await until(() => to(ttsPath("bin-port-86")).length && to(ttsPath("bin-port-86")), "the downlink push");
  assert.deepEqual(sent.body, { downlinks: [{ f_port: 86, frm_payload: request(3, 4).toString("base64"), priority: "NORMAL" }] });
  const asked = await until(async () => (await health(worker, eui)).backfill.open, "the request recorded");
  assert.equal(asked.f_port, 86);
  await on86(history([3, 4]));
  assert.deepEqual(slots(await health(worker, eui)), []);
});

test("TTS: a gap the replay left open is asked for once, with fd6c + its time range, at the device's push URL with its key; the records that come back close it", async () => {
  const eui = "A84041000000B001";
  assert.equal((await putConfig(worker.call, eui, EM500)).status, 200);
  // The reconnect replay: slots 0, 1, 2 and 5 arrive, 3 and 4 do not.
  await tts(worker, eui, "bin-1", history([0, 1, 2, 5]));
  const open = await health(worker, eui);
  assert.deepEqual(slots(open), [[3, 4]]);
  // Noticed by this very burst: not asked for yet.
  assert.equal(open.backfill.open, null);
  assert.equal(to(ttsPath("bin-1")).length, 0);

  // The next uplink (a live reading): the gap is older than BACKFILL_AFTER_MS (0).
  const next = await tts(worker, eui, "bin-1", live(700));
  const [sent] = await until(() => to(ttsPath("bin-1")).length && to(ttsPath("bin-1")), "the downlink push");
  assert.equal(sent.method, "POST");
  assert.equal(sent.headers.authorization, "Bearer NNSXS.KEY-OF-bin-1");
  assert.match(sent.headers["content-type"], /^application\/json/);
  assert.deepEqual(sent.body, { downlinks: [{ f_port: 85, frm_payload: request(3, 4).toString("base64"), priority: "NORMAL" }] });
  const asked = await until(async () => {
    const h = await health(worker, eui);
    return h.backfill.open?.state === "sent" && h.backfill.open;
  }, "the request recorded as sent");
  assert.deepEqual([asked.from - SLOT0, asked.to - SLOT0, asked.via, asked.f_port, asked.payload, asked.attempts], [3, 4, "tts", 85, request(3, 4).toString("hex"), 1]);
  assert.deepEqual([Date.parse(asked.start), Date.parse(asked.end)], [(T0 + 3 * PERIOD) * 1000, (T0 + 5 * PERIOD - 1) * 1000]);
  await logSettled(worker);
  const [line] = logged(worker, "backfill_requested", next.burst_id);
  assert.ok(line, "a backfill_requested line");
  assert.deepEqual([line.level, line.device_id, line.via, line.payload, line.from - SLOT0, line.to - SLOT0], ["INFO", eui, "tts", request(3, 4).toString("hex"), 3, 4]);

  // More uplinks while it is open: no second request.
  await tts(worker, eui, "bin-1", live(710));
  await tts(worker, eui, "bin-1", history([5]));
  const still = await health(worker, eui);
  assert.equal(still.backfill.open.id, asked.id);
  assert.deepEqual(still.backfill.recent, []);
  assert.equal(to(ttsPath("bin-1")).length, 1);

  // The sensor answers with its stored records 3 and 4: stored, and the gap is closed.
  const back = await tts(worker, eui, "bin-1", history([3, 4]));
  assert.equal(back.unique, 2);
  const closed = await health(worker, eui);
  assert.deepEqual(closed.gaps, []);
  assert.equal(closed.backfill.open, null);
  assert.equal(closed.backfill.recent[0].state, "answered");
  assert.equal(closed.backfill.recent[0].recovered, 2);
  await logSettled(worker);
  const [answered] = logged(worker, "backfill_answered", back.burst_id);
  assert.deepEqual([answered?.level, answered?.recovered], ["INFO", 2]);
  assert.equal(to(ttsPath("bin-1")).length, 1);
});

test("a gap the replay closed by itself is never asked for; another device's gap goes to its own URL", async () => {
  const quiet = "A84041000000B002";
  const other = "A84041000000B003";
  await putConfig(worker.call, quiet, EM500);
  await putConfig(worker.call, other, EM500);
  await tts(worker, quiet, "bin-2", history([0, 1, 3]));
  await tts(worker, other, "bin-3", history([0, 2]));
  // bin-2's replay brings slot 2 before anything asked for it.
  await tts(worker, quiet, "bin-2", history([2]));
  await tts(worker, quiet, "bin-2", live(650));
  await tts(worker, other, "bin-3", live(650));
  const [sent] = await until(() => to(ttsPath("bin-3")).length && to(ttsPath("bin-3")), "bin-3's push");
  assert.deepEqual(sent.body.downlinks[0].frm_payload, request(1, 1).toString("base64"));
  assert.equal(sent.headers.authorization, "Bearer NNSXS.KEY-OF-bin-3");
  const h = await health(worker, quiet);
  assert.deepEqual(h.gaps, []);
  assert.deepEqual([h.backfill.open, h.backfill.recent], [null, []]);
  assert.equal(to(ttsPath("bin-2")).length, 0);
});

test("concurrent uplinks of one device open one request", async () => {
  const eui = "A84041000000B004";
  await putConfig(worker.call, eui, EM500);
  await tts(worker, eui, "bin-4", history([0, 3]));
  await Promise.all([700, 701, 702, 703].map((mm) => tts(worker, eui, "bin-4", live(mm))));
  await until(async () => (await health(worker, eui)).backfill.open?.state === "sent", "sent");
  await tts(worker, eui, "bin-4", live(704));
  assert.equal(to(ttsPath("bin-4")).length, 1);
});

test("ChirpStack: the request goes to CHIRPSTACK_API_URL's device queue with the API token", async () => {
  const eui = "A84041000000C001";
  await putConfig(worker.call, eui, EM500);
  await chirpstack(worker, eui, history([10, 11, 14]));
  await chirpstack(worker, eui, live(800));
  const path = `/api/devices/${eui.toLowerCase()}/queue`;
  const [sent] = await until(() => to(path).length && to(path), "the enqueue");
  assert.equal(sent.headers["grpc-metadata-authorization"], "Bearer cs-token");
  assert.deepEqual(sent.body, { queueItem: { confirmed: false, fPort: 85, data: request(12, 13).toString("base64") } });
  const back = await chirpstack(worker, eui, history([12, 13]));
  assert.equal(back.unique, 2);
  assert.equal((await health(worker, eui)).backfill.recent[0].state, "answered");
});

test("a request waiting for its retry goes to the port the device's config names when it is sent again", async () => {
  const eui = "A84041000000B087";
  assert.equal((await putConfig(worker.call, eui, EM500)).status, 200);
  let calls = 0;
  answer = (r) => (r.path === ttsPath("bin-port-87") ? { status: calls++ === 0 ? 503 : 200 } : { status: 200 });
  try {
    await tts(worker, eui, "bin-port-87", history([0, 1, 2, 5]));
    await tts(worker, eui, "bin-port-87", live(700));
    await until(async () => (await health(worker, eui)).backfill.open?.last_error, "the failure recorded");
    // The sensor was set to send on 87 meanwhile, and its configuration says so.
    assert.equal((await putConfig(worker.call, eui, { ...EM500, application_port: 87 })).status, 200);
    await tts(worker, eui, "bin-port-87", live(701), ttsHeaders("bin-port-87"), 87);
    const sent = await until(() => to(ttsPath("bin-port-87")).length === 2 && to(ttsPath("bin-port-87")), "the retry");
    assert.deepEqual(sent.map((r) => r.body.downlinks[0].f_port), [85, 87]);
    const open = await until(async () => {
      const o = (await health(worker, eui)).backfill.open;
      return o?.state === "sent" && o;
    }, "the retry accepted");
    assert.equal(open.f_port, 87);
  } finally {
    answer = () => ({ status: 200 });
  }
});

test("a refused push (401) is given up at once; a failed one (503) is retried at a later uplink", async () => {
  const refused = "A84041000000D001";
  const flaky = "A84041000000D002";
  for (const id of [refused, flaky]) await putConfig(worker.call, id, EM500);
  let flakyCalls = 0;
  answer = (r) => {
    if (r.path === ttsPath("bin-d1")) return { status: 401 };
    if (r.path === ttsPath("bin-d2")) return { status: flakyCalls++ === 0 ? 503 : 200 };
    return { status: 200 };
  };
  try {
    await tts(worker, refused, "bin-d1", history([0, 2]));
    await tts(worker, refused, "bin-d1", live(600));
    const failed = await until(async () => (await health(worker, refused)).backfill.recent[0], "the refusal recorded");
    assert.equal(failed.state, "failed");
    assert.match(failed.last_error, /answered 401/);
    await tts(worker, refused, "bin-d1", live(601));
    assert.equal(to(ttsPath("bin-d1")).length, 1);
    await logSettled(worker);
    assert.equal(logged(worker, "backfill_failed").filter((l) => l.device_id === refused)[0]?.level, "ERROR");

    await tts(worker, flaky, "bin-d2", history([0, 2]));
    await tts(worker, flaky, "bin-d2", live(600));
    const retry = await until(async () => {
      const o = (await health(worker, flaky)).backfill.open;
      return o?.last_error && o;
    }, "the failure recorded");
    assert.deepEqual([retry.state, retry.attempts], ["queued", 1]);
    // RETRY_BASE_MS is 1: the next uplink sends it again.
    await tts(worker, flaky, "bin-d2", live(601));
    const sent = await until(async () => {
      const o = (await health(worker, flaky)).backfill.open;
      return o?.state === "sent" && o;
    }, "the retry accepted");
    assert.equal(sent.attempts, 2);
    assert.equal(to(ttsPath("bin-d2")).length, 2);
    await logSettled(worker);
    assert.ok(logged(worker, "backfill_retry").some((l) => l.device_id === flaky && l.level === "WARN" && l.retry_at));
  } finally {
    answer = () => ({ status: 200 });
  }
});

test("off per device, and a push URL on a host BACKFILL_HOSTS does not allow: no request, the uplink is stored", async () => {
  const off = "A84041000000E001";
  const elsewhere = "A84041000000E002";
  assert.equal((await putConfig(worker.call, off, { ...EM500, backfill: false })).body.backfill, false);
  await putConfig(worker.call, elsewhere, EM500);
  await tts(worker, off, "bin-e1", history([0, 2]));
  await tts(worker, off, "bin-e1", live(600));
  await tts(worker, elsewhere, "bin-e2", history([0, 2]), ttsHeaders("bin-e2", "https://attacker.example"));
  const stored = await tts(worker, elsewhere, "bin-e2", live(600), ttsHeaders("bin-e2", "https://attacker.example"));
  assert.equal(stored.unique, 1);
  for (const id of [off, elsewhere]) assert.deepEqual((await health(worker, id)).backfill, { open: null, recent: [] });
  await logSettled(worker);
  const [refusedLine] = logged(worker, "downlink_target_refused", stored.burst_id);
  assert.match(refusedLine?.reason ?? "", /BACKFILL_HOSTS does not allow/);
  assert.equal(to(ttsPath("bin-e1")).length + to(ttsPath("bin-e2")).length, 0);
  // Switched on again (null: BACKFILL decides), the next uplink asks.
  await putConfig(worker.call, off, EM500);
  await tts(worker, off, "bin-e1", live(601));
  await until(() => to(ttsPath("bin-e1")).length === 1, "bin-e1's push");
});

test("a sent request whose records do not come within BACKFILL_WAIT_MS expires, and its range is not asked again; the next gap is", async () => {
  const w = await start({ vars: { ...BACKFILL, BACKFILL_WAIT_MS: "1", RETRY_BASE_MS: "3600000" } });
  try {
    const eui = "A84041000000F001";
    await putConfig(w.call, eui, EM500);
    await tts(w, eui, "bin-f1", history([0, 2, 4]));
    await tts(w, eui, "bin-f1", live(600));
    await until(async () => (await health(w, eui)).backfill.open?.state === "sent", "sent");
    await tts(w, eui, "bin-f1", live(601)); // expires the first; asks for slot 3
    const h = await until(async () => {
      const x = await health(w, eui);
      return x.backfill.open?.state === "sent" && x;
    }, "the second request");
    assert.deepEqual([h.backfill.recent[0].state, h.backfill.recent[0].from - SLOT0], ["expired", 1]);
    assert.deepEqual([h.backfill.open.from - SLOT0, h.backfill.open.to - SLOT0], [3, 3]);
    await tts(w, eui, "bin-f1", live(602)); // expires the second; nothing left to ask
    const last = await health(w, eui);
    assert.equal(last.backfill.open, null);
    assert.deepEqual(last.backfill.recent.map((r) => r.state), ["expired", "expired"]);
    assert.equal(to(ttsPath("bin-f1")).length, 2);
  } finally {
    await w.mf.dispose();
  }
});

test("BACKFILL off (the default): a gap is never asked for", async () => {
  const w = await start({ vars: { BACKFILL_HOSTS: BACKFILL.BACKFILL_HOSTS } });
  try {
    const eui = "A84041000000F002";
    await putConfig(w.call, eui, EM500);
    await tts(w, eui, "bin-f2", history([0, 2]));
    await tts(w, eui, "bin-f2", live(600));
    const h = await health(w, eui);
    assert.deepEqual(slots(h), [[1, 1]]);
    assert.deepEqual(h.backfill, { open: null, recent: [] });
    assert.equal(to(ttsPath("bin-f2")).length, 0);
  } finally {
    await w.mf.dispose();
  }
});

test("bad switches: a device's backfill that is not a boolean is 400 invalid_backfill; a bad BACKFILL, BACKFILL_HOSTS or a ChirpStack URL without its token is 500 invalid_config", async () => {
  for (const value of ["yes", 1, "true"]) {
    const r = await putConfig(worker.call, "A84041000000F003", { ...EM500, backfill: value });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "invalid_backfill");
  }
  for (const vars of [{ BACKFILL: "yes" }, { BACKFILL_HOSTS: "https://x.example" }, { BACKFILL_HOSTS: "http://*.example:80" }, { CHIRPSTACK_API_URL: "https://cs.example" }, { CHIRPSTACK_API_URL: "ftp://cs.example", CHIRPSTACK_API_TOKEN: "t" }]) {
    const w = await start({ vars });
    try {
      const r = await get(w.call, "/v1/health");
      assert.equal(r.status, 500, JSON.stringify(vars));
      assert.equal(r.body.error.code, "invalid_config");
      assert.ok(!JSON.stringify(r.body).includes("cs-token"));
    } finally {
      await w.mf.dispose();
    }
  }
});

test("a reset of the device's memory closes its open request as cancelled, and says so", async () => {
  const eui = "A84041000000F004";
  await putConfig(worker.call, eui, EM500);
  await tts(worker, eui, "bin-f4", history([0, 2]));
  await tts(worker, eui, "bin-f4", live(600));
  await until(async () => (await health(worker, eui)).backfill.open?.state === "sent", "sent");
  const res = await worker.call(`/v1/devices/${eui}/reset`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
  const reset = await res.json();
  assert.equal(res.status, 200, JSON.stringify(reset));
  assert.equal(reset.backfill_cancelled, true);
  const h = await health(worker, eui);
  assert.deepEqual([h.backfill.open, h.backfill.recent[0].state], [null, "cancelled"]);
  // The next uplink asks for nothing: the window starts over.
  await tts(worker, eui, "bin-f4", live(601));
  assert.equal((await health(worker, eui)).backfill.open, null);
  assert.equal(to(ttsPath("bin-f4")).length, 1);
});
