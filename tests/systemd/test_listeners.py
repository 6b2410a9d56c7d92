"""Every queue subscribed to the table's events is read for as long as the table runs (issue 19: resident memory),
and is bounded: one that stops reading reaches its bound, and what its kind says follows (shell/listeners.py).
A lossy listener (a status or a display) drops its oldest events and logs the count; a lossless one is detached and
the table raises `tilt:listener:<name>`, naming it and the fix. Normal play never comes near the bound.

Real service, real SQLite journal, the demo's real simulated devices on pseudo-terminals for the rounds played; the
tasks' specs are built as `tablectl run` builds them.
"""

from __future__ import annotations

import asyncio
import io
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from controller.config.table import demo_config, load_config
from controller.core.events import JournaledEvent
from controller.people.demo import play
from controller.shell.listeners import DETACHED, DROPPED, LISTENER_BOUND, ListenerOverflow
from controller.shell.runner import build_devices
from controller.shell.service import TableService
from controller.shell.supervised import SupervisedTable
from controller.shell.watchdog import SystemdSupervisor
from controller.store.journal import Journal
from drivers.interfaces import DeviceFault
from tests.stepping import stepping
from tests.systemd.notify import NotifySocket

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


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[TableService]:
    """The demo's table with no devices (none is needed to journal a device's fault), stepping in this loop."""
    async with stepping(Journal(tmp_path / "journal.sqlite", demo_config().table_id, boot_id="b1")) as (svc, _):
        yield svc


async def faults(svc: TableService, n: int) -> list[JournaledEvent]:
    """`n` events journaled, one a step: a dealer panel's line noise."""
    out: list[JournaledEvent] = []
    for i in range(n):
        out += await svc.submit_and_wait(DeviceFault("dealer_panel", "line_noise", f"burst {i}"))
    return out


async def test_a_lossy_listener_that_stops_reading_keeps_its_newest_events_and_logs_the_count(
    service: TableService,
) -> None:
    console = service.subscribe("console", "lossy", bound=4)
    watch = service.subscribe("watch", "lossless")  # a reader that keeps up: every event journaled meanwhile
    with capture_logs() as logs:
        journaled = await faults(service, 10)
    heard = [watch.get_nowait() for _ in range(watch.qsize())]
    assert len(journaled) == 10 and len(heard) >= 10
    assert (console.qsize(), console.dropped, console.high_water) == (4, len(heard) - 4, 4)
    assert [console.get_nowait().seq for _ in range(4)] == [e.seq for e in heard[-4:]]  # the newest, in order
    dropped = [e for e in logs if e["event"] == DROPPED]
    # The episode's first drop, then once every bound's worth (4, 8, ...), not once an event.
    expected = [1, *range(4, len(heard) - 4 + 1, 4)]
    assert [(e["listener"], e["dropped"], e["bound"], e["log_level"]) for e in dropped] == [
        ("console", n, 4, "warning") for n in expected
    ]
    # A display falling behind is no tilt: the table plays on, the listener still hears what comes next.
    assert not any(k.startswith("tilt:") for k in service.state.blocks)
    assert service.listeners == 2
    nxt = await faults(service, 1)
    assert (await console.get()).seq == nxt[0].seq


async def test_a_lossless_listener_that_stops_reading_is_detached_and_the_table_tilts(service: TableService) -> None:
    people = service.subscribe("people", "lossless", bound=4)
    watch = service.subscribe("watch", "lossless")  # a reader that keeps up, to see what the table journals
    with capture_logs() as logs:
        await faults(service, 5)  # more than four events: the fifth does not fit
        await faults(service, 1)  # stepped after the tilt, which was queued first
    assert service.listeners == 1  # people's queue is no longer filled: the memory stops growing
    assert "tilt:listener:people" in service.state.blocks
    heard = [watch.get_nowait() for _ in range(watch.qsize())]
    (raised,) = [e for e in heard if e.type == "tilt.raised"]
    assert raised.payload["tilt"] == "tilt:listener:people"
    assert f"detached at seq {heard[4].seq}" in raised.payload["reason"]
    assert "a supervisor clears the tilt" in raised.payload["remedy"]
    (log,) = [e for e in logs if e["event"] == DETACHED]
    assert (log["listener"], log["tilt"], log["log_level"]) == ("people", "tilt:listener:people", "error")
    # What it held is still its to read, in order; then its next read fails, so its supervised task fails visibly.
    assert [people.get_nowait().seq for _ in range(4)] == [e.seq for e in heard[:4]]
    with pytest.raises(ListenerOverflow, match="fell 4 events behind"):
        await people.get()


def _free_broker() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"mqtt://127.0.0.1:{s.getsockname()[1]}"


async def test_normal_play_never_comes_near_the_bound(tmp_path: Path) -> None:
    """Rounds of the demo's progressive table with every listener a table can have (the people, `simulate`'s
    output, the console, the meters): none drops an event, none holds more than a round's events at once."""
    services: list[TableService] = []
    heard: list[JournaledEvent] = []
    played = await play(
        demo_config(),
        rounds=6,
        seed=3,
        broker=_free_broker(),
        journal_path=tmp_path / "journal.sqlite",
        out=io.StringIO(),
        on_event=heard.append,
        on_service=services.append,
    )
    assert played == 6
    (svc,) = services
    subs = {s.name: s for s in svc.subscribers()}
    assert {"people", "people-events", "console", "meters"} <= set(subs)
    for s in subs.values():
        assert (s.name, s.dropped, s.overflowed) == (s.name, 0, None)
        assert s.high_water < LISTENER_BOUND // 10, (s.name, s.high_water)
    assert [e.seq for e in heard] == list(range(heard[0].seq, heard[0].seq + len(heard)))  # nothing lost
    assert not any(k.startswith("tilt:listener:") for k in svc.state.blocks)
