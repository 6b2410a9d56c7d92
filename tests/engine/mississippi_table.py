"""A 655a table on the pure engine (tests/engine/conftest.py's table_with), opened at T0 with the given table
options: the deck-life tests play it (tests/engine/test_deck_life.py), and the floor's report test plays it to
archive what it journals (tests/floor/test_report_abandoned.py). Shared here, so that neither imports the other."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Unpack

from controller.engine.inputs import Tick
from controller.engine.spec import DealingMethod, TableOptions
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from tests.engine.conftest import OptionChanges, PureTable, table_with

T0 = datetime(2025, 3, 1, 18, 0, tzinfo=UTC)
RULES = MississippiStudRules.model_validate(
    {"chapter": "655a", "three_card_bonus_paytable": "A", "six_card_bonus_paytable": "C"}
)


def make(
    method: DealingMethod = "automated_shoe",
    spec: MississippiStudSpec | None = None,
    **opts: Unpack[OptionChanges],
) -> PureTable:
    return table_with(spec or MississippiStudSpec(), RULES, method, options=TableOptions(**opts), start=Tick(T0))
