// The cost meter of `npm run bench:cost` (benches/metered-worker.js) counts what a
// stored reading costs: the worker's objects, whatever their classes, are metered per
// call the runtime makes, with the rows their SQL cursors read and wrote.
import { test } from "node:test";
import assert from "node:assert/strict";
import { post, start, until } from "../support/harness.mjs";
import { groupName } from "../../src/worker/placement.js";

test("the metered worker counts the calls and rows of one stored reading, and calls made inside a call are not requests", async () => {
  const w = await start({ script: "benches/metered-worker.js" });
  try {
    const res = await post(w.call, "/v1/readings", [{ device_id: "bin-meter", seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 40 }]);
    assert.equal(res.status, 200, await res.text());
    const calls = () => w.lines.filter((l) => l.startsWith('{"event":"meter"')).map((l) => JSON.parse(l)).filter((l) => l.kind !== "background");
    await until(() => calls().some((c) => c.rows_written > 0), "a metered call that wrote rows");
    const wrote = calls().filter((c) => c.rows_written > 0);
    assert.ok(wrote.every((c) => ["rpc", "alarm"].includes(c.kind) && c.statements > 0 && c.wall_ms >= 0), JSON.stringify(wrote));
    // The object that stored the reading was started by that call: cold, the device's group.
    const group = groupName("bin-meter");
    assert.ok(calls().some((c) => c.cold && c.name === group && c.rows_written > 0), JSON.stringify(calls()));
    // Each metered call is one the runtime made: no method is metered twice for one POST
    // (a method called by another, inside its call, is not a request of its own).
    const stored = calls().filter((c) => c.name === group && c.kind === "rpc");
    assert.equal(stored.length, 1, JSON.stringify(stored));
  } finally {
    await w.mf.dispose();
  }
});
