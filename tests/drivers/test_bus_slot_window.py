"""The host's slot window after a GROUP lock (docs/protocol.md section 13, "The host's slot window") when the host's
event loop stalls: the confirmations that arrived meanwhile are read before the window closes.

The host end is the bus driver's BusLink on a real pty opened as the driver opens a port (drivers/serial_port.py); the
test writes the stations' two-byte confirmations on the pty's other end itself, so it decides when they arrive.
"""

from __future__ import annotations

import asyncio
import os
import select
import time
import tty
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from drivers.reference.bus_link import BusLink
from drivers.reference.framing import GROUP_LOCK, FrameParser, Kind, decode_message, slot_confirmation
from drivers.serial_port import open_serial, unread_input
from tests.drivers.line_log import unread, until_readable

STATIONS = [11, 12, 13, 14, 15, 16, 17]
WINDOW = 0.05  # seconds: the ACK timeout the window lasts (100 ms by default; shorter keeps the test quick)
BOUND = 5.0  # failure bound only


@dataclass
class Host:
    link: BusLink
    stations_end: int  # the pty's master: where the stations' bytes go in and the host's frames come out
    host_end: int  # the pty's slave, as the host's port has it open
    confirmed: dict[int, asyncio.Future[None]]
    delivered: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def group_seq(self) -> int:
        """The SEQ of the GROUP frame the host wrote (read from the line, blocking: nothing else runs meanwhile)."""
        parser = FrameParser()
        while True:
            readable, _, _ = select.select([self.stations_end], [], [], BOUND)
            assert readable, "the host wrote no GROUP frame"
            frames = parser.feed(os.read(self.stations_end, 64))
            if frames:
                (frame,) = frames
                assert frame.kind == Kind.GROUP
                assert decode_message(frame.payload) == {"cmd": "lock", "stations": STATIONS}
                return frame.seq


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    master, slave = os.openpty()
    tty.setraw(slave)
    reader, writer = await open_serial(os.ttyname(slave))
    loop = asyncio.get_running_loop()
    confirmed = {address: loop.create_future() for address in STATIONS}
    delivered: list[tuple[int, dict[str, Any]]] = []

    def on_data(src: int, payload: bytes) -> None:
        delivered.append((src, decode_message(payload)))
        if not confirmed[src].done():
            confirmed[src].set_result(None)

    link = BusLink(reader, writer, peers=STATIONS, on_data=on_data, in_waiting=unread_input(writer), name="test-bus")
    link.start()
    try:
        yield Host(link, master, slave, confirmed, delivered)
    finally:
        await link.close()
        os.close(master)
        os.close(slave)


async def test_a_stalled_host_reads_the_confirmations_that_arrived_before_it_closes_the_window(host: Host) -> None:
    """Every station confirms in its slot, but the host's loop is held up (a journal commit, a GC pause) past the
    window: when it runs again the confirmations wait on its port, and its window timer is due in the same turn as the
    stations' bytes landed, before the transport has read them. The host reads them before it closes the window: all
    seven confirmed, none left to lock on its own (before the fix the window closed unread: all seven fell back)."""
    loop = asyncio.get_running_loop()
    host.link.send_group(GROUP_LOCK, STATIONS)
    seq = host.group_seq()
    pairs = b"".join(slot_confirmation(address, seq) for address in STATIONS)
    stalled: list[float] = []

    def stall() -> None:
        started = loop.time()
        time.sleep(2 * WINDOW)  # the stall under test, not a wait for anything
        stalled.append(loop.time() - started)

    def stations_confirm() -> None:
        # Due before the window's timer, so both run in the turn after the stall, this first: the confirmations are on
        # the host's side of the pty when the window's timer runs, and the loop has not polled the port since.
        os.write(host.stations_end, pairs)
        until_readable(host.host_end, len(pairs))

    loop.call_soon(stall)
    loop.call_later(WINDOW / 2, stations_confirm)
    await host.link.await_slots(list(host.confirmed.values()), WINDOW)

    assert stalled and stalled[0] > WINDOW, "the loop must have been held up past the window"
    missed = [address for address, done in host.confirmed.items() if not done.done()]
    assert missed == [], "stations the host would lock one by one although their confirmations had arrived"
    assert host.delivered == [(address, {"evt": "locked"}) for address in STATIONS]  # slot order, once each
    assert unread(host.host_end) == 0


async def test_the_window_still_closes_on_time_without_the_missing_confirmations(host: Host) -> None:
    """Stations 13 and 16 never confirm: the window closes after its timeout with the other five confirmed, and the
    two missing are left for the caller to lock on their own."""
    host.link.send_group(GROUP_LOCK, STATIONS)
    seq = host.group_seq()
    answering = [a for a in STATIONS if a not in (13, 16)]
    os.write(host.stations_end, b"".join(slot_confirmation(a, seq) for a in answering))
    await host.link.await_slots(list(host.confirmed.values()), WINDOW)
    assert [a for a, done in host.confirmed.items() if not done.done()] == [13, 16]
    assert host.delivered == [(a, {"evt": "locked"}) for a in answering]
