// Rows admitted while ORIGIN_URL is empty stay in the ledger only, also after the
// worker is restarted with an origin (docs/delivery.md "Readings admitted while
// ORIGIN_URL is empty"). In workerd (Miniflare) with persistence and a real local origin.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { start, post, get, origin, until, tempDir } from "../support/harness.mjs";

const reading = (seq, fill_pct) => ({ device_id: "bin-LATE", seq, ts: "2026-07-16T09:00:00Z", fill_pct });

async function admit(call, r) {
  const res = await post(call, "/v1/readings", [r]);
  assert.equal(res.status, 200);
  const [a] = (await res.json()).admitted;
  return a.key;
}

test("a reading admitted without ORIGIN_URL is not delivered once one is set; a reading admitted afterwards is", async () => {
  const dir = tempDir();
  const o = await origin();
  let before;
  const first = await start({ persist: dir, vars: { ORIGIN_URL: "", STATS_FLUSH_MS: "50" } });
  try {
    before = await admit(first.call, reading(1, 10));
  } finally {
    await first.mf.dispose();
  }
  const second = await start({ persist: dir, vars: { ORIGIN_URL: o.url, STATS_FLUSH_MS: "50" } });
  try {
    const afterKey = await admit(second.call, reading(2, 20));
    await until(() => o.accepted().includes(afterKey), "the later reading's delivery");
    // One device's outbox goes out oldest first, DELIVERY_BATCH (500) at a time: had
    // the earlier row been waiting, it would have been in this POST, ahead of it.
    assert.deepEqual(
      o.requests.map((r) => r.body.readings.map((x) => x.key)),
      [[afterKey]],
      "one POST, with the later reading only",
    );
    // The origin has the POST; the worker marks the row delivered once its 2xx is back
    // and written, which can be a moment after the origin took it.
    const ledger = await until(async () => {
      const rows = (await get(second.call, "/v1/devices/bin-LATE/readings")).body.readings;
      return rows.find((r) => r.key === afterKey)?.delivery !== "pending" && rows;
    }, "the later reading's row marked delivered");
    assert.deepEqual(
      ledger.map((r) => [r.key, r.delivery]),
      [
        [before, "stored"],
        [afterKey, "delivered"],
      ],
    );
    const stats = await until(async () => {
      const s = (await get(second.call, "/v1/stats")).body;
      return s.delivered === 1 && s;
    }, "the delivery in /v1/stats");
    assert.deepEqual([stats.ledger_rows, stats.pending_deliveries, stats.oldest_undelivered_age_ms], [2, 0, null], "the stored row is not waiting");
  } finally {
    await second.mf.dispose();
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
