"""The retained progressive/<level> topics show the journaled meters once a table has closed, even when the meters
task had not read the last `meter.*` events of its queue when it was cancelled with the other tasks at the end.

Found by the kill -9 campaign (tests/e2e/test_kill9_recovery.py) on a loaded CI machine: after the last boot closed
its table, the retained Mississippi Stud progressive topic showed the meters of a round before (display 1,008,164
cents against the journaled 1,008,203). Here the lag is made certain: the meters task is replaced by one that never
reads its queue (the only stand-in in this test; the table, its simulated devices on real ptys, the journal and the
mosquitto broker are real), and the table plays two rounds and closes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.config.table import load_config
from controller.mqtt.contract import Topics
from controller.people.demo import play
from controller.shell import supervised
from controller.shell.service import TableService
from tests.broker import Mosquitto, Subscribe
from tests.e2e.retained_meters import assert_retained_meters

ROOT = Path(__file__).resolve().parents[2]


async def _never_reads(*_args: object, **_kwargs: object) -> None:
    """A meters task that has not got to its queue yet when the table's end cancels it."""
    await asyncio.Event().wait()


async def test_the_retained_meters_are_the_journaled_ones_after_the_table_closes(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(ROOT / "configs" / "mississippi-stud-progressive.toml").model_copy(
        update={"table_id": unique_id}
    )
    monkeypatch.setattr(supervised, "follow_meters", _never_reads)
    services: list[TableService] = []
    played = await play(
        config,
        rounds=2,
        broker=mosquitto.url,
        seed=20261127,
        journal_path=tmp_path / "journal.sqlite",
        on_service=services.append,
    )
    assert played == 2
    meters = services[0].state.meters
    assert meters is not None and meters.levels, "the progressive table has journaled meters"
    assert_retained_meters(subscribe, Topics(config.mqtt.prefix, unique_id), meters)
