"""The progressive meters each chapter prescribes: levels, seed and reseed amounts, incrementation rates.

655a fixes its figures in the regulation (655a.12(c)(3) for the Progressive Payout Wager, 655a.12(e)(4) for
the Five Card Hand Bonus), as multiples of the wager offered ("$10,000 for 1"). 643a leaves them to the
certificate holder's Rules Submission (643a.12(d)(3), (e)(3), (f)(4)), so they come from the table config,
with the least initial and reset amounts the chapter allows enforced. Rates are kept as integer parts per
million of the wager (21 % = 210,000 ppm), so a contribution is exactly `wager_cents * ppm` micro-cents and
nothing is ever rounded (docs/progressive.md, "Units").
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PPM = 1_000_000  # parts per million of the wager: the whole wager
PPM_PER_PERCENT = 10_000
LEVEL_PATTERN = r"^[a-z_]{1,32}$"  # what a progressive sign can show (drivers.reference.progressive_sign)


class ParameterError(ValueError):
    """The config asks for meters the chapter does not allow; the message names the field and the fix."""


def percent_to_ppm(value: object, what: str) -> int:
    """An incrementation rate in percent ("21", 4.25, Decimal("0.5")) as exact parts per million of the wager.

    Floats arrive from TOML; str() of a float is its shortest exact decimal, so 4.25 stays 4.25 and not
    4.2499999...; a rate finer than 0.0001 % cannot be carried exactly and is refused rather than rounded.
    """
    if isinstance(value, bool):
        raise ParameterError(f"{what} = {value!r} is not a percentage: give e.g. 21 or 4.25")
    try:
        percent = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise ParameterError(f"{what} = {value!r} is not a percentage: give e.g. 21 or 4.25") from None
    if not percent.is_finite() or not 0 <= percent <= 100:
        raise ParameterError(f"{what} = {value} % is outside 0 to 100 %")
    ppm = percent * PPM_PER_PERCENT
    if ppm != ppm.to_integral_value():
        raise ParameterError(
            f"{what} = {value} % is finer than 0.0001 %, which a meter cannot carry exactly: "
            "round it in the Rules Submission"
        )
    return int(ppm)


def ppm_to_percent(ppm: int) -> str:
    """210000 -> '21', 42500 -> '4.25': for messages and events."""
    text = format(Decimal(ppm) / PPM_PER_PERCENT, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


class LevelParameters(BaseModel):
    """One meter: what it starts at, what it restarts at after a 100 % award, and what each wager adds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    level: str = Field(pattern=LEVEL_PATTERN, description="the meter's name, as on the sign and in settlement")
    seed_cents: int = Field(ge=0, description="the amount the meter starts at (the house funds it)")
    reseed_cents: int = Field(ge=0, description="the least the meter restarts at after a 100 % award")
    primary_ppm: int = Field(ge=0, le=PPM, description="share of each wager added to the meter, ppm")
    reserve_ppm: int = Field(0, ge=0, le=PPM, description="share of each wager put aside to fund the next reseed")
    limit_cents: int | None = Field(
        None, gt=0, description="the most the meter shows; above it primary contributions go to the overflow meter"
    )
    rule: str = Field(min_length=1, description="where the figures come from, e.g. 655a.12(c)(3)")

    @model_validator(mode="after")
    def _consistent(self) -> LevelParameters:
        if self.primary_ppm + self.reserve_ppm > PPM:
            raise ValueError(
                f"{self.level}: primary {ppm_to_percent(self.primary_ppm)} % and reserve "
                f"{ppm_to_percent(self.reserve_ppm)} % add up to more than the whole wager"
            )
        if self.limit_cents is not None and self.limit_cents < max(self.seed_cents, self.reseed_cents):
            raise ValueError(
                f"{self.level}: limit_cents {self.limit_cents} is below the seed ({self.seed_cents}) "
                f"or reseed ({self.reseed_cents}): the meter could not start; raise the limit"
            )
        return self


