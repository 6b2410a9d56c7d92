"""Lock commands leave while the journal commits (docs/recovery.md, "Locks before the commit"); every other command
still waits for the commit, and a device's later commands stay behind its lock.

Real parts: the real TableService stepping the demo table's engine on a real SQLite journal, the reference drivers,
and the station simulators over real ptys. The disk's stall is the journal's lock held from another thread, as in
test_writer_thread.py (tests/journal/stalled_journal.py).
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from pytest import MonkeyPatch

from controller.config.table import demo_config, station_id
from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand, LightSeat, LockSeat, Shuffle, UnlockSeat
from controller.engine.inputs import CloseTable
from controller.engine.state import TableState
from controller.people.demo import simulator_settings
from controller.shell.locks import hoist_locks
from controller.shell.runner import build_devices
from controller.shell.service import TableService
from controller.store import snapshot
from drivers.interfaces import DeviceEvent, LockAcknowledged
from drivers.reference.link_core import LinkCore
from drivers.sim.table import SimulatedTable
from tests.journal.stalled_journal import RecordingJournal, disk_stalled

FAILURE_BOUND = 10.0


def test_only_a_devices_first_command_if_a_lock_is_hoisted() -> None:
    steps: list[tuple[list[DomainEvent], list[DeviceCommand]]] = [
        ([], [UnlockSeat(2), LockSeat(1), LightSeat(1, True), Shuffle()]),
        ([], [LockSeat(2), LockSeat(3), LightSeat(3, False)]),
    ]
    early = hoist_locks(steps)
    # Seat 2's lock stays behind its unlock; seats 1 and 3 lock first; nothing else moves.
    assert early == [LockSeat(1), LockSeat(3)]
    assert steps[0][1] == [UnlockSeat(2), LightSeat(1, True), Shuffle()]
    assert steps[1][1] == [LockSeat(2), LightSeat(3, False)]


async def test_the_stations_lock_while_the_commit_is_still_on_the_disk(tmp_path: Path) -> None:
    """Closing the table locks every station (its step's commands); with the commit stalled, every station still
    confirms its lock, and the table.closed event is announced only after the commit."""
    config = demo_config()
    journal = RecordingJournal(tmp_path / "journal.sqlite", config.table_id, boot_id="b1")
    async with SimulatedTable(config.game.seats, random.Random(3)) as sims:
        devices = build_devices(simulator_settings(config, 0), sims.ports)
        svc = TableService(config, devices, journal)
        locked: asyncio.Queue[int] = asyncio.Queue()
        real_sink = svc.sink

        def spy(event: DeviceEvent) -> None:
            if isinstance(event, LockAcknowledged) and event.locked:
                locked.put_nowait(event.seat)
            real_sink(event)

        svc.sink = spy  # type: ignore[method-assign]
        running = asyncio.create_task(svc.run())
        try:
            opened = svc.subscribe("test", "lossless")
            async with asyncio.timeout(FAILURE_BOUND):
                await svc.ready.wait()
                while (await opened.get()).type != "betting.opened":
                    pass
                while not locked.empty():
                    locked.get_nowait()
            listener = svc.subscribe("test", "lossless")
            with disk_stalled(journal) as release:
                svc.submit(CloseTable())
                async with asyncio.timeout(FAILURE_BOUND):
                    seats = {await locked.get() for _ in range(config.game.seats)}
                in_flight = svc._writer.in_flight
                assert in_flight is not None and not in_flight.finished.is_set()  # the commit is still waiting
                assert listener.empty()  # nothing announced before the journal holds it
                release.set()
            assert seats == set(range(1, config.game.seats + 1))
            assert all(station.locked for station in sims.stations.values())
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await svc.stop_devices()
            journal.close()


async def test_the_lock_frames_leave_before_the_state_is_encoded(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    """The step's state is encoded for the commit (controller.store.snapshot: about 0.1 ms a step) only once every
    station's lock frame was written: the lock-out does not wait for what only the journal needs."""
    config = demo_config()
    journal = RecordingJournal(tmp_path / "journal.sqlite", config.table_id, boot_id="b1")
    order: list[str] = []
    watching = False
    real_write, real_encode = LinkCore._write, snapshot.encode

    async def write(link: LinkCore, data: bytes) -> None:
        if watching:
            order.append(f"frame to {link.name.removeprefix('driver:')}")
        await real_write(link, data)

    def encode(state: TableState) -> bytes:
        if watching:
            order.append("state encoded")
        return real_encode(state)

    monkeypatch.setattr(LinkCore, "_write", write)
    monkeypatch.setattr(snapshot, "encode", encode)
    async with SimulatedTable(config.game.seats, random.Random(3)) as sims:
        devices = build_devices(simulator_settings(config, 0), sims.ports)
        svc = TableService(config, devices, journal)
        running = asyncio.create_task(svc.run())
        try:
            opened = svc.subscribe("test", "lossless")
            async with asyncio.timeout(FAILURE_BOUND):
                await svc.ready.wait()
                while (await opened.get()).type != "betting.opened":
                    pass
            closed = svc.subscribe("test", "lossless")
            watching = True
            svc.submit(CloseTable())
            async with asyncio.timeout(FAILURE_BOUND):
                while (await closed.get()).type != "table.closed":
                    pass
            stations = {f"frame to {station_id(seat)}" for seat in range(1, config.game.seats + 1)}
            assert "state encoded" in order, order
            before = order[: order.index("state encoded")]
            assert stations <= set(before), order
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await svc.stop_devices()
            journal.close()
