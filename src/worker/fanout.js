// Bounded concurrency for the calls one request makes to device objects.

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
