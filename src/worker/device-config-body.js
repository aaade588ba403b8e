// What a device's configuration must be, as a request gives it: the rule of each member
// (`configOf`), shared by PUT /v1/devices/{id}/config (index.js `configure`) and the
// bulk POST /v1/devices/config (index.js `configureAll`), and the bulk body's rows,
// JSON or CSV (`bulkRows`), each read by the core's JSON reader (`readObject`) as a PUT
// body is, so that a row breaks a rule exactly when the same body PUT would.
// What the group object does with a valid configuration is device-config.js.
import { checkDeviceId, CODEC_INFO, guarded, HttpError, limits, readObject } from "./core.js";

// The codecs the core decodes, by the TTN device repository's `brand_id/model_id`, and
// the ranges of a configuration's numbers, defined once in the core (src/codec/readings.rs).
const { codecs: CODECS, deviceConfig: RANGES } = limits();
// The numeric members of a device's configuration: code, range and unit, and the value
// when absent or null (undefined: required).
const CONFIG_NUMBERS = {
  bin_depth_mm: { code: "invalid_bin_depth", ...RANGES.bin_depth_mm, unit: "millimetres" },
  offset_mm: { code: "invalid_offset", ...RANGES.offset_mm, unit: "millimetres", absent: 0 },
  reporting_period_s: { code: "invalid_reporting_period", ...RANGES.reporting_period_s, unit: "seconds", absent: null },
  // The port the sensor was set to send on (docs/devices.md "A changed application port").
  application_port: { code: "invalid_application_port", ...RANGES.application_port, unit: null, absent: null },
};
// The codecs whose sensor lets its application port be set, and the port it leaves the factory with.
const PORTED = CODECS.filter((c) => CODEC_INFO[c].applicationPort !== null);
/** The codes of a configuration's broken rules (`configOf`), in the order they are checked. */
export const CONFIG_CODES = ["unknown_codec", ...Object.values(CONFIG_NUMBERS).map((r) => r.code), "missing_reporting_period", "invalid_backfill"];
/** The members of a PUT body, in the order their rules are checked. */
export const CONFIG_MEMBERS = ["codec", ...Object.keys(CONFIG_NUMBERS), "backfill"];
/** The members (JSON) or columns (CSV) of a bulk row: the device, then a PUT body's. */
export const ROW_MEMBERS = ["device_id", ...CONFIG_MEMBERS];

/**
 * The configuration `members` give (readObject's members by name; absent or null ones
 * as their defaults): `{ok: true, config: {codec, bin_depth_mm, offset_mm,
 * reporting_period_s, application_port, backfill}}`, or `{ok: false, code, message}` naming the member and
 * the rule it breaks, the first in CONFIG_MEMBERS' order. Returned, not thrown: a bulk
 * row's error is that row's answer, and the other rows go on.
 */
export function configOf(members) {
  const given = (name) => (members[name]?.kind === "null" ? undefined : members[name]);
  const named = given("codec");
  const codec = named?.value ?? null;
  if (named && (named.kind !== "string" || !CODECS.includes(codec))) {
    return refused("unknown_codec", `codec must be null (chosen from the uplink) or one of ${CODECS.join(", ")}; got ${shown(named.text)}`);
  }
  const config = { codec };
  for (const [name, rule] of Object.entries(CONFIG_NUMBERS)) {
    const number = wholeMember(name, rule, given(name));
    if (!number.ok) return number;
    config[name] = number.value;
  }
  // The device's own history-request switch (docs/sequence-health.md "Asking the sensor for what is missing"); null: BACKFILL decides.
  const backfill = given("backfill");
  if (backfill && backfill.kind !== "boolean") {
    return refused("invalid_backfill", `backfill must be true, false or null (BACKFILL decides); got ${shown(backfill.text)}`);
  }
  config.backfill = backfill ? backfill.value : null;
  // A port means something only to a codec that reads it: chosen from the uplink, the codec could be any.
  if (config.application_port !== null && !PORTED.includes(codec)) {
    const sensors = PORTED.map((c) => `${c} (${CODEC_INFO[c].applicationPort} unless set)`).join(", ");
    return refused("invalid_application_port", `application_port is for a device whose codec is one of ${sensors}; ${codec === null ? "this configuration names no codec" : `${codec} reads its own ports`}`);
  }
  if (codec !== null && CODEC_INFO[codec].needsPeriod && config.reporting_period_s === null) {
    return refused("missing_reporting_period", `codec ${codec} needs reporting_period_s: it times the readings of each uplink by the period`);
  }
  return { ok: true, config };
}

