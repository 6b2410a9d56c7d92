"""Chapter 683a as the round engine sees it: wagers, dealing order per method, raise decisions, settlement.

Cajun Stud runs like Mississippi Stud (655a) with two differences the engine cannot infer: the four
All-Six Bonus cards come off the deck BEFORE the players' cards when dealing from a manual shoe or the
hand (683a.8(c), 683a.9(b)), and a community card exposed early does not void the optional wagers, which
are settled instead (683a.13(d)); see settle_on_exposure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from controller.core.money import Cents
from controller.core.settlement import Settled
from controller.engine.spec import (
    ChapterSpec,
    DealingMethod,
    DealPlan,
    Decision,
    Offer,
    RoundView,
    SeatView,
    Stack,
    TableOptions,
)
from controller.games.boxes import player_name
from controller.games.cajun_stud.rankings import ALL_SIX_CARDS, BOARD_CARDS, POCKET_CARDS
from controller.games.cajun_stud.record import CajunStudRound, CajunStudSeat
from controller.games.cajun_stud.record import Decision as RaiseOrFold
from controller.games.cajun_stud.rules import (
    CHAPTER,
    NAME,
    OPTIONAL_WAGERS,
    RAISE_MULTIPLES,
    RAISES,
    WAGER_RULES,
    CajunStudRules,
)
from controller.games.cajun_stud.settle import settle as settle_record
from controller.games.cajun_stud.settle import settle_round

COMMUNITY = tuple(f"community#{i}" for i in range(1, BOARD_CARDS + 1))
ALL_SIX = ("all_six_bonus",) * ALL_SIX_CARDS

# (spot, name, the rule that asks for it, the rule that reveals the next community card afterwards)
RAISE_DECISIONS: tuple[tuple[str, str, str, str], ...] = (
    ("raise_1", "first Raise Wager", "683a.11(b)", "683a.11(c)"),
    ("raise_2", "second Raise Wager", "683a.11(d)", "683a.11(e)"),
    ("raise_3", "third Raise Wager", "683a.11(f)", "683a.11(g)"),
)


class CajunStudSpec(ChapterSpec[CajunStudRules]):
    chapter: str = CHAPTER
    name: str = NAME
    # A fold forfeits the Ante and the earlier raises only; the optional wagers stay in play
    # (683a.11(b), (d), (f)), so they are not main wagers.
    main_wagers: tuple[str, ...] = ("ante", *RAISES)
    citations: Mapping[str, str] = {
        "open": "683a.4",
        "shuffle": "683a.5(a)",
        "count": "683a.5(b)",
        "betting": "683a.7(c)",
        "player": "683a.7(d)(1)",
        "seat": "683a.2(a)",
        "complete": "683a.11(j)",
        # 683a numbers the manual shoe's stub one letter earlier than the common numbering (643a.8(e)-(h)):
        # 683a.8(d) discards it, 683a.8(e) counts it, (f) finds 52, (g) does not.
        "8(e)": "683a.8(d)",
        "8(f)": "683a.8(e)",
        "8(g)": "683a.8(f)",
        "8(h)": "683a.8(g)",
        "10(c)": "683a.10(c)(2)",  # the stub, once the community cards are dealt from it
        "boxes": "683a.7(e)",
    }
    exposure_settles: tuple[str, ...] = OPTIONAL_WAGERS
    reveal_before: Mapping[str, tuple[str, str, str]] = {
        "all_six_bonus": ("all_six_bonus.revealed", "683a.11(i)(4)", "all_six_bonus")
    }

    def seats(self, rules: CajunStudRules) -> int:
        return rules.seats

    def dealing_method(self, rules: CajunStudRules) -> DealingMethod:
        return rules.dealing_method

    def options(self, rules: CajunStudRules) -> TableOptions:
        return rules.options()

    def boxes_per_player(self, rules: CajunStudRules) -> int:
        return rules.adjacent_boxes

    def offers(self, rules: CajunStudRules) -> Sequence[Offer]:
        # The Ante first: the engine announces the first offer's limits as the table's Ante limits. Each optional
        # wager has the limits the config posts for it (wager_limits), the Ante's where it posts none.
        return [Offer("ante", WAGER_RULES["ante"], *rules.ante_limits()), *rules.optional_offers()]

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        # 683a.7(d)(1): the Ante is what enters a round, and 683a.8(c), 683a.9(b), 683a.10(b) deal cards only
        # to players who placed one, so an optional wager alone has no hand to settle against.
        return None if wagers.get("ante") else "no Ante Wager at this seat (683a.7(d)(1), 683a.8(c))"

    def plan(
        self,
        rules: CajunStudRules,
        method: DealingMethod,
        players: Sequence[int],
        wagers: Mapping[int, Mapping[str, Cents]],
    ) -> DealPlan:
        six = ALL_SIX if any(w.get("all_six_bonus") for w in wagers.values()) else ()
        if method == "automated_shoe":
            # 683a.10(b): a two-card stack to each player clockwise from the dealer's left; 683a.10(c): then,
            # by hand from the stub, the All-Six Bonus cards when any seat wagered it, then the community.
            stacks = tuple(Stack((f"seat:{n}",) * POCKET_CARDS, "683a.10(b)") for n in players)
            return DealPlan("683a.10(c)", stacks=stacks, from_stub=six + COMMUNITY)
        # 683a.8(c), 683a.9(b): unlike the automated shoe, the All-Six Bonus cards are the FIRST four off the
        # deck, then one card at a time clockwise until each player has two; 683a.8(d), 683a.9(c): then the
        # community cards. A DealPlan carries one rule, so it cites the subsection that sets the order.
        rule = "683a.8(c)" if method == "manual_shoe" else "683a.9(b)"
        players_cards = tuple(f"seat:{n}" for _ in range(POCKET_CARDS) for n in players)
        return DealPlan(rule, cards=six + players_cards + COMMUNITY)

    def decisions(self, rules: CajunStudRules) -> Sequence[Decision]:
        return tuple(
            Decision(spot, name, rule, "wager_or_fold", spot, COMMUNITY[i], reveal_rule)
            for i, (spot, name, rule, reveal_rule) in enumerate(RAISE_DECISIONS)
        )

    def allowed(self, rules: CajunStudRules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        # 683a.1 "Raise Wager", 683a.11(b), (d), (f): one, two or three times the Ante, whatever was raised before.
        ante = wagers.get("ante", 0)
        return [m * ante for m in RAISE_MULTIPLES]

    def settle(self, rules: CajunStudRules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        return settle_record(rules, self.record(rules, table))

    def record(self, rules: CajunStudRules, table: RoundView) -> CajunStudRound:
        # The record holds the hands settled, those of the players still in the round: when the only All-Six Bonus
        # Wager was a player's who left (683a.7(b)), the four cards dealt for it (683a.8(c)) belong to no hand in it.
        all_six = any(s.wagers.get("all_six_bonus") for s in table.seats)
        return CajunStudRound(
            chapter="683a",
            round_id=table.round_id,
            community_cards=list(table.areas.get("community", ())),
            all_six_bonus_cards=list(table.areas.get("all_six_bonus", ())) if all_six else [],
            community_exposed=table.exposed,
            seats=[
                CajunStudSeat(
                    seat=s.seat,
                    player=player_name(s),
                    cards=list(s.cards),
                    wagers={w: a for w, a in s.wagers.items() if a},
                    decisions=decisions_of(s),
                )
                for s in table.seats
            ],
        )

    def settle_on_exposure(self, rules: CajunStudRules, table: RoundView) -> list[Settled]:
        """683a.13(d): when a community card is exposed early the hands are void and the Ante and Raise Wagers go
        back, but every Pocket Bonus, Board Bonus, Lo Ball and All-Six Bonus Wager is settled under 683a.11(i),
        counterclockwise from the dealer's right as 683a.11(h) orders the settlement (the engine waits for the whole
        deal: a Board Bonus or Lo Ball needs the three community cards)."""
        settled = settle_round(rules, self.record(rules, replace(table, exposed=True)))
        return [x for x in settled if x.wager in OPTIONAL_WAGERS]


def decisions_of(seat: SeatView) -> list[RaiseOrFold]:
    """The record's answers (683a.11(b), (d), (f)): a raise for each Raise Wager made, then the fold if the player
    folded ("raise_2": a raise at the first decision, a fold at the second). A round voided by an exposed community
    card (683a.13(d)) stops where the exposure stopped it."""
    raised: list[RaiseOrFold] = ["raise" for r in RAISES if seat.wagers.get(r)]
    return [*raised, "fold"] if seat.folded_on is not None else raised
