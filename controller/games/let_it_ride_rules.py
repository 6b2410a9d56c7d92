"""Chapter 643a, Let It Ride Poker: the certificate holder's Rules-Submission choices and the round record.

`LetItRideRules` is the [game] table of a Let It Ride config; `LetItRideRound` is the input of
`tablectl settle`. What can be checked without the rules is checked here (ValidationError); what needs
the rules is checked by `check_round` (SettlementError). Every message names the field, the problem
and the fix.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from controller.core.cards import parse_card
from controller.core.money import Cents, fmt
from controller.core.rankings import Five
from controller.core.settlement import (
    Card,
    ChapterRules,
    RoundRecord,
    SeatRecord,
    SettlementError,
    check_round_cards,
    parse_cards_field,
)
from controller.games.let_it_ride_paytables import LET_IT_RIDE

CHAPTER = "643a"
NAME = "Let It Ride Poker"
MAX_SEATS = 7  # 643a.2(a)
PLAYER_CARDS = 3  # 643a.8(d), 643a.9(b), 643a.10(b)
COMMUNITY_CARDS = 2  # same subsections; 643a.13(c) voids a round dealt otherwise

LET_IT_RIDE_WAGERS = ("bet_1", "bet_2", "bet_3")  # 643a.7(d)
OPTIONAL_WAGERS = (  # in the order 643a.11(f)(3)(i)-(v) settles them
    "five_card_bonus",  # 643a.7(e)
    "three_card_bonus",  # 643a.7(f)
    "three_card_progressive",  # 643a.7(g)
    "five_card_progressive",  # 643a.7(h)
    "five_card_hand_bonus",  # 643a.7(i)
)
WAGERS = LET_IT_RIDE_WAGERS + OPTIONAL_WAGERS
# Each progressive keeps its own meter (643a.12(d)(3), (e)(3), (f)(4)); a meter level is named after it.
METER_LEVELS = ("three_card_progressive", "five_card_progressive", "five_card_hand_bonus")
# 643a.12(d)(3): "may not be less than $1,000"; (e)(3) and (f)(4): "at least $10,000".
MIN_METER: dict[str, tuple[Cents, str]] = {
    "three_card_progressive": (100_000, "643a.12(d)(3)"),
    "five_card_progressive": (1_000_000, "643a.12(e)(3)"),
    "five_card_hand_bonus": (1_000_000, "643a.12(f)(4)"),
}
# 643a.12(d)(5) and (e)(5) give envy schedules for $1 and $5 Progressive Payout Wagers only.
ENVY_WAGER_SIZES = (100, 500)
PAYOUT_LIMIT_FLOOR: Cents = 5_000_000  # 643a.12(g): at least $50,000


def minimum_payout_limit(paytable: str, min_bet: Cents) -> Cents:
    """643a.12(g): $50,000, or the most one hand can win on the Let It Ride Wagers betting the minimum,
    if greater. The limit covers only those wagers, so only they count: three bets at the royal flush."""
    royal = LET_IT_RIDE[paytable].rows[Five.ROYAL_FLUSH]
    return max(PAYOUT_LIMIT_FLOOR, royal.winnings(min_bet) * len(LET_IT_RIDE_WAGERS))


def _d(text: str) -> Any:
    return Field(None, description=text)


class LetItRideRules(ChapterRules):
    """Chapter 643a options from the certificate holder's Rules Submission (601a.2)."""

    chapter: Literal["643a"] = Field(description="selects chapter 643a, Let It Ride Poker")
    seats: int = Field(7, ge=1, le=MAX_SEATS, description="betting positions, at most seven (643a.2(a))")
    dealing_method: Literal["manual_shoe", "hand", "automated_shoe"] = Field(
        "automated_shoe", description="643a.8 manual dealing shoe, 643a.9 by hand, 643a.10 automated dealing shoe"
    )
    five_card_bonus_table_game_system: bool = Field(
        False,
        description="643a.7(e), 643a.8(b)(1): the Five Card Bonus Wager is offered utilizing a table game "
        'system, so after "no more bets" the dealer counts its chips against the accepted '
        "wagers before any card is dealt",
    )
    reshuffling_shoe: bool = Field(
        False,
        description="643a.10(g): an automated shoe that reshuffles, dispensing the two community cards "
        "before the players' cards",
    )
    boxes_per_player: int = Field(
        1, ge=1, le=MAX_SEATS, description="643a.7(k): adjacent boxes on which one player may wager in a round"
    )
    let_it_ride_paytable: Literal["A", "B"] = Field(
        description="643a.12(a) paytable for the Let It Ride Wagers (Bet Number 1, 2 and 3)"
    )
    bet_min_cents: int = Field(500, gt=0, description="table minimum for each of Bet Number 1, 2 and 3, in cents")
    bet_max_cents: int = Field(10_000, gt=0, description="table maximum for each of Bet Number 1, 2 and 3, in cents")
    payout_limit_cents: int | None = Field(
        None,
        description="643a.12(g): most payable on a single hand's Let It Ride Wagers, in cents; at least "
        "$50,000 or what the minimum bets can win, whichever is greater; leave out for no limit",
    )

    five_card_bonus: bool = Field(False, description="643a.7(e): offer the Five Card Bonus Wager")
    five_card_bonus_paytable: Literal["A", "B", "C", "D", "E", "F", "G"] | None = _d(
        "643a.12(b) paytable letter; required when five_card_bonus is offered"
    )
    five_card_bonus_wager_cents: int = Field(
        100,
        gt=0,
        description="the one Five Card Bonus Wager accepted, in cents: 643a.12(b) pays fixed amounts "
        "that do not grow with the wager",
    )

    three_card_bonus: bool = Field(False, description="643a.7(f): offer the Three Card Bonus Wager")
    three_card_bonus_paytable: Literal["A", "B", "C", "D", "E", "F"] | None = _d(
        "643a.12(c) paytable letter; required when three_card_bonus is offered"
    )

    three_card_progressive: bool = Field(False, description="643a.7(g): offer the Three-Card Progressive Payout Wager")
    three_card_progressive_paytable: Literal["A", "B"] | None = _d(
        "643a.12(d)(1) paytable letter; required when three_card_progressive is offered"
    )
    three_card_progressive_wagers_cents: tuple[Literal[100, 500], ...] = Field(
        (100,),
        description="accepted Three-Card Progressive Payout Wagers in cents; 643a.12(d)(5) has envy "
        "schedules for $1 (100) and $5 (500) only",
    )
    three_card_progressive_initial_cents: int | None = _d(
        "643a.12(d)(3): initial meter amount in cents, at least $1,000 (100000)"
    )
    three_card_progressive_reset_cents: int | None = _d(
        "643a.12(d)(3): reset (reseed) amount in cents after a 100% award, at least $1,000 (100000)"
    )
    three_card_progressive_rate_percent: float | None = Field(
        None, gt=0, le=100, description="643a.12(d)(3): rate of progression, percent of each wager to the meter"
    )

    five_card_progressive: bool = Field(
        False, description="643a.7(h): offer the Five-Card Progressive Payout Wager (643a.12(e)(1) table)"
    )
    five_card_progressive_wagers_cents: tuple[Literal[100, 500], ...] = Field(
        (100,),
        description="accepted Five-Card Progressive Payout Wagers in cents; 643a.12(e)(5) has envy "
        "schedules for $1 (100) and $5 (500) only",
    )
    five_card_progressive_initial_cents: int | None = _d(
        "643a.12(e)(3): initial meter amount in cents, at least $10,000 (1000000)"
    )
    five_card_progressive_reset_cents: int | None = _d(
        "643a.12(e)(3): reset (reseed) amount in cents after a 100% award, at least $10,000 (1000000)"
    )
    five_card_progressive_rate_percent: float | None = Field(
        None, gt=0, le=100, description="643a.12(e)(3): rate of progression, percent of each wager to the meter"
    )

    five_card_hand_bonus: bool = Field(
        False, description="643a.7(i): offer the Five Card Hand Bonus Wager (643a.12(f)(1) table)"
    )
    five_card_hand_bonus_initial_cents: int | None = _d(
        "643a.12(f)(4): initial meter amount in cents, at least $10,000 (1000000)"
    )
    five_card_hand_bonus_reset_cents: int | None = _d(
        "643a.12(f)(4): reset (reseed) amount in cents after a 100% award, at least $10,000 (1000000)"
    )
    five_card_hand_bonus_rate_percent: float | None = Field(
        None, gt=0, le=100, description="643a.12(f)(4): rate of progression, percent of each wager to the meter"
    )
    magic_card_bonus: bool = Field(
        False, description="643a.12(f)(3): pay the Magic Card Bonus (20 for 1) on Five Card Hand Bonus Wagers"
    )
    lucky_bonus: bool = Field(
        False, description="643a.12(f)(3): pay the Lucky Bonus (5 for 1) on Five Card Hand Bonus Wagers"
    )

    @model_validator(mode="after")
    def _consistent(self) -> LetItRideRules:
        if self.reshuffling_shoe and self.dealing_method != "automated_shoe":
            raise ValueError(
                "reshuffling_shoe is an automated dealing shoe (643a.10(g)): set "
                'dealing_method = "automated_shoe" or reshuffling_shoe = false'
            )
        if self.bet_min_cents > self.bet_max_cents:
            raise ValueError(
                f"bet_min_cents ({self.bet_min_cents}) is above bet_max_cents ({self.bet_max_cents}): swap them"
            )
        if self.payout_limit_cents is not None:
            floor = minimum_payout_limit(self.let_it_ride_paytable, self.bet_min_cents)
            if self.payout_limit_cents < floor:
                raise ValueError(
                    f"payout_limit_cents ({self.payout_limit_cents}) is below {floor} ({fmt(floor)}), the least "
                    f"643a.12(g) allows with paytable {self.let_it_ride_paytable} and bet_min_cents "
                    f"{self.bet_min_cents}: raise it or leave it out"
                )
        for wager, letters in (
            ("five_card_bonus", "A-G, 643a.12(b)"),
            ("three_card_bonus", "A-F, 643a.12(c)"),
            ("three_card_progressive", "A or B, 643a.12(d)(1)"),
        ):
            offered, letter = getattr(self, wager), getattr(self, f"{wager}_paytable")
            if offered and letter is None:
                raise ValueError(
                    f"{wager}_paytable is missing but {wager} is offered: set {wager}_paytable "
                    f"({letters}) or set {wager} = false"
                )
            if not offered and letter is not None:
                raise ValueError(
                    f"{wager}_paytable is set but {wager} is not offered: set {wager} = true or remove {wager}_paytable"
                )
        for level in METER_LEVELS:
            self._check_meter(level)
        for wager in ("three_card_progressive", "five_card_progressive"):
            if getattr(self, wager) and not getattr(self, f"{wager}_wagers_cents"):
                raise ValueError(f"{wager}_wagers_cents is empty but {wager} is offered: list 100 and/or 500")
        if (self.magic_card_bonus or self.lucky_bonus) and not self.five_card_hand_bonus:
            raise ValueError(
                "magic_card_bonus and lucky_bonus are paid on the Five Card Hand Bonus Wager "
                "(643a.12(f)(3)): set five_card_hand_bonus = true or turn them off"
            )
        return self

    def _check_meter(self, level: str) -> None:
        least, rule = MIN_METER[level]
        fields = (f"{level}_initial_cents", f"{level}_reset_cents", f"{level}_rate_percent")
        if not getattr(self, level):
            for f in fields:
                if getattr(self, f) is not None:
                    raise ValueError(f"{f} is set but {level} is not offered: set {level} = true or remove {f}")
            return
        for f in fields:
            if getattr(self, f) is None:
                raise ValueError(
                    f"{f} is missing: {rule} requires it in the Rules Submission when {level} is offered; set it"
                )
        for f in fields[:2]:
            if getattr(self, f) < least:
                raise ValueError(
                    f"{f} is {getattr(self, f)} but {rule} sets a minimum of {fmt(least)} ({least} cents): raise it"
                )

    def offers(self, wager: str) -> bool:
        return wager in LET_IT_RIDE_WAGERS or bool(getattr(self, wager))

    def reset_cents(self, level: str) -> Cents:
        value: int | None = getattr(self, f"{level}_reset_cents")
        if value is None:
            raise SettlementError(f"{level}_reset_cents is not configured: offer {level} with its reset amount")
        return value


