// Real use of the JS API, type-checked against the generated declarations
// (pkg/reconnect_dedupe.d.ts, from the Rust types through tsify) by
// `npx tsc -p tests/types`. Nothing here runs; tests/js/ runs the same calls.
//
// Three kinds of check:
// * calls and reads as the worker, the demo and Node users write them;
// * `Members<T>` tables: the exact member names of each documented shape, so a
//   member renamed, added or dropped on the Rust side fails here until the API
//   change is meant (and this file, the README and the callers follow);
// * `@ts-expect-error` lines: misuse must stay an error, so a declaration that
//   decayed to `any` (or lost a member's type) fails too.
import init, {
  initSync,
  Deduplicator,
  auditLine,
  checkDeviceId,
  checkUplinkOptions,
  decodePayload,
  historyRequest,
  idempotencyKey,
  readingsFromPayload,
  isoTime,
  limits,
  parseUplink,
  SeqWindow,
  FillTracker,
} from "../../pkg/reconnect_dedupe.js";
import type {
  Admitted,
  Battery,
  Bounds,
  CodecInfo,
  DecodedPayload,
  DeviceConfigLimits,
  RejectionNames,
  PayloadConfig,
  PayloadFrame,
  PayloadReadings,
  DecodedSample,
  Audit,
  AuditContext,
  AuditCounts,
  AuditEvent,
  Burst,
  BurstOutcome,
  ConfigHint,
  DeduplicatorOptions,
  DeduplicatorStats,
  DeviceReadings,
  KeyAdmission,
  KeyedReading,
  Limits,
  Range,
  RawUplink,
  Reading,
  Refused,
  SeqGap,
  SeqKind,
  SeqObservation,
  SeqWindowTotals,
  FillCollection,
  FillObservation,
  FillSample,
  FillState,
  Rejection,
  UplinkOptions,
  UplinkPlan,
} from "../../pkg/reconnect_dedupe.js";

/** Every member of T, each exactly once: a missing or unknown name is an error. */
type Members<T> = { readonly [K in keyof Required<T>]: true };

