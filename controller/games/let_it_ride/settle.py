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

from controller.core.money import Cents, Odds, fmt
from controller.core.rankings import Five, FiveCardHand, Three, best_five, rank_three
from controller.core.settlement import Settled, SettlementError, lose, push, reseeded, win, win_fixed, withdrawn
from controller.games.boxes import player_key
from controller.games.let_it_ride.paytables import (
    FIVE_CARD_BONUS,
    FIVE_CARD_ENVY,
    FIVE_CARD_HAND_BONUS,
    FIVE_CARD_PROGRESSIVE,
    HAND_BONUS_EXTRAS,
    LET_IT_RIDE,
    THREE_CARD_BONUS,
    THREE_CARD_ENVY,
    THREE_CARD_PROGRESSIVE,
    Amount,
    Award,
    AwardTable,
    HandBonusExtra,
    MeterShare,
    ThreeCardProgressiveHand,
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


class _Meters(dict[str, Cents]):
    """The meters as settlement moves them, with what each level carries into a reseed (the reserve and the fraction
    of a cent, controller.core.settlement.reseeded)."""

    def __init__(self, start: dict[str, Cents], carry: dict[str, int]) -> None:
        super().__init__(start)
        self.carry = dict(carry)


def settle(rules: LetItRideRules, record: LetItRideRound) -> LetItRideSettlement:
    """settle_round plus the meters after settlement, so a caller can check each drop."""
    check_round(rules, record)
    meters = _Meters(record.meters, record.meter_carry_micro)
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
            out.append(_three_card_progressive(rules, s, meters))
            out += _three_card_envy(s, order)
        if "five_card_progressive" in s.wagers:
            out.append(_five_card_progressive(rules, s, hand, meters))
            out += _five_card_envy(s, order, hands)
        if "five_card_hand_bonus" in s.wagers:
            out += _five_card_hand_bonus(rules, record, s, hand, meters)
    return LetItRideSettlement(tuple(out), dict(meters))


def five_card_hand_name(hand: FiveCardHand) -> str:
    """The 643a.12 row a five-card hand reads as; a pair of tens or better is a row of its own."""
    if hand.cls is Five.PAIR and (hand.pair_rank or 0) >= 10:
        return "pair_of_tens_or_better"
    return hand.name


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
    assert rules.five_card_bonus_paytable is not None  # check_round refused the wager otherwise
    table = FIVE_CARD_BONUS[rules.five_card_bonus_paytable]
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
    assert rules.three_card_bonus_paytable is not None
    paytable = THREE_CARD_BONUS[rules.three_card_bonus_paytable]
    three = rank_three(s.cards)
    odds = paytable.odds_for(three)
    if odds is None and three is Three.MINI_ROYAL:
        odds = paytable.odds_for(Three.STRAIGHT_FLUSH)  # A-C: a mini-royal is a straight flush (643a.6(c)(1))
    amount = s.wagers["three_card_bonus"]
    rule = "643a.11(f)(3)(ii)"
    if odds is None:
        return lose(s.seat, "three_card_bonus", amount, rule, hand=three.name.lower(), paytable=paytable.citation)
    return win(s.seat, "three_card_bonus", amount, odds, rule, hand=three.name.lower(), paytable=paytable.citation)


def three_card_progressive_hand(cards: Sequence[str]) -> ThreeCardProgressiveHand | None:
    """643a.6(d) hand of the player's three cards, with a mini-royal in spades told apart; None if none."""
    three = rank_three(cards)
    if three is Three.MINI_ROYAL:
        spades = all(c[1] == "s" for c in cards)
        return ThreeCardProgressiveHand.MINI_ROYAL_SPADES if spades else ThreeCardProgressiveHand.MINI_ROYAL
    return {
        Three.STRAIGHT_FLUSH: ThreeCardProgressiveHand.STRAIGHT_FLUSH,
        Three.THREE_OF_A_KIND: ThreeCardProgressiveHand.THREE_OF_A_KIND,
        Three.STRAIGHT: ThreeCardProgressiveHand.STRAIGHT,
    }.get(three)


def _progressive(
    rules: LetItRideRules,
    seat: int,
    wager: str,
    amount: Cents,
    award: Award | None,
    hand: str,
    table: AwardTable,
    rule: str,
    meters: _Meters,
) -> Settled:
    """A progressive wager: odds "N for 1", or a share of the meter at this box's turn. The share is the whole
    of what the player receives (the wager was collected at lock-out, 643a.8(b)(2)), booked like "N for 1":
    paid is the share less the wager, the wager counts as returned. The meter drops by the share, and a
    100% award resets it to the reset amount (643a.12(d)(3), (e)(3), (f)(4))."""
    if award is None:
        return lose(seat, wager, amount, rule, hand=hand, paytable=table.citation)
    if isinstance(award, Odds):
        return win(seat, wager, amount, award, rule, hand=hand, paytable=table.citation)
    assert isinstance(award, MeterShare)  # no fixed sums in a progressive table
    level = wager
    before = meters[level]
    share = award.of(before)
    if share < amount:
        raise SettlementError(
            f"meters.{level} ({before}) pays {award} = {share}, less than the {amount} wagered at "
            f"seat {seat}: the meter cannot be this low; record the meter shown at settlement"
        )
    if award.percent == 100:
        after, meters.carry[level] = reseeded(rules.reset_cents(level), meters.carry.get(level, 0))
    else:
        after = before - share
    meters[level] = after
    note = f"{award} at this turn: {fmt(share)} of meter {fmt(before)}; meter now {fmt(after)}"
    return win_fixed(
        seat, wager, amount, share - amount, rule, hand=hand, paytable=table.citation, odds=str(award), note=note
    )


def _three_card_progressive(rules: LetItRideRules, s: LetItRideSeat, meters: _Meters) -> Settled:
    """643a.11(f)(3)(iii)(D) at 643a.12(d)(1); only the highest hand pays (643a.12(d)(2))."""
    assert rules.three_card_progressive_paytable is not None
    table = THREE_CARD_PROGRESSIVE[rules.three_card_progressive_paytable]
    hand = three_card_progressive_hand(s.cards)
    award = table.award_for(hand) if hand is not None else None
    name = hand.name.lower() if hand is not None else rank_three(s.cards).name.lower()
    return _progressive(
        rules,
        s.seat,
        "three_card_progressive",
        s.wagers["three_card_progressive"],
        award,
        name,
        table,
        "643a.11(f)(3)(iii)(D)",
        meters,
    )


def _five_card_progressive(rules: LetItRideRules, s: LetItRideSeat, hand: FiveCardHand, meters: _Meters) -> Settled:
    """643a.11(f)(3)(iv)(D) at 643a.12(e)(1), three-of-a-kind or better (643a.1); highest only (643a.12(e)(2))."""
    return _progressive(
        rules,
        s.seat,
        "five_card_progressive",
        s.wagers["five_card_progressive"],
        FIVE_CARD_PROGRESSIVE.award_for(hand.cls),
        five_card_hand_name(hand),
        FIVE_CARD_PROGRESSIVE,
        "643a.11(f)(3)(iv)(D)",
        meters,
    )


def _envy(
    s: LetItRideSeat,
    wager: str,
    schedules: dict[Cents, AwardTable],
    rule: str,
    qualifying: list[tuple[LetItRideSeat, ThreeCardProgressiveHand | Five]],
) -> list[Settled]:
    """One envy bonus per qualifying hand held by another player; never for the player's own hand, nor for
    the same player's other boxes (643a.11(f)(3)(iii)(E), (iv)(E); players per 643a.7(k)). Envy has no stake
    of its own, so its row's amount is 0; the schedule follows the receiver's Progressive Payout Wager."""
    table = schedules[s.wagers[wager]]
    me = player_key(s.seat, s.player)
    rows: list[Settled] = []
    for other, key in qualifying:
        if player_key(other.seat, other.player) == me:
            continue
        award = table.award_for(key)
        assert isinstance(award, Amount)
        rows.append(
            win_fixed(
                s.seat,
                f"{wager.removesuffix('_progressive')}_envy_bonus",
                0,
                award.cents,
                rule,
                hand=key.name.lower(),
                paytable=table.citation,
                odds=str(award),
                note=f"envy of seat {other.seat}",
            )
        )
    return rows


def _three_card_envy(s: LetItRideSeat, order: list[LetItRideSeat]) -> list[Settled]:
    """643a.12(d)(5): a mini-royal (643a.1 Three-Card Envy Bonus Qualifying Hand) of another player."""
    qualifying: list[tuple[LetItRideSeat, ThreeCardProgressiveHand | Five]] = []
    for other in order:
        key = three_card_progressive_hand(other.cards)
        if key in (ThreeCardProgressiveHand.MINI_ROYAL, ThreeCardProgressiveHand.MINI_ROYAL_SPADES):
            assert key is not None
            qualifying.append((other, key))
    return _envy(s, "three_card_progressive", THREE_CARD_ENVY, "643a.11(f)(3)(iii)(E)", qualifying)


def _five_card_envy(s: LetItRideSeat, order: list[LetItRideSeat], hands: dict[int, FiveCardHand]) -> list[Settled]:
    """643a.12(e)(5): a straight flush or better (643a.1 Five-Card Envy Bonus Qualifying Hand) of another player."""
    qualifying: list[tuple[LetItRideSeat, ThreeCardProgressiveHand | Five]] = [
        (other, hands[other.seat].cls) for other in order if hands[other.seat].cls >= Five.STRAIGHT_FLUSH
    ]
    return _envy(s, "five_card_progressive", FIVE_CARD_ENVY, "643a.11(f)(3)(iv)(E)", qualifying)


_EXTRA_WAGER = {HandBonusExtra.MAGIC_CARD: "magic_card_bonus", HandBonusExtra.LUCKY_BONUS: "lucky_bonus"}


def _five_card_hand_bonus(
    rules: LetItRideRules, record: LetItRideRound, s: LetItRideSeat, hand: FiveCardHand, meters: _Meters
) -> list[Settled]:
    """643a.11(f)(3)(v): the wager at 643a.12(f)(1), flush or better (643a.7(i)), highest only (643a.12(f)(2));
    then the Magic Card and Lucky Bonus of 643a.12(f)(3) from the recorded draws (643a.1). Those two have no
    stake of their own: their rows have amount 0 and pay the whole "N for 1" of the wager, since the wager is
    settled (returned or collected) on its own row.

    Each is "an additional payout" (643a.1 "Magic Card Bonus", "Lucky Bonus") that the dealer settles after "(A)
    Verify that the hand is a winning hand" (643a.11(f)(3)(v)(A)): paid with a winning hand only; a losing hand's
    wager is collected and no bonus is paid (paid on the draw alone, they would return about three times what the
    wager takes: docs/par.md)."""
    amount = s.wagers["five_card_hand_bonus"]
    rule = "643a.11(f)(3)(v)"
    award = FIVE_CARD_HAND_BONUS.award_for(hand.cls)
    extras = (
        (
            HandBonusExtra.MAGIC_CARD,
            rules.magic_card_bonus and record.magic_card in [*s.cards, *record.community],
            f"Magic Card {record.magic_card} among the player's three cards or the community cards",
        ),
        (
            HandBonusExtra.LUCKY_BONUS,
            rules.lucky_bonus and record.lucky_seat == s.seat,
            f"seat {s.seat} is the Lucky Bonus seat",
        ),
    )
    if award is None:
        missed = [note for _, hit, note in extras if hit]
        return [
            lose(
                s.seat,
                "five_card_hand_bonus",
                amount,
                rule,
                hand=five_card_hand_name(hand),
                paytable=FIVE_CARD_HAND_BONUS.citation,
                note=f"{'; '.join(missed)}: not paid, an additional payout on a winning hand only "
                "(643a.1, 643a.11(f)(3)(v)(A))"
                if missed
                else None,
            )
        ]
    rows = [
        _progressive(
            rules,
            s.seat,
            "five_card_hand_bonus",
            amount,
            award,
            five_card_hand_name(hand),
            FIVE_CARD_HAND_BONUS,
            rule,
            meters,
        )
    ]
    for extra, hit, note in extras:
        if hit:
            odds = HAND_BONUS_EXTRAS.rows[extra]
            rows.append(
                win_fixed(
                    s.seat,
                    _EXTRA_WAGER[extra],
                    0,
                    odds.winnings(amount) + amount,
                    rule,
                    paytable=HAND_BONUS_EXTRAS.citation,
                    odds=str(odds),
                    note=f"{note}, with a winning hand (643a.1, 643a.11(f)(3)(v)(A))",
                )
            )
    return rows