class LetItRideSeat(SeatRecord):
    """One box: the player's three cards, its wagers, and the two Let It Ride decisions."""

    seat: int = Field(ge=1, le=MAX_SEATS, description="the betting position, 1 to 7 (643a.2(a))")
    player: str | None = Field(
        None, description="who holds the box; boxes with one name are one player's (643a.7(k)), no name: own player"
    )
    cards: list[Card] = Field(default_factory=list, description="the three cards dealt to the box (643a.8(d))")
    wagers: dict[str, Cents] = Field(
        default_factory=dict,
        description=f"cents by wager, keys among {', '.join(WAGERS)}; bet_1, bet_2 and "
        "bet_3 are required and equal (643a.7(d))",
    )
    bet_1_withdrawn: bool = Field(False, description="643a.11(b)(2): the player withdrew Bet Number 1")
    bet_2_withdrawn: bool = Field(False, description="643a.11(d)(2): the player withdrew Bet Number 2")

    @field_validator("cards")
    @classmethod
    def _three(cls, v: list[Card]) -> list[Card]:
        if len(v) != PLAYER_CARDS:
            raise ValueError(
                f"{len(v)} card(s) where 643a.8(d) deals each player {PLAYER_CARDS}: record the "
                "box's three cards (a misdeal voids the round under 643a.13(c) and is not settled)"
            )
        return v

    @field_validator("wagers")
    @classmethod
    def _bets(cls, v: dict[str, Cents]) -> dict[str, Cents]:
        unknown = sorted(set(v) - set(WAGERS))
        if unknown:
            raise ValueError(f"unknown wager(s) {unknown}: use {', '.join(WAGERS)}")
        missing = [w for w in LET_IT_RIDE_WAGERS if w not in v]
        if missing:
            raise ValueError(f"missing {missing}: 643a.7(d) requires Bet Number 1, 2 and 3 to play a round")
        bets = {v[w] for w in LET_IT_RIDE_WAGERS}
        if len(bets) != 1:
            raise ValueError(
                f"bet_1, bet_2 and bet_3 are {[v[w] for w in LET_IT_RIDE_WAGERS]}: 643a.7(d) "
                "requires three equal wagers; record the amounts placed"
            )
        zero = [w for w, a in v.items() if a == 0]
        if zero:
            raise ValueError(f"{zero} are 0: leave out a wager that was not placed")
        return v


