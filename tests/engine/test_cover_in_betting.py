"""The automated shoe covered (.13(g)) while betting is open, on a table falling back to the hand whose shuffler gives
no card order (it counts, it does not read): the round's deck is in the covered shoe and the table cannot deal it from
the hand, since .9(a)(1) takes an automated shuffler and this engine lays the hand's layout from its order. The table
knows it before "no more bets" (.9(a)(3): announced "prior to dealing any cards"), so no wager is locked for a round it
cannot deal: "no more bets" is refused (.9(a)(1)), the wagers stand on the layout (they were never locked, .13 voids
nothing before "no more bets"), until the shoe is back in service (the round is dealt from it, .10) or a floorperson
directs a reshuffle (.5(a)), which gives the standing wagers back before the shuffle. Before this reading the wagers
were locked and the round voided at its deal under .9(a)(1) (docs/rules.md)."""

from __future__ import annotations

import pytest

from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand, Shuffle
from controller.engine.inputs import FloorpersonDecision, Input, MarkOutOfOrder, Recover, StopRecord
from controller.engine.state import Phase
from controller.store import snapshot
from drivers.interfaces import DeviceFault, DeviceOffline, DeviceOnline, ShuffleCompleted
from tests.engine.chapter_faults import cite, remedy
from tests.engine.conftest import PureTable, decide_all, enter_player
from tests.engine.covers import HAND_AND_SHOE, on_layout, shoe_table
from tests.engine.held_faults import NO_HIT, dispenses, play_round


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_no_more_bets_is_refused_and_the_wagers_stand_until_the_shoe_is_back(chapter: str) -> None:
    t = shoe_table(chapter)
    wagers = on_layout(t)
    marked = remedy(t.feed(MarkOutOfOrder("shoe")), "device.out_of_order")
    assert marked.payload["dealing_method"] == "hand"
    assert "card order" in marked.payload["remedy"] and "back in service" in marked.payload["remedy"]
    pressed = t.press("no_more_bets")
    refused = remedy(pressed, "no_more_bets.refused")
    assert refused.rule == cite(chapter, "9(a)(1)"), "the hand's deal takes the automated shuffler's order"
    assert "shuffle_order" in refused.payload["blocks"]
    assert t.state.phase is Phase.BETTING and on_layout(t) == wagers, "nothing locked, nothing voided"
    assert not {"no_more_bets", "lockout.confirmed", "round.voided"} & set(t.types())
    # The shoe back in service: the deck is in it, the round is dealt from it (.10) with the wagers as they stood.
    back = t.feed(MarkOutOfOrder("shoe", out=False))
    assert remedy(back, "table.block_cleared").payload["block"] == "shuffle_order"
    before = dispenses(t)
    pressed = t.press("no_more_bets")
    assert remedy(pressed, "no_more_bets").rule == cite(chapter, "10(a)(2)")
    assert remedy(pressed, "no_more_bets").payload["wagers"] == {str(n): w for n, w in wagers.items()}
    decide_all(t, pressed)
    assert dispenses(t) > before and t.types().count("round.completed") == 1
    assert "round.voided" not in t.types()


class ReadingShuffler:
    """The shuffler swapped for a card-reading one (the remedy): every shuffle reports its order."""

    def __init__(self, t: PureTable) -> None:
        self.t, self.perfect = t, t.answer

    def __call__(self, c: DeviceCommand) -> list[Input]:
        if isinstance(c, Shuffle):
            self.t.shoe = list(NO_HIT)
            return [ShuffleCompleted("shuffler", card_count=52, order=tuple(self.t.shoe))]
        return self.perfect(c)


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_floorperson_directs_a_reshuffle_and_the_standing_wagers_go_back(chapter: str) -> None:
    t = shoe_table(chapter)
    wagers = on_layout(t)
    t.feed(MarkOutOfOrder("shoe"))
    t.answer = ReadingShuffler(t)
    shuffles = sum(isinstance(c, Shuffle) for c in t.commands)
    decided = t.feed(FloorpersonDecision("shuffle_order", "reshuffle", "fp1"))
    back = {(e.payload["seat"], e.payload["spot"]): e.payload["amount"] for e in decided if e.type == "wager.returned"}
    assert back == {(n, spot): amount for n, w in wagers.items() for spot, amount in w.items()}
    assert all(e.rule == cite(chapter, "5(a)") for e in decided if e.type == "wager.returned")
    assert "round.voided" not in t.types(decided), "no round of play began: nothing to void"
    assert sum(isinstance(c, Shuffle) for c in t.commands) == shuffles + 1
    # The reshuffle gave an order: a new round's betting, dealt from the hand.
    assert t.state.phase is Phase.BETTING and on_layout(t) == {} and len(t.state.deck_order) == 52
    enter_player(t, 1)
    asked = dispenses(t)
    play_round(t)
    assert remedy(t.events, "lockout.confirmed").rule == cite(chapter, "9(a)(3)")
    assert t.types().count("round.completed") == 1 and dispenses(t) == asked


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_an_empty_layout_closes_betting_at_once(chapter: str) -> None:
    t = shoe_table(chapter, players=0)
    assert on_layout(t) == {}
    marked = t.feed(MarkOutOfOrder("shoe"))
    assert "shuffle_order" in remedy(marked, "table.blocked").payload["reasons"]
    assert t.state.phase is Phase.BLOCKED and t.state.round is None


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_the_wait_outlasts_a_restart(chapter: str) -> None:
    t = shoe_table(chapter)
    wagers = on_layout(t)
    t.feed(MarkOutOfOrder("shoe"))
    t.state = snapshot.decode(snapshot.encode(t.state))
    t.feed(Recover())
    assert on_layout(t) == wagers, "the wagers accepted stand"
    assert remedy(t.press("no_more_bets"), "no_more_bets.refused").rule == cite(chapter, "9(a)(1)")
    assert "no_more_bets" not in t.types()


