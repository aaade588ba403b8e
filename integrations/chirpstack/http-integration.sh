#!/usr/bin/env bash
# Points a ChirpStack v4 application's HTTP integration at reconnect-dedupe: every
# event is posted as JSON to <WORKER_URL>/v1/uplinks/chirpstack?event=<type>, with
# the worker's token. Run it from any machine that reaches ChirpStack's REST API:
#
#   CHIRPSTACK_URL=http://chirpstack-rest-api:8090 CHIRPSTACK_API_TOKEN=<API key> \
#   APPLICATION_ID=<application UUID> WORKER_URL=https://rd.example.workers.dev \
#   INGEST_TOKEN=<token> bash http-integration.sh
#
# It replaces the application's integration (PUT), or creates it (POST) when there is
# none, so running it again changes the URL or token. The request
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

endpoint="${WORKER_URL%/}/v1/uplinks/chirpstack"
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
