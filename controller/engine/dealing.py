"""Dealing: the chapter's deal plan per dealing method, automated-shoe stacks and stub, manual-shoe cards,
the deal from the hand, and the stub count without a counting shuffler (.8(f)-(h), .9(d)-(f), .10(d)-(f))."""

from __future__ import annotations

from dataclasses import replace

from controller.core.cards import deck_problems
from controller.engine.spec import DealPlan
from controller.engine.state import DeckLife, Phase
from controller.engine.step import _area, _StepBase
from drivers.interfaces import CardDrawn, StackDispensed, StubRemoved


class _DealingMixin(_StepBase):
    # -- dealing ---------------------------------------------------------------------------------

    def plan(self) -> DealPlan:
        r = self.r
        # The wagers as at "no more bets": a player who left mid-deal (.7(b)) does not change the deal.
        return self.spec.plan(
            self.rules, self.method, r.players, {n: {**r.seats[n].collected, **r.seats[n].wagers} for n in r.players}
        )

    def start_dealing(self) -> None:
        self.s.phase = Phase.DEALING
        life = self.s.decks.get(self.r.deck, DeckLife(since=self.s.now))
        self.s.decks[self.r.deck] = replace(
            life, rounds=life.rounds + 1, rounds_since_count=life.rounds_since_count + 1
        )
        plan = self.plan()
        if self.method == "automated_shoe":
            self.command("shoe", "dispense_stack", cards=len(plan.stacks[0].targets))
        elif self.method == "hand":
            if len(self.s.deck_order) < len(plan.cards):
                # .9(a)(1): dealing from the hand takes an automated shuffler, and only its card order tells
                # the controller the layout; after a manual shuffle there is none, so this round cannot be
                # dealt from the hand and no round will be until the shuffler is back or a shoe deals.
                self.block(
                    "no_method",
                    "dealing from the hand needs the automated shuffler's card order "
                    f"({self.e.rule('9(a)(1)')}): put the shuffler back in service",
                )
                self.void(self.e.rule("9(a)(1)"), "no card order from an automated shuffler to deal from the hand")
                return
            # The deck's order is known: the layout follows from the chapter's dealing order.
            for target, card in zip(plan.cards, self.s.deck_order, strict=False):
                self.place(target, card, plan.rule)
            self.r.cards_dealt = len(plan.cards)
            self.s.phase = Phase.DEALT
            self.emit("deal.awaiting_dealer", plan.rule, {"cards": len(plan.cards)})
        # A manual shoe: the dealer draws; each card the reader sees arrives as CardDrawn.

    def place(self, target: str, card: str, rule: str) -> None:
        r = self.r
        r.dealt.append(card)
        area, index = _area(target)
        if area.startswith("seat:"):
            seat = int(area[5:])
            r.seats[seat].cards.append(card)
            return
        cards = r.areas.setdefault(area, [])
        if index is None:
            cards.append(card)
        else:
            while len(cards) < index:
                cards.append("")
            cards[index - 1] = card

    def stack_dispensed(self, inp: StackDispensed) -> None:
        if self.s.phase is not Phase.DEALING or self.method != "automated_shoe":
            self.ignored("stack dispensed", "no stack was asked for")
            return
        plan = self.plan()
        r = self.r
        if r.stacks_dispensed >= len(plan.stacks):
            self.ignored("stack dispensed", "every stack of the round is already out")
            return
        stack = plan.stacks[r.stacks_dispensed]
        r.stacks_dispensed += 1
        if len(inp.cards) != len(stack.targets):
            r.dealt.extend(inp.cards)
            self.void(self.e.rule("13(c)"), f"a stack of {len(inp.cards)} cards instead of {len(stack.targets)}")
            return
        for target, card in zip(stack.targets, inp.cards, strict=True):
            self.place(target, card, stack.rule)
        self.report_stack(stack.targets, list(inp.cards), stack.rule)
        if r.stacks_dispensed < len(plan.stacks):
            self.command("shoe", "dispense_stack", cards=len(plan.stacks[r.stacks_dispensed].targets))
        else:
            self.command("shoe", "remove_stub")

    def report_stack(self, targets: tuple[str, ...], cards: list[str], rule: str) -> None:
        """One event per area a stack or hand deal fills: `cards.dealt` for a seat, `<area>.dealt` else."""
        groups: dict[str, list[str]] = {}
        for t, c in zip(targets, cards, strict=True):
            groups.setdefault(_area(t)[0], []).append(c)
        for area, got in groups.items():
            if area.startswith("seat:"):
                self.emit("cards.dealt", rule, {"seat": int(area[5:]), "count": len(got)}, {"cards": got})
            else:
                self.emit(f"{area}.dealt", rule, {"count": len(got)}, {"cards": got})

    def stub_removed(self, inp: StubRemoved) -> None:
        if (
            self.s.phase is not Phase.DEALING
            or self.method != "automated_shoe"
            or self.r.stacks_dispensed < len(self.plan().stacks)
        ):
            self.ignored("stub removed", "the stub was not asked for")
            return
        plan = self.plan()
        r = self.r
        stub = list(inp.cards)
        problems = deck_problems(r.dealt + r.discarded + stub)
        if problems:
            self.void(self.e.rule("13(c)"), "deck check failed: " + "; ".join(problems))
            return
        hand_dealt, stub = stub[: len(plan.from_stub)], stub[len(plan.from_stub) :]
        for target, card in zip(plan.from_stub, hand_dealt, strict=True):
            self.place(target, card, plan.rule)
        if plan.from_stub:
            self.report_stack(plan.from_stub, hand_dealt, plan.rule)
        self.finish_deal(plan.rule, len(stub))

    def card_drawn(self, inp: CardDrawn) -> None:
        if self.s.phase is not Phase.DEALING or self.method != "manual_shoe":
            self.ignored("card drawn", "no cards are being dealt from a manual shoe")
            return
        plan = self.plan()
        r = self.r
        if inp.card in r.dealt or inp.card in r.discarded:
            self.void(self.e.rule("13(c)"), f"the shoe gave {inp.card} a second time: the deck is not whole")
            return
        target = plan.cards[r.cards_dealt]
        r.cards_dealt += 1
        self.place(target, inp.card, plan.rule)
        self.emit("card.dealt", plan.rule, {"to": _area(target)[0]}, {"card": inp.card})
        if r.cards_dealt == len(plan.cards):
            self.finish_deal(plan.rule, 52 - len(r.dealt) - len(r.discarded))

    def dealt_confirmed(self) -> None:
        if self.s.phase is not Phase.DEALT:
            self.ignored("dealt", "no deal from the hand is awaiting confirmation")
            return
        plan = self.plan()
        self.report_stack(plan.cards, self.r.dealt[: len(plan.cards)], plan.rule)
        self.finish_deal(plan.rule, 52 - len(plan.cards) - len(self.r.discarded))

    # -- the stub count without a counting shuffler (.8(f)-(h), .9(d)-(f), .10(d)-(f)) ---------------

    def stub_rules(self) -> tuple[str, str, str]:
        """(count, whole, incorrect) for the dealing method."""
        sub = {
            "manual_shoe": ("8(f)", "8(g)", "8(h)"),
            "hand": ("9(d)", "9(e)", "9(f)"),
            "automated_shoe": ("10(d)", "10(e)", "10(f)"),
        }[self.method]
        return self.e.rule(sub[0]), self.e.rule(sub[1]), self.e.rule(sub[2])

    def finish_deal(self, rule: str, stub: int) -> None:
        """Every card is on the layout: the stub goes to the discard rack, after a count when one is due."""
        r = self.r
        life = self.s.decks.get(r.deck, DeckLife())
        if not self.shuffler_counts() and life.rounds_since_count >= self.opts.stub_count_every:
            self.s.phase = Phase.STUB_COUNT
            r.stub_rule = self.stub_rules()[0]
            r.stub_expected = 52 - len(r.dealt) - len(r.discarded)
            self.emit(
                "stub_count.requested",
                r.stub_rule,
                {
                    "rounds_since_count": life.rounds_since_count,
                    "deck": r.deck,
                    "remedy": "count the stub face down on the layout and enter the count",
                },
                {"expected": r.stub_expected},
            )
            return
        self.emit("stub.discarded", rule, {"count": stub})
        self.dealing_complete()

    def stub_counted(self, count: int) -> None:
        r = self.r
        if r.stub_entered is not None:
            self.ignored("stub count", "the dealer is determining whether the cards were misdealt")
            return
        _, whole, incorrect = self.stub_rules()
        total = len(r.dealt) + len(r.discarded) + count
        if total == 52:
            life = self.s.decks.get(r.deck, DeckLife())
            self.s.decks[r.deck] = replace(life, rounds_since_count=0)
            self.emit("stub.counted", whole, {"count": count, "deck_total": 52, "deck": r.deck})
            self.emit("stub.discarded", whole, {"count": count})
            r.stub_rule = None
            self.dealing_complete()
            return
        r.stub_entered = count
        self.emit(
            "stub_count.mismatch",
            incorrect,
            {
                "count": count,
                "deck_total": total,
                "remedy": (
                    "the dealer determines whether the cards were misdealt: confirm 'misdeal' (52 cards are "
                    "there, void) or 'no_misdeal' (void and the deck leaves the table)"
                ),
            },
        )

    def misdeal_determined(self, misdealt: bool) -> None:
        r = self.r
        _, _, incorrect = self.stub_rules()
        total = len(r.dealt) + len(r.discarded) + (r.stub_entered or 0)
        if misdealt:
            self.void(
                incorrect, f"the cards were misdealt; the stub count ({r.stub_entered}) with the layout makes 52 cards"
            )
            return
        self.block(
            "deck_removed",
            f"the stub count makes {total} cards and the cards were not misdealt: a new deck must be verified",
        )
        self.emit(
            "deck.removed", incorrect, {"card_count": total, "deck": r.deck, "reason": self.s.blocks["deck_removed"]}
        )
        self.void(
            incorrect,
            f"the stub count makes {total} cards, not 52, and the cards were not misdealt",
            remedy="all wagers returned; the entire deck is removed from the table",
        )

    def dealing_complete(self) -> None:
        self.s.phase = Phase.DECISION
        self.r.decision = 0
        if not self.e.decisions:
            self.settle()
            return
        self.next_decision()