# What the covered shoe says first once the table is up again (docs/recovery.md): nothing yet, it identifies (it may
# have been uncovered while the table was down), a fault, or it is not there.
FIRST_REPORTS: dict[str, list[Input]] = {
    "none": [],
    "identifies": [DeviceOnline("shoe")],
    "faulted": [DeviceOnline("shoe"), DeviceFault("shoe", code="jam", detail="card jam at the gate")],
    "offline": [DeviceOffline("shoe", reason="unplugged")],
}


def stopped_and_restarted(t: PureTable) -> list[DomainEvent]:
    """SIGTERM (`table.stopped` at seq 40), the state read back from its stored form, and the start's `Recover`."""
    t.state = snapshot.decode(snapshot.encode(t.state))
    return t.feed(Recover(after_stop=StopRecord(40, "SIGTERM")))


@pytest.mark.parametrize("report", sorted(FIRST_REPORTS))
@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_restart_says_the_refusal_pending_and_what_lifts_it(chapter: str, report: str) -> None:
    """Found by cover25's reading: restarted in betting with "no more bets" refused for the covered shoe, the table
    said nothing of it until the dealer pressed the button again. `table.recovered` now carries the refusal as the
    press would say it (rule, reason, blocks) with its remedy, each way on cited (.13(g) the shoe back in service,
    .5(a) the reshuffle). What the covered shoe says first after the restart changes nothing: the mark is the signed
    record of the cover (.13(g)), lifted only by a signed back_in_service, and a covered device's reports are not
    taken; the refusal stands and either remedy still works."""
    t = shoe_table(chapter)
    wagers = on_layout(t)
    t.feed(MarkOutOfOrder("shoe"))
    out = stopped_and_restarted(t)
    assert t.types(out)[:2] == ["table.recovered", "device.out_of_order"], "said first, then the mark"
    recovered = out[0].payload
    pending = recovered["no_more_bets_refused"]
    assert (pending["rule"], pending["blocks"]) == (cite(chapter, "9(a)(1)"), ["shuffle_order"])
    assert f"back in service ({cite(chapter, '13(g)')}" in pending["remedy"]
    assert f"reshuffle ({cite(chapter, '5(a)')})" in pending["remedy"]
    assert recovered["after_stop"] == {"seq": 40, "by": "SIGTERM"}
    assert recovered["wagers"] == {str(n): w for n, w in wagers.items()}
    for inp in FIRST_REPORTS[report]:
        t.feed(inp)
    refused = remedy(t.press("no_more_bets"), "no_more_bets.refused")
    assert {"rule": refused.rule, **refused.payload} == {k: v for k, v in pending.items() if k != "remedy"}, (
        "the restart said the refusal the press gets"
    )
    assert t.state.phase is Phase.BETTING and on_layout(t) == wagers
    if report == "identifies":  # the shoe back in service: the round is dealt from it (.10) as it stood
        assert remedy(t.feed(MarkOutOfOrder("shoe", out=False)), "table.block_cleared").payload["block"] == (
            "shuffle_order"
        )
        locked = remedy(t.press("no_more_bets"), "no_more_bets")
        assert (locked.rule, locked.payload["wagers"]) == (
            cite(chapter, "10(a)(2)"),
            {str(n): w for n, w in wagers.items()},
        )
    else:  # the floorperson's reshuffle (.5(a)): every standing wager back, no round voided
        t.answer = ReadingShuffler(t)
        decided = t.feed(FloorpersonDecision("shuffle_order", "reshuffle", "fp1"))
        back = {(e.payload["seat"], e.payload["spot"]) for e in decided if e.type == "wager.returned"}
        assert back == {(n, spot) for n, w in wagers.items() for spot in w}
        assert "round.voided" not in t.types()


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_a_shoe_held_in_betting_is_said_pending_at_the_restart_under_13g(chapter: str) -> None:
    """The same field for the other blocks that stop a round in betting from being dealt: the automated shoe faulted
    while betting is open (not covered) refuses "no more bets" under .13(g), and its block says what lifts it."""
    t = shoe_table(chapter)
    t.feed(DeviceFault("shoe", code="malfunction", detail="motor"))
    pending = stopped_and_restarted(t)[0].payload["no_more_bets_refused"]
    assert (pending["rule"], pending["blocks"]) == (cite(chapter, "13(g)"), ["device:shoe"])
    assert pending["remedy"] == t.state.blocks["device:shoe"] and "mark it out of order" in pending["remedy"]
    refused = remedy(t.press("no_more_bets"), "no_more_bets.refused")
    assert {"rule": refused.rule, **refused.payload} == {k: v for k, v in pending.items() if k != "remedy"}


@pytest.mark.parametrize("chapter", HAND_AND_SHOE)
def test_nothing_is_said_pending_when_nothing_stops_the_deal(chapter: str) -> None:
    """Betting with nothing stopping the deal, and a shoe covered on an empty layout (betting closed, BLOCKED: no
    round, so no "no more bets" to refuse): `table.recovered` carries no refusal."""
    t = shoe_table(chapter)
    assert "no_more_bets_refused" not in stopped_and_restarted(t)[0].payload
    empty = shoe_table(chapter, players=0)
    empty.feed(MarkOutOfOrder("shoe"))
    recovered = stopped_and_restarted(empty)[0].payload
    assert recovered["phase"] == "blocked" and "shuffle_order" in recovered["blocks"]
    assert "no_more_bets_refused" not in recovered
