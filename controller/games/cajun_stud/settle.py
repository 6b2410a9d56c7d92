"""Chapter 683a: the settlement of a recorded round, the same the round engine uses live.

Settlement order and how a capped payout is apportioned are described in docs/settle/683a.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import IntEnum

from controller.core.money import Cents, Odds
from controller.core.settlement import Settled, SettlementError, lose, push, win
from controller.games.boxes import check_boxes, player_key
from controller.games.cajun_stud.paytables import ChapterPaytable
from controller.games.cajun_stud.rankings import (
    AllSix,
    LoBall,
    rank_all_six,
    rank_ante,
    rank_board,
    rank_lo_ball,
    rank_pocket,
)
from controller.games.cajun_stud.record import CajunStudRound, CajunStudSeat
from controller.games.cajun_stud.rules import DECISION_RULES, OPTIONAL_WAGERS, RAISES, WAGER_RULES, CajunStudRules
from controller.games.limits import check_offered_limits


def _by_row(
    seat: int,
    wager: str,
    amount: Cents,
    hand: IntEnum,
    hand_name: str,
    pt: ChapterPaytable,
    win_rule: str,
    lose_rule: str,
) -> Settled:
    """A wager settled by its row of a 683a.12 table; a hand on no row loses."""
    row = pt.row(hand)
    if isinstance(row, Odds):
        return win(seat, wager, amount, row, win_rule, hand=hand_name, paytable=pt.citation)
    if row == "push":
        return push(seat, wager, amount, win_rule, hand=hand_name, odds="Push", paytable=pt.citation)
    odds = "Loss" if row == "lose" else None
    return lose(seat, wager, amount, lose_rule, hand=hand_name, odds=odds, paytable=pt.citation)


def settle_ante_and_raises(rules: CajunStudRules, seat: CajunStudSeat, community: Sequence[str]) -> list[Settled]:
    """683a.11(h): the Ante and Raise Wagers of a seat that made all three Raise Wagers, before the
    683a.12(f) limit (settle_round applies it)."""
    hand = rank_ante(seat.cards, community)
    pt = rules.paytable("ante")
    return [
        _by_row(seat.seat, w, seat.placed(w), hand, hand.name.lower(), pt, "683a.11(h)(1)", "683a.11(h)(2)")
        for w in ("ante", *RAISES)
        if seat.placed(w)
    ]


def settle_optional(rules: CajunStudRules, seat: CajunStudSeat, record: CajunStudRound, wager: str) -> Settled:
    """683a.11(i)(1)-(4): one optional wager, whether or not the player folded (683a.11(b), (d), (f))."""
    amount, pt, n = seat.placed(wager), rules.paytable(wager), seat.seat
    if wager == "pocket_bonus":
        pocket = rank_pocket(seat.cards)
        return _by_row(n, wager, amount, pocket, pocket.name.lower(), pt, "683a.11(i)(1)(ii)", "683a.11(i)(1)(i)")
    if wager == "board_bonus":
        board = rank_board(record.community_cards)
        return _by_row(n, wager, amount, board, board.name.lower(), pt, "683a.11(i)(2)(ii)", "683a.11(i)(2)(i)")
    if wager == "lo_ball":
        lo = rank_lo_ball(seat.cards, record.community_cards)
        name = (
            rank_ante(seat.cards, record.community_cards).name.lower()
            if lo is LoBall.FORMS_POKER_HAND
            else lo.name.lower()
        )
        return _by_row(n, wager, amount, lo, name, pt, "683a.11(i)(3)(ii)", "683a.11(i)(3)(i)")
    six = rank_all_six(seat.cards, record.all_six_bonus_cards)
    if six > AllSix.ROYAL_FLUSH and pt.row(six) is None:
        six = AllSix.ROYAL_FLUSH  # A-D list no six-card row; the hand holds a royal flush (683a.6(e)(2))
    return _by_row(n, wager, amount, six, six.name.lower(), pt, "683a.11(i)(4)(ii)", "683a.11(i)(4)(i)")


def _check_against_rules(rules: CajunStudRules, record: CajunStudRound) -> None:
    check_offered_limits(rules.optional_offers(), ((f"seats[{i}]", s.wagers) for i, s in enumerate(record.seats)))
    for i, s in enumerate(record.seats):
        if s.seat > rules.seats:
            raise SettlementError(
                f"seats[{i}].seat = {s.seat}: the table has {rules.seats} betting positions "
                "(seats in the config): correct the seat number or the config"
            )
        for w in OPTIONAL_WAGERS:
            if s.placed(w) and w not in rules.optional_wagers:
                raise SettlementError(
                    f"seats[{i}].wagers.{w}: the Rules Submission does not offer this wager "
                    f'({WAGER_RULES[w]}): remove it, or add "{w}" to optional_wagers with its '
                    f"{w}_paytable"
                )
    check_boxes(((s.seat, s.player) for s in record.seats), rules.adjacent_boxes, "683a.7(e)", "adjacent_boxes")


def settle_round(rules: CajunStudRules, record: CajunStudRound) -> list[Settled]:
    """Every wager of the round, once, in the order the dealer settles them.

    1. Forfeits at the three decisions (683a.11(b), (d), (f)), each decision clockwise from the dealer's
       left (ascending seat): the Ante and the earlier Raise Wagers of a player who folds there.
    2. Then counterclockwise from the dealer's right (descending seat, 683a.11(h)) one player at a time:
       the Ante and Raise Wagers (683a.11(h)), then the optional wagers in the order of 683a.11(i),
       including those of players who folded (683a.11(b), (d), (f) keep them in play).
    The 683a.12(f) limit caps the aggregate winnings of the Ante and Raise Wagers of one player (seat
    `player`, else the box) and nothing else; the wagers settled first are paid first and the cut falls
    on the later ones, each cut result noting what its odds would have paid.
    A round whose community card was exposed early (683a.13(d)) has every hand void: every Ante and Raise Wager is
    returned, folds included, and only the optional wagers are settled, in the same order.
    """
    _check_against_rules(rules, record)
    if record.community_exposed:
        return _settle_exposed(rules, record)
    results: list[Settled] = []
    for k, decision_rule in enumerate(DECISION_RULES, start=1):
        for s in sorted(record.seats, key=lambda s: s.seat):
            if s.folded_at == k:
                results += [
                    lose(s.seat, w, s.placed(w), decision_rule, note=f"folded at decision {k}")
                    for w in ("ante", *RAISES[: k - 1])
                ]
    left: dict[str, Cents] = {}
    for s in sorted(record.seats, key=lambda s: s.seat, reverse=True):
        if s.folded_at is None:
            results += [_limited(rules, r, s, left) for r in settle_ante_and_raises(rules, s, record.community_cards)]
        results += [settle_optional(rules, s, record, w) for w in OPTIONAL_WAGERS if s.placed(w)]
    return results


def _limited(rules: CajunStudRules, r: Settled, s: CajunStudSeat, left: dict[str, Cents]) -> Settled:
    """683a.12(f): what is left of the player's aggregate payout limit this round pays this wager."""
    if rules.payout_limit_cents is None or not r.paid:
        return r
    key = player_key(s.seat, s.player)
    room = left.setdefault(key, rules.payout_limit_cents)
    if r.paid > room:
        r = replace(
            r,
            paid=room,
            note=f"683a.12(f) payout limit of {rules.payout_limit_cents} per player per round: paid {room} of {r.paid}",
        )
    left[key] = room - r.paid
    return r


def _settle_exposed(rules: CajunStudRules, record: CajunStudRound) -> list[Settled]:
    out: list[Settled] = []
    for s in sorted(record.seats, key=lambda s: s.seat, reverse=True):
        out += [
            push(s.seat, w, s.placed(w), "683a.13(d)", note="hands void: a community card was exposed early")
            for w in ("ante", *RAISES)
            if s.placed(w)
        ]
        out += [settle_optional(rules, s, record, w) for w in OPTIONAL_WAGERS if s.placed(w)]
    return out


def settle(rules: CajunStudRules, record: CajunStudRound) -> tuple[list[Settled], dict[str, Cents]]:
    """settle_round and the meters afterwards: no 683a wager moves a progressive meter, so they are as recorded."""
    return settle_round(rules, record), dict(record.meters)
