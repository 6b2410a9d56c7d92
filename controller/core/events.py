"""Domain events: what the engine says happened, and the journaled form that is published."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class DomainEvent:
    """An event as the engine emits it.

    `rule` cites the subsection that makes it happen (`655a.11(h)(3)`). `payload` is public and is
    published; it never holds a card identity before the round's settlement (DESIGN.md). `sealed` holds
    what only the table PC may keep (card identities, deck order): journaled, never published.
    """

    type: str
    rule: str | None
    payload: Mapping[str, Any] = field(default_factory=dict)
    round_id: str | None = None
    sealed: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class JournaledEvent:
    """A DomainEvent once committed to the journal: numbered gap-free per table and stamped."""

    seq: int
    event_id: str
    boot_id: str
    ts: str  # ISO 8601, UTC
    table_id: str
    round_id: str | None
    type: str
    rule: str | None
    payload: Mapping[str, Any]
    sealed: Mapping[str, Any] | None = None

    def public(self) -> dict[str, Any]:
        """The JSON body published on <prefix>/<table_id>/event (sealed part left out)."""
        return {
            "event_id": self.event_id,
            "boot_id": self.boot_id,
            "seq": self.seq,
            "ts": self.ts,
            "table_id": self.table_id,
            "round_id": self.round_id,
            "type": self.type,
            "rule": self.rule,
            "payload": dict(self.payload),
        }
