"""679a Three Card Prime's rules as the example configuration submits them (configs/three-card-prime.toml), with
fields changed or left out: the chapter's tests read them (tests/games/test_three_card_prime.py), and so does the
check that the rules' odds take ASCII digits only (tests/floor/test_config_digits.py). Shared here, so that neither
imports the other."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from controller.games.three_card_prime.rules import ThreeCardPrimeRules

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "three-card-prime.toml"


def game() -> dict[str, Any]:
    with CONFIG.open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)["game"]
    return data


def rules(**kw: Any) -> ThreeCardPrimeRules:
    """The example's rules with each keyword's field set to its value, or left out where the value is None."""
    data = game()
    for k, v in kw.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    return ThreeCardPrimeRules.model_validate(data)
