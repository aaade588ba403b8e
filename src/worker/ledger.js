// A group's ledger as a whole: which rows retention deletes, and the backlog figures of
// the group (rows, pending, delivered, refused by the origin) for the roll-up, kept
// up in memory rather than counted at every flush or written at every change.
import { countBacklog, firstPending, openBatch, outboxThrough } from "./delivery.js";

/** Rows one retention pass deletes, at most (the alarm comes back at once for more). */
const RETENTION_ROWS = 5_000;

/**
 * The group's backlog figures, counted from its rows once per object instance (the
 * first flush) and then moved by every change (`add`, `delivered`, `refused`), each
 * made after the write it follows has committed. `dirty`: changed since the last flush.
 */
export class Backlog {
  constructor(sql) {
    this.sql = sql;
    this.counts = null;
    this.dirty = true;
  }

  /** `{pending, delivered, refused, ledger_rows}` now. */
  get() {
    this.counts ??= countBacklog(this.sql);
    return this.counts;
  }

  /** Moves `name` by `n` (before the first count: that count sees the change). */
  add(name, n) {
    if (n && this.counts) this.counts[name] += n;
    this.dirty = true;
  }

  delivered(n) {
    this.add("pending", -n);
    this.add("delivered", n);
  }

  refused(n) {
    this.add("pending", -n);
    this.add("refused", n);
  }

  changed() {
    this.dirty = true;
  }

  /**
   * The figures a flush carries (fleet.js): the counts, the failed attempts of the
   * readings in the open batch, and the admission time of the oldest reading still
   * waiting for the origin.
   */
  figures() {
    const c = this.get();
    const open = openBatch(this.sql);
    const oldest = firstPending(this.sql);
    return {
      pending_deliveries: c.pending,
      delivered: c.delivered,
      failed_attempts: open && open.last_rowid !== null ? open.attempts * open.rows : 0,
      ledger_rows: c.ledger_rows,
      refused_by_origin: c.refused,
      oldest_undelivered_at: oldest?.admitted_at ?? null,
    };
  }
}

/**
 * A row retention may delete: the ledger's only (ORIGIN_URL empty when admitted), or
 * delivered (`through`: the outbox cursor). A refused row waits for a redrive, and a
 * reading still to deliver for its delivery.
 */
const done = (r, through) => r.state === "stored" || r.state === "delivered" || (r.state === "pending" && r.rowid <= through);

/**
 * Deletes, oldest first, the rows admitted more than RETENTION_MS ago that are done
 * (`done`), at most RETENTION_ROWS, and the delivery log lines of rows gone; reads
 * from `from` (a rowid: the rows before it were deleted or are refused) and stops at
 * the first row too young or still to deliver. Returns `{from, deleted, delivered,
 * more}` (`more`: it stopped at RETENTION_ROWS).
 */
export function retire(storage, cfg, now, from) {
  const sql = storage.sql;
  const cut = now - cfg.RETENTION_MS;
  const through = outboxThrough(sql);
  const gone = [];
  let delivered = 0;
  let at = from;
  // Read one row at a time, and no further than the first that stays: a row read is billed.
  for (const r of sql.exec("SELECT rowid, state, admitted_at FROM readings WHERE rowid > ? ORDER BY rowid", from)) {
    if (gone.length >= RETENTION_ROWS || r.admitted_at > cut || (r.state !== "refused" && !done(r, through))) break;
    if (r.state !== "refused") {
      gone.push(r.rowid);
      if (r.state !== "stored") delivered += 1;
    }
    at = r.rowid;
  }
  if (gone.length) {
    storage.transactionSync(() => {
      for (let i = 0; i < gone.length; i += 100) {
        const part = gone.slice(i, i + 100);
        sql.exec(`DELETE FROM readings WHERE rowid IN (${part.map(() => "?").join(",")})`, ...part);
      }
      // A delivery line whose rows are all gone (its range below every row left).
      const first = sql.exec("SELECT MIN(rowid) AS at FROM readings").one().at ?? Number.MAX_SAFE_INTEGER;
      sql.exec("DELETE FROM deliveries WHERE first_rowid < ?1 AND last_rowid < ?1", first);
    });
  }
  return { from: at, deleted: gone.length, delivered, more: gone.length >= RETENTION_ROWS };
}

/**
 * When retention next has rows to delete: the admission of the first row from `from`
 * on (refused rows passed over) plus RETENTION_MS and `slack`, if that row is done;
 * null when none is (the next delivery schedules again). The slack (a tenth of the
 * retention, at most an hour) lets one alarm delete what a busy group admitted over
 * that time rather than wake for every row as it comes due (each alarm is a billed
 * request); an alarm run for delivery or a flush deletes what is due anyway. So a row
 * is kept at least RETENTION_MS, and at most that and the slack.
 */
export function retentionDue(sql, cfg, from) {
  const through = outboxThrough(sql);
  let first;
  for (const r of sql.exec("SELECT rowid, state, admitted_at FROM readings WHERE rowid > ? ORDER BY rowid LIMIT 16", from)) {
    if (r.state === "refused") continue;
    first = r;
    break;
  }
  const slack = Math.min(cfg.RETENTION_MS / 10, 3_600_000);
  return first && done(first, through) ? first.admitted_at + cfg.RETENTION_MS + slack : null;
}
