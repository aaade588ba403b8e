// Bounded concurrency for the calls one request makes to device objects, and the yield
// that lets the runtime read its sockets between them.

/**
 * Resolves in the runtime's next pass over its timers and sockets. workerd's event loop
 * (KJ) looks at its sockets only when no event is queued (KJ's busy-poll interval is
 * "never" by default, and workerd does not set it): while calls keep following calls,
 * a request arriving on a new connection, or on a keep-alive one that was idle, is not
 * even read. Measured at 100 000 devices, 8 requests of 100 in flight: GET /v1/health
 * unanswered for minutes, its bytes unread in the socket, the main thread making no
 * epoll_wait in 10 s; some uplink requests timed out or were reset the same way, and
 * replies from the origin were not read in time (delivery "timed out after 10000 ms").
 * A timer fires in that same pass: when every call waits for one first, the queue
 * runs dry between calls, and each pass reads what has arrived. Each request waits on a
 * timer of its own (a promise shared across requests would hang them all if the
 * request owning its timer were cancelled).
 */
export function yieldToIo() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** `fn` over `items`, at most `limit` calls running at a time; results in the items' order. */
export async function mapAtMost(limit, items, fn) {
  const results = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
