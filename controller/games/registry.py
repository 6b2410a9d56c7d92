"""Which chapters the live round engine can run: each chapter's rules model and spec, by chapter code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

from controller.core.settlement import ChapterRules
from controller.engine.round import RoundEngine
from controller.engine.spec import ChapterSpec, DealingMethod, RulesCo, TableOptions
from controller.games.cajun_stud import CajunStudRules
from controller.games.cajun_stud_spec import CajunStudSpec
from controller.games.chapter_684a import Chapter684aRules
from controller.games.chapter_684a_spec import Chapter684aSpec
from controller.games.let_it_ride import LetItRideRules
from controller.games.let_it_ride_spec import LetItRideSpec
from controller.games.mississippi_stud import MississippiStudRules
from controller.games.mississippi_stud_spec import MississippiStudSpec
from controller.games.three_card_prime import ThreeCardPrimeRules
from controller.games.three_card_prime_spec import ThreeCardPrimeSpec


@dataclass(frozen=True, slots=True)
class Chapter(Generic[RulesCo]):
    """One chapter: its rules model (the config's [game]) and what it tells the round engine."""

    rules_type: type[RulesCo]
    spec: ChapterSpec[RulesCo]

    def engine(
        self, rules: ChapterRules, method: DealingMethod | None = None, options: TableOptions | None = None
    ) -> RoundEngine[RulesCo]:
        """The round engine for these rules (the config's method unless `method` is given); ValueError for a
        dealing method or progressive figures the chapter does not allow."""
        if not isinstance(rules, self.rules_type):
            raise TypeError(f"{type(rules).__name__} are not chapter {self.spec.chapter}'s rules")
        return RoundEngine(self.spec, rules, method or self.spec.dealing_method(rules), options)


# Each built apart from the others so that it is checked against its own rules model; the registry then holds
# them all as Chapter[ChapterRules].
_LET_IT_RIDE = Chapter(LetItRideRules, LetItRideSpec())
_MISSISSIPPI_STUD = Chapter(MississippiStudRules, MississippiStudSpec())
_THREE_CARD_PRIME = Chapter(ThreeCardPrimeRules, ThreeCardPrimeSpec())
_CAJUN_STUD = Chapter(CajunStudRules, CajunStudSpec())
_CHAPTER_684A = Chapter(Chapter684aRules, Chapter684aSpec())
REGISTRY: dict[str, Chapter[ChapterRules]] = {
    c.spec.chapter: c for c in (_LET_IT_RIDE, _MISSISSIPPI_STUD, _THREE_CARD_PRIME, _CAJUN_STUD, _CHAPTER_684A)
}
SPECS: dict[str, ChapterSpec[ChapterRules]] = {code: c.spec for code, c in REGISTRY.items()}

# Every chapter a table config may name.
CHAPTERS = tuple(sorted(REGISTRY))


def spec_for(rules: ChapterRules) -> ChapterSpec[ChapterRules] | None:
    """The chapter's spec for these rules, or None when its round engine is not built yet."""
    return SPECS.get(rules.chapter)


def dealing_method(rules: ChapterRules) -> DealingMethod:
    """The configured dealing method, else the only one the chapter's published text allows."""
    spec = spec_for(rules)
    return spec.dealing_method(rules) if spec is not None else "automated_shoe"
