"""Progressive meters as a model: levels, seed and reseed amounts, incrementation rates, whatever the chapter.

Each chapter package states its own figures (controller.games.<game>.progressives): 655a fixes them in the
regulation as multiples of the wager offered ("$10,000 for 1"), 643a leaves them to the certificate holder's Rules
Submission. Rates are kept as integer parts per million of the wager (21 % = 210,000 ppm), so a contribution is
exactly `wager_cents * ppm` micro-cents and nothing is ever rounded (docs/progressive.md, "Units").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

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

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

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

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

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


class ProgressiveOptions(BaseModel):
    """What a table config may add to the chapter's figures: a limit per meter, and (where the chapter leaves the
    rates to the Rules Submission, 643a) the reserve share. Leave out for none."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

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


def first_error(exc: ValueError) -> str:
    """The first problem of a validation error as one sentence (pydantic lists them all), else the message."""
    if isinstance(exc, ValidationError):
        found = exc.errors()
        if found:
            return str(found[0].get("msg", exc)).removeprefix("Value error, ")
    return str(exc)


def meter_table(build: Callable[[], Iterable[ProgressiveParameters]], options: ProgressiveOptions) -> TableProgressives:
    """The meters of a table as its chapter builds them (controller.games: each chapter knows its own figures),
    with its progressive options.

    A figure the chapter or the model refuses is a ParameterError naming it; an option naming a meter the table
    lacks is refused.
    """
    try:
        table = TableProgressives(progressives=tuple(build()))
    except ParameterError:
        raise
    except ValueError as exc:
        raise ParameterError(first_error(exc)) from None
    known = set(table.levels)
    for field, named in (("limits_cents", options.limits_cents), ("reserve_percent", options.reserve_percent)):
        unknown = sorted(set(named) - known)
        if unknown:
            raise ParameterError(
                f"{field} names meter(s) {', '.join(unknown)} but this table's meters are "
                f"{', '.join(sorted(known)) or 'none'}: fix the name or remove it"
            )
    return table
