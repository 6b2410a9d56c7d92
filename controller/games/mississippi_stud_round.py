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
from typing import Literal

from pydantic import Field, field_validator, model_validator

from controller.core.money import Cents, Odds
from controller.core.paytable import MeterShare
from controller.core.rankings import Five, best_five
from controller.core.settlement import (
    Card,
    RoundRecord,
    SeatRecord,
    Settled,
    check_round_cards,
    known_wagers,
    lose,
    parse_card_field,
    parse_cards_field,
    require_distinct_seats,
    win,
    win_fixed,
)
from controller.core.settlement import (
    fail as _fail,
)
from controller.games import mississippi_stud as ms

StreetSpot = Literal["street_3", "street_4", "street_5"]
MAIN = ("ante", "street_3", "street_4", "street_5")
OPTIONAL = ("progressive", "three_card_bonus", "five_card_hand_bonus", "six_card_bonus")


class MississippiStudSeat(SeatRecord):
    """wagers: ante, street_3, street_4, street_5 (as placed), progressive, three_card_bonus,
    five_card_hand_bonus, six_card_bonus. folded_on: the street at which the player folded."""

    folded_on: StreetSpot | None = None

    _known = field_validator("wagers")(known_wagers("655a", MAIN + OPTIONAL))


class MississippiStudRound(RoundRecord):
    chapter: Literal["655a"]
    seats: list[MississippiStudSeat]
    community: list[Card] = Field(description="the three community cards (655a.10(c))")
    six_card_bonus_cards: list[Card] = Field(default_factory=list, description="the four Six Card Bonus cards")
    magic_card: Card | None = Field(None, description="the table game system's Magic Card draw (655a.12(e)(3))")
    lucky_seat: int | None = Field(None, description="the table game system's Lucky Bonus seat (655a.12(e)(3))")

    _cards = field_validator("community", "six_card_bonus_cards", mode="before")(parse_cards_field)
    _card = field_validator("magic_card", mode="before")(parse_card_field)

    @model_validator(mode="after")
    def _shape(self) -> MississippiStudRound:
        require_distinct_seats(s.seat for s in self.seats)
        if len(self.community) != ms.COMMUNITY_CARDS:
            raise ValueError(f"community has {len(self.community)} cards; 655a.10(c) deals three")
        return self


