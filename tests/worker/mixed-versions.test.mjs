// A deployment runs two versions at once. With a gradual deployment the stateless
// worker's version is drawn per request while each Durable Object keeps the version
// it was assigned (Cloudflare, "Gradual deployments: With Durable Objects"); with a
// plain `wrangler deploy` an object already running keeps its code until it restarts.
//
// The previous release (PREVIOUS) keeps one DeviceObject per device; this one keeps
// GroupObjects (group.js, 256 devices' tables each) and leaves DeviceObject as a shim
// (legacy.js) that hands its storage over to the device's group and forwards. So the
// pairings tested here are:
//
// * the upgrade itself: storage the previous release wrote (ledger, outbox backlog,
//   an open batch, configuration, a parked uplink, history, counters) read, delivered
//   and counted once by this release, whether the device sends again or never does
//   (then its old object's alarm hands it over);
// * a worker of the previous release calling this release's objects: the shim
//   forwards its calls to the groups;
// * this release's groups flushing to roll-up shards of the previous release, which
//   have `apply` but no `applyMany`, and whose `register` answers nothing.
//
// Dropped from the per-device era: "a rollback: no counter goes down" and "shards
// upgraded after the devices: not_recorded". A rollback across this change is not a
// pairing that can store as either version alone does: the previous DeviceObjects
// see none of the rows their groups admitted after the hand-over, and their figures
// go on from the incarnation and version they had, behind the group's, so the roll-up
// ignores them until their versions pass the group's, then takes them as smaller
// totals of the same incarnation: counters would go down. And the
// previous shards already count rejections by code: nothing of theirs is not_recorded.
//
// The previous release (PREVIOUS: the commit before groups) is read from git into
// target/ with the Wasm core built from its own Rust (tests/support/previous.mjs: a
// deployment bundles its own, and the plan's format has changed since), and run beside
// src/worker/ in workerd (Miniflare), each class from the version a test names;
// GroupObject is always this release's (the previous one has none, its binding stays
// unused). Move PREVIOUS to the release in production when the next change of an
// object's calls lands.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { isDeepStrictEqual } from "node:util";
import { start, post, get, putConfig, readingsOf, until, tempDir, origin, logged, databases, sqlite, TOKEN } from "../support/harness.mjs";
import { EM500, history, live, tts } from "../support/em500.mjs";
import { groupName } from "../../src/worker/placement.js";
import { previousRelease } from "../support/previous.mjs";

const pkgUrl = new URL("../../pkg/", import.meta.url);
const pkg = await import(new URL("reconnect_dedupe.js", pkgUrl));
pkg.initSync({ module: fs.readFileSync(new URL("reconnect_dedupe_bg.wasm", pkgUrl)) });

const PREVIOUS = "2e911b47cd29c4cd099c16da16f854aab889ef5c";
const root = new URL("../../", import.meta.url).pathname;
const release = previousRelease(PREVIOUS);
// Said in the test report, not hidden: only a clone without that history skips.
const skip = release.skip ?? false;
// Its src/worker/: there, `../../pkg/` is the previous release's own Wasm.
const previousDir = skip ? null : path.join(release.dir, "src", "worker");

/**
 * Starts a worker whose stateless tier (`worker`), device objects (`devices`: the
 * previous release's DeviceObject, or this release's shim) and roll-up shards
 * (`shards`) each run "previous" or "current" code; the groups are always current.
 */
function mixed({ worker, devices, shards }, options = {}) {
  const here = (file) => path.relative(previousDir, path.join(root, "src", "worker", file));
  const from = (version) => (version === "previous" ? "./index.js" : here("index.js"));
  const name = `mixed-${worker}-${devices}-${shards}.js`;
  fs.writeFileSync(
    path.join(previousDir, name),
    `export { default } from "${from(worker)}";\nexport { DeviceObject } from "${from(devices)}";\nexport { FleetObject } from "${from(shards)}";\nexport { GroupObject } from "${here("group.js")}";\n`,
  );
  return start({ ...options, vars: { STATS_FLUSH_MS: "50", ...options.vars }, script: path.relative(root, path.join(previousDir, name)) });
}

