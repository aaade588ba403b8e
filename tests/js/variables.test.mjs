// The worker's configuration variables are defined once, in src/worker/variables.js:
// README.md "Configuration" (what operators read) names every one with its default and
// range as the module has them, the core's numbers as its limits() gives them; the
// field names the worker defaults to are the ones the core reads when none is given;
// and wrangler.toml [vars] restates no default.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { NAMES, SECRETS, VARIABLES, variables } from "../../src/worker/variables.js";
import { readWrangler } from "../../scripts/serve-workerd.mjs";

const wasmPath = new URL("../../pkg/reconnect_dedupe_bg.wasm", import.meta.url);
assert.ok(fs.existsSync(wasmPath), "pkg/ is missing: run `npm run build` first");
const pkg = await import("../../pkg/reconnect_dedupe.js");
pkg.initSync({ module: fs.readFileSync(wasmPath) });
const TABLE = variables(pkg.limits());
const README = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");

// A quantity's units: a time for a variable in ms, a size for one in bytes.
const TIME = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE = { B: 1, KiB: 1024, MiB: 1_048_576 };

/** `text` ("31 d", "1 ms", "100 MiB", "48") as a whole number, for the variable `name`; an Error when it is not one. */
function quantity(text, name) {
  const m = /^([0-9]+)(?: ([A-Za-z]+))?$/.exec(text);
  if (!m) throw new Error(`${name}: ${JSON.stringify(text)} is not a number with an optional unit`);
  const units = name.endsWith("_MS") ? TIME : name.endsWith("_BYTES") ? SIZE : {};
  if (m[2] && !(m[2] in units)) throw new Error(`${name}: unit ${JSON.stringify(m[2])} is not one of ${Object.keys(units).join(", ") || "(none: a count)"}`);
  return Number(m[1]) * (m[2] ? units[m[2]] : 1);
}

/** A cell's items: split at ", " outside code spans. */
function items(cell) {
  const out = [""];
  let code = false;
  for (let i = 0; i < cell.length; i += 1) {
    if (cell[i] === "`") code = !code;
    if (!code && cell.startsWith(", ", i)) {
      out.push("");
      i += 1;
    } else out[out.length - 1] += cell[i];
  }
  return out;
}

/**
 * What the "## Configuration" table of `md` says that `table` (variables(limits()))
 * does not, one line each; empty when they agree. A row names one variable or several
 * (`A`, `B`); each of its default and range cells holds one item for all of them or
 * one per name. A default is a number (a parenthesised "6 h" after it must be the same
 * quantity), a code span (a string), `empty` (the empty string, or a secret unset) or
 * `none` (a secret); a range is `min … max` (a number, or one with a unit: ms … d for
 * a variable in ms, B … MiB for one in bytes), the allowed strings (`on` or `off`), or
 * "—" where there is none.
 */
function tableProblems(md, table) {
  const problems = [];
  const at = md.indexOf("\n## Configuration\n");
  if (at < 0) return ['README.md has no "## Configuration" section'];
  const section = md.slice(at + 1, md.indexOf("\n## ", at + 1) >>> 0);
  const lines = section.split("\n").filter((l) => l.startsWith("|"));
  if (lines[0] !== "| variable | default | range | meaning |") problems.push(`the table's header is ${JSON.stringify(lines[0])}, not "| variable | default | range | meaning |"`);
  const seen = [];
  for (const line of lines.slice(2)) {
    const cells = line.replace(/^\| | \|$/g, "").split(" | ");
    const names = items(cells[0]).map((n) => /^`([A-Z0-9_]+)`$/.exec(n)?.[1] ?? n);
    const per = (cell, what) => {
      const list = items(cell ?? "");
      if (list.length === names.length) return list;
      if (list.length === 1) return names.map(() => list[0]);
      problems.push(`${names.join(", ")}: the ${what} cell has ${list.length} items for ${names.length} variables`);
      return names.map(() => undefined);
    };
    const defaults = per(cells[1], "default");
    const ranges = per(cells[2], "range");
    names.forEach((name, i) => {
      seen.push(name);
      const v = table[name];
      if (!v) return problems.push(`${name} is in the table but is no variable of src/worker/variables.js`);
      try {
        checkDefault(name, v, defaults[i]);
        checkRange(name, v, ranges[i]);
      } catch (e) {
        problems.push(e.message);
      }
    });
  }
  for (const name of Object.keys(table)) if (!seen.includes(name)) problems.push(`${name} is missing from the table`);
  for (const name of new Set(seen.filter((n, i) => seen.indexOf(n) !== i))) problems.push(`${name} has more than one row`);
  return problems;
}