export const shapes = {
  reading: { device_id: true, seq: true, ts: true, fill_pct: true } satisfies Members<Reading>,
  admitted: {
    index: true, key: true, device_id: true, seq: true, ts: true, fill_pct: true,
  } satisfies Members<Admitted>,
  rejection: { index: true, field: true, code: true, message: true } satisfies Members<Rejection>,
  outcome: {
    unique: true, duplicates_suppressed: true, duplicates: true, pending: true,
    rejected: true, seq_reuses: true, ticket: true, audit: true,
  } satisfies Members<BurstOutcome>,
  audit: { logged_at: true, level: true, event: true, payload: true } satisfies Members<Audit>,
  counts: {
    received: true, unique: true, duplicates_suppressed: true, cross_path_duplicates: true, pending: true,
    rejected: true, not_stored: true, parked: true, seq_reuses: true, evicted_before_ttl: true,
  } satisfies Members<AuditCounts>,
  context: { device_id: true, route: true, burst_id: true, error: true } satisfies Members<AuditContext>,
  admission: { verdicts: true, counts: true, line: true } satisfies Members<KeyAdmission>,
  options: { ttlMs: true, maxKeys: true } satisfies Members<DeduplicatorOptions>,
  uplinkOptions: {
    seqField: true, tsField: true, fillField: true, maxReadings: true,
  } satisfies Members<UplinkOptions>,
  stats: {
    keys: true, pending: true, admitted: true, duplicates: true, pending_hits: true,
    evicted_before_ttl: true, expired: true, released: true, seq_reuses: true,
    memory_bytes: true, ttl_ms: true, max_keys: true,
  } satisfies Members<DeduplicatorStats>,
  range: { min: true, max: true, default: true } satisfies Members<Range>,
  limits: { ttlMs: true, maxKeys: true, maxReadings: true, formats: true, codecs: true, codecInfo: true, deviceConfig: true, rejection: true, ignoredEvents: true } satisfies Members<Limits>,
  codecInfo: { needsPeriod: true, seqIsCounter: true, historyFPort: true, applicationPort: true } satisfies Members<CodecInfo>,
  deviceConfig: { bin_depth_mm: true, offset_mm: true, reporting_period_s: true, application_port: true } satisfies Members<DeviceConfigLimits>,
  rejectionNames: { codes: true, fields: true } satisfies Members<RejectionNames>,
  bounds: { min: true, max: true } satisfies Members<Bounds>,
  payloadConfig: { codec: true, bin_depth_mm: true, offset_mm: true, reporting_period_s: true, application_port: true } satisfies Members<PayloadConfig>,
  payloadFrame: { received_at: true, f_cnt: true, counter_ref: true, schedule_phase_s: true, frame: true } satisfies Members<PayloadFrame>,
  payloadReadings: { codec: true, battery: true, readings: true, rejected: true, counter_ref: true, schedule_phase_s: true } satisfies Members<PayloadReadings>,
  decoded: { codec: true, battery: true, samples: true } satisfies Members<DecodedPayload>,
  sample: {
    distance_mm: true, no_reading: true, device_time_s: true, app_counter: true, periods_ago: true,
  } satisfies Members<DecodedSample>,
  plan: {
    event: true, ignored: true, simulated: true, received: true, devices: true, rejected: true, raw: true,
  } satisfies Members<UplinkPlan>,
  raw: {
    device_id: true, f_port: true, payload: true, received_at: true, f_cnt: true, frame: true, codec_hint: true,
    config_hint: true,
  } satisfies Members<RawUplink>,
  configHint: { bin_depth_mm: true, offset_mm: true, reporting_period_s: true } satisfies Members<ConfigHint>,
  device: { device_id: true, readings: true } satisfies Members<DeviceReadings>,
  keyed: { index: true, key: true, seq: true, ts: true, fill_pct: true, frame: true } satisfies Members<KeyedReading>,
  refused: {
    index: true, field: true, code: true, message: true, device_id: true,
  } satisfies Members<Refused>,
};

const NOW = Date.parse("2026-07-16T09:00:11.204Z");
const reading: Reading = { device_id: "bin-A17", seq: 41, ts: "2026-07-16T09:00:00Z", fill_pct: 62.5 };

export async function loadInBrowser(url: URL): Promise<void> {
  await init({ module_or_path: url });
}

export function loadInNode(bytes: Uint8Array): void {
  initSync({ module: bytes });
}

export function keys(): string {
  const key: string = idempotencyKey(reading);
  // @ts-expect-error fill_pct is a number
  idempotencyKey({ ...reading, fill_pct: "62.5" });
  // @ts-expect-error a reading has all four members
  idempotencyKey({ device_id: "bin-A17", seq: 41, ts: "2026-07-16T09:00:00Z" });
  return key;
}

