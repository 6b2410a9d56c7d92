"""The journal's rows as Python values: canonical JSON, UTC stamps, a stored row as its event (pure helpers of
controller/store/journal.py)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from controller.core.events import DomainEvent, JournaledEvent

# The row's immutable fields as row_hash takes them: seq, event_id, boot_id, ts, table_id, round_id, type, rule,
# payload and sealed (both as their canonical JSON text).
Fields = tuple[int, str, str, str, str, str | None, str, str | None, str, str | None]


class SerialisedEvent(NamedTuple):
    event: DomainEvent
    payload: str
    sealed: str | None
    event_id: str


def _plain(obj: object) -> object:
    # Payloads are Mappings (often read-only proxies), which json only accepts as plain dicts.
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"event payload value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


# The canonical payload encoding, built once (json.dumps with these arguments builds an encoder at every call).
_PAYLOAD = json.JSONEncoder(default=_plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def to_json(value: Mapping[str, Any]) -> str:
    return _PAYLOAD.encode(dict(value))


def event_id() -> str:
    """A new event's id: a UUID version 7 (RFC 9562 section 5.7) as 32 lowercase hex digits, i.e. 48 bits of Unix time
    in milliseconds, then 74 random bits. Unique as a version 4 is for the floor's dedupe (docs/events.md), and in time
    order, so each commit inserts into the last page of the journal's `event_id` index instead of a random one (a
    uuid4 dirtied about two of its pages a commit; issue 19)."""
    rand = int.from_bytes(os.urandom(10))
    ms = time.time_ns() // 1_000_000
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | (rand >> 64 & 0xFFF) << 64 | 0b10 << 62 | rand & (1 << 62) - 1
    return f"{value:032x}"


def iso_utc(now: datetime) -> str:
    if now.tzinfo is None or now.utcoffset() is None:
        # A naive time would be stamped as if it were UTC and silently shift by the local offset.
        raise ValueError(f"journal timestamps need a timezone-aware datetime, got naive {now.isoformat()}")
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def journaled_event(row: Sequence[Any]) -> JournaledEvent:
    """The event of a stored row (its fields in COLUMNS order)."""
    seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed = row
    return JournaledEvent(
        seq=seq,
        event_id=event_id,
        boot_id=boot_id,
        ts=ts,
        table_id=table_id,
        round_id=round_id,
        type=type_,
        rule=rule,
        payload=json.loads(payload),
        sealed=None if sealed is None else json.loads(sealed),
    )


def rollback_open(db: sqlite3.Connection) -> None:
    """Roll back what is open, if anything: after a failed COMMIT (disk full) SQLite may already have ended the
    transaction, and a ROLLBACK then raises its own error over the one that matters."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
