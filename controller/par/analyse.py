"""The par sheet of a configured table: the chapter's analysis of its [game] table (controller.config's GameRules)."""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Protocol

from controller.core.settlement import ChapterRules
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.mississippi_stud import paytables as mississippi_stud_paytables
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.par import cajun_stud, chapter_684a, hand_bonus, let_it_ride, mississippi_stud, stud, three_card_prime
from controller.par.sheet import ParSheet, StrategyTable, WagerSheet

GAMES = {
    "655a": "Mississippi Stud",
    "643a": "Let It Ride Poker",
    "679a": "Three Card Prime",
    "683a": "Cajun Stud",
    "684a": "Chapter 684a",
}


@cache
def mississippi_stud_strategy() -> stud.Strategy:
    """The optimal 655a.11 decisions (per Ante unit: the strategy does not depend on the Ante), computed once."""
    return mississippi_stud.analyse_main().strategy


@cache
def let_it_ride_strategy(letter: str) -> let_it_ride.Strategy:
    """The optimal 643a.11(c), (d) decisions under 643a.12(a) paytable `letter`, computed once."""
    return let_it_ride.analyse_main(letter).strategy


@cache
def cajun_stud_strategy(letter: str) -> stud.Strategy:
    """The optimal 683a.11(b), (d), (f) Raise Wagers under 683a.12(a) paytable `letter`, computed once (the same
    shape as Mississippi Stud's: the multiple per card set seen and Antes already wagered)."""
    return cajun_stud.analyse_main(letter).strategy


@cache
def _chapter_684a_strategy(settings: str) -> chapter_684a.Strategy:
    return chapter_684a.analyse_main(Chapter684aRules.model_validate_json(settings)).strategy


def chapter_684a_strategy(rules: Chapter684aRules) -> chapter_684a.Strategy:
    """The optimal 684a.1 Raise or fold under the Rules Submission, computed once per set of rules."""
    return _chapter_684a_strategy(rules.model_dump_json(by_alias=True))


def three_card_prime_strategy(rules: ThreeCardPrimeRules) -> three_card_prime.Strategy:
    """The optimal 679a.7(d)(1) play or fold under the Rules Submission's ranking and odds, computed once per set of
    rules (the sheet's main game, three_card_prime.main_game)."""
    return three_card_prime.main_game(rules).strategy


Strategy = stud.Strategy | let_it_ride.Strategy | three_card_prime.Strategy | chapter_684a.Strategy


def optimal_strategy(rules: ChapterRules) -> Strategy | None:
    """The optimal strategy of the configured main game, as data a simulated player follows; None for a chapter this
    release has no strategy for."""
    if isinstance(rules, MississippiStudRules):
        return mississippi_stud_strategy()
    if isinstance(rules, LetItRideRules):
        return let_it_ride_strategy(rules.let_it_ride_paytable)
    if isinstance(rules, CajunStudRules):
        return cajun_stud_strategy(rules.ante_paytable)
    if isinstance(rules, ThreeCardPrimeRules):
        return three_card_prime_strategy(rules)
    if isinstance(rules, Chapter684aRules):
        return chapter_684a_strategy(rules)
    return None


def software() -> dict[str, str]:
    """The version and a SHA-256 digest of the analysis code (controller/par and the paytables it reads), which a
    lab files with the figures so that a sheet can be tied to the code that computed it."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(
        [*root.glob("*.py"), *root.parent.glob("games/*/paytables.py"), root.parent / "core" / "rankings.py"]
    ):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    try:
        release = version("tablectl")
    except PackageNotFoundError:
        release = "unknown"
    return {"tablectl": release, "analysis_sha256": digest.hexdigest()}


class _MainGame(Protocol):
    """What every chapter's main-game analysis gives the sheet."""

    @property
    def sheet(self) -> WagerSheet: ...

    @property
    def strategy_tables(self) -> tuple[StrategyTable, ...]: ...


def _analysed(table_id: str, chapter: str, main: _MainGame, side: list[WagerSheet], missing: list[str]) -> ParSheet:
    return ParSheet(table_id, chapter, GAMES[chapter], (main.sheet, *side), main.strategy_tables, tuple(missing))


def meter_levels(rules: ChapterRules) -> tuple[str, ...]:
    """The progressive meters the par sheet of `rules` is evaluated at (what `tablectl par --meter LEVEL=CENTS` may
    name), without analysing anything: the levels of 655a.12(c)(1)'s configured paytable and the Five Card Hand
    Bonus meter (655a.12(e)); 643a's Three-Card and Five-Card Progressive meters (643a.12(d), (e)) and its Five
    Card Hand Bonus meter (643a.12(f)(4)). The other chapters' sheets have no meter."""
    levels: list[str] = []
    if isinstance(rules, MississippiStudRules):
        if rules.progressive_paytable:
            levels += mississippi_stud_paytables.PROGRESSIVE_METERS[rules.progressive_paytable]
        if rules.five_card_hand_bonus:
            levels.append(hand_bonus.LEVEL)
    elif isinstance(rules, LetItRideRules):
        if rules.three_card_progressive and rules.three_card_progressive_paytable:
            levels.append("three_card_progressive")
        if rules.five_card_progressive:
            levels.append("five_card_progressive")
        if rules.five_card_hand_bonus:
            levels.append(hand_bonus.LEVEL)
    return tuple(levels)


def par_sheet(table_id: str, rules: ChapterRules, meters: dict[str, int] | None = None, others: int = 0) -> ParSheet:
    """Every wager the configuration offers, analysed exactly where this release can; `not_analysed` says the rest."""
    started = time.perf_counter()
    meters = meters or {}
    chapter = rules.chapter
    if isinstance(rules, MississippiStudRules):
        sheet = _analysed(table_id, chapter, *mississippi_stud.analyse(rules, meters, others))
    elif isinstance(rules, LetItRideRules):
        sheet = _analysed(table_id, chapter, *let_it_ride.analyse(rules, meters, others))
    elif isinstance(rules, ThreeCardPrimeRules):
        sheet = _analysed(table_id, chapter, *three_card_prime.analyse(rules))
    elif isinstance(rules, CajunStudRules):
        sheet = _analysed(table_id, chapter, *cajun_stud.analyse(rules))
    elif isinstance(rules, Chapter684aRules):
        sheet = _analysed(table_id, chapter, *chapter_684a.analyse(rules))
    else:
        sheet = ParSheet(
            table_id,
            chapter,
            GAMES.get(chapter, chapter),
            (),
            (),
            (
                f"chapter {chapter}: no exact analysis in this release (655a, 643a, 679a, 683a and 684a have one); "
                "the paytables configured are listed by `tablectl rules`",
            ),
        )
    return replace(sheet, software=software(), seconds=time.perf_counter() - started)