export function bursts(): number {
  const options: DeduplicatorOptions = { ttlMs: 6 * 3600_000, maxKeys: 100_000 };
  const dedup = new Deduplicator(options);
  new Deduplicator();
  new Deduplicator({ maxKeys: null });
  // @ts-expect-error the option is maxKeys
  new Deduplicator({ max_keys: 10 });

  const list: Burst = [reading, reading];
  const wrapped: Burst = { readings: [reading] };
  const out: BurstOutcome = dedup.processBurst(list, NOW);
  dedup.processBurst(wrapped, Date.now(), false);

  const first: Admitted | undefined = out.unique[0];
  const admittedKey: string | undefined = first?.key;
  const index: number | undefined = first?.index;
  const fill: number | undefined = first?.fill_pct;
  const dupes: number[] = out.duplicates;
  const pending: number[] = out.pending;
  const suppressed: number = out.duplicates_suppressed + out.seq_reuses;
  for (const r of out.rejected) {
    const why: string = `${r.index} ${r.field} ${r.code} ${r.message}`;
    void why;
  }
  const audit: Audit = out.audit;
  const line: string = `${audit.logged_at} ${audit.level} ${audit.event}`;
  const counts: AuditCounts = audit.payload;
  const notStored: number = counts.not_stored ?? 0;
  // Among duplicates_suppressed: the duplicates that are not a datalog copy of a live reading.
  const ownKeyDuplicates: number = counts.duplicates_suppressed - (counts.cross_path_duplicates ?? 0);
  const received: number =
    counts.unique + counts.duplicates_suppressed + (counts.pending ?? 0) + counts.rejected + notStored +
    (counts.parked ?? 0);
  // @ts-expect-error the ticket is null outside provisional admission
  const ticketNow: number = out.ticket;
  // @ts-expect-error no such member: the count is duplicates_suppressed
  out.suppressed;

  const json: string = dedup.processBurstJson(JSON.stringify(list), NOW);
  const bulk = JSON.parse(dedup.processBurstJson(new TextEncoder().encode(json), NOW, true)) as BurstOutcome;
  if (bulk.ticket !== null) {
    const confirmed: number = dedup.confirm(bulk.ticket);
    const released: number = dedup.release(bulk.ticket);
    void (confirmed + released);
  }
  const provisional = dedup.processBurst(list, NOW, true);
  if (provisional.ticket !== null) dedup.release(provisional.ticket);

  const held: boolean = dedup.contains(reading, NOW);
  const stats: DeduplicatorStats = dedup.stats();
  const size: number = stats.keys + stats.memory_bytes + stats.ttl_ms + stats.max_keys;
  // @ts-expect-error stats members are snake_case, as the core counts them
  stats.memoryBytes;

  const bytes: Uint8Array = dedup.snapshot();
  const again: Deduplicator = Deduplicator.restore(bytes, { maxKeys: 50_000 });
  Deduplicator.restore(bytes);
  again.free();
  {
    using scoped = new Deduplicator();
    scoped.stats();
  }
  void [admittedKey, index, fill, dupes, pending, line, received, ownKeyDuplicates, ticketNow, held];
  return suppressed + size;
}

export function worker(body: Uint8Array): string[] {
  const lim: Limits = limits();
  const ttl: Range = lim.ttlMs;
  const cap: number = lim.maxReadings.default + lim.maxKeys.max + ttl.min;
  const formats: string[] = lim.formats;

  const options: UplinkOptions = { fillField: "level", maxReadings: cap, seqField: "n", tsField: "t" };
  const plan: UplinkPlan = JSON.parse(parseUplink("ttn", body, options)) as UplinkPlan;
  checkUplinkOptions(options);
  // @ts-expect-error the option is fillField
  checkUplinkOptions({ fill_field: "/level" });
  const what: string = plan.event;
  const skip: boolean = plan.ignored || plan.simulated;
  const frames: (string | null)[] = plan.devices.flatMap((d) => d.readings.map((r) => r.frame));
  void [what, skip, frames];
  // An uplink without a fill level: its raw payload, for the codec (the rows stay rejected).
  const raw: RawUplink | null = plan.raw;
  if (raw !== null) {
    // Its bytes, as the codec takes them.
    const bytes: Uint8Array = Uint8Array.from(raw.payload);
    const codec: string | null = raw.codec_hint;
    const depth: number | undefined = raw.config_hint.bin_depth_mm;
    const at: [number, number, string] = [raw.f_port, raw.f_cnt, raw.received_at];
    const frame: string = raw.frame;
    // @ts-expect-error the hint may be absent
    const offset: number = raw.config_hint.offset_mm;
    void [bytes, codec, depth, at, frame, offset];
  }
  parseUplink("readings", "[]");
  // @ts-expect-error the option is fillField
  parseUplink("ttn", body, { fill_field: "level" });

  const lines: string[] = [];
  for (const device of plan.devices) {
    const keyed: KeyedReading[] = device.readings;
    const keys = keyed.map((r) => r.key).join("\n");
    const times = Float64Array.from(keyed, () => Date.now());
    const dedup = Deduplicator.fromKeys(keys, times, { ttlMs: ttl.default });
    Deduplicator.fromKeys(keys, [NOW]);
    const refused = plan.rejected.filter((r: Refused) => r.device_id === device.device_id).length;
    const context: AuditContext = { device_id: device.device_id, route: "ttn", burst_id: "b-1" };
    const admission: KeyAdmission = dedup.admitKeys(keys, NOW, refused, context);
    dedup.admitKeys(keys, NOW, undefined);
    const verdicts: Uint8Array = admission.verdicts;
    const admitted = keyed.filter((_, i) => verdicts[i] !== 2);
    const counts: AuditCounts = admission.counts;
    lines.push(admission.line, `${admitted.length} of ${counts.received}`);
  }
  const nobody: Refused[] = plan.rejected.filter((r) => r.device_id === null);
  const event: AuditEvent = nobody.length > 0 ? "burst_deduplicated" : "burst_not_stored";
  const counts: AuditCounts = {
    received: plan.received, unique: 0, duplicates_suppressed: 0, rejected: plan.received,
    seq_reuses: 0, evicted_before_ttl: 0,
  };
  lines.push(auditLine(event, counts, NOW, { route: "ttn", error: "origin down" }));
  auditLine("burst_not_stored", { ...counts, rejected: 0, not_stored: plan.received }, NOW);
  // An uplink kept undecoded until its device is configured.
  auditLine("burst_deduplicated", { ...counts, rejected: 0, parked: plan.received }, NOW);
  // @ts-expect-error an event the core does not know
  auditLine("burst_dropped", counts, NOW);
  // @ts-expect-error a context member the core does not know
  auditLine(event, counts, NOW, { device: "bin-A17" });
  lines.push(isoTime(NOW), ...formats);
  return lines;
}

