// The comparison worker of benches/load.mjs: the same route (`POST /v1/readings`),
// the same bearer-token check, body limit and placement as src/worker/ (one Durable
// Object per group of devices, found by placement.js `groupName`, with one SQLite
// ledger for the group's devices; one call per group a request names), but no
// deduplication: every reading is parsed with JSON.parse and stored. The load run's
// ratio of the two is the dedupe's own cost (Wasm parsing, keys, the seen-set), net
// of the rows it saves writing.
import { DurableObject } from "cloudflare:workers";
import { groupName } from "../src/worker/placement.js";

const MAX_BODY_BYTES = 1_048_576;

export class PassthroughGroup extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS readings (
      device_id TEXT NOT NULL, seq INTEGER, ts TEXT, fill_pct REAL, received_at INTEGER NOT NULL, burst_id TEXT)`);
  }

  async store({ readings, burst_id }) {
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      for (const r of readings) {
        this.sql.exec("INSERT INTO readings VALUES (?, ?, ?, ?, ?, ?)", r.device_id, r.seq ?? null, r.ts ?? null, r.fill_pct ?? null, now, burst_id);
      }
    });
    return { stored: readings.length };
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== "/v1/readings") return json(404, { error: { code: "not_found" } });
    if (request.method !== "POST") return json(405, { error: { code: "method_not_allowed" } });
    if (!(await authorised(request, env))) return json(401, { error: { code: "unauthorized" } });
    const body = await request.arrayBuffer();
    if (body.byteLength > MAX_BODY_BYTES) return json(413, { error: { code: "body_too_large" } });
    let parsed;
    try {
      parsed = JSON.parse(new TextDecoder().decode(body));
    } catch {
      return json(400, { error: { code: "invalid_json" } });
    }
    const readings = Array.isArray(parsed) ? parsed : parsed?.readings;
    if (!Array.isArray(readings)) return json(400, { error: { code: "invalid_burst" } });
    const byGroup = new Map();
    for (const r of readings) {
      const name = groupName(typeof r?.device_id === "string" ? r.device_id : "");
      if (!byGroup.has(name)) byGroup.set(name, []);
      byGroup.get(name).push(r);
    }
    const burst_id = crypto.randomUUID();
    const replies = await Promise.all(
      [...byGroup].map(([name, list]) => env.GROUPS.get(env.GROUPS.idFromName(name)).store({ readings: list, burst_id })),
    );
    return json(200, { burst_id, received: readings.length, stored: replies.reduce((n, r) => n + r.stored, 0) });
  },
};

async function authorised(request, env) {
  const given = /^Bearer\s+(.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
  if (!given || !env.INGEST_TOKEN) return false;
  const enc = new TextEncoder();
  const [a, b] = await Promise.all([crypto.subtle.digest("SHA-256", enc.encode(given.trim())), crypto.subtle.digest("SHA-256", enc.encode(env.INGEST_TOKEN))]);
  return crypto.subtle.timingSafeEqual(a, b);
}

function json(status, body) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8" } });
}
