// GET /v1/metrics (src/worker/metrics.js): the /v1/stats figures of the roll-up in
// Prometheus' text exposition format 0.0.4, read back by a real parser of that format
// (parse-prometheus-text-format, npm). In workerd (Miniflare) over HTTP, with a real
// local origin that refuses every delivery, so that a backlog waits.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { isDeepStrictEqual } from "node:util";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { acrossRestart, start, post, origin, until, fixture, gapsOf, putConfig, statsOf, readingsOf, databases, sqlite, TOKEN } from "../support/harness.mjs";
import { groupName } from "../../src/worker/placement.js";
import { EM500, history, live, PERIOD, tts } from "../support/em500.mjs";
import { family } from "../../src/worker/prometheus-text.js";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const { initSync, limits } = await import(new URL("reconnect_dedupe.js", pkgUrl));
initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
const VERSION = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version;
const QUIET_MS = 120_000;
// What Prometheus 3 sends by default (scrape/scrape.go `acceptHeader` over
// config.DefaultScrapeProtocols, escaping allow-utf-8).
const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

const reading = (device_id, seq, fill_pct, ts = "2026-07-16T09:00:00Z") => ({ device_id, seq, ts, fill_pct });

/** GET /v1/metrics as Prometheus would ask: the answer, its text and the parsed families by name. */
async function scrape(call, headers = { authorization: `Bearer ${TOKEN}` }) {
  const res = await call("/v1/metrics", { headers: { accept: PROMETHEUS_ACCEPT, ...headers } });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.equal(res.headers.get("content-type"), CONTENT_TYPE);
  assert.equal(res.headers.get("cache-control"), "no-store", "figures of this moment, for this token's holder only");
  return { text, families: Object.fromEntries(parsePrometheusTextFormat(text).map((f) => [f.name, f])) };
}