const previous = { worker: "previous", devices: "previous", shards: "previous" };
const current = { worker: "current", devices: "current", shards: "current" };

/** `before(w)` on the previous release, then `after(w)` on this one, on the same storage. */
async function upgrade(vars, before, after) {
  const dir = tempDir();
  try {
    const first = await mixed(previous, { persist: dir, vars });
    try {
      await before(first);
    } finally {
      await first.mf.dispose();
    }
    const second = await mixed(current, { persist: dir, vars });
    try {
      await after(second);
    } finally {
      await second.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * An origin that answers 503 until `heal()`, then 200: the previous release leaves an
 * open batch and a backlog behind, this one delivers them. Short retries, so the
 * previous release's alarm is due again by the time this one starts.
 */
async function failingOrigin() {
  let healthy = false;
  const o = await origin({ answer: () => ({ status: healthy ? 200 : 503 }) });
  return { o, heal: () => (healthy = true), vars: { ORIGIN_URL: o.url, RETRY_BASE_MS: "100", RETRY_MAX_MS: "200" } };
}

/** `run(version, during)`: `during(w)` on a worker of `version` (previous or current) on the storage in `dir`, stopped after. */
function runner(dir, vars) {
  return async (version, during) => {
    const w = await mixed(version, { persist: dir, vars });
    try {
      return await during(w);
    } finally {
      await w.mf.dispose();
    }
  };
}

/** The origin's requests carrying readings of `device_id`. */
const requestsOf = (o, device_id) => o.requests.filter((r) => r.body?.readings?.some((x) => x.device_id === device_id));

const reading = (device_id, seq, fill_pct) => ({ device_id, seq, ts: "2026-07-16T09:00:00Z", fill_pct });

/** POSTs a burst that must answer 200: its reply. */
async function ingest(call, burst) {
  const res = await post(call, "/v1/readings", burst);
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

/** /v1/stats once `ready(stats)` holds (it answered 200 with the flushes awaited); `more(w)` adds to the failure's message. */
async function statsWhen(call, ready, what, more = () => "") {
  let last;
  await until(async () => {
    const res = await call("/v1/stats", { headers: { authorization: `Bearer ${TOKEN}` } });
    last = { status: res.status, body: await res.json() };
    return last.status === 200 && ready(last.body);
  }, what).catch(() => assert.fail(`${what}: ${JSON.stringify(last)}${more()}`));
  return last.body;
}

const COUNTED = ["received", "unique", "duplicates_suppressed"];
const counted = (s) => COUNTED.map((n) => s[n]);
/** The sum of `replies`' counts (ingest replies, or a PUT config's `unparked`), as `counted` lists them. */
const sum = (replies) => COUNTED.map((n) => replies.reduce((t, r) => t + r[n], 0));

test("upgrade with data: what the previous release stored is deduplicated against, listed, configured, delivered under its batch's key and counted once by this one", { skip }, async () => {
  const { o, heal, vars } = await failingOrigin();
  const A = "up-A";
  const B = "up-B";
  const E = "A84041000000F011"; // an EM500, configured before the upgrade
  const P = "A84041000000F012"; // an EM500 whose uplink waits, parked, for its configuration
  const old = {};
  try {
    await upgrade(
      vars,
      async (w) => {
        old.first = await ingest(w.call, [reading(A, 1, 10), reading(A, 2, 20), reading(A, 3, 30), reading(B, 1, 10), reading(B, 2, 20)]);
        // The origin refused A's first batch: it stays open, under its key, while the
        // next reading waits behind it in the outbox.
        await until(() => requestsOf(o, A).length && requestsOf(o, B).length, "the first delivery attempts");
        old.batchA = requestsOf(o, A)[0];
        old.second = await ingest(w.call, [reading(A, 4, 40), reading(B, 3, 30), reading(A, 1, 10)]);
        assert.equal(old.second.duplicates_suppressed, 1);
        old.config = await putConfig(w.call, E, EM500);
        assert.equal(old.config.status, 200, JSON.stringify(old.config.body));
        old.decoded = await tts(w, E, "bin-up-E", live(700));
        assert.equal(old.decoded.unique, 1, JSON.stringify(old.decoded));
        old.parked = await tts(w, P, "bin-up-P", history([0, 1, 2]));
        assert.deepEqual(old.parked.parked.map((p) => p.code), ["device_not_configured"]);
        // A forget gives A's history an event; seq 3 is not replayed below (forgotten, it would be admitted again).
        const forgotten = old.first.admitted[2].key;
        const done = await post(w.call, `/v1/devices/${A}/forget`, { key: forgotten });
        assert.equal(done.status, 200, await done.text());
        old.forgotten = forgotten;
        const replies = [old.first, old.second, old.decoded, old.parked];
        // An undecoded uplink counts as one reading, received and parked.
        old.stats = await statsWhen(w.call, (s) => isDeepStrictEqual(counted(s), sum(replies)) && s.parked === 1, "the previous release's flushes");
        assert.deepEqual(counted(old.stats), [10, 8, 1]);
        old.rows = { [A]: await readingsOf(w.call, A), [B]: await readingsOf(w.call, B), [E]: await readingsOf(w.call, E) };
        // Still open at the stop: every attempt so far was A's first batch, under one key.
        assert.deepEqual([...new Set(requestsOf(o, A).map((r) => r.idempotencyKey))], [old.batchA.idempotencyKey]);
      },
      async (w) => {
        heal();
        const admittedAt = new Map(Object.values(old.rows).flat().map((r) => [r.key, r.admitted_at]));
        // (a) Replays of what the previous release admitted are duplicates of their first admission.
        const replay = await ingest(w.call, [reading(A, 1, 10), reading(A, 2, 20), reading(A, 4, 40), reading(B, 1, 10)]);
        assert.equal(replay.duplicates_suppressed, 4, JSON.stringify(replay));
        for (const v of replay.verdicts) {
          assert.equal(v.verdict, "duplicate", JSON.stringify(v));
          assert.equal(v.first_admitted_at, admittedAt.get(v.key), v.key);
        }
        const fresh = await ingest(w.call, [reading(A, 5, 50), reading(B, 4, 40)]);
        assert.equal(fresh.unique, 2, JSON.stringify(fresh));
        // (b) The ledgers list the old rows, as they were.
        for (const id of [A, B, E]) {
          const rows = new Map((await readingsOf(w.call, id)).map((r) => [r.key, r.admitted_at]));
          for (const r of old.rows[id]) assert.equal(rows.get(r.key), r.admitted_at, `${id} ${r.key}`);
        }
        // (c) The configuration stored.
        const config = await get(w.call, `/v1/devices/${E}/config`);
        assert.equal(config.status, 200, JSON.stringify(config.body));
        const { unparked: _, ...stored } = old.config.body;
        // As stored, and the member this release added: no application port, the codec's own.
        assert.deepEqual(config.body, { ...stored, application_port: null });
        // (f) The history.
        const events = await get(w.call, `/v1/devices/${A}/history`);
        assert.equal(events.status, 200, JSON.stringify(events.body));
        assert.deepEqual(events.body.events.map((e) => [e.event, e.detail.key]), [["key_forgotten", old.forgotten]]);
        // (g) The parked uplink is decoded by its device's configuration.
        const configured = await putConfig(w.call, P, EM500);
        assert.equal(configured.status, 200, JSON.stringify(configured.body));
        assert.equal(configured.body.unparked.uplinks, 1, JSON.stringify(configured.body));
        // (d) Every key the previous release admitted reaches the origin; A's open
        // batch goes again under its key, byte for byte.
        const keys = [...admittedAt.keys()];
        await until(() => keys.every((k) => o.accepted().includes(k)), "the previous release's backlog delivered").catch(() =>
          assert.fail(`not delivered: ${keys.filter((k) => !o.accepted().includes(k))}`),
        );
        const resent = o.requests.filter((r) => r.ok && r.idempotencyKey === old.batchA.idempotencyKey);
        assert.ok(resent.length >= 1, "A's open batch re-sent under its Idempotency-Key");
        assert.equal(resent[0].raw, old.batchA.raw);
        // (e) Counted once: the previous counts and this release's, with every flush in
        // (nothing pending is left to flush again).
        const now = [replay, fresh, configured.body.unparked];
        const expected = counted(old.stats).map((n, i) => n + sum(now)[i]);
        const s = await statsWhen(w.call, (s) => s.pending_deliveries === 0 && s.unique >= expected[1], "this release's flushes");
        assert.deepEqual(counted(s), expected);
        assert.equal(s.devices, old.stats.devices);
      },
    );
  } finally {
    await o.close();
  }
});

test("upgrade: a device the previous release stored that never sends again is handed over by its old object's alarm, and its backlog delivered under its batch's key", { skip }, async () => {
  const { o, heal, vars } = await failingOrigin();
  const D = "up-quiet";
  let batch;
  let keys;
  try {
    await upgrade(
      vars,
      async (w) => {
        keys = (await ingest(w.call, [reading(D, 1, 10), reading(D, 2, 20)])).admitted.map((a) => a.key);
        await until(() => requestsOf(o, D).length, "the first delivery attempt");
        batch = requestsOf(o, D)[0];
      },
      async (w) => {
        heal();
        // Nothing is sent to D, nor read of it: only its old object's alarm can start the hand-over.
        await until(() => keys.every((k) => o.accepted().includes(k)), "D's backlog delivered", 20_000).catch(() =>
          assert.fail(`the old object's alarm handed nothing over in 20 s; adopted: ${JSON.stringify(logged(w, "device_handed_over"))}`),
        );
        assert.equal(o.requests.find((r) => r.ok && r.body?.readings?.some((x) => x.device_id === D)).idempotencyKey, batch.idempotencyKey);
        assert.deepEqual(logged(w, "device_handed_over").map((l) => [l.device_id, l.readings]), [[D, 2]]);
      },
    );
  } finally {
    await o.close();
  }
});

test("upgrade: a batch handed over open that the origin refuses (400) holds back nothing: its readings and the group's later ones are delivered", { skip }, async () => {
  // The origin answers 503 until the upgrade, then refuses the old batch's body (it
  // will never take it) and takes everything else.
  let upgraded = false;
  let old;
  const o = await origin({ answer: (r) => ({ status: !upgraded ? 503 : r.idempotencyKey === old?.idempotencyKey ? 400 : 200 }) });
  const vars = { ORIGIN_URL: o.url, RETRY_BASE_MS: "100", RETRY_MAX_MS: "200" };
  const D = "up-refused";
  let keys;
  try {
    await upgrade(
      vars,
      async (w) => {
        keys = (await ingest(w.call, [reading(D, 1, 10), reading(D, 2, 20)])).admitted.map((a) => a.key);
        await until(() => requestsOf(o, D).length, "the first delivery attempt");
        old = requestsOf(o, D)[0];
      },
      async (w) => {
        upgraded = true;
        const later = (await ingest(w.call, [reading(D, 3, 30)])).admitted.map((a) => a.key);
        await until(() => [...keys, ...later].every((k) => o.accepted().includes(k)), "every reading delivered").catch(() =>
          assert.fail(`not delivered: ${[...keys, ...later].filter((k) => !o.accepted().includes(k))}; requests: ${o.requests.map((r) => r.status)}`),
        );
        assert.ok(o.requests.some((r) => r.idempotencyKey === old.idempotencyKey && r.status === 400), "the old batch was sent and refused");
      },
    );
  } finally {
    await o.close();
  }
});

test("upgrade: a hand-over whose import fails strands nothing: once the fault is gone the old object's backlog is delivered, though its device never sends again", { skip }, async () => {
  // D's old object keeps an undelivered backlog, its alarm armed for the retry. The
  // first hand-over fails inside the group's import (a trigger refusing D's rows in
  // the group's database, made by a neighbour's first write, then dropped again).
  // Nothing of D is in the group then; the old object must still hand over and
  // deliver, as a quiet device's does (the test above), when its alarm comes.
  const D = "up-strand";
  const G = "up-neighbour-20"; // groupOf(G) === groupOf(D)
  let healthy = false;
  const o = await origin({ answer: () => ({ status: healthy ? 200 : 503 }) });
  // The old object's retry is due 15 s after its first attempt: after the three runs below.
  const vars = { ORIGIN_URL: o.url, RETRY_BASE_MS: "15000", RETRY_MAX_MS: "15000" };
  const dir = tempDir();
  let keys;
  const run = runner(dir, vars);
  try {
    await run(previous, async (w) => {
      keys = (await ingest(w.call, [reading(D, 1, 10), reading(D, 2, 20)])).admitted.map((a) => a.key);
      await until(() => requestsOf(o, D).length, "the first delivery attempt");
      // Flushed: the old object's alarm is left for the retry only.
      await statsWhen(w.call, (s) => s.received === 2 && s.failed_attempts === 2, "the old object's flush");
    });
    await run(current, async (w) => ingest(w.call, [reading(G, 1, 10)]));
    const groups = databases(dir, "GroupObject");
    sqlite(groups, `CREATE TRIGGER refuse_import BEFORE INSERT ON readings WHEN NEW.device_id = '${D}' BEGIN SELECT RAISE(ABORT, 'injected'); END;`);
    await run(current, async (w) => {
      const res = await post(w.call, "/v1/readings", [reading(D, 3, 30)]);
      const body = await res.json();
      assert.equal(res.status, 503, JSON.stringify(body));
      assert.deepEqual(body.errors.map((e) => e.code), ["device_unavailable"]);
    });
    sqlite(groups, "DROP TRIGGER refuse_import;");
    healthy = true;
    await run(current, async (w) => {
      // Nothing is sent to D: its old object's alarm (due by now, or within seconds) must hand it over.
      await until(() => keys.every((k) => o.accepted().includes(k)), "D's backlog delivered", 25_000).catch(() =>
        assert.fail(`D's backlog stranded in its old object: nothing handed over or delivered in 25 s; handed over: ${JSON.stringify(logged(w, "device_handed_over"))}`),
      );
    });
  } finally {
    await o.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("during a deployment, a device first seen by this release's worker and then by the previous one has one memory: the previous one's object stores nothing", { skip }, async () => {
  // Both workers run (a gradual deployment; or an old worker's request in flight
  // after `wrangler deploy`), and D's own object still runs the previous release's
  // code (an object keeps its version until it restarts). This release's worker
  // stores D's reading in D's group (its first contact: the shard knew nothing of D,
  // so nothing is handed over, and the group claims D at its shard); the previous
  // one's copy goes to D's own object, whose registration the shard now refuses: it
  // stores nothing and answers 503 (retry_later), rather than keeping a second ledger
  // and seen-set of D that nothing would ever hand over.
  const D = "dp-split";
  const w = await mixed({ worker: "previous", devices: "previous", shards: "current" });
  try {
    const text = JSON.stringify([reading(D, 1, 10)]);
    const plan = JSON.parse(pkg.parseUplink("readings", new TextEncoder().encode(text), { maxReadings: 10_000 }));
    // This release's worker's call (index.js ingest), made directly: the harness runs one stateless tier.
    const ns = await w.mf.getDurableObjectNamespace("GROUPS");
    const [first] = await ns.get(ns.idFromName(groupName(D))).ingestMany([
      { device_id: D, readings: plan.devices[0].readings, refused: 0, refused_codes: {}, raw: null, downlink: null, route: "readings", burst_id: "dp-split-1", attempt: 0 },
    ]);
    assert.deepEqual([first.ok, [...first.verdicts]], [true, [0]], JSON.stringify(first));
    // The previous release's worker, the same reading again.
    const res = await post(w.call, "/v1/readings", [reading(D, 1, 10)]);
    const again = await res.json();
    assert.deepEqual([res.status, again.unique, again.not_stored], [503, 0, [0]], `admitted a second time by D's own object: ${JSON.stringify(again)}`);
    assert.match(again.errors[0].message, /kept by its group object/);
  } finally {
    await w.mf.dispose();
  }
});

test("upgrade, then the group's storage is lost: the handed-over device keeps counting in /v1/stats, its old object's backup is not taken again as its figures", { skip }, async () => {
  // rollup-faults.test.mjs: a group whose storage was reset goes on counting (its new
  // incarnation adds to the old). A device handed over from its old object is known
  // to its shard, so the group's new storage asks that object again: it still holds
  // its rows as it had them at the hand-over (kept as a backup), with their figures'
  // incarnation and version, long overtaken by the group's flushes.
  const D = "up-lost";
  const dir = tempDir();
  const run = runner(dir);
  try {
    await run(previous, async (w) => {
      await ingest(w.call, [reading(D, 1, 10), reading(D, 2, 20), reading(D, 3, 30)]);
      await statsWhen(w.call, (s) => s.received === 3, "the old object's flush");
    });
    await run(current, async (w) => {
      for (let seq = 4; seq <= 6; seq++) await ingest(w.call, [reading(D, seq, seq * 10)]);
      await statsWhen(w.call, (s) => s.received === 6, "the group's flushes");
    });
    fs.rmSync(path.join(dir, "-GroupObject"), { recursive: true, force: true });
    await run(current, async (w) => {
      const seven = await ingest(w.call, [reading(D, 7, 70)]);
      assert.equal(seven.unique, 1, JSON.stringify(seven));
      // Seven readings received since the start, whatever the group's storage went through.
      await new Promise((r) => setTimeout(r, 1_500));
      const s = await statsWhen(w.call, () => true, "stats");
      assert.deepEqual([s.devices, s.received], [1, 7], `after the loss: ${JSON.stringify(counted(s))}`);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a worker of the previous release calling this release's objects: its readings and raw uplinks are stored through the shim, a replay suppressed, all counted, the ledger listed", { skip }, async () => {
  const w = await mixed({ worker: "previous", devices: "current", shards: "current" });
  try {
    const C = "mx-C";
    const first = await ingest(w.call, [reading(C, 1, 10), reading(C, 2, 20)]);
    assert.equal(first.unique, 2, JSON.stringify(first));
    const again = await ingest(w.call, [reading(C, 1, 10)]);
    assert.equal(again.duplicates_suppressed, 1, JSON.stringify(again));
    // Its plan wrote a raw payload as hex text; the group decodes bytes.
    const E = "A84041000000F013";
    assert.equal((await putConfig(w.call, E, EM500)).status, 200);
    const decoded = await tts(w, E, "bin-mx-E", history([0, 1]));
    assert.deepEqual([decoded.unique, decoded.rejected], [2, []], JSON.stringify(decoded));
    // Its Simulate uplink too (a preview: nothing stored, nothing counted but the simulation).
    const simulated = JSON.parse(fs.readFileSync(new URL("../fixtures/webhooks/raw/tts-em500-udl-history.json", import.meta.url)));
    Object.assign(simulated, { simulated: true, end_device_ids: { ...simulated.end_device_ids, dev_eui: E } });
    simulated.uplink_message.frm_payload = history([0, 1, 2]).toString("base64");
    const sim = await post(w.call, "/v1/uplinks/ttn", simulated);
    const preview = await sim.json();
    assert.deepEqual([sim.status, preview.simulated, preview.duplicates_suppressed, preview.unique], [200, true, 2, 1], JSON.stringify(preview));
    const s = await statsWhen(w.call, (s) => s.received === 5, "the group's flush");
    assert.deepEqual(counted(s), [5, 4, 1]);
    const ledger = await get(w.call, `/v1/devices/${C}/readings`);
    assert.equal(ledger.status, 200, JSON.stringify(ledger.body));
    assert.deepEqual(ledger.body.readings.map((r) => r.seq), [1, 2]);
  } finally {
    await w.mf.dispose();
  }
});

test("roll-up shards of the previous release called by this release's groups: /v1/stats answers, and the groups keep their figures until the shards are upgraded", { skip }, async () => {
  const dir = tempDir();
  const F = "mx-F";
  try {
    const w = await mixed({ worker: "current", devices: "current", shards: "previous" }, { persist: dir });
    try {
      const burst = await ingest(w.call, [reading(F, 1, 10), reading(F, 2, 20), reading(F, 1, 10)]);
      assert.deepEqual([burst.unique, burst.duplicates_suppressed], [2, 1]);
      const [failed] = await until(() => logged(w, "stats_flush_failed").length && logged(w, "stats_flush_failed"), "a report the shard cannot take");
      assert.match(failed.error, /roll-up shard is of an earlier release .*keeps its figures/);
      const s = await statsWhen(w.call, () => true, "an answer");
      assert.deepEqual([s.devices, ...counted(s)], [0, 0, 0, 0], "nothing reported yet");
      const ledger = await get(w.call, `/v1/devices/${F}/readings`);
      assert.equal(ledger.status, 200, JSON.stringify(ledger.body));
    } finally {
      await w.mf.dispose();
    }
    // The shards upgraded: the group's alarm, set when its report failed, reports what it kept.
    const upgraded = await mixed(current, { persist: dir });
    try {
      const s = await statsWhen(upgraded.call, (s) => s.received === 3, "the group's report");
      assert.deepEqual([s.devices, ...counted(s)], [1, 3, 2, 1]);
    } finally {
      await upgraded.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("upgrade from per-device rows at the shard (the release before group reports): a group holding thousands of devices counts each once in /v1/stats, from its first report on", async () => {
  const { groupOf } = await import("../../src/worker/placement.js");
  const D0 = "mx-SUP-0";
  const g = groupOf(D0);
  // Many devices of D0's group, all named in the group's first report (group.js `report`).
  const N = 2_100;
  const ids = [];
  for (let i = 0; ids.length < N; i++) if (groupOf(`mx-SUP-${i}-x`) === g) ids.push(`mx-SUP-${i}-x`);
  const dir = tempDir();
  try {
    const first = await start({ persist: dir, vars: { STATS_FLUSH_MS: "50" } });
    try {
      await ingest(first.call, [reading(D0, 1, 10)]);
      await statsWhen(first.call, (s) => s.received === 1, "D0's burst reported");
    } finally {
      await first.mf.dispose();
    }
    // As the release before group reports left its devices: each one's counters in its
    // group's `devices` row, and the row its group flushed to the shard, counted in the
    // shard's totals.
    const script = `import json, sqlite3, sys
ids = json.load(sys.stdin)
group, kind, files = sys.argv[1], sys.argv[2], sys.argv[3:]
one = json.dumps({"received": 1, "unique": 1})
for f in files:
    c = sqlite3.connect(f)
    if kind == "group" and c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'devices'").fetchone()[0]:
        if c.execute("SELECT count(*) FROM devices WHERE device_id = ?", ("${D0}",)).fetchone()[0]:
            c.executemany("INSERT INTO devices (device_id, incarnation, version, acknowledged, registered_at, counters) VALUES (?, 'per-device', 1, 1, 0, ?)", [(i, one) for i in ids])
    if kind == "shard" and c.execute("SELECT count(*) FROM group_figures WHERE group_id = ?", (group,)).fetchone()[0]:
        c.executemany("INSERT INTO device_figures (device_id, incarnation, version, figures, flushed_at) VALUES (?, 'per-device', 1, ?, 0)", [(i, one) for i in ids])
        for name in ("received", "unique", "devices"):
            c.execute("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value", (name, len(ids)))
    c.commit()`;
    const input = JSON.stringify(ids);
    execFileSync("python3", ["-c", script, `group-${g}`, "group", ...databases(dir, "GroupObject")], { input });
    execFileSync("python3", ["-c", script, `group-${g}`, "shard", ...databases(dir, "FleetObject")], { input });
    // The next report an hour away: what the first report makes of the totals stays.
    const second = await start({ persist: dir, vars: { STATS_FLUSH_MS: "3600000" } });
    try {
      const before = await statsWhen(second.call, () => true, "an answer");
      assert.deepEqual([before.devices, before.received, before.unique], [N + 1, N + 1, N + 1], "the crafted storage counts each device once");
      await ingest(second.call, [reading(D0, 2, 20)]);
      const s = await statsWhen(second.call, (s) => s.received !== N + 1, "the group's first report");
      assert.deepEqual([s.devices, s.received, s.unique], [N + 1, N + 2, N + 2], "each device counted once");
    } finally {
      await second.mf.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
