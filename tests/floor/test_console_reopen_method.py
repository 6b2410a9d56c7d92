"""A table that opens again with no dealing method usable (its shuffler and shoe still marked out of order, 655a.13(g))
says `dealing_method: null` in its `table.opened` (docs/events.md): the console's tile says none usable then, not the
method it last heard named, and a table reopened dealing by its fallback shows that one. The events are the pure
engine's (tests/engine/test_reopen_method.py's table), published and parsed as the floor parses them."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from controller.engine.inputs import CloseTable, MarkOutOfOrder, OpenTable
from controller.mqtt.contract import TableEvent
from floor.console.views import FloorView
from floor.live import TableLive
from floor.messages import Incoming
from tests.engine.reopened import hand_dealt
from tests.floor.archiving import events_published, msg

pytestmark = [pytest.mark.floor]
TABLE = "ro-1"
NOW = datetime(2026, 11, 28, 12, 5, tzinfo=UTC)


def tile_fed(events: list[Incoming]) -> dict[str, object]:
    view, live = FloorView(), TableLive(TABLE, state="online")
    view.table(TABLE).dealing_method = "hand"  # the birth's: the configured method
    for m in events:
        live.apply_event(TableEvent.model_validate(m.content))
        view.observe(m, live)
    return view.tile(TABLE, NOW)


def reopened(out_too: bool) -> list[Incoming]:
    """The events from the table's reopening on: after a close with the shuffler (and the shoe) out of order."""
    t = hand_dealt()
    if out_too:
        t.feed(MarkOutOfOrder("shoe"))
    t.feed(CloseTable())
    said = events_published(TABLE, t.events + t.feed(OpenTable()), date(2026, 11, 28))
    parsed = [m for m in map(msg, said) if isinstance(m, Incoming)]
    at = max(i for i, m in enumerate(parsed) if m.content["type"] == "table.opened")
    return parsed[at:]


def test_reopened_with_no_method_the_tile_says_none_usable() -> None:
    said = reopened(out_too=True)
    # From the `table.opened` on, before the table says why it waits (its table.blocked follows the opening).
    assert [m.content["payload"]["dealing_method"] for m in said[:1]] == [None]
    assert (tile_fed(said[:1])["dealing_method"], tile_fed(said[:1])["no_method"]) == (None, "")
    blocked = tile_fed(said)
    assert blocked["dealing_method"] is None and "neither hand nor its fallback" in str(blocked["no_method"])


def test_reopened_on_its_fallback_the_tile_names_it() -> None:
    t = tile_fed(reopened(out_too=False))
    assert (t["dealing_method"], t["no_method"]) == ("manual_shoe", None)
