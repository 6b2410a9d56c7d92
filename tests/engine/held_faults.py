"""Tables for the device-fault tests at the pure table: the automated shoe that jams once the round is dealt, the
round played to its end, 643a waiting on its chip count before the deal, the shoe that jams at a dispense. Shared by
test_fault_between_rounds.py, test_fault_cleared.py, test_fault_before_the_deal.py, test_fault_while_dealing.py and
test_shuffler_jams.py, so that none imports another."""

from __future__ import annotations

import random

from controller.core.cards import STANDARD_DECK
from controller.engine.commands import DeviceCommand, DispenseStack
from controller.engine.inputs import Confirm, Input
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.spec import LetItRideSpec
from drivers.interfaces import DeviceFault
from tests.engine.chapter_faults import cite, methods, on, returned_everything, table
from tests.engine.conftest import PureTable, decide_all, enter_player, open_table

NO_HIT = random.Random(0).sample(STANDARD_DECK, 52)  # seeded: no progressive is hit in any chapter
AUTOMATED = [c for c in ("643a", "655a", "683a", "684a") if "automated_shoe" in methods(c)]


class JammedShoe:
    """The automated shoe once it has jammed: every dispense answers the jam until the shoe is back."""

    def __init__(self, t: PureTable) -> None:
        self.jammed = False
        self.code = "jam"  # or "stopped", "misfeed", "empty": what each dispense answers while jammed
        self.perfect = t.answer

    def __call__(self, c: DeviceCommand) -> list[Input]:
        if self.jammed and isinstance(c, DispenseStack):
            return [DeviceFault("shoe", code=self.code, detail="card jam at the dispensing gate")]
        return self.perfect(c)


def quiet_table(chapter: str, method: DealingMethod) -> PureTable:
    """Two players; the round's deck is one that hits no progressive (643a's standard order hits one, whose
    validation would hold the round open)."""
    t = table(chapter, method)
    t.shoe = list(NO_HIT)
    t.decks = [list(NO_HIT) for _ in range(4)]
    return t


def play_round(t: PureTable) -> None:
    """ "No more bets", the deal (by hand, the dealer's "dealt"), each decision: the round to its end."""
    dealt = t.press("no_more_bets")
    if t.state.phase is Phase.DEALT:
        dealt = t.press("dealt")
    decide_all(t, dealt)


def jam_after_the_deal(chapter: str) -> tuple[PureTable, JammedShoe]:
    """A round dealt from the automated shoe; the shoe reports a jam once the stub is out, then the round ends."""
    t = quiet_table(chapter, "automated_shoe")
    shoe = JammedShoe(t)
    t.answer = shoe

    def stub_then_jam(c: DeviceCommand) -> list[Input]:
        shoe.jammed = True
        return [*shoe.perfect(c), DeviceFault("shoe", code="jam", detail="card jam at the dispensing gate")]

    on(t, "remove_stub", stub_then_jam)
    play_round(t)
    assert "round.completed" in t.types()
    return t, shoe


def counted_643a() -> PureTable:
    """643a with the Five Card Bonus on a table game system: after "no more bets" the dealer counts its chips
    before any card (643a.8(b)(1)), so the round waits in RECONCILING."""
    rules = LetItRideRules.model_validate(
        {
            "chapter": "643a",
            "dealing_method": "automated_shoe",
            "let_it_ride_paytable": "A",
            "five_card_bonus": True,
            "five_card_bonus_paytable": "A",
            "three_card_bonus": True,
            "three_card_bonus_paytable": "A",
            "five_card_bonus_table_game_system": True,
        }
    )
    t = open_table(LetItRideSpec(), rules, "automated_shoe", [list(NO_HIT) for _ in range(4)])
    for seat in (2, 4):
        for bet in ("bet_1", "bet_2", "bet_3"):
            t.wager(seat, bet, 500)
        t.wager(seat, "five_card_bonus", 100)
    t.press("no_more_bets")
    if t.state.phase is not Phase.RECONCILING:
        raise RuntimeError(f"expected the chip count to be awaited, the table is {t.state.phase}")
    return t


def jam_while_dealing(chapter: str, code: str = "jam") -> tuple[PureTable, JammedShoe]:
    """A round dealt from the automated shoe that faults (`code`) at its second dispense, its first stack already on
    the layout: .13(f) voids the round. The shoe stays faulted until the test clears it (`shoe.jammed = False`)."""
    t = quiet_table(chapter, "automated_shoe")
    shoe = JammedShoe(t)
    t.answer = shoe

    def first_stack_then_jam(c: DeviceCommand) -> list[Input]:
        shoe.jammed = True
        return shoe.perfect(c)

    on(t, "dispense_stack", first_stack_then_jam)
    shoe.code = code
    t.press("no_more_bets")
    assert "round.voided" in t.types() and t.types().count("cards.dealt") >= 1
    return t, shoe


def dispenses(t: PureTable) -> int:
    return sum(isinstance(c, DispenseStack) for c in t.commands)


def voided_and_held(t: PureTable, chapter: str, code: str) -> None:
    """The shoe's fault `code` in the deal voided the round (.13(f), every wager returned) and held the shoe (.13(g),
    said before the void): the table is blocked, and no new round is dealt from the shoe still jammed (no wager taken,
    no stack asked of it)."""
    void = next(e for e in t.events if e.type == "round.voided")
    assert void.rule == cite(chapter, "13(f)") and code in void.payload["reason"]
    returned_everything(t, void)
    held = next(e for e in t.events if e.type == "device.unusable" and e.payload["device"] == "shoe")
    assert held.rule == cite(chapter, "13(g)") and code in held.payload["reason"]
    assert t.events.index(held) < t.events.index(void)
    assert t.state.phase is Phase.BLOCKED and "device:shoe" in t.state.blocks
    assert t.state.device_faults["shoe"].uncleared == (code,)
    asked = dispenses(t)
    rejected = enter_player(t, 1)
    assert rejected and {e.type for e in rejected} == {"wager.rejected"} and dispenses(t) == asked


def the_shoe_deals_the_next_round(t: PureTable) -> None:
    """The dealer shuffles and cuts by hand, the shoe is loaded and deals the table's second round to its end: nothing
    voided on the way."""
    t.shoe = list(NO_HIT)
    t.feed(Confirm("dealer", "shuffled"))
    assert t.state.phase is Phase.BETTING
    enter_player(t, 1)
    decide_all(t, t.press("no_more_bets") + t.draw())
    assert t.types().count("round.completed") == 2 and "round.voided" not in t.types()
