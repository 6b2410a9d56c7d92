"""Which chapters the live round engine can run, and their specs."""

from __future__ import annotations

from typing import Any

from controller.engine.spec import ChapterSpec, DealingMethod
from controller.games.cajun_stud_spec import CajunStudSpec
from controller.games.chapter_684a_spec import Chapter684aSpec
from controller.games.let_it_ride_spec import LetItRideSpec
from controller.games.mississippi_stud_spec import MississippiStudSpec
from controller.games.three_card_prime_spec import ThreeCardPrimeSpec

SPECS: dict[str, ChapterSpec] = {
    "643a": LetItRideSpec(),
    "655a": MississippiStudSpec(),
    "679a": ThreeCardPrimeSpec(),
    "683a": CajunStudSpec(),
    "684a": Chapter684aSpec(),
}


def spec_for(rules: Any) -> ChapterSpec | None:
    """The chapter's spec for these rules, or None when its round engine is not built yet."""
    return SPECS.get(getattr(rules, "chapter", ""))


def dealing_method(rules: Any) -> DealingMethod:
    """The configured dealing method, else the only one the chapter's published text allows."""
    configured: DealingMethod | None = getattr(rules, "dealing_method", None)
    if configured:
        return configured
    supported: tuple[DealingMethod, ...] = getattr(spec_for(rules), "supported_methods", ("automated_shoe",))
    return supported[0]
