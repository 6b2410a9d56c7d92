"""The devices come up while the start reads the broker's anchor and restores the stored state (issue 19: start to
READY, controller/shell/inbox.py), and that changes nothing the table does: a device is opened and identified early,
commanded only once the restored state has been stepped; a restore that raises a tilt still does, ahead of every
device's report; a device that does not answer its identify is still reported offline; a start that fails after the
devices began lets them go again.

Real parts: the daemon's own start (controller.shell.runner.run_table) on the simulators' pseudo-terminals, a real
SQLite journal, a real mosquitto behind the small TCP proxy of tests/mqtt/test_anchor_late_suback.py that holds the
broker's SUBACK, so that the anchor read is provably still under way while the devices come up.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.config.table import TableConfig, demo_config
from controller.shell.runner import begin_devices, build_devices, run_table
from controller.shell.service import TableService
from controller.store.schema import JournalRefused
from drivers.base import DeviceBase
from drivers.interfaces import Device
from drivers.sim.base import SimDevice
from drivers.sim.table import SimulatedTable
from tests.broker import Mosquitto
from tests.journal.conftest import journal_rows, tamper
from tests.mqtt.suback_proxy import SubackHoldingProxy

BOUND = 20.0  # seconds; a bound on failure only


class Heard:
    """What each simulator received, in order, with whether the anchor read had been let go by then."""

    def __init__(self, sims: SimulatedTable, released: Callable[[], bool]) -> None:
        self.commands: list[tuple[str, str, bool]] = []  # (device id, command, anchor read released)
        self.commanded = asyncio.Event()  # a command other than identify (or a ping) reached a device
        for sim in sims.devices:
            self._listen(sim, released)

    def _listen(self, sim: SimDevice, released: Callable[[], bool]) -> None:
        real = sim._on_data

        def on_data(payload: bytes) -> None:
            from drivers.reference.framing import decode_message

            command = str(decode_message(payload).get("cmd"))
            self.commands.append((sim.device_id, command, released()))
            if command not in ("identify", "ping"):
                self.commanded.set()
            real(payload)

        sim._on_data = on_data  # type: ignore[method-assign]


async def all_settled(devices: dict[str, Device]) -> None:
    """Every driver's first attempt to reach its device is over (DeviceBase.start's own event)."""
    drivers = [d for d in devices.values() if isinstance(d, DeviceBase)]
    assert len(drivers) == len(devices)
    await asyncio.gather(*(d._first_attempt.wait() for d in drivers))


def start(
    config: TableConfig, devices: dict[str, Device], broker: str, journal: Path
) -> tuple[asyncio.Task[int], asyncio.Event]:
    """run_table as `tablectl run` calls it, and an event set once its service is ready (what READY=1 waits for),
    told by a companion: the hook `tablectl demo` gives its simulated people."""
    ready = asyncio.Event()

    async def tell(service: TableService) -> None:
        await service.ready.wait()
        ready.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(
        run_table(config, devices, broker=broker, journal_path=journal, companions=lambda s: [tell(s)])
    )
    return task, ready


async def stopped(task: asyncio.Task[int]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_devices_are_identified_during_the_anchor_read_and_commanded_only_after_the_restore(
    mosquitto: Mosquitto, tmp_path: Path, unique_id: str
) -> None:
    config = demo_config().model_copy(update={"table_id": unique_id})
    proxy = SubackHoldingProxy(mosquitto.port)
    journal = tmp_path / "journal.sqlite"
    sims = SimulatedTable(config.game.seats, random.Random(1), sign=True)
    heard = Heard(sims, proxy.release.is_set)  # before the simulators start: their links take on_data then
    async with sims:
        devices = build_devices(config, sims.ports)
        run, ready = start(config, devices, f"mqtt://127.0.0.1:{proxy.port}", journal)
        try:
            assert await asyncio.to_thread(proxy.held.wait, BOUND), "the anchor read never subscribed"
            async with asyncio.timeout(BOUND):
                await all_settled(devices)
            # The broker's SUBACK is still held: the anchor read is under way, nothing is restored or stepped yet.
            assert not proxy.release.is_set()
            assert all(d.online for d in devices.values() if isinstance(d, DeviceBase))
            assert {c for _, c, _ in heard.commands} <= {"identify", "ping"}
            assert {d for d, c, _ in heard.commands if c == "identify"} == set(devices)
            assert journal_rows(journal) == []  # not even the software check's event: the service has not run

            proxy.release.set()
            async with asyncio.timeout(BOUND):
                await ready.wait()
            assert heard.commanded.is_set()  # the table opened: the shuffler was told to shuffle
        finally:
            await stopped(run)
            proxy.close()
    late = [(d, c) for d, c, released in heard.commands if c not in ("identify", "ping") and not released]
    assert late == [], f"commanded before the anchor read and the restore were done: {late}"
    types = [r.type for r in journal_rows(journal)]
    assert types[0] == "software.checked"
    assert types.count("device.online") == len(devices)
    assert types.index("table.opened") > max(i for i, t in enumerate(types) if t == "device.online")


async def test_a_restore_that_raises_a_tilt_still_does_ahead_of_every_devices_report(
    tmp_path: Path, unique_id: str, no_broker: str
) -> None:
    """The engine record deleted behind the journal's back (as in test_critical_state.py): the restart raises its tilt
    before anything the devices, brought up meanwhile, reported; a station unplugged is reported offline."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    journal = tmp_path / "journal.sqlite"
    async with SimulatedTable(config.game.seats, random.Random(1), sign=True) as sims:
        devices = build_devices(config, sims.ports)
        run, ready = start(config, devices, no_broker, journal)
        try:
            async with asyncio.timeout(BOUND):
                await ready.wait()
        finally:
            await stopped(run)
        first = journal_rows(journal)[-1].seq
        tamper(journal, "DELETE FROM critical_state WHERE record = 'engine'")
        await sims.stations[3].unplug()
        devices = build_devices(config, sims.ports)
        run, ready = start(config, devices, no_broker, journal)
        try:
            async with asyncio.timeout(BOUND):
                await ready.wait()  # the first batch, the devices' reports in it, is committed
        finally:
            await stopped(run)
    rows = journal_rows(journal, first)
    types = [r.type for r in rows]
    assert types[:2] == ["software.checked", "critical_state.invalid"]
    assert rows[1].payload["tilt"] == "critical_state"
    [offline] = [r for r in rows if r.type == "device.offline"]
    assert offline.payload["device_id"] == "wager_station_3" and offline.payload["reason"]
    assert types.count("device.online") == len(devices) - 1


