"""What the publisher sends, built from the contract's models: an event's JSON, the retained status, and the event
that reports a journal row it cannot publish. No I/O; the publisher (controller.mqtt.publisher) sends them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import structlog
from pydantic import ValidationError

from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt.contract import TableEvent, TableStatus

if TYPE_CHECKING:
    # An annotation only: `run`'s config check (the birth's size) loads this module before the journal's (issue 19).
    from controller.store.outbox import DamagedRow

log = structlog.get_logger("controller.mqtt.publisher")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def event_message(ev: JournaledEvent, replayed: bool) -> str:
    """The JSON published on <prefix>/<table_id>/event: TableEvent, `replayed` only when true."""
    return TableEvent(**ev.public(), replayed=replayed).model_dump_json(exclude_defaults=True)


def event_body(ev: JournaledEvent, replayed: bool) -> str:
    """event_message, or the event as journaled when it does not match the contract."""
    try:
        return event_message(ev, replayed)
    except ValidationError as err:
        # A journaled event is never held back: losing it would be worse than a malformed envelope,
        # which this log line (and the contract test) exists to catch.
        log.error(
            "event does not match the MQTT contract; published as journaled", seq=ev.seq, type=ev.type, error=str(err)
        )
        body = ev.public()
        if replayed:
            body["replayed"] = True
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


# What the retained status says of why (the tilts' and tasks' own events say it whole).
MAX_STATUS_REASON = 4000


def status_message(state: str, table_id: str, boot_id: str, reason: str | None = None) -> str:
    """The retained status; `reason` only when there is one (degraded, or offline after a fault), cut to
    MAX_STATUS_REASON characters: the status (and the will, the same message) stays under the broker's packet limit
    however many tasks are down or tilted and whatever their errors say."""
    if reason is not None and len(reason) > MAX_STATUS_REASON:
        reason = reason[: MAX_STATUS_REASON - 1] + "\u2026"
    body = {"state": state, "table_id": table_id, "boot_id": boot_id, "ts": now_iso(), "reason": reason}
    return TableStatus.model_validate(body).model_dump_json(exclude_none=True)


def quarantined(row: DamagedRow, journal: str) -> DomainEvent:
    """`journal.row_quarantined`: the row at `row.seq` is kept as found and never published (docs/events.md)."""
    return DomainEvent(
        "journal.row_quarantined",
        None,
        {
            "seq": row.seq,
            "reason": row.reason,
            "journal": journal,
            "remedy": "the row is kept as found and never published: `tablectl journal verify` reports it; take the "
            "event from a subscriber's archive or a backup of the journal",
        },
    )
