"""Chapter 655a as the round engine sees it: wagers, dealing order per method, streets, settlement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.core.money import Cents
from controller.core.settlement import Settled
from controller.engine.spec import ChapterSpec, DealingMethod, DealPlan, Decision, Offer, RoundView, Stack, TableOptions
from controller.games.boxes import player_name
from controller.games.mississippi_stud import rules as ms
from controller.games.mississippi_stud.progressives import table_progressives
from controller.games.mississippi_stud.record import MississippiStudRound, MississippiStudSeat
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.settle import settle as settle_record
from controller.progressive.parameters import TableProgressives

COMMUNITY = tuple(f"community#{i}" for i in range(1, ms.COMMUNITY_CARDS + 1))
SIX_CARD = ("six_card_bonus",) * ms.SIX_CARD_BONUS_CARDS


class MississippiStudSpec(ChapterSpec[MississippiStudRules]):
    chapter: str = ms.CHAPTER
    name: str = ms.NAME
    main_wagers: tuple[str, ...] = ("ante", "street_3", "street_4", "street_5")
    citations: Mapping[str, str] = {
        "open": "655a.4",
        "shuffle": "655a.5(a)",
        "count": "655a.5(b)",
        "betting": "655a.7(c)",
        "player": "655a.7(d)(1)",
        "seat": "655a.2(a)",
        "boxes": "655a.7(e)",
        "complete": "655a.11(j)",
    }
    reveal_before: Mapping[str, tuple[str, str, str]] = {
        "six_card_bonus": ("six_card_bonus.revealed", "655a.11(i)(4)", "six_card_bonus")
    }

    # 655a.2(c): the progressive table game system, a wagering device at each seat locked out at "no more bets".
    progressive_wagers: tuple[str, ...] = ("progressive",)

    def light_rule(self, hit_rule: str) -> str:
        # The Five Card Hand Bonus (655a.11(i)(3)) has no seat light: (i), the dealer verifies the winning hand.
        return "655a.11(i)(3)(i)" if hit_rule.startswith("655a.11(i)(3)") else "655a.11(i)(1)(ii)"

    def validation_rule(self, hit_rule: str) -> str:
        return "655a.11(i)(3)(ii)" if hit_rule.startswith("655a.11(i)(3)") else "655a.11(i)(1)(iii)"

    def random_bonuses(self, rules: MississippiStudRules) -> Mapping[str, str]:
        drawn = {"magic_card": rules.magic_card_bonus, "lucky_seat": rules.lucky_bonus}
        return {draw: "655a.12(e)(3)" for draw, paid in drawn.items() if paid}

    def dealing_method(self, rules: MississippiStudRules) -> DealingMethod:
        return rules.dealing_method

    def options(self, rules: MississippiStudRules) -> TableOptions:
        return rules.options()

    def boxes_per_player(self, rules: MississippiStudRules) -> int:
        return rules.adjacent_boxes

    def progressives(self, rules: MississippiStudRules) -> TableProgressives:
        return table_progressives(rules)

    def seats(self, rules: MississippiStudRules) -> int:
        return rules.seats

    def offers(self, rules: MississippiStudRules) -> Sequence[Offer]:
        return [
            Offer("ante", ms.WAGER_RULES["ante"], rules.ante_min_cents, rules.ante_max_cents),
            *rules.optional_offers(),
        ]

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        # 655a.7(d)(1): only an Ante makes a player; optional wagers without one go back.
        return None if wagers.get("ante") else "no Ante Wager at this seat"

    def plan(
        self,
        rules: MississippiStudRules,
        method: DealingMethod,
        players: Sequence[int],
        wagers: Mapping[int, Mapping[str, Cents]],
    ) -> DealPlan:
        six = SIX_CARD if any(w.get("six_card_bonus") for w in wagers.values()) else ()
        if method == "automated_shoe":
            # 655a.10(b): a two-card stack to each player clockwise; (c): then from the stub by hand,
            # the four Six Card Bonus cards when any seat wagered it, then the three community cards.
            stacks = tuple(Stack((f"seat:{n}",) * ms.PLAYER_CARDS, "655a.10(b)") for n in players)
            if rules.reshuffling_shoe:
                # 655a.10(g): a reshuffling shoe may dispense the three community cards first (top card first).
                return DealPlan("655a.10(c)", stacks=(Stack(COMMUNITY, "655a.10(g)"), *stacks), from_stub=six)
            return DealPlan("655a.10(c)", stacks=stacks, from_stub=six + COMMUNITY)
        # 655a.8(d), 655a.9(b): the Six Card Bonus cards first, then the players' two cards (one at a time
        # around the table, clockwise from the dealer's left), then the three community cards.
        rule = "655a.8(d)" if method == "manual_shoe" else "655a.9(b)"
        players_cards = tuple(f"seat:{n}" for _ in range(ms.PLAYER_CARDS) for n in players)
        return DealPlan(rule, cards=six + players_cards + COMMUNITY)

    def decisions(self, rules: MississippiStudRules) -> Sequence[Decision]:
        return tuple(
            Decision(st.spot, st.name, st.decide_rule, "wager_or_fold", st.spot, COMMUNITY[i], st.reveal_rule)
            for i, st in enumerate(ms.STREETS)
        )

    def allowed(self, rules: MississippiStudRules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        ante = wagers.get("ante", 0)
        return [m * ante for m in ms.STREET_MULTIPLES]

    def settle(self, rules: MississippiStudRules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        return settle_record(rules, self.record(rules, table))

    def record(self, rules: MississippiStudRules, table: RoundView) -> MississippiStudRound:
        return MississippiStudRound(
            chapter="655a",
            round_id=table.round_id,
            community=list(table.areas.get("community", ())),
            six_card_bonus_cards=list(table.areas.get("six_card_bonus", ())),
            meters=dict(table.meters),
            meter_carry_micro=dict(table.meter_carry_micro),
            meters_at_turn=dict(table.meters_at_turn) or None,  # a table's own meters: left out of its record
            meters_after_turn=dict(table.meters_after_turn) or None,
            magic_card=table.magic_card,
            lucky_seat=table.lucky_seat,
            seats=[
                MississippiStudSeat(
                    seat=s.seat,
                    player=player_name(s),
                    cards=list(s.cards),
                    wagers=dict(s.wagers),
                    folded_on=s.folded_on,
                )
                for s in table.seats
            ],
        )
