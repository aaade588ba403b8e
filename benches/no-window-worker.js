// The worker of src/worker/ with one change, for benches/seq-window.mjs: no
// device's sequence window is ever fed. `Device.observeSeqs` (device.js) answers
// "nothing recovered, no reset" (what a burst of consecutive seqs gets from the real
// one) and no window, so the burst skips `SeqWindow.fromBytes` of the window its group
// holds, the `observe` calls, `totals` and `toBytes`, and the group's figures keep no
// window for it (figures.js `countBurst` sets one only when given). The replay of a
// restarted group feeds none either (`Figures.setWindow` keeps nothing), so the
// checkpoints hold none. Everything else is the product's code (each row still
// carries its `window_seq`), so the difference between the two under the same bursts
// is the window's share of a burst.
import { Device } from "../src/worker/device.js";
import { Figures } from "../src/worker/figures.js";

export * from "../src/worker/index.js";
export { default } from "../src/worker/index.js";

Device.prototype.observeSeqs = function observeSeqs() {
  return { recovered: [], resets: [] };
};

Figures.prototype.setWindow = function setWindow() {};