class LetItRideRound(RoundRecord):
    """A recorded round of chapter 643a: boxes, community cards, meters and the table system's draws."""

    chapter: Literal["643a"] = Field(description="selects chapter 643a, Let It Ride Poker")
    round_id: str | None = Field(None, description="the journal's id of the round, if known")
    seats: list[LetItRideSeat] = Field(min_length=1, description="every box that played, any order")
    community: list[Card] = Field(description="the two community cards, first then second (643a.11(c), (e))")
    burned_card: Card | None = Field(
        None,
        description="643a.10(b): the community card an automated dealing shoe's stack discards unseen; "
        "record it when the shoe reports it, so the one-deck check covers it",
    )
    magic_card: Card | None = Field(
        None, description="643a.1 Magic Card Bonus: the card the table game system drew (controller.core.rng)"
    )
    lucky_seat: int | None = Field(
        None, ge=1, le=MAX_SEATS, description="643a.1 Lucky Bonus: the betting position the table game system drew"
    )

    _parse_community = field_validator("community", mode="before")(parse_cards_field)

    @field_validator("burned_card", "magic_card", mode="before")
    @classmethod
    def _card(cls, v: Any) -> Any:
        return parse_card(v) if isinstance(v, str) else v

    @field_validator("community")
    @classmethod
    def _two(cls, v: list[Card]) -> list[Card]:
        if len(v) != COMMUNITY_CARDS:
            raise ValueError(
                f"{len(v)} card(s) where 643a.8(d) deals {COMMUNITY_CARDS} community cards: record "
                "both (a misdeal voids the round under 643a.13(c) and is not settled)"
            )
        return v

    @field_validator("meters")
    @classmethod
    def _levels(cls, v: dict[str, Cents]) -> dict[str, Cents]:
        unknown = sorted(set(v) - set(METER_LEVELS))
        if unknown:
            raise ValueError(f"unknown meter level(s) {unknown}: use {', '.join(METER_LEVELS)}")
        bad = {k: a for k, a in v.items() if a < 0}
        if bad:
            raise ValueError(f"meter values are cents and cannot be negative: {bad}")
        return v

    @model_validator(mode="after")
    def _one_deck(self) -> LetItRideRound:
        numbers = [s.seat for s in self.seats]
        dup = sorted({n for n in numbers if numbers.count(n) > 1})
        if dup:
            raise ValueError(f"seats: seat number(s) {dup} appear more than once: record each box once")
        # The Magic Card is drawn by the table game system, not from the deck: it is left out on purpose.
        extra = [self.burned_card] if self.burned_card else []
        check_round_cards([*(s.cards for s in self.seats), self.community, extra])
        return self