/** A family's samples as `{labels text: value}` (labels `k=v,...` in the family's order, "" without). */
function samples(families, name) {
  const f = families[`reconnect_dedupe_${name}`];
  assert.ok(f, `the family reconnect_dedupe_${name} is exposed`);
  return Object.fromEntries(f.metrics.map((m) => [Object.entries(m.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(","), Number(m.value)]));
}

/** A family's one sample without labels. */
const one = (families, name) => samples(families, name)[""];

/**
 * What a labelled family shows at 0 before its first count: every rejection code, as
 * the document the worker serves names them (GET /v1/openapi.json); every ChirpStack
 * `?event=` but `up` (the uplink; the others are acknowledged unread), as that document
 * names them, and every event the core acknowledges unread per route (`limits()`).
 */
async function labelValues(call) {
  const doc = await (await call("/v1/openapi.json")).json();
  const events = doc.paths["/v1/uplinks/chirpstack"].post.parameters.find((p) => p.name === "event").schema.enum;
  const core = Object.entries(limits().ignoredEvents).flatMap(([route, names]) => names.map((e) => `${route}/${e}`));
  return { codes: doc.components.schemas.RejectionCode.enum, ignored: [...core, ...events.filter((e) => e !== "up").map((e) => `chirpstack/${e}`)] };
}

/** `names` at 0, then `counts` over them. */
const fromZero = (names, counts) => ({ ...Object.fromEntries(names.map((n) => [n, 0])), ...counts });

/** /v1/stats as a Prometheus scrape shows each of its figures (docs/operations.md "Metrics (Prometheus)"); `known` from `labelValues`. */
function asMetrics(s, known) {
  return {
    devices: { "": s.devices },
    readings_received_total: { "": s.received },
    readings_unique_total: { "": s.unique },
    readings_duplicate_total: { "": s.duplicates_suppressed },
    readings_cross_path_duplicate_total: { "": s.cross_path_duplicates },
    readings_rejected_total: Object.fromEntries(Object.entries(fromZero(known.codes, s.rejected_by_code)).map(([code, n]) => [`code=${code}`, n])),
    readings_parked_total: { "": s.parked },
    seqs_recovered_total: { "": s.recovered_seqs },
    seq_resets_total: { "": s.seq_resets },
    readings_seq_reused_total: { "": s.seq_reuses },
    seqs_missing: { "": s.missing_seqs },
    delivery_backlog: { "": s.pending_deliveries },
    delivery_failed_attempts: { "": s.failed_attempts },
    ledger_rows_delivered: { "": s.delivered },
    ledger_rows: { "": s.ledger_rows },
    delivery_refused: { "": s.refused_by_origin },
    uplinks_parked: { "": s.parked_uplinks },
    events_ignored_total: Object.fromEntries(
      Object.entries(fromZero(known.ignored, s.ignored_events)).map(([name, n]) => [`route=${name.split("/")[0]},event=${name.split("/")[1]}`, n]),
    ),
    uplinks_simulated_total: { "": s.simulated_uplinks },
    backfill_requests_total: { "": s.backfill_requests.requested },
    backfill_requests_sent_total: { "": s.backfill_requests.sent },
    backfill_requests_closed_total: Object.fromEntries(["answered", "expired", "failed", "cancelled"].map((o) => [`outcome=${o}`, s.backfill_requests[o]])),
    stats_flush_interval_seconds: { "": s.stats_flush_ms / 1000 },
    build_info: { [`version=${VERSION}`]: 1 },
  };
}

/** Every family but the two read at scrape time (ages, the last flush), as `asMetrics` names them. */
function steady(families) {
  return Object.fromEntries(Object.keys(asMetrics(EMPTY_STATS, { codes: [], ignored: [] })).map((name) => [name, samples(families, name)]));
}

/** A family's samples without those at 0: what was counted. */
const counted = (families, name) => Object.fromEntries(Object.entries(samples(families, name)).filter(([, n]) => n !== 0));

const EMPTY_STATS = {
  devices: 0, received: 0, unique: 0, duplicates_suppressed: 0, cross_path_duplicates: 0, rejected_by_code: {}, parked: 0, seq_reuses: 0,
  recovered_seqs: 0, seq_resets: 0, missing_seqs: 0, pending_deliveries: 0, failed_attempts: 0, delivered: 0, ledger_rows: 0,
  refused_by_origin: 0, parked_uplinks: 0, ignored_events: {}, simulated_uplinks: 0, stats_flush_ms: 50,
  backfill_requests: { requested: 0, sent: 0, answered: 0, expired: 0, failed: 0, cancelled: 0 },
};

test("a known workload: every family has the exact value /v1/stats has, parsed by a real text-format parser", async () => {
  // The origin refuses every delivery, and the next attempt is an hour away: the backlog stays.
  const o = await origin({ answer: () => ({ status: 500 }) });
  const w = await start({ vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "50", RETRY_BASE_MS: "3600000", RETRY_MAX_MS: "3600000" } });
  try {
    const t0 = Date.now();
    // m-A: seqs 1, 2, 3 and 6 (4 and 5 missing), a replay of seq 1, one fill level out of
    // range; m-B: one reading, one with a time that is no time; one without a device.
    const burst = [
      reading("m-A", 1, 10), reading("m-A", 2, 20), reading("m-A", 3, 30), reading("m-A", 6, 60),
      reading("m-A", 1, 10),
      reading("m-A", 7, 101),
      reading("m-B", 1, 50), reading("m-B", 2, 50, "yesterday"),
      { seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 1 },
    ];
    const res = await post(w.call, "/v1/readings", burst);
    const reply = await res.json();
    assert.equal(res.status, 200, JSON.stringify(reply));
    assert.deepEqual([reply.received, reply.unique, reply.duplicates_suppressed, reply.rejected.length], [9, 5, 1, 3]);
    const codes = Object.fromEntries(reply.rejected.map((r) => [r.index, r.code]));
    assert.deepEqual(codes, { 5: "invalid_fill_pct", 7: "invalid_ts", 8: "missing_device_id" }, "three codes, as the reply names them");
    // A replay in a second request.
    assert.equal((await (await post(w.call, "/v1/readings", [reading("m-B", 1, 50)])).json()).duplicates_suppressed, 1);
    // A raw uplink its device's codec cannot read: rejected by the device object, with the codec's code.
    assert.equal((await putConfig(w.call, "A84041000000D001", EM500)).status, 200);
    const raw = await tts(w, "A84041000000D001", "bin-raw", Buffer.from([0xff, 0x00]));
    assert.deepEqual(raw.rejected.map((r) => r.code), ["invalid_payload"]);
    // ChirpStack events that are not uplinks: two types (the event's case does not matter).
    for (const [event, file] of [["join", "join"], ["status", "status"], ["STATUS", "status"]]) {
      const r = await post(w.call, `/v1/uplinks/chirpstack?event=${event}`, fixture(`chirpstack/${file}.json`));
      assert.equal(r.status, 200, await r.text());
    }
    // Delivery failed once for each device's batch: 5 readings wait, each with one failed attempt.
    const expected = {
      ...EMPTY_STATS,
      devices: 3, received: 11, unique: 5, duplicates_suppressed: 2, rejected_by_code: { invalid_fill_pct: 1, invalid_payload: 1, invalid_ts: 1, missing_device_id: 1 },
      missing_seqs: 2, pending_deliveries: 5, failed_attempts: 5, ledger_rows: 5,
      ignored_events: { "chirpstack/join": 1, "chirpstack/status": 2 },
    };
    const pick = (s) => Object.fromEntries(Object.keys(EMPTY_STATS).map((k) => [k, s[k]]));
    let last;
    await until(async () => {
      last = await statsOf(w.call);
      return isDeepStrictEqual(pick(last), expected);
    }, "/v1/stats to show the workload", QUIET_MS).catch(() => assert.deepEqual(pick(last), expected));
    const before = await statsOf(w.call);
    const t1 = Date.now();
    const { families } = await scrape(w.call);
    const t2 = Date.now();
    const after = await statsOf(w.call);
    assert.deepEqual(pick(after), pick(before), "nothing moved while scraping");

    // Exact values, family by family, and the same as /v1/stats.
    assert.deepEqual(steady(families), asMetrics(after, await labelValues(w.call)));
    assert.deepEqual(counted(families, "readings_rejected_total"), { "code=invalid_fill_pct": 1, "code=invalid_payload": 1, "code=invalid_ts": 1, "code=missing_device_id": 1 });
    assert.deepEqual(counted(families, "events_ignored_total"), { "route=chirpstack,event=join": 1, "route=chirpstack,event=status": 2 });
    assert.equal(one(families, "readings_received_total"), one(families, "readings_unique_total") + one(families, "readings_duplicate_total") + 4 + one(families, "readings_parked_total"));

    // The backlog's oldest reading is m-A's or m-B's first (one burst, one admission
    // time): its age is read at scrape time, from its admission.
    const admitted = Math.min(...[...(await readingsOf(w.call, "m-A")), ...(await readingsOf(w.call, "m-B"))].map((r) => Date.parse(r.admitted_at)));
    assert.ok(admitted >= t0 - 1 && admitted <= t1, `admitted at ${admitted}, between ${t0} and ${t1}`);
    const age = one(families, "delivery_backlog_oldest_age_seconds");
    assert.ok(age >= (t1 - admitted) / 1000 - 0.001 && age <= (t2 - admitted) / 1000 + 0.001, `age ${age} s: scraped between ${(t1 - admitted) / 1000} and ${(t2 - admitted) / 1000} s after the admission`);
    assert.ok(age * 1000 >= before.oldest_undelivered_age_ms && age * 1000 <= after.oldest_undelivered_age_ms + 1, "between the ages /v1/stats gave before and after");
    // The roll-up's staleness: when the newest flush arrived, as /v1/stats says.
    assert.equal(one(families, "stats_last_flush_timestamp_seconds") * 1000, Date.parse(after.last_flush_at));
    assert.ok(Date.parse(after.last_flush_at) >= t0 && Date.parse(after.last_flush_at) <= t1);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a fleet that never reported: every family and every label value, zeros, no age, no flush time; the build", async () => {
  const w = await start({ vars: { STATS_FLUSH_MS: "50" } });
  try {
    const { text, families } = await scrape(w.call);
    const known = await labelValues(w.call);
    assert.deepEqual(steady(families), asMetrics(EMPTY_STATS, known));
    // A rate() or a dashboard panel has a series before the first count: each code
    // and event at 0, each outcome too. The codes are the core's, the codecs' and the
    // parking's; the events every network server's.
    for (const code of ["invalid_fill_pct", "invalid_payload", "parking_full"]) assert.ok(known.codes.includes(code), code);
    for (const event of ["chirpstack/join", "ttn/join_accept", "helium/join", "loriot/tx"]) assert.ok(known.ignored.includes(event), event);
    assert.ok(!known.ignored.includes("chirpstack/up") && !known.ignored.includes("ttn/uplink_message"));
    assert.deepEqual(samples(families, "readings_rejected_total"), Object.fromEntries(known.codes.map((code) => [`code=${code}`, 0])));
    const label = (name) => `route=${name.split("/")[0]},event=${name.split("/")[1]}`;
    assert.deepEqual(samples(families, "events_ignored_total"), Object.fromEntries(known.ignored.map((name) => [label(name), 0])));
    assert.deepEqual(samples(families, "build_info"), { [`version=${VERSION}`]: 1 }, "package.json's version");
    assert.equal(one(families, "delivery_backlog_oldest_age_seconds"), 0);
    assert.deepEqual(families.reconnect_dedupe_stats_last_flush_timestamp_seconds?.metrics ?? [], [], "no sample before the first flush");
    // The format's rules: HELP and TYPE first in every family, families in name order,
    // counters (and only they) end in _total, every line ends with \n.
    assert.ok(text.endsWith("\n"));
    const names = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
    assert.equal(names.length, 26);
    assert.deepEqual(names.map(([n]) => n), names.map(([n]) => n).sort());
    for (const [name, type] of names) {
      assert.equal(name.endsWith("_total"), type === "counter", name);
      assert.match(text, new RegExp(`^# HELP ${name} .+\\n# TYPE ${name} ${type}\\n`, "m"));
    }
    const s = await statsOf(w.call);
    assert.deepEqual([s.last_flush_at, s.rejected_by_code, s.oldest_undelivered_age_ms], [null, {}, null]);
  } finally {
    await w.mf.dispose();
  }
});

test("the route: the token as everywhere (Bearer, Basic, AUTH_HEADER), HEAD, 405 for POST, never stored by a cache", async () => {
  const w = await start({ vars: { AUTH_HEADER: "X-Ingest-Token" } });
  try {
    const none = await w.call("/v1/metrics");
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, "unauthorized");
    assert.equal(none.headers.get("www-authenticate"), 'Basic realm="reconnect-dedupe", charset="UTF-8"');
    const wrong = await w.call("/v1/metrics", { headers: { authorization: "Bearer not-the-token" } });
    assert.equal(wrong.status, 401);
    // Prometheus `authorization: {credentials_file}` (Bearer), `basic_auth` and `http_headers`.
    await scrape(w.call);
    await scrape(w.call, { authorization: `Basic ${btoa(`prometheus:${TOKEN}`)}` });
    await scrape(w.call, { "x-ingest-token": TOKEN });
    const head = await w.call("/v1/metrics", { method: "HEAD", headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), CONTENT_TYPE);
    assert.equal(head.headers.get("cache-control"), "no-store");
    assert.equal(await head.text(), "");
    // A cache between Prometheus and the worker (a reverse proxy in front of a
    // self-hosted workerd) must neither answer a later scrape with these figures nor
    // give them to a request without the token: with AUTH_HEADER the token is not in
    // Authorization, the one header a shared cache knows to keep apart (RFC 9111,
    // section 3.5). /v1/stats, the same figures, alike.
    const stats = await w.call("/v1/stats", { headers: { "x-ingest-token": TOKEN } });
    assert.equal(stats.status, 200);
    assert.equal(stats.headers.get("cache-control"), "no-store");
    const postRes = await post(w.call, "/v1/metrics", "{}");
    assert.equal(postRes.status, 405);
    assert.equal(postRes.headers.get("allow"), "GET, HEAD");
    assert.equal((await postRes.json()).error.code, "method_not_allowed");
    // An Accept that names only OpenMetrics is answered in the text format all the same:
    // Prometheus reads what the Content-Type says.
    const om = await w.call("/v1/metrics", { headers: { authorization: `Bearer ${TOKEN}`, accept: "application/openmetrics-text;version=1.0.0" } });
    assert.equal(om.status, 200);
    assert.equal(om.headers.get("content-type"), CONTENT_TYPE);
  } finally {
    await w.mf.dispose();
  }
});

