"""Chapter 643a, Let It Ride Poker: the certificate holder's Rules-Submission choices, the [game] table of a Let It
Ride config. Every message names the field, the problem and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from controller.core.money import AMOUNT_BOUND, MAX_AMOUNT_CENTS, Cents, fmt, wager_field
from controller.core.rankings import Five
from controller.core.settlement import ChapterRules, SettlementError
from controller.engine.spec import Offer
from controller.games.let_it_ride.paytables import FIVE_CARD_BONUS, LET_IT_RIDE, Amount
from controller.games.limits import WagerLimit, limits_problem, resolve
from controller.games.procedure import DealingChoice

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
# The optional wagers the live table takes through its wager stations, with the subsection that offers each.
OPTIONAL_OFFERS = {
    "five_card_bonus": "643a.7(e)",
    "three_card_bonus": "643a.7(f)",
    "three_card_progressive": "643a.7(g)",
    "five_card_progressive": "643a.7(h)",
    "five_card_hand_bonus": "643a.7(i)",
}
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


def _meter(text: str) -> Any:
    # A progressive meter's initial or reset amount.
    return Field(
        None,
        le=MAX_AMOUNT_CENTS,
        description=text + f"; {AMOUNT_BOUND}",
    )


@dataclass(frozen=True, slots=True)
class MeterFigures:
    """What the Rules Submission says of one progressive's meter (643a.12(d)(3), (e)(3), (f)(4)): whether the wager
    is offered, and its initial and reset amounts and rate of progression as the config gives them (None: not set)."""

    offered: bool
    initial_cents: int | None
    reset_cents: int | None
    rate_percent: float | None


class LetItRideRules(ChapterRules, DealingChoice):
    """Chapter 643a options from the certificate holder's Rules Submission (601a.2), with the table's procedure
    (controller.games.procedure: 643a.8 manual shoe, 643a.9 hand or 643a.10 automated shoe, stub counts, decks)."""

    chapter: Literal["643a"] = Field(description="selects chapter 643a, Let It Ride Poker")
    seats: int = Field(7, ge=1, le=MAX_SEATS, description="betting positions, at most seven (643a.2(a))")
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
    bet_min_cents: int = wager_field(500, "table minimum for each of Bet Number 1, 2 and 3")
    bet_max_cents: int = wager_field(10_000, "table maximum for each of Bet Number 1, 2 and 3")
    wager_limits: dict[str, WagerLimit] = Field(
        default_factory=dict,
        description="the Three Card Bonus Wager's posted minimum and maximum in cents, e.g. three_card_bonus = "
        "{ min_cents = 100, max_cents = 2500 }; a bound left out is the bets' (bet_min_cents, bet_max_cents). "
        "The Five Card Bonus and the Progressive Payout Wagers take the fixed sizes their paytables are for",
    )
    payout_limit_cents: int | None = Field(
        None,
        le=MAX_AMOUNT_CENTS,
        description="643a.12(g): most payable on a single hand's Let It Ride Wagers, in cents; at least "
        f"$50,000 or what the minimum bets can win, whichever is greater; {AMOUNT_BOUND}; leave out for no limit",
    )

    five_card_bonus: bool = Field(False, description="643a.7(e): offer the Five Card Bonus Wager")
    five_card_bonus_paytable: Literal["A", "B", "C", "D", "E", "F", "G"] | None = _d(
        "643a.12(b) paytable letter; required when five_card_bonus is offered"
    )
    five_card_bonus_wager_cents: int = wager_field(
        100, "the one Five Card Bonus Wager accepted (643a.12(b) pays fixed amounts that do not grow with the wager)"
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
    three_card_progressive_initial_cents: int | None = _meter(
        "643a.12(d)(3): initial meter amount in cents, at least $1,000 (100000)"
    )
    three_card_progressive_reset_cents: int | None = _meter(
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
    five_card_progressive_initial_cents: int | None = _meter(
        "643a.12(e)(3): initial meter amount in cents, at least $10,000 (1000000)"
    )
    five_card_progressive_reset_cents: int | None = _meter(
        "643a.12(e)(3): reset (reseed) amount in cents after a 100% award, at least $10,000 (1000000)"
    )
    five_card_progressive_rate_percent: float | None = Field(
        None, gt=0, le=100, description="643a.12(e)(3): rate of progression, percent of each wager to the meter"
    )

    five_card_hand_bonus: bool = Field(
        False, description="643a.7(i): offer the Five Card Hand Bonus Wager (643a.12(f)(1) table)"
    )
    five_card_hand_bonus_initial_cents: int | None = _meter(
        "643a.12(f)(4): initial meter amount in cents, at least $10,000 (1000000)"
    )
    five_card_hand_bonus_reset_cents: int | None = _meter(
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
        self._check_optional_paytables()
        for level in METER_LEVELS:
            self._check_meter(level)
        for wager, sizes in self.progressive_wager_sizes().items():
            if self.offered()[wager] and not sizes:
                raise ValueError(f"{wager}_wagers_cents is empty but {wager} is offered: list 100 and/or 500")
        if (self.magic_card_bonus or self.lucky_bonus) and not self.five_card_hand_bonus:
            raise ValueError(
                "magic_card_bonus and lucky_bonus are paid on the Five Card Hand Bonus Wager "
                "(643a.12(f)(3)): set five_card_hand_bonus = true or turn them off"
            )
        # The other optional wagers are taken at the fixed sizes their paytables are for.
        sized = ["three_card_bonus"] if self.three_card_bonus else []
        problem = limits_problem(self.wager_limits, sized, (self.bet_min_cents, self.bet_max_cents)) or (
            self.deck_change_problem("643a.3(c)", self.dealing_method)
        )
        if problem is not None:
            raise ValueError(problem)
        return self

    def _check_optional_paytables(self) -> None:
        """An optional wager offered has its paytable, one not offered has none, and the Five Card Bonus Wager is no
        larger than 643a.12(b) pays for."""
        for wager, letters in (
            ("five_card_bonus", "A-G, 643a.12(b)"),
            ("three_card_bonus", "A-F, 643a.12(c)"),
            ("three_card_progressive", "A or B, 643a.12(d)(1)"),
        ):
            offered, letter = self.offered()[wager], self.paytable_letters()[wager]
            if offered and letter is None:
                raise ValueError(
                    f"{wager}_paytable is missing but {wager} is offered: set {wager}_paytable "
                    f"({letters}) or set {wager} = false"
                )
            if not offered and letter is not None:
                raise ValueError(
                    f"{wager}_paytable is set but {wager} is not offered: set {wager} = true or remove {wager}_paytable"
                )
        if self.five_card_bonus and self.five_card_bonus_paytable is not None:
            # 643a.12(b)'s amounts are the whole sum paid for the wager ("for 1"): a wager above the least paying
            # cell would make that win pay less than was wagered.
            table = FIVE_CARD_BONUS[self.five_card_bonus_paytable]
            least = min(a.cents for a in table.rows.values() if isinstance(a, Amount) and a.cents > 0)
            if self.five_card_bonus_wager_cents > least:
                raise ValueError(
                    f"five_card_bonus_wager_cents ({self.five_card_bonus_wager_cents}) is above {least} "
                    f"({fmt(least)}), the least 643a.12(b) paytable {self.five_card_bonus_paytable} pays for the "
                    f"wager, wager included: set it to {least} or less (the chapter's amounts are for a $1 wager)"
                )

    def _check_meter(self, level: str) -> None:
        least, rule = MIN_METER[level]
        meter = self.meter(level)
        figures = {
            f"{level}_initial_cents": meter.initial_cents,
            f"{level}_reset_cents": meter.reset_cents,
            f"{level}_rate_percent": meter.rate_percent,
        }
        if not meter.offered:
            for f, value in figures.items():
                if value is not None:
                    raise ValueError(f"{f} is set but {level} is not offered: set {level} = true or remove {f}")
            return
        for f, value in figures.items():
            if value is None:
                raise ValueError(
                    f"{f} is missing: {rule} requires it in the Rules Submission when {level} is offered; set it"
                )
        for f, amount in ((f"{level}_initial_cents", meter.initial_cents), (f"{level}_reset_cents", meter.reset_cents)):
            if amount is not None and amount < least:
                raise ValueError(f"{f} is {amount} but {rule} sets a minimum of {fmt(least)} ({least} cents): raise it")

    def optional_offers(self) -> list[Offer]:
        """The optional wagers the live table takes, each with the subsection that offers it and its limits; the Five
        Card Hand Bonus Wager (643a.7(i)) at the seat's electronic wagering terminal (643a.2(e)), one size."""
        out: list[Offer] = []
        if self.five_card_bonus:
            # 643a.12(b) pays fixed amounts, so the rules accept one wager size only.
            size = self.five_card_bonus_wager_cents
            out.append(Offer("five_card_bonus", OPTIONAL_OFFERS["five_card_bonus"], size, size))
        if self.three_card_bonus:
            limits = resolve(self.wager_limits, "three_card_bonus", (self.bet_min_cents, self.bet_max_cents))
            out.append(Offer("three_card_bonus", OPTIONAL_OFFERS["three_card_bonus"], *limits))
        for spot, sizes in self.progressive_wager_sizes().items():
            if self.offered()[spot] and sizes:
                # 643a.7(g), (h): $1 or $5 as the Rules Submission allows; the engine refuses other sizes.
                out.append(Offer(spot, OPTIONAL_OFFERS[spot], min(sizes), max(sizes)))
        if self.five_card_hand_bonus:
            # 643a.7(i) fixes no amount: $1 up to the table's maximum unless wager_limits says otherwise.
            limits = resolve(self.wager_limits, "five_card_hand_bonus", (100, self.bet_max_cents))
            out.append(Offer("five_card_hand_bonus", OPTIONAL_OFFERS["five_card_hand_bonus"], *limits))
        return out

    def offered(self) -> dict[str, bool]:
        """Each optional wager (OPTIONAL_WAGERS): whether the Rules Submission offers it."""
        return {
            "five_card_bonus": self.five_card_bonus,
            "three_card_bonus": self.three_card_bonus,
            "three_card_progressive": self.three_card_progressive,
            "five_card_progressive": self.five_card_progressive,
            "five_card_hand_bonus": self.five_card_hand_bonus,
        }

    def paytable_letters(self) -> dict[str, str | None]:
        """The lettered optional tables' <wager>_paytable (643a.12(b), (c), (d)(1)); None where none is selected."""
        return {
            "five_card_bonus": self.five_card_bonus_paytable,
            "three_card_bonus": self.three_card_bonus_paytable,
            "three_card_progressive": self.three_card_progressive_paytable,
        }

    def progressive_wager_sizes(self) -> dict[str, tuple[Cents, ...]]:
        """The Progressive Payout Wagers accepted, in cents (643a.7(g), (h))."""
        return {
            "three_card_progressive": self.three_card_progressive_wagers_cents,
            "five_card_progressive": self.five_card_progressive_wagers_cents,
        }

    def meter(self, level: str) -> MeterFigures:
        """A progressive's meter figures by its level (METER_LEVELS)."""
        figures = {
            "three_card_progressive": MeterFigures(
                self.three_card_progressive,
                self.three_card_progressive_initial_cents,
                self.three_card_progressive_reset_cents,
                self.three_card_progressive_rate_percent,
            ),
            "five_card_progressive": MeterFigures(
                self.five_card_progressive,
                self.five_card_progressive_initial_cents,
                self.five_card_progressive_reset_cents,
                self.five_card_progressive_rate_percent,
            ),
            "five_card_hand_bonus": MeterFigures(
                self.five_card_hand_bonus,
                self.five_card_hand_bonus_initial_cents,
                self.five_card_hand_bonus_reset_cents,
                self.five_card_hand_bonus_rate_percent,
            ),
        }
        return figures[level]

    def offers(self, wager: str) -> bool:
        return wager in LET_IT_RIDE_WAGERS or self.offered().get(wager, False)

    def reset_cents(self, level: str) -> Cents:
        value = self.meter(level).reset_cents
        if value is None:
            raise SettlementError(f"{level}_reset_cents is not configured: offer {level} with its reset amount")
        return value
