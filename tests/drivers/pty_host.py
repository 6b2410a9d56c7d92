"""A wager-bus host (`BusLink`) on a real pty, the station's end left to the test: it writes what a station answers
and reads what the host wrote (`read_seqs`). Shared by the bus tests that play the station byte by byte."""

from __future__ import annotations

import asyncio
import os
import select
import tty
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from drivers.reference.bus_link import BusLink
from drivers.reference.framing import FrameParser
from drivers.serial_port import open_serial, unread_input
from tests.drivers.loop_pauses import LoopPauses

BOUND = 5.0  # failure bound only


@asynccontextmanager
async def pty_host(
    *, peers: Sequence[int], baud: int, ack_timeout: float, on_data: Callable[[int, bytes], None]
) -> AsyncIterator[tuple[BusLink, int, asyncio.StreamWriter]]:
    """The host's link started on a pty counted at `baud`, the station's end (the master fd) and the host's writer
    (for its flow control); closed with both ends after."""
    master, slave = os.openpty()
    tty.setraw(slave)
    reader, writer = await open_serial(os.ttyname(slave))
    link = BusLink(
        reader,
        writer,
        peers=list(peers),
        on_data=on_data,
        in_waiting=unread_input(writer),
        ack_timeout=ack_timeout,
        baud=baud,
    )
    link.start()
    try:
        yield link, master, writer
    finally:
        await link.close()
        os.close(master)
        os.close(slave)


def read_seqs(fd: int, count: int) -> list[int]:
    """The SEQs of the next `count` whole frames the host wrote, or more if one read held more (blocking: run it off
    the loop, asyncio.to_thread)."""
    parser = FrameParser()
    seqs: list[int] = []
    while len(seqs) < count:
        readable, _, _ = select.select([fd], [], [], BOUND)
        assert readable, f"the host wrote {len(seqs)} frame(s), not {count}"
        seqs += [frame.seq for frame in parser.feed(os.read(fd, 256))]
    return seqs


def frames_waiting(fd: int) -> list[int]:
    """The SEQs of the whole frames the host has written and nobody read yet (no wait: what the host's writes, on this
    process's loop, have already put in the pty)."""
    parser = FrameParser()
    seqs: list[int] = []
    while select.select([fd], [], [], 0)[0]:
        seqs += [frame.seq for frame in parser.feed(os.read(fd, 256))]
    return seqs


async def copies_read(fd: int, pauses: LoopPauses, ack_timeout: float) -> list[int]:
    """The SEQ of each copy of the next frame the host wrote that is on the pty by now: one, or more than one only
    after a pause of this process's loop (`pauses`, started before the frame was sent) reached half the host's ACK
    timeout. The simulated station here is the test itself, held by a stall (tools/stall.py's SIGSTOP) with the host:
    past the ACK timeout the host rightly writes the frame again, and one read can hold both copies. Every frame read
    must be a copy (the same SEQ): a second frame fails here."""
    seqs = await asyncio.to_thread(read_seqs, fd, 1)
    seqs += frames_waiting(fd)
    assert seqs == [seqs[0]] * len(seqs), f"frames other than copies of the first: SEQs {seqs}"
    if pauses.longest < ack_timeout / 2:
        assert len(seqs) == 1, f"the frame was written {len(seqs)} times without a stall ({pauses.longest:.3f} s)"
    return seqs