test("no label value comes from the request: a hostile ChirpStack event is refused and counted nowhere", async () => {
  const w = await start({ vars: { STATS_FLUSH_MS: "50" } });
  try {
    for (const event of ['join"} 1\nreconnect_dedupe_devices 999', "join\\", `x${"y".repeat(1000)}`]) {
      const r = await post(w.call, `/v1/uplinks/chirpstack?event=${encodeURIComponent(event)}`, fixture("chirpstack/join.json"));
      assert.equal(r.status, 400);
      assert.equal((await r.json()).error.code, "unknown_event");
    }
    assert.equal((await post(w.call, "/v1/uplinks/chirpstack?event=join", fixture("chirpstack/join.json"))).status, 200);
    const { families } = await scrape(w.call);
    assert.deepEqual(counted(families, "events_ignored_total"), { "route=chirpstack,event=join": 1 });
    assert.equal(one(families, "devices"), 0);
  } finally {
    await w.mf.dispose();
  }
});

test("label values and HELP text are escaped as the format says: a hostile value cannot add a line", () => {
  const hostile = 'a"b\\c\nreconnect_dedupe_devices 999\n# TYPE x gauge';
  const text = family("reconnect_dedupe_readings_rejected_total", "counter", "back\\slash and\nnewline", [[{ code: hostile }, 2], [{ code: "plain" }, 1]]);
  assert.equal(
    text,
    "# HELP reconnect_dedupe_readings_rejected_total back\\\\slash and\\nnewline\n" +
      "# TYPE reconnect_dedupe_readings_rejected_total counter\n" +
      'reconnect_dedupe_readings_rejected_total{code="a\\"b\\\\c\\nreconnect_dedupe_devices 999\\n# TYPE x gauge"} 2\n' +
      'reconnect_dedupe_readings_rejected_total{code="plain"} 1\n',
  );
  assert.equal(text.split("\n").length, 5, "four lines and the final line feed");
  const parsed = parsePrometheusTextFormat(text);
  assert.deepEqual(
    parsed.map((f) => [f.name, f.type, f.metrics.map((m) => [m.labels.code, m.value])]),
    [["reconnect_dedupe_readings_rejected_total", "COUNTER", [[hostile, "2"], ["plain", "1"]]]],
  );
  assert.equal(parsed[0].help, "back\\slash and\nnewline");
});

