// The Wasm core, instantiated once per isolate at module scope. Instantiation draws
// no random values (the core seeds its hash lazily on first use), as workerd
// requires of global scope.
import wasmModule from "../../pkg/reconnect_dedupe_bg.wasm";
import * as core from "../../pkg/reconnect_dedupe.js";

core.initSync({ module: wasmModule });

let generation = 0;

/** Bumped on every re-instantiation: objects made before it are stale. */
export function wasmGeneration() {
  return generation;
}

/**
 * Runs `fn`; if the instance traps (`WebAssembly.RuntimeError`), re-instantiates
 * the module so the isolate keeps serving, and rethrows a coded 500 error.
 */
export function guarded(fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) {
      // wasm-bindgen's reset (the build runs it with --experimental-reset-state-function,
      // scripts/bin/wasm-bindgen), exported as `reinstantiate` by scripts/lib-pkg.mjs.
      core.reinstantiate();
      generation += 1;
      throw new HttpError(500, "wasm_trap", "the core trapped; it was re-instantiated, retry the request");
    }
    throw e;
  }
}

/** An error with an HTTP status and a stable code, answered as JSON. */
export class HttpError extends Error {
  constructor(status, code, message, headers = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const { auditLine, checkDeviceId, checkUplinkOptions, Deduplicator, FillTracker, historyRequest, idempotencyKey, isoTime, limits, parseUplink, readingsFromPayload, readObject, SeqWindow } = core;

/** What each codec's sensor does besides its bytes, by codec id (the core's `limits().codecInfo`). */
export const CODEC_INFO = limits().codecInfo;

/** Bytes (a Uint8Array or an ArrayBuffer) as lower-case hex. */
export function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Logs the audit line of one device's burst of which nothing was stored or counted
 * (the device object was unreachable, or could not register): `readings` keyed ones
 * not stored, `refused` rejected while routing.
 */
export function logNothingStored(context, readings, refused, error) {
  // The counts it has; the core's AuditCounts gives every other one as 0.
  const counts = { received: readings + refused, rejected: refused, not_stored: readings };
  console.log(guarded(() => auditLine("burst_not_stored", counts, Date.now(), { ...context, error })));
}

/**
 * The verdict bytes of `admitKeys` (src/wasm/deduplicator.rs, `KeyAdmission`): 0 admitted, 1
 * admitted with a seq reuse, 2 duplicate, 3 pending (a provisional key of another
 * call; the worker makes none).
 */
export const ADMITTED = new Set([0, 1]);
/** Admitted with a seq reuse: the reading's verdict is `conflict` (admission.js `admit`). */
export const CONFLICT = 1;
export const DUPLICATE = 2;
