// GET /v1/metrics: the fleet's figures (fleet.js `fleetFigures`, the roll-up shards,
// as /v1/stats answers them) for Prometheus, in its text exposition format 0.0.4
// (prometheus-text.js).
//
// Names follow Prometheus' naming practice (prometheus/docs,
// content/docs/practices/naming.md), one scheme for every family:
// `reconnect_dedupe_<thing>_<qualifier>`, the thing measured a plural noun first
// (`readings_`, `seqs_`, `uplinks_`, `events_`, `backfill_requests_`, `ledger_rows`,
// `delivery_` for the backlog to the origin, `stats_` for the roll-up itself); a counter
// ends in `_total`, a gauge does not; a unit is named, in base units (`_seconds`). The
// readings' verdicts share a prefix, so that `readings_received_total` is the sum of
// `readings_{unique,duplicate,rejected,parked}_total`. The sum over a family's labels
// means something (hence three backfill families, not one), and no label has many
// values. docs/operations.md "Metrics (Prometheus)" lists them; CHANGELOG.md the
// earlier names.
//
// A labelled family shows every value it can take from the first scrape, at 0 until
// counted (a rate needs a sample before the first increase, and a dashboard a series
// to draw): every rejection code (raw-uplinks.js REJECTION_CODES), every event the
// worker acknowledges unread (routes.js IGNORED_EVENTS: the core's per network server,
// ChirpStack's), every closed backfill outcome (fleet.js BACKFILL_CLOSED). Fleet-level
// families only: a label per device would make thousands of series. Every label value
// comes from those fixed sets; they are escaped all the same.
import { BACKFILL_CLOSED } from "./fleet.js";
import { family } from "./prometheus-text.js";
import { REJECTION_CODES } from "./raw-uplinks.js";
import { IGNORED_EVENTS } from "./routes.js";
import { VERSION } from "./version.js";

const PREFIX = "reconnect_dedupe_";

/** `names` at 0, then `counts` (`{name: n}`) over them. */
const fromZero = (names, counts) => ({ ...Object.fromEntries(names.map((name) => [name, 0])), ...counts });

/**
 * The families, `[name, type, help, samples]` (written in name order), `samples(figures,
 * cfg)` a number (one sample without labels), null (no sample) or `[[labels, value]]`.
 */
const FAMILIES = [
  ["backfill_requests_total", "counter", "History requests the devices made for the seqs their replay left missing (BACKFILL).", (f) => f.backfill_requests.requested],
  ["backfill_requests_sent_total", "counter", "History requests the network server accepted.", (f) => f.backfill_requests.sent],
  ["backfill_requests_closed_total", "counter", "History requests closed, by outcome: answered (the records came back), expired, failed, cancelled.", (f) =>
    BACKFILL_CLOSED.map((outcome) => [{ outcome }, f.backfill_requests[outcome]])],
  ["build_info", "gauge", "Always 1; its labels say which version of the worker answered the scrape.", () => [[{ version: VERSION }, 1]]],
  ["delivery_backlog", "gauge", "Admitted readings waiting for delivery to the origin.", (f) => f.pending_deliveries],
  ["delivery_backlog_oldest_age_seconds", "gauge", "Age of the oldest admitted reading still waiting for the origin, at scrape time; 0 when none waits.", (f) =>
    f.oldest_undelivered_at === null ? 0 : Math.max(0, f.now - f.oldest_undelivered_at) / 1000],
  ["delivery_failed_attempts", "gauge", "Failed delivery attempts of the readings still waiting.", (f) => f.failed_attempts],
  ["delivery_refused", "gauge", "Readings the origin refused, waiting for a re-drive.", (f) => f.refused_by_origin],
  ["devices", "gauge", "Devices whose figures reached the roll-up.", (f) => f.devices],
  ["events_ignored_total", "counter", "Network-server messages that are not uplinks, acknowledged and not stored, by route and event.", (f) =>
    Object.entries(fromZero(IGNORED_EVENTS, f.ignored_events)).map(([name, n]) => {
      const [route, ...event] = name.split("/"); // `<route>/<event>` (index.js `acknowledge`)
      return [{ route, event: event.join("/") }, n];
    })],
  ["ledger_rows", "gauge", "Rows in the devices' ledgers (stored, waiting, delivered or refused).", (f) => f.ledger_rows],
  ["ledger_rows_delivered", "gauge", "Ledger rows the origin accepted, kept until LEDGER_RETENTION_MS.", (f) => f.delivered],
  ["readings_cross_path_duplicate_total", "counter", "Duplicates that were a live reading's datalog copy (counted in readings_duplicate_total too).", (f) => f.cross_path_duplicates],
  ["readings_duplicate_total", "counter", "Readings suppressed as replays of a reading admitted within TTL_MS.", (f) => f.duplicates_suppressed],
  ["readings_parked_total", "counter", "Readings of raw uplinks parked for want of a device configuration.", (f) => f.parked],
  ["readings_received_total", "counter", "Readings received: unique + duplicate + rejected + parked.", (f) => f.received],
  ["readings_rejected_total", "counter", "Readings rejected as invalid, by code (not_recorded: counted before codes were).", (f) =>
    Object.entries(fromZero(REJECTION_CODES, f.rejected_by_code)).map(([code, n]) => [{ code }, n])],
  ["readings_seq_reused_total", "counter", "Readings admitted as a conflict: a seq the device had used with other content (a counter reset, a corrupted copy).", (f) => f.seq_reuses],
  ["readings_unique_total", "counter", "Readings admitted (stored in the ledger, for the origin when ORIGIN_URL is set), conflicts included.", (f) => f.unique],
  ["seq_resets_total", "counter", "Sequence counters that restarted (a battery swap, a rejoin).", (f) => f.seq_resets],
  ["seqs_missing", "gauge", "Seqs missing now in the devices' sequence windows (their open gaps).", (f) => f.missing_seqs],
  ["seqs_recovered_total", "counter", "Seqs that closed a gap: late arrivals.", (f) => f.recovered_seqs],
  ["stats_flush_interval_seconds", "gauge", "STATS_FLUSH_MS: a device's figures reach these at most this long after a change, while its flushes succeed.", (f, cfg) => cfg.STATS_FLUSH_MS / 1000],
  ["stats_last_flush_timestamp_seconds", "gauge", "When the newest device flush reached the roll-up (Unix time); absent before the first.", (f) =>
    f.last_flush_at === null ? null : f.last_flush_at / 1000],
  ["uplinks_parked", "gauge", "Raw uplinks kept undecoded now, waiting for their device's configuration.", (f) => f.parked_uplinks],
  ["uplinks_simulated_total", "counter", "The Things Stack simulated uplinks answered (nothing stored).", (f) => f.simulated_uplinks],
].sort(([a], [b]) => (a < b ? -1 : 1));

/** `figures` (fleet.js `fleetFigures`) in the text format 0.0.4; `cfg` the configuration. */
export function exposition(figures, cfg) {
  return FAMILIES.map(([name, type, help, samples]) => family(PREFIX + name, type, help, samples(figures, cfg))).join("");
}
