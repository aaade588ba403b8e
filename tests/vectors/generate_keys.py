"""Known-answer vectors for the reconnect-dedupe idempotency key.

This script recomputes tests/vectors/keys.json from the Python reference in the
seed document (Step 1: the SensorReading model and idempotency_key). The Rust
implementation must reproduce every "key" in that file.

Re-run from the repository root:

    python3 -m venv /tmp/seedvenv \
      && /tmp/seedvenv/bin/pip install pydantic==2.9.2 \
      && /tmp/seedvenv/bin/python tests/vectors/generate_keys.py > tests/vectors/keys.json

Our Rust deliberately differs from the seed on how ts is hashed:
  * ts is converted to UTC before hashing (the seed hashes the offset as it was
    written). For inputs already in UTC ("Z" / "+00:00") nothing changes.
  * fill_pct -0.0 is normalised to 0.0 (the seed would hash "-0.0").
So "key" = seed key of the normalised reading, and "seed_key_as_written" = the
seed key of the reading exactly as parsed, so the difference stays visible.
"""

import hashlib
import json
import sys
from datetime import datetime, timezone

import pydantic
from pydantic import BaseModel, Field


# --- The seed's reference model and key function (semantically unchanged) ---

class SensorReading(BaseModel):
    device_id: str = Field(min_length=1)
    seq: int
    ts: datetime
    fill_pct: float = Field(ge=0.0, le=100.0)


def canonical_content(reading: SensorReading) -> str:
    """The exact string the seed hashes (its json.dumps call, verbatim)."""
    return json.dumps(
        {"ts": reading.ts.isoformat(), "fill_pct": reading.fill_pct},
        sort_keys=True,
        separators=(",", ":"),
    )


def idempotency_key(reading: SensorReading) -> str:
    """device_id : seq : first 16 hex chars of SHA-256 over the content."""
    digest = hashlib.sha256(canonical_content(reading).encode("utf-8")).hexdigest()[:16]
    return f"{reading.device_id}:{reading.seq}:{digest}"


# --- Our two intentional normalisations, applied before the seed key ---

def normalise(reading: SensorReading) -> SensorReading:
    if reading.ts.tzinfo is None:
        raise ValueError("naive timestamps are rejected by the Rust implementation")
    fill = 0.0 if reading.fill_pct == 0.0 else reading.fill_pct  # -0.0 -> 0.0
    return reading.model_copy(
        update={"ts": reading.ts.astimezone(timezone.utc), "fill_pct": fill}
    )


# --- Inputs: (name, reading as a JSON client sends it, optional note) ---

def r(device_id="bin-A17", seq=41, ts="2026-07-16T09:00:00Z", fill_pct=62.5):
    return {"device_id": device_id, "seq": seq, "ts": ts, "fill_pct": fill_pct}


