"""Chapter 683a, Cajun Stud: the Rules Submission choices, the round record and its settlement, as data
and pure functions.

The hand classes live in controller.games.cajun_stud_rankings, the 683a.12 paytables in
controller.games.cajun_stud_paytables. Settlement order and how a capped payout
is apportioned are described in docs/settle/683a.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import IntEnum
from typing import Literal

from pydantic import Field, field_validator, model_validator

from controller.core.money import Cents, Odds
from controller.core.settlement import (
    Card,
    ChapterRules,
    RoundRecord,
    SeatRecord,
    Settled,
    SettlementError,
    check_round_cards,
    lose,
    parse_cards_field,
    push,
    win,
)
from controller.games.cajun_stud_paytables import (
    ANTE_AND_RAISE,
    PAYTABLES,
    ChapterPaytable,
)
from controller.games.cajun_stud_rankings import (
    ALL_SIX_CARDS,
    BOARD_CARDS,
    POCKET_CARDS,
    AllSix,
    AnteHand,
    LoBall,
    rank_all_six,
    rank_ante,
    rank_board,
    rank_lo_ball,
    rank_pocket,
)

CHAPTER = "683a"
NAME = "Cajun Stud"
MAX_SEATS = 6  # 683a.2(a)
RAISE_MULTIPLES = (1, 2, 3)  # 683a.1 Raise Wager; 683a.11(b), (d), (f)
MIN_PAYOUT_LIMIT: Cents = 5_000_000  # 683a.12(f): not less than $50,000

OptionalWager = Literal["pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus"]
OPTIONAL_WAGERS: tuple[OptionalWager, ...] = ("pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus")
RAISES = ("raise_1", "raise_2", "raise_3")
# Settlement order of one seat's wagers: 683a.11(h), then the optional wagers in the order of 683a.11(i).
WAGERS: tuple[str, ...] = ("ante", *RAISES, *OPTIONAL_WAGERS)
WAGER_RULES: dict[str, str] = {
    "ante": "683a.7(d)(1)",
    "raise_1": "683a.11(b)",
    "raise_2": "683a.11(d)",
    "raise_3": "683a.11(f)",
    "pocket_bonus": "683a.7(d)(2)",
    "board_bonus": "683a.7(d)(3)",
    "lo_ball": "683a.7(d)(4)",
    "all_six_bonus": "683a.7(d)(5)",
}
# The decision that asks for raise_k, in order; a fold there forfeits the Ante and the earlier raises.
DECISION_RULES = ("683a.11(b)", "683a.11(d)", "683a.11(f)")
# Wagers whose settlement reads the player's own cards; a seat that folded without them may have none.
READS_PLAYER_CARDS: tuple[OptionalWager, ...] = ("pocket_bonus", "lo_ball", "all_six_bonus")


def payout_limit_floor(ante_min_cents: Cents) -> Cents:
    """683a.12(f): the lowest limit allowed, $50,000 or the most one patron betting the minimum could win.

    "The minimum Ante and Raise Wager" is read as the minimum Ante with every Raise Wager at the most the
    chapter lets a player raise on it (3x, 683a.11(b), (d), (f)), so the floor never lets the limit cut a
    royal flush of a minimum-Ante player, whatever he raised. It counts one box.
    """
    royal = ANTE_AND_RAISE["A"].paytable.rows[AnteHand.ROYAL_FLUSH]  # 500 to 1 in every 683a.12(a) table
    most = royal.winnings(ante_min_cents * (1 + max(RAISE_MULTIPLES) * len(RAISES)))
    return max(MIN_PAYOUT_LIMIT, most)


# -- The Rules Submission (the [game] table of a config) ---------------------------------------------------


class CajunStudRules(ChapterRules):
    """Chapter 683a options from the certificate holder's Rules Submission (601a.2)."""

    chapter: Literal["683a"] = Field(description="the chapter of 58 Pa. Code that defines the game: 683a Cajun Stud")
    seats: int = Field(6, ge=1, le=MAX_SEATS, description="betting positions at the table, at most six (683a.2(a))")
    adjacent_boxes: int = Field(
        1, ge=1, le=MAX_SEATS, description="how many adjacent boxes one player may wager on in a round (683a.7(e))"
    )
    ante_min_cents: int = Field(500, gt=0, description="table minimum Ante Wager in cents; sets the 683a.12(f) floor")
    ante_max_cents: int = Field(10_000, gt=0, description="table maximum Ante Wager in cents")
    ante_paytable: Literal["A", "B", "C"] = Field(
        description="683a.12(a) paytable letter for the Ante and Raise Wagers"
    )
    optional_wagers: tuple[OptionalWager, ...] = Field(
        (),
        description="optional wagers offered (683a.7(d)(2)-(5)): any of pocket_bonus, board_bonus, lo_ball, "
        "all_six_bonus; each needs its <wager>_paytable",
    )
    pocket_bonus_paytable: Literal["A", "B", "C"] | None = Field(
        None, description="683a.12(b) paytable letter of the Pocket Bonus Wager, when offered"
    )
    board_bonus_paytable: Literal["A", "B", "C", "D"] | None = Field(
        None, description="683a.12(c) paytable letter of the Board Bonus Wager, when offered"
    )
    lo_ball_paytable: Literal["A", "B"] | None = Field(
        None,
        description="683a.12(d) paytable letter of the Lo Ball Wager, when offered (A: jack high or lower "
        "wins, queen high loses; B: queen high pushes)",
    )
    all_six_bonus_paytable: Literal["A", "B", "C", "D", "E"] | None = Field(
        None, description="683a.12(e) paytable letter of the All-Six Bonus Wager, when offered"
    )
    payout_limit_cents: int | None = Field(
        None,
        gt=0,
        description="683a.12(f) aggregate payout limit per player per round on the Ante and Raise Wagers, in "
        "cents; at least $50,000 and at least payout_limit_floor(ante_min_cents); leave out for none",
    )

    @field_validator("optional_wagers")
    @classmethod
    def _distinct(cls, v: tuple[OptionalWager, ...]) -> tuple[OptionalWager, ...]:
        dup = sorted({w for w in v if v.count(w) > 1})
        if dup:
            raise ValueError(f"optional_wagers lists {', '.join(dup)} more than once: list each wager once")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> CajunStudRules:
        for wager in OPTIONAL_WAGERS:
            letter = getattr(self, f"{wager}_paytable")
            if wager in self.optional_wagers and letter is None:
                raise ValueError(
                    f"optional_wagers offers {wager} but {wager}_paytable is not set: add "
                    f'{wager}_paytable = "<letter>" from {PAYTABLES[wager]["A"].paytable.rule}'
                )
            if wager not in self.optional_wagers and letter is not None:
                raise ValueError(
                    f'{wager}_paytable = "{letter}" but optional_wagers does not offer {wager}: add '
                    f'"{wager}" to optional_wagers, or remove {wager}_paytable'
                )
        if self.ante_min_cents > self.ante_max_cents:
            raise ValueError(
                f"ante_min_cents ({self.ante_min_cents}) is above ante_max_cents ({self.ante_max_cents}): swap them"
            )
        if self.adjacent_boxes > self.seats:
            raise ValueError(f"adjacent_boxes ({self.adjacent_boxes}) exceeds seats ({self.seats}): lower it")
        floor = payout_limit_floor(self.ante_min_cents)
        if self.payout_limit_cents is not None and self.payout_limit_cents < floor:
            raise ValueError(
                f"payout_limit_cents = {self.payout_limit_cents} is below the 683a.12(f) floor of "
                f"{floor} for ante_min_cents = {self.ante_min_cents}: raise it to at least {floor} "
                "or leave it out"
            )
        return self

    def paytable(self, wager: str) -> ChapterPaytable:
        """The table this Rules Submission selected for a wager ("ante" covers the Raise Wagers too)."""
        key = "ante" if wager in RAISES else wager
        letter = self.ante_paytable if key == "ante" else getattr(self, f"{key}_paytable")
        return PAYTABLES[key][letter]


