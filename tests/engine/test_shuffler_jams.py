"""A shuffler that keeps jamming: .13(e) reshuffles after each failed shuffle, but a shuffler that fails
`failed_shuffles_limit` shuffles in a row (3 by default) is held unusable (.13(g)) as a jam outside a shuffle is:
no new round, `device.unusable` with the citation and the remedy, until it identifies again or is marked out of
order (then manual shuffle and cut). Before, each failure asked for another shuffle, without end."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from controller.engine.commands import DeviceCommand, Shuffle
from controller.engine.inputs import Input, MarkOutOfOrder, Recover
from controller.engine.spec import TableOptions
from controller.engine.state import Phase
from controller.games.procedure import StubCounting
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceOnline
from tests.engine.chapter_faults import cite, counting, methods, on, remedy, table
from tests.engine.conftest import PureTable, enter_player
from tests.engine.held_faults import NO_HIT, play_round, quiet_table

CHAPTERS = ["643a", "655a", "679a", "683a", "684a"]


def jam(c: DeviceCommand) -> list[Input]:
    return [DeviceFault("shuffler", code="jam", detail="cards caught under the elevator")]


def shuffles(t: PureTable) -> int:
    return sum(isinstance(c, Shuffle) for c in t.commands)


def jamming(chapter: str, jams: int, limit: int | None = None) -> tuple[PureTable, int]:
    """A round played, then the shuffler jams its next `jams` shuffles (and shuffles after that); returns the table
    and the number of shuffles asked before the round ended."""
    options = counting(chapter) if limit is None else counting(chapter, failed_shuffles_limit=limit)
    t = table(chapter, methods(chapter)[0], options)
    t.shoe = list(NO_HIT)
    t.decks = [list(NO_HIT) for _ in range(4)]
    on(t, "shuffle", jam, times=jams)
    before = shuffles(t)
    play_round(t)
    return t, before


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_three_failed_shuffles_in_a_row_hold_the_shuffler_unusable(chapter: str) -> None:
    t, before = jamming(chapter, jams=5)
    assert shuffles(t) - before == 3  # no fourth shuffle is asked of it
    failed = [e for e in t.events if e.type == "shuffle.failed"]
    assert [e.payload["attempt"] for e in failed] == [1, 2, 3]
    assert all(e.rule == cite(chapter, "13(e)") for e in failed)
    assert [e.payload["remedy"] for e in failed[:2]] == ["the cards are reshuffled"] * 2
    held = remedy(t.events, "device.unusable")
    assert held.rule == cite(chapter, "13(g)") and held.payload["device"] == "shuffler"
    assert "3 failed shuffles in a row" in held.payload["reason"] and "jam" in held.payload["reason"]
    assert "identifies again" in held.payload["remedy"] and "manual shuffle and cut" in held.payload["remedy"]
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks
    assert t.state.block_reason is not None and "3 failed shuffles" in t.state.block_reason
    assert t.state.device_faults["shuffler"].code == "jam"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_held_shuffler_shuffles_again_once_it_identifies_again(chapter: str) -> None:
    t, _ = jamming(chapter, jams=3)
    back = t.feed(DeviceOnline("shuffler", identity={"model": "sim"}))
    assert [e.payload["block"] for e in back if e.type == "table.block_cleared"] == ["device:shuffler"]
    assert t.types(back)[-2:] == ["shuffle.completed", "betting.opened"]
    assert t.state.failed_shuffles == 0
    # The count starts again: two more failures are reshuffled, not held.
    on(t, "shuffle", jam, times=2)
    enter_player(t, 1)
    play_round(t)
    assert t.state.phase is Phase.BETTING and "device:shuffler" not in t.state.blocks


def test_failures_that_are_not_in_a_row_do_not_add_up() -> None:
    t, _ = jamming("655a", jams=2)
    assert t.state.phase is Phase.BETTING and t.state.failed_shuffles == 0
    on(t, "shuffle", jam, times=2)
    play_round(t)
    assert t.state.phase is Phase.BETTING and "device.unusable" not in t.types()


def test_a_limit_of_one_holds_the_shuffler_at_its_first_failed_shuffle() -> None:
    t, before = jamming("643a", jams=1, limit=1)
    assert shuffles(t) - before == 1 and t.state.phase is Phase.BLOCKED
    assert remedy(t.events, "shuffle.failed").payload["attempt"] == 1


@pytest.mark.parametrize("chapter", ["643a", "655a", "683a"])
def test_a_held_shuffler_marked_out_of_order_hands_over_to_the_manual_shuffle(chapter: str) -> None:
    t, before = jamming(chapter, jams=3)
    marked = remedy(t.feed(MarkOutOfOrder("shuffler")), "device.out_of_order")
    assert "3 failed shuffles" in marked.payload["reason"]
    assert t.state.phase is Phase.SHUFFLING and shuffles(t) - before == 3
    assert t.events[-1].type == "shuffle.started" and t.events[-1].payload["device"] == "manual"


def test_the_held_shuffler_is_still_held_after_a_restart() -> None:
    t, _ = jamming("683a", jams=3)
    t.state = snapshot.decode(snapshot.encode(t.state))
    after = t.feed(Recover())
    assert remedy(after, "device.unusable").payload["fault"]["code"] == "jam"
    t.feed(DeviceOnline("shuffler"))  # its start-up identification clears nothing
    assert t.state.phase is Phase.BLOCKED and "device:shuffler" in t.state.blocks


def test_the_limit_is_checked_with_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="failed_shuffles_limit"):
        StubCounting.model_validate({"failed_shuffles_limit": 0})
    with pytest.raises(ValueError, match=r"failed_shuffles_limit = 0: .*use 1 to 10"):
        TableOptions(failed_shuffles_limit=0)
    assert TableOptions().failed_shuffles_limit == 3
    assert StubCounting.model_validate({"failed_shuffles_limit": 5}).stub_options().failed_shuffles_limit == 5


def test_a_quiet_table_still_plays_with_the_default() -> None:
    t = quiet_table("655a", "automated_shoe")
    play_round(t)
    assert t.state.failed_shuffles == 0 and "round.completed" in t.types()
