"""Opening and closing the table, and the shuffle (.4(a) opening inspection, .5(b)-(d) counting and
manual shuffle, .13(g) the shuffler out of order)."""

from __future__ import annotations

from typing import Any

from controller.engine.state import DeckLife, Phase
from controller.engine.step import _StepBase
from drivers.interfaces import ShuffleCompleted


class _ShufflingMixin(_StepBase):
    # -- opening, closing, shuffling -------------------------------------------------------------

    def open_table(self) -> None:
        if self.s.phase is not Phase.CLOSED:
            self.ignored("open table", "the table is already open")
            return
        labels = ("A", "B") if self.opts.decks == "two_decks" else ("A",)
        self.s.decks = {d: self.s.decks.get(d, DeckLife(since=self.s.now)) for d in labels}
        self.s.last_activity = self.s.now
        self.seed_meters()
        self.emit(
            "table.opened",
            self.e.rule("open"),
            {
                "chapter": self.spec.chapter,
                "game": self.spec.name,
                "seats": self.seats,
                "dealing_method": self.e.method,
                "decks": list(labels),
                "cards_preinspected": self.opts.cards_preinspected,
            },
        )
        if not self.opts.cards_preinspected:
            # .4(a): the dealer inspects the cards, the floorperson verifies; only then the first shuffle.
            self.s.blocks["inspection"] = "the opening inspection of the cards: dealer, verified by the floorperson"
            self.s.confirmed = set()
            self.s.phase = Phase.OPENING
            self.s.block_reason = self.reasons()
            self.emit(
                "cards.inspection_requested",
                self.e.rule("4(a)"),
                {
                    "decks": list(labels),
                    "by": ["dealer", "floorperson"],
                    "reason": "the table opens: the dealer inspects the cards and the floorperson verifies",
                },
            )
            return
        self.start_shuffle()

    def close_table(self) -> None:
        if self.s.phase is Phase.CLOSED:
            self.ignored("close table", "the table is already closed")
        elif self.s.phase in (Phase.SHUFFLING, Phase.BETTING, Phase.BLOCKED, Phase.OPENING):
            if self.s.round:  # no cards are out: wagers on the layout go back to their players
                for n, st in sorted(self.s.round.seats.items()):
                    for spot, amount in sorted(st.wagers.items()):
                        self.emit(
                            "wager.returned",
                            self.e.rule("7(c)"),
                            {"seat": n, "spot": spot, "amount": amount, "reason": "the table closed"},
                        )
            self.closed()
        else:
            self.s.closing = True
            self.emit("table.closing", None, {"after_round": self.r.number})

    def closed(self) -> None:
        self.s.round = None
        self.s.phase = Phase.CLOSED
        self.s.closing = False
        # A closed table shows no block; reopened (or restored after a restart) it says again what blocks it.
        self.s.block_reason = None
        self.emit("table.closed", None, {"rounds_played": self.s.rounds_played})
        for seat in range(1, self.seats + 1):
            self.command("wager_station", "lock", seat=seat)

    def start_shuffle(self) -> None:
        if self.s.closing:
            self.closed()
            return
        if self.s.blocks:  # no new round until every block is cleared
            self.enter_blocked()
            return
        self.s.phase = Phase.SHUFFLING
        if self.manual_shuffle():
            # .13(g): the shuffler is out of order; the dealer shuffles by hand and cuts with the cover card.
            self.emit(
                "shuffle.started",
                self.e.rule("shuffle"),
                {
                    "device": "manual",
                    "deck": self.s.next_deck,
                    "then": "cut with the cover card at least ten cards in (.5(d)); confirm when done",
                },
            )
            return
        self.emit("shuffle.started", self.e.rule("shuffle"), {"device": "shuffler"})
        self.command("shuffler", "shuffle")

    def shuffle_completed(self, inp: ShuffleCompleted) -> None:
        if self.s.phase is not Phase.SHUFFLING or self.manual_shuffle():
            self.ignored(
                "shuffle completed",
                "no shuffle was asked for" if not self.manual_shuffle() else "the shuffler is out of order (.13(g))",
            )
            return
        if self.opts.shuffler_counts and inp.card_count != 52:
            # .5(b): a counting shuffler that finds other than 52 cards: the deck leaves the table.
            self.s.blocks["deck_removed"] = f"shuffler counted {inp.card_count} cards; a new deck must be verified"
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = self.reasons()
            self.emit(
                "deck.removed",
                self.e.rule("count"),
                {"card_count": inp.card_count, "deck": self.s.next_deck, "reason": self.s.blocks["deck_removed"]},
            )
            return
        if self.method == "hand" and len(inp.order) != 52:
            self.s.blocks["shuffle_order"] = (
                "dealing from the hand needs the shuffler's card order, and it gave "
                "none: use a card-reading shuffler or another dealing method"
            )
            self.s.phase = Phase.BLOCKED
            self.s.block_reason = self.reasons()
            self.emit("table.blocked", None, {"reason": self.s.block_reason, "reasons": dict(self.s.blocks)})
            return
        self.s.deck_order = list(inp.order)
        payload: dict[str, Any] = {
            "card_count": inp.card_count if self.opts.shuffler_counts else None,
            "deck_in": "shoe" if self.method != "hand" else "dealer's hand",
        }
        if self.opts.decks == "two_decks":
            payload["deck"] = self.s.next_deck
        self.emit(
            "shuffle.completed", self.e.rule("count") if self.opts.shuffler_counts else self.e.rule("shuffle"), payload
        )
        self.after_shuffle()

    def after_shuffle(self) -> None:
        if self.s.closing:
            self.closed()
        elif self.s.blocks:
            self.enter_blocked()
        else:
            self.open_betting()

    def manual_shuffle_done(self, who: str) -> None:
        if not self.manual_shuffle():
            self.refused(
                "shuffled",
                "the shuffler is not marked out of order: no other method of shuffling may be used (.13(g))",
                self.e.rule("13(g)"),
            )
            return
        if self.s.phase is not Phase.SHUFFLING or who != "dealer":
            self.ignored("shuffled", "no manual shuffle is awaited from the dealer")
            return
        self.s.deck_order = []
        self.emit(
            "shuffle.completed",
            self.e.rule("5(c)(2)"),
            {
                "card_count": None,
                "device": "manual",
                "cut": self.e.rule("5(d)"),
                "deck_in": "shoe" if self.method != "hand" else "dealer's hand",
            },
        )
        self.after_shuffle()
