"""The example configs load, and bad configs are refused with errors that name the field and the fix."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import annotated_types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.config.errors import ConfigError
from controller.config.table import demo_config, load_config, parse_config
from controller.games.registry import CHAPTERS

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


# The table configs: those with a [game] table (configs/ also holds the floor's, checked in tests/floor).
@pytest.mark.parametrize(
    "path", sorted(p for p in CONFIGS.glob("*.toml") if "game" in tomllib.loads(p.read_text())), ids=lambda p: p.name
)
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


# -- bounded reads, the MQTT prefix, money bounds (issue 12, item 6) --------------------------------------------


def test_files_are_read_only_when_regular_and_within_their_bound(tmp_path: Path) -> None:
    from controller.config.files import FileRefused, read_bounded

    small = tmp_path / "small"
    small.write_bytes(b"x" * 100)
    assert read_bounded(small, 100) == b"x" * 100
    with pytest.raises(FileRefused, match=r"small is 100 bytes, more than the 99 such a file can be"):
        read_bounded(small, 99)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a plain open() would wait for one forever
    with pytest.raises(FileRefused, match=r"fifo is a FIFO \(named pipe\), not a regular file"):
        read_bounded(fifo, 100)
    with pytest.raises(FileRefused, match=r"/dev/zero is a character device, not a regular file"):
        read_bounded("/dev/zero", 100)
    with pytest.raises(FileRefused, match=r"is a directory"):
        read_bounded(tmp_path, 100)
    with pytest.raises(FileRefused, match=r"nope does not exist"):
        read_bounded(tmp_path / "nope", 100)


def test_the_daemons_own_password_read_refuses_what_would_block_or_never_end(tmp_path: Path) -> None:
    # The publisher and the command listener read the password at each (re)connect: a file swapped for a FIFO
    # or /dev/zero after check-config must not freeze the daemon or fill its memory (issue 12, item 1).
    from controller.mqtt.connection import read_secret

    fifo = tmp_path / "mqtt-password"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=rf"mqtt.password_file {fifo} is a FIFO"):
        read_secret(str(fifo))
    with pytest.raises(ValueError, match=r"mqtt.password_file /dev/zero is a character device"):
        read_secret("/dev/zero")
    big = tmp_path / "big"
    big.write_text("p" * 5000)
    with pytest.raises(ValueError, match=r"more than the 4,096 such a file can be"):
        read_secret(str(big))
    good = tmp_path / "good"
    good.write_text("s3cret\nignored\n")
    assert read_secret(str(good)) == "s3cret"


def test_load_config_names_what_is_wrong_with_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read config /dev/zero: is a character device"):
        load_config("/dev/zero")
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes((CONFIGS / "demo.toml").read_bytes().replace(b"demo-ms-1", b"d\xe9mo"))
    with pytest.raises(ConfigError, match=r"latin1.toml is not UTF-8 text \(byte 0xe9 at offset \d+\)"):
        load_config(latin1)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"nested too deeply to be parsed"):
        load_config(deep)


LEVEL = st.text(alphabet="abcXYZ09_-", min_size=1, max_size=6)


@given(prefix=st.text(alphabet="ab/+#$ -_.", max_size=12) | st.lists(LEVEL, min_size=1, max_size=4).map("/".join))
def test_an_accepted_prefix_makes_topics_of_plain_nonempty_levels(prefix: str) -> None:
    from pydantic import ValidationError

    from controller.config.table import MqttSettings, prefix_problem
    from controller.mqtt.contract import Topics

    try:
        MqttSettings(prefix=prefix)
    except ValidationError as err:
        assert prefix_problem(prefix) or "at most" in str(err)
        return
    levels = Topics(prefix, "t1").event.split("/")
    assert all(levels) and not any(c in "+#$ ." for level in levels for c in level)


def test_money_fields_have_upper_bounds_that_say_why() -> None:
    from controller.core.money import MAX_AMOUNT_CENTS, MAX_WAGER_CENTS
    from controller.games.registry import rules_types

    for model in rules_types():
        for name, field in model.model_fields.items():
            if not name.endswith("_cents") or name.endswith("wagers_cents"):
                continue  # the progressive wager sizes are a fixed choice (Literal[100, 500])
            bound = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
            assert bound in (MAX_WAGER_CENTS, MAX_AMOUNT_CENTS), (model.__name__, name)
            assert f"at most {bound}" in (field.description or ""), (model.__name__, name)