const refused = (code, message) => ({ ok: false, code, message });

/** A numeric member (absent: undefined): `{ok: true, value}`, a whole number within its range or its default when absent or null; else refused. */
function wholeMember(name, { code, min, max, unit, absent }, member) {
  const rule = `${name} must be a whole number${unit ? ` of ${unit}` : ""}, ${min} … ${max}`;
  if (member === undefined) return absent === undefined ? refused(code, `${rule}; it is required`) : { ok: true, value: absent };
  if (member.kind !== "number" || !member.whole || !(member.value >= min && member.value <= max)) return refused(code, `${rule}; got ${shown(member.text)}`);
  return { ok: true, value: member.value + 0 }; // -0 is 0
}

/** A member's text in a message, at most 64 characters. */
export function shown(text) {
  return text.length > 64 ? `${text.slice(0, 63)}…` : text;
}

/**
 * `bytes` read by the core's JSON reader as an object of no other members than `names`,
 * none twice (`readObject`): `{members}` by name, or `{refused}` saying why its shape is
 * another. Not JSON by the rules of every body (docs/http-api.md "Readings and
 * rejections"): 400 `invalid_json`.
 */
export function readMembers(bytes, names) {
  let out;
  try {
    out = guarded(() => readObject(bytes, names));
  } catch (e) {
    if (e?.code === "invalid_json") throw new HttpError(400, "invalid_json", `the body is not JSON: ${e.message.replace(/^body is not valid JSON: /, "")}`);
    throw e;
  }
  return out.refused !== undefined ? out : { members: Object.fromEntries(out.members.map((m) => [m.name, m])) };
}

// --- the bulk body ------------------------------------------------------------------

/**
 * One row of a bulk body (`text`: a JSON object's bytes) checked as a PUT of its
 * device would be: `{ok: true, device_id, config}` (the id as readings name the device,
 * the core's `checkDeviceId`), or `{ok: false, device_id, code, message}` (`device_id`
 * as the row gives it, or null). A member the row must not have, or one twice, is
 * `invalid_config_body`, as in a PUT body.
 */
export function bulkRow(text) {
  // A row is valid JSON (a CSV row's is made so; a JSON row's body was read whole).
  const out = readMembers(text, ROW_MEMBERS);
  // The reader speaks of a body; here it is a row of one.
  if (out.refused !== undefined) return { ok: false, device_id: null, code: "invalid_config_body", message: out.refused.replace(/^the body /, "the row ") };
  const { device_id: id } = out.members;
  const given = id?.kind === "string" ? id.value : null;
  if (given === null) return { ok: false, device_id: null, code: "invalid_device_id", message: `device_id must be the device's id, a string; got ${id ? shown(id.text) : "none"}` };
  let device_id;
  try {
    device_id = guarded(() => checkDeviceId(given));
  } catch (e) {
    if (e instanceof HttpError || typeof e?.code !== "string") throw e;
    return { ok: false, device_id: given, code: "invalid_device_id", message: e.message };
  }
  const config = configOf(out.members);
  return config.ok ? { ok: true, device_id, config: config.config } : { ...config, device_id };
}

