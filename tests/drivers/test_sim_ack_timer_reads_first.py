"""A simulator whose event loop stalls past its ACK timeout reads the host's ACK already waiting for it before it
resends its event (docs/protocol.md section 4, the host's rule; the simulators run the same LinkCore): the host ACKed
in time, so the event crosses the line once. On a loaded machine (benches, CI) a stalled simulator sent it twice.

The simulator is a ShufflerSim on a real pty (one line), and a station of a WagerBusSim (the shared line's fan-out);
the test plays the host on the pty's other end and writes the ACK itself, so it decides when the ACK arrives.
tests/drivers/line_log.py counts the frames on the line.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import tty

import pytest

from drivers.reference.framing import Frame, FrameParser, Kind, decode_message, encode_frame, encode_message
from drivers.reference.link import Link
from drivers.serial_port import open_serial
from drivers.sim.shuffler import ShufflerSim
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.line_log import LineLog, until_readable

TIMEOUT = 0.05  # seconds: the simulator's ACK timeout (100 ms by default; shorter keeps the test quick)
BOUND = 5.0  # failure bound only
ADDRESS = 1


async def ping_and_count_pongs(link: Link, line: LineLog, master_fd: int, port: str, acked: bool) -> list[Frame]:
    """Host: ping the simulator at ADDRESS and, if `acked`, ACK its `pong` in time while the simulator's loop is held up
    past its ACK timeout. Returns every `pong` that crossed the line once the exchange settled."""
    loop = asyncio.get_running_loop()
    link.ack_timeout = TIMEOUT
    reader, writer = await open_serial(port)
    # The ACK is written with os.write, at once: the serial writer would leave it to a later turn of the stalled loop.
    raw = os.open(port, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(raw)
    stalled: list[float] = []
    previous = link.frame_left
    answered = asyncio.Event()

    def stall() -> None:
        started = loop.time()
        time.sleep(2 * TIMEOUT)  # the stall under test, not a wait for anything
        stalled.append(loop.time() - started)

    def host_acks(seq: int) -> None:
        # Due before the simulator's ACK timer, so both run in the turn after the stall, this first: the ACK is on the
        # simulator's side of the pty when its timer runs, and its loop has not polled the pty since.
        frame = encode_frame(ADDRESS, seq, Kind.ACK)
        os.write(raw, frame)
        until_readable(master_fd, len(frame))
        answered.set()

    async def frame_left() -> None:
        # Called once the pong is written, just before its ACK timer starts: the stall and the ACK are timed against it.
        link.frame_left = previous  # the first copy only
        if previous is not None:
            await previous()
        assert link._awaiting is not None
        loop.call_soon(stall)
        if acked:
            loop.call_later(TIMEOUT / 2, host_acks, link._awaiting[0])

    link.frame_left = frame_left
    parser = FrameParser()

    async def host_reads(name: str) -> None:
        while not any(
            f.kind == Kind.DATA and decode_message(f.payload).get("evt") == name
            for f in parser.feed(await reader.read(4096))
        ):
            pass

    try:
        writer.write(encode_frame(ADDRESS, 0x20, Kind.DATA, encode_message({"cmd": "ping"})))
        async with asyncio.timeout(BOUND):
            await host_reads("pong")
            if acked:
                await answered.wait()
                # A fence: the simulator sends one frame at a time, so its identity comes after any copy of the pong.
                writer.write(encode_frame(ADDRESS, 0x21, Kind.DATA, encode_message({"cmd": "identify"})))
                await host_reads("identity")
            else:
                await link.holding.wait()  # every copy sent, the pong kept for the next host
        assert stalled and stalled[0] > TIMEOUT, "the loop must have been held up past the ACK timeout"
        return [on.frame for on in line.frames if not on.from_host and on.name == "pong"]
    finally:
        writer.close()
        os.close(raw)


@pytest.mark.parametrize("acked", [True, False], ids=["acked-in-time", "never-acked"])
async def test_a_stalled_simulator_reads_the_ack_before_it_resends(acked: bool) -> None:
    sim = ShufflerSim("shuffler", random.Random(7), lambda _deck: None)
    sim.configure_line((1,))
    await sim.start()
    try:
        assert sim._link is not None and sim._endpoint is not None
        line = LineLog(sim._endpoint)
        pongs = await ping_and_count_pongs(sim._link, line, sim._endpoint.master_fd, sim.port, acked)
        # ACKed in time: the pong once (before, its timer fired unread and it went twice). Never ACKed: the timer still
        # expires and the pong goes retries + 1 times, the same frame each time.
        assert len(pongs) == (1 if acked else 4)
        assert len(set(pongs)) == 1
    finally:
        await sim.stop()


async def test_a_stalled_bus_station_reads_the_ack_before_it_resends() -> None:
    """The same on a shared line: the host's ACK waits in the line's pty, not yet fanned out to the station's drop."""
    bus = WagerBusSim("wager_bus", addresses={1: ADDRESS, 2: 2}, protocols=(1,))
    await bus.start()
    try:
        station = bus.stations[1]
        assert station._link is not None and bus._endpoint is not None
        line = LineLog(bus._endpoint)
        pongs = await ping_and_count_pongs(station._link, line, bus._endpoint.master_fd, bus.port, acked=True)
        assert len(pongs) == 1
    finally:
        await bus.stop()
