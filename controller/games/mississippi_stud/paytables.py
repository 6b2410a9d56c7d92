"""Chapter 655a, Mississippi Stud: every table of 655a.12 as data, with its citation.

The figures 655a.12(c)(3) and (e)(4) fix for the meters are here too, written once: the meters
(controller.games.mississippi_stud.progressives) and the settlement's reseeds both read them.
"""

from __future__ import annotations

from controller.core.money import Cents, Odds
from controller.core.paytable import Award, MeterShare, Paytable, table
from controller.core.rankings import Five, Six, Three

# 655a.12(a): Ante, 3rd, 4th and 5th Street Wagers. A pair of 6s-10s pushes (listed as "Push").
ANTE_AND_STREETS = table(
    "655a.12(a)",
    None,
    {
        Five.ROYAL_FLUSH: "500 to 1",
        Five.STRAIGHT_FLUSH: "100 to 1",
        Five.FOUR_OF_A_KIND: "40 to 1",
        Five.FULL_HOUSE: "10 to 1",
        Five.FLUSH: "6 to 1",
        Five.STRAIGHT: "4 to 1",
        Five.THREE_OF_A_KIND: "3 to 1",
        Five.TWO_PAIR: "2 to 1",
        Five.PAIR: "1 to 1",  # jacks or better only; see settle_hand
    },
)

AGGREGATE_PAYOUT_LIMIT: Cents = 5_000_000  # 655a.12(b): $50,000 or more, see hands.payout_limit

_3CB_COMMON: dict[Three, str] = {
    Three.STRAIGHT_FLUSH: "40 to 1",
    Three.THREE_OF_A_KIND: "30 to 1",
    Three.PAIR: "1 to 1",
}

# 655a.12(d): Three Card Bonus, paytables A-D.
THREE_CARD_BONUS: dict[str, Paytable] = {
    letter: table("655a.12(d)", letter, {**_3CB_COMMON, **rows})
    for letter, rows in dict[str, dict[Three, str]](
        {
            "A": {Three.MINI_ROYAL: "40 to 1", Three.STRAIGHT: "6 to 1", Three.FLUSH: "4 to 1"},
            "B": {Three.MINI_ROYAL: "40 to 1", Three.STRAIGHT: "5 to 1", Three.FLUSH: "4 to 1"},
            "C": {Three.MINI_ROYAL: "50 to 1", Three.STRAIGHT: "5 to 1", Three.FLUSH: "4 to 1"},
            "D": {Three.MINI_ROYAL: "50 to 1", Three.STRAIGHT: "6 to 1", Three.FLUSH: "3 to 1"},
        }
    ).items()
}


def _six(rows: dict[Six, str]) -> dict[Six, str]:
    return {Six.ROYAL_FLUSH: "1,000 to 1", Six.STRAIGHT_FLUSH: "200 to 1", **rows}


# 655a.12(f): Six Card Bonus, paytables A-E. Only E lists the six-card royal flush; under A-D such a
# hand is still a royal flush (655a.6(d)(2)) and pays as one. The diamonds row of E is keyed apart in
# SIX_CARD_ROYAL_DIAMONDS because the class alone does not carry the suit.
SIX_CARD_BONUS: dict[str, Paytable] = {
    letter: table("655a.12(f)", letter, _six(rows))
    for letter, rows in {
        "A": {
            Six.FOUR_OF_A_KIND: "50 to 1",
            Six.FULL_HOUSE: "25 to 1",
            Six.FLUSH: "20 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "5 to 1",
        },
        "B": {
            Six.FOUR_OF_A_KIND: "50 to 1",
            Six.FULL_HOUSE: "25 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "5 to 1",
        },
        "C": {
            Six.FOUR_OF_A_KIND: "100 to 1",
            Six.FULL_HOUSE: "20 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "9 to 1",
            Six.THREE_OF_A_KIND: "8 to 1",
        },
        "D": {
            Six.FOUR_OF_A_KIND: "100 to 1",
            Six.FULL_HOUSE: "20 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "7 to 1",
        },
        "E": {
            Six.SIX_CARD_ROYAL_FLUSH: "20,000 to 1",
            Six.FOUR_OF_A_KIND: "50 to 1",
            Six.FULL_HOUSE: "20 to 1",
            Six.FLUSH: "15 to 1",
            Six.STRAIGHT: "10 to 1",
            Six.THREE_OF_A_KIND: "5 to 1",
        },
    }.items()
}
SIX_CARD_ROYAL_DIAMONDS = {"E": table("655a.12(f)", "E", {Six.SIX_CARD_ROYAL_FLUSH: "200,000 to 1"})}


