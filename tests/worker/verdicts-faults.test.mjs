// The verdicts under faults and odd input (issue 12, first part): multi-device bursts with one device
// failing, conflicts by the `device_id:seq:` prefix with device ids holding `:`, `%`,
// `_`, `;` or non-ASCII, and the first admission a duplicate of an unparked uplink names.
// In workerd (Miniflare); faults are SQLite triggers put in by python3 (harness `sqlite`).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { start, post, get, tempDir, databases, sqlite, fixture } from "../support/harness.mjs";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const reading = (device_id, seq, fill_pct, ts = "2026-07-16T09:00:00Z") => ({ device_id, seq, ts, fill_pct });
const keyOf = (r) => pkg.idempotencyKey(r);
const ledger = async (call, device) => (await get(call, `/v1/devices/${encodeURIComponent(device)}/readings?limit=1000`)).body.readings;

/** One verdict per index, in order, and the counts reconcile, whatever the status. */
function whole(body) {
  assert.equal(body.received, body.unique + body.duplicates_suppressed + body.rejected.length + (body.parked?.length ?? 0) + (body.not_stored?.length ?? 0), JSON.stringify(body));
  assert.deepEqual(body.verdicts.map((v) => v.index), [...Array(body.received).keys()], JSON.stringify(body.verdicts));
}

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
        { index: 2, verdict: "conflict", key: keyOf(a1x), conflicts_with: keyOf(a1) },
        { index: 3, verdict: "admitted", key: keyOf(c1) },
        { index: 4, verdict: "not_stored" },
        { index: 5, verdict: "rejected", code: "invalid_fill_pct" },
        { index: 6, verdict: "not_stored" },
        { index: 7, verdict: "conflict", key: keyOf(c1x), conflicts_with: keyOf(c1) },
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
    assert.deepEqual(again.verdicts, [{ index: 0, verdict: "admitted", key: keyOf(a1) }]);
    const dup = await send([a1]);
    const [row] = await ledger(w.call, D);
    assert.notEqual(again.burst_id, first.burst_id);
    assert.deepEqual(dup.verdicts, [{ index: 0, verdict: "duplicate", key: keyOf(a1), first_admitted_at: row.admitted_at, first_burst_id: again.burst_id }]);
    const a1x = reading(D, 1, 11);
    const conflict = await send([a1x]);
    assert.deepEqual(conflict.verdicts, [{ index: 0, verdict: "conflict", key: keyOf(a1x), conflicts_with: keyOf(a1) }]);
  } finally {
    await w.mf.dispose();
  }
});
