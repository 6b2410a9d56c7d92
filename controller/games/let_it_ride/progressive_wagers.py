"""Chapter 643a, Let It Ride Poker: settlement of the wagers that pay from a meter (643a.11(f)(3)(iii)-(v)): the
Three-Card and Five-Card Progressive Payout Wagers with their envy bonuses, and the Five Card Hand Bonus with the
Magic Card and Lucky Bonus. A meter award is taken from the meter as it stands at the box's turn (643a.12(d)(4),
(e)(4), (f)(4)), so settle.py threads one Meters through the boxes in the order 643a.11(f) settles them."""

from __future__ import annotations

from collections.abc import Sequence

from controller.core.invariant import InvariantBroken, present
from controller.core.money import Cents, Odds, fmt
from controller.core.rankings import Five, FiveCardHand, Three, rank_three
from controller.core.settlement import Settled, SettlementError, lose, reseeded, win, win_fixed
from controller.games.boxes import player_key
from controller.games.let_it_ride.paytables import (
    FIVE_CARD_ENVY,
    FIVE_CARD_HAND_BONUS,
    FIVE_CARD_PROGRESSIVE,
    HAND_BONUS_EXTRAS,
    THREE_CARD_ENVY,
    THREE_CARD_PROGRESSIVE,
    Amount,
    Award,
    AwardTable,
    HandBonusExtra,
    MeterShare,
    ThreeCardProgressiveHand,
)
from controller.games.let_it_ride.record import LetItRideRound, LetItRideSeat
from controller.games.let_it_ride.rules import LetItRideRules


class Meters(dict[str, Cents]):
    """The meters as settlement moves them, with what each level carries into a reseed (the reserve and the fraction
    of a cent, controller.core.settlement.reseeded)."""

    def __init__(
        self,
        start: dict[str, Cents],
        carry: dict[str, int],
        at_turn: dict[str, Cents] | None = None,
        after_turn: dict[str, Cents] | None = None,
    ) -> None:
        super().__init__(start)
        self.carry = dict(carry)
        # A linked meter at each winner's turn as the link held it ("<seat>:<level>", RoundRecord.meters_at_turn),
        # and after the award as the link booked it (meters_after_turn).
        self.at_turn = dict(at_turn or {})
        self.after_turn = dict(after_turn or {})


def five_card_hand_name(hand: FiveCardHand) -> str:
    """The 643a.12 row a five-card hand reads as; a pair of tens or better is a row of its own."""
    if hand.cls is Five.PAIR and (hand.pair_rank or 0) >= 10:
        return "pair_of_tens_or_better"
    return hand.name


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
    meters: Meters,
) -> Settled:
    """A progressive wager: odds "N for 1", or a share of the meter at this box's turn. The share is the whole
    of what the player receives (the wager was collected at lock-out, 643a.8(b)(2)), booked like "N for 1":
    paid is the share less the wager, the wager counts as returned. The meter drops by the share, and a
    100% award resets it to the reset amount (643a.12(d)(3), (e)(3), (f)(4))."""
    if award is None:
        return lose(seat, wager, amount, rule, hand=hand, paytable=table.citation)
    if isinstance(award, Odds):
        return win(seat, wager, amount, award, rule, hand=hand, paytable=table.citation)
    if not isinstance(award, MeterShare):  # the paytables in paytables.py hold no fixed sums
        raise InvariantBroken(
            f"{table.citation}: a progressive paytable pays odds or a share of the meter, not {award}"
        )
    level = wager
    linked = meters.at_turn.get(f"{seat}:{level}")
    before = meters[level] if linked is None else linked
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
    # The link reseeds from its own reserve: its figure, when it gave one, not this estimate.
    after = meters.after_turn.get(f"{seat}:{level}", after)
    meters[level] = after
    where = "" if linked is None else " at the link"
    note = f"{award} at this turn: {fmt(share)} of meter {fmt(before)}{where}; meter now {fmt(after)}"
    return win_fixed(
        seat, wager, amount, share - amount, rule, hand=hand, paytable=table.citation, odds=str(award), note=note
    )


def three_card_progressive(rules: LetItRideRules, s: LetItRideSeat, meters: Meters) -> Settled:
    """643a.11(f)(3)(iii)(D) at 643a.12(d)(1); only the highest hand pays (643a.12(d)(2))."""
    letter = present(rules.three_card_progressive_paytable, "the 643a.12(d)(1) paytable of an accepted wager")
    table = THREE_CARD_PROGRESSIVE[letter]
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


def five_card_progressive(rules: LetItRideRules, s: LetItRideSeat, hand: FiveCardHand, meters: Meters) -> Settled:
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
        if not isinstance(award, Amount):  # an envy schedule pays fixed sums only
            raise InvariantBroken(f"{rule}: an envy bonus schedule pays a fixed sum, not {award}")
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


def three_card_envy(s: LetItRideSeat, order: list[LetItRideSeat]) -> list[Settled]:
    """643a.12(d)(5): a mini-royal (643a.1 Three-Card Envy Bonus Qualifying Hand) of another player."""
    qualifying: list[tuple[LetItRideSeat, ThreeCardProgressiveHand | Five]] = []
    for other in order:
        key = three_card_progressive_hand(other.cards)
        if key in (ThreeCardProgressiveHand.MINI_ROYAL, ThreeCardProgressiveHand.MINI_ROYAL_SPADES):
            qualifying.append((other, key))
    return _envy(s, "three_card_progressive", THREE_CARD_ENVY, "643a.11(f)(3)(iii)(E)", qualifying)


def five_card_envy(s: LetItRideSeat, order: list[LetItRideSeat], hands: dict[int, FiveCardHand]) -> list[Settled]:
    """643a.12(e)(5): a straight flush or better (643a.1 Five-Card Envy Bonus Qualifying Hand) of another player."""
    qualifying: list[tuple[LetItRideSeat, ThreeCardProgressiveHand | Five]] = [
        (other, hands[other.seat].cls) for other in order if hands[other.seat].cls >= Five.STRAIGHT_FLUSH
    ]
    return _envy(s, "five_card_progressive", FIVE_CARD_ENVY, "643a.11(f)(3)(iv)(E)", qualifying)


_EXTRA_WAGER = {HandBonusExtra.MAGIC_CARD: "magic_card_bonus", HandBonusExtra.LUCKY_BONUS: "lucky_bonus"}


def five_card_hand_bonus(
    rules: LetItRideRules, record: LetItRideRound, s: LetItRideSeat, hand: FiveCardHand, meters: Meters
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
    extras = _extras(rules, record, s)
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
    return rows + [_extra_paid(s.seat, extra, amount, rule, note) for extra, hit, note in extras if hit]


def _extras(
    rules: LetItRideRules, record: LetItRideRound, s: LetItRideSeat
) -> tuple[tuple[HandBonusExtra, bool, str], ...]:
    """The Magic Card and Lucky Bonus (643a.12(f)(3)): whether each is offered and drawn for this box, and why."""
    return (
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


def _extra_paid(seat: int, extra: HandBonusExtra, amount: Cents, rule: str, note: str) -> Settled:
    """An extra's row: no stake of its own (amount 0), the whole "N for 1" of the Five Card Hand Bonus Wager."""
    odds = HAND_BONUS_EXTRAS.rows[extra]
    return win_fixed(
        seat,
        _EXTRA_WAGER[extra],
        0,
        odds.winnings(amount) + amount,
        rule,
        paytable=HAND_BONUS_EXTRAS.citation,
        odds=str(odds),
        note=f"{note}, with a winning hand (643a.1, 643a.11(f)(3)(v)(A))",
    )