/**
 * The rows of a bulk body, `{rows: [{line?, text}]}` (`text` a row's JSON object as
 * bytes; `line` a CSV record's first line in the file, the header being line 1), in the
 * body's order. `csv`: the body is CSV (`csvRows`), else JSON (`jsonRows`). Throws a
 * coded 400 for a body whose rows cannot be told apart.
 */
export function bulkRows(bytes, csv) {
  return csv ? csvRows(bytes) : jsonRows(bytes);
}

/**
 * `{"devices": [row, ...]}`: the body read whole by the core's JSON reader first (not
 * JSON by the rules of every body, a member twice in a row included: 400
 * `invalid_json`; another shape: 400 `invalid_config_body`), then each element of
 * `devices` on its own (`bulkRow`), so that one row's broken rule is that row's answer.
 */
function jsonRows(bytes) {
  const out = readMembers(bytes, ["devices"]);
  const shape = 'the body must be {"devices": [{"device_id", "codec", "bin_depth_mm", ...}, ...]} (or CSV with Content-Type: text/csv)';
  if (out.refused !== undefined) throw new HttpError(400, "invalid_config_body", `${shape}: ${out.refused}`);
  const devices = out.members.devices;
  if (devices?.kind !== "array") throw new HttpError(400, "invalid_config_body", `${shape}; devices is ${devices ? shown(devices.text) : "missing"}`);
  const encoder = new TextEncoder();
  return { rows: elementsOf(devices.text).map((text) => ({ text: encoder.encode(text) })) };
}

/**
 * The texts of the elements of `array`, the text of a JSON array that the core's reader
 * has read (so valid JSON): split at its top-level commas, outside strings. Each element
 * is then read by the same reader on its own (`bulkRow`), which a row's error needs:
 * readObject answers a body's members, not an array's.
 */
function elementsOf(array) {
  const out = [];
  let depth = 0;
  let from = 1;
  for (let i = 0; i < array.length; i++) {
    const c = array[i];
    if (c === '"') {
      // To the closing quote: a backslash escapes the character after it.
      for (i++; array[i] !== '"'; i++) if (array[i] === "\\") i++;
    } else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") depth--;
    if ((c === "," && depth === 1) || depth === 0) {
      const element = array.slice(from, i).trim();
      // `[]` has no element; `[x]` ends with its one.
      if (element !== "" || c === ",") out.push(element);
      from = i + 1;
    }
  }
  return out;
}

const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/**
 * CSV (RFC 4180, UTF-8; a leading byte order mark, as spreadsheets write it, is
 * dropped): a header row naming every column of ROW_MEMBERS once, in any order, no
 * other (else 400 `invalid_csv`: a column left out would reset that setting on every
 * device of the file), then a record per device. Each record
 * becomes the JSON object its cells spell (`bulkRow` reads it): an empty cell is an
 * absent member; `device_id` and `codec` are strings; a number column's cell is a
 * number when it is one in JSON's grammar (`1200`, `1e3`), else the text it is, which
 * the number's rule refuses; `backfill` is `true` or `false` in any case (a
 * spreadsheet writes TRUE), else text. A record of empty cells only (a spreadsheet's
 * blank row) is no row; one with another number of fields than the header is a row
 * refused `invalid_config_body`.
 */