# -- 655a.12(c): the Progressive Payout Wager -----------------------------------------------------------------


def _progressive(rows: dict[Five, str | MeterShare]) -> dict[Five, Award]:
    return {hand: Odds.parse(v) if isinstance(v, str) else v for hand, v in rows.items()}


_PROGRESSIVE_LOWER: dict[Five, str | MeterShare] = {
    Five.FULL_HOUSE: "50 for 1",
    Five.FLUSH: "40 for 1",
    Five.STRAIGHT: "30 for 1",
}
PROGRESSIVE: dict[str, dict[Five, Award]] = {
    "A": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("progressive", 100),
            Five.STRAIGHT_FLUSH: MeterShare("progressive", 10),
            Five.FOUR_OF_A_KIND: "300 for 1",
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "9 for 1",
        }
    ),
    "B": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("mega", 100),
            Five.STRAIGHT_FLUSH: MeterShare("major", 100),
            Five.FOUR_OF_A_KIND: "300 for 1",
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "9 for 1",
        }
    ),
    "C": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("mega", 100),
            Five.STRAIGHT_FLUSH: MeterShare("major", 100),
            Five.FOUR_OF_A_KIND: MeterShare("minor", 100),
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "10 for 1",
        }
    ),
    "D": _progressive(
        {
            Five.ROYAL_FLUSH: MeterShare("mega", 100),
            Five.STRAIGHT_FLUSH: MeterShare("major", 100),
            Five.FOUR_OF_A_KIND: MeterShare("minor", 100),
            **_PROGRESSIVE_LOWER,
            Five.THREE_OF_A_KIND: "9 for 1",
        }
    ),
}
# 655a.12(c)(3): per paytable and level, the seed and reseed as a multiple of the Progressive Payout Wager ("$10,000
# for 1") and the primary rate of progression in percent. The table is printed with its columns run together in the
# copy we have; read with the paytables of 655a.12(c)(1) it says: paytable A pays "100% of meter" and "10% of meter"
# from one meter seeded at $10,000 for 1 with a primary rate of 21 % and no reserve ("N/A"); B-D have a mega
# ($10,000 for 1) and a major ($1,000 for 1) meter, C and D also a minor ($250 for 1; "N/A" under B), at the rates
# listed per level. A's single meter is named "progressive", as PROGRESSIVE pays it.
PROGRESSIVE_METERS: dict[str, dict[str, tuple[int, int]]] = {
    "A": {"progressive": (10_000, 21)},
    "B": {"mega": (10_000, 11), "major": (1_000, 10)},
    "C": {"mega": (10_000, 9), "major": (1_000, 7), "minor": (250, 3)},
    "D": {"mega": (10_000, 10), "major": (1_000, 8), "minor": (250, 3)},
}
# The seeds alone, level -> "for 1", per paytable.
PROGRESSIVE_SEED_FOR_1: dict[str, dict[str, int]] = {
    letter: {level: for_1 for level, (for_1, _rate) in levels.items()} for letter, levels in PROGRESSIVE_METERS.items()
}
# 655a.12(c)(5): Envy Bonus per Envy Bonus Qualifying Hand, by the receiving player's Progressive Payout Wager.
ENVY_BONUS: dict[Cents, dict[Five, Cents]] = {
    100: {Five.ROYAL_FLUSH: 100_000, Five.STRAIGHT_FLUSH: 30_000},
    500: {Five.ROYAL_FLUSH: 500_000, Five.STRAIGHT_FLUSH: 150_000},
}

# -- 655a.12(e): the Five Card Hand Bonus Wager, its Magic Card and Lucky Bonus ---------------------------------

FIVE_CARD_HAND_BONUS: dict[Five, Award] = _progressive(
    {
        Five.ROYAL_FLUSH: MeterShare("five_card_hand_bonus", 100),
        Five.STRAIGHT_FLUSH: MeterShare("five_card_hand_bonus", 10),
        Five.FOUR_OF_A_KIND: "500 for 1",
        Five.FULL_HOUSE: "100 for 1",
        Five.FLUSH: "50 for 1",
    }
)
MAGIC_CARD = Odds.parse("20 for 1")  # 655a.12(e)(3)
LUCKY_BONUS = Odds.parse("5 for 1")  # 655a.12(e)(3)
# 655a.12(e)(4): seed $10,000 for 1, reseed $0, primary 13 %, reserve 8 %.
FIVE_CARD_HAND_BONUS_SEED_FOR_1 = 10_000
FIVE_CARD_HAND_BONUS_RESEED: Cents = 0
FIVE_CARD_HAND_BONUS_PRIMARY_PERCENT = 13
FIVE_CARD_HAND_BONUS_RESERVE_PERCENT = 8
