"""The example configs load, and bad configs are refused with errors that name the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config.errors import ConfigError
from controller.config.table import demo_config, load_config, parse_config
from controller.games.registry import CHAPTERS

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


def test_a_table_with_a_wager_bus_a_sign_and_terminals(tmp_path: Path) -> None:
    import asyncio

    from controller.cli.devices import probe
    from controller.shell.runner import build_devices

    data = demo_config().model_dump()
    data["devices"]["wager_stations"] = []
    data["devices"]["wager_bus"] = {
        "driver": "reference-wager-bus",
        "port": str(tmp_path / "no-bus"),
        "seats": [1, 2, 3, 4, 5, 6],
        "heartbeat_interval": 0,
    }
    data["devices"]["progressive_sign"] = {"driver": "reference-progressive-sign", "port": str(tmp_path / "no-sign")}
    data["devices"]["wager_terminals"] = [
        {"driver": "reference-wager-terminal", "port": str(tmp_path / "no-t1"), "seat": 1}
    ]
    config = parse_config(data)
    devices = build_devices(config)
    assert {"progressive_sign", "wager_terminal_1", "wager_station_6"} <= set(devices)
    report = {r["device"]: r for r in asyncio.run(probe(config))}
    assert report["wager_station_3"]["driver"] == "reference-wager-bus"
    assert report["progressive_sign"]["state"] == "offline" and "no-sign" in report["progressive_sign"]["reason"]
