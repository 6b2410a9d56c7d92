"""Chapter 643a as the round engine sees it: wagers, dealing order per method, decisions, settlement.

Automated dealing shoe and the community stack (643a.10(b), 643a.11(c)): the shoe dispenses the community
stack top card first. The dealer spreads it with the top card to the dealer's right and the bottom card to
the dealer's left, and discards the card to the left, the bottom card, unseen. Of the two cards left, the
middle card of the stack is now the one to the dealer's left, and 643a.11(c) turns "the community card that
is to the dealer's left" first: the middle card is community#1, the top card community#2. Stack targets are
listed top card first, hence ("community#2", "community#1", "burn").
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
from controller.games.boxes import player_name
from controller.games.let_it_ride.progressives import table_progressives
from controller.games.let_it_ride.record import LetItRideRound, LetItRideSeat
from controller.games.let_it_ride.rules import (
    CHAPTER,
    COMMUNITY_CARDS,
    LET_IT_RIDE_WAGERS,
    NAME,
    OPTIONAL_OFFERS,
    PLAYER_CARDS,
    LetItRideRules,
)
from controller.games.let_it_ride.settle import settle_record
from controller.progressive.parameters import TableProgressives

COMMUNITY = tuple(f"community#{i}" for i in range(1, COMMUNITY_CARDS + 1))
# 643a.10(b): top card first; see the module docstring for why the middle card is the first community card.
COMMUNITY_STACK = ("community#2", "community#1", "burn")


class LetItRideSpec(ChapterSpec[LetItRideRules]):
    chapter: str = CHAPTER
    name: str = NAME
    main_wagers: tuple[str, ...] = LET_IT_RIDE_WAGERS
    citations: Mapping[str, str] = {
        "open": "643a.4",
        "shuffle": "643a.5(a)",
        "count": "643a.5(b)",
        "betting": "643a.7(c)",
        "player": "643a.7(d)",
        "seat": "643a.2(a)",
        "boxes": "643a.7(k)",
        "complete": "643a.11(g)",
    }
    # Let It Ride deals no cards that stay face down until an optional wager is settled.
    reveal_before: Mapping[str, tuple[str, str, str]] = {}
    # 643a.2(d): the progressive table game system, a wagering device at each seat locked out at "no more bets".
    progressive_wagers: tuple[str, ...] = ("three_card_progressive", "five_card_progressive")

    def dealing_method(self, rules: LetItRideRules) -> DealingMethod:
        return rules.dealing_method

    def boxes_per_player(self, rules: LetItRideRules) -> int:
        return rules.boxes_per_player

    def progressives(self, rules: LetItRideRules) -> TableProgressives:
        return table_progressives(rules)

    def wager_sizes(self, rules: LetItRideRules, spot: str) -> tuple[Cents, ...] | None:
        # 643a.7(g), (h): $1 or $5, as the Rules Submission allows.
        return rules.progressive_wager_sizes().get(spot)

    def light_rule(self, hit_rule: str) -> str:
        # (B) of the Three-Card (iii) or Five-Card (iv) Progressive Payout Wager's settlement, whichever was hit; the
        # Five Card Hand Bonus (v) has no light: (A), the dealer verifies the winning hand.
        if "(f)(3)(v)" in hit_rule:
            return "643a.11(f)(3)(v)(A)"
        return "643a.11(f)(3)(iv)(B)" if "(f)(3)(iv)" in hit_rule else "643a.11(f)(3)(iii)(B)"

    def validation_rule(self, hit_rule: str) -> str:
        if "(f)(3)(v)" in hit_rule:
            return "643a.11(f)(3)(v)(B)"  # the Five Card Hand Bonus: a floorperson verifies a share of the meter
        return "643a.11(f)(3)(iv)(C)" if "(f)(3)(iv)" in hit_rule else "643a.11(f)(3)(iii)(C)"

    def lockout_rule(self) -> str:
        return "643a.8(b)(2)"

    def counted_wagers(self, rules: LetItRideRules) -> Mapping[str, str | None]:
        """643a.2(c), 643a.8(b)(1), 9(a)(3)(i), 10(a)(2)(i): Five Card Bonus chips taken on a table game system, whose
        lock-out refuses any after "no more bets", are counted against the accepted wagers before any card."""
        if rules.five_card_bonus and rules.five_card_bonus_table_game_system:
            return {"five_card_bonus": "643a.8(b)(1)"}
        return {}

    def seats(self, rules: LetItRideRules) -> int:
        return rules.seats

    def random_bonuses(self, rules: LetItRideRules) -> Mapping[str, str]:
        drawn = {"magic_card": rules.magic_card_bonus, "lucky_seat": rules.lucky_bonus}
        return {draw: "643a.12(f)(3)" for draw, paid in drawn.items() if paid}

    def terminal_lock_rule(self) -> str:
        return "643a.2(e)"

    def verification_rule(self) -> str:
        return "643a.11(f)(3)(v)(B)"

    def offers(self, rules: LetItRideRules) -> Sequence[Offer]:
        # bet_1 first: the engine announces the first offer's limits as the table's minimum and maximum.
        bets = [Offer(w, "643a.7(d)", rules.bet_min_cents, rules.bet_max_cents) for w in LET_IT_RIDE_WAGERS]
        return [*bets, *rules.optional_offers()]

    def options(self, rules: LetItRideRules) -> TableOptions:
        return rules.options()

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        bets = [wagers.get(w, 0) for w in LET_IT_RIDE_WAGERS]
        if not any(bets):
            optional = sorted(w for w in wagers if w not in LET_IT_RIDE_WAGERS)
            rules = ", ".join(OPTIONAL_OFFERS.get(w, "643a.7") for w in optional)
            # 643a.7(e), (f): an optional wager is made "after placing the three wagers".
            return f"no Let It Ride Wagers at this seat: {', '.join(optional)} needs the three bets first ({rules})"
        if not all(bets):
            missing = [w for w, a in zip(LET_IT_RIDE_WAGERS, bets, strict=True) if not a]
            return f"{', '.join(missing)} not placed: 643a.7(d) requires Bet Number 1, 2 and 3"
        if len(set(bets)) != 1:
            return f"Bet Number 1, 2 and 3 are {bets}: 643a.7(d) requires three equal wagers"
        return None

    def plan(
        self,
        rules: LetItRideRules,
        method: DealingMethod,
        players: Sequence[int],
        wagers: Mapping[int, Mapping[str, Cents]],
    ) -> DealPlan:
        if method == "automated_shoe":
            # 643a.10(b): a three-card stack to each player clockwise from the dealer's left, then the
            # community stack; nothing is dealt from the stub, which goes to the discard rack (643a.10(c)).
            stacks = tuple(Stack((f"seat:{n}",) * PLAYER_CARDS, "643a.10(b)") for n in players)
            if rules.reshuffling_shoe:
                # 643a.10(g): a reshuffling shoe may dispense "the two community cards" first: a stack of two,
                # nothing burned (the burn belongs to the stack of three of (b)); read as the first card out
                # being the first community card.
                return DealPlan("643a.10(c)", stacks=(Stack(COMMUNITY, "643a.10(g)"), *stacks))
            return DealPlan("643a.10(c)", stacks=(*stacks, Stack(COMMUNITY_STACK, "643a.10(b)")))
        # 643a.8(d), 643a.9(b): one card to each player clockwise, the first community card, a second to each
        # player, the second community card (to the right of the first), a third to each player.
        rule = "643a.8(d)" if method == "manual_shoe" else "643a.9(b)"
        seats = tuple(f"seat:{n}" for n in players)
        return DealPlan(rule, cards=(*seats, COMMUNITY[0], *seats, COMMUNITY[1], *seats))

    def decisions(self, rules: LetItRideRules) -> Sequence[Decision]:
        return (
            Decision("bet_1", "Bet Number 1", "643a.11(b)", "ride_or_withdraw", "bet_1", COMMUNITY[0], "643a.11(c)"),
            Decision("bet_2", "Bet Number 2", "643a.11(d)", "ride_or_withdraw", "bet_2", COMMUNITY[1], "643a.11(e)"),
        )

    def allowed(self, rules: LetItRideRules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        # Only wager_or_fold decisions put out new amounts; 643a.11(b) and (d) only let a bet ride or go back.
        return ()

    def settle(self, rules: LetItRideRules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        return settle_record(rules, self.record(rules, table))

    def record(self, rules: LetItRideRules, table: RoundView) -> LetItRideRound:
        # Only the automated shoe's plan has a `burn` area (643a.10(b)); recording the card lets the
        # settlement's one-deck check cover it.
        burn = table.areas.get("burn", ())
        return LetItRideRound(
            chapter="643a",
            round_id=table.round_id,
            community=list(table.areas.get("community", ())),
            burned_card=burn[0] if burn else None,
            meters=dict(table.meters),
            meter_carry_micro=dict(table.meter_carry_micro),
            meters_at_turn=dict(table.meters_at_turn) or None,  # a table's own meters: left out of its record
            meters_after_turn=dict(table.meters_after_turn) or None,
            magic_card=table.magic_card,
            lucky_seat=table.lucky_seat,
            seats=[
                LetItRideSeat(
                    seat=s.seat,
                    player=player_name(s),
                    cards=list(s.cards),
                    wagers=dict(s.wagers),
                    bet_1_withdrawn="bet_1" in s.withdrawn,
                    bet_2_withdrawn="bet_2" in s.withdrawn,
                )
                for s in table.seats
            ],
        )
