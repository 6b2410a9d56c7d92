"""The [game] table of a table config: the chapter's options, validated by that chapter's rules model from the
registry (controller.games.registry), chosen by `chapter`."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetPydanticSchema, TypeAdapter
from pydantic_core import CoreSchema, PydanticKnownError, core_schema

from controller.core.settlement import ChapterRules
from controller.games import registry


def _game_schema(_source: Any, _handler: GetCoreSchemaHandler) -> CoreSchema:
    # Dispatched on `chapter` first, so only the configured chapter's package is imported (a discriminated union
    # would import every chapter to build its schema: a third of the daemon's start, issue 19). The errors are the
    # union's: its tag errors (describe_errors names the chapters) and the chapter's model's, below `game`.
    return core_schema.no_info_plain_validator_function(
        _validate_game, serialization=core_schema.simple_ser_schema("any")
    )


def _validate_game(value: object) -> ChapterRules:
    if isinstance(value, ChapterRules):
        return value
    if not isinstance(value, Mapping):
        raise PydanticKnownError("model_attributes_type")
    expected = ", ".join(repr(c) for c in registry.chapters())
    if "chapter" not in value:
        raise PydanticKnownError("union_tag_not_found", {"discriminator": "'chapter'"})
    tag = value["chapter"]
    chapter = registry.find(tag) if isinstance(tag, str) else None
    if chapter is None:
        raise PydanticKnownError(
            "union_tag_invalid", {"discriminator": "'chapter'", "tag": str(tag), "expected_tags": expected}
        )
    # Validated as {chapter: [game]} so that a ValidationError raised here becomes the chapter model's own errors
    # located at game.<chapter>.<field>, where the union put them (describe_errors finds the model by that tag).
    return _rules_adapter(chapter.rules_type).validate_python({tag: value})[tag]


@functools.cache
def _rules_adapter(rules_type: type[ChapterRules]) -> TypeAdapter[dict[str, ChapterRules]]:
    return TypeAdapter(dict[str, rules_type])  # type: ignore[valid-type]


# The [game] table: the chapter's options, chosen by `chapter`, each chapter's rules model from the registry.
GameRules = Annotated[ChapterRules, GetPydanticSchema(_game_schema)]
