// The worker of src/worker/ with one change, for tests/bench/seq-window.mjs: its device
// object never feeds the sequence window. `observeSeqs` answers "nothing recovered, no
// reset" (what a burst of consecutive seqs gets from the real one) without reading the
// `seq_window` row, `SeqWindow.fromBytes`, the `observe` calls, `toBytes` or writing the
// row back. Everything else is the product's code, so the difference between the two
// under the same bursts is the window's share of a burst.
import worker, { DeviceObject as Product, FleetObject } from "../../src/worker/index.js";

export { FleetObject };

export class DeviceObject extends Product {
  observeSeqs() {
    return { recovered: [], resets: [] };
  }
}

export default worker;
