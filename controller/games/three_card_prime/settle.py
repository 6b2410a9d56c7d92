"""Chapter 679a: the settlement of a recorded round, the same the round engine uses live.

679a.11 (completion of each round) is not available: seats are settled as the package docstring reads it, and
every rule the text leaves open comes from the Rules Submission.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from controller.core.cards import rank_value
from controller.core.invariant import present
from controller.core.money import Cents, Odds
from controller.core.rankings import rank_six, rank_three
from controller.core.settlement import Settled, lose, push, win, win_fixed
from controller.games.partial import SUBMISSION, prime_hand, settle_seats
from controller.games.three_card_prime.record import ThreeCardPrimeRound, ThreeCardPrimeSeat, validate
from controller.games.three_card_prime.rules import OPTIONAL, QUEEN, WAGER_RULE, ThreeCardPrimeRules


def qualifies(rules: ThreeCardPrimeRules, dealer: Sequence[str]) -> bool:
    """679a.1: queen high or better; hand_order keeps high card as the lowest class."""
    cls = rank_three(dealer).name.lower()
    return cls != "high_card" or max(rank_value(c) for c in dealer) >= QUEEN


def settle(rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound) -> tuple[list[Settled], dict[str, Cents]]:
    """Every wager of the round, seats counterclockwise from the dealer's right (679a.11 not available), and the
    meters, which no 679a wager moves."""
    validate(rules, r)
    dealer_key = rules.key(r.dealer)
    qualified = qualifies(rules, r.dealer)
    out = settle_seats(
        r.seats,
        OPTIONAL,
        WAGER_RULE,
        rules.folded_optional_wagers,
        lambda s: _main(rules, s, dealer_key, qualified),
        lambda s, w, amount: _optional(rules, r, s, w, amount),
    )
    return out, dict(r.meters)


def settle_round(rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound) -> list[Settled]:
    return settle(rules, r)[0]


def _main(
    rules: ThreeCardPrimeRules, s: ThreeCardPrimeSeat, dealer_key: tuple[int, tuple[int, ...]], qualified: bool
) -> list[Settled]:
    ante, play = s.wagers["ante"], s.wagers.get("play", 0)
    rule = "679a.7(d)(1)"
    hand = rank_three(s.cards).name.lower()
    if s.folded:
        return [lose(s.seat, "ante", ante, "679a.1", hand=hand, note="the player folded (made no Play Wager)")]
    odds = {"ante": Odds.parse(rules.ante_odds), "play": Odds.parse(rules.play_odds)}
    amounts = {"ante": ante, "play": play}
    if not qualified:
        choice = {"ante": rules.dealer_not_qualified.ante, "play": rules.dealer_not_qualified.play}
        note = "the dealer did not qualify (679a.1); dealer_not_qualified"
        return [
            win(s.seat, w, amounts[w], odds[w], rule, hand=hand, paytable=SUBMISSION, note=note)
            if choice[w] == "win"
            else push(s.seat, w, amounts[w], rule, hand=hand, note=note)
            for w in ("ante", "play")
        ]
    mine = rules.key(s.cards)
    if mine > dealer_key:
        return [win(s.seat, w, amounts[w], odds[w], rule, hand=hand, paytable=SUBMISSION) for w in ("ante", "play")]
    if mine == dealer_key:
        return [push(s.seat, w, amounts[w], rule, hand=hand, note="tie with the dealer") for w in ("ante", "play")]
    out = [lose(s.seat, w, amounts[w], rule, hand=hand) for w in ("ante", "play")]
    if rules.bad_beat_paytable and rules.bad_beat_minimum:
        row = rules.bad_beat_paytable.get(hand)
        if row is not None:
            bb = Odds.parse(row)
            out.append(
                win_fixed(
                    s.seat,
                    "bad_beat_bonus",
                    0,
                    bb.winnings(play),
                    "679a.1",
                    hand=hand,
                    odds=str(bb),
                    paytable=f"{SUBMISSION} bad_beat_paytable",
                    note=f"on the Play Wager of {play}: the dealer qualified and beat the player",
                )
            )
    return out


def _optional(
    rules: ThreeCardPrimeRules, r: ThreeCardPrimeRound, s: ThreeCardPrimeSeat, w: str, amount: Cents
) -> Settled:
    rule = WAGER_RULE[w]
    if w == "prime":
        hand, row = prime_hand(s.cards, rules.prime_paytable)
        table = f"{SUBMISSION} prime_paytable"
    elif w == "pair_bonus":
        extra = present(  # validate() requires it
            r.pair_bonus_community_card if rules.pair_bonus_layout == "community_card" else s.fourth_card,
            "the Pair Bonus's fourth card",
        )
        best = max(combinations([*s.cards, extra], 3), key=rules.key)
        hand = rank_three(best).name.lower()
        row = (rules.pair_bonus_paytable or {}).get(hand)
        table = f"{SUBMISSION} pair_bonus_paytable ({rules.pair_bonus_layout})"
    else:
        hand = rank_six([*s.cards, *r.dealer]).name
        row = (rules.all_six_paytable or {}).get(hand)
        table = f"{SUBMISSION} all_six_paytable"
    if row is None:
        return lose(s.seat, w, amount, rule, hand=hand, paytable=table)
    return win(s.seat, w, amount, Odds.parse(row), rule, hand=hand, paytable=table)
