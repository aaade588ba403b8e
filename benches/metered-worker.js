// The worker of src/worker/ with a meter on every Durable Object class it exports, for
// benches/cost.mjs: what Cloudflare bills, counted per object call and written to
// stdout as one JSON line each (`{"event":"meter", ...}`). It knows no class, method or
// table of the product: whatever index.js exports that extends DurableObject is metered.
//
// Per call that the runtime makes into an object (an RPC method, `alarm`, `fetch`: each
// one billed Durable Object request), the line holds:
// * `rows_read`, `rows_written`: the sums of the SQL cursors' own counters
//   (`cursor.rowsRead`, `cursor.rowsWritten`, what Cloudflare bills, index entries
//   included), read when the call has settled;
// * `by_sql`: the same per statement text, `{sql: [statements, rows read, rows written]}`;
// * `set_alarms` (each billed as a row written), `storage`: every call of a
//   `ctx.storage` method (transactionSync, sync, getAlarm, the KV methods, ...) by name,
//   and `kv_rows_read` / `kv_rows_written`, the keys the KV methods get / put or delete
//   (billed as rows, one per key as far as this meter can tell; no cursor shows them);
// * `wall_ms`, from the call's start (the constructor's, for the call that started the
//   object: `cold`) until its promise settled, and `db_bytes`, the database's size then.
// A call's line also takes what the object did outside any call since the last line
// (its constructor; work a call left running): totals are exact, and with calls of one
// object interleaved at their awaits the split between those calls is approximate.
// Work an object does while none of its calls runs (a promise a call did not await)
// gets a line of its own, `kind: "background"`, not a request; so does the constructor
// of an object the bench started (`kind: "wake"`, below).
//
// Timers (setTimeout, AbortSignal.timeout) set while an object's call runs are written
// as `meter_timer` lines (set, and settled: fired or cleared): a pending timer keeps an
// object from hibernating, and Cloudflare bills duration for it. With calls of several
// objects running, a timer is the object's whose code the meter saw run last (`current`),
// when that is one of them; else it names none, and lists them (`candidates`).
//
// GET /__meter answers the isolate's live figures (calls running, alarms set and not
// yet run, timers pending, lines written), so the bench knows when all is quiet without
// calling any object itself; POST /__meter/wake starts objects without a product call
// (`wake`). Each line names its object (`object`, the id; `name`, the name it was got
// by). Bench only: never deployed.
//
// How an object is metered: the class that extends DurableObject directly gets a parent
// of the meter's (its constructor wraps `ctx.storage` before the product's constructor
// runs), and each function on the class's prototypes is wrapped in place. A wrapped method
// meters a call only when the runtime made it: called by the product's own code (a stack
// frame below it), it runs unmetered, as part of the call it belongs to.
import { DurableObject } from "cloudflare:workers";
import * as product from "../src/worker/index.js";

export * from "../src/worker/index.js";

const now = () => performance.timeOrigin + performance.now();
const emit = (line) => console.log(JSON.stringify(line));
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const realAbortTimeout = AbortSignal.timeout;

// The isolate's live figures (GET /__meter).
const live = { lines: 0, running: new Map(), alarms: new Map(), timers: new Map(), errors: 0 };
let timerIds = 0;

function write(line) {
  live.lines += 1;
  emit(line);
}

/**
 * The keys a key-value call (of `ctx.storage` or `ctx.storage.kv`) names, billed as a row
 * each: `put(entries)`, `get([keys])`, `delete([keys])`, or one key. (What `list` reads
 * is not counted: no cursor shows it.)
 */
function keysOf(method, first) {
  if (Array.isArray(first)) return first.length;
  if (method === "put" && first !== null && typeof first === "object") return Object.keys(first).length;
  return 1;
}

/** The ids of the objects with a call running now. */
const runningObjects = () => [...live.running.keys()];
/**
 * The object whose code ran last, as far as the meter saw: a call's start, a storage
 * call. A timer set while calls of several objects run is that object's when it is one
 * of them (the code that sets a timer has touched its storage or just begun, with no
 * await between, in the product's calls); otherwise it is no single object's.
 */
