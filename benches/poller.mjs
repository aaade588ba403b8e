// bench:fleet's poller, on a thread of its own (fleet.mjs `poller`): GET `route` every
// `everyMs` on one keep-alive connection until told "stop", then posts back every
// poll's latency (ms), when it was sent (ms since the epoch) and the failures by
// outcome (every answer but a 200). Its own event loop: a poll is answered when the
// worker answers it, not when the bench's main thread gets round to reading it.
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import { outcomeOf, send } from "./http-client.mjs";

const { port, route, headers, everyMs, timeoutMs } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
const sentAt = [];
const failures = new Map();
let stopped = false;
parentPort.once("message", () => (stopped = true));

while (!stopped) {
  const t0 = performance.now();
  const res = await send(port, agent, "GET", route, headers, null, timeoutMs);
  latencies.push(res.ms);
  sentAt.push(performance.timeOrigin + t0);
  if (res.status !== 200) {
    const why = outcomeOf(res);
    failures.set(why, (failures.get(why) ?? 0) + 1);
  }
  const wait = everyMs - (performance.now() - t0);
  if (wait > 0) await sleep(wait);
}
agent.destroy();
parentPort.postMessage({ latencies, sentAt, failures: [...failures] });
