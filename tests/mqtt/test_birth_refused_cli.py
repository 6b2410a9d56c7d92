"""A config whose birth passes the broker's packet limit is refused before the table opens, by every verb that would
publish it (docs/mqtt.md, "Too large for the broker"): `tablectl run` (through the checks of check-config), `tablectl
demo` (and its `--floor` and `--linked`, for each table they build) and `tablectl simulate --broker`, each as the
subprocess a person starts, with the same error naming the birth's size, the limit and the fix. The refusal comes
before any device, journal or broker is touched: no journal file appears, and the broker named is a closed port
(nothing here needs one)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli.verb import EXIT_USAGE
from controller.config.table import load_config
from controller.mqtt.birth import build_birth
from controller.mqtt.contract import Topics
from controller.mqtt.limits import publish_size
from tests.broker import free_port

REPO = Path(__file__).resolve().parents[2]
LIMIT = 4096  # the least [mqtt] max_packet_size takes; the demo table's birth is 3.3 KB with "simulated" ports
# A serial adapter's udev path, as long as some are: ten of them make the demo table's birth some 5 KB.
PORT = "/dev/serial/by-path/pci-0000:00:14.0-usb-0:1.4.2.3.1:1.0-port0-" + "x" * 140


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The shipped demo table, its devices on long port paths and its broker's limit at the least it takes: its birth
    is over it (`demo` and `simulate` put their simulators on the ports, whatever the config names)."""
    text = (REPO / "configs" / "demo.toml").read_text()
    text = text.replace('prefix = "tablectl"\n', f'prefix = "tablectl"\nmax_packet_size = {LIMIT}\n', 1)
    assert f"max_packet_size = {LIMIT}" in text and text.count('port = "simulated"') == 10
    text = text.replace('port = "simulated"', f'port = "{PORT}"')
    path = tmp_path / "demo-small-broker.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "verb",
    [
        ["run"],
        ["demo", "--rounds", "1", "--quiet", "--seed", "1"],
        [
            "simulate",
            "--scenario",
            str(REPO / "docs/examples/mississippi-stud-progressive--envy-bound-player.scenario.toml"),
        ],
    ],
    ids=lambda verb: verb[0],
)
def test_a_birth_over_the_brokers_limit_refuses_the_start(verb: list[str], config: Path, tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    broker = f"mqtt://127.0.0.1:{free_port()}"
    argv = [*verb, "--config", str(config), "--journal", str(journal), "--broker", broker]
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    head, *findings = done.stderr.strip().splitlines()
    assert head == f"tablectl: {config}: cannot run this table, 1 error(s) (`tablectl check-config` says the same):"
    said = "\n".join(findings)
    assert "mqtt.max_packet_size" in said and f"over the broker's {LIMIT:,}-byte packet limit" in said, said
    size = int(re.search(r"birth message would be ([\d,]+) bytes", said)[1].replace(",", ""))  # type: ignore[index]
    table = load_config(config)
    birth = build_birth(table, "0" * 32).model_dump_json()
    assert size == publish_size(Topics("tablectl", "demo-ms-1").birth, len(birth.encode())) > LIMIT
    assert f"raise max_packet_size above {size:,}" in said and "port strings" in said
    assert not journal.exists(), "the journal was opened before the refusal"


# `demo --floor` and `--linked` build their tables' configs from the shipped ones (floor/cli/demo.py ROOT_CONFIGS,
# link/cli/demo.py CONFIGS), whose births fit. The one thing faked: the subprocess points the demo's module at a dir of
# copies whose births do not, as an operator's edited configs would make them; the check and the refusal are the real
# `tablectl demo`'s (controller/cli/demo.py), run as `python -m controller.cli` runs it.
SEAM = (
    "import importlib, pathlib, sys; "
    "setattr(importlib.import_module(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])); "
    "from controller.cli.main import main; sys.exit(main(sys.argv[4:]))"
)


@pytest.mark.parametrize(
    ("flag", "module", "constant", "first"),
    [("--floor", "floor.cli.demo", "ROOT_CONFIGS", "ms-1"), ("--linked", "link.cli.demo", "CONFIGS", "ms-link-1")],
)
def test_the_floor_and_linked_demos_refuse_their_tables_births_before_anything_starts(
    flag: str, module: str, constant: str, first: str, tmp_path: Path
) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    for name in ("mississippi-stud-progressive.toml", "let-it-ride-progressive.toml"):
        text = (REPO / "configs" / name).read_text()
        text = re.sub(r'^(prefix = "tablectl"\n)', rf"\1max_packet_size = {LIMIT}\n", text, count=1, flags=re.M)
        text = re.sub(r'^port = "/dev/tablectl/', f'port = "{PORT}/', text, flags=re.M)
        assert f"max_packet_size = {LIMIT}" in text and PORT in text
        (configs / name).write_text(text)
    temp = tmp_path / "tmp"  # where the demo would make its workdir, its PostgreSQL and its tables' journals
    temp.mkdir()
    argv = ["demo", flag, "--rounds", "1", "--seed", "1", "--broker", f"mqtt://127.0.0.1:{free_port()}"]
    done = subprocess.run(
        [sys.executable, "-c", SEAM, module, constant, str(configs), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp)},
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    head, *findings = done.stderr.strip().splitlines()
    where = f"tablectl demo {flag}'s table {first}"
    assert head == f"tablectl: {where}: cannot run this table, 1 error(s) (`tablectl check-config` says the same):"
    said = "\n".join(findings)
    assert "mqtt.max_packet_size" in said and f"over the broker's {LIMIT:,}-byte packet limit" in said, said
    assert "PostgreSQL" not in done.stderr and list(temp.iterdir()) == [], "the demo started before the refusal"