class ProgressiveParameters(BaseModel):
    """The meters one wager feeds: each accepted wager of this spot contributes to every one of its levels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wager: str = Field(pattern=LEVEL_PATTERN, description="the wager spot, e.g. progressive, five_card_hand_bonus")
    wager_cents: int | None = Field(
        None,
        gt=0,
        description="the wager the figures are based on, where the chapter bases them on it (655a.12(c)(3), (e)(4))",
    )
    levels: tuple[LevelParameters, ...] = Field(min_length=1)
    rule: str = Field(min_length=1)


class TableProgressives(BaseModel):
    """Every progressive a table offers. Level names are unique across the table: a sign shows them side by side."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    progressives: tuple[ProgressiveParameters, ...] = ()

    @model_validator(mode="after")
    def _unique(self) -> TableProgressives:
        seen: dict[str, str] = {}
        for p in self.progressives:
            for lv in p.levels:
                if lv.level in seen:
                    raise ValueError(
                        f"meter level {lv.level!r} is fed by both {seen[lv.level]} and {p.wager}: "
                        "give each meter its own name"
                    )
                seen[lv.level] = p.wager
        wagers = [p.wager for p in self.progressives]
        if len(set(wagers)) != len(wagers):
            raise ValueError(f"a wager spot is listed twice among {wagers}: list each once with all its levels")
        return self

    @property
    def levels(self) -> dict[str, LevelParameters]:
        return {lv.level: lv for p in self.progressives for lv in p.levels}

    def level(self, name: str) -> LevelParameters:
        found = self.levels.get(name)
        if found is None:
            raise ParameterError(
                f"no progressive meter {name!r} at this table; its meters are {', '.join(self.levels) or 'none'}"
            )
        return found

    def for_wager(self, spot: str) -> ProgressiveParameters:
        for p in self.progressives:
            if p.wager == spot:
                return p
        raise ParameterError(
            f"wager {spot!r} feeds no progressive meter at this table; the progressive wagers "
            f"are {', '.join(p.wager for p in self.progressives) or 'none'}"
        )


# --- 655a Mississippi Stud -------------------------------------------------------------------------------------

# 655a.12(c)(3): (seed/reseed "for 1" of the Progressive Payout Wager, primary rate in percent) per level.
# The table is printed with its columns run together in the copy we have; read with the paytables of
# 655a.12(c)(1) it says: paytable A pays "100% of meter" and "10% of meter" from one meter seeded at $10,000
# for 1 with a primary rate of 21 % and no reserve ("N/A"); B-D have a mega ($10,000 for 1) and a major
# ($1,000 for 1) meter, C and D also a minor ($250 for 1; "N/A" under B), at the rates listed per level.
# A's single meter is named "progressive", as controller.games.mississippi_stud.PROGRESSIVE pays it.
MISSISSIPPI_STUD_PROGRESSIVE: dict[str, dict[str, tuple[int, int]]] = {
    "A": {"progressive": (10_000, 21)},
    "B": {"mega": (10_000, 11), "major": (1_000, 10)},
    "C": {"mega": (10_000, 9), "major": (1_000, 7), "minor": (250, 3)},
    "D": {"mega": (10_000, 10), "major": (1_000, 8), "minor": (250, 3)},
}
# 655a.12(e)(4): seed $10,000 for 1, reseed $0, primary 13 %, reserve 8 %.
FIVE_CARD_HAND_BONUS_655A = {"seed_for_1": 10_000, "reseed_cents": 0, "primary_percent": 13, "reserve_percent": 8}


def mississippi_stud_progressive(
    paytable: str, wager_cents: int, limits_cents: Mapping[str, int] | None = None
) -> ProgressiveParameters:
    """655a.12(c)(3): the Progressive Payout Wager's meters for paytable A-D, based on the wager offered."""
    levels = MISSISSIPPI_STUD_PROGRESSIVE.get(paytable)
    if levels is None:
        raise ParameterError(f"progressive_paytable {paytable!r}: 655a.12(c)(1) has paytables A, B, C and D")
    if wager_cents <= 0:
        raise ParameterError(f"progressive_wager_cents {wager_cents}: the wager must be more than 0 cents")
    limits = dict(limits_cents or {})
    return ProgressiveParameters(
        wager="progressive",
        wager_cents=wager_cents,
        rule="655a.12(c)(3)",
        levels=tuple(
            LevelParameters(
                level=name,
                seed_cents=for_1 * wager_cents,
                reseed_cents=for_1 * wager_cents,
                primary_ppm=percent * PPM_PER_PERCENT,
                reserve_ppm=0,
                limit_cents=limits.get(name),
                rule=f"655a.12(c)(3) paytable {paytable}",
            )
            for name, (for_1, percent) in levels.items()
        ),
    )


