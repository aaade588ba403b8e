// A fetch bounded in time whose timer ends with it. AbortSignal.timeout() would do the
// same, but its timer stays pending after the answer until it fires, and a Durable
// Object with a pending timer cannot hibernate: on Cloudflare every delivery would bill
// ORIGIN_TIMEOUT_MS of duration, and keep the object in memory that long.

/**
 * `use(response)` of `fetch(url, init)`, the whole of it (headers and whatever `use`
 * reads of the body) within `ms`; past it, the fetch is aborted and this rejects with
 * a TimeoutError. The timer is cleared as soon as it settles.
 */
export async function fetchWithin(url, init, ms, use) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")), ms);
  try {
    return await use(await fetch(url, { ...init, signal: controller.signal }));
  } finally {
    clearTimeout(timer);
  }
}