def validate(rules: ms.MississippiStudRules, r: MississippiStudRound) -> None:
    """Refuse a record the chapter could not have produced, naming the field and the fix."""
    offered = {
        "progressive": rules.progressive_paytable,
        "three_card_bonus": rules.three_card_bonus_paytable,
        "five_card_hand_bonus": rules.five_card_hand_bonus,
        "six_card_bonus": rules.six_card_bonus_paytable,
    }
    for s in r.seats:
        at = f"seats[seat={s.seat}]"
        if s.seat > rules.seats:
            raise _fail(at, f"the table has {rules.seats} seats (game.seats)")
        ante = s.wagers.get("ante", 0)
        if not ante:
            raise _fail(f"{at}.wagers.ante", "every player in a round has an Ante Wager (655a.7(d)(1))")
        if len(s.cards) != ms.PLAYER_CARDS:
            raise _fail(f"{at}.cards", f"{len(s.cards)} cards; 655a.10(b) deals each player two")
        for w in OPTIONAL:
            if s.wagers.get(w) and not offered[w]:
                raise _fail(
                    f"{at}.wagers.{w}",
                    "this table does not offer the wager: remove it or offer it in the config's [game]",
                )
        if s.wagers.get("progressive") and s.wagers["progressive"] != rules.progressive_wager_cents:
            raise _fail(
                f"{at}.wagers.progressive",
                f"the Progressive Payout Wager is {rules.progressive_wager_cents} cents at this table",
            )
        if (
            s.wagers.get("five_card_hand_bonus")
            and s.wagers["five_card_hand_bonus"] != rules.five_card_hand_bonus_wager_cents
        ):
            raise _fail(
                f"{at}.wagers.five_card_hand_bonus",
                f"the Five Card Hand Bonus Wager is {rules.five_card_hand_bonus_wager_cents} cents here",
            )
        folded = False
        for street in ms.STREETS:
            amount = s.wagers.get(street.spot)
            if folded or s.folded_on == street.spot:
                folded = True
                if amount:
                    raise _fail(
                        f"{at}.wagers.{street.spot}",
                        f"the player folded on {s.folded_on}, so made no {street.name} Wager",
                    )
                continue
            if amount not in [m * ante for m in ms.STREET_MULTIPLES]:
                raise _fail(
                    f"{at}.wagers.{street.spot}",
                    f"{amount} is not one, two or three times the Ante "
                    f"({ante}) ({street.decide_rule}); a player who did not bet folded: set folded_on",
                )
    if any(s.wagers.get("six_card_bonus") for s in r.seats):
        if len(r.six_card_bonus_cards) != ms.SIX_CARD_BONUS_CARDS:
            raise _fail("six_card_bonus_cards", f"{len(r.six_card_bonus_cards)} cards; 655a.10(c) deals four")
    elif r.six_card_bonus_cards:
        raise _fail("six_card_bonus_cards", "no seat wagered the Six Card Bonus, so none are dealt (655a.10(c))")
    if any(s.wagers.get("five_card_hand_bonus") for s in r.seats):
        if rules.magic_card_bonus and r.magic_card is None:
            raise _fail("magic_card", "the table pays the Magic Card Bonus: give the card the system drew")
        if rules.lucky_bonus and r.lucky_seat is None:
            raise _fail("lucky_seat", "the table pays the Lucky Bonus: give the seat the system drew")
    check_round_cards([r.community, r.six_card_bonus_cards, *(s.cards for s in r.seats)])


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
    def __init__(self, start: dict[str, Cents], reseed: dict[str, Cents]) -> None:
        self.values = dict(start)
        self.reseed = reseed

    def take(self, share: MeterShare, seat: int) -> tuple[Cents, str]:
        if share.level not in self.values:
            raise _fail(
                f"meters.{share.level}", f"seat {seat} hit {share}: give the meter's value when settlement began"
            )
        before = self.values[share.level]
        paid = share.award(before)
        self.values[share.level] = self.reseed[share.level] if share.percent == 100 else before - paid
        return paid, f"{share.level} meter {before} -> {self.values[share.level]}"


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


def settle(rules: ms.MississippiStudRules, r: MississippiStudRound) -> tuple[list[Settled], dict[str, Cents]]:
    """Every wager of the round in the chapter's order, and the progressive meters afterwards."""
    validate(rules, r)
    reseed: dict[str, Cents] = {"five_card_hand_bonus": ms.FIVE_CARD_HAND_BONUS_RESEED}
    if rules.progressive_paytable:
        for level, for_1 in ms.PROGRESSIVE_SEED_FOR_1[rules.progressive_paytable].items():
            reseed[level] = for_1 * rules.progressive_wager_cents
    meters = _Meters(r.meters, reseed)
    limit = ms.payout_limit(rules.ante_min_cents)
    holders = _holders(r)
    out: list[Settled] = []
    for s in sorted(r.seats, key=lambda x: x.seat, reverse=True):
        out.extend(_main(s, r.community, limit))
        out.extend(_optional(rules, r, s, meters, holders))
    return out, meters.values


def settle_round(rules: ms.MississippiStudRules, r: MississippiStudRound) -> list[Settled]:
    return settle(rules, r)[0]


