// `npm run bench:bulk`: what configuring a fleet in one call costs (POST
// /v1/devices/config, docs/devices.md "Configuring many devices at once"). A CSV of N
// bins (default 10 000, BULK_CONFIG_ROWS) of new devices, then the same CSV again (a
// retry: nothing changes), in workerd through the worker tests' harness (storage on
// disk in a temporary directory):
//   1. the call's duration, the worker as it runs (each pass on a fresh worker);
//   2. what Cloudflare would bill for it, on the worker with a meter on every Durable
//      Object call (benches/metered-worker.js): the Durable Object requests by class
//      and method (group RPCs among them), the alarms the calls arm, rows written
//      (the SQL cursors' own counts, index entries included, and setAlarm).
// Prints figures; asserts nothing about time.
//
//   node benches/bulk-config.mjs [--rows N] [--rounds N]
import fs from "node:fs";
import { start, TOKEN, tempDir } from "../tests/support/harness.mjs";
import { fmt, machine, median } from "./in-workerd.mjs";
import { option } from "./workload.mjs";

const ROWS = option("rows", 10_000);
const ROUNDS = option("rounds", 3);
const METER = "benches/metered-worker.js";

const ids = Array.from({ length: ROWS }, (_, i) => (0xa840410000000000n + BigInt(i)).toString(16).toUpperCase());
const csv = `device_id,codec,bin_depth_mm,offset_mm,reporting_period_s,application_port,backfill\r\n${ids.map((id, i) => `${id},milesight-iot/em500-udl,${800 + (i % 1200)},${i % 200},,,`).join("\r\n")}\r\n`;

/** POSTs the CSV: `{ms, body}`; exits on a reply other than 200 with every row applied. */
async function post(w) {
  const t0 = performance.now();
  const res = await w.call("/v1/devices/config", { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "text/csv" }, body: csv });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (res.status !== 200 || body.configured !== ROWS) {
    console.error(`bench:bulk: ${res.status} ${JSON.stringify(body).slice(0, 400)}`);
    process.exit(1);
  }
  return { ms, body };
}

/** `fn(w)` on a fresh worker (`script`), its storage removed afterwards. */
async function onFresh(script, fn) {
  const dir = tempDir();
  const w = await start({ persist: dir, script });
  try {
    return await fn(w);
  } finally {
    await w.mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The meter's lines written since line `from` (parsed). */
const meterLines = (w, from) => w.lines.slice(from).filter((l) => l.startsWith('{"event":"meter"')).map((l) => JSON.parse(l));

/**
 * Waits until the isolate runs no call, has no alarm armed (the meter's GET /__meter)
 * and every line the meter wrote has come through the pipe: at most 60 s.
 */
async function quiet(w) {
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    const m = await (await w.mf.dispatchFetch("http://bench/__meter")).json();
    const read = w.lines.filter((l) => l.startsWith('{"event":"meter')).length;
    if (m.running === 0 && m.alarms.length === 0 && read >= m.lines) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** What the metered lines `lines` bill: requests by `class.method` (alarms as `class.alarm`), rows written (and by statement), setAlarm. */
function bill(lines) {
  const requests = {};
  const bySql = {};
  let rows = 0;
  let alarms = 0;
  for (const l of lines) {
    rows += l.rows_written ?? 0;
    for (const [sql, [, , written]] of Object.entries(l.by_sql ?? {})) if (written) bySql[sql] = (bySql[sql] ?? 0) + written;
    alarms += l.set_alarms ?? 0;
    if (l.kind === "background" || l.kind === "wake") continue;
    const name = `${l.class}.${l.method}`;
    requests[name] = (requests[name] ?? 0) + 1;
  }
  return { requests, total: Object.values(requests).reduce((a, b) => a + b, 0), rows, alarms, bySql };
}

console.log(machine());
console.log(`bench:bulk: POST /v1/devices/config, a CSV of ${fmt(ROWS)} new devices (${fmt(csv.length)} bytes), then the same CSV again`);

const firsts = [];
const agains = [];
for (let r = 0; r < ROUNDS; r++) {
  await onFresh(undefined, async (w) => {
    firsts.push((await post(w)).ms);
    agains.push((await post(w)).ms);
  });
}
const list = (xs) => xs.map((x) => fmt(x)).join(", ");
console.log(`1. duration, ${ROUNDS} fresh workers (median):`);
console.log(`   new devices   ${list(firsts)} ms (${fmt(median(firsts))} ms = ${fmt((median(firsts) * 1000) / ROWS, 1)} µs a row)`);
console.log(`   the same again ${list(agains)} ms (${fmt(median(agains))} ms = ${fmt((median(agains) * 1000) / ROWS, 1)} µs a row)`);

await onFresh(METER, async (w) => {
  const figures = [];
  for (const pass of ["new devices", "the same again"]) {
    const from = w.lines.length;
    const { body } = await post(w);
    const settled = await quiet(w);
    const b = bill(meterLines(w, from));
    figures.push([pass, body, b, settled]);
  }
  console.log("2. billed, on the metered worker (the call, and the alarms it armed until all was quiet):");
  for (const [pass, body, b, settled] of figures) {
    const groups = b.requests["GroupObject.configureMany"] ?? 0;
    console.log(`   ${pass}: ${fmt(body.changed)} changed; group RPCs (configureMany) ${groups}; Durable Object requests ${fmt(b.total)} (${fmt(b.total / ROWS, 3)} a row)${settled ? "" : " (not quiet after 60 s)"}`);
    console.log(`     by class and method: ${Object.entries(b.requests).sort(([x], [y]) => x.localeCompare(y)).map(([k, n]) => `${k} ${n}`).join(", ")}`);
    console.log(`     rows written ${fmt(b.rows)} (${fmt(b.rows / ROWS, 1)} a row), setAlarm ${b.alarms}`);
    for (const [sql, n] of Object.entries(b.bySql).sort(([, x], [, y]) => y - x).slice(0, 6)) console.log(`       ${fmt(n / ROWS, 2).padStart(5)} a row: ${sql.replace(/\s+/g, " ").slice(0, 110)}`);
  }
});
