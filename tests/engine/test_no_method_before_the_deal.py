"""Devices marked out of order (.13(g)) after "no more bets" and before the round's first card, while the stations
acknowledge their locks. Found by test_stateful's machine: the round was dealt on by the configured method, whose
device was covered (a stack asked of the covered automated shoe, docs/rules.md). The round keeps the dealing method
it was announced under: its covered shoe fails to deal it (.13(f), void, every wager returned), while a shuffler
covered after its shuffle completed leaves the round to be dealt from the hand, the held fallback shoe blocking only
the next round (tests/engine/test_cover_while_locking.py)."""

from __future__ import annotations

import pytest

from controller.engine.commands import DeviceCommand, DispenseStack, LockSeat
from controller.engine.inputs import Input, MarkOutOfOrder
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from drivers.interfaces import DeviceOffline, LockAcknowledged
from tests.engine.chapter_faults import cite, counting, remedy, returned_everything, table
from tests.engine.conftest import decide_all
from tests.engine.held_faults import NO_HIT

HAND_AND_SHOE = ("643a", "655a", "683a")


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("fallback", ["hand", None])
def test_no_method_left_before_the_first_card_voids_the_round(chapter: str, fallback: DealingMethod | None) -> None:
    t = table(chapter, "automated_shoe", counting(chapter, fallback_dealing_method=fallback))
    t.shoe = list(NO_HIT)
    t.decks = [list(NO_HIT) for _ in range(4)]
    waiting: list[LockSeat] = []
    perfect = t.answer

    def held_locks(c: DeviceCommand) -> list[Input]:
        if isinstance(c, LockSeat):
            waiting.append(c)  # the stations acknowledge later
            return []
        return perfect(c)

    t.answer = held_locks
    t.press("no_more_bets")
    assert t.state.phase.value == "locking" and waiting
    for dev in ("shoe", "shuffler") if fallback == "hand" else ("shoe",):
        t.feed(MarkOutOfOrder(dev))  # covered without a fault: a shoe's fault after "no more bets" voids (.13(f))
    assert "no_method" in t.state.blocks
    t.answer = perfect
    for c in waiting:
        t.feed(LockAcknowledged(f"wager_station_{c.seat}", seat=c.seat, locked=True))
    assert not [c for c in t.commands if isinstance(c, DispenseStack)], "a stack asked of the covered shoe"
    assert not [e for e in t.events if e.type in ("card.dealt", "cards.dealt", "deal.awaiting_dealer")]
    void = remedy(t.events, "round.voided")
    assert void.rule == cite(chapter, "13(f)") and "marked out of order" in void.payload["reason"]
    returned_everything(t, void)
    assert t.state.phase is Phase.BLOCKED and "no_method" in t.state.blocks


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
@pytest.mark.parametrize("fallback", ["automated_shoe", "manual_shoe"])
def test_turning_to_a_held_fallback_shoe_before_the_first_card_deals_the_round_by_hand(
    chapter: str, fallback: DealingMethod
) -> None:
    """A hand-dealt table's fallback shoe went offline (held, blocking nothing while the table deals by hand); after
    "no more bets" the shuffler is marked out of order, so the next round would be dealt from the held shoe. Found by
    test_stateful's machine: a stack was asked of the held automated shoe. The round was announced under .9 and its
    shuffle completed: it is dealt from the hand, from the shuffler's order; the held shoe blocks the next round."""
    t = table(chapter, "hand", counting(chapter, fallback_dealing_method=fallback))
    t.decks = [list(NO_HIT) for _ in range(4)]
    t.feed(DeviceOffline("shoe", reason="unplugged"))
    assert "shoe" in t.state.devices_down and "device:shoe" not in t.state.blocks
    waiting: list[LockSeat] = []
    perfect = t.answer

    def held_locks(c: DeviceCommand) -> list[Input]:
        if isinstance(c, LockSeat):
            waiting.append(c)
            return []
        return perfect(c)

    t.answer = held_locks
    t.press("no_more_bets")
    assert t.state.phase.value == "locking" and waiting
    held = remedy(t.feed(MarkOutOfOrder("shuffler")), "device.unusable")
    assert held.rule == cite(chapter, "13(g)") and "no new round" in held.payload["remedy"]
    t.answer = perfect
    for c in waiting:
        t.feed(LockAcknowledged(f"wager_station_{c.seat}", seat=c.seat, locked=True))
    assert not [c for c in t.commands if isinstance(c, DispenseStack)], "a stack asked of the held shoe"
    assert t.state.phase is Phase.DEALT and "round.voided" not in t.types()
    decide_all(t, t.press("dealt"))
    assert t.types().count("round.completed") == 1
    assert t.state.phase.value == "blocked" and "device:shoe" in t.state.blocks
