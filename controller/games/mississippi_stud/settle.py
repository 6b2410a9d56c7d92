"""Chapter 655a: a recorded round and its settlement, for the live engine and for `tablectl settle`.

Order (655a.11(h)-(i)): beginning with the player farthest to the dealer's right, counterclockwise
(descending seat number), each seat's Ante and Street Wagers, then its Progressive Payout Wager and Envy
Bonuses, Three Card Bonus, Five Card Hand Bonus (with Magic Card and Lucky Bonus) and Six Card Bonus.
Progressive awards take the meter as it stands at that player's turn (655a.12(c)(4)), so two hits of one
level in a round are paid in order; the meter drops by exactly what was paid and a 100 % award resets it
to the reseed.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.core.money import Cents, Odds
from controller.core.paytable import MeterShare
from controller.core.rankings import Five, FiveCardHand, best_five
from controller.core.settlement import Settled, lose, reseeded, win, win_fixed
from controller.core.settlement import (
    fail as _fail,
)
from controller.games.boxes import player_key
from controller.games.mississippi_stud import hands
from controller.games.mississippi_stud.paytables import (
    ANTE_AND_STREETS,
    ENVY_BONUS,
    FIVE_CARD_HAND_BONUS,
    FIVE_CARD_HAND_BONUS_RESEED,
    LUCKY_BONUS,
    MAGIC_CARD,
    PROGRESSIVE,
    PROGRESSIVE_SEED_FOR_1,
    THREE_CARD_BONUS,
)
from controller.games.mississippi_stud.record import MAIN, OPTIONAL, MississippiStudRound, MississippiStudSeat, validate
from controller.games.mississippi_stud.rules import STREETS, MississippiStudRules


def _holders(r: MississippiStudRound) -> list[tuple[MississippiStudSeat, Five]]:
    """Envy Bonus Qualifying Hands (655a.1) still on the table: a folded hand stays only when its player
    has an optional wager to settle (655a.11(b), (d), (f)); otherwise it went to the discard rack."""
    out: list[tuple[MississippiStudSeat, Five]] = []
    for s in r.seats:
        if s.folded_on and not any(s.wagers.get(w) for w in OPTIONAL):
            continue
        cls = best_five([*s.cards, *r.community]).cls
        if cls in (Five.ROYAL_FLUSH, Five.STRAIGHT_FLUSH):
            out.append((s, cls))
    return out


class _Meters:
    def __init__(
        self,
        start: dict[str, Cents],
        reseed: dict[str, Cents],
        carry: dict[str, int],
        at_turn: dict[str, Cents],
        after_turn: dict[str, Cents],
    ) -> None:
        self.values = dict(start)
        self.reseed = reseed
        self.carry = dict(carry)
        # A linked meter moves between the display the table last heard and each winner's turn (the round's own
        # contributions, the other tables'): the link's figure at the turn is the one the award is taken from, and
        # its figure after the award (its reseed from its own reserve) the one the meter is left at.
        self.at_turn = at_turn
        self.after_turn = after_turn

    def take(self, share: MeterShare, seat: int) -> tuple[Cents, str]:
        if share.level not in self.values:
            raise _fail(
                f"meters.{share.level}", f"seat {seat} hit {share}: give the meter's value when settlement began"
            )
        linked = self.at_turn.get(f"{seat}:{share.level}")
        before = self.values[share.level] if linked is None else linked
        paid = share.award(before)
        if share.percent == 100:
            after, self.carry[share.level] = reseeded(self.reseed[share.level], self.carry.get(share.level, 0))
            self.values[share.level] = after
        else:
            self.values[share.level] = before - paid
        self.values[share.level] = self.after_turn.get(f"{seat}:{share.level}", self.values[share.level])
        where = "" if linked is None else " at the link"
        return paid, f"{share.level} meter {before}{where} -> {self.values[share.level]}"


def _award(
    seat: int, wager: str, amount: Cents, award: Odds | MeterShare, meters: _Meters, rule: str, hand: str, paytable: str
) -> Settled:
    if isinstance(award, Odds):
        return win(seat, wager, amount, award, rule, hand=hand, paytable=paytable)
    paid, note = meters.take(award, seat)
    # Like "for 1" odds the award is the whole sum the player receives, the wager included.
    return Settled(
        seat,
        wager,
        amount,
        "win",
        paid - amount,
        amount,
        0,
        rule,
        hand=hand,
        odds=str(award),
        paytable=paytable,
        note=note,
    )


def settle(rules: MississippiStudRules, r: MississippiStudRound) -> tuple[list[Settled], dict[str, Cents]]:
    """Every wager of the round in the chapter's order, and the progressive meters afterwards."""
    validate(rules, r)
    reseed: dict[str, Cents] = {"five_card_hand_bonus": FIVE_CARD_HAND_BONUS_RESEED}
    if rules.progressive_paytable:
        for level, for_1 in PROGRESSIVE_SEED_FOR_1[rules.progressive_paytable].items():
            reseed[level] = for_1 * rules.progressive_wager_cents
    meters = _Meters(r.meters, reseed, r.meter_carry_micro, r.meters_at_turn or {}, r.meters_after_turn or {})
    limit = hands.payout_limit(rules.ante_min_cents)
    holders = _holders(r)
    out: list[Settled] = []
    for s in sorted(r.seats, key=lambda x: x.seat, reverse=True):
        out.extend(_main(s, r.community, limit))
        out.extend(_optional(rules, r, s, meters, holders))
    return out, meters.values


