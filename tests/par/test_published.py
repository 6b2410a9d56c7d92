"""The exact analyses against independently published figures and strategies, each with its source.

Sources (each figure checked against the page it cites, to the digits the page prints):
- Mississippi Stud, 655a.12(a) paytable, optimal strategy: house edge 4.91 % per Ante, Wizard of Odds,
  http://wizardofodds.com/games/mississippi-stud/ (quoted with the same figure by John Grochowski,
  https://www.casinocitytimes.com/john-grochowski/article/house-edge-and-element-of-risk-66201). Its 3rd Street
  rule, as that page gives it and toolsgambling.com/blog/mississippi-stud-strategy restates it: raise 3x with any
  pair, 1x with at least two points (a jack or better counts 2, a 6 to 10 counts 1) or 6-5 suited, else fold.
- Mississippi Stud's 4th and 5th Street rules, the Wizard of Odds page above (strategy credited there to Joseph
  Kisenwether), in the words public simulators quote it in their source (the library's code corpus, e.g. a
  Mississippi Stud simulator's Points.java and msstud_kisenwether_strategy.py): 4th Street "Raise 3x with any made
  hand (mid pair or higher) / royal flush draw / straight flush draw, with no gaps, 567 or higher / ... with one gap,
  and at least one high card / ... with two gaps, and at least two high cards. Raise 1x with any other three suited
  cards / a low pair / at least three points / a straight draw, with no gaps, 456 or higher / a straight draw, with
  one gap, and two mid cards. Fold all others"; 5th Street "Raise 3x with any made hand (mid pair or higher) / any
  four to a flush / four to an outside straight, 8 high or better. Raise 1x with any other straight draw / a low pair /
  at least four points / three mid cards and at least one previous 3x raise. Fold all others".
- Mississippi Stud's average total wager 3.59 Antes and element of risk 1.37 %: John Grochowski, "How Does a
  Multi-Bet Format Affect the House Edge in Mississippi Stud?",
  https://tunicatravel.com/blog/2016/03/how-does-a-multi-bet-format-affect-the-house-edge-in-mississippi-stud/ ("on
  average, your total wagers will be 3.59 times your starting amount ... 1.37 percent house edge against total
  action"; https://invisioncommunity.co.uk/house-edge-risk-odds-mississippi-stud-poker gives the same 3.59).
- Let It Ride, 643a.12(a) paytable A (royal 1,000 to 1): house edge 3.51 % of one bet, element of risk 2.86 %
  (https://toolsgambling.com/blog/let-it-ride-strategy/, "3.51% house edge"; the Press of Atlantic City's Casino
  Answer Man, https://www.pressofatlanticcity.com/ats/gambling/casino-answer-man-figure-out-exactly-what-a-house-edge/
  article_126ee95e-39b5-5073-b147-c0ecf181512e.html: "3.5 percent of one bet, or 2.8 percent of total action").
  Bet Number 1 rides, per those sources, on a paying pair or better, three to a royal flush, three suited in a row
  from 3-4-5 up, and three to a straight flush with one gap and a high card or two gaps and two high cards.
- The six-card class counts (655a.12(f)) are the standard table of C(52, 6) = 20,358,520 hands.
- Caribbean Stud Poker (684a's analysis with Caribbean Stud's rules: dealer qualifies with ace-king, Ante 1 to 1, a
  Raise of two Antes paid by the standard paytable, Ante paid and Raise pushed when the dealer does not qualify):
  Wizard of Odds, https://wizardofodds.com/games/caribbean-stud-poker/ ("Strategy Statistics", over all
  19,933,230,517,200 deals counting the dealer's up card among his five; the table also printed in Michael
  Shackleford, "The Wizard of Odds Analyzes the New Casino Games", Contingencies Nov/Dec 2000, and restated at
  https://toho-talent.com/2022/04/14/caribbean-stud-poker-strategy/): "Raise on ace/king/jack/8/3 or better", total
  loss 1,059,715,400,580, house edge 5.316 %, element of risk 2.596 %; perfect strategy (which sees the dealer's up
  card) 5.224 %, element of risk 2.555 %. 684a shows the player no dealer card, so its optimal strategy must land
  between the two.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from controller.config.table import load_config
from controller.core.rankings import Five
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.par import (
    chapter_684a,
    chapter_684a_terms,
    combos,
    dealer_counts,
    deals,
    let_it_ride,
    let_it_ride_optional,
    mississippi_stud,
    patterns,
    stud,
)
from controller.par.analyse import par_sheet
from controller.par.evaluator import hand_class, pack
from controller.par.mississippi_stud import third_street_groups
from controller.par.stud import FOLD
from tests.par.sheets import CONFIGS, sheet_of

ROOT = Path(__file__).resolve().parents[2]


# One worker runs the module: its tests share 655a's and 643a's main games, solved once (the module fixtures), and with
# tests/par/test_cli.py and test_crosscheck.py the shipped configs' sheets (tests/par/sheets.py).
pytestmark = pytest.mark.xdist_group("par_sheets")


@pytest.fixture(scope="module")
def ms() -> mississippi_stud.MainGame:
    return mississippi_stud.analyse_main()


@pytest.fixture(scope="module")
def lir() -> let_it_ride.MainGame:
    return let_it_ride.analyse_main("A")


def test_mississippi_stud_house_edge_is_the_published_4_91_percent_per_ante(ms: mississippi_stud.MainGame) -> None:
    assert round(float(ms.sheet.house_edge) * 100, 2) == 4.91
    assert ms.sheet.house_edge == Fraction(53223, 1082900)  # what this release computes exactly, to catch drift
    assert sum(r.probability for r in ms.sheet.rows) == 1


def test_mississippi_stud_3rd_street_strategy_is_the_published_one(ms: mississippi_stud.MainGame) -> None:
    groups = third_street_groups(ms.strategy)
    ranks = "23456789TJQKA"

    def points(hand: str) -> int:
        return sum(2 if ranks.index(r) >= 9 else 1 if ranks.index(r) >= 4 else 0 for r in hand[:2])

    pairs = [h for h in (r + r for r in ranks)]
    assert sorted(groups[3]) == sorted(pairs)  # 655a.11(b): three times the Ante on any pair
    assert 2 not in groups  # never twice
    for hand in groups[1]:
        assert points(hand) >= 2 or hand == "65s", hand
    for hand in groups[FOLD]:
        assert points(hand) < 2 and hand != "65s", hand


def test_let_it_ride_house_edge_and_element_of_risk_are_the_published_ones(lir: let_it_ride.MainGame) -> None:
    assert round(float(lir.sheet.house_edge) * 100, 2) == 3.51
    element = lir.sheet.element_of_risk
    assert element is not None and round(float(element) * 100, 2) == 2.86
    assert sum(r.probability for r in lir.sheet.rows) == 1


def test_let_it_ride_bet_1_strategy_is_the_published_one(lir: let_it_ride.MainGame) -> None:
    rules = lir.strategy_tables[0].rules
    rides = {rule.removeprefix("let it ride on ").split(" (")[0] for rule in rules[:-1]}
    assert {"a pair of tens or better", "three of a kind"} <= rides
    suited = {r.removeprefix("suited ") for r in rides if r.startswith("suited ")}
    # three to a royal flush
    assert {"AKQ", "AKJ", "AKT", "AQJ", "AQT", "AJT", "KQJ", "KQT", "KJT", "QJT"} <= suited
    # three suited in a row, 3-4-5 and up (2-3-4 and A-2-3 do not ride)
    assert {"543", "654", "765", "876", "987", "T98", "JT9"} <= suited
    assert not {"432", "A32"} & suited
    assert "a pair" not in rides  # a low pair withdraws
    assert rules[-1] == "otherwise withdraw Bet Number 1"


def test_six_card_class_counts_are_the_published_ones() -> None:
    counts = deals.class_counts(6)
    assert counts.sum() == 20_358_520
    assert int(counts[Five.ROYAL_FLUSH]) == 188
    assert int(counts[Five.STRAIGHT_FLUSH]) == 1_656
    assert int(counts[Five.FOUR_OF_A_KIND]) == 14_664
    assert int(counts[Five.FULL_HOUSE]) == 165_984
    assert int(counts[Five.FLUSH]) == 205_792
    assert int(counts[Five.STRAIGHT]) == 361_620
    assert int(counts[Five.THREE_OF_A_KIND]) == 732_160


def test_the_payout_limit_raises_the_house_edge_at_the_maximum_ante() -> None:
    limited = mississippi_stud.analyse_main(10_000, 5_000_000)  # $100 Ante: a royal on 10 units would pay $500,000
    assert limited.sheet.house_edge > Fraction(53223, 1082900)
    royal = next(r for r in limited.sheet.rows if r.name == "royal_flush")
    # Every royal is capped at the limit: its contribution is its probability times $50,000 per $100 Ante.
    assert royal.contribution == royal.probability * Fraction(5_000_000, 10_000)


def test_a_par_sheet_fills_the_floor_reports_hook_for_rows_decisions_change(ms: mississippi_stud.MainGame) -> None:
    from controller.par.sheet import ParSheet
    from floor.report.expected import ExactFrequencies

    sheet = ParSheet("ms-1", "655a", "Mississippi Stud", (ms.sheet,))
    frequencies = ExactFrequencies(sheet)  # floor.report.expected.ParSheet, structurally
    royal = next(r for r in ms.sheet.rows if r.name == "royal_flush")
    assert frequencies.expected("655a", "ante", "royal_flush") == royal.probability
    assert frequencies.expected("655a", "ante", "fold") == next(
        r.probability for r in ms.sheet.rows if r.name == "fold"
    )
    assert frequencies.expected("643a", "ante", "royal_flush") is None


def test_the_five_card_bonus_amounts_are_paid_for_1_as_the_published_figures_read_them() -> None:
    """643a.12(b) prints sums, not odds. Wizard of Odds (https://wizardofodds.com/games/let-it-ride/appendix/2/) gives
    27.70 % for a $1 side bet paying $5,000/$2,000/$100/$75/$50/$25/$8/$4: that figure is the "for 1" reading (the
    sum includes the wager; "to 1" would give 20.07 %), so settlement and this sheet read 643a.12(b) the same way,
    and paytable A keeps a house edge instead of returning 118.99 %."""
    counts = deals.class_counts(5)
    capri = {
        Five.ROYAL_FLUSH: 5000,
        Five.STRAIGHT_FLUSH: 2000,
        Five.FOUR_OF_A_KIND: 100,
        Five.FULL_HOUSE: 75,
        Five.FLUSH: 50,
        Five.STRAIGHT: 25,
        Five.THREE_OF_A_KIND: 8,
        Five.TWO_PAIR: 4,
    }
    total = sum(int(counts[c]) for c in Five)
    for_one = 1 - sum(Fraction(int(counts[c]), total) * pay for c, pay in capri.items())
    assert round(float(for_one) * 100, 2) == 27.70
    sheet = let_it_ride_optional.five_card_bonus("A", 100)
    assert round(float(sheet.house_edge) * 100, 6) == 4.888725
    pair = next(r for r in sheet.rows if r.name == "pair_of_tens_or_better")
    assert pair.contribution == pair.probability  # "$2" for the $1 wager: $1 won


def test_let_it_ride_envy_bonuses_by_number_of_other_players() -> None:
    """643a.12(d)(5), (e)(5): each other player's qualifying hand pays the receiving wager's schedule; by linearity the
    return adds, per other player, that player's chance of each qualifying hand times its bonus (worked by hand here
    from the schedules: 1 mini-royal in spades and 3 others of the 22,100 three-card hands; 4 royal and 36 straight
    flushes of the 2,598,960 five-card hands)."""
    config, alone = sheet_of(CONFIGS / "let-it-ride-progressive.toml")
    rules = config.game
    by_hand = {
        "three_card_progressive@100": Fraction(1 * 100 + 3 * 25, 22_100),
        "three_card_progressive@500": Fraction(1 * 500 + 3 * 125, 22_100 * 5),
        "five_card_progressive@100": Fraction(4 * 1000 + 36 * 300, 2_598_960),
        "five_card_progressive@500": Fraction(4 * 5000 + 36 * 1500, 2_598_960 * 5),
    }
    for others in (1, 3, 6):
        sheet = par_sheet("t", rules, others=others)
        for wager, per_other in by_hand.items():
            assert alone.wager(wager).house_edge - sheet.wager(wager).house_edge == per_other * others, wager
            envy = next(r for r in sheet.wager(wager).rows if r.name == "envy_bonus")
            assert envy.contribution == per_other * others
            assert sheet.wager(wager).standard_deviation is None  # the rows overlap: no variance is claimed
    assert not any("envy" in n for n in alone.not_analysed)


def test_let_it_ride_bet_2_strategy_is_the_published_one(lir: let_it_ride.MainGame) -> None:
    """Bet Number 2 (643a.11(d)) as http://webcasinoguide.com/letitride.asp prints it: with four cards, let it ride
    on any paying hand, any four to a royal flush, to a straight flush or to a flush, four to an outside straight with
    at least one high card (ten or greater); and two that page marks "(zero house edge)": four to an outside straight
    with no high card and four to an inside straight with four high cards. Those two are ties, riding and
    withdrawing return exactly the same, and the analysis withdraws on a tie (less at risk for the same return)."""
    (second,) = [t for t in lir.strategy_tables if t.point.startswith("Bet Number 2")]
    assert second.rules == (
        "let it ride: a paying hand (a pair of 10s or better, two pair, three of a kind or better); four to a royal "
        "flush; four to a straight flush; four to a flush; four to an outside straight with a high card (10 or better)",
        "withdraw: four to an outside straight with no high card; four to an inside straight (or A-2-3-4, J-Q-K-A) "
        "with four high cards; four to an inside straight (or A-2-3-4, J-Q-K-A) with fewer high cards; a low pair "
        "(2s to 9s); anything else",
    )
    # The two ties, exactly: what the 48 last cards pay on the set is the same with the bet riding or withdrawn.
    f = patterns.features(4)
    outside_low = f.open_ended & (f.at_least_ten == 0) & ~f.suited
    inside_high = (f.gaps >= 0) & (f.at_least_ten == 4) & ~f.open_ended & ~f.suited
    ties = outside_low | inside_high
    counts = deals.counts_by_four(let_it_ride.outcome_of_hands(), len(let_it_ride.outcomes("A")))
    pay = let_it_ride.payoffs("A", None, None)
    # 2-3-4-5 to 6-7-8-9, and the four ways to hold four of 10-J-Q-K-A but 10-J-Q-K; the suited ones are flush draws.
    assert outside_low.sum() == 5 * (4**4 - 4) and inside_high.sum() == 4 * (4**4 - 4)
    assert ((counts[ties] @ pay[2]) == (counts[ties] @ pay[1])).all()
    assert ((counts[ties] @ pay[3]) == (counts[ties] @ pay[2])).all()


def test_mississippi_stud_4th_and_5th_street_tables_say_what_the_strategy_does(ms: mississippi_stud.MainGame) -> None:
    """The readable 4th and 5th Street rules. 5th Street needs no "it depends": every pattern takes one action at
    every amount wagered, and a paying hand, four to a flush and four to an outside straight 8 high or better raise
    3x whatever was wagered before (the published rule, checked decision by decision in the next test; this one checks
    the analysis's own readable table, each line of which holds on every card set by construction)."""
    tables = {t.point: t.rules for t in ms.strategy_tables}
    fifth = [rules for point, rules in tables.items() if point.startswith("5th Street")]
    assert len(fifth) == 3  # 3, 5 and 7 units wagered: 1x or 3x at each earlier Street (2x never pays best)
    for rules in fifth:
        assert not any("it depends" in r for r in rules)
        assert rules[0].startswith(
            "raise 3x: a paying hand (a pair of 6s or better, two pair, three of a kind or better); four to a royal "
            "flush; four to a straight flush; four to a flush; four to an outside straight, 8 high or better"
        )
        assert rules[1].startswith("raise 1x: a low pair (2s to 5s); four to an outside straight, 7 high or lower")
    # More already wagered raises on weaker hands: 3 points fold with 3 units out, raise 1x with 5 or 7.
    assert "otherwise 3 points" in fifth[0][2] and "otherwise 3 points" in fifth[1][1]
    fourth = [rules for point, rules in tables.items() if point.startswith("4th Street")]
    assert len(fourth) == 2
    for rules in fourth:
        assert rules[0].startswith("raise 3x: three of a kind; a pair of 6s or better; three to a royal flush")


def _published_strategy(third: np.typing.NDArray[np.int8]) -> stud.Strategy:
    """The Wizard of Odds 4th and 5th Street rules (module docstring), word for word, as decisions per card set; a
    rank index 0-12 is 2 to ace, a mid card 6 to 10 (1 point), a high card jack to ace (2 points)."""

    def features(k: int) -> tuple[np.typing.NDArray[np.int64], ...]:
        cards = combos.combinations(k).astype(np.int64)
        ranks, suits = np.sort(cards % 13, axis=1), cards // 13
        counts = np.zeros((len(cards), 13), dtype=np.int64)
        for j in range(k):
            counts[np.arange(len(cards)), ranks[:, j]] += 1
        return ranks, suits, counts

    def points(ranks: np.typing.NDArray[np.int64]) -> np.typing.NDArray[np.int64]:
        scored: np.typing.NDArray[np.int64] = np.where(ranks >= 9, 2, np.where(ranks >= 4, 1, 0)).sum(axis=1)
        return scored

    mid_or_higher = np.arange(13) >= 4
    ranks, suits, counts = features(3)
    suited = (suits == suits[:, :1]).all(axis=1)
    made = ((counts >= 2) & mid_or_higher).any(axis=1) | (counts.max(axis=1) == 3)  # trips: a made hand
    low_pair = (counts >= 2).any(axis=1) & ~made
    distinct, span = counts.max(axis=1) == 1, ranks[:, 2] - ranks[:, 0]
    high, mid = (ranks >= 9).sum(axis=1), ((ranks >= 4) & (ranks <= 8)).sum(axis=1)
    flush_draw = suited & distinct
    raise_3 = made | (suited & (ranks[:, 0] >= 8))  # a royal flush draw
    raise_3 |= flush_draw & (
        ((span == 2) & (ranks[:, 0] >= 3)) | ((span == 3) & (high >= 1)) | ((span == 4) & (high >= 2))
    )
    raise_1 = suited | low_pair | (points(ranks) >= 3)
    raise_1 |= distinct & (((span == 2) & (ranks[:, 0] >= 2)) | ((span == 3) & (mid >= 2)))
    fourth = np.repeat(np.where(raise_3, 3, np.where(raise_1, 1, 0)).astype(np.int8)[:, None], 5, axis=1)

    ranks, suits, counts = features(4)
    pairs = counts >= 2
    made = (pairs & mid_or_higher).any(axis=1) | (pairs.sum(axis=1) == 2) | (counts.max(axis=1) >= 3)
    low_pair = pairs.any(axis=1) & ~made
    distinct = counts.max(axis=1) == 1
    outside = distinct & (ranks[:, 3] - ranks[:, 0] == 3) & (ranks[:, 3] <= 11)  # open at both ends: K high at most
    present = np.concatenate([counts[:, 12:13], counts], axis=1) > 0  # the ace also plays low
    straight_draw = distinct & np.any([present[:, lo : lo + 5].sum(axis=1) == 4 for lo in range(10)], axis=0)
    mid = ((ranks >= 4) & (ranks <= 8)).sum(axis=1)
    raise_3 = made | (suits == suits[:, :1]).all(axis=1) | (outside & (ranks[:, 3] >= 6))
    fifth = np.zeros((len(ranks), 8), dtype=np.int8)
    for wagered in (3, 5, 7):  # 5 or 7 units: a 3x raise before
        raise_1 = straight_draw | low_pair | (points(ranks) >= 4) | ((mid >= 3) & (wagered >= 5))
        fifth[:, wagered] = np.where(raise_3, 3, np.where(raise_1, 1, 0))
    return stud.Strategy(third, fourth, fifth)


def test_mississippi_stud_4th_and_5th_street_strategy_is_the_published_one(ms: mississippi_stud.MainGame) -> None:
    """Played exactly, the published rules hold the optimal 53223/1082900; on every card set either strategy ever
    reaches, they take the same decision, except 49,392 four-card sets at 5th Street after two 1x raises, where the
    published rule raises 1x and the analysis folds: each an exact tie (betting 1x returns exactly the 3 units that
    folding forfeits, e.g. Q-A-3-5: 6 cards pair the Q or A and win 4 units, the other 42 lose 4)."""
    published = _published_strategy(ms.strategy.third)
    assert mississippi_stud.price(published)[0] == -ms.sheet.house_edge
    pay = mississippi_stud.payoffs(None, None)
    counts = stud.counts_by_outcome()
    for strategy in (ms.strategy, published):
        reach3, reach4 = mississippi_stud.reach(strategy)
        for w in (2, 4):
            differ = (ms.strategy.fourth[:, w] != published.fourth[:, w]) & (reach3[:, w] > 0)
            assert not differ.any()
        for w in (3, 5, 7):
            differ = (ms.strategy.fifth[:, w] != published.fifth[:, w]) & (reach4[:, w] > 0)
            if w != 3:
                assert not differ.any()
                continue
            assert differ.sum() == 49_392
            assert (ms.strategy.fifth[differ, w] == FOLD).all() and (published.fifth[differ, w] == 1).all()
            assert (counts[differ] @ pay[4] == -3 * 48).all()  # the 1x raise's result: exactly folding's


def test_mississippi_stud_average_wager_is_the_published_3_59_antes_when_ties_raise(
    ms: mississippi_stud.MainGame,
) -> None:
    """Why the sheet's average total wager (3.483568 Antes, element of risk 1.410869 %) is not the published 3.59 Antes
    and 1.37 %: the published strategy raises 1x on the exact ties above, the sheet folds on them (no more at risk for
    nothing). The house edge is the same; priced exactly, the published strategy wagers 3.589772 Antes, what the
    analysis itself finds when it breaks ties toward the larger wager. Two routes to the sheet's own figure agree (the
    analysis's forward pass and `price`), so the forward pass is not where the difference comes from."""
    published = _published_strategy(ms.strategy.third)
    edge, wagered = mississippi_stud.price(published)
    assert (round(float(wagered), 2), round(float(-edge / wagered) * 100, 2)) == (3.59, 1.37)
    assert mississippi_stud.price(ms.strategy) == (-ms.sheet.house_edge, ms.sheet.average_wager)
    assert ms.sheet.average_wager is not None and round(float(ms.sheet.average_wager), 6) == 3.483568
    raising = mississippi_stud.analyse_main(ties="more").sheet
    assert (raising.house_edge, raising.average_wager) == (ms.sheet.house_edge, wagered)
    # The sheet says so itself, with the figure the published strategy wagers.
    assert any("exact tie" in n and "3.589772 Antes" in n and "1.369128%" in n for n in ms.sheet.notes)
    assert not raising.notes


def test_three_card_prime_plays_the_published_three_card_poker_threshold() -> None:
    """679a with the Three Card Poker rules (dealer qualifies at queen high, Ante and Play 1 to 1, the Ante paid and
    the Play pushed when the dealer does not qualify, a straight above a flush): play Q-6-4 or better, fold lower, as
    published for Three Card Poker (https://tunicatravel.com/blog/best-ante-bet-strategy-in-three-card-poker/: "make
    the bet ... any time you're dealt Queen-6-4 or better, but ... fold ... with lower-ranking hands"). The Bad Beat
    Bonus of the example Rules Submission pays on losing flushes and better, which are played anyway: same threshold.
    The Prime Wager worked by hand: 2 x C(26, 3) of the 22,100 hands are one color, 4/17, so 3 to 1 holds 1/17."""
    config, sheet = sheet_of(CONFIGS / "three-card-prime.toml")
    rules = config.game
    assert sheet.strategy[0].rules == ("play with Qc 6c 4d (by rank) or better", "fold anything lower")
    plain = rules.model_copy(update={"bad_beat_paytable": None, "bad_beat_minimum": None})
    assert par_sheet("t", plain).strategy[0].rules[0] == "play with Qc 6c 4d (by rank) or better"
    assert sheet.wager("prime").house_edge == Fraction(1, 17)
    main = sheet.wager("ante")
    assert sum(r.probability for r in main.rows if not r.name.startswith("bad_beat")) == 1


def test_cajun_stud_paytable_a_holds_the_published_mississippi_stud_4_91_percent() -> None:
    """683a.12(a) paytable A is the Mississippi Stud paytable row for row (https://wizardofodds.com/games/mississippi-stud/,
    4.91 %; https://invisioncommunity.co.uk/house-edge-risk-odds-mississippi-stud-poker, "4.91%"), and 683a.11(b)-(g)
    asks the same three decisions on the same cards, as Cajun Stud's own descriptions say ("exactly as in Mississippi
    Stud", https://dealerschoicelab.com/games/cajun-stud). No figure for paytables B or C, nor for Cajun Stud's own
    side bets, was found in the stored sources: tests/par/test_cajun_stud.py pins this release's exact figures and
    the simulation cross-check settles them through 683a's settlement."""
    from controller.par import cajun_stud

    sheet = cajun_stud.analyse_main("A").sheet
    assert round(float(sheet.house_edge) * 100, 2) == 4.91
    assert sheet.house_edge == Fraction(53223, 1082900)


def test_cajun_stud_board_bonus_counts_are_the_published_three_card_counts() -> None:
    """The three-card hands the Board Bonus (683a.6(d)) pays on, as davemillergaming.com/pac/math_pay.html prints them
    over 132,600 ordered deals (six orders of each set): straight flush (a mini-royal included) 288, three of a kind
    312, straight 4,320, flush 6,576, pair 22,464, the rest 98,640."""
    from controller.par import cajun_stud

    rows = {r.name: r.probability * 132_600 for r in cajun_stud.board_bonus("C").rows}
    assert rows["mini_royal"] + rows["straight_flush"] == 288
    counts = [rows[name] for name in ("three_of_a_kind", "straight", "flush", "pair")]
    assert counts == [312, 4_320, 6_576, 22_464]
    assert rows["lose"] == 98_640


CARIBBEAN_RAISE = {"royal_flush": 100, "straight_flush": 50, "four_of_a_kind": 20, "full_house": 7, "flush": 5}
CARIBBEAN_RAISE |= {"straight": 4, "three_of_a_kind": 3, "two_pair": 2, "pair": 1, "high_card": 1}


def test_caribbean_stud_under_684a_analysis_reproduces_the_published_figures() -> None:
    """The 684a counts (inclusion-exclusion, dealer qualified by 684a settlement's own ace-king test) and the 684a
    optimiser with Caribbean Stud's payoffs per Ante: fold -1; beat a qualified dealer 1 + 2 x paytable; lose -3;
    dealer not qualified +1 (Raise pushes). 684a's Rules Submission cannot pay a Raise by a paytable, so the payoffs are
    given directly (chapter_684a_terms.Terms); the counts and the optimiser are what is checked."""
    rules = load_config(ROOT / "configs" / "chapter-684a.toml").game
    assert isinstance(rules, Chapter684aRules) and rules.dealer_qualifies.high_cards == ["A", "K"]
    terms = chapter_684a_terms.Terms(
        (2,),
        Fraction(-1),
        tuple((1 + 2 * Fraction(CARIBBEAN_RAISE[c.name.lower()]),) for c in Five),
        (Fraction(-3),),
        tuple((Fraction(1),) for _ in Five),
    )
    counts = dealer_counts.buckets(chapter_684a_terms.qualify_rank(rules))
    classes = dealer_counts.player_classes()
    hand = hand_class(dealer_counts.ranked().values[classes.rank]).astype("int64")
    # The published threshold strategy, exactly: the same total loss over the same deals (ours x 5 up-card choices).
    threshold = int(np.searchsorted(dealer_counts.ranked().values, pack(int(Five.HIGH_CARD), (14, 13, 11, 8, 3))))
    akj83 = chapter_684a.evaluate(terms, counts, np.where(classes.rank >= threshold, 0, -1))
    assert akj83.house_edge == Fraction(1_059_715_400_580, 19_933_230_517_200)
    assert round(float(akj83.house_edge) * 100, 3) == 5.316
    assert round(float(akj83.house_edge / akj83.average_wager) * 100, 3) == 2.596
    # The optimum without the up card: raise A-K-J-8-3 or better, and a quarter of the A-K-J-8-2 hands.
    choice = chapter_684a.choose(terms, counts, hand)
    best = chapter_684a.evaluate(terms, counts, choice)
    assert Fraction(5224, 100_000) < best.house_edge < akj83.house_edge
    assert round(float(best.house_edge) * 100, 3) == 5.316
    assert chapter_684a.strategy_table(terms, choice).rules == (
        "raise 2x with A-K-J-8-3 high (by rank) or better",
        "A-K-J-8-2 high: raise on 240 of its 1,020 hands (the suits held decide: card removal)",
        "fold the rest",
    )