def mississippi_stud_five_card_hand_bonus(wager_cents: int, limit_cents: int | None = None) -> ProgressiveParameters:
    """655a.12(e)(4): the Five Card Hand Bonus meter, seeded at $10,000 for 1 of the wager, reseeded at $0."""
    if wager_cents <= 0:
        raise ParameterError(f"five_card_hand_bonus_wager_cents {wager_cents}: the wager must be more than 0 cents")
    f = FIVE_CARD_HAND_BONUS_655A
    return ProgressiveParameters(
        wager="five_card_hand_bonus",
        wager_cents=wager_cents,
        rule="655a.12(e)(4)",
        levels=(
            LevelParameters(
                level="five_card_hand_bonus",
                seed_cents=f["seed_for_1"] * wager_cents,
                reseed_cents=f["reseed_cents"],
                primary_ppm=f["primary_percent"] * PPM_PER_PERCENT,
                reserve_ppm=f["reserve_percent"] * PPM_PER_PERCENT,
                limit_cents=limit_cents,
                rule="655a.12(e)(4)",
            ),
        ),
    )


# --- 643a Let It Ride: from the Rules Submission ---------------------------------------------------------------

# 643a.12(d)(3): "may not be less than $1,000"; (e)(3) and (f)(4): "at least $10,000" (initial and reset alike).
LET_IT_RIDE_MINIMUMS: dict[str, tuple[int, str]] = {
    "three_card_progressive": (100_000, "643a.12(d)(3)"),
    "five_card_progressive": (1_000_000, "643a.12(e)(3)"),
    "five_card_hand_bonus": (1_000_000, "643a.12(f)(4)"),
}


class ConfiguredMeter(BaseModel):
    """A meter whose figures the Rules Submission sets (643a.12(d)(3), (e)(3), (f)(4)), as the config gives them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    level: str = Field(pattern=LEVEL_PATTERN)
    initial_cents: int = Field(description="the initial (seed) amount, in cents")
    reset_cents: int = Field(description="the reset (reseed) amount after a 100 % award, in cents")
    rate_percent: Decimal = Field(description="the rate of progression: percent of each wager added to the meter")
    reserve_percent: Decimal = Field(Decimal(0), description="percent of each wager put aside for the next reseed")
    limit_cents: int | None = Field(None, gt=0)

    @field_validator("rate_percent", "reserve_percent", mode="before")
    @classmethod
    def _exact(cls, v: Any) -> Any:
        # Decimal(float) would keep the float's binary error; str() first keeps what the config says.
        return str(v) if isinstance(v, float) else v

    @model_validator(mode="after")
    def _minimums(self) -> ConfiguredMeter:
        least, rule = LET_IT_RIDE_MINIMUMS.get(self.level, (0, "the Rules Submission"))
        for name in ("initial_cents", "reset_cents"):
            value = getattr(self, name)
            if value < least:
                raise ValueError(
                    f"{self.level}_{name} is {value} but {rule} sets a minimum of {least} cents "
                    f"(${least // 100:,}): raise it"
                )
        percent_to_ppm(self.rate_percent, f"{self.level}_rate_percent")
        percent_to_ppm(self.reserve_percent, f"{self.level}_reserve_percent")
        return self

    def parameters(self) -> LevelParameters:
        rule = LET_IT_RIDE_MINIMUMS.get(self.level, (0, "Rules Submission"))[1]
        return LevelParameters(
            level=self.level,
            seed_cents=self.initial_cents,
            reseed_cents=self.reset_cents,
            primary_ppm=percent_to_ppm(self.rate_percent, f"{self.level}_rate_percent"),
            reserve_ppm=percent_to_ppm(self.reserve_percent, f"{self.level}_reserve_percent"),
            limit_cents=self.limit_cents,
            rule=rule,
        )


class ProgressiveOptions(BaseModel):
    """What a table config may add to the chapter's figures: a limit per meter, and (where the chapter leaves the
    rates to the Rules Submission, 643a) the reserve share. Leave out for none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limits_cents: dict[str, int] = Field(default_factory=dict, description="meter level -> most it shows, cents")
    reserve_percent: dict[str, Decimal] = Field(
        default_factory=dict, description="meter level -> reserve rate in percent (643a meters only)"
    )

    @field_validator("reserve_percent", mode="before")
    @classmethod
    def _exact(cls, v: Any) -> Any:
        if isinstance(v, Mapping):
            return {k: str(x) if isinstance(x, float) else x for k, x in v.items()}
        return v


