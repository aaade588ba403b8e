// A verdict per reading (issue 12, first part): in the ingest reply (`verdicts`), the
// ledger (`verdict`, `conflicts_with`) and the origin body (the same two members).
// In workerd (Miniflare) over HTTP, with a real local origin; a retried device call
// driven on the group object directly (as store-retry.test.mjs does). Then the verdicts
// under faults and odd input: multi-device bursts with one device failing, conflicts by
// the `device_id:seq:` prefix with device ids holding `:`, `%`, `_`, `;` or non-ASCII,
// the first admission a duplicate of an unparked uplink names, and a key re-admitted
// after its TTL; faults are SQLite triggers put in by python3 (harness `sqlite`).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

/** An admitted reading's arrival when it is its device's newest by device time (docs/bin-state.md). */
const NEWEST = { arrival: "newest", late_by_ms: null };
import { start, post, get, origin, until, logSettled, tempDir, databases, sqlite, fixture } from "../support/harness.mjs";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const reading = (device_id, seq, fill_pct, ts = "2026-07-16T09:00:00Z") => ({ device_id, seq, ts, fill_pct });
const keyOf = (r) => pkg.idempotencyKey(r);

async function ingest(call, burst) {
  const res = await post(call, "/v1/readings", burst);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  // The reconciliation the README promises, and one verdict per reading in index order.
  assert.equal(body.received, body.unique + body.duplicates_suppressed + body.rejected.length + (body.parked?.length ?? 0));
  assert.deepEqual(body.verdicts.map((v) => v.index), [...Array(body.received).keys()]);
  return body;
}

const ledger = async (call, device) => (await get(call, `/v1/devices/${encodeURIComponent(device)}/readings?limit=1000`)).body.readings;
const byKey = (rows) => new Map(rows.map((r) => [r.key, r]));

/** One verdict per index, in order, and the counts reconcile, whatever the status. */
function whole(body) {
  assert.equal(body.received, body.unique + body.duplicates_suppressed + body.rejected.length + (body.parked?.length ?? 0) + (body.not_stored?.length ?? 0), JSON.stringify(body));
  assert.deepEqual(body.verdicts.map((v) => v.index), [...Array(body.received).keys()], JSON.stringify(body.verdicts));
}

test("each verdict in the reply, the ledger and the origin body; a duplicate names its first admission and burst", async () => {
  const o = await origin();
  const w = await start({ vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "50" } });
  try {
    const D = "bin-V1";
    const a1 = reading(D, 1, 10);
    const a2 = reading(D, 2, 20);
    const first = await ingest(w.call, [a1, a2]);
    assert.deepEqual(first.verdicts, [
      { index: 0, verdict: "admitted", key: keyOf(a1), ...NEWEST },
      { index: 1, verdict: "admitted", key: keyOf(a2), ...NEWEST },
    ]);
    const b3 = reading(D, 3, 30);
    const c2 = reading(D, 2, 25); // seq 2 again, other content
    const second = await ingest(w.call, [a1, b3, c2, reading(D, 4, 101), b3]);
    // The members existing clients read are as they were.
    assert.deepEqual(second.admitted, [{ index: 1, key: keyOf(b3) }, { index: 2, key: keyOf(c2) }]);
    assert.deepEqual([second.duplicates, second.rejected.map((r) => [r.index, r.code])], [[0, 4], [[3, "invalid_fill_pct"]]]);
    const rows = byKey(await ledger(w.call, D));
    assert.deepEqual(second.verdicts, [
      { index: 0, verdict: "duplicate", key: keyOf(a1), first_admitted_at: rows.get(keyOf(a1)).admitted_at, first_burst_id: first.burst_id },
      { index: 1, verdict: "admitted", key: keyOf(b3), ...NEWEST },
      { index: 2, verdict: "conflict", key: keyOf(c2), conflicts_with: keyOf(a2), ...NEWEST },
      { index: 3, verdict: "rejected", code: "invalid_fill_pct" },
      // A copy within the burst: its first admission is this burst's.
      { index: 4, verdict: "duplicate", key: keyOf(b3), first_admitted_at: rows.get(keyOf(b3)).admitted_at, first_burst_id: second.burst_id },
    ]);
    // The ledger: each row's verdict and link.
    const view = (rows) => [...rows.values()].map((r) => [r.seq, r.verdict, r.conflicts_with]);
    assert.deepEqual(view(rows), [
      [1, "admitted", null],
      [2, "admitted", null],
      [3, "admitted", null],
      [2, "conflict", keyOf(a2)],
    ]);
    // The origin body: the same two members on every reading.
    await until(() => new Set(o.accepted()).size === 4, "the four readings delivered");
    const sent = o.requests.filter((r) => r.ok).flatMap((r) => r.body.readings);
    assert.deepEqual(
      sent.map((r) => [r.key, r.verdict, r.conflicts_with]),
      [...rows.values()].map((r) => [r.key, r.verdict, r.conflicts_with]),
    );
    assert.deepEqual(Object.keys(sent[0]), ["key", "device_id", "seq", "ts", "fill_pct", "admitted_at", "verdict", "conflicts_with", "arrival", "late_by_ms"]);
    // Counted once, in `seq_reuses` (the verdict's count; /v1/stats has no second name for it).
    const stats = await until(async () => {
      const { body } = await get(w.call, "/v1/stats");
      return body.unique === 4 && body.pending_deliveries === 0 && body;
    }, "the figures flushed");
    assert.deepEqual([stats.seq_reuses, "conflicts" in stats], [1, false]);
  } finally {
    await w.mf.dispose();
    await o.close();
  }
});