# -- The round record (the input of `tablectl settle`) -----------------------------------------------------

Decision = Literal["raise", "fold"]


class CajunStudSeat(SeatRecord):
    """One box: the player's two cards (683a.8(c)), the wagers by name (see WAGERS), and what the player
    did at each of the three raise decisions (683a.11(b), (d), (f))."""

    seat: int = Field(ge=1, le=MAX_SEATS, description="betting position, 1 farthest to the dealer's left")
    cards: list[Card] = Field(
        default_factory=list,
        description="the player's two cards (683a.8(c)); may be [] only for a seat that folded without a Pocket "
        "Bonus, Lo Ball or All-Six Bonus Wager, whose cards 683a.11(b) collects unread",
    )
    wagers: dict[str, Cents] = Field(
        default_factory=dict,
        description="cents by wager: ante, raise_1, raise_2, raise_3, pocket_bonus, board_bonus, lo_ball, "
        "all_six_bonus; a wager not placed is left out (0 counts as not placed)",
    )
    decisions: list[Decision] = Field(
        description="the player's answer at each raise decision in order, 'raise' or 'fold', ending at a fold "
        "(683a.11(b), (d), (f)); ['raise', 'raise', 'raise'] for a player who stayed in"
    )

    _cards = field_validator("cards", mode="before")(parse_cards_field)

    def placed(self, wager: str) -> Cents:
        return self.wagers.get(wager, 0)

    @property
    def folded_at(self) -> int | None:
        """1, 2 or 3: the decision at which the player folded; None if he made all three Raise Wagers."""
        return self.decisions.index("fold") + 1 if "fold" in self.decisions else None

    @model_validator(mode="after")
    def _consistent(self) -> CajunStudSeat:
        where = f"seat {self.seat}"
        unknown = sorted(set(self.wagers) - set(WAGERS))
        if unknown:
            raise ValueError(f"{where}: wagers has unknown wager(s) {', '.join(unknown)}: use {', '.join(WAGERS)}")
        ante = self.placed("ante")
        if ante <= 0:
            raise ValueError(
                f"{where}: wagers.ante is missing: 683a.7(d)(1) requires an Ante Wager to play "
                "(683a.8(c) deals cards only to players who placed one); add wagers.ante"
            )
        d = self.decisions
        if (
            not 1 <= len(d) <= len(RAISES)
            or ("fold" in d and d.index("fold") != len(d) - 1)
            or ("fold" not in d and len(d) != len(RAISES))
        ):
            raise ValueError(
                f"{where}: decisions {d} is not a round of play: give 'raise' or 'fold' for each of "
                "the three decisions of 683a.11(b), (d), (f), stopping at the first 'fold'"
            )
        for k, name in enumerate(RAISES):
            made = k < len(d) and d[k] == "raise"
            amount = self.placed(name)
            allowed = ", ".join(str(m * ante) for m in RAISE_MULTIPLES)
            if made and amount not in [m * ante for m in RAISE_MULTIPLES]:
                raise ValueError(
                    f"{where}: wagers.{name} = {amount} but {DECISION_RULES[k]} allows a Raise Wager "
                    f"of one, two or three times the Ante ({allowed}): correct wagers.{name}"
                )
            if not made and amount:
                raise ValueError(
                    f"{where}: wagers.{name} = {amount} but decisions does not raise at decision {k + 1}"
                    f" ({DECISION_RULES[k]}): remove wagers.{name} or correct decisions"
                )
        needs_cards = self.folded_at is None or any(self.placed(w) for w in READS_PLAYER_CARDS)
        if len(self.cards) != POCKET_CARDS and (needs_cards or self.cards):
            raise ValueError(
                f"{where}: cards has {len(self.cards)} card(s); 683a.8(c) deals {POCKET_CARDS} to each "
                "player: give both"
            )
        return self