test("rejections counted without their codes (an earlier version's shards, devices and worker) show as not_recorded, adding up to rejected", async () => {
  const settle = async (call, check, what) => {
    let s;
    await until(async () => check((s = await statsOf(call))), what, QUIET_MS).catch(() => assert.fail(`${what}: ${JSON.stringify(s)}`));
    return s;
  };
  await acrossRestart({
    vars: { STATS_FLUSH_MS: "50" },
    before: async (first) => {
      const r = await post(first.call, "/v1/readings", [reading("m-OLD", 1, 101), reading("m-OLD", 2, 102), { seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 1 }]);
      assert.equal(r.status, 200);
      await settle(first.call, (s) => s.rejected === 3, "the first rejections");
    },
    // As the version before the codes left its storage: no `rejected:<code>` counters in
    // the groups' figures or the shards' totals, no `labelled` figures in the shards' rows.
    between: (dir) => {
      const uncoded = (json) => `(SELECT json_group_object(key, value) FROM json_each(${json}) WHERE key NOT LIKE 'rejected:%')`;
      sqlite(
        databases(dir, "FleetObject"),
        `DELETE FROM counters WHERE name LIKE 'rejected:%'; UPDATE group_figures SET figures = json_remove(figures, '$.labelled'); UPDATE group_totals SET totals = ${uncoded("totals")};`,
      );
      sqlite(
        databases(dir, "GroupObject"),
        `UPDATE figure_log SET devices = (SELECT json_group_object(d.key, json_set(d.value, '$.counters', json(${uncoded("d.value, '$.counters'")}))) FROM json_each(figure_log.devices) AS d) WHERE devices != '{}';`,
      );
    },
    after: async (second) => {
      const old = await statsOf(second.call);
      assert.deepEqual([old.rejected, old.rejected_by_code], [3, { not_recorded: 3 }]);
      const r = await post(second.call, "/v1/readings", [reading("m-OLD", 3, 103), reading("m-OLD", 4, 40)]);
      assert.equal(r.status, 200);
      // A worker of the earlier version, still running during a deployment, calls the
      // device with the count of its refused readings, not their codes.
      const ns = await second.mf.getDurableObjectNamespace("GROUPS");
      const earlier = await ns.get(ns.idFromName(groupName("m-OLD"))).ingest({ device_id: "m-OLD", readings: [], refused: 2, route: "readings", burst_id: crypto.randomUUID() });
      assert.equal(earlier.ok, true);
      const s = await settle(second.call, (s) => s.rejected === 6 && s.unique === 1, "the new rejections");
      assert.deepEqual(s.rejected_by_code, { invalid_fill_pct: 1, not_recorded: 5 });
      const { families } = await scrape(second.call);
      assert.deepEqual(counted(families, "readings_rejected_total"), { "code=invalid_fill_pct": 1, "code=not_recorded": 5 });
      assert.equal(one(families, "readings_received_total"), 7);
    },
  });
});