test("a counter reset (a battery swap: seq 4 and 5 again, other content) links each conflict to the stored reading with its seq, the newest one", async () => {
  const w = await start();
  try {
    const D = "bin-V2";
    const at = (m) => `2026-07-16T${String(9 + Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}:00Z`;
    const life1 = [4, 5, 6].map((seq, i) => reading(D, seq, 40 + i, at(10 * i)));
    await ingest(w.call, life1);
    // The battery is swapped at 09:30: the counter starts again at 0.
    const life2 = [0, 1, 2, 3, 4, 5].map((seq, i) => reading(D, seq, 50 + i, at(40 + 10 * i)));
    const reset = await ingest(w.call, life2);
    assert.deepEqual(
      reset.verdicts.map((v) => [life2[v.index].seq, v.verdict, v.conflicts_with]),
      [
        [0, "admitted", undefined],
        [1, "admitted", undefined],
        [2, "admitted", undefined],
        [3, "admitted", undefined],
        [4, "conflict", keyOf(life1[0])],
        [5, "conflict", keyOf(life1[1])],
      ],
    );
    // A third reading with seq 5 conflicts with the newest stored one (the second life's),
    // and a second seq 7 in one burst with the first, stored by that same burst.
    const third = reading(D, 5, 99, at(200));
    const s7 = [reading(D, 7, 70, at(210)), reading(D, 7, 71, at(211))];
    const more = await ingest(w.call, [third, ...s7]);
    assert.deepEqual(
      more.verdicts.map((v) => [v.verdict, v.conflicts_with]),
      [
        ["conflict", keyOf(life2[5])],
        ["admitted", undefined],
        ["conflict", keyOf(s7[0])],
      ],
    );
    // A replay of the second life's seq 5 is a duplicate of its burst, not a conflict.
    const replay = await ingest(w.call, [life2[5]]);
    assert.deepEqual([replay.verdicts[0].verdict, replay.verdicts[0].first_burst_id, replay.unique], ["duplicate", reset.burst_id, 0]);
    const rows = await ledger(w.call, D);
    assert.deepEqual(
      rows.filter((r) => r.verdict === "conflict").map((r) => [r.key, r.conflicts_with]),
      [
        [keyOf(life2[4]), keyOf(life1[0])],
        [keyOf(life2[5]), keyOf(life1[1])],
        [keyOf(third), keyOf(life2[5])],
        [keyOf(s7[1]), keyOf(s7[0])],
      ],
    );
  } finally {
    await w.mf.dispose();
  }
});