let current = null;

class Meter {
  constructor(className, ctx) {
    this.className = className;
    this.object = ctx.id.toString();
    this.name = ctx.id.name ?? null;
    this.ctx = ctx;
    this.constructedAt = now();
    this.calls = 0;
    this.inFlight = 0;
    this.cursors = [];
    this.pending = Meter.empty();
    this.backgroundDue = false;
    this.woken = false;
  }

  static empty() {
    return { rows_read: 0, rows_written: 0, statements: 0, set_alarms: 0, kv_rows_read: 0, kv_rows_written: 0, storage: {}, by_sql: {} };
  }

  track(cursor, query) {
    current = this.object;
    this.pending.statements += 1;
    const sql = statementOf(query);
    this.cursors.push({ cursor, sql, read: 0, written: 0 });
    const s = (this.pending.by_sql[sql] ??= [0, 0, 0]);
    s[0] += 1;
    this.outsideCall();
  }

  storageCall(name, args) {
    current = this.object;
    this.pending.storage[name] = (this.pending.storage[name] ?? 0) + 1;
    const kv = name.replace(/^kv\./, "");
    if (kv === "get") this.pending.kv_rows_read += keysOf(kv, args[0]);
    if (kv === "put" || kv === "delete") this.pending.kv_rows_written += keysOf(kv, args[0]);
    if (name === "setAlarm") {
      this.pending.set_alarms += 1;
      live.alarms.set(this.object, +args[0]);
    }
    if (name === "deleteAlarm") live.alarms.delete(this.object);
    this.outsideCall();
  }

  /** Storage used while none of this object's calls runs, after its first: a background line soon. */
  outsideCall() {
    if (this.inFlight || !this.calls || this.backgroundDue) return;
    this.backgroundDue = true;
    realSetTimeout(() => {
      this.backgroundDue = false;
      if (!this.inFlight) write(this.line({ method: null, kind: "background", at: now(), wall_ms: 0, cold: false }));
    }, 0);
  }

  /**
   * The bench's wake-up call (`__meterWake`), not a product call: an object started by it
   * is warm for its first call. What its constructor did is written as a line of its own,
   * `kind: "wake"`, not a request: what an object pays each time it starts.
   */
  wake() {
    if (this.calls || this.woken) return;
    this.woken = true;
    write(this.line({ method: null, kind: "wake", at: this.constructedAt, wall_ms: now() - this.constructedAt, cold: true }));
  }

  begin(method) {
    const cold = this.calls === 0 && !this.woken;
    const at = cold ? Math.min(this.constructedAt, now()) : now();
    const call = { method, at, cold };
    current = this.object;
    this.calls += 1;
    this.inFlight += 1;
    live.running.set(this.object, (live.running.get(this.object) ?? 0) + 1);
    // The runtime ran the alarm it had: it is no longer pending (unless set again).
    if (method === "alarm") live.alarms.delete(this.object);
    return call;
  }

  end(call, error) {
    this.inFlight -= 1;
    const left = live.running.get(this.object) - 1;
    if (left) live.running.set(this.object, left);
    else live.running.delete(this.object);
    const kind = call.method === "alarm" ? "alarm" : call.method === "fetch" ? "fetch" : "rpc";
    const line = this.line({ method: call.method, kind, at: call.at, wall_ms: now() - call.at, cold: call.cold });
    if (error !== undefined) {
      live.errors += 1;
      line.error = String(error?.stack ?? error);
      // A throwing alarm is retried by the runtime (from 2 s on): still pending.
      if (kind === "alarm") live.alarms.set(this.object, now() + 2_000);
    }
    write(line);
  }