test("a change of reporting_period_s that drops a device's open gaps reaches the roll-up without a further uplink", async () => {
  const w = await start({ vars: { STATS_FLUSH_MS: "50" } });
  try {
    const eui = "A84041000000D002";
    assert.equal((await putConfig(w.call, eui, EM500)).status, 200);
    await tts(w, eui, "bin-period", history([0, 1, 2, 5]));
    await until(async () => (await statsOf(w.call)).missing_seqs === 2, "the gap in the roll-up");
    // The window starts over in the new unit (docs/devices.md "Configure a device"): its gap is gone.
    assert.equal((await putConfig(w.call, eui, { ...EM500, reporting_period_s: PERIOD / 2 })).status, 200);
    await until(async () => {
      const { families } = await scrape(w.call);
      return one(families, "seqs_missing") === 0;
    }, "the dropped gap in the roll-up");
    assert.equal((await statsOf(w.call)).missing_seqs, 0);
  } finally {
    await w.mf.dispose();
  }
});

test("history requests by outcome: requested, sent, then answered, expired, failed or cancelled, as /v1/stats counts them", async () => {
  // The Things Stack's downlink API: it refuses bin-fail's key (a final 403), accepts the
  // rest; it answers after the device flushed its uplink's figures, so that the outcome,
  // recorded after the reply, must be flushed on its own.
  const ns = await origin({ answer: (r) => ({ status: r.path.includes("/devices/bin-fail/") ? 403 : 200, delay: 300 }) });
  const base = `http://127.0.0.1:${ns.port}`;
  const vars = { STATS_FLUSH_MS: "50", BACKFILL: "on", BACKFILL_AFTER_MS: "0", BACKFILL_INTERVAL_MS: "0", BACKFILL_WAIT_MS: "1", BACKFILL_HOSTS: base };
  const w = await start({ vars });
  const push = (dev) => ({ "x-downlink-push": `${base}/api/v3/as/applications/bins/webhooks/dedupe/devices/${dev}/down/push`, "x-downlink-apikey": `NNSXS.KEY-OF-${dev}` });
  const uplink = (eui, dev, bytes) => tts(w, eui, dev, bytes, push(dev));
  const request = async (eui) => (await gapsOf(w.call, eui)).backfill;
  try {
    const devices = { answered: "A84041000000E001", expired: "A84041000000E002", failed: "A84041000000E003", cancelled: "A84041000000E004" };
    for (const [what, eui] of Object.entries(devices)) {
      const dev = what === "failed" ? "bin-fail" : `bin-${what}`;
      assert.equal((await putConfig(w.call, eui, EM500)).status, 200);
      await uplink(eui, dev, history([0, 1, 2, 5])); // the replay leaves slots 3 and 4 missing
      await uplink(eui, dev, live(700)); // asks for them
      await until(async () => {
        const b = await request(eui);
        return what === "failed" ? b.recent[0]?.state === "failed" : b.open?.state === "sent";
      }, `${what}: the request's first outcome`);
      if (what === "answered") await uplink(eui, dev, history([3, 4]));
      if (what === "expired") await uplink(eui, dev, live(701)); // BACKFILL_WAIT_MS (1 ms) has passed
      if (what === "cancelled") assert.equal((await post(w.call, `/v1/devices/${eui}/reset`, "")).status, 200);
      const b = await request(eui);
      assert.deepEqual([b.open, b.recent[0]?.state], [null, what]);
    }
    const expected = { requested: 4, sent: 3, answered: 1, expired: 1, failed: 1, cancelled: 1 };
    let s;
    await until(async () => isDeepStrictEqual((s = await statsOf(w.call)).backfill_requests, expected), "the outcomes in the roll-up", QUIET_MS).catch(() =>
      assert.deepEqual(s.backfill_requests, expected),
    );
    const { families } = await scrape(w.call);
    assert.deepEqual(steady(families), asMetrics(await statsOf(w.call), await labelValues(w.call)));
    assert.deepEqual(
      [one(families, "backfill_requests_total"), one(families, "backfill_requests_sent_total"), samples(families, "backfill_requests_closed_total")],
      [4, 3, { "outcome=answered": 1, "outcome=cancelled": 1, "outcome=expired": 1, "outcome=failed": 1 }],
    );
  } finally {
    await w.mf.dispose();
    await ns.close();
  }
});