test("a retried device call (attempt > 0) answers the verdicts, first admissions and links the first call answered", async () => {
  const w = await start();
  try {
    const D = "bin-V3";
    const a1 = reading(D, 1, 10);
    const a2 = reading(D, 2, 20);
    const first = await ingest(w.call, [a1, a2]);
    const text = JSON.stringify([a1, reading(D, 3, 30), reading(D, 2, 25), reading(D, 4, 101), reading(D, 3, 30)]);
    const second = await ingest(w.call, text);
    assert.deepEqual(second.verdicts.map((v) => v.verdict), ["duplicate", "admitted", "conflict", "rejected", "duplicate"]);
    // The worker's retry of a call whose answer was lost: the same plan and burst id.
    const plan = JSON.parse(pkg.parseUplink("readings", new TextEncoder().encode(text), { maxReadings: 10_000 }));
    const { readings } = plan.devices[0];
    const ns = await w.mf.getDurableObjectNamespace("DEVICES");
    const retried = await ns.get(ns.idFromName(D)).ingest({ device_id: D, readings, refused: 1, route: "readings", burst_id: second.burst_id, attempt: 1 });
    assert.equal(retried.ok, true);
    // The keyed readings are the reply's indices 0, 1, 2, 4 (3 was refused while routing).
    const answered = [0, 1, 2, 4].map((i) => second.verdicts[i]);
    assert.deepEqual([...retried.verdicts], [2, 0, 1, 2]);
    assert.deepEqual(retried.notes, [
      { first_admitted_at: answered[0].first_admitted_at, first_burst_id: first.burst_id },
      // An admitted one's arrival, as the first call stored it.
      { ...NEWEST, collection: null },
      { conflicts_with: keyOf(a2), ...NEWEST, collection: null },
      { first_admitted_at: answered[3].first_admitted_at, first_burst_id: second.burst_id },
    ]);
    // Nothing stored twice; the ledger's verdicts unchanged.
    assert.deepEqual((await ledger(w.call, D)).map((r) => [r.seq, r.verdict]), [[1, "admitted"], [2, "admitted"], [3, "admitted"], [2, "conflict"]]);
  } finally {
    await w.mf.dispose();
  }
});

test("a webhook uplink (The Things Stack) answers verdicts too; its Simulate uplink answers admitted or duplicate, naming the stored admission", async () => {
  const w = await start();
  try {
    const eui = "E0000000000000A5";
    const uplink = (seq, fill_pct, simulated) => {
      const v = JSON.parse(fs.readFileSync(new URL("../fixtures/webhooks/tts/simulated_uplink.json", import.meta.url), "utf8"));
      v.end_device_ids.dev_eui = eui;
      v.uplink_message.decoded_payload = { seq, ts: "2026-07-16T09:00:00Z", fill_pct };
      if (!simulated) delete v.simulated;
      return JSON.stringify(v);
    };
    const send = async (body) => (await post(w.call, "/v1/uplinks/ttn", body)).json();
    const first = await send(uplink(1, 20, false));
    const key = keyOf(reading(eui, 1, 20));
    assert.deepEqual(first.verdicts, [{ index: 0, verdict: "admitted", key, ...NEWEST }]);
    const again = await send(uplink(1, 20, false));
    const [row] = await ledger(w.call, eui);
    const duplicate = { index: 0, verdict: "duplicate", key, first_admitted_at: row.admitted_at, first_burst_id: first.burst_id };
    assert.deepEqual(again.verdicts, [duplicate]);
    const simulated = await send(uplink(1, 20, true));
    assert.deepEqual([simulated.simulated, simulated.verdicts], [true, [duplicate]]);
    const other = await send(uplink(1, 21, true));
    assert.deepEqual(other.verdicts.map((v) => v.verdict), ["admitted"], "a simulated seq reuse is not told apart");
  } finally {
    await w.mf.dispose();
  }
});

