"""A chapter's rules as its example configuration submits them (the [game] table of a file in configs/), with fields
changed or left out: the chapters' tests read them (tests/games/test_three_card_prime.py, test_chapter_684a.py), and
so does the check that 679a's odds take ASCII digits only (tests/floor/test_config_digits.py). Shared here, so that
no test module imports another or keeps its own copy."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
R = TypeVar("R", bound=BaseModel)


def submitted_game(config: Path) -> dict[str, Any]:
    with config.open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)["game"]
    return data


def submitted_rules(model: type[R], config: Path, **kw: Any) -> R:
    """The example's rules with each keyword's field set to its value, or left out where the value is None."""
    data = submitted_game(config)
    for k, v in kw.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    return model.model_validate(data)