VECTORS = [
    ("seed-example", r(), None),
    ("seq-negative-one-fill-float-sum",
     r(seq=-1, ts="2030-12-31T00:00:00.250Z", fill_pct=0.30000000000000004), None),
    ("hex-device-seq-zero-fill-1e-05",
     r(device_id="70B3D57ED0041234", seq=0, ts="2026-07-16T09:00:00.100Z", fill_pct=1e-05), None),
    ("same-second-different-fill", r(fill_pct=62.6),
     "Same device/seq/ts as seed-example; different content gives a different key."),

    # Fractional seconds: Python isoformat() prints 6 digits, or none at all when zero.
    ("ts-micros-000001", r(ts="2026-07-16T09:00:00.000001Z"), None),
    ("ts-micros-123456", r(ts="2026-07-16T09:00:00.123456Z"), None),
    ("ts-fraction-one-digit", r(ts="2026-07-16T09:00:00.5Z"), None),
    ("ts-fraction-two-digits", r(ts="2026-07-16T09:00:00.12Z"), None),
    ("ts-fraction-all-zero", r(ts="2026-07-16T09:00:00.000Z"),
     "Zero fraction: isoformat() omits it, same key as seed-example."),
    ("ts-nanoseconds-truncated", r(ts="2026-07-16T09:00:00.123456789Z"),
     "pydantic 2.9.2 accepts >6 fraction digits and truncates to microseconds."),
    ("ts-seven-digits-truncated-not-rounded", r(ts="2026-07-16T09:00:00.9999999Z"),
     "Truncation, not rounding: .9999999 becomes .999999 and does not carry."),

    # fill_pct: the content uses Python's float repr (shortest round-trip).
    ("fill-1e-05", r(fill_pct=1e-05), None),
    ("fill-1.5e-05", r(fill_pct=1.5e-05), None),
    ("fill-9.999999999999999e-05", r(fill_pct=9.999999999999999e-05), None),
    ("fill-0.0001", r(fill_pct=0.0001), "repr switches from exponent to positional at 1e-4."),
    ("fill-5e-324", r(fill_pct=5e-324), "Smallest subnormal double."),
    ("fill-0.1", r(fill_pct=0.1), None),
    ("fill-0.30000000000000004", r(fill_pct=0.30000000000000004), None),
    ("fill-33.333333333333336", r(fill_pct=33.333333333333336), None),
    ("fill-100-float", r(fill_pct=100.0), None),
    ("fill-100-int", r(fill_pct=100), "JSON integer 100 is coerced to float 100.0; same key as fill-100-float."),
    ("fill-zero-float", r(fill_pct=0.0), None),
    ("fill-zero-int", r(fill_pct=0), "JSON integer 0 is coerced to float 0.0; same key as fill-zero-float."),
    ("fill-negative-zero", r(fill_pct=-0.0),
     "Rust normalises -0.0 to 0.0, so key equals fill-zero-float; the seed would hash -0.0."),

    # seq
    ("seq-zero", r(seq=0), None),
    ("seq-minus-one", r(seq=-1), None),
    ("seq-max-safe-integer", r(seq=9007199254740991), "2^53 - 1"),
    ("seq-min-safe-integer", r(seq=-9007199254740991), "-(2^53 - 1)"),
    ("seq-float-integral", r(seq=41.0), "JSON 41.0 is accepted as integer 41; same key as seed-example."),
    ("seq-float-integral-big", r(seq=1e3),
     "Written as 1e3 by the sender; Python's json prints it as 1000.0. Accepted as 1000."),

    # device_id is copied verbatim into the key (no escaping).
    ("device-unicode", r(device_id="bin-ü-東京"), None),
    ("device-emoji", r(device_id="bin-🗑-7"), "Contains U+1F5D1 (an id with a variation selector, U+FE0F, is refused: it prints like one without)."),
    ("device-contains-colon", r(device_id="site:42:bin-7"),
     "Colons are not escaped, so the key has extra separators."),
    ("device-128-bytes-ascii", r(device_id="D" * 128), "Maximum length: 128 UTF-8 bytes."),
    ("device-128-bytes-multibyte", r(device_id="ü" * 64), "64 characters, 128 UTF-8 bytes: the limit counts bytes."),

    # Offsets: ts is converted to UTC before hashing.
    ("ts-explicit-plus-0000", r(ts="2026-07-16T09:00:00+00:00"), "Same key as seed-example."),
    ("ts-lowercase-z", r(ts="2026-07-16T09:00:00z"),
     "pydantic 2.9.2 accepts a lowercase 'z' as UTC; same key as seed-example."),
    ("same-instant-plus-0200", r(ts="2026-07-16T11:00:00+02:00"),
     "Same instant as seed-example, so the same key."),
    ("offset-plus-0200-crosses-year", r(ts="2027-01-01T01:30:00+02:00"), "UTC: 2026-12-31T23:30:00."),
    ("offset-minus-0530-crosses-year", r(ts="2026-12-31T20:00:00-05:30"), "UTC: 2027-01-01T01:30:00."),
    ("offset-plus-1400-crosses-midnight", r(ts="2026-07-17T08:00:00+14:00"), "UTC: 2026-07-16T18:00:00."),
    ("offset-with-micros", r(ts="2026-07-16T11:00:00.000001+02:00"), None),
    ("leap-day-2028", r(ts="2028-02-29T12:00:00Z"), None),
    ("offset-lands-on-leap-day", r(ts="2028-03-01T01:00:00+03:00"), "UTC: 2028-02-29T22:00:00."),
    ("year-0001-min", r(ts="0001-01-01T00:00:00Z"), None),
    ("year-0001-via-offset", r(ts="0001-01-01T01:30:00+01:00"), "UTC: 0001-01-01T00:30:00, still in range."),
    ("year-9999-max", r(ts="9999-12-31T23:59:59.999999Z"), None),
    ("year-9999-via-negative-offset", r(ts="9999-12-31T20:00:00-03:00"), "UTC: 9999-12-31T23:00:00, still in range."),
]


def build_vector(name, reading, note):
    raw = json.dumps(reading, ensure_ascii=False)  # what a JSON client sends
    parsed = SensorReading.model_validate_json(raw)
    ours = normalise(parsed)
    vector = {
        "name": name,
        "reading": reading,
        "content": canonical_content(ours),
        "key": idempotency_key(ours),
        "seed_key_as_written": idempotency_key(parsed),
    }
    if note:
        vector["note"] = note
    return vector


def main():
    vectors = [build_vector(*v) for v in VECTORS]

    names = [v["name"] for v in vectors]
    assert len(names) == len(set(names)), "duplicate vector names"
    by_name = {v["name"]: v for v in vectors}
    # Keys fixed in the project brief; stop if the reference disagrees.
    assert by_name["seq-negative-one-fill-float-sum"]["key"] == "bin-A17:-1:ae4e63efd7f66f28"
    assert by_name["hex-device-seq-zero-fill-1e-05"]["key"] == "70B3D57ED0041234:0:fdb5b9374c5d7cb8"
    # Equivalences the vectors are meant to demonstrate.
    seed_key = by_name["seed-example"]["key"]
    for same in ("same-instant-plus-0200", "ts-explicit-plus-0000", "ts-lowercase-z",
                 "ts-fraction-all-zero", "seq-float-integral"):
        assert by_name[same]["key"] == seed_key, same
    assert by_name["fill-negative-zero"]["key"] == by_name["fill-zero-float"]["key"]
    assert by_name["fill-zero-int"]["key"] == by_name["fill-zero-float"]["key"]
    assert by_name["fill-100-int"]["key"] == by_name["fill-100-float"]["key"]

    python = ".".join(str(p) for p in sys.version_info[:3])
    document = {
        "description": "Known-answer idempotency keys: the seed's Python key function applied "
                       "after converting ts to UTC and fill_pct -0.0 to 0.0.",
        "generator": f"tests/vectors/generate_keys.py (pydantic {pydantic.VERSION}, Python {python})",
        "vectors": vectors,
    }
    print(json.dumps(document, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
