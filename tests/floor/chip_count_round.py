"""A 643a round whose Five Card Bonus a table game system counts before any card (643a.8(b)(1)), from the pure engine:
shared by tests/floor/test_live_chip_count.py and test_console_this_round.py, so that neither imports the other."""

from __future__ import annotations

from controller.core.events import DomainEvent
from controller.engine.inputs import CountEntered
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.spec import LetItRideSpec
from tests.engine.conftest import open_table


def counted_round() -> list[DomainEvent]:
    """A 643a table whose Five Card Bonus a table game system counts: two bonuses wagered, counted right."""
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
    t = open_table(LetItRideSpec(), rules, "automated_shoe")
    for seat in (2, 4):
        for bet in ("bet_1", "bet_2", "bet_3"):
            t.wager(seat, bet, 500)
        t.wager(seat, "five_card_bonus", 100)
    asked = t.press("no_more_bets")
    assert "chip_count.requested" in t.types(asked) and "cards.dealt" not in t.types()
    t.feed(CountEntered("chips", 2))
    assert "cards.dealt" in t.types()
    return list(t.events)