function csvRows(bytes) {
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new HttpError(400, "invalid_csv", "the CSV body is not UTF-8; save it as CSV UTF-8");
  }
  const records = csvRecords(text);
  if (!records.length) throw new HttpError(400, "invalid_csv", `the CSV body has no header row; the first row names the columns: ${ROW_MEMBERS.join(", ")}`);
  // A header's names without the spaces a hand-edited file puts after its commas.
  const [{ cells: names }, ...data] = records;
  const header = names.map((name) => name.trim());
  const unknown = header.filter((name) => !ROW_MEMBERS.includes(name));
  // A spreadsheet set to another locale separates by semicolons.
  const separator = header.length === 1 && header[0].includes(";") ? " (separated by semicolons? RFC 4180's separator is the comma)" : "";
  if (unknown.length) throw new HttpError(400, "invalid_csv", `unknown column ${shown(JSON.stringify(unknown[0]))} in the header row${separator}; the columns are ${ROW_MEMBERS.join(", ")}, each once`);
  const twice = header.find((name, i) => header.indexOf(name) !== i);
  if (twice !== undefined) throw new HttpError(400, "invalid_csv", `column ${JSON.stringify(twice)} appears twice in the header row`);
  // Every column, so that a column left out of a spreadsheet never resets a setting to
  // its default on every device of the file (a row replaces a configuration, as a PUT).
  const missing = ROW_MEMBERS.filter((name) => !header.includes(name));
  if (missing.length) {
    throw new HttpError(400, "invalid_csv", `the header row has no column ${missing.join(", ")}; it names every column, ${ROW_MEMBERS.join(", ")}, in any order (an empty cell is the member's default: a row replaces the device's configuration, as a PUT does)`);
  }
  const encoder = new TextEncoder();
  const rows = [];
  for (const { line, cells } of data) {
    if (cells.every((c) => c === "")) continue;
    if (cells.length !== header.length) {
      // Its device, when its cell is there: the reply names it, and a second row of it is found.
      const device_id = cells[header.indexOf("device_id")] || null;
      rows.push({ line, refused: { ok: false, device_id, code: "invalid_config_body", message: `the record has ${cells.length} fields; the header row names ${header.length}` } });
      continue;
    }
    const members = [];
    header.forEach((name, i) => {
      const cell = cells[i];
      if (cell === "") return;
      const raw = name === "backfill" ? /^(true|false)$/i.test(cell) && cell.toLowerCase() : CONFIG_NUMBERS[name] && NUMBER.test(cell) && cell;
      members.push(`${JSON.stringify(name)}:${raw || JSON.stringify(cell)}`);
    });
    rows.push({ line, text: encoder.encode(`{${members.join(",")}}`) });
  }
  return { rows };
}

/**
 * The records of CSV `text` (RFC 4180: fields separated by commas, records by CRLF, or
 * LF alone; a field in double quotes may hold commas, line breaks and `""` for a
 * quote), each `{line, cells}`; a final line break ends the last record. A quote in an
 * unquoted field, text after a closing quote, or a quote never closed: 400 `invalid_csv`.
 */
function csvRecords(text) {
  const records = [];
  let cells = [];
  let cell = "";
  let line = 1;
  let start = 1;
  let i = 0;
  const bad = (what) => new HttpError(400, "invalid_csv", `line ${line} of the CSV body: ${what} (RFC 4180: a field with a comma, quote or line break is in double quotes, a quote in it doubled)`);
  const endRecord = () => {
    cells.push(cell);
    records.push({ line: start, cells });
    cells = [];
    cell = "";
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      if (cell !== "") throw bad("a quote inside an unquoted field");
      const opened = line;
      for (i++; ; i++) {
        if (i >= text.length) {
          line = opened;
          throw bad("a quoted field is never closed");
        }
        if (text[i] === '"') {
          if (text[i + 1] !== '"') break;
          i++;
        } else if (text[i] === "\n") line++;
        cell += text[i];
      }
      i++;
      // Only a separator may follow (so a field is never both quoted and not).
      if (i < text.length && text[i] !== "," && text[i] !== "\n" && !(text[i] === "\r" && text[i + 1] === "\n")) throw bad("text after a closing quote");
      continue;
    }
    if (c === ",") {
      cells.push(cell);
      cell = "";
    } else if (c === "\n" || (c === "\r" && text[i + 1] === "\n")) {
      endRecord();
      if (c === "\r") i++;
      line++;
      start = line;
    } else cell += c;
    i++;
  }
  if (cell !== "" || cells.length) endRecord();
  return records;
}
