"""The lock-out's short path through the link (bench/lockout.py --split): a frame written before `send_now` returns,
and bytes parsed and answered in the read callback of a reader that calls back (drivers/serial_port.SerialReader,
the simulators' pty) instead of in a reader task.

The transport is in memory on the writing side (tests/drivers/test_link.py's FakeWriter, which parses what is
written) and the real SerialReader on the reading side, fed as its serial transport's protocol feeds it; the drivers'
test at the end runs real reference drivers against station simulators over real ptys.
"""

from __future__ import annotations

import asyncio
import select

import pytest

from controller.engine.commands import LockSeat
from controller.shell.device_commands import CommandRunner
from drivers.interfaces import DeviceEvent, LockAcknowledged, WagerStation
from drivers.reference.framing import HOST_ADDRESS, VERSION_3, Kind, encode_frame, encode_message
from drivers.reference.link import Link, LinkClosed
from drivers.registry import create_driver
from drivers.serial_port import SerialReader
from drivers.sim.line import UNPACED
from drivers.sim.wager_station import WagerStationSim
from tests.drivers.test_link import TIMEOUT, FakeWriter


class AtOnce:
    def __init__(self) -> None:
        self.reader = SerialReader()
        self.writer = FakeWriter()
        self.delivered: list[bytes] = []
        self.closed_reasons: list[str] = []
        self.link = Link(
            self.reader,
            self.writer,
            local_address=HOST_ADDRESS,
            peer_address=1,
            on_data=self.delivered.append,
            on_closed=self.closed_reasons.append,
            initial_seq=7,
            ack_timeout=10,
        )
        self.link.version = VERSION_3
        self.link.start()

    def reply(self, seq: int, message: dict[str, object]) -> None:
        """The station's REPLY to our frame `seq`, as the serial transport hands it over."""
        self.reader.feed_data(encode_frame(1, seq, Kind.REPLY, encode_message(message, VERSION_3), VERSION_3, True))


async def test_send_now_writes_the_frame_before_it_returns_and_ends_on_the_reply() -> None:
    h = AtOnce()
    locking = h.link.send_now({"cmd": "lock"})
    assert h.writer.frames.qsize() == 1  # written before any turn of the loop
    frame = h.writer.frames.get_nowait()
    assert (frame.seq, frame.kind, frame.version) == (7, Kind.DATA, VERSION_3)
    # A second command while the lock is outstanding waits for the line: nothing more is written yet.
    unlocking = h.link.send_now({"cmd": "unlock"})
    assert h.writer.frames.qsize() == 0
    h.reply(7, {"evt": "locked"})
    # The REPLY was parsed and delivered in the reader's own call: no task had to run.
    assert h.delivered == [encode_message({"evt": "locked"}, VERSION_3)]
    await asyncio.wait_for(locking, TIMEOUT)
    second = await h.writer.next()  # the line passed to the waiting send
    assert (second.seq, second.kind) == (8, Kind.DATA)
    h.reply(8, {"evt": "unlocked"})
    await asyncio.wait_for(unlocking, TIMEOUT)
    await h.link.close()


async def test_a_send_now_cancelled_before_it_ran_gives_the_line_back() -> None:
    h = AtOnce()
    locking = h.link.send_now({"cmd": "lock"})
    locking.cancel()
    await asyncio.gather(locking, return_exceptions=True)
    assert locking.cancelled()
    again = h.link.send_now({"cmd": "lock"})
    assert h.writer.frames.qsize() == 2  # the first lock's frame, then this one's at once: the line was free
    h.reply(8, {"evt": "locked"})
    await asyncio.wait_for(again, TIMEOUT)
    await h.link.close()


async def test_a_read_error_on_a_serial_reader_closes_the_link_with_its_reason() -> None:
    h = AtOnce()
    locking = h.link.send_now({"cmd": "lock"})
    h.reader.set_exception(OSError(5, "Input/output error"))
    with pytest.raises(LinkClosed):
        await asyncio.wait_for(locking, TIMEOUT)
    assert h.closed_reasons and "Input/output error" in h.closed_reasons[0]
    await h.link.close()


async def test_the_runner_writes_every_stations_lock_before_it_returns() -> None:
    """CommandRunner.start, as the service's step calls it for its early locks: every station's lock frame is on its
    pty when start() returns, before the event loop ran anything; then each station confirms."""
    sims = [WagerStationSim(f"wager_station_{n}", n) for n in (1, 2, 3)]
    events: asyncio.Queue[DeviceEvent] = asyncio.Queue()
    drivers: list[WagerStation] = []
    try:
        for sim in sims:
            sim.configure_line(timing=UNPACED)
            await sim.start()
            settings = {"driver": "reference-wager-station", "port": sim.port, "seat": sim.seat}
            driver = create_driver(sim.device_id, {**settings, "heartbeat_interval": 0})
            assert isinstance(driver, WagerStation)
            await driver.start(events.put_nowait)
            drivers.append(driver)
        runner = CommandRunner({d.device_id: d for d in drivers}, events.put_nowait)
        locking, written = runner.start([LockSeat(d.seat) for d in drivers])
        assert written
        for sim in sims:
            assert sim._endpoint is not None
            readable, _, _ = select.select([sim._endpoint.master_fd], [], [], TIMEOUT)
            assert readable, f"{sim.device_id}: no lock frame on the line"
        await asyncio.wait_for(locking, TIMEOUT)
        seats: set[int] = set()
        while len(seats) < len(sims):
            ev = await asyncio.wait_for(events.get(), TIMEOUT)
            if isinstance(ev, LockAcknowledged) and ev.locked:
                seats.add(ev.seat)
        assert all(sim.locked for sim in sims)
    finally:
        for d in drivers:
            await d.stop()
        for sim in sims:
            await sim.stop()