test("readings that share one seq: each conflict names the one stored before it, and the rows read grow with the readings, not with their square", async () => {
  // Before, each conflict range-scanned and sorted every stored row of its seq: 8 000
  // readings of one device with seq 0 took 8.5–27 s, and held every other device of
  // the process meanwhile. Counted here in rows read (the SQL cursors' own counters,
  // benches/metered-worker.js), not in time.
  const w = await start({ script: "benches/metered-worker.js" });
  try {
    const D = "bin-same-seq";
    const BURSTS = 4;
    const EACH = 500;
    const at = (i) => new Date(Date.UTC(2026, 6, 16, 9) + i * 60_000).toISOString();
    const sent = [];
    for (let b = 0; b < BURSTS; b++) {
      const burst = Array.from({ length: EACH }, (_, k) => reading(D, 0, (b * EACH + k) % 100, at(b * EACH + k)));
      sent.push(...burst);
      const body = await ingest(w.call, burst);
      assert.equal(body.unique, EACH);
    }
    // Each conflict names the newest stored reading of seq 0 before it: the previous one.
    const rows = await ledger(w.call, D);
    const byKeyOf = new Map(rows.map((r) => [r.key, r]));
    for (let i = 1; i < EACH; i++) {
      const row = byKeyOf.get(keyOf(sent[i]));
      assert.deepEqual([row.verdict, row.conflicts_with], ["conflict", keyOf(sent[i - 1])], `reading ${i}`);
    }
    await logSettled(w);
    const read = w.lines
      .filter((l) => l.startsWith('{"event":"meter"'))
      .map((l) => JSON.parse(l))
      .filter((c) => c.kind === "rpc")
      .reduce((n, c) => n + c.rows_read, 0);
    // Linear: a few rows a reading, and one scan of the seq's rows a burst. A scan per
    // conflict would read about (4 × 500)² / 2 = 2 000 000.
    assert.ok(read < 20 * BURSTS * EACH, `${read} rows read for ${BURSTS * EACH} readings of one seq`);
  } finally {
    await w.mf.dispose();
  }
});

