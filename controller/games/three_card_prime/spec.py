"""Chapter 679a, Three Card Prime, as the round engine sees it: wagers, the deal from the hand, the Play Wager.

Only § 679a.9 (dealing from the hand) is published, with 679a.1 and part of 679a.7: 679a.8 (manual dealing shoe)
and 679a.10 (automated dealing shoe) are not, so the dealing method "hand" is the only one this spec plans. The
readings it takes where the text is silent:
- The Pair Bonus fourth cards (679a.9(b)) are dealt after the dealer's third card, one to each Pair Bonus player
  clockwise from the dealer's left: (b) names them after the three-card rounds and deals "around the table in a
  clockwise manner", and (g) puts the community card that replaces them after everyone has three cards.
- Seat n's fourth card goes to place n of the `fourth_card` area (target `fourth_card#n`), so one event type
  (`fourth_card.dealt`) reports them all and settlement finds each by seat.
- Table limits: the config's `wager_limits` (the Ante has none unless posted; an optional wager takes the Ante's);
  a spec built with `limits` posts those instead (controller.games.partial.posted_limits).
- Citations: a step whose section is not available cites the chapter with "(not available: ...)" rather than a
  section number the text does not confirm (679a.13 is not known to exist); PartialCitations answers every key
  the engine may ask, so a step added to the engine later is not cited to a missing section either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.core.money import Cents
from controller.core.settlement import Settled
from controller.engine.spec import ChapterSpec, DealingMethod, DealPlan, Decision, Offer, RoundView, TableOptions
from controller.games import partial
from controller.games.partial import PartialCitations
from controller.games.three_card_prime.record import ThreeCardPrimeRound, ThreeCardPrimeSeat
from controller.games.three_card_prime.rules import (
    CHAPTER,
    NAME,
    OPTIONAL,
    PLAYER_CARDS,
    WAGER_RULE,
    ThreeCardPrimeRules,
)
from controller.games.three_card_prime.settle import settle as settle_record

DEAL_RULE = "679a.9(b)"
FOURTH_CARD = "fourth_card"  # seat n's Pair Bonus fourth card is place n of this area (679a.9(b))
COMMUNITY = "pair_bonus_community"  # the one Pair Bonus community card (679a.9(g))
UNSUPPORTED: Mapping[str, str] = {
    "manual_shoe": "679a.8 (procedures for dealing the cards from a manual dealing shoe)",
    "automated_shoe": "679a.10 (procedures for dealing the cards from an automated dealing shoe)",
}


# The subsections whose text is available (679a-three-card-prime-partial.txt, 679a.9-dealing-from-the-hand.txt).
PUBLISHED = ("1", "7(a)", "7(b)", "7(c)", "7(d)(1)", "7(d)(2)", "7(d)(3)", *(f"9({x})" for x in "abcdefg"))


def _not_available(subject: str) -> str:
    return partial.not_available(CHAPTER, subject)


class ThreeCardPrimeSpec(ChapterSpec[ThreeCardPrimeRules]):
    chapter: str = CHAPTER
    name: str = NAME
    supported_methods: tuple[DealingMethod, ...] = ("hand",)
    # The Bad Beat Bonus is a payout on the Play Wager (679a.1), never a wager placed, so it belongs to the hand's
    # result; a fold collects only what is on the layout, which it never is.
    main_wagers: tuple[str, ...] = ("ante", "play", "bad_beat_bonus")
    citations: Mapping[str, str] = PartialCitations(
        CHAPTER,
        PUBLISHED,
        {
            "open": _not_available("opening of the table"),
            "shuffle": "679a.9(a)(1)",  # dealing from the hand requires an automated shuffler
            "count": "679a.9(d)",  # the shuffler that counts and indicates whether 52 cards are present
            "betting": "679a.7(c)",
            "player": "679a.7(d)(1)",  # 679a.9(b) deals only to an Ante Wager made under 679a.7(d)(1)
            "seat": "679a.7(b)",
            # 679a.11 (completion of each round) is known only by its heading; the round is settled per the
            # operator's Rules Submission (601a.2), so the citation says both.
            "boxes": _not_available("how many adjacent boxes one player may wager on, per the Rules Submission"),
            "complete": "679a.11 (not available; settled per the Rules Submission, 601a.2)",
            # A misdeal voids every hand and returns every wager (679a.9(f)), the nearest remedy the text gives; the
            # other irregularities (.13(a), (b), (d)-(g) elsewhere) have no published 679a text and 679a.13 is not
            # known to exist, so PartialCitations says so.
            "13(c)": "679a.9(f)",
        },
    )
    # The section that would say when the dealer's, fourth and community cards are turned up (679a.11) is not
    # available; every area is in `round.completed`, so no reveal event claims a rule the text does not give.
    reveal_before: Mapping[str, tuple[str, str, str]] = {}
    # The only community card is the Pair Bonus community card (679a.9(g)); what its early exposure does is in
    # sections that are not available, so the engine's void with every wager returned stands, cited as such.
    community_area: str | None = COMMUNITY

    def __init__(self, limits: Mapping[str, tuple[Cents, Cents]] | None = None) -> None:
        """limits: spot -> (min, max) cents, for a caller that has the table's posted limits."""
        self.limits: dict[str, tuple[Cents, Cents]] = dict(limits or {})

    def options(self, rules: ThreeCardPrimeRules) -> TableOptions:
        return rules.table_options()

    def seats(self, rules: ThreeCardPrimeRules) -> int:
        return rules.seats

    def require_method(self, method: DealingMethod) -> None:
        """Refuse a dealing method whose section is not published, before a table is opened with it."""
        if method in UNSUPPORTED:
            raise ValueError(
                f"chapter 679a cannot be dealt from a {method.replace('_', ' ')}: {UNSUPPORTED[method]} is not "
                'available, only 679a.9 (dealing from the hand) is; set the dealing method to "hand"'
            )

    def offers(self, rules: ThreeCardPrimeRules) -> Sequence[Offer]:
        limits = {**rules.posted_limits(), **self.limits}
        return partial.offers(["ante", *(w for w in OPTIONAL if rules.offers(w))], WAGER_RULE, limits)

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        # 679a.9(b) deals only to a player with an Ante Wager (679a.7(d)(1)); optional wagers alone go back.
        return None if wagers.get("ante") else "no Ante Wager at this seat (679a.7(d)(1), 679a.9(b))"

    def plan(
        self,
        rules: ThreeCardPrimeRules,
        method: DealingMethod,
        players: Sequence[int],
        wagers: Mapping[int, Mapping[str, Cents]],
    ) -> DealPlan:
        self.require_method(method)
        # 679a.9(b): one card at a time, clockwise from the dealer's left, to each Ante and then the dealer, until
        # each has three.
        three = tuple(t for _ in range(PLAYER_CARDS) for t in (*(f"seat:{n}" for n in players), "dealer"))
        bonus = [n for n in players if wagers[n].get("pair_bonus")]
        extra: tuple[str, ...] = ()
        if bonus and rules.pair_bonus_layout == "fourth_card":
            extra = tuple(f"{FOURTH_CARD}#{n}" for n in bonus)  # 679a.9(b), order as the module docstring reads it
        elif bonus and rules.pair_bonus_layout == "community_card":
            extra = (COMMUNITY,)  # 679a.9(g): once everyone has three cards
        return DealPlan(DEAL_RULE, cards=three + extra)

    def decisions(self, rules: ThreeCardPrimeRules) -> Sequence[Decision]:
        # 679a.7(d)(1): a Play Wager equal to the Ante, or the player folds; no card is turned up after it.
        return (Decision("play", "Play Wager", "679a.7(d)(1)", "wager_or_fold", "play"),)

    def allowed(self, rules: ThreeCardPrimeRules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        return [wagers.get("ante", 0)]

    def settle(self, rules: ThreeCardPrimeRules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        return settle_record(rules, self.record(rules, table))

    def record(self, rules: ThreeCardPrimeRules, table: RoundView) -> ThreeCardPrimeRound:
        fourth = table.areas.get(FOURTH_CARD, ())
        community = table.areas.get(COMMUNITY, ())
        return ThreeCardPrimeRound(
            chapter="679a",
            round_id=table.round_id,
            dealer=list(table.areas.get("dealer", ())),
            pair_bonus_community_card=community[0] if community else None,
            seats=[
                ThreeCardPrimeSeat(
                    seat=s.seat,
                    cards=list(s.cards),
                    wagers=dict(s.wagers),
                    folded=s.folded_on is not None,
                    fourth_card=(fourth[s.seat - 1] or None) if s.seat <= len(fourth) else None,
                )
                for s in table.seats
            ],
        )
