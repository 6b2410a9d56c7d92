"""Deck life: ticks of the clock, deck change due (.3(c)), the idle-table inspection (.5(f)), the opening
inspection and new decks verified (.4(a)), and the blocks they raise and clear."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from controller.engine.inputs import Confirm, Tick
from controller.engine.state import DeckLife, Phase
from controller.engine.step import _StepBase


class _DeckLifeMixin(_StepBase):
    # -- time: deck life (.3(c)) and the idle table (.5(f)) -----------------------------------------

    def tick(self, inp: Tick) -> None:
        if self.s.now is not None and inp.now <= self.s.now:
            return  # time never runs backwards here; a repeated or late tick changes nothing
        self.s.now = inp.now
        if self.s.last_activity is None:
            self.s.last_activity = inp.now
        if self.s.phase is Phase.CLOSED:
            return
        for d, life in list(self.s.decks.items()):
            if life.since is None:
                self.s.decks[d] = replace(life, since=inp.now)
        hand = self.e.method == "hand"
        hours = self.opts.deck_change_hours or (4 if hand else 8)
        due = sorted(
            d
            for d, life in self.s.decks.items()
            if life.since is not None and inp.now - life.since >= timedelta(hours=hours)
        )
        if due and "deck_change_due" not in self.s.blocks:
            rule = self.e.rule("3(c)(1)" if hand else "3(c)(2)")
            self.block("deck_change_due", f"deck {', '.join(due)} in play {hours:g} hours: a new deck must be verified")
            self.emit(
                "deck.change_due",
                rule,
                {
                    "decks": due,
                    "hours": hours,
                    "since": {d: _iso(self.s.decks[d].since) for d in due},
                    "remedy": "no new round until a new deck is verified by the floorperson",
                },
            )
            self.pause_empty_betting()
        idle = self.opts.idle_inspection_minutes
        quiet = self.s.round is None or (
            self.s.phase is Phase.BETTING and not any(st.wagers for st in self.s.round.seats.values())
        )
        if (
            idle is not None
            and quiet
            and self.s.last_activity is not None
            and "inspection" not in self.s.blocks
            and "idle_inspection" not in self.s.blocks
            and inp.now - self.s.last_activity >= timedelta(minutes=idle)
        ):
            self.block(
                "idle_inspection",
                f"no gaming activity for {idle} minutes: the cards must be inspected before the next round",
            )
            self.emit(
                "cards.inspection_due",
                self.e.rule("5(f)"),
                {
                    "idle_minutes": idle,
                    "since": _iso(self.s.last_activity),
                    "remedy": "the cards are spread for inspection, then washed and shuffled; the dealer confirms",
                },
            )
            self.pause_empty_betting()

    def inspected(self, who: str) -> None:
        if "inspection" in self.s.blocks:  # .4(a): the dealer inspects, the floorperson verifies
            if who == "floorperson" and "dealer" not in self.s.confirmed:
                self.refused(
                    "cards_inspected",
                    "the floorperson verifies the dealer's inspection: the dealer inspects first",
                    self.e.rule("4(a)"),
                )
                return
            self.s.confirmed.add(who)
            self.emit(
                "cards.inspected" if who == "dealer" else "cards.inspection_verified", self.e.rule("4(a)"), {"by": who}
            )
            if {"dealer", "floorperson"} <= self.s.confirmed:
                self.s.confirmed = set()
                self.unblock("inspection", "dealer and floorperson")
        elif "idle_inspection" in self.s.blocks:  # .5(f): spread, inspected, then washed and shuffled
            self.emit("cards.inspected", self.e.rule("5(f)"), {"by": who})
            if self.s.now is not None:
                self.s.last_activity = self.s.now
            self.unblock("idle_inspection", who)
        else:
            self.ignored("cards_inspected", "no inspection is awaited")

    def deck_verified(self, c: Confirm) -> None:
        if c.who != "floorperson":
            self.refused("deck_verified", "a new deck is verified by the floorperson", self.e.rule("4(a)"))
            return
        removed = "deck_removed" in self.s.blocks
        due = "deck_change_due" in self.s.blocks
        if not (removed or due):
            self.ignored("deck_verified", "no new deck is awaited")
            return
        decks = [c.deck] if c.deck in self.s.decks else list(self.s.decks)
        for d in decks:
            self.s.decks[d] = DeckLife(since=self.s.now)
        self.emit("deck.verified", self.e.rule("4(a)"), {"decks": decks, "by": "floorperson", "note": c.note})
        hand = self.e.method == "hand"
        hours = self.opts.deck_change_hours or (4 if hand else 8)
        still_due = [
            d
            for d, life in self.s.decks.items()
            if self.s.now is not None and life.since is not None and self.s.now - life.since >= timedelta(hours=hours)
        ]
        if due and not still_due:
            self.unblock("deck_change_due", "floorperson")
        if removed:
            self.unblock("deck_removed", "floorperson")


def _iso(t: Any) -> str | None:
    return t.isoformat() if t is not None else None
