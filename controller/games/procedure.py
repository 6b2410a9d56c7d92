"""The table procedure every chapter's text shares, as [game] settings: stub counts, decks, inspections, deck
changes, abandoned wagers, the dealing method and what takes over from a device out of order.

The chapters number these steps alike (.3 decks, .4 opening, .5 shuffle, .8 manual shoe, .9 hand, .10 automated
shoe, .13(g) out of order), though not letter for letter (683a's manual-shoe stub count is 683a.8(e), 643a's and
655a's .8(f)); each chapter's rules model takes the mixins whose sections its published text has, and its spec
hands `table_options()` to the round engine (controller.engine.spec.TableOptions).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from controller.engine.spec import CashOutMedium, DealingMethod, TableOptions


class StubCounting(BaseModel):
    """The stub count without a counting shuffler (.8(f)-(h), .9(d)-(f), .10(d)-(f) in 643a and 655a; 683a.8(e)-(g),
    683a.9(d)-(f), 683a.10(d)-(f); 679a.9(d)-(f); 684a.10(d)-(f)), and the failed shuffles after which
    the shuffler is held unusable (.13(e), (g)): every table has a shuffler."""

    shuffler_counts: bool = Field(
        True,
        description="the automated shuffler counts the cards after each shuffle and indicates whether 52 are "
        "present (.5(b)); false: the dealer counts the stub at least every stub_count_every rounds (the dealing "
        "sections' stub count, e.g. 643a.8(f), 683a.8(e), 684a.10(d))",
    )
    stub_count_every: int = Field(
        5, ge=1, le=5, description="rounds of a deck between stub counts, at most 5 (at least once every 5 rounds)"
    )

    failed_shuffles_limit: int = Field(
        3,
        ge=1,
        le=10,
        description="failed shuffles in a row (a jam, a stop, an incomplete cycle: .13(e) reshuffles each) after "
        "which the shuffler is held unusable (.13(g)) until it identifies again or is marked out of order; 1 to 10",
    )

    def stub_options(self) -> TableOptions:
        return TableOptions(
            shuffler_counts=self.shuffler_counts,
            stub_count_every=self.stub_count_every,
            failed_shuffles_limit=self.failed_shuffles_limit,
        )


class TableProcedure(StubCounting):
    """Decks, inspections, deck changes and abandoned wagers (.3, .4, .5(f), .7(b))."""

    decks: Literal["one_deck", "two_decks"] = Field(
        "one_deck",
        description="one deck and a cover card (.3(a)), or two decks alternating every round, with an automated "
        "shuffler only (.3(b))",
    )
    cards_preinspected: bool = Field(
        True,
        description="decks arrive preinspected and reshuffled under 603a.16(u)/(v) (.4(e)); false: the dealer "
        "inspects at opening and the floorperson verifies (.4(a))",
    )
    deck_change_hours: float | None = Field(
        None,
        gt=0,
        description="change the decks after this many hours; default 4 dealt by hand, 8 from a shoe (.3(c)); a "
        "longer time is refused",
    )
    idle_inspection_minutes: int | None = Field(
        30,
        gt=0,
        description="no gaming activity this long: the cards are inspected again (.5(f)); null turns it off",
    )
    abandoned_wagers: Literal["lose", "hold"] = Field(
        "lose", description="wagers of a player who leaves during a round: treated as losing or held (.7(b))"
    )

    game_account_cash_out: list[CashOutMedium] = Field(
        ["chips", "ticket"],
        min_length=1,
        description="605a.2(d)(1): how the game accounts at the electronic wagering terminals are cashed out: "
        '"chips" (a cash-out record the dealer pays in value chips), "ticket", or both (the player asks for one at '
        "the terminal); a request for another medium is refused at the terminal",
    )

    def deck_change_problem(self, rule: str, method: DealingMethod) -> str | None:
        """Why deck_change_hours is longer than the chapter's deck change (`rule`, e.g. "683a.3(c)") allows for the
        dealing method, or None."""
        limit = 4 if method == "hand" else 8
        if self.deck_change_hours is not None and self.deck_change_hours > limit:
            return (
                f"deck_change_hours = {self.deck_change_hours:g}: {rule} changes the decks at least every "
                f"{limit} hours dealing by {method.replace('_', ' ')}; use {limit} or less"
            )
        return None

    def table_options(self, fallback: DealingMethod | None = None) -> TableOptions:
        return TableOptions(
            decks=self.decks,
            cards_preinspected=self.cards_preinspected,
            shuffler_counts=self.shuffler_counts,
            stub_count_every=self.stub_count_every,
            deck_change_hours=self.deck_change_hours,
            idle_inspection_minutes=self.idle_inspection_minutes,
            abandoned_wagers=self.abandoned_wagers,
            cash_out_media=tuple(dict.fromkeys(self.game_account_cash_out)),
            fallback_dealing_method=fallback,
            failed_shuffles_limit=self.failed_shuffles_limit,
        )


class DealingChoice(TableProcedure):
    """A chapter whose text gives all three dealing procedures (.8 manual shoe, .9 hand, .10 automated shoe)."""

    dealing_method: DealingMethod = Field(
        "automated_shoe",
        description=".10 automated dealing shoe, .8 manual dealing shoe with a card reader, or .9 from the hand "
        "(needs a card-reading shuffler, .9(a)(1))",
    )
    fallback_dealing_method: DealingMethod | None = Field(
        "manual_shoe",
        description="the dealing method once the shoe (or, dealing from the hand, the shuffler) is marked out of "
        "order (.13(g)); null: none, the table waits for the device",
    )

    def options(self) -> TableOptions:
        return self.table_options(self.fallback_dealing_method)
