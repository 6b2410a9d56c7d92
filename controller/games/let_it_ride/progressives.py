"""Chapter 643a's progressive meters: the Three-Card and Five-Card Progressive Payout Wagers and the Five Card Hand
Bonus Wager each keep a meter whose figures the certificate holder's Rules Submission sets (643a.12(d)(3), (e)(3),
(f)(4)), so they come from the table config, with the least initial and reset amounts the chapter allows enforced.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from controller.games.let_it_ride.rules import METER_LEVELS, MIN_METER, LetItRideRules
from controller.progressive.parameters import (
    LEVEL_PATTERN,
    LevelParameters,
    ParameterError,
    ProgressiveOptions,
    ProgressiveParameters,
    TableProgressives,
    first_error,
    meter_table,
    percent_to_ppm,
)

# 643a.12(d)(3): "may not be less than $1,000"; (e)(3) and (f)(4): "at least $10,000" (initial and reset alike):
# the rules model's table of minimums, the one the meters enforce.
LET_IT_RIDE_MINIMUMS = MIN_METER


class ConfiguredMeter(BaseModel):
    """A meter whose figures the Rules Submission sets (643a.12(d)(3), (e)(3), (f)(4)), as the config gives them."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

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
        for name, value in (("initial_cents", self.initial_cents), ("reset_cents", self.reset_cents)):
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


def meters(rules: LetItRideRules, options: ProgressiveOptions) -> Sequence[ProgressiveParameters]:
    """One meter per progressive wager the rules offer, in the order 643a.11(f)(3) settles them."""
    out: list[ProgressiveParameters] = []
    for level in METER_LEVELS:
        figures = rules.meter(level)
        if not figures.offered:
            continue
        rule = LET_IT_RIDE_MINIMUMS[level][1]
        given = {
            "initial_cents": figures.initial_cents,
            "reset_cents": figures.reset_cents,
            "rate_percent": figures.rate_percent,
        }
        missing = [name for name, value in given.items() if value is None]
        if missing:
            raise ParameterError(
                f"{level}_{missing[0]} is missing: {rule} requires it in the Rules Submission when "
                f"{level} is offered; set it in [game]"
            )
        try:
            meter = ConfiguredMeter(
                level=level,
                initial_cents=figures.initial_cents,
                reset_cents=figures.reset_cents,
                rate_percent=figures.rate_percent,
                reserve_percent=options.reserve_percent.get(level, Decimal(0)),
                limit_cents=options.limits_cents.get(level),
            )
            out.append(ProgressiveParameters(wager=level, rule=rule, levels=(meter.parameters(),)))
        except ValueError as exc:
            raise ParameterError(first_error(exc)) from None
    return out


def table_progressives(rules: LetItRideRules, options: ProgressiveOptions | None = None) -> TableProgressives:
    """The table's meters under these rules (ChapterSpec.progressives): ParameterError for figures 643a refuses."""
    chosen = options or ProgressiveOptions()
    return meter_table(lambda: meters(rules, chosen), chosen)
