# Self-hosting on workerd, the open-source runtime of Cloudflare Workers: the worker
# that `wrangler deploy` would upload, on one machine, its Durable Objects in SQLite
# files on local disk, the demo page (www/) beside it. Started by `npm run serve:workerd`
# (scripts/serve-workerd.mjs) and `npm start` (scripts/start.mjs), which make the
# bundle, supply the values and run
#
#   workerd serve -I <bundle dir> selfhost/workerd.capnp \
#     --socket-addr http=<listen> --directory-path data=<data dir> \
#     --directory-path www=<repository>/www --control-fd 3
#
# The schema is the installed workerd's own: node_modules/workerd/workerd.capnp
# (cloudflare/workerd src/workerd/server/workerd.capnp). docs/self-hosting.md "Self-hosting on workerd"
# says what this is and what it is not.

using Workerd = import "/workerd/workerd.capnp";

# The modules of `wrangler deploy --dry-run --outdir <bundle dir>`: index.js and the
# Wasm under the hashed name index.js imports. serve-workerd.mjs writes this file into
# the bundle directory at each start; `-I <bundle dir>` finds it.
using Bundle = import "/bundle.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    # The demo page: www/ with each file's type (selfhost/assets.js), the ASSETS binding
    # below, as [assets] in wrangler.toml is on Cloudflare.
    (name = "assets", worker = .assets),
    # www/ itself, read only. Set by --directory-path www=<repository>/www (relative
    # paths here would be read from the directory workerd is started in).
    (name = "www", disk = (writable = false)),
    # Where the objects' SQLite files live: one directory per class (its uniqueKey),
    # one <object id>.sqlite per object, and metadata.sqlite with the pending alarms.
    # Overridden by --directory-path data=<dir> (`npm run serve:workerd -- --data <dir>`).
    (name = "data", disk = (path = ".selfhost/data", writable = true)),
    # The worker's fetch(): ORIGIN_URL, a The Things Stack downlink URL (only hosts in
    # BACKFILL_HOSTS, src/worker/backfill.js) and CHIRPSTACK_API_URL. workerd's default
    # allows public addresses only; a self-hosted origin or network server is usually on
    # this machine or the LAN, so private ones (loopback included) are allowed too.
    (name = "internet", network = (
      allow = ["public", "private"],
      tlsOptions = (trustBrowserCas = true),
    )),
  ],
  sockets = [
    # Plain HTTP: put TLS (a reverse proxy) in front. Overridden by
    # --socket-addr http=<addr> (`npm run serve:workerd -- --listen <addr>`).
    (name = "http", address = "127.0.0.1:8788", http = (), service = "main"),
    # The data directory's lock: while this workerd runs it listens on
    # <data dir>/workerd.sock, so a second workerd given the same directory cannot
    # (workerd does not replace a socket file) and stops. serve-workerd.mjs refuses to
    # start when something answers there, and removes the file a stopped workerd left.
    # It serves the same worker (the token applies), to users who may write the file.
    # Overridden by --socket-addr lock=unix:<data dir>/workerd.sock.
    (name = "lock", address = "unix:.selfhost/data/workerd.sock", http = (), service = "main"),
  ],
);

