"""The example configs load, and bad configs are refused with errors that name the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import CHAPTERS, ConfigError, demo_config, load_config, parse_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_example_configs_load(path: Path) -> None:
    assert load_config(path).game.chapter in CHAPTERS


def test_demo_toml_is_the_builtin_demo_table() -> None:
    assert load_config(CONFIGS / "demo.toml") == demo_config()


def test_errors_name_field_problem_and_fix() -> None:
    data = demo_config().model_dump()
    data["game"]["seats"] = 7
    data["game"]["three_card_bonus_paytable"] = "Z"
    data["game"]["six_card_bonus_pay_table"] = "C"
    with pytest.raises(ConfigError) as err:
        parse_config(data, "t.toml")
    text = str(err.value)
    assert "game.seats: Input should be less than or equal to 6" in text
    assert "game.three_card_bonus_paytable" in text and "'A', 'B', 'C' or 'D'" in text
    assert "game.six_card_bonus_pay_table: is not a known setting: remove it or check its spelling" in text


def test_each_seat_needs_one_wager_station() -> None:
    data = demo_config().model_dump()
    data["devices"]["wager_stations"][5]["seat"] = 5
    expected = r"one station per seat \[1, 2, 3, 4, 5, 6\].*found seats \[1, 2, 3, 4, 5, 5\]"
    with pytest.raises(ConfigError, match=expected):
        parse_config(data)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("table_id = \n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(bad)
