#!/usr/bin/env bash
# Points a ChirpStack v4 application's HTTP integration at reconnect-dedupe: every
# event is posted as JSON to <WORKER_URL>/v1/uplinks/chirpstack?event=<type>, with
# the worker's token. Run it from any machine that reaches ChirpStack's REST API and
# the worker at WORKER_URL:
#
#   CHIRPSTACK_URL=http://chirpstack-rest-api:8090 CHIRPSTACK_API_TOKEN=<API key> \
#   APPLICATION_ID=<application UUID> WORKER_URL=https://rd.example.workers.dev \
#   INGEST_TOKEN=<token> bash http-integration.sh
#
# First it asks the worker, at the URL ChirpStack will post to: GET /v1/health must answer
# {"ok":true}, and GET /v1/stats with the token 200. When either does not (the worker
# is down, WORKER_URL is not a worker, the worker has no token, INGEST_TOKEN is not
# its token), it says which and why, and exits 1 having changed nothing in ChirpStack.
#
# Then it replaces the application's integration (PUT), or creates it (POST) when there
# is none, so running it again changes the URL or token. The request
# is ChirpStack's REST API (chirpstack-rest-api, openapiv2/api/application.swagger.json:
# ApplicationService_CreateHttpIntegration / _UpdateHttpIntegration), authorised by
# the "Grpc-Metadata-Authorization: Bearer <API key>" header that API reads.
set -euo pipefail

for name in CHIRPSTACK_URL CHIRPSTACK_API_TOKEN APPLICATION_ID WORKER_URL INGEST_TOKEN; do
  if [ -z "${!name:-}" ]; then
    echo "http-integration.sh: set $name (see the comment at the top of this file)" >&2
    exit 2
  fi
done
# Plain http only to this machine (a worker under `wrangler dev` beside ChirpStack):
# the whole host must be localhost or 127.0.0.1, not merely begin so
# (localhost.example.org, or localhost:8787@example.org whose host is example.org).
if [[ $WORKER_URL != https://* && ! $WORKER_URL =~ ^http://(localhost|127\.0\.0\.1)(:[0-9]+)?(/.*)?$ ]]; then
  echo "http-integration.sh: WORKER_URL must start with https:// (the token travels in a header)" >&2
  exit 2
fi

# JSON string contents: the token is printable ASCII (the worker refuses others), so
# a backslash and a double quote are all that need escaping; a URL has neither.
json_string() { local s=${1//\\/\\\\}; printf '"%s"' "${s//\"/\\\"}"; }

worker="${WORKER_URL%/}"
endpoint="$worker/v1/uplinks/chirpstack"

# Prints the worker's reply to a GET (curl's arguments: the URL, and the token's header
# for a call that needs it), then its status on a line of its own. A transport failure
# (refused, no such host, TLS, 20 s without an answer) is curl's exit status, its
# message on stderr.
worker_get() { curl -sS --connect-timeout 10 --max-time 20 -w '\n%{http_code}' "$@"; }
# The body of such a reply, cut to 300 bytes (another server's page may be long); of
# a failure, curl's message on one line (without the 000 status curl adds).
body_of() { local b=${1%$'\n'*}; printf '%s' "${b:0:300}"; }
failure_of() { local m=${1%$'\n'*}; m=${m%$'\n'}; printf '%s' "${m//$'\n'/ }"; }
stop() {
  echo "http-integration.sh: $1; nothing was changed in ChirpStack" >&2
  exit 1
}
if ! reply=$(worker_get "$worker/v1/health" 2>&1); then
  stop "the worker does not answer at $worker/v1/health ($(failure_of "$reply")); check WORKER_URL and that the worker runs"
fi
status=${reply##*$'\n'}
# {"ok":true} is the worker's; anything else is another server at that URL, or a worker
# that cannot serve (its body says why: no INGEST_TOKEN set, a bad variable).
if [ "$status" != 200 ] || [ "$(body_of "$reply")" != '{"ok":true}' ]; then
  stop "GET $worker/v1/health answered $status, not reconnect-dedupe's {\"ok\":true}: $(body_of "$reply")"
fi
# The token as ChirpStack will send it, through a pipe (as in send, below).
if ! reply=$(worker_get -H @<(printf 'Authorization: Bearer %s\n' "$INGEST_TOKEN") "$worker/v1/stats" 2>&1); then
  stop "the worker stopped answering ($(failure_of "$reply"))"
fi
status=${reply##*$'\n'}
if [ "$status" = 401 ]; then
  stop "the worker refuses INGEST_TOKEN (401 to GET /v1/stats): $(body_of "$reply"); set INGEST_TOKEN to the worker's token"
elif [ "$status" != 200 ]; then
  stop "GET $worker/v1/stats with the token answered $status: $(body_of "$reply")"
fi

body=$(printf '{"integration":{"encoding":"JSON","eventEndpointUrl":%s,"headers":{"Authorization":%s}}}' \
  "$(json_string "$endpoint")" "$(json_string "Bearer $INGEST_TOKEN")")
url="${CHIRPSTACK_URL%/}/api/applications/${APPLICATION_ID}/integrations/http"

# Prints ChirpStack's reply, then its status on a line of its own. Secrets reach curl
# through files, never its arguments, which any local user can read while it runs
# (ps): the key header through a pipe written by printf (a builtin: no process of its
# own), the body (with the ingest token) on stdin. `-H @file`: curl 7.55 or later.
send() {
  curl -sS -w '\n%{http_code}' -X "$1" "$url" \
    -H @<(printf 'Grpc-Metadata-Authorization: Bearer %s\n' "$CHIRPSTACK_API_TOKEN") \
    -H 'Content-Type: application/json' --data-binary @- <<<"$body"
}

# PUT first: ChirpStack answers 404 (NotFound) when the application has no HTTP
# integration to replace, and only then is it created. Not POST first: ChirpStack
# answers a create of an existing one 500, not 409 (the database's unique violation
# becomes gRPC Internal: chirpstack src/storage/error.rs `from_diesel` maps only
# NotFound), which no script can tell from a real failure.
reply=$(send PUT)
if [ "${reply##*$'\n'}" = 404 ]; then
  reply=$(send POST)
fi
status=${reply##*$'\n'}
if [ "$status" != 200 ]; then
  echo "http-integration.sh: ChirpStack answered $status: ${reply%$'\n'*}" >&2
  exit 1
fi
echo "http-integration.sh: application $APPLICATION_ID now posts its events to $endpoint"