test("a multi-device burst, indices interleaved, one device failing: only its readings are not_stored; the others keep their verdicts and links", async () => {
  const dir = tempDir();
  try {
    const [A, B, C] = ["bin-MA", "bin-MB", "bin-MC"];
    const a1 = reading(A, 1, 10);
    const b1 = reading(B, 1, 10);
    let first;
    const w1 = await start({ persist: dir });
    try {
      const res = await post(w1.call, "/v1/readings", [a1, b1]);
      first = await res.json();
      assert.equal(res.status, 200);
    } finally {
      await w1.mf.dispose();
    }
    // B's storage refuses every new row (a trigger in each device file, matching B only).
    sqlite(databases(dir, "GroupObject"), `CREATE TRIGGER refuse_b BEFORE INSERT ON readings WHEN NEW.device_id = '${B}' BEGIN SELECT RAISE(ABORT, 'injected'); END;`);
    const w = await start({ persist: dir });
    try {
      const a1x = reading(A, 1, 11); // seq 1 again, other content: a conflict with a1
      const burst = [reading(B, 2, 20), a1, a1x, reading(C, 1, 5), b1, reading(A, 2, 101), reading(B, 3, 30), reading(C, 1, 6)];
      const res = await post(w.call, "/v1/readings", burst);
      const body = await res.json();
      assert.equal(res.status, 503, JSON.stringify(body));
      whole(body);
      assert.deepEqual(body.not_stored, [0, 4, 6]);
      const c1 = burst[3];
      const c1x = burst[7];
      assert.deepEqual(body.verdicts, [
        { index: 0, verdict: "not_stored" },
        { index: 1, verdict: "duplicate", key: keyOf(a1), first_admitted_at: body.verdicts[1].first_admitted_at, first_burst_id: first.burst_id },
        { index: 2, verdict: "conflict", key: keyOf(a1x), conflicts_with: keyOf(a1), ...NEWEST },
        { index: 3, verdict: "admitted", key: keyOf(c1), ...NEWEST },
        { index: 4, verdict: "not_stored" },
        { index: 5, verdict: "rejected", code: "invalid_fill_pct" },
        { index: 6, verdict: "not_stored" },
        { index: 7, verdict: "conflict", key: keyOf(c1x), conflicts_with: keyOf(c1), ...NEWEST },
      ]);
      assert.equal(typeof body.verdicts[1].first_admitted_at, "string");
      // Each device's ledger holds only its own rows and links.
      assert.deepEqual((await ledger(w.call, B)).map((r) => r.seq), [1]);
      assert.deepEqual((await ledger(w.call, C)).map((r) => [r.seq, r.verdict, r.conflicts_with]), [[1, "admitted", null], [1, "conflict", keyOf(c1)]]);
    } finally {
      await w.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("conflicts are found by the device's own `device_id:seq:` prefix: ids with ':', '%', '_', ';' and non-ASCII never link to another seq or device", async () => {
  const w = await start();
  try {
    // "a" seq 1 and "a:1" seq 2 would share the text "a:1:" if ids mixed; "a:1" seq 12
    // vs seq 1 and "a;" vs "a:" probe the range's ends; '%' and '_' are LIKE's wildcards.
    const ids = ["a", "a:1", "a:", "a;", "a%", "a_", "a%_:1", "bin-ä:ß", "桶:1"];
    const firsts = new Map();
    for (const id of ids) {
      const rows = [reading(id, 1, 10), reading(id, 12, 10), reading(id, 2, 10), reading(id, 10, 10)];
      const res = await post(w.call, "/v1/readings", rows);
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.deepEqual(body.verdicts.map((v) => v.verdict), ["admitted", "admitted", "admitted", "admitted"], id);
      firsts.set(id, rows);
    }
    for (const id of ids) {
      const [one, twelve] = firsts.get(id);
      const reuse = [reading(id, 1, 55), reading(id, 12, 55), reading(id, 1, 66)];
      const res = await post(w.call, "/v1/readings", reuse);
      const body = await res.json();
      whole(body);
      assert.deepEqual(
        body.verdicts.map((v) => [v.verdict, v.conflicts_with]),
        [
          ["conflict", keyOf(one)],
          ["conflict", keyOf(twelve)],
          ["conflict", keyOf(reuse[0])], // the newest with seq 1: this burst's own
        ],
        id,
      );
    }
  } finally {
    await w.mf.dispose();
  }
});

test("a duplicate of an unparked uplink names a burst some reply gave (README: 'the earlier burst's id as its reply gave it')", async () => {
  const w = await start();
  try {
    const id = "A0B1C2D3E4F5A7A7";
    const fixed = JSON.parse(fixture("raw/tts-no-version-ids.json"));
    const body = { ...fixed, end_device_ids: { ...fixed.end_device_ids, dev_eui: id, device_id: "bin-a7" } };
    const send = async () => (await post(w.call, "/v1/uplinks/ttn", body)).json();
    const parked = await send();
    assert.deepEqual(parked.verdicts, [{ index: 0, verdict: "parked", code: "device_not_configured" }]);
    const put = await w.call(`/v1/devices/${id}/config`, {
      method: "PUT",
      headers: { authorization: "Bearer test-token", "content-type": "application/json" },
      body: JSON.stringify({ codec: "milesight-iot/em310-udl", bin_depth_mm: 1000 }),
    });
    const configured = await put.json();
    assert.equal(configured.unparked.unique, 1, JSON.stringify(configured));
    const again = await send();
    whole(again);
    assert.equal(again.verdicts[0].verdict, "duplicate");
    // The only burst ids any reply gave for this device: the parked uplink's (the PUT's reply has none).
    assert.equal(again.verdicts[0].first_burst_id, parked.burst_id, JSON.stringify({ again: again.verdicts, configured }));
  } finally {
    await w.mf.dispose();
  }
});

test("a key re-admitted after its TTL: its duplicates name the latest admission; a conflict then links to the newest row with the seq", async () => {
  const w = await start({ vars: { TTL_MS: "300" } });
  try {
    const D = "bin-TTL";
    const a1 = reading(D, 1, 10);
    const send = async (burst) => {
      const res = await post(w.call, "/v1/readings", burst);
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      whole(body);
      return body;
    };
    const first = await send([a1]);
    await new Promise((r) => setTimeout(r, 400));
    const again = await send([a1]);
    assert.deepEqual(again.verdicts, [{ index: 0, verdict: "admitted", key: keyOf(a1), ...NEWEST }]);
    const dup = await send([a1]);
    const [row] = await ledger(w.call, D);
    assert.notEqual(again.burst_id, first.burst_id);
    assert.deepEqual(dup.verdicts, [{ index: 0, verdict: "duplicate", key: keyOf(a1), first_admitted_at: row.admitted_at, first_burst_id: again.burst_id }]);
    const a1x = reading(D, 1, 11);
    const conflict = await send([a1x]);
    assert.deepEqual(conflict.verdicts, [{ index: 0, verdict: "conflict", key: keyOf(a1x), conflicts_with: keyOf(a1), ...NEWEST }]);
  } finally {
    await w.mf.dispose();
  }
});
