"""The table procedure as [game] settings in every chapter (controller.games.procedure): stub counts without a counting
shuffler where the chapter's text has them (643a.8(f), 655a.8(f), 683a.8(e), 679a.9(d), 684a.10(d)), the dealing
method and its fallback (683a.8, 683a.9, 683a.10, .13(g)), decks and deck changes, each reaching the round engine.
"""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from controller.config.game import GameRules
from controller.core.settlement import ChapterRules
from controller.games.registry import SPECS
from tests.engine.conftest import example_rules


def with_settings(chapter: str, **settings: object) -> ChapterRules:
    game = {**example_rules(chapter).model_dump(by_alias=True, exclude_none=True), **settings}
    rules: ChapterRules = TypeAdapter(GameRules).validate_python(game)
    return rules


@pytest.mark.parametrize("chapter", ["643a", "655a", "683a", "679a", "684a"])
def test_every_chapter_takes_the_stub_count_settings(chapter: str) -> None:
    """643a.8(f)-(h), 655a.8(f)-(h), 683a.8(e)-(g), 679a.9(d)-(f), 684a.10(d)-(f): a table whose shuffler does not
    count has its stub counted at least every 5 rounds; the config says how often."""
    rules = with_settings(chapter, shuffler_counts=False, stub_count_every=3)
    options = SPECS[chapter].options(rules)
    assert (options.shuffler_counts, options.stub_count_every) == (False, 3)
    with pytest.raises(ValidationError, match="less than or equal to 5"):
        with_settings(chapter, stub_count_every=6)


@pytest.mark.parametrize("method", ["automated_shoe", "manual_shoe", "hand"])
def test_683a_is_dealt_by_every_method_of_its_text(method: str) -> None:
    """683a.8 manual shoe, 683a.9 hand, 683a.10 automated shoe: the config chooses; the shoe's fallback is the manual
    shoe unless it says otherwise (683a.13(g))."""
    rules = with_settings("683a", dealing_method=method)
    spec = SPECS["683a"]
    assert spec.dealing_method(rules) == method
    assert spec.options(rules).fallback_dealing_method == "manual_shoe"
    assert spec.options(with_settings("683a", fallback_dealing_method=None)).fallback_dealing_method is None


@pytest.mark.parametrize(("chapter", "method", "hours"), [("683a", "hand", 5), ("643a", "manual_shoe", 9)])
def test_a_deck_change_later_than_the_text_allows_is_refused(chapter: str, method: str, hours: float) -> None:
    """683a.3(c)(1), 643a.3(c)(2): four hours dealt by hand, eight from a shoe, at least."""
    with pytest.raises(ValidationError, match=rf"{chapter}\.3\(c\) changes the decks at least every"):
        with_settings(chapter, dealing_method=method, deck_change_hours=hours)


def test_684a_takes_only_the_procedure_its_text_publishes() -> None:
    """684a.10(d): the stub count; 684a.3 (decks) is not available, so two decks are not a 684a setting."""
    with pytest.raises(ValidationError, match="decks"):
        with_settings("684a", decks="two_decks")