def player_of(seat: SeatRecord) -> tuple[str, str]:
    """643a.7(k): who holds a box; a box without a recorded player is a player of its own."""
    return ("player", seat.player) if seat.player else ("seat", str(seat.seat))


def check_round(rules: LetItRideRules, record: LetItRideRound) -> None:
    """What the record must satisfy under these rules before it can be settled."""
    for i, s in enumerate(record.seats):
        where = f"seats[{i}] (seat {s.seat})"
        if s.seat > rules.seats:
            raise SettlementError(f"{where}.seat: the table has {rules.seats} betting positions: fix the seat number")
        for w in s.wagers:
            if not rules.offers(w):
                raise SettlementError(
                    f"{where}.wagers.{w}: the rules do not offer this wager; remove it or set {w} = true in the config"
                )
        bet = s.wagers["bet_1"]
        if not rules.bet_min_cents <= bet <= rules.bet_max_cents:
            raise SettlementError(
                f"{where}.wagers.bet_1..bet_3 ({bet}) are outside the table limits "
                f"{rules.bet_min_cents}..{rules.bet_max_cents}: record the amounts accepted"
            )
        fcb = s.wagers.get("five_card_bonus")
        if fcb is not None and fcb != rules.five_card_bonus_wager_cents:
            raise SettlementError(
                f"{where}.wagers.five_card_bonus ({fcb}) is not the accepted Five Card Bonus "
                f"Wager ({rules.five_card_bonus_wager_cents}): 643a.12(b) pays fixed amounts"
            )
        for w in ("three_card_progressive", "five_card_progressive"):
            a = s.wagers.get(w)
            allowed = getattr(rules, f"{w}_wagers_cents")
            if a is not None and a not in allowed:
                raise SettlementError(
                    f"{where}.wagers.{w} ({a}) is not an accepted amount {list(allowed)}: "
                    f"record the amount accepted or add it to {w}_wagers_cents"
                )
    boxes: dict[tuple[str, str], list[int]] = {}
    for s in record.seats:
        boxes.setdefault(player_of(s), []).append(s.seat)
    for (_, who), seats in boxes.items():
        seats.sort()
        if len(seats) > rules.boxes_per_player or seats != list(range(seats[0], seats[0] + len(seats))):
            raise SettlementError(
                f"seats: player {who!r} holds boxes {seats}, but 643a.7(k) allows at most "
                f"{rules.boxes_per_player} adjacent box(es): correct the seats' player names"
            )
    for level in METER_LEVELS:
        if any(level in s.wagers for s in record.seats) and level not in record.meters:
            raise SettlementError(
                f"meters.{level} is missing: a {level} wager was placed and is paid at the "
                "meter amount at the player's turn; record the meter when settlement began"
            )
    hand_bonus = any("five_card_hand_bonus" in s.wagers for s in record.seats)
    for draw, offered in (("magic_card", rules.magic_card_bonus), ("lucky_seat", rules.lucky_bonus)):
        value = getattr(record, draw)
        if value is None and offered and hand_bonus:
            raise SettlementError(
                f"{draw} is missing: the rules pay the {draw.replace('_', ' ')} bonus on Five "
                "Card Hand Bonus Wagers; record the table game system's draw"
            )
        if value is not None and not offered:
            raise SettlementError(
                f"{draw} is recorded but the rules do not pay that bonus (643a.12(f)(3)): "
                "remove it or turn the bonus on in the config"
            )
    if record.lucky_seat is not None and record.lucky_seat > rules.seats:
        raise SettlementError(f"lucky_seat ({record.lucky_seat}) is not one of the {rules.seats} betting positions")
    if record.burned_card is not None and rules.dealing_method != "automated_shoe":
        raise SettlementError(
            f"burned_card: only an automated dealing shoe discards a community card "
            f"(643a.10(b)); the rules deal by {rules.dealing_method}: remove it"
        )
