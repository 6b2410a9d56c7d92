"""The chapters this controller knows, by chapter code: the one door from the rest of the controller to a chapter.

Each chapter is one package under controller/games/ whose `entry` module builds its `Chapter` (rules model, spec,
round record and settlement, paytables, meters, config checks, demo players); adding a chapter is that package, its
entry's import and its name in _CHAPTERS below. Nothing outside controller/games/ imports a chapter's package (an
import-linter contract in pyproject.toml keeps it so): the config's [game] union, `tablectl settle`, the birth
message, the meters and the demo all reach a chapter through these functions, with the config's rules of whatever
chapter.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.core.settlement import ChapterRules, RoundRecord
from controller.engine.spec import ChapterSpec, DealingMethod
from controller.games.cajun_stud.entry import ENTRY as CAJUN_STUD
from controller.games.chapter import Chapter, Settlement
from controller.games.chapter_684a.entry import ENTRY as CHAPTER_684A
from controller.games.let_it_ride.entry import ENTRY as LET_IT_RIDE
from controller.games.mississippi_stud.entry import ENTRY as MISSISSIPPI_STUD
from controller.games.three_card_prime.entry import ENTRY as THREE_CARD_PRIME
from controller.progressive.parameters import ProgressiveOptions, TableProgressives

AnyChapter = Chapter[ChapterRules, RoundRecord]

# Every chapter built in, each its package's entry.
_CHAPTERS: tuple[AnyChapter, ...] = (LET_IT_RIDE, MISSISSIPPI_STUD, THREE_CARD_PRIME, CAJUN_STUD, CHAPTER_684A)

REGISTRY: dict[str, AnyChapter] = {}
SPECS: dict[str, ChapterSpec[ChapterRules]] = {}
# Called after every change of the registry: the config's [game] union is built from it (controller.config.table).
_LISTENERS: list[Callable[[], None]] = []


def register(chapter: AnyChapter) -> None:
    """Add a chapter (ValueError if its code is taken); whatever is built from the registry is built again."""
    if chapter.code in REGISTRY:
        raise ValueError(f"chapter {chapter.code} is registered twice: list each chapter's entry once")
    REGISTRY[chapter.code] = chapter
    SPECS[chapter.code] = chapter.spec
    _changed()


def unregister(code: str) -> None:
    """Remove a chapter (a test's own, once it is done with it)."""
    del REGISTRY[code]
    del SPECS[code]
    _changed()


def when_changed(listener: Callable[[], None]) -> None:
    """Call `listener` after every change of the registry."""
    _LISTENERS.append(listener)


def _changed() -> None:
    for listener in _LISTENERS:
        listener()


for _chapter in _CHAPTERS:
    register(_chapter)

# Every chapter a table config may name, as built in.
CHAPTERS = tuple(sorted(REGISTRY))


def chapters() -> tuple[str, ...]:
    """Every chapter a table config may name now (a test may have registered its own)."""
    return tuple(sorted(REGISTRY))


def rules_types() -> tuple[type[ChapterRules], ...]:
    """Each registered chapter's rules model, the [game] table of its configs."""
    return tuple(c.rules_type for c in REGISTRY.values())


def chapter_of(rules: ChapterRules) -> AnyChapter:
    """The registry's entry for these rules' chapter; KeyError naming the chapters for one it does not know."""
    found = REGISTRY.get(rules.chapter)
    if found is None:
        raise KeyError(f"chapter {rules.chapter} is not registered; the chapters are {', '.join(CHAPTERS)}")
    return found


def spec_for(rules: ChapterRules) -> ChapterSpec[ChapterRules] | None:
    """The chapter's spec for these rules, or None when its chapter is not registered."""
    return SPECS.get(rules.chapter)


def dealing_method(rules: ChapterRules) -> DealingMethod:
    """The configured dealing method, else the only one the chapter's published text allows."""
    spec = spec_for(rules)
    return spec.dealing_method(rules) if spec is not None else "automated_shoe"


def settle_record(rules: ChapterRules, data: dict[str, object]) -> Settlement:
    """Settle a round record (JSON data) under these rules, by their chapter's settlement (Chapter.settle)."""
    return chapter_of(rules).settle(rules, data)


def table_progressives(rules: ChapterRules, options: ProgressiveOptions | None = None) -> TableProgressives:
    """The meters of a table from its chapter rules (the config's [game]) and its progressive options: none for a
    chapter without progressive wagers; ParameterError for figures the chapter does not allow or an option naming a
    meter the table lacks."""
    return chapter_of(rules).progressives(rules, options)
