"""The chapters this controller knows, by chapter code: the one door from the rest of the controller to a chapter.

Each chapter is one package under controller/games/ whose `entry` module builds its `Chapter` (rules model, spec,
round record and settlement, paytables, meters, config checks, demo players); adding a chapter is that package and a
loader of its entry in _BUILT_IN below. Nothing outside controller/games/ imports a chapter's package (an
import-linter contract in pyproject.toml keeps it so): the config's [game] table, `tablectl settle`, the birth
message, the meters and the demo all reach a chapter through these functions, with the config's rules of whatever
chapter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from controller.core.settlement import ChapterRules, RoundRecord
from controller.engine.spec import ChapterSpec, DealingMethod
from controller.games.chapter import Chapter, Settlement
from controller.progressive.parameters import ProgressiveOptions, TableProgressives

AnyChapter = Chapter[ChapterRules, RoundRecord]


# Every chapter built in, by code, each a function importing its package's entry. A table runs one chapter: importing
# only that one is about a third of the daemon's start (issue 19), so a chapter's package loads the first time it is
# asked for (a config naming it, `tablectl rules`, a test going through them all), never at import.
def _let_it_ride() -> AnyChapter:
    from controller.games.let_it_ride.entry import ENTRY

    return ENTRY


def _mississippi_stud() -> AnyChapter:
    from controller.games.mississippi_stud.entry import ENTRY

    return ENTRY


def _three_card_prime() -> AnyChapter:
    from controller.games.three_card_prime.entry import ENTRY

    return ENTRY


def _cajun_stud() -> AnyChapter:
    from controller.games.cajun_stud.entry import ENTRY

    return ENTRY


def _chapter_684a() -> AnyChapter:
    from controller.games.chapter_684a.entry import ENTRY

    return ENTRY


_BUILT_IN: dict[str, Callable[[], AnyChapter]] = {
    "643a": _let_it_ride,
    "655a": _mississippi_stud,
    "679a": _three_card_prime,
    "683a": _cajun_stud,
    "684a": _chapter_684a,
}

# The chapters loaded so far, and the built-in ones not loaded yet: together every chapter a config may name.
_LOADED: dict[str, AnyChapter] = {}
_PENDING: dict[str, Callable[[], AnyChapter]] = dict(_BUILT_IN)
# Called after every change of the registry (a chapter registered, loaded or removed).
_LISTENERS: list[Callable[[], None]] = []


def _load(code: str) -> AnyChapter | None:
    found = _LOADED.get(code)
    if found is not None:
        return found
    loader = _PENDING.get(code)
    if loader is None:
        return None
    chapter = loader()
    if chapter.code != code:
        raise ValueError(f"the built-in entry listed as chapter {code} is chapter {chapter.code}: correct _BUILT_IN")
    del _PENDING[code]
    _LOADED[code] = chapter
    _changed()
    return chapter


class _Chapters(Mapping[str, AnyChapter]):
    """Chapter code -> its registry entry, the chapter's package imported on first use."""

    def __getitem__(self, code: str) -> AnyChapter:
        found = _load(code)
        if found is None:
            raise KeyError(code)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(chapters())

    def __len__(self) -> int:
        return len(_LOADED) + len(_PENDING)

    def __contains__(self, code: object) -> bool:
        return code in _LOADED or code in _PENDING


class _Specs(Mapping[str, ChapterSpec[ChapterRules]]):
    """Chapter code -> its round's spec (the registry's entry's), loaded as REGISTRY loads."""

    def __getitem__(self, code: str) -> ChapterSpec[ChapterRules]:
        return REGISTRY[code].spec

    def __iter__(self) -> Iterator[str]:
        return iter(chapters())

    def __len__(self) -> int:
        return len(REGISTRY)

    def __contains__(self, code: object) -> bool:
        return code in REGISTRY


REGISTRY: Mapping[str, AnyChapter] = _Chapters()
SPECS: Mapping[str, ChapterSpec[ChapterRules]] = _Specs()


def register(chapter: AnyChapter) -> None:
    """Add a chapter (ValueError if its code is taken); whatever is built from the registry is built again."""
    if chapter.code in REGISTRY:
        raise ValueError(f"chapter {chapter.code} is registered twice: list each chapter's entry once")
    _LOADED[chapter.code] = chapter
    _changed()


def unregister(code: str) -> None:
    """Remove a chapter (a test's own, once it is done with it)."""
    if code not in REGISTRY:
        raise KeyError(code)
    _LOADED.pop(code, None)
    _PENDING.pop(code, None)
    _changed()


def when_changed(listener: Callable[[], None]) -> None:
    """Call `listener` after every change of the registry."""
    _LISTENERS.append(listener)


def _changed() -> None:
    for listener in _LISTENERS:
        listener()


# Every chapter a table config may name, as built in.
CHAPTERS = tuple(sorted(_BUILT_IN))


def chapters() -> tuple[str, ...]:
    """Every chapter a table config may name now (a test may have registered its own), none of them imported."""
    return tuple(sorted([*_LOADED, *_PENDING]))


def find(code: str) -> AnyChapter | None:
    """The chapter with this code, its package imported now if it was not yet; None for a code no chapter has."""
    return _load(code)


def rules_types() -> tuple[type[ChapterRules], ...]:
    """Each chapter's rules model, the [game] table of its configs (every chapter's package imported)."""
    return tuple(REGISTRY[code].rules_type for code in chapters())


def loaded_rules_types() -> tuple[type[ChapterRules], ...]:
    """The rules models of the chapters imported so far (a config's own chapter is, once it was validated)."""
    return tuple(c.rules_type for c in _LOADED.values())


def chapter_of(rules: ChapterRules) -> AnyChapter:
    """The registry's entry for these rules' chapter; KeyError naming the chapters for one it does not know."""
    found = _load(rules.chapter)
    if found is None:
        raise KeyError(f"chapter {rules.chapter} is not registered; the chapters are {', '.join(chapters())}")
    return found


def spec_for(rules: ChapterRules) -> ChapterSpec[ChapterRules] | None:
    """The chapter's spec for these rules, or None when its chapter is not registered."""
    found = _load(rules.chapter)
    return found.spec if found is not None else None


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