async def test_a_start_that_fails_after_the_devices_began_lets_them_go(
    tmp_path: Path, unique_id: str, no_broker: str
) -> None:
    """A chapter nobody registered fails the table's construction (its birth message) once the devices were started:
    the drivers are stopped, none of their tasks left running."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    async with SimulatedTable(config.game.seats, random.Random(1), sign=True) as sims:
        devices = build_devices(config, sims.ports)
        # Not valid (model_copy does not validate): the CLI's check refuses it before run_table.
        unrunnable = config.model_copy(update={"game": config.game.model_copy(update={"chapter": "999a"})})
        with pytest.raises(KeyError, match="999a is not registered"):
            await run_table(unrunnable, devices, broker=no_broker, journal_path=tmp_path / "journal.sqlite")
        drivers = [d for d in devices.values() if isinstance(d, DeviceBase)]
        assert drivers and not any(d.supervised for d in drivers)
        assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("driver:") and not t.done()]


async def test_devices_begun_before_the_daemon_loaded_are_let_go_when_the_journal_is_unusable(
    tmp_path: Path, unique_id: str, no_broker: str
) -> None:
    """`tablectl run` starts the devices before it loads the daemon's modules (controller/cli/run.py: the identifies
    go out first); a journal file that is not a tablectl journal still stops the start with exit status 2, before any
    device is commanded, and the drivers begun are stopped, none of their tasks left running."""
    config = demo_config().model_copy(update={"table_id": unique_id})
    journal = tmp_path / "journal.sqlite"
    journal.write_bytes(b"not a journal" * 100)
    sims = SimulatedTable(config.game.seats, random.Random(1), sign=True)
    heard = Heard(sims, lambda: False)
    async with sims:
        devices = build_devices(config, sims.ports)
        begun = begin_devices(devices)
        async with asyncio.timeout(BOUND):
            await all_settled(devices)  # every device identified: the journal is opened later in a real start too
        assert all(d.online for d in devices.values() if isinstance(d, DeviceBase))
        with pytest.raises(JournalRefused, match=r"not a journal|not a database"):
            await run_table(config, devices, broker=no_broker, journal_path=journal, begun=begun)
        drivers = [d for d in devices.values() if isinstance(d, DeviceBase)]
        assert drivers and not any(d.supervised for d in drivers)
        assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("driver:") and not t.done()]
        assert {c for _, c, _ in heard.commands} == {"identify"}