function checkDefault(name, v, text) {
  if (text === undefined) return;
  const wrong = (what) => new Error(`${name}: the table's default ${JSON.stringify(text)}, the module's ${what}`);
  if (v.kind === "secret") {
    if (!/^(none|empty)\b/.test(text)) throw wrong("none (a secret)");
    return;
  }
  if (v.kind === "string") {
    const given = /^empty\b/.test(text) ? "" : /^`([^`]*)`$/.exec(text)?.[1];
    if (given !== v.default) throw wrong(v.default === "" ? "empty" : `\`${v.default}\``);
    return;
  }
  const m = /^([0-9]+)(?: \((.+)\))?$/.exec(text);
  if (!m || Number(m[1]) !== v.default) throw wrong(String(v.default));
  // "(6 h)", "(1 MiB)": the same quantity in other words; "(no bound)" is only words.
  if (m[2] && /^[0-9]+ [A-Za-z]+$/.test(m[2]) && quantity(m[2], name) !== v.default) throw new Error(`${name}: the default ${m[1]} is not (${m[2]})`);
}

function checkRange(name, v, text) {
  if (text === undefined) return;
  const wrong = (what) => new Error(`${name}: the table's range ${JSON.stringify(text)}, the module's ${what}`);
  if (v.kind !== "number") {
    const expected = v.values ? v.values.map((x) => `\`${x}\``).join(" or ") : "—";
    if (text !== expected) throw wrong(expected);
    return;
  }
  const m = /^(.+) … (.+)$/.exec(text);
  if (!m || quantity(m[1], name) !== v.min || quantity(m[2], name) !== v.max) throw wrong(`${v.min} … ${v.max}`);
}

test('README "Configuration" names every variable, with the default and range of src/worker/variables.js', () => {
  assert.deepEqual(tableProblems(README, TABLE), []);
});

test("a default, a range or a variable the README does not follow is named", () => {
  const drifted = README
    .replace("| `DELIVERY_BATCH` | 500 | 1 … 10000 |", "| `DELIVERY_BATCH` | 400 | 1 … 10000 |")
    .replace("| 21600000 (6 h) | 1 ms … 31 d |", "| 21600000 (6 h) | 1 ms … 30 d |")
    .replace("| 1000 (1 s), 3600000 (1 h) | 1 ms … 1 d, 1 ms … 7 d |", "| 1000 (1 s), 3600000 (2 h) | 1 ms … 1 d |")
    .replace("| `BACKFILL` | `off` | `on` or `off` |", "| `BACKFILL` | `on` | `on` or `off` |")
    .replace(/^\| `BACKFILL_ATTEMPTS` .*\n/m, "")
    .replace("| `UPLINK_SEQ_FIELD`, `UPLINK_TS_FIELD`, `UPLINK_FILL_FIELD` | `seq`, `ts`, `fill_pct` |", "| `UPLINK_SEQ_FIELD`, `UPLINK_TS_FIELD`, `UPLINK_FILL_FIELD`, `UPLINK_RSSI_FIELD` | `seq`, `ts`, `fill_pct`, `rssi` |");
  assert.deepEqual(tableProblems(drifted, TABLE), [
    "TTL_MS: the table's range \"1 ms … 30 d\", the module's 1 … 2678400000",
    "RETRY_MAX_MS: the default 3600000 is not (2 h)",
    "DELIVERY_BATCH: the table's default \"400\", the module's 500",
    "BACKFILL: the table's default \"`on`\", the module's `off`",
    "UPLINK_RSSI_FIELD is in the table but is no variable of src/worker/variables.js",
    "BACKFILL_ATTEMPTS is missing from the table",
  ]);
  assert.deepEqual(tableProblems(README.replace("| `MAX_BODY_BYTES` | 1048576 (1 MiB) | 1 … 100 MiB |", "| `MAX_BODY_BYTES` | 1048576 (1 MiB) | 1 … 100 min |"), TABLE), ['MAX_BODY_BYTES: unit "min" is not one of B, KiB, MiB']);
  assert.deepEqual(tableProblems(README.replace("| variable | default | range | meaning |", "| variable | default | meaning |"), TABLE), ['the table\'s header is "| variable | default | meaning |", not "| variable | default | range | meaning |"']);
});