  /** A meter line with what is pending, which it takes. */
  line(fields) {
    const counts = this.pending;
    for (const t of this.cursors) {
      try {
        const read = t.cursor.rowsRead;
        const written = t.cursor.rowsWritten;
        counts.rows_read += read - t.read;
        counts.rows_written += written - t.written;
        if (read !== t.read || written !== t.written) {
          const s = (counts.by_sql[t.sql] ??= [0, 0, 0]);
          s[1] += read - t.read;
          s[2] += written - t.written;
        }
        t.read = read;
        t.written = written;
      } catch {
        // A cursor that cannot be read any more: what it read since is not counted.
        counts.unreadable_cursors = (counts.unreadable_cursors ?? 0) + 1;
      }
    }
    // A cursor is read again at the next line while a call of this object runs (it
    // may still be iterated); once none runs, what it read is what it was billed.
    if (!this.inFlight) this.cursors = [];
    this.pending = Meter.empty();
    let db_bytes = null;
    try {
      db_bytes = this.ctx.storage.sql.databaseSize;
    } catch {
      // Not a SQLite-backed object.
    }
    return { event: "meter", class: this.className, object: this.object, name: this.name, ...fields, ...counts, db_bytes };
  }
}

/** A statement's text as `by_sql` names it: white space collapsed, at most 160 characters. */
function statementOf(query) {
  const text = String(query).replace(/\s+/g, " ").trim();
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** Wraps `ctx.storage` (its methods, its SQL, its KV) so that `meter` counts what it is asked. */
function instrument(ctx, meter) {
  const storage = ctx.storage;
  wrapMethods(storage, Object.getPrototypeOf(storage), (name, args) => meter.storageCall(name, args));
  let sql = null;
  try {
    sql = storage.sql;
  } catch {
    // A key-value backed object has no SQL.
  }
  if (sql) {
    const exec = sql.exec;
    sql.exec = function exec_(...args) {
      const cursor = exec.apply(sql, args);
      meter.track(cursor, args[0]);
      return cursor;
    };
  }
  let kv = null;
  try {
    kv = storage.kv;
  } catch {
    // No synchronous KV API in this runtime.
  }
  if (kv) wrapMethods(kv, Object.getPrototypeOf(kv), (name, args) => meter.storageCall(`kv.${name}`, args));
}

/** Own wrappers on `target` of the functions of `proto`, each telling `count(name, args)` first. */
function wrapMethods(target, proto, count) {
  for (const name of Object.getOwnPropertyNames(proto)) {
    const d = Object.getOwnPropertyDescriptor(proto, name);
    if (name === "constructor" || typeof d.value !== "function") continue;
    const real = d.value;
    target[name] = function (...args) {
      count(name, args);
      return real.apply(target, args);
    };
  }
}

const meters = new WeakMap();

/** The meter's parent of a product class: it wraps the object's storage before the class's constructor runs. */
class MeteredObject extends DurableObject {
  constructor(ctx, env) {
    const meter = new Meter(new.target.name, ctx);
    instrument(ctx, meter);
    super(ctx, env);
    meters.set(this, meter);
  }

  /** Starts the object (if it is not running) without a product call: POST /__meter/wake. */
  __meterWake() {
    meters.get(this)?.wake();
    return true;
  }
}

/** Whether the caller of `fn` is the runtime: no JavaScript frame below it. */
function calledByRuntime(fn) {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  const probe = {};
  Error.captureStackTrace(probe, fn);
  Error.stackTraceLimit = limit;
  return !probe.stack.includes("\n");
}

function metered(name, real) {
  const wrapper = {
    [name](...args) {
      const meter = meters.get(this);
      if (!meter || !calledByRuntime(wrapper)) return real.apply(this, args);
      const call = meter.begin(name);
      let result;
      try {
        result = real.apply(this, args);
      } catch (e) {
        meter.end(call, e);
        throw e;
      }
      if (typeof result?.then !== "function") {
        meter.end(call);
        return result;
      }
      return result.then(
        (value) => {
          meter.end(call);
          return value;
        },
        (e) => {
          meter.end(call, e);
          throw e;
        },
      );
    },
  }[name];
  return wrapper;
}

const METERED = Symbol("metered");

/** Meters `cls` in place: its prototypes' methods, and its storage through MeteredObject. */
function meterClass(cls) {
  let top = cls;
  while (Object.getPrototypeOf(top) !== DurableObject && Object.getPrototypeOf(top) !== MeteredObject) top = Object.getPrototypeOf(top);
  if (Object.getPrototypeOf(top) === DurableObject) {
    Object.setPrototypeOf(top, MeteredObject);
    Object.setPrototypeOf(top.prototype, MeteredObject.prototype);
  }
  for (let proto = cls.prototype; proto !== MeteredObject.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const d = Object.getOwnPropertyDescriptor(proto, name);
      if (name === "constructor" || typeof d.value !== "function" || d.value[METERED]) continue;
      const wrapper = metered(name, d.value);
      wrapper[METERED] = true;
      Object.defineProperty(proto, name, { ...d, value: wrapper });
    }
  }
}

