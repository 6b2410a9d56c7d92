"""Chapter 684a (the game's name is not in the available text) as the round engine sees it.

Only § 684a.10 (automated dealing shoe) is published, with the definitions (684a.1): the sections for the other
dealing methods, the wagers (684a.7), the completion of the round and the irregularities are not, so the
dealing method "automated_shoe" is the only one this spec plans. The readings it takes where the text is silent:
- A player is a seat with both an Ante and an Odds Wager (684a.10(b), 684a.1); the text sets no relation between
  their amounts (684a.7 is not available), so none is enforced.
- The Raise Wager is one of the config's `raise_multiples` of the Ante, or the player folds (684a.1 "Fold").
- Table limits: the config's `wager_limits` (the Ante has none unless posted; the Odds and the optional wagers take
  the Ante's); a spec built with `limits` posts those instead (controller.games.partial.posted_limits).
- Citations: a step whose section is not available cites the chapter with "(not available: ...)" rather than a
  section number the text does not confirm (PartialCitations, shared with 679a).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.core.money import Cents
from controller.core.settlement import Settled
from controller.engine.spec import (
    ChapterSpec,
    DealingMethod,
    DealPlan,
    Decision,
    Offer,
    RoundView,
    Stack,
    TableOptions,
)
from controller.games import partial
from controller.games.chapter_684a.record import Chapter684aRound, Chapter684aSeat
from controller.games.chapter_684a.rules import (
    CHAPTER,
    MAIN,
    NAME,
    OPTIONAL,
    PLAYER_CARDS,
    WAGER_RULE,
    Chapter684aRules,
)
from controller.games.chapter_684a.settle import settle as settle_record
from controller.games.partial import PartialCitations

STACK_RULE = "684a.10(b)"
STUB_RULE = "684a.10(c)"
ALL_SIX_AREA = "all_six_bonus"
# 684a.10(b): the top card of the stack after the dealer's is the All-Six Bonus card, the other four go to the
# discard rack unexposed.
ALL_SIX_STACK = (ALL_SIX_AREA, *("burn",) * (PLAYER_CARDS - 1))
UNSUPPORTED: Mapping[str, str] = {
    "manual_shoe": "684a's procedures for dealing from a manual dealing shoe are",
    "hand": "684a's procedures for dealing from the hand are",
}


# The subsections whose text is available (684a-definitions-and-automated-shoe.txt, 684a.10-automated-dealing-shoe.txt).
PUBLISHED = ("1", *(f"10({x})" for x in "abcdef"))


def _not_available(subject: str) -> str:
    return partial.not_available(CHAPTER, subject)


class Chapter684aSpec(ChapterSpec[Chapter684aRules]):
    chapter: str = CHAPTER
    name: str = NAME
    supported_methods: tuple[DealingMethod, ...] = ("automated_shoe",)
    main_wagers: tuple[str, ...] = MAIN  # ante, odds, raise: a fold collects the Ante and the Odds (684a.1)
    citations: Mapping[str, str] = PartialCitations(
        CHAPTER,
        PUBLISHED,
        {
            "open": _not_available("opening of the table"),
            "shuffle": _not_available("684a.5 shuffle and cut of the cards"),
            "count": "684a.10(d)",  # the shuffler that counts and indicates whether 52 cards are present
            "betting": "684a.1",  # every wager but the Raise is made "prior to any cards being dealt"
            "player": "684a.10(b)",  # stacks go only to players with Ante and Odds Wagers
            "seat": _not_available("seating; the table's seats are the config's game.seats"),
            # 684a.7(c) is not available; the "no more bets" announcement closes the wagers (684a.10(a)(2)).
            "7(c)": "684a.10(a)(2)",
            "boxes": _not_available("how many adjacent boxes one player may wager on, per the Rules Submission"),
            "complete": _not_available("completion of the round; settled per the Rules Submission, 601a.2"),
            # A misdeal or a deck that is not whole voids every hand and returns every wager (684a.10(f)); the other
            # irregularities have no published 684a text, and PartialCitations says so.
            "13(c)": "684a.10(f)",
        },
    )
    # When the dealer's and the All-Six Bonus cards are turned up is in sections that are not available; every area
    # is in `round.completed`, so no reveal event claims a rule the text does not give.
    reveal_before: Mapping[str, tuple[str, str, str]] = {}
    community_area: str | None = None  # 684a.10(b) deals no community card

    def __init__(self, limits: Mapping[str, tuple[Cents, Cents]] | None = None) -> None:
        """limits: spot -> (min, max) cents, for a caller that has the table's posted limits."""
        self.limits: dict[str, tuple[Cents, Cents]] = dict(limits or {})

    def seats(self, rules: Chapter684aRules) -> int:
        return rules.seats

    def require_method(self, method: DealingMethod) -> None:
        """Refuse a dealing method whose section is not published, before a table is opened with it."""
        if method in UNSUPPORTED:
            raise ValueError(
                f"chapter 684a cannot be dealt from a {method.replace('_', ' ')}: {UNSUPPORTED[method]} not "
                "available, only 684a.10 (dealing from an automated dealing shoe) is; set the dealing method to "
                '"automated_shoe"'
            )

    def offers(self, rules: Chapter684aRules) -> Sequence[Offer]:
        limits = {**rules.posted_limits(), **self.limits}
        return partial.offers(["ante", "odds", *(w for w in OPTIONAL if rules.offers(w))], WAGER_RULE, limits)

    def options(self, rules: Chapter684aRules) -> TableOptions:
        return rules.stub_options()

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        missing = [name for w, name in (("ante", "Ante"), ("odds", "Odds")) if not wagers.get(w)]
        if not missing:
            return None
        return (
            f"no {' or '.join(missing)} Wager at this seat: 684a.10(b) deals only to a player with Ante and "
            "Odds Wagers (684a.1 requires both)"
        )

    def plan(
        self,
        rules: Chapter684aRules,
        method: DealingMethod,
        players: Sequence[int],
        wagers: Mapping[int, Mapping[str, Cents]],
    ) -> DealPlan:
        self.require_method(method)
        # 684a.10(b): a stack of five to each player clockwise from the dealer's left, then one to the dealer.
        stacks = [Stack((f"seat:{n}",) * PLAYER_CARDS, STACK_RULE) for n in players]
        stacks.append(Stack(("dealer",) * PLAYER_CARDS, STACK_RULE))
        if any(w.get("all_six") for w in wagers.values()):
            stacks.append(Stack(ALL_SIX_STACK, STACK_RULE))
        # 684a.10(c): the stub goes to the discard rack; nothing is dealt from it.
        return DealPlan(STUB_RULE, stacks=tuple(stacks))

    def decisions(self, rules: Chapter684aRules) -> Sequence[Decision]:
        return (Decision("raise", "Raise Wager", "684a.1", "wager_or_fold", "raise"),)

    def allowed(self, rules: Chapter684aRules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        ante = wagers.get("ante", 0)
        return [m * ante for m in rules.raise_multiples]

    def settle(self, rules: Chapter684aRules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        return settle_record(rules, self.record(rules, table))

    def record(self, rules: Chapter684aRules, table: RoundView) -> Chapter684aRound:
        bonus = table.areas.get(ALL_SIX_AREA, ())
        return Chapter684aRound(
            chapter="684a",
            round_id=table.round_id,
            dealer=list(table.areas.get("dealer", ())),
            all_six_bonus_card=bonus[0] if bonus else None,
            seats=[
                Chapter684aSeat(seat=s.seat, cards=list(s.cards), wagers=dict(s.wagers), folded=s.folded_on is not None)
                for s in table.seats
            ],
        )
