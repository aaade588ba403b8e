// Who may call the /v1 routes: the shared secret INGEST_TOKEN, presented as
// `Authorization: Bearer <token>` or as the bare value of AUTH_HEADER (its name is
// validated in config.js). Both sides are trimmed; the comparison is constant-time.
import { HttpError } from "./core.js";

/** Fails closed: without a configured token every /v1 route answers 503, health included. */
export function requireConfiguredToken(cfg) {
  if (!cfg.INGEST_TOKEN) {
    throw new HttpError(503, "auth_not_configured", "INGEST_TOKEN is not set (or only white space); the worker refuses every /v1 request");
  }
}

/** Throws 401 `unauthorized` unless `request` carries the configured token. */
export async function authenticate(request, cfg) {
  requireConfiguredToken(cfg);
  const auth = request.headers.get("authorization");
  const bearer = auth && /^Bearer\s+(.+)$/i.exec(auth)?.[1];
  const custom = cfg.AUTH_HEADER !== "authorization" ? request.headers.get(cfg.AUTH_HEADER) : null;
  const given = bearer ?? custom;
  if (given === null || given === undefined) {
    throw new HttpError(401, "unauthorized", `send "Authorization: Bearer <token>" or the ${cfg.AUTH_HEADER} header`, {
      "www-authenticate": "Bearer",
    });
  }
  if (!(await sameSecret(given.trim(), cfg.INGEST_TOKEN))) throw new HttpError(401, "unauthorized", "wrong token");
}

/** Constant-time comparison of SHA-256 digests (equal length, hides the token's length). */
async function sameSecret(a, b) {
  const enc = new TextEncoder();
  const [da, db] = await Promise.all([crypto.subtle.digest("SHA-256", enc.encode(a)), crypto.subtle.digest("SHA-256", enc.encode(b))]);
  return crypto.subtle.timingSafeEqual(da, db);
}
