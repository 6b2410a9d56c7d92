"""Configuration errors as an operator reads them: the field, what is wrong, and the fix."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from controller.core.settlement import ChapterRules
from controller.games.registry import chapters, loaded_rules_types


class ConfigError(ValueError):
    """A configuration that cannot be used, with every problem named."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a config: where (a dotted field path), what, and how to fix it."""

    field: str
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.problem}" + (f": {self.fix}" if self.fix else "")


# Fixes for pydantic's error types whose message says what is wrong but not what to write instead.
_TYPE_FIXES = {
    "int_parsing": "write a whole number without quotes",
    "int_type": "write a whole number without quotes",
    "int_from_float": "write a whole number (amounts are in cents)",
    "float_parsing": "write a number without quotes",
    "float_type": "write a number without quotes",
    "bool_parsing": "write true or false, without quotes",
    "bool_type": "write true or false, without quotes",
    "string_type": "write text in double quotes",
    "list_type": "write a list in square brackets, e.g. [1, 2, 3]",
    "dict_type": "write a table: a [section] or an inline { key = value }",
    "model_type": "write a table: a [section] or an inline { key = value }",
    "model_attributes_type": "write a table: a [section] or an inline { key = value }",
    "literal_error": "use one of those values",
    "enum": "use one of those values",
    "string_too_short": "give a value that is not empty",
}

_PATTERN_FIXES = {
    "table_id": "use letters, digits, - and _ only, e.g. ms-table-01 (it names the table's MQTT topics and journal)",
}

# Fixes for checks whose message says what is wrong, by field.
_VALUE_FIXES = {
    "mqtt.prefix": "use topic levels of letters, digits, - and _ joined by single slashes, e.g. tablectl or "
    "casino-a/floor-2",
}


def _path(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _models_in(tp: Any) -> list[type[BaseModel]]:
    """The pydantic models a field annotation can hold (through Optional, unions, Annotated and lists)."""
    if tp is ChapterRules:
        return list(loaded_rules_types())  # the [game] table: the configured chapter's model is loaded by now
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [m for arg in get_args(tp) for m in _models_in(arg)]


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model whose fields are at `loc` (a pydantic error location below `model`), if one can tell."""
    candidates = [model]
    for part in loc:
        if isinstance(part, int):
            continue  # a list index: the item models were already taken
        tagged = [
            m
            for m in candidates
            if "chapter" in m.model_fields and part in get_args(m.model_fields["chapter"].annotation)
        ]
        if tagged:  # the discriminated union puts its tag (the chapter) in the location
            candidates = tagged
            continue
        owner = next((m for m in candidates if part in m.model_fields), None)
        if owner is None:
            return None
        candidates = _models_in(owner.model_fields[part].annotation)
    return candidates[0] if len(candidates) == 1 else None


def _got(value: Any) -> str:
    return "" if isinstance(value, dict | list) else f" (got {value!r})"


def config_problems(
    err: ValidationError, *, prefix: Sequence[str | int] = (), model: type[BaseModel] | None = None
) -> list[Problem]:
    """Every validation error as field, problem and fix. `model` (the validated model) lets a misspelt key
    be matched to the setting it was probably meant to be; `prefix` is where the validated data sits."""
    problems = []
    for e in err.errors():
        loc = list(e["loc"])
        known: list[str] = []
        if e["type"] == "extra_forbidden" and model is not None:
            parent = _model_at(model, loc[:-1])
            known = list(parent.model_fields) if parent is not None else []
        if len(loc) > 1 and loc[0] == "game" and isinstance(loc[1], str) and loc[1] in chapters():
            del loc[1]  # the union's tag (the chapter) says nothing the operator wrote
        where = _path([*prefix, *loc])
        msg = e["msg"].removeprefix("Value error, ")
        ctx = e.get("ctx") or {}
        fix = _TYPE_FIXES.get(e["type"], "")
        if e["type"] in ("union_tag_not_found", "union_tag_invalid"):
            where = f"{where}.chapter"
            got = _got(ctx["tag"]) if e["type"] == "union_tag_invalid" and "tag" in ctx else ""
            msg = f"must name the game's chapter, one of {', '.join(chapters())}{got}"
            fix = ("set it in [game] to one of those" if got else "add it to [game]") + ', e.g. chapter = "655a"'
        elif e["type"] == "missing":
            msg, fix = "is required but missing", "add it"
        elif e["type"] == "extra_forbidden":
            msg, fix = "is not a known setting", "remove it or check its spelling"
            name = str(loc[-1])
            import difflib  # a config with a mistake only: a table's start does not load it (issue 19)

            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            if close:
                fix += f" (did you mean {close[0]}?)"
        elif e["type"] in ("less_than_equal", "less_than", "greater_than_equal", "greater_than"):
            msg += _got(e["input"])
            fix = {
                "less_than_equal": "give at most {le}",
                "less_than": "give less than {lt}",
                "greater_than_equal": "give at least {ge}",
                "greater_than": "give more than {gt}",
            }[e["type"]]
            fix = fix.format(**ctx)
        elif e["type"] == "string_too_long":
            msg += f" (got {len(e['input'])})"
            fix = f"shorten it to at most {ctx.get('max_length')} characters"
        elif e["type"] == "string_pattern_mismatch":
            msg += _got(e["input"])
            fix = _PATTERN_FIXES.get(where, f"use only the characters the pattern allows: {ctx.get('pattern')}")
        elif fix:
            msg += _got(e["input"])
        elif e["type"] == "value_error" and where in _VALUE_FIXES:
            fix = _VALUE_FIXES[where]
        elif e["type"] == "value_error":
            # A check across fields reports at the model; its message names the field it is about.
            named = re.match(r"[a-z_]+(?:\.[a-z_]+)+", msg)
            if named and (not loc or named.group().startswith(f"{where}.")):
                where = named.group()
        problems.append(Problem(where, msg, fix))
    return problems


def describe_errors(err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line per problem: where, what is wrong, and the fix when there is an obvious one."""
    return "\n".join(f"  {p}" for p in config_problems(err, model=model))
