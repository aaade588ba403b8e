#!/usr/bin/env python3
"""Applies device-profiles.json to ChirpStack v4 device profiles, one per sensor model.

    CHIRPSTACK_URL=http://chirpstack-rest-api:8090 CHIRPSTACK_API_TOKEN=<API key> \\
    python3 device-profiles.py <device-profile UUID>=<codec> [<UUID>=<codec> ...]

e.g. `5f3c…=dingtek/df703`: the profile your DF703s use gets that codec's settings
from device-profiles.json (payload codec None, so that ChirpStack passes the raw
bytes; the tag `codec`, which the worker decodes them by). Every other setting of the
profile stays as it is, its other tags included: its region, MAC version and ADR are
your network's, which is why this changes profiles you made (or imported from
ChirpStack's device repository) rather than making new ones. Running it again
changes nothing more.

ChirpStack's REST API (chirpstack-rest-api, openapiv2/api/device_profile.swagger.json,
"Generate v4.17.0 code"): GET /api/device-profiles/{id} (DeviceProfileService_Get)
answers `{"deviceProfile": {...}}`; PUT /api/device-profiles/{deviceProfile.id}
(DeviceProfileService_Update) takes `{"deviceProfile": {...}}` and writes every field
of it (chirpstack src/api/device_profile.rs `update`), so a PUT of the changed fields
alone would reset the rest: each profile is read, changed and written whole. Every
profile is read before any is written, so an unknown id or a refused key changes
nothing. Authorised by "Grpc-Metadata-Authorization: Bearer <API key>", as
http-integration.sh. Python 3.8+, standard library only; the key is read from the
environment, never from the command line, where any local user reads it (ps).
"""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

NAME = "device-profiles.py"
SETTINGS = json.loads((Path(__file__).parent / "device-profiles.json").read_text(encoding="utf-8"))["profiles"]


def fail(message, code=1):
    print(f"{NAME}: {message}", file=sys.stderr)
    sys.exit(code)


def call(method, url, key, body=None):
    """ChirpStack's reply to `method url` (JSON `body`, if any): (status, parsed body or text)."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Grpc-Metadata-Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=20) as reply:
            status, text = reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        fail(f"ChirpStack does not answer at {url} ({getattr(e, 'reason', e)}); check CHIRPSTACK_URL")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def main(argv):
    missing = [n for n in ("CHIRPSTACK_URL", "CHIRPSTACK_API_TOKEN") if not os.environ.get(n)]
    if missing:
        fail(f"set {', '.join(missing)} (see the top of this file)", 2)
    if not argv:
        fail("name each device profile and its codec: <device-profile UUID>=<codec> ...", 2)
    wanted = []
    for arg in argv:
        profile_id, sep, codec = arg.partition("=")
        if not sep or not profile_id:
            fail(f"{arg!r} is not <device-profile UUID>=<codec>", 2)
        if codec not in SETTINGS:
            fail(f"{codec!r} is not a codec of device-profiles.json: {', '.join(SETTINGS)}", 2)
        wanted.append((profile_id, codec))
    api = os.environ["CHIRPSTACK_URL"].rstrip("/")
    key = os.environ["CHIRPSTACK_API_TOKEN"]

    # Read every profile first: nothing is written unless each can be.
    profiles = []
    for profile_id, codec in wanted:
        url = f"{api}/api/device-profiles/{urllib.parse.quote(profile_id, safe='')}"
        status, body = call("GET", url, key)
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("deviceProfile"), dict):
            fail(f"ChirpStack answered {status} to GET {url}: {json.dumps(body)[:300]}; nothing was changed")
        profiles.append((url, codec, body["deviceProfile"]))

    for n, (url, codec, profile) in enumerate(profiles):
        settings = SETTINGS[codec]
        changed = {**profile, **{k: v for k, v in settings.items() if k != "tags"}}
        changed["tags"] = {**(profile.get("tags") or {}), **settings["tags"]}
        # The id is the path's (the PUT body's schema has none).
        changed.pop("id", None)
        status, body = call("PUT", url, key, {"deviceProfile": changed})
        if status != 200:
            done = f"{n} of {len(profiles)} were changed before it" if n else "nothing was changed"
            fail(f"ChirpStack answered {status} to PUT {url}: {json.dumps(body)[:300]}; {done}")
        print(f"{NAME}: device profile {profile.get('name', '')!r} ({url.rsplit('/', 1)[1]}): codec None, tag codec={codec}")


if __name__ == "__main__":
    main(sys.argv[1:])
