"""No task dies unnoticed (issue 12, item 1), against a real SQLite file damaged on disk, a real mosquitto and the
real runner on simulated devices.

- A journal row whose bytes are not UTF-8 (a flipped disk byte) used to kill the publisher for good while the
  retained status said online: now it is quarantined (kept as found, reported in `journal.row_quarantined`, by
  `tablectl journal verify`) and every other event is published.
- A task that fails is journaled (`task.failed`), published, and restarted or escalated: a people task of the
  demo fails and the table raises `tilt:task:people:1`, stops dealing new rounds, and the retained status says
  `degraded` and why.
- A `password_file` of /dev/zero kills neither the publisher nor the command listener (MemoryError, made quick by
  RLIMIT_AS on the daemon): the table plays on and journals.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.cli.main import main as tablectl
from controller.config.table import MqttSettings, load_config
from controller.core.events import DomainEvent
from controller.engine.state import Phase
from controller.mqtt.publisher import EventPublisher
from controller.people.demo import ScriptedRound, play
from controller.store import snapshot
from controller.store.journal import Journal
from controller.store.reader import JournalReader
from tests.broker import Mosquitto, Received, Subscribe
from tests.e2e.conftest import killed_at_exit, stop, table_config

pytestmark = pytest.mark.e2e

PREFIX = "sv"


def _events(msgs: list[Received]) -> list[dict[str, Any]]:
    return [m.json() for m in msgs if m.topic.endswith("/event")]


def _flip_on_disk(path: Path, marker: bytes) -> None:
    """Overwrite one byte of `marker` in the file as a failing disk would: in place, nothing else touched."""
    data = path.read_bytes()
    at = data.index(marker) + 1
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"\xff", at)
    finally:
        os.close(fd)


async def test_a_damaged_row_is_quarantined_and_every_other_event_published(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite"
    with Journal(path, unique_id, "b1") as j:
        now = datetime.now(UTC)
        j.append([DomainEvent("test.event", None, {"n": n, "mark": f"MARK{n}Q"}) for n in range(1, 7)], now)
    _flip_on_disk(path, b"MARK3Q")  # seq 3's payload: no longer UTF-8, no longer its hash
    sub = subscribe(f"{PREFIX}/{unique_id}/#")
    journal = Journal(path, unique_id, "b2")
    publisher = EventPublisher(journal, MqttSettings(broker=mosquitto.url, prefix=PREFIX), unique_id)
    task = asyncio.create_task(publisher.run())
    try:
        await sub.await_until(
            lambda msgs: any(e["type"] == "journal.row_quarantined" for e in _events(msgs)), what="the quarantine"
        )
        journal.append([DomainEvent("test.event", None, {"n": 8})], datetime.now(UTC))
        publisher.notify()
        await sub.await_until(lambda msgs: any(e["seq"] == 8 for e in _events(msgs)), what="publishing goes on")
        assert not task.done(), "the publisher died"
    finally:
        await publisher.close()
        await asyncio.gather(task, return_exceptions=True)
        journal.close()
    got = _events(sub.messages)
    assert sorted({e["seq"] for e in got}) == [1, 2, 4, 5, 6, 7, 8]
    quarantine = next(e for e in got if e["type"] == "journal.row_quarantined")
    assert quarantine["seq"] == 7 and quarantine["payload"]["seq"] == 3
    assert "not UTF-8" in quarantine["payload"]["reason"]
    # Kept as found: the examiner's tools read it and say what is wrong with it.
    assert tablectl(["journal", "verify", "--journal", str(path)]) == 1
    out = capsys.readouterr().out
    assert "quarantined row at seq 3" in out and "not UTF-8" in out
    assert tablectl(["journal", "tail", "-n", "8", "--json", "--journal", str(path)]) == 0
    with JournalReader(path) as reader:
        damaged = [r for r in reader.rows() if "damaged" in r]
    assert [r["seq"] for r in damaged] == [3]


class _FailingPolicy:
    """Players who place their wagers in round 1 and then fail: the demo's people task raises."""

    def __init__(self) -> None:
        self.rounds = [ScriptedRound(wagers={1: {"ante": 500}})]

    def wagers(self, round_no: int, config: Any) -> dict[int, dict[str, int]]:
        if round_no > 1:
            raise RuntimeError("the simulated players fell over")
        return self.rounds[0].wagers

    def decide(self, round_no: int, seat: int, request: Any) -> Any:
        return "fold"

    def late_wager(self, round_no: int, config: Any) -> None:
        return None

    def stub_count(self, round_no: int) -> None:
        return None


