// The worker of src/worker/ with one change, for tests/bench/seq-window.mjs: its device
// object keeps its sequence window in memory between bursts (what caching the window
// would save: the `seq_window` row's read and `SeqWindow.fromBytes`, after the first
// burst). Each burst still observes its seqs and writes `toBytes` to the row in its
// transaction. Bench only: it ignores what the product must handle (a rolled-back
// transaction, a new Wasm instance after a trap).
import worker, { DeviceObject as Product, FleetObject } from "../../src/worker/index.js";

export { FleetObject };

export class DeviceObject extends Product {
  seqWindow(context) {
    this.window ??= super.seqWindow(context);
    // The caller frees the window it is given: this view's free() keeps the cached one.
    return Object.assign(Object.create(this.window), { free() {} });
  }
}

export default worker;