const worker :Workerd.Worker = (
  modules = Bundle.modules,
  # As wrangler.toml (serve-workerd.mjs refuses to start when they differ).
  compatibilityDate = "2026-04-01",
  bindings = [
    # wrangler.toml [durable_objects].
    (name = "GROUPS", durableObjectNamespace = "GroupObject"),
    (name = "DEVICES", durableObjectNamespace = "DeviceObject"),
    (name = "FLEET", durableObjectNamespace = "FleetObject"),
    # The worker's variables (src/worker/variables.js; README "Configuration"): every
    # one, secrets included, and no other; serve-workerd.mjs refuses to start when this
    # list and the module's differ. It sets each in workerd's environment as the
    # environment it is started with or wrangler.toml [vars] gives it; one that neither
    # sets is unset, bound as null, and the worker takes its default.
    (name = "INGEST_TOKEN", fromEnvironment = "INGEST_TOKEN"),
    (name = "CHIRPSTACK_API_TOKEN", fromEnvironment = "CHIRPSTACK_API_TOKEN"),
    (name = "TTL_MS", fromEnvironment = "TTL_MS"),
    (name = "MAX_KEYS_PER_DEVICE", fromEnvironment = "MAX_KEYS_PER_DEVICE"),
    (name = "LEDGER_RETENTION_MS", fromEnvironment = "LEDGER_RETENTION_MS"),
    (name = "MAX_BODY_BYTES", fromEnvironment = "MAX_BODY_BYTES"),
    (name = "MAX_READINGS", fromEnvironment = "MAX_READINGS"),
    (name = "MAX_DEVICES_PER_REQUEST", fromEnvironment = "MAX_DEVICES_PER_REQUEST"),
    (name = "ORIGIN_URL", fromEnvironment = "ORIGIN_URL"),
    (name = "ORIGIN_TIMEOUT_MS", fromEnvironment = "ORIGIN_TIMEOUT_MS"),
    (name = "RETRY_BASE_MS", fromEnvironment = "RETRY_BASE_MS"),
    (name = "RETRY_MAX_MS", fromEnvironment = "RETRY_MAX_MS"),
    (name = "DELIVERY_BATCH", fromEnvironment = "DELIVERY_BATCH"),
    (name = "STATS_FLUSH_MS", fromEnvironment = "STATS_FLUSH_MS"),
    (name = "CROSS_PATH_TOLERANCE_MS", fromEnvironment = "CROSS_PATH_TOLERANCE_MS"),
    (name = "COLLECTION_DROP_PCT", fromEnvironment = "COLLECTION_DROP_PCT"),
    (name = "STALE_PERIODS", fromEnvironment = "STALE_PERIODS"),
    (name = "BACKFILL", fromEnvironment = "BACKFILL"),
    (name = "BACKFILL_AFTER_MS", fromEnvironment = "BACKFILL_AFTER_MS"),
    (name = "BACKFILL_INTERVAL_MS", fromEnvironment = "BACKFILL_INTERVAL_MS"),
    (name = "BACKFILL_WAIT_MS", fromEnvironment = "BACKFILL_WAIT_MS"),
    (name = "BACKFILL_MAX_SLOTS", fromEnvironment = "BACKFILL_MAX_SLOTS"),
    (name = "BACKFILL_ATTEMPTS", fromEnvironment = "BACKFILL_ATTEMPTS"),
    (name = "BACKFILL_MAX_AGE_MS", fromEnvironment = "BACKFILL_MAX_AGE_MS"),
    (name = "BACKFILL_HOSTS", fromEnvironment = "BACKFILL_HOSTS"),
    (name = "CHIRPSTACK_API_URL", fromEnvironment = "CHIRPSTACK_API_URL"),
    (name = "AUTH_HEADER", fromEnvironment = "AUTH_HEADER"),
    (name = "BASIC_AUTH_USER", fromEnvironment = "BASIC_AUTH_USER"),
    (name = "UPLINK_SEQ_FIELD", fromEnvironment = "UPLINK_SEQ_FIELD"),
    (name = "UPLINK_TS_FIELD", fromEnvironment = "UPLINK_TS_FIELD"),
    (name = "UPLINK_FILL_FIELD", fromEnvironment = "UPLINK_FILL_FIELD"),
    # wrangler.toml [assets]: the worker hands a GET outside /v1/ to it.
    (name = "ASSETS", service = "assets"),
  ],
  # SQLite-backed, as wrangler.toml's migration (new_sqlite_classes). A uniqueKey names
  # its class's directory and seeds its object ids (idFromName): changing one loses the
  # objects stored under it.
  durableObjectNamespaces = [
    (className = "GroupObject", uniqueKey = "reconnect-dedupe-GroupObject", enableSql = true),
    (className = "DeviceObject", uniqueKey = "reconnect-dedupe-DeviceObject", enableSql = true),
    (className = "FleetObject", uniqueKey = "reconnect-dedupe-FleetObject", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "data"),
);

const assets :Workerd.Worker = (
  modules = [(name = "assets.js", esModule = embed "assets.js")],
  # As wrangler.toml, like the worker's.
  compatibilityDate = "2026-04-01",
  bindings = [(name = "WWW", service = "www")],
);
