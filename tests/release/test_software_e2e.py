"""605a.4(c) end to end: the real daemon (`tablectl demo` on simulated devices, which starts the table exactly as
`tablectl run` does: controller.shell.runner.run_table) run from an installation copied to a temp dir, signed with a
release key, against a real mosquitto. A tampered file keeps the table closed under tilt:software, journaled and
published, with one line for the operator, and no supervisor can clear the tilt while that code runs; the same
installation untampered opens and says in its birth message that it is verified, with the digest it was signed with."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.store.reader import JournalReader
from tests.broker import Mosquitto, Received, Subscribe, Subscriber
from tests.e2e.conftest import killed_at_exit, stop, table_config
from tests.release.conftest import Install

pytestmark = pytest.mark.e2e

PREFIX = "sw"
BOUND = 60  # seconds; a bound on failure only


def _start(install: Install, config: Path, journal: Path, broker: str, log: Path) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "controller.cli", "--log-json", "demo", "--pace", "0", "--seed", "3", "--quiet"]
    args += ["--journal", str(journal), "--broker", broker, "--config", str(config)]
    with log.open("wb") as err:
        return subprocess.Popen(
            args, cwd=install.root, env=install.env(), stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL
        )


def _events(msgs: list[Received], kind: str) -> Iterator[dict[str, Any]]:
    for m in msgs:
        if m.topic.endswith("/event") and m.json()["type"] == kind:
            yield m.json()


def _birth(sub: Subscriber, table_id: str) -> dict[str, Any]:
    topic = f"{PREFIX}/{table_id}/birth"
    sub.wait_until(lambda ms: any(m.topic == topic for m in ms), BOUND, "the birth message")
    software: dict[str, Any] = sub.on(topic)[-1].json()["software"]
    return software


def _journal(path: Path) -> list[dict[str, Any]]:
    with JournalReader(path) as reader:
        return list(reader.rows())


def _config(install: Install, tmp_path: Path, table_id: str, supervisors: str = "") -> Path:
    software = f'\n[software]\nrelease_keys = ["{install.public}"]\n'
    return table_config(tmp_path, table_id, PREFIX, software + supervisors)


def _supervisor(install: Install, tmp_path: Path) -> tuple[Path, str]:
    key = tmp_path / "boss.pem"
    out = install.tablectl("command", "keygen", "--out", key, "--key-id", "boss", "--role", "supervisor")
    assert out.returncode == 0, out.stderr
    return key, out.stdout[out.stdout.index("[[supervisors]]") :]


def test_605a_4_c_a_tampered_file_keeps_the_table_closed_under_tilt_software(
    install: Install, mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    table_id = unique_id
    signed = install.sign()
    money = install.root / "controller/core/money.py"
    money.write_bytes(money.read_bytes() + b"# a change nobody certified\n")
    boss, entry = _supervisor(install, tmp_path)
    config = _config(install, tmp_path, table_id, "\n" + entry)
    sub = subscribe(f"{PREFIX}/{table_id}/#")
    journal, log = tmp_path / "table.sqlite", tmp_path / "daemon.log"
    proc = _start(install, config, journal, mosquitto.url, log)
    with killed_at_exit(proc):
        sub.wait_until(lambda ms: any(_events(ms, "command.listening")), BOUND, "the command listener")
        [checked] = _events(sub.messages, "software.checked")
        assert (checked["rule"], checked["payload"]["verdict"]) == ("605a.4(c)", "mismatch")
        assert checked["payload"]["mismatched"] == ["controller/core/money.py"] and checked["payload"]["refused"]
        assert checked["payload"]["manifest_digest"] == signed != checked["payload"]["digest"]
        [tilt] = _events(sub.messages, "critical_state.invalid")
        assert tilt["payload"]["tilt"] == "tilt:software" and "controller/core/money.py" in tilt["payload"]["reason"]
        birth = _birth(sub, table_id)
        assert (birth["verdict"], birth["code_sha256"]) == ("mismatch", checked["payload"]["digest"])
        # A supervisor cannot clear the tilt on the code that raised it.
        send = ["command", "send", "--broker", mosquitto.url, "--prefix", PREFIX, "--table", table_id]
        out = install.tablectl(*send, "--key", boss, "--key-id", "boss", "clear_tilt", "tilt=tilt:software")
        assert out.returncode == 1, out.stdout + out.stderr
        assert "the installed code still fails its check (mismatch)" in json.loads(out.stdout)["reason"]
        assert stop(proc) == 0
    rows = _journal(journal)
    types = [r["type"] for r in rows]
    assert types[:2] == ["software.checked", "critical_state.invalid"]
    assert "table.opened" not in types and "tilt.cleared" not in types
    [refused] = [r for r in rows if r["type"] == "input.refused"]
    assert refused["rule"] == "605a.4(c)" and refused["payload"]["by"] == "boss"
    operator = [line for line in log.read_text().splitlines() if not line.startswith("{")]
    assert operator[0].startswith("tablectl: the table stays closed (tilt:software, 605a.4(c)): the installed code")
    assert "controller/core/money.py" in operator[0] and "Traceback" not in log.read_text()


def test_605a_4_c_the_signed_installation_opens_and_its_birth_says_verified(
    install: Install, mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    table_id = unique_id
    signed = install.sign()
    sub = subscribe(f"{PREFIX}/{table_id}/#")
    journal = tmp_path / "table.sqlite"
    proc = _start(install, _config(install, tmp_path, table_id), journal, mosquitto.url, tmp_path / "daemon.log")
    with killed_at_exit(proc):
        sub.wait_until(lambda ms: any(_events(ms, "table.opened")), BOUND, "the table opened")
        birth = _birth(sub, table_id)
        assert (birth["verdict"], birth["code_sha256"], birth["release_key"]) == ("verified", signed, install.public)
        assert stop(proc) == 0
    rows = _journal(journal)
    assert rows[0]["type"] == "software.checked" and rows[0]["payload"]["verdict"] == "verified"
    assert rows[0]["payload"]["digest"] == signed and not rows[0]["payload"]["refused"]
    assert "critical_state.invalid" not in [r["type"] for r in rows]