def _let_it_ride(rules: Any, options: ProgressiveOptions) -> list[ProgressiveParameters]:
    out: list[ProgressiveParameters] = []
    for level, (_least, rule) in LET_IT_RIDE_MINIMUMS.items():
        if not getattr(rules, level, False):
            continue
        rate = getattr(rules, f"{level}_rate_percent", None)
        initial = getattr(rules, f"{level}_initial_cents", None)
        reset = getattr(rules, f"{level}_reset_cents", None)
        for name, value in (("initial_cents", initial), ("reset_cents", reset), ("rate_percent", rate)):
            if value is None:
                raise ParameterError(
                    f"{level}_{name} is missing: {rule} requires it in the Rules Submission when "
                    f"{level} is offered; set it in [game]"
                )
        try:
            meter = ConfiguredMeter(
                level=level,
                initial_cents=initial,
                reset_cents=reset,
                rate_percent=rate,
                reserve_percent=options.reserve_percent.get(level, Decimal(0)),
                limit_cents=options.limits_cents.get(level),
            )
            out.append(ProgressiveParameters(wager=level, rule=rule, levels=(meter.parameters(),)))
        except ValueError as exc:
            raise ParameterError(_first_error(exc)) from None
    return out


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0].get("msg", exc)).removeprefix("Value error, ")
    return str(exc)


def table_progressives(rules: Any, options: ProgressiveOptions | None = None) -> TableProgressives:
    """The meters of a table from its chapter rules (the config's [game]) and its progressive options.

    Chapters without progressive wagers give no meters; an option naming a meter the table lacks is refused.
    """
    options = options or ProgressiveOptions()
    chapter = getattr(rules, "chapter", None)
    progressives: list[ProgressiveParameters] = []
    try:
        if chapter == "655a":
            if options.reserve_percent:
                raise ParameterError("reserve_percent: 655a.12(c)(3) and (e)(4) fix the reserve rates; remove it")
            if rules.progressive_paytable:
                progressives.append(
                    mississippi_stud_progressive(
                        rules.progressive_paytable, rules.progressive_wager_cents, options.limits_cents
                    )
                )
            if rules.five_card_hand_bonus:
                progressives.append(
                    mississippi_stud_five_card_hand_bonus(
                        rules.five_card_hand_bonus_wager_cents, options.limits_cents.get("five_card_hand_bonus")
                    )
                )
        elif chapter == "643a":
            progressives.extend(_let_it_ride(rules, options))
        table = TableProgressives(progressives=tuple(progressives))
    except ParameterError:
        raise
    except ValueError as exc:
        raise ParameterError(_first_error(exc)) from None
    known = set(table.levels)
    for field, named in (("limits_cents", options.limits_cents), ("reserve_percent", options.reserve_percent)):
        unknown = sorted(set(named) - known)
        if unknown:
            raise ParameterError(
                f"{field} names meter(s) {', '.join(unknown)} but this table's meters are "
                f"{', '.join(sorted(known)) or 'none'}: fix the name or remove it"
            )
    return table
