"""The rows of the link's books as the store reads and writes them (docs/linked-progressives.md, "The books in
PostgreSQL"): a contribution, a hit, the link's state, a level's meters as JSON, and the refusal that changes nothing.
Plain data: the store, the report, the commands and the service share them without importing each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.progressive.model import COUNTERS, LevelMeters
from controller.progressive.parameters import TableProgressives
from link.config import ProgressiveFigures, figures_of

STATUS_RULE = "605a.8 (not available; NY 9 NYCRR 5321.18 as the stand-in)"


class LinkRefused(ValueError):
    """An operation the link refuses; the message says why and what to do. Nothing was changed."""


@dataclass(frozen=True, slots=True)
class Contribution:
    table_id: str
    round_id: str
    seat: int
    wager: str
    cents: int

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.table_id, self.round_id, self.seat, self.wager)


@dataclass(frozen=True, slots=True)
class ContributeResult:
    new: int
    duplicates: int
    seq: int
    display: dict[str, int]
    fresh: frozenset[tuple[str, str, int, str]]  # the keys counted now; the others were counted before


@dataclass(frozen=True, slots=True)
class Hit:
    table_id: str
    round_id: str
    seat: int
    level: str
    hit_seq: int
    amount_cents: int
    meter_before_cents: int
    rule: str
    validated_by: str | None
    # The level's meter after the award and its reseed, as the claim booked it (its link.jackpot_pending event); None
    # where a hit is read for its row alone (the report, the signs, a validation).
    meter_after_cents: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The link_hit row's columns (the events and the report carry these; the meter after is the claim's own)."""
        out = dataclasses.asdict(self)
        del out["meter_after_cents"]
        return out


@dataclass(frozen=True, slots=True)
class State:
    link_id: str
    status: str
    tilt: str | None
    seq: int
    published_seq: int
    figures: list[ProgressiveFigures]

    @property
    def params(self) -> TableProgressives:
        return figures_of(self.figures)


def level_to_json(lv: LevelMeters) -> dict[str, int]:
    return {name: int(getattr(lv, name)) for name in COUNTERS}


def level_from_json(level: str, data: Mapping[str, Any]) -> LevelMeters:
    return LevelMeters(level, **{name: int(data.get(name, 0)) for name in COUNTERS})