async def test_a_failed_task_is_journaled_published_and_escalated_to_a_tilt_and_a_degraded_status(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    config = load_config(table_config(tmp_path, unique_id, PREFIX))
    sub = subscribe(f"{PREFIX}/{unique_id}/#")
    seen: list[str] = []
    game = asyncio.create_task(
        play(
            config,
            rounds=None,
            broker=mosquitto.url,
            seed=5,
            journal_path=tmp_path / "j.sqlite",
            policy=_FailingPolicy(),
            on_event=lambda ev: seen.append(ev.type),
        )
    )
    try:
        await sub.await_until(
            lambda msgs: any(
                m.topic.endswith("/status")
                and m.json()["state"] == "degraded"
                and "tilt:task:people:1" in m.json()["reason"]
                for m in msgs
            ),
            within=60,
            what="the retained status degraded, naming the tilt",
        )
        await sub.await_until(
            lambda msgs: {"task.failed", "tilt.raised"} <= {e["type"] for e in _events(msgs)}, what="both published"
        )
    finally:
        game.cancel()
        await asyncio.gather(game, return_exceptions=True)
    events = _events(sub.messages)
    failed = next(e for e in events if e["type"] == "task.failed")
    assert failed["payload"]["task"] == "people:1" and "fell over" in failed["payload"]["error"]
    assert failed["payload"]["escalated"] is True and "tilt tilt:task:people:1 raised" in failed["payload"]["then"]
    tilt = next(e for e in events if e["type"] == "tilt.raised")
    assert tilt["seq"] > failed["seq"] and tilt["payload"]["tilt"] == "tilt:task:people:1"
    # No new round after the tilt: round 2 never opened.
    opened = [e["payload"]["round_no"] for e in events if e["type"] == "betting.opened"]
    assert max(opened, default=0) <= 2
    assert not any(e["type"] == "betting.opened" and e["seq"] > tilt["seq"] for e in events)
    with Journal(tmp_path / "j.sqlite", unique_id, "b-check") as j:
        state = snapshot.restore(j.load(snapshot.RECORD))
    assert state is not None and "tilt:task:people:1" in state.blocks
    assert state.phase in (Phase.BLOCKED, Phase.OPENING, Phase.BETTING, Phase.LOCKING) or state.round is not None


def _address_space_limit() -> None:
    limit = 3 << 30  # 3 GiB: the demo needs far less; reading /dev/zero whole fails fast with MemoryError
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_a_password_file_of_dev_zero_kills_neither_publisher_nor_listener(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    text = table_config(tmp_path, unique_id, PREFIX).read_text()
    text = text.replace("[mqtt]\n", '[mqtt]\nusername = "table"\npassword_file = "/dev/zero"\n', 1)
    assert 'password_file = "/dev/zero"' in text, "the demo config has no [mqtt] table to put it in"
    config = tmp_path / "zero.toml"
    config.write_text(text)
    log = tmp_path / "daemon.log"
    args = [sys.executable, "-m", "controller.cli", "--log-json", "demo", "--pace", "0", "--seed", "3"]
    args += ["--journal", str(tmp_path / "j.sqlite"), "--quiet", "--broker", mosquitto.url, "--config", str(config)]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=out, preexec_fn=_address_space_limit)
    with killed_at_exit(proc):
        # Until both tasks have tried (and failed) to read the password and the table has played on past that.
        deadline = 120.0
        started = time.monotonic()
        while time.monotonic() - started < deadline:
            text = log.read_text(errors="replace")
            if "mqtt settings unusable" in text and "command listener cannot connect" in text:
                with JournalReader(tmp_path / "j.sqlite") as reader:
                    if any(r["type"] == "round.completed" for r in reader.rows()):
                        break
            time.sleep(0.2)  # polling another process's log file, not synchronising this one
        else:
            raise AssertionError(f"no sign of both tasks and a round within {deadline} s:\n{log.read_text()[-3000:]}")
        assert proc.poll() is None, "the daemon died"
        assert stop(proc) == 0
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "task failed" not in text, text[-3000:]
    assert "MemoryError" in text or "too large" in text or "not a regular file" in text, text[-2000:]
