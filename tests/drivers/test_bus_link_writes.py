"""What the bus host holds for a slot window is what its sender says it writes (docs/protocol.md section 13, "What the
host writes around a window"), never what a frame's bytes look like.

The host end is BusLink on a real pty opened as the driver opens a port; the test reads the pty's other end itself and
no station answers. Before the change BusLink._write took any frame whose third byte is a station's address for one a
station answers: the host's ACK to a station (ADDR is the station's, in every version) written through it would be held
behind a GROUP frame and given its answer deadline. Today's host writes its ACKs another way, so the case is
constructed: the host's ACK, through the link's frame writer, while a GROUP frame is due.
"""

from __future__ import annotations

import asyncio
import os
import select
import tty
from collections.abc import AsyncIterator, Callable

import pytest

from drivers.reference.bus_link import BusLink
from drivers.reference.framing import VERSION_3, Frame, FrameParser, Kind, encode_frame
from drivers.serial_port import open_serial, unread_input

STATIONS = [11, 12]
BOUND = 5.0  # failure bound only


@pytest.fixture
async def host() -> AsyncIterator[tuple[BusLink, int]]:
    master, slave = os.openpty()
    tty.setraw(slave)
    reader, writer = await open_serial(os.ttyname(slave))
    link = BusLink(reader, writer, peers=STATIONS, on_data=lambda _src, _payload: None, in_waiting=unread_input(writer))
    link.start()
    try:
        yield link, master
    finally:
        await link.close()
        os.close(master)
        os.close(slave)


def read_frame(fd: int) -> bytes:
    """The bytes of the host's writes up to the next whole frame, any read with it included (blocking: run it off the
    loop, asyncio.to_thread)."""
    parser = FrameParser()
    data = b""
    while True:
        readable, _, _ = select.select([fd], [], [], BOUND)
        assert readable, "the host wrote nothing"
        chunk = os.read(fd, 64)
        data += chunk
        if parser.feed(chunk):
            return data


async def test_the_hosts_ack_to_a_station_is_not_held_for_a_group_frame(host: tuple[BusLink, int]) -> None:
    link, stations_end = host
    # Station 11 has a ping outstanding (nobody answers it): a frame a station answers, with SEQ s.
    ping = asyncio.ensure_future(link.send_to(11, {"cmd": "ping"}))
    ping_frame = await asyncio.to_thread(read_frame, stations_end)
    seq = ping_frame[3]
    # A GROUP frame falls due: frames a station answers wait. The host's ACK of station 12's frame with the same SEQ s
    # (ADDR 12 in its third byte) is no such frame: nobody answers it, so it goes at once and owes no answer.
    link.hold()
    ack = encode_frame(12, seq, Kind.ACK, b"", VERSION_3)
    try:
        await asyncio.wait_for(link._write(ack), BOUND)
    except TimeoutError:
        pytest.fail("the host's ACK was held behind the GROUP frame as if a station answered it")
    finally:
        link.unhold()
    # Copies of the ping may come too: its ACK timeout passes while nobody answers (sooner than the test's reads under
    # a stall of this process, a loaded machine). Nothing else may.
    parser = FrameParser()
    (expected,) = parser.feed(ack)
    # The first read too can hold a copy: a stall past the ACK timeout between the host's write and the test's read.
    pinged, *copies = parser.feed(ping_frame)
    assert copies == [pinged] * len(copies), (pinged, copies)
    got = await asyncio.to_thread(read_frames, stations_end, parser, lambda frames: expected in frames)
    assert got.count(expected) == 1 and set(got) <= {expected, pinged}, got
    ping.cancel()


def read_frames(fd: int, parser: FrameParser, done: Callable[[list[Frame]], bool]) -> list[Frame]:
    """The frames the host wrote until `done(frames)` holds (blocking: run it off the loop, asyncio.to_thread)."""
    frames: list[Frame] = []
    while not done(frames):
        readable, _, _ = select.select([fd], [], [], BOUND)
        assert readable, f"the host wrote {frames} only"
        frames += parser.feed(os.read(fd, 64))
    return frames