/** The names of the classes metered: every export of index.js that extends DurableObject. */
const meteredClasses = [];
for (const [name, value] of Object.entries(product)) {
  if (typeof value !== "function" || !DurableObject.prototype.isPrototypeOf(value.prototype)) continue;
  meterClass(value);
  meteredClasses.push(name);
}

/** Records a timer set now (while an object's call may run) and returns its settling function. */
function timerSet(kind, delay) {
  const objects = runningObjects();
  if (!objects.length) return () => {};
  const id = ++timerIds;
  const object = objects.length === 1 ? objects[0] : objects.includes(current) ? current : null;
  const timer = { id, kind, at: now(), delay_ms: Math.max(0, Number(delay) || 0), object, ...(object ? {} : { candidates: objects }) };
  live.timers.set(id, timer);
  write({ event: "meter_timer", phase: "set", ...timer });
  return (how) => {
    if (!live.timers.delete(id)) return;
    write({ event: "meter_timer", phase: "settled", id, how, at: now(), held_ms: now() - timer.at });
  };
}

const settleOf = new Map();
globalThis.setTimeout = function setTimeout(fn, delay, ...args) {
  const settle = timerSet("setTimeout", delay);
  let handle;
  const run =
    typeof fn === "function"
      ? function (...a) {
          settleOf.delete(handle);
          settle("fired");
          return fn.apply(this, a);
        }
      : fn;
  handle = realSetTimeout(run, delay, ...args);
  settleOf.set(handle, settle);
  return handle;
};
globalThis.clearTimeout = function clearTimeout(handle) {
  settleOf.get(handle)?.("cleared");
  settleOf.delete(handle);
  return realClearTimeout(handle);
};
AbortSignal.timeout = function timeout(ms) {
  const signal = realAbortTimeout.call(AbortSignal, ms);
  const settle = timerSet("AbortSignal.timeout", ms);
  signal.addEventListener("abort", () => settle("fired"));
  return signal;
};

/**
 * POST /__meter/wake with `[object id, ...]` (hex, as the meter lines give them): starts
 * each of those objects, or keeps it from being evicted, without a product call. The
 * bench wakes the objects that serve many devices (which a real fleet keeps busy) before
 * and during a window. An id is tried on every Durable Object namespace of `env`.
 */
async function wake(request, env) {
  const namespaces = Object.values(env).filter((v) => typeof v?.idFromString === "function");
  let woken = 0;
  await Promise.all(
    (await request.json()).map(async (hex) => {
      for (const ns of namespaces) {
        let id;
        try {
          id = ns.idFromString(hex);
        } catch {
          continue; // another namespace's id
        }
        if (await ns.get(id).__meterWake()) woken += 1;
        return;
      }
    }),
  );
  return Response.json({ woken });
}

/** GET /__meter: the isolate's live figures. */
function snapshot() {
  return {
    classes: meteredClasses,
    lines: live.lines,
    running: [...live.running.values()].reduce((n, k) => n + k, 0),
    errors: live.errors,
    alarms: [...live.alarms.values()],
    timers: [...live.timers.values()].map(({ at, delay_ms, kind }) => ({ kind, due: at + delay_ms })),
    now: now(),
  };
}

const worker = product.default;

export default {
  ...worker,
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/__meter") return Response.json(snapshot());
    if (path === "/__meter/wake") return wake(request, env);
    return worker.fetch(request, env, ctx);
  },
};
