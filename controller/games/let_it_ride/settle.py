"""Chapter 643a, Let It Ride Poker: settlement of a recorded round, as pure functions (the same the round engine
uses live).

Settlement follows 643a.11(f): boxes counterclockwise from the dealer's right (descending seat number),
and for each box first the Let It Ride Wagers (643a.11(f)(3)), then (i) Five Card Bonus, (ii) Three Card
Bonus, (iii) Three-Card Progressive and its envy bonuses, (iv) Five-Card Progressive and its envy
bonuses, (v) Five Card Hand Bonus with the Magic Card and Lucky Bonus. Meter awards are taken from the
meter as it stands at that box's turn (643a.12(d)(4), (e)(4)), so the meters are threaded through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from controller.core.invariant import present
from controller.core.money import Cents, fmt
from controller.core.rankings import Five, FiveCardHand, Three, best_five, rank_three
from controller.core.settlement import Settled, lose, push, win, win_fixed, withdrawn
from controller.games.let_it_ride.paytables import (
    FIVE_CARD_BONUS,
    LET_IT_RIDE,
    THREE_CARD_BONUS,
    Amount,
    Award,
    AwardTable,
)
from controller.games.let_it_ride.progressive_wagers import (
    Meters,
    five_card_envy,
    five_card_hand_bonus,
    five_card_hand_name,
    five_card_progressive,
    three_card_envy,
    three_card_progressive,
)
from controller.games.let_it_ride.record import LetItRideRound, LetItRideSeat, check_round
from controller.games.let_it_ride.rules import LetItRideRules


@dataclass(frozen=True, slots=True)
class LetItRideSettlement:
    """A Let It Ride round settled (643a.11(f)): every wager and award in order, and the meters it leaves."""

    settled: tuple[Settled, ...]
    meters: dict[str, Cents]  # the meters after settlement, by level: before minus every meter award


def settle_round(rules: LetItRideRules, record: LetItRideRound) -> list[Settled]:
    """Every wager and award of the round, in the order 643a.11(f) settles them."""
    return list(settle(rules, record).settled)


def settle_record(rules: LetItRideRules, record: LetItRideRound) -> tuple[list[Settled], dict[str, Cents]]:
    """The rows and the meters after settlement, as every chapter's settlement gives them."""
    result = settle(rules, record)
    return list(result.settled), dict(result.meters)


def settle(rules: LetItRideRules, record: LetItRideRound) -> LetItRideSettlement:
    """settle_round plus the meters after settlement, so a caller can check each drop."""
    check_round(rules, record)
    meters = Meters(record.meters, record.meter_carry_micro, record.meters_at_turn, record.meters_after_turn)
    # 643a.1 "Hand": the player's three cards and the two community cards, ranked by 643a.6(a) (the ace low only in
    # A-2-3-4-5) and 643a.6(b) (controller.core.rankings).
    hands = {s.seat: best_five([*s.cards, *record.community]) for s in record.seats}
    order = sorted(record.seats, key=lambda s: s.seat, reverse=True)
    out: list[Settled] = []
    for s in order:
        hand = hands[s.seat]
        out += _let_it_ride(rules, s, hand)
        # 643a.7(j): each optional wager below is settled on its own cards, whatever became of the bets above.
        if "five_card_bonus" in s.wagers:
            out.append(_five_card_bonus(rules, s, hand))
        if "three_card_bonus" in s.wagers:
            out.append(_three_card_bonus(rules, s))
        if "three_card_progressive" in s.wagers:
            out.append(three_card_progressive(rules, s, meters))
            out += three_card_envy(s, order)
        if "five_card_progressive" in s.wagers:
            out.append(five_card_progressive(rules, s, hand, meters))
            out += five_card_envy(s, order, hands)
        if "five_card_hand_bonus" in s.wagers:
            out += five_card_hand_bonus(rules, record, s, hand, meters)
    return LetItRideSettlement(tuple(out), dict(meters))


def _pays_pair(hand: FiveCardHand) -> bool:
    return hand.cls is not Five.PAIR or (hand.pair_rank or 0) >= 10


