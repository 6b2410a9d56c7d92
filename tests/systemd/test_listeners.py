"""Every queue subscribed to the table's events is read for as long as the table runs (issue 19: resident memory).

A subscribed queue is unbounded: one nobody reads keeps every journaled event of the table's life, about 60 kB a
seven-seat round. Real service, real SQLite journal; the tasks' specs are built as `tablectl run` builds them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.config.table import load_config
from controller.shell.runner import build_devices
from controller.shell.supervised import SupervisedTable
from controller.shell.watchdog import SystemdSupervisor
from controller.store.journal import Journal
from tests.systemd.conftest import NotifySocket

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def table(config: str, tmp_path: Path) -> SupervisedTable:
    cfg = load_config(CONFIGS / config)
    journal = Journal(tmp_path / "journal.sqlite", cfg.table_id, boot_id="b" * 32)
    return SupervisedTable(cfg, build_devices(cfg), journal, None)


@pytest.mark.parametrize(
    ("config", "meters"),
    [
        ("mississippi-stud.toml", False),
        ("cajun-stud.toml", False),
        ("three-card-prime.toml", False),
        ("let-it-ride.toml", True),
        ("mississippi-stud-progressive.toml", True),
    ],
)
def test_only_a_table_with_progressive_levels_follows_its_meters(config: str, meters: bool, tmp_path: Path) -> None:
    t = table(config, tmp_path)
    try:
        assert bool(t.service.engine.meter_params.levels) is meters
        names = [spec.name for spec in t.specs(None, [], None)]
        assert ("meters" in names) is meters
        # Nothing else listens in `tablectl run` without a console: a queue here would be read by the meters task only.
        assert t.service.listeners == (1 if meters else 0)
    finally:
        t.service.journal.close()


async def test_the_systemd_status_task_unsubscribes_when_it_ends(tmp_path: Path, notify_socket: NotifySocket) -> None:
    t = table("mississippi-stud.toml", tmp_path)
    systemd = SystemdSupervisor.from_environment(t.service, environ={"NOTIFY_SOCKET": notify_socket.address})
    assert systemd is not None
    try:
        status = asyncio.create_task(systemd._statuses())
        for _ in range(3):  # let it subscribe and wait on its queue (no clock: it yields to the loop)
            await asyncio.sleep(0)
        assert t.service.listeners == 1
        status.cancel()  # as the supervisor does before restarting it
        with pytest.raises(asyncio.CancelledError):
            await status
        assert t.service.listeners == 0
    finally:
        t.service.journal.close()
