"""What a table says of itself when it opens again (655a.4) with a device still marked out of order (.13(g)): the mark
outlasts the close, so the reopened table deals by what took over, or by nothing (`no_method`) while no method can be
used. Its `table.opened` says that method (null while none is usable, as `device.out_of_order` says it) and the devices
still out of order, not the configured method; also after a restart on the stored state. Pure: the engine as the tests
step it, the state through the journal's codec (controller/store/snapshot.py)."""

from __future__ import annotations

from controller.engine.inputs import CloseTable, MarkOutOfOrder, OpenTable
from controller.engine.state import Phase
from controller.store import snapshot
from tests.engine.chapter_faults import counting, remedy, table
from tests.engine.conftest import PureTable
from tests.engine.reopened import MANUAL, hand_dealt


def restarted(t: PureTable) -> PureTable:
    """The table started again on its stored state, as `tablectl run` restores it (the engine keeps no state)."""
    return PureTable(t.engine, snapshot.decode(snapshot.encode(t.state)), decks=t.decks, shoe=t.shoe)


def test_reopened_with_the_shuffler_out_it_names_the_fallback_it_deals_by() -> None:
    t = hand_dealt()
    t.feed(CloseTable(by="supervisor super-bob"))
    assert t.state.phase is Phase.CLOSED and t.state.out_of_order == {"shuffler": MANUAL}
    opened = remedy(t.feed(OpenTable()), "table.opened")
    assert opened.payload["dealing_method"] == "manual_shoe"
    assert opened.payload["out_of_order"] == {"shuffler": MANUAL}


def test_reopened_with_no_method_usable_it_says_none_and_waits() -> None:
    t = hand_dealt()
    t.feed(MarkOutOfOrder("shoe"))
    assert "no_method" in t.state.blocks
    t.feed(CloseTable())
    out = t.feed(OpenTable())
    opened = remedy(out, "table.opened")
    assert opened.payload["dealing_method"] is None
    assert opened.payload["out_of_order"] == {"shuffler": MANUAL, "shoe": "no other dealing method"}
    assert "no_method" in t.state.blocks and "shuffle.started" not in t.types(out)


def test_after_a_restart_it_still_names_what_it_deals_by() -> None:
    t = hand_dealt()
    t.feed(CloseTable())
    again = restarted(t)
    opened = remedy(again.feed(OpenTable()), "table.opened")
    assert opened.payload["dealing_method"] == "manual_shoe"
    t.feed(OpenTable())
    t.feed(MarkOutOfOrder("shoe"))
    t.feed(CloseTable())
    opened = remedy(restarted(t).feed(OpenTable()), "table.opened")
    assert opened.payload["dealing_method"] is None and set(opened.payload["out_of_order"]) == {"shuffler", "shoe"}


def test_a_table_with_every_device_in_service_names_its_configured_method() -> None:
    t = table("655a", "hand", counting("655a", fallback_dealing_method="manual_shoe"))
    opened = remedy(t.events, "table.opened")
    assert opened.payload["dealing_method"] == "hand" and opened.payload["out_of_order"] == {}