def apportion(total: Cents, shares: Sequence[Cents]) -> list[Cents]:
    """Split `total` in proportion to `shares`, exactly: floor each part, then hand the leftover cents one
    each to the largest remainders, earliest first. Used to cap a hand's Let It Ride payout (643a.12(g))."""
    whole = sum(shares)
    parts = [total * s // whole for s in shares]
    rest = total - sum(parts)
    by_remainder = sorted(range(len(shares)), key=lambda i: (-(total * shares[i] % whole), i))
    for i in by_remainder[:rest]:
        parts[i] += 1
    return parts


def _let_it_ride(rules: LetItRideRules, s: LetItRideSeat, hand: FiveCardHand) -> list[Settled]:
    """643a.11(f)(3) at the 643a.12(a) paytable; withdrawn bets per 643a.11(b)(2) and (d)(2); Bet Number 3
    always rides (643a.7(d) lets only Bet 1 and 2 be removed)."""
    paytable = LET_IT_RIDE[rules.let_it_ride_paytable]
    name = five_card_hand_name(hand)
    rows: list[Settled] = []
    riding: list[int] = []
    for w, gone, rule in (
        ("bet_1", s.bet_1_withdrawn, "643a.11(b)(2)"),
        ("bet_2", s.bet_2_withdrawn, "643a.11(d)(2)"),
        ("bet_3", False, "643a.11(f)(3)"),
    ):
        amount = s.wagers[w]
        if gone:
            rows.append(withdrawn(s.seat, w, amount, rule, note="withdrawn; not Let It Ride"))
            continue
        odds = paytable.odds_for(hand.cls) if _pays_pair(hand) else None
        if odds is None:
            rows.append(lose(s.seat, w, amount, "643a.11(f)(3)", hand=name, paytable=paytable.citation))
        else:
            rows.append(win(s.seat, w, amount, odds, "643a.11(f)(3)", hand=name, paytable=paytable.citation))
            riding.append(len(rows) - 1)
    limit = rules.payout_limit_cents
    total = sum(rows[i].paid for i in riding)
    if limit is not None and total > limit:
        # 643a.12(g) caps what the hand's Let It Ride Wagers pay together; the cap is shared among the winning
        # bets in proportion to what each would have won (equal bets: equal shares, odd cents to Bet 1 first).
        parts = apportion(limit, [rows[i].paid for i in riding])
        note = f"643a.12(g) payout limit {fmt(limit)} per hand: {fmt(total)} capped"
        for i, part in zip(riding, parts, strict=True):
            rows[i] = dataclasses.replace(rows[i], paid=part, note=note)
    return rows


def _fixed_or_lose(
    seat: int, wager: str, amount: Cents, award: Award | None, rule: str, hand: str, table: AwardTable
) -> Settled:
    if not isinstance(award, Amount) or award.cents == 0:
        # A "$0" cell is a hand outside the wager's range (643a.7(e), 643a.11(f)(3)(i)), so it loses.
        return lose(seat, wager, amount, rule, hand=hand, paytable=table.citation)
    # 643a.12(b) prints the sum the player receives for the wager, the wager included ("for 1", DESIGN.md): paytable
    # A's "$2" on a pair of tens is $1 won and the wager returned, paytable B's "$1" hands the wager back. Read as
    # "to 1" the same table would return 118.99 % (docs/par.md); the published figure for such a table (Wizard of
    # Odds, the $5,000/$2,000/.../$4 side bet at 27.70 %) is the "for 1" reading. the rules refuse a wager above a
    # paying cell, so the award never falls short of the wager.
    odds = f"{award} for {fmt(amount)}"
    if award.cents == amount:
        return push(seat, wager, amount, rule, hand=hand, paytable=table.citation, odds=odds)
    return win_fixed(seat, wager, amount, award.cents - amount, rule, hand=hand, paytable=table.citation, odds=odds)


def _five_card_bonus(rules: LetItRideRules, s: LetItRideSeat, hand: FiveCardHand) -> Settled:
    """643a.11(f)(3)(i) at the fixed amounts of 643a.12(b), each the whole sum paid for the wager."""
    # check_round refused the wager without its paytable
    table = FIVE_CARD_BONUS[present(rules.five_card_bonus_paytable, "the 643a.12(b) paytable of an accepted wager")]
    award = table.award_for(hand.cls) if _pays_pair(hand) else None
    return _fixed_or_lose(
        s.seat,
        "five_card_bonus",
        s.wagers["five_card_bonus"],
        award,
        "643a.11(f)(3)(i)",
        five_card_hand_name(hand),
        table,
    )


def _three_card_bonus(rules: LetItRideRules, s: LetItRideSeat) -> Settled:
    """643a.11(f)(3)(ii): the player's three cards, 643a.6(c) ranks, 643a.12(c) odds."""
    paytable = THREE_CARD_BONUS[
        present(rules.three_card_bonus_paytable, "the 643a.12(c) paytable of an accepted wager")
    ]
    three = rank_three(s.cards)
    odds = paytable.odds_for(three)
    if odds is None and three is Three.MINI_ROYAL:
        odds = paytable.odds_for(Three.STRAIGHT_FLUSH)  # A-C: a mini-royal is a straight flush (643a.6(c)(1))
    amount = s.wagers["three_card_bonus"]
    rule = "643a.11(f)(3)(ii)"
    if odds is None:
        return lose(s.seat, "three_card_bonus", amount, rule, hand=three.name.lower(), paytable=paytable.citation)
    return win(s.seat, "three_card_bonus", amount, odds, rule, hand=three.name.lower(), paytable=paytable.citation)
