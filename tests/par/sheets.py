"""The par sheets of the shipped table configs, each analysed once per process for the modules that read them.

An exact analysis is deterministic and takes seconds (679a's 5 s), and tests/par/test_cli.py, test_crosscheck.py and
test_published.py read the same configs' sheets: those modules share the xdist group `par_sheets`, so one worker
analyses each game once (tests/e2e/test_optimal_players_e2e.py joins them: its strategies read the same tables).
What `tablectl par` prints is still analysed afresh by its own tests (they run the command line)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from controller.config.table import TableConfig, load_config
from controller.par.analyse import par_sheet
from controller.par.sheet import ParSheet

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


_ANALYSED: dict[str, ParSheet] = {}  # by the [game] table, as JSON


def sheet_of(path: Path) -> tuple[TableConfig, ParSheet]:
    """configs/NAME.toml and the par sheet of its table: analysed once per game (configs that differ in their devices
    alone, as let-it-ride.toml and let-it-ride-wager-bus.toml, share it), under this config's table id."""
    config = load_config(path)
    game = config.game.model_dump_json(by_alias=True)
    if game not in _ANALYSED:
        _ANALYSED[game] = par_sheet(config.table_id, config.game)
    return config, dataclasses.replace(_ANALYSED[game], table_id=config.table_id)