/** The worker's read route checks the path's id as ingest does (throws `invalid_device_id`) and names it as readings do. */
export function readRoute(id: string): string {
  const canonical: string = checkDeviceId(id);
  // @ts-expect-error the id is a string
  checkDeviceId(17);
  // @ts-expect-error nowMs is a number, never a string
  isoTime("123");
  // @ts-expect-error a snapshot is bytes
  Deduplicator.restore("RDDS");
  // @ts-expect-error a ticket is a number
  new Deduplicator().confirm("1");
  // @ts-expect-error refused is a number
  new Deduplicator().admitKeys("", NOW, "1");
  return canonical;
}

/** A sensor's raw payload read by a codec: samples with a distance or why there is none. */
export function codecs(bytes: Uint8Array): number[] {
  const ids: string[] = limits().codecs;
  const out: DecodedPayload = decodePayload(ids[0], 85, bytes);
  const battery: Battery | null = out.battery;
  const mm: number[] = out.samples.flatMap((s: DecodedSample) => (s.distance_mm === null ? [] : [s.distance_mm]));
  const why: (string | null)[] = out.samples.map((s) => s.no_reading);
  // @ts-expect-error the payload is bytes
  decodePayload(ids[0], 85, "0175");
  // @ts-expect-error the port is a number
  decodePayload(ids[0], "85", bytes);
  void [battery, why];
  return mm;
}

/** A sensor that answers a history request: its port and the downlink's bytes. */
export function history(codec: string, startS: number, endS: number): { port: number; bytes: Uint8Array } | null {
  const info: CodecInfo | undefined = limits().codecInfo[codec];
  const bytes: Uint8Array | undefined = historyRequest(codec, startS, endS);
  const period: boolean = info?.needsPeriod ?? false;
  // @ts-expect-error the bounds are numbers
  historyRequest(codec, "0", endS);
  void period;
  return info?.historyFPort != null && bytes !== undefined ? { port: info.historyFPort, bytes } : null;
}

