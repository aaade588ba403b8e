// Who may call the /v1 routes: the shared secret INGEST_TOKEN, presented as
// `Authorization: Bearer <token>`, as the password of `Authorization: Basic
// base64(user:password)` (The Things Stack's "Request authentication"; any user name
// unless BASIC_AUTH_USER is set), or as the bare value of AUTH_HEADER (its name is
// validated in config.js). Both sides are trimmed; the comparison is constant-time.
// A 401 says what was received and what is expected, and never shows a token or a
// password: a user name is shown JSON-quoted (at most 64 characters) unless it holds
// the token or the token holds a colon, a scheme only when it could be a scheme name
// and does not hold the token.
import { HttpError } from "./core.js";

/**
 * Every 401 challenges for Basic, with its charset (RFC 7617), so that a browser opening
 * a /v1 page prompts for a user name and password. Bearer is accepted all the same but
 * not offered: a response's WWW-Authenticate fields reach the client joined into one
 * (the Fetch standard's Headers), and Chromium reads one field as one challenge, so
 * `Bearer, Basic realm=...` was a Bearer challenge with odd parameters, and no prompt.
 */
const CHALLENGE = 'Basic realm="reconnect-dedupe", charset="UTF-8"';
/** At most this much of a received user name or scheme is shown in a 401. */
const SHOWN_USER = 64;
const SHOWN_SCHEME = 32;
/** RFC 9110 token characters: what an auth-scheme name may have. */
const SCHEME_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Fails closed: without a configured token every /v1 route answers 503, health included. */
export function requireConfiguredToken(cfg) {
  if (!cfg.INGEST_TOKEN) {
    throw new HttpError(503, "auth_not_configured", "INGEST_TOKEN is not set (or only white space); the worker refuses every /v1 request");
  }
}

/** Throws 401 `unauthorized` unless `request` carries the configured token. */
export async function authenticate(request, cfg) {
  requireConfiguredToken(cfg);
  const refused = await refusal(request, cfg);
  if (refused) throw new HttpError(401, "unauthorized", `${refused}; ${expected(cfg)}`, { "www-authenticate": CHALLENGE });
}

/**
 * What was received, when it does not carry the token; null when it does. A Bearer
 * or Basic `Authorization` and the AUTH_HEADER header (when configured and present)
 * may each carry it; when neither does, the first of them is described.
 */
async function refusal(request, cfg) {
  const auth = request.headers.get("authorization") || null;
  const custom = cfg.AUTH_HEADER !== "authorization" ? request.headers.get(cfg.AUTH_HEADER) : null;
  const [, scheme = "", rest = ""] = auth ? /^(\S+)\s*(.*)$/s.exec(auth) : [];
  let byAuth;
  if (/^bearer$/i.test(scheme)) byAuth = await bearerRefusal(rest, cfg);
  else if (/^basic$/i.test(scheme)) byAuth = await basicRefusal(rest, cfg);
  const byCustom = custom === null ? undefined : (await sameSecret(custom.trim(), cfg.INGEST_TOKEN)) ? null : `${cfg.AUTH_HEADER}: a wrong token`;
  if (byAuth === null || byCustom === null) return null;
  if (byAuth || byCustom) return byAuth || byCustom;
  if (auth) return `Authorization: ${await unsupported(scheme, rest, cfg)}`;
  const none = cfg.AUTH_HEADER !== "authorization" ? `no Authorization header and no ${cfg.AUTH_HEADER} header` : "no Authorization header";
  return `no credentials: ${none}`;
}

async function bearerRefusal(token, cfg) {
  if (!token.trim()) return "Authorization: Bearer without a token";
  return (await sameSecret(token.trim(), cfg.INGEST_TOKEN)) ? null : "Authorization: Bearer with a wrong token";
}

/** `credentials` of `Authorization: Basic`: base64 (RFC 4648, padded) of UTF-8 `user:password`. */
async function basicRefusal(credentials, cfg) {
  if (!credentials) return "Authorization: Basic without credentials";
  let decoded = null;
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(credentials) && credentials.length % 4 === 0) {
    const bytes = Uint8Array.from(atob(credentials), (c) => c.charCodeAt(0));
    try {
      decoded = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {}
  }
  // RFC 7617: the user-id cannot hold a colon; the password may.
  const colon = decoded === null ? -1 : decoded.indexOf(":");
  if (colon < 0) return 'Authorization: Basic whose credentials are not base64 of "user:password"';
  const user = decoded.slice(0, colon).trim();
  const password = decoded.slice(colon + 1).trim();
  // Every check runs, in constant time, whatever the outcome of the others.
  const [rightPassword, userIsToken] = await Promise.all([sameSecret(password, cfg.INGEST_TOKEN), sameSecret(user, cfg.INGEST_TOKEN)]);
  if (userIsToken) return "Authorization: Basic with the token as the user name";
  // A user name holding the token ("Bearer <token>"), or the start of a token that
  // holds a colon (the bare token encoded), would show the secret.
  // Never shown when it holds the token, nor when the token holds a colon: a user name
  // shown or hidden depending on the token's first part would tell a guesser which.
  const who = cfg.INGEST_TOKEN.includes(":") || user.includes(cfg.INGEST_TOKEN) ? "(not shown)" : shown(user);
  if (cfg.BASIC_AUTH_USER && user !== cfg.BASIC_AUTH_USER) return `Authorization: Basic for user ${who}, not the user name BASIC_AUTH_USER sets`;
  return rightPassword ? null : `Authorization: Basic for user ${who} with a wrong password`;
}

/** A user name, JSON-quoted, cut to SHOWN_USER characters. */
function shown(user) {
  const chars = [...user];
  if (chars.length <= SHOWN_USER) return JSON.stringify(user);
  return `${JSON.stringify(chars.slice(0, SHOWN_USER).join(""))} (first ${SHOWN_USER} of ${chars.length} characters)`;
}

/**
 * An `Authorization` the worker does not read. Its first word is named only when it
 * is followed by credentials, could be a scheme name and is not the token: a lone
 * value may well be the token itself.
 */
async function unsupported(scheme, rest, cfg) {
  if (!rest || !SCHEME_NAME.test(scheme) || scheme.includes(cfg.INGEST_TOKEN)) return "a value with no known scheme (not shown)";
  if (scheme.length > SHOWN_SCHEME) return `a scheme of ${scheme.length} characters (not shown), which is not supported`;
  return `the scheme ${JSON.stringify(scheme)}, which is not supported`;
}

/** The ways of presenting the token this configuration accepts. */
function expected(cfg) {
  const user = cfg.BASIC_AUTH_USER ? "the user name set in BASIC_AUTH_USER" : "any user name";
  const custom = cfg.AUTH_HEADER !== "authorization" ? `, or as the value of ${cfg.AUTH_HEADER}` : "";
  return `expected the token as "Authorization: Bearer <token>" or as the password of "Authorization: Basic" (${user})${custom}`;
}

/** Constant-time comparison of SHA-256 digests (equal length, hides the token's length). */
async function sameSecret(a, b) {
  const enc = new TextEncoder();
  const [da, db] = await Promise.all([crypto.subtle.digest("SHA-256", enc.encode(a)), crypto.subtle.digest("SHA-256", enc.encode(b))]);
  return crypto.subtle.timingSafeEqual(da, db);
}