test("the core's numbers take their default and range from limits(), the others are the module's own", () => {
  const limits = pkg.limits();
  for (const [name, member] of [["TTL_MS", "ttlMs"], ["MAX_KEYS_PER_DEVICE", "maxKeys"], ["MAX_READINGS", "maxReadings"]]) {
    assert.equal(VARIABLES[name].core, member, name);
    const { default: dflt, min, max } = TABLE[name];
    assert.deepEqual({ default: dflt, min, max }, { default: limits[member].default, min: limits[member].min, max: limits[member].max }, name);
  }
  for (const [name, v] of Object.entries(TABLE)) {
    if (v.kind === "number") assert.ok(Number.isSafeInteger(v.default) && v.min <= v.default && v.default <= v.max, `${name}: ${v.min} <= ${v.default} <= ${v.max}`);
    else assert.ok(v.kind === "secret" ? !("default" in v) : typeof v.default === "string", name);
  }
  assert.deepEqual(NAMES, Object.keys(TABLE));
  assert.deepEqual(SECRETS, ["INGEST_TOKEN", "CHIRPSTACK_API_TOKEN"]);
  assert.throws(() => variables({ ...limits, maxKeys: undefined }), /^Error: MAX_KEYS_PER_DEVICE: the core's limits\(\) gives no whole-number range maxKeys/);
  assert.ok(Object.isFrozen(VARIABLES) && Object.isFrozen(VARIABLES.BACKFILL) && Object.isFrozen(VARIABLES.BACKFILL.values) && Object.isFrozen(TABLE.TTL_MS));
});

test("the field names the worker defaults to are those the core reads when none is given", () => {
  // A TTS uplink whose decoded payload holds all three, unlike its metadata.
  const body = JSON.parse(fs.readFileSync(new URL("../fixtures/webhooks/with-fill/tts-v3-uplink.json", import.meta.url), "utf8"));
  body.uplink_message.decoded_payload = { seq: 77, ts: "2026-07-16T09:00:00Z", fill_pct: 40 };
  const text = JSON.stringify(body);
  const plan = (options) => JSON.parse(pkg.parseUplink("ttn", text, options));
  const unset = plan(undefined);
  assert.deepEqual(unset.devices[0].readings.map(({ seq, ts, fill_pct }) => [seq, ts, fill_pct]), [[77, "2026-07-16T09:00:00+00:00", 40]]);
  const given = { seqField: TABLE.UPLINK_SEQ_FIELD.default, tsField: TABLE.UPLINK_TS_FIELD.default, fillField: TABLE.UPLINK_FILL_FIELD.default };
  assert.deepEqual(plan(given), unset);
  assert.notDeepEqual(plan({ ...given, fillField: "level" }), unset, "the option is read");
});

test("wrangler.toml [vars] sets only variables of the worker, none to its default", async () => {
  const { vars } = await readWrangler();
  for (const [name, value] of Object.entries(vars ?? {})) {
    assert.ok(NAMES.includes(name) && !SECRETS.includes(name), `${name}: not a variable of the worker, or a secret`);
    assert.notEqual(String(value), String(TABLE[name].default), `${name} restates its default (README "Configuration"): remove it from wrangler.toml`);
  }
});