def settle_round(rules: MississippiStudRules, r: MississippiStudRound) -> list[Settled]:
    return settle(rules, r)[0]


def _main(s: MississippiStudSeat, community: Sequence[str], limit: Cents) -> list[Settled]:
    placed = {w: s.wagers[w] for w in MAIN if s.wagers.get(w)}
    if s.folded_on:
        rule = next(x.decide_rule for x in STREETS if x.spot == s.folded_on)
        return [
            lose(s.seat, w, a, rule, note=f"collected when the player folded on {s.folded_on}")
            for w, a in placed.items()
        ]
    hs = hands.settle_hand(s.cards, community, placed, limit)
    note = "capped by the 655a.12(b) aggregate payout limit" if hs.limited else None
    return [
        Settled(
            s.seat,
            x.wager,
            x.amount,
            x.outcome,
            x.paid,
            x.returned,
            x.collected,
            hs.rule,
            hand=hs.hand,
            odds=x.odds,
            paytable=ANTE_AND_STREETS.citation,
            note=note,
        )
        for x in hs.results
    ]


def _optional(
    rules: MississippiStudRules,
    r: MississippiStudRound,
    s: MississippiStudSeat,
    meters: _Meters,
    holders: list[tuple[MississippiStudSeat, Five]],
) -> list[Settled]:
    """655a.11(i): the seat's optional wagers, in the order (1)-(4) settles them."""
    out: list[Settled] = []
    five = best_five([*s.cards, *r.community])
    if (amount := s.wagers.get("progressive")) and rules.progressive_paytable:
        out += _progressive(rules.progressive_paytable, s, amount, five, meters, holders)
    if (amount := s.wagers.get("three_card_bonus")) and rules.three_card_bonus_paytable:
        b = hands.settle_three_card_bonus(r.community, amount, THREE_CARD_BONUS[rules.three_card_bonus_paytable])
        out.append(_bonus_row(s.seat, b))
    if amount := s.wagers.get("five_card_hand_bonus"):
        out += _five_card_hand_bonus(rules, r, s, amount, five, meters)
    if (amount := s.wagers.get("six_card_bonus")) and rules.six_card_bonus_paytable:
        b = hands.settle_six_card_bonus(s.cards, r.six_card_bonus_cards, amount, rules.six_card_bonus_paytable)
        out.append(_bonus_row(s.seat, b))
    return out


