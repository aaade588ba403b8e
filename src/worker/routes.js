// The names and sizes of the HTTP API that the router (index.js) enforces and the
// OpenAPI document (openapi.js) describes: defined here once, read by both.
import { limits } from "./core.js";

/** Webhook routes (/v1/uplinks/{route}): every format the core maps but the native one (/v1/readings). */
export const UPLINK_ROUTES = limits().formats.filter((f) => f !== "readings");

/** The events ChirpStack's HTTP integration posts (`?event=`); only `up` carries readings. */
export const CHIRPSTACK_EVENTS = ["up", "join", "ack", "txack", "log", "status", "location", "integration"];
/** The ChirpStack events the worker acknowledges unread and counts as ignored (index.js `acknowledge`). */
export const CHIRPSTACK_IGNORED = CHIRPSTACK_EVENTS.filter((e) => e !== "up");

/**
 * Every `<route>/<event>` the worker acknowledges unread (index.js `acknowledge`): the
 * core's, per format (`limits().ignoredEvents`), and ChirpStack's (CHIRPSTACK_IGNORED).
 */
export const IGNORED_EVENTS = [
  ...Object.entries(limits().ignoredEvents).flatMap(([route, events]) => events.map((event) => `${route}/${event}`)),
  ...CHIRPSTACK_IGNORED.map((event) => `chirpstack/${event}`),
];

/** Rows per page of a paged read (`limit`). */
export const PAGE_ROWS = { min: 1, max: 1000, default: 100 };

/** The `key` parameters one re-drive takes. */
export const REDRIVE_KEYS = 1000;

/** The longest key a forget body may name, in characters (code points). */
export const FORGET_KEY_CHARS = 1024;

/**
 * Rows one bulk configuration request (POST /v1/devices/config) takes: a city's 10 000
 * bins in one call. Its CSV is ~0.6 MB, within MAX_BODY_BYTES' default; its rows reach
 * at most GROUPS group objects, one call each, whatever their number. Bounded because
 * the reply holds a result per row and each group's call configures its share one
 * device after another (each decoding up to UNPARK_PER_CALL parked uplinks).
 */
export const BULK_CONFIG_ROWS = 10_000;
