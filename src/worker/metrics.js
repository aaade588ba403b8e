// GET /v1/metrics: the fleet's figures (fleet.js `fleetFigures`, the roll-up shards,
// as /v1/stats answers them) for Prometheus, in its text exposition format 0.0.4
// (prometheus/docs, content/docs/instrumenting/exposition_formats.md, "Text format
// details"): a `# HELP` and a `# TYPE` line before each family's samples, each family
// one uninterrupted group; a label value escapes backslash, double quote and line
// feed as `\\`, `\"` and `\n`, a HELP text backslash and line feed; `\n` line ends,
// the last line too. Names follow Prometheus' naming practice (prometheus/docs,
// content/docs/practices/naming.md): one application prefix, a counter ends in
// `_total`, a unit is named, in base units (`_seconds`); the sum over a family's
// labels means something (hence three backfill families, not one), and no label has
// many values.
//
// Why not also OpenMetrics 1.0 (`application/openmetrics-text`), which Prometheus
// asks for first: Prometheus parses what the Content-Type names, and its Accept
// lists text/plain;version=0.0.4 too (scrape/scrape.go `acceptHeader`), so this
// answer is read as it is; serving a second format would need a second writer, and
// no OpenMetrics parser is at hand to test it against.
//
// Fleet-level families only: a label per device would make thousands of series.
// Every label value comes from a fixed set (rejection codes of the core and the
// codecs, network-server routes and event names the core or the worker knows);
// they are escaped all the same.

/** The Content-Type of the text format 0.0.4. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const PREFIX = "reconnect_dedupe_";

/**
 * The families, `[name, type, help, samples]` (written in name order), `samples(figures,
 * cfg)` a number (one sample without labels), null (no sample) or `[[labels, value]]`.
 */
const FAMILIES = [
  ["backfill_requests_total", "counter", "History requests the devices made for the seqs their replay left missing (BACKFILL).", (f) => f.backfill_requests.requested],
  ["backfill_requests_sent_total", "counter", "History requests the network server accepted.", (f) => f.backfill_requests.sent],
  ["backfill_requests_closed_total", "counter", "History requests closed, by outcome: answered (the records came back), expired, failed, cancelled.", (f) =>
    Object.entries(f.backfill_requests).filter(([outcome]) => outcome !== "requested" && outcome !== "sent").map(([outcome, n]) => [{ outcome }, n])],
  ["cross_path_duplicates_total", "counter", "Duplicates that were a live reading's datalog copy (counted in duplicates_suppressed_total too).", (f) => f.cross_path_duplicates],
  ["delivered_readings", "gauge", "Ledger rows the origin accepted, kept until LEDGER_RETENTION_MS.", (f) => f.delivered],
  ["delivery_backlog", "gauge", "Admitted readings waiting for delivery to the origin.", (f) => f.pending_deliveries],
  ["delivery_failed_attempts", "gauge", "Failed delivery attempts of the readings still waiting.", (f) => f.failed_attempts],
  ["devices", "gauge", "Devices whose figures reached the roll-up.", (f) => f.devices],
  ["duplicates_suppressed_total", "counter", "Readings suppressed as replays of a reading admitted within TTL_MS.", (f) => f.duplicates_suppressed],
  ["ignored_events_total", "counter", "Network-server messages that are not uplinks, acknowledged and not stored, by route and event.", (f) =>
    Object.entries(f.ignored_events).map(([name, n]) => {
      const [route, ...event] = name.split("/"); // `<route>/<event>` (index.js `acknowledge`)
      return [{ route, event: event.join("/") }, n];
    })],
  ["ledger_rows", "gauge", "Rows in the devices' ledgers (stored, waiting, delivered or refused).", (f) => f.ledger_rows],
  ["missing_seqs", "gauge", "Seqs missing now in the devices' sequence windows (their open gaps).", (f) => f.missing_seqs],
  ["oldest_undelivered_age_seconds", "gauge", "Age of the oldest admitted reading still waiting for the origin, at scrape time; 0 when none waits.", (f) =>
    f.oldest_undelivered_at === null ? 0 : Math.max(0, f.now - f.oldest_undelivered_at) / 1000],
  ["parked_uplinks", "gauge", "Raw uplinks kept undecoded now, waiting for their device's configuration.", (f) => f.parked_uplinks],
  ["readings_parked_total", "counter", "Readings of raw uplinks parked for want of a device configuration.", (f) => f.parked],
  ["readings_received_total", "counter", "Readings received: unique + duplicates suppressed + rejected + parked.", (f) => f.received],
  ["readings_unique_total", "counter", "Readings admitted (stored in the ledger, for the origin when ORIGIN_URL is set), conflicts included.", (f) => f.unique],
  ["refused_by_origin", "gauge", "Readings the origin refused, waiting for a re-drive.", (f) => f.refused_by_origin],
  ["rejected_total", "counter", "Readings rejected as invalid, by code (not_recorded: counted before codes were).", (f) => Object.entries(f.rejected_by_code).map(([code, n]) => [{ code }, n])],
  ["seq_resets_total", "counter", "Sequence counters that restarted (a battery swap, a rejoin).", (f) => f.seq_resets],
  ["seq_reuses_total", "counter", "Readings admitted as a conflict: a seq the device had used with other content (a counter reset, a corrupted copy).", (f) => f.seq_reuses],
  ["seqs_recovered_total", "counter", "Seqs that closed a gap: late arrivals.", (f) => f.recovered_seqs],
  ["simulated_uplinks_total", "counter", "The Things Stack simulated uplinks answered (nothing stored).", (f) => f.simulated_uplinks],
  ["stats_flush_interval_seconds", "gauge", "STATS_FLUSH_MS: a device's figures reach these at most this long after a change, while its flushes succeed.", (f, cfg) => cfg.STATS_FLUSH_MS / 1000],
  ["stats_last_flush_timestamp_seconds", "gauge", "When the newest device flush reached the roll-up (Unix time); absent before the first.", (f) =>
    f.last_flush_at === null ? null : f.last_flush_at / 1000],
].sort(([a], [b]) => (a < b ? -1 : 1));

/** `figures` (fleet.js `fleetFigures`) in the text format 0.0.4; `cfg` the configuration. */
export function exposition(figures, cfg) {
  return FAMILIES.map(([name, type, help, samples]) => family(PREFIX + name, type, help, samples(figures, cfg))).join("");
}

/** One family's lines: HELP, TYPE, then its samples in the order of their labels' text. */
export function family(name, type, help, samples) {
  const lines = [`# HELP ${name} ${help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n")}`, `# TYPE ${name} ${type}`];
  const rows = samples === null ? [] : typeof samples === "number" ? [[{}, samples]] : samples;
  const written = rows.map(([labels, value]) => `${name}${labelText(labels)} ${value}`);
  lines.push(...written.sort());
  return lines.map((l) => `${l}\n`).join("");
}

/** `{a="x",b="y"}`, or "" without labels. */
function labelText(labels) {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${String(v).replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}