def _main(s: MississippiStudSeat, community: Sequence[str], limit: Cents) -> list[Settled]:
    placed = {w: s.wagers[w] for w in MAIN if s.wagers.get(w)}
    if s.folded_on:
        rule = next(x.decide_rule for x in ms.STREETS if x.spot == s.folded_on)
        return [
            lose(s.seat, w, a, rule, note=f"collected when the player folded on {s.folded_on}")
            for w, a in placed.items()
        ]
    hs = ms.settle_hand(s.cards, community, placed, limit)
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
            paytable=ms.ANTE_AND_STREETS.citation,
            note=note,
        )
        for x in hs.results
    ]


def _optional(
    rules: ms.MississippiStudRules,
    r: MississippiStudRound,
    s: MississippiStudSeat,
    meters: _Meters,
    holders: list[tuple[MississippiStudSeat, Five]],
) -> list[Settled]:
    out: list[Settled] = []
    five = best_five([*s.cards, *r.community])
    if (amount := s.wagers.get("progressive")) and rules.progressive_paytable:
        table = f"655a.12(c)(1) paytable {rules.progressive_paytable}"
        award = ms.PROGRESSIVE[rules.progressive_paytable].get(five.cls)
        if award is None:
            out.append(lose(s.seat, "progressive", amount, "655a.11(i)(1)", hand=five.name, paytable=table))
        else:
            out.append(_award(s.seat, "progressive", amount, award, meters, "655a.11(i)(1)(iv)", five.name, table))
        me = s.player or f"seat {s.seat}"
        for holder, cls in holders:
            if (holder.player or f"seat {holder.seat}") == me:
                continue  # 655a.11(i)(1)(v): never for the player's own hand
            out.append(
                win_fixed(
                    s.seat,
                    "envy_bonus",
                    0,
                    ms.ENVY_BONUS[amount][cls],
                    "655a.11(i)(1)(v)",
                    hand=cls.name.lower(),
                    paytable="655a.12(c)(5)",
                    note=f"for seat {holder.seat}'s {cls.name.lower()}",
                )
            )
    if (amount := s.wagers.get("three_card_bonus")) and rules.three_card_bonus_paytable:
        b = ms.settle_three_card_bonus(r.community, amount, ms.THREE_CARD_BONUS[rules.three_card_bonus_paytable])
        out.append(_bonus_row(s.seat, b))
    if amount := s.wagers.get("five_card_hand_bonus"):
        table = "655a.12(e)(1)"
        award = ms.FIVE_CARD_HAND_BONUS.get(five.cls)
        if award is None:
            out.append(lose(s.seat, "five_card_hand_bonus", amount, "655a.11(i)(3)", hand=five.name, paytable=table))
        else:
            out.append(
                _award(s.seat, "five_card_hand_bonus", amount, award, meters, "655a.11(i)(3)(iii)", five.name, table)
            )
        # The bonuses are paid besides the hand's own result (655a.11(i)(3)); their rows stake nothing.
        if rules.magic_card_bonus and r.magic_card in (*s.cards, *r.community):
            out.append(
                win_fixed(
                    s.seat,
                    "magic_card_bonus",
                    0,
                    ms.MAGIC_CARD.winnings(amount) + amount,
                    "655a.11(i)(3)(iii)",
                    odds=str(ms.MAGIC_CARD),
                    paytable="655a.12(e)(3)",
                    note=f"magic card {r.magic_card}",
                )
            )
        if rules.lucky_bonus and r.lucky_seat == s.seat:
            out.append(
                win_fixed(
                    s.seat,
                    "lucky_bonus",
                    0,
                    ms.LUCKY_BONUS.winnings(amount) + amount,
                    "655a.11(i)(3)(iii)",
                    odds=str(ms.LUCKY_BONUS),
                    paytable="655a.12(e)(3)",
                )
            )
    if (amount := s.wagers.get("six_card_bonus")) and rules.six_card_bonus_paytable:
        b = ms.settle_six_card_bonus(s.cards, r.six_card_bonus_cards, amount, rules.six_card_bonus_paytable)
        out.append(_bonus_row(s.seat, b))
    return out


def _bonus_row(seat: int, b: ms.BonusSettlement) -> Settled:
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
