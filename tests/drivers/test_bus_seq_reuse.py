"""A SEQ the return pair still owes an answer to is not given to another station's exchange (docs/protocol.md section
2, "Sequence numbers are per station").

A v1 station ACKs a `lock`, then sends its `locked` as a frame of its own: the host's send returns at the ACK, and the
exchange's SEQ is no longer outstanding, but the `locked` is still due on the return pair (a GROUP frame or broadcast
lock waits for it, bus_window.LineWindow). Before, another station's next exchange could take that SEQ: its record
replaced the one still waiting for the `locked`, and the host no longer waited for it (a GROUP frame could go over it);
a late v1 ACK, which names only the SEQ, would also have been taken for the new exchange's.

The host end is BusLink on a real pty opened as the driver opens a port; the test plays both stations on the pty's
other end. 30 baud makes the `locked`'s line time (16 s from the ACK) a failure bound only, longer than a stall the
test's 5 s bounds survive: at 300 baud (1.6 s), a stall of the process past it made the `locked` late (no longer due)
before the test looked.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest

from drivers.reference.bus_link import BusLink
from drivers.reference.bus_window import EVENT_ANSWER, Addressed, LineWindow
from drivers.reference.framing import Kind, encode_frame, encode_message
from tests.drivers.loop_pauses import LoopPauses
from tests.drivers.pty_host import BOUND, copies_read, pty_host

FIRST, SECOND = 11, 12

Host = tuple[BusLink, int, asyncio.Queue[tuple[int, bytes]]]


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    read: asyncio.Queue[tuple[int, bytes]] = asyncio.Queue()
    on_data = lambda src, payload: read.put_nowait((src, payload))  # noqa: E731
    async with pty_host(peers=[FIRST, SECOND], baud=30, ack_timeout=BOUND, on_data=on_data) as (link, master, _):
        yield link, master, read


def _event(src: int, seq: int, evt: str) -> bytes:
    return encode_frame(0, seq, Kind.DATA, encode_message({"evt": evt, "src": src}))


async def test_a_seq_whose_event_is_still_due_is_not_reused(host: Host) -> None:
    link, station_end, read = host
    # The host's ACK timeout is BOUND: only a stall of this process (tools/stall.py) past it has the host write a frame
    # again before the test, the stations, ACKs it; each station ACKs every copy it hears.
    pauses = LoopPauses()
    lock = asyncio.ensure_future(link.send_to(FIRST, {"cmd": "lock"}))
    seq, *copies = await copies_read(station_end, pauses, BOUND)
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b"") * (1 + len(copies)))
    await asyncio.wait_for(lock, BOUND)  # the send is over; the `locked` is still to come
    assert link.answers_due()
    # The second station's counter stands at that SEQ (its counter is its own, drawn at random: here made to collide).
    link._next_seqs[SECOND] = seq
    ping = asyncio.ensure_future(link.send_to(SECOND, {"cmd": "ping"}))
    other, *copies = await copies_read(station_end, pauses, BOUND)
    assert other != seq, "the second station's exchange took the SEQ whose `locked` is still due"
    os.write(station_end, encode_frame(0, other, Kind.ACK, b"") * (1 + len(copies)) + _event(SECOND, 40, "pong"))
    await asyncio.wait_for(ping, BOUND)
    assert await asyncio.wait_for(read.get(), BOUND) == (SECOND, encode_message({"evt": "pong", "src": SECOND}))
    assert link.answers_due(), "the first station's `locked` is still due on the return pair"
    os.write(station_end, _event(FIRST, 41, "locked"))
    assert (await asyncio.wait_for(read.get(), BOUND))[0] == FIRST
    assert not link.answers_due()
    await pauses.stop()


async def test_with_every_free_seq_owed_the_first_free_one_but_never_the_previous() -> None:
    """Hundreds of stations with their answers due: the first free SEQ, as before, and never the station's previous
    one (`start` - 1), which a station would take for a retransmission of its last command."""
    window = LineWindow(10 / 300, lambda _address: False)
    start = 250
    in_flight = {(start + step) % 256 for step in range(0, 255, 2)}  # every other SEQ in flight to another station
    previous = (start - 1) % 256
    for seq in range(256):
        if seq not in in_flight and seq != previous:  # the rest kept but the previous one: an answer due to each
            window.copying(Addressed(1 + seq % 254, seq, EVENT_ANSWER), 23)
    assert window.next_seq(start, in_flight) == (start + 1) % 256  # owed, but free: not the previous, owed nothing
    everything_but_the_previous = {(start + step) % 256 for step in range(255)}
    with pytest.raises(RuntimeError, match="every SEQ is in flight"):
        window.next_seq(start, everything_but_the_previous)
