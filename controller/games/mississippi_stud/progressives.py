"""Chapter 655a's progressive meters: the regulation fixes their figures (655a.12(c)(3) for the Progressive Payout
Wager, 655a.12(e)(4) for the Five Card Hand Bonus) as multiples of the wager offered ("$10,000 for 1"), so a config
chooses only the paytable and the wager, and may add a limit per meter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.games.mississippi_stud.paytables import (
    FIVE_CARD_HAND_BONUS_PRIMARY_PERCENT,
    FIVE_CARD_HAND_BONUS_RESEED,
    FIVE_CARD_HAND_BONUS_RESERVE_PERCENT,
    FIVE_CARD_HAND_BONUS_SEED_FOR_1,
    PROGRESSIVE_METERS,
)
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.progressive.parameters import (
    PPM_PER_PERCENT,
    LevelParameters,
    ParameterError,
    ProgressiveOptions,
    ProgressiveParameters,
    TableProgressives,
    meter_table,
)


def mississippi_stud_progressive(
    paytable: str, wager_cents: int, limits_cents: Mapping[str, int] | None = None
) -> ProgressiveParameters:
    """655a.12(c)(3): the Progressive Payout Wager's meters for paytable A-D, based on the wager offered."""
    levels = PROGRESSIVE_METERS.get(paytable)
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
    return ProgressiveParameters(
        wager="five_card_hand_bonus",
        wager_cents=wager_cents,
        rule="655a.12(e)(4)",
        levels=(
            LevelParameters(
                level="five_card_hand_bonus",
                seed_cents=FIVE_CARD_HAND_BONUS_SEED_FOR_1 * wager_cents,
                reseed_cents=FIVE_CARD_HAND_BONUS_RESEED,
                primary_ppm=FIVE_CARD_HAND_BONUS_PRIMARY_PERCENT * PPM_PER_PERCENT,
                reserve_ppm=FIVE_CARD_HAND_BONUS_RESERVE_PERCENT * PPM_PER_PERCENT,
                limit_cents=limit_cents,
                rule="655a.12(e)(4)",
            ),
        ),
    )


def meters(rules: MississippiStudRules, options: ProgressiveOptions) -> Sequence[ProgressiveParameters]:
    """The meters of the progressive wagers these rules offer; the regulation fixes the reserve rates."""
    if options.reserve_percent:
        raise ParameterError("reserve_percent: 655a.12(c)(3) and (e)(4) fix the reserve rates; remove it")
    out: list[ProgressiveParameters] = []
    if rules.progressive_paytable:
        out.append(
            mississippi_stud_progressive(
                rules.progressive_paytable, rules.progressive_wager_cents, options.limits_cents
            )
        )
    if rules.five_card_hand_bonus:
        out.append(
            mississippi_stud_five_card_hand_bonus(
                rules.five_card_hand_bonus_wager_cents, options.limits_cents.get("five_card_hand_bonus")
            )
        )
    return out


def table_progressives(rules: MississippiStudRules, options: ProgressiveOptions | None = None) -> TableProgressives:
    """The table's meters under these rules (ChapterSpec.progressives)."""
    chosen = options or ProgressiveOptions()
    return meter_table(lambda: meters(rules, chosen), chosen)