def _progressive(
    letter: str,
    s: MississippiStudSeat,
    amount: Cents,
    five: FiveCardHand,
    meters: _Meters,
    holders: list[tuple[MississippiStudSeat, Five]],
) -> list[Settled]:
    """655a.11(i)(1): the Progressive Payout Wager at its 655a.12(c)(1) paytable, then an Envy Bonus for each
    qualifying hand of another player."""
    table = f"655a.12(c)(1) paytable {letter}"
    award = PROGRESSIVE[letter].get(five.cls)
    out = [
        lose(s.seat, "progressive", amount, "655a.11(i)(1)", hand=five.name, paytable=table)
        if award is None
        else _award(s.seat, "progressive", amount, award, meters, "655a.11(i)(1)(iv)", five.name, table)
    ]
    me = player_key(s.seat, s.player)
    for holder, cls in holders:
        if player_key(holder.seat, holder.player) == me:
            continue  # 655a.11(i)(1)(v): never for the player's own hand
        out.append(
            win_fixed(
                s.seat,
                "envy_bonus",
                0,
                ENVY_BONUS[amount][cls],
                "655a.11(i)(1)(v)",
                hand=cls.name.lower(),
                paytable="655a.12(c)(5)",
                note=f"for seat {holder.seat}'s {cls.name.lower()}",
            )
        )
    return out


def _five_card_hand_bonus(
    rules: MississippiStudRules,
    r: MississippiStudRound,
    s: MississippiStudSeat,
    amount: Cents,
    five: FiveCardHand,
    meters: _Meters,
) -> list[Settled]:
    """655a.11(i)(3): the Five Card Hand Bonus Wager at 655a.12(e)(1), then the Magic Card and Lucky Bonus.

    The bonuses are "an additional payout" (655a.1 "Magic Card Bonus", "Lucky Bonus") that the dealer settles only
    after "(i) Verify that the hand is a winning hand" (655a.11(i)(3)(i)): they are paid on a winning Five Card Hand
    Bonus hand (flush or better, 655a.12(e)(1)) and not at all on a losing one, whose wager is collected alone. Paid on
    the draw alone they would return about three times what the wager takes (docs/par.md)."""
    table = "655a.12(e)(1)"
    award = FIVE_CARD_HAND_BONUS.get(five.cls)
    hits = [
        (
            "magic_card_bonus",
            MAGIC_CARD,
            rules.magic_card_bonus and r.magic_card in (*s.cards, *r.community),
            f"magic card {r.magic_card}",
        ),
        ("lucky_bonus", LUCKY_BONUS, rules.lucky_bonus and r.lucky_seat == s.seat, f"lucky seat {s.seat}"),
    ]
    if award is None:
        missed = [what for _, _, hit, what in hits if hit]
        note = (
            f"{' and '.join(missed)} drawn, not paid: an additional payout on a winning hand only "
            "(655a.1, 655a.11(i)(3)(i))"
            if missed
            else None
        )
        return [
            lose(s.seat, "five_card_hand_bonus", amount, "655a.11(i)(3)", hand=five.name, paytable=table, note=note)
        ]
    out = [_award(s.seat, "five_card_hand_bonus", amount, award, meters, "655a.11(i)(3)(iii)", five.name, table)]
    # Paid besides the winning hand's own award; their rows stake nothing and pay the whole "N for 1".
    for wager, odds, hit, what in hits:
        if hit:
            out.append(
                win_fixed(
                    s.seat,
                    wager,
                    0,
                    odds.winnings(amount) + amount,
                    "655a.11(i)(3)(iii)",
                    odds=str(odds),
                    paytable="655a.12(e)(3)",
                    note=f"{what}, with a winning hand (655a.1, 655a.11(i)(3)(i))",
                )
            )
    return out


def _bonus_row(seat: int, b: hands.BonusSettlement) -> Settled:
    x = b.result
    return Settled(
        seat,
        x.wager,
        x.amount,
        x.outcome,
        x.paid,
        x.returned,
        x.collected,
        b.rule,
        hand=b.hand,
        odds=x.odds,
        paytable=b.paytable,
    )