class CajunStudRound(RoundRecord):
    """A recorded round of Cajun Stud: enough to settle every wager again for a dispute."""

    chapter: Literal["683a"] = Field(description="683a: this record is a Cajun Stud round")
    seats: list[CajunStudSeat] = Field(description="every box that placed an Ante Wager, any order")
    community_cards: list[Card] = Field(description="the three community cards (683a.8(d)), in dealing order")
    all_six_bonus_cards: list[Card] = Field(
        default_factory=list,
        description="the four All-Six Bonus cards (683a.8(c)); dealt, and required, only when a seat placed an "
        "All-Six Bonus Wager",
    )

    _community = field_validator("community_cards", "all_six_bonus_cards", mode="before")(parse_cards_field)

    @model_validator(mode="after")
    def _consistent(self) -> CajunStudRound:
        numbers = [s.seat for s in self.seats]
        dup = sorted({n for n in numbers if numbers.count(n) > 1})
        if dup:
            raise ValueError(f"seats lists seat(s) {dup} more than once: give each box once")
        if len(self.community_cards) != BOARD_CARDS:
            raise ValueError(
                f"community_cards has {len(self.community_cards)} card(s); 683a.8(d) deals "
                f"{BOARD_CARDS}: give all three"
            )
        any_all_six = any(s.placed("all_six_bonus") for s in self.seats)
        if any_all_six and len(self.all_six_bonus_cards) != ALL_SIX_CARDS:
            raise ValueError(
                f"all_six_bonus_cards has {len(self.all_six_bonus_cards)} card(s); with an All-Six "
                f"Bonus Wager placed 683a.8(c) deals {ALL_SIX_CARDS}: give all four"
            )
        if not any_all_six and self.all_six_bonus_cards:
            raise ValueError(
                "all_six_bonus_cards are given but no seat placed an All-Six Bonus Wager, and 683a.8(c) "
                "deals them only then: remove all_six_bonus_cards or add the wager"
            )
        check_round_cards([*(s.cards for s in self.seats), self.community_cards, self.all_six_bonus_cards])
        return self


# -- Settlement --------------------------------------------------------------------------------------------


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
    boxes: dict[str, list[int]] = {}
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
        if s.player is not None:
            boxes.setdefault(s.player, []).append(s.seat)
    for player, seats in boxes.items():
        seats.sort()
        if len(seats) > rules.adjacent_boxes or seats != list(range(seats[0], seats[0] + len(seats))):
            raise SettlementError(
                f"player {player!r} wagers on boxes {seats}, but 683a.7(e) allows at most "
                f"{rules.adjacent_boxes} adjacent box(es) (adjacent_boxes): correct seats[].player"
            )


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
    """
    _check_against_rules(rules, record)
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
            for r in settle_ante_and_raises(rules, s, record.community_cards):
                if rules.payout_limit_cents is not None and r.paid:
                    key = s.player if s.player is not None else f"seat {s.seat}"
                    room = left.setdefault(key, rules.payout_limit_cents)
                    if r.paid > room:
                        r = replace(
                            r,
                            paid=room,
                            note=f"683a.12(f) payout limit of {rules.payout_limit_cents} per "
                            f"player per round: paid {room} of {r.paid}",
                        )
                    left[key] = room - r.paid
                results.append(r)
        results += [settle_optional(rules, s, record, w) for w in OPTIONAL_WAGERS if s.placed(w)]
    return results