/** A raw payload as keyed readings of a device, ready to admit. */
export function payloadReadings(bytes: Uint8Array): string[] {
  const config: PayloadConfig = { codec: "milesight-iot/em500-udl", bin_depth_mm: limits().deviceConfig.bin_depth_mm.max };
  // frame: a plan's raw.frame.
  const frame: PayloadFrame = { received_at: "2026-07-16T09:00:00Z", f_cnt: 3, counter_ref: null, frame: "0123456789abcdef" };
  const out: PayloadReadings = readingsFromPayload("24E124136B502217", config, 85, bytes, frame);
  const next: number | null = out.counter_ref;
  const frames: (string | null)[] = out.readings.map((r) => r.frame);
  // @ts-expect-error bin_depth_mm is required
  readingsFromPayload("d", { codec: "dingtek/df703" }, 3, bytes, frame);
  // @ts-expect-error a frame identity is hex text
  readingsFromPayload("d", config, 85, bytes, { ...frame, frame: 0x0123 });
  void [next, frames];
  return out.readings.map((r: KeyedReading) => r.key);
}

/** A device's sequence window: observe seqs, read its gaps and totals, store its bytes. */
export function sequenceHealth(seqs: number[]): number {
  const window = new SeqWindow();
  const kinds: SeqKind[] = seqs.map((seq) => window.observe(seq, NOW).kind);
  const seen: SeqObservation = window.observe(3, NOW);
  const delay: number | null = seen.delay_ms;
  const restart: (number | null)[] = [seen.from, seen.to];
  const highest: number | undefined = window.highest;
  const open: SeqGap[] = window.gaps();
  const totals: SeqWindowTotals = window.totals();
  const bytes: Uint8Array = window.toBytes();
  const back: SeqWindow = SeqWindow.fromBytes(bytes);
  back.free();
  window.free();
  // @ts-expect-error a seq is a number
  new SeqWindow().observe("3", NOW);
  // @ts-expect-error the window's bytes are bytes
  SeqWindow.fromBytes("RDSW");
  // @ts-expect-error totals are snake_case, as the core counts them
  totals.tooOld;
  void [kinds, delay, restart, highest];
  const noticed: number[] = open.map((g: SeqGap) => g.first_noticed_ms);
  void noticed;
  return open.reduce((n, g) => n + g.to - g.from + 1, 0) + totals.too_old;
}

export const seqShapes = {
  observation: { kind: true, delay_ms: true, from: true, to: true } satisfies Members<SeqObservation>,
  gap: { from: true, to: true, first_noticed_ms: true } satisfies Members<SeqGap>,
  totals: {
    missing: true, recovered: true, repeats: true, resets: true, too_old: true,
    gaps_dropped: true, missing_dropped: true, closed_by_reset: true,
  } satisfies Members<SeqWindowTotals>,
};

/** A bin's fill by device time: readings in admission order, the state, a collection. */
export function binState(readings: { ts: string; fill_pct: number; key: string }[]): string | null {
  const tracker = new FillTracker(30);
  const seen: FillObservation[] = readings.map((r) => tracker.observe(r.ts, r.fill_pct, r.key));
  const late: (number | null)[] = seen.map((o) => (o.arrival === "late" ? o.late_by_ms : null));
  const emptied: (FillCollection | null)[] = seen.map((o) => o.collection);
  const state: FillState = tracker.state();
  const period: number | null = state.period_s;
  const newest: FillSample | null = state.newest;
  const copy: FillTracker = FillTracker.fromBytes(tracker.toBytes(), 30);
  copy.free();
  tracker.free();
  // @ts-expect-error a time is RFC 3339 text
  new FillTracker(30).observe(1784190000000, 50, "bin-7:1:0123456789abcdef");
  // @ts-expect-error an arrival is newest or late
  const wrong: FillObservation["arrival"] = "early";
  void [late, emptied, period, wrong];
  return newest?.key ?? null;
}

export const fillShapes = {
  observation: { arrival: true, late_by_ms: true, collection: true, glitch: true } satisfies Members<FillObservation>,
  state: { newest: true, previous: true, suspected: true, period_s: true } satisfies Members<FillState>,
  sample: { ts: true, fill_pct: true, key: true } satisfies Members<FillSample>,
  collection: { before: true, after: true } satisfies Members<FillCollection>,
};
