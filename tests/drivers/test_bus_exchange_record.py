"""The host keeps one record per exchange on a wager bus (bus_window.LineWindow): what it waits for next on the return
pair is what it has read, whenever it read it. Two cases the per-exchange bookkeeping once handled badly or by luck:

- An answer read while the frame's own write still drains. With the host's output queue full (the host's pair busy),
  the write returns only once the queue is below its low-water mark; the station may have ACKed the frame and sent its
  event by then. Before, the wait for the answer was set up only after the write returned: the `locked` (or a v3 REPLY
  to an `identify`) read meanwhile was not counted, and the host then waited the answer's whole line time for a frame
  it had read, no GROUP frame or broadcast lock going meanwhile.
- The answer to a frame sent again after its first copy's line time had passed. The copies were dropped from the count
  whenever the host asked whether answers were due in between (a lock pressed while the station was silent): the copy's
  answer, still to come after the first one ended the exchange, was then not waited for. It was waited for only when
  nobody asked in between.

The host end is BusLink on a real pty opened as the driver opens a port; the test plays the station on the pty's other
end. Slow line speeds make each answer's line time a failure bound only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest

from drivers.reference.bus_link import BusLink
from drivers.reference.framing import VERSION_3, Kind, encode_frame, encode_message
from tests.drivers.loop_pauses import LoopPauses
from tests.drivers.pty_host import BOUND, copies_read, frames_waiting, pty_host, read_seqs

STATION = 11
IDENTITY = {"evt": "identity", "model": "SIM-WAGER-STATION", "serial": "s11", "firmware": "1.0.0", "protocol": 3}

# The host's link, the station's end of the pty, the payloads read, and the host's writer (for its flow control).
Host = tuple[BusLink, int, asyncio.Queue[bytes], asyncio.StreamWriter]


async def _host(baud: int, ack_timeout: float) -> AsyncIterator[Host]:
    read: asyncio.Queue[bytes] = asyncio.Queue()
    on_data = lambda _src, payload: read.put_nowait(payload)  # noqa: E731
    async with pty_host(peers=[STATION], baud=baud, ack_timeout=ack_timeout, on_data=on_data) as (link, master, w):
        yield link, master, read, w


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    """Counted at 300 baud: a `lock` and its answer 2.2 s from the write, an `identify` and its answer 8 s."""
    async for opened in _host(300, BOUND):
        yield opened


@pytest.fixture
async def host_4800() -> AsyncIterator[Host]:
    """Counted at 4800 baud: an `identify` and its answer, 0.5 s from the write; sent again after 0.8 s."""
    async for opened in _host(4800, 0.8):
        yield opened


async def _sent_while_draining(host: Host, message: dict[str, str]) -> tuple[asyncio.Future[None], int]:
    """`message` sent to the station while the host's output queue is full: returns once the frame is on the line and
    its write still waits to drain (the send, the frame's SEQ). Faked: the queue being full, as the transport says it
    above its high-water mark (pause_writing): the write then waits however large the kernel's buffer is (a pty's queue
    really full is tests/drivers/test_serial_port.py's, with serial_asyncio_fast 0.16's write callback fixed)."""
    link, station_end, _read, writer = host
    writer.transport.get_protocol().pause_writing()
    sent = asyncio.ensure_future(link.send_to(STATION, message))
    (seq,) = await asyncio.to_thread(read_seqs, station_end, 1)
    assert not sent.done(), "the write did not wait to drain"
    return sent, seq


async def test_an_ack_and_its_event_read_while_the_write_drains_end_the_exchange(host: Host) -> None:
    link, station_end, read, writer = host
    sent, seq = await _sent_while_draining(host, {"cmd": "lock"})
    locked = encode_message({"evt": "locked", "src": STATION})
    os.write(station_end, encode_frame(0, seq, Kind.ACK, b"") + encode_frame(0, 41, Kind.DATA, locked))
    assert b"locked" in await asyncio.wait_for(read.get(), BOUND)
    assert not sent.done(), "the write drained before the answer was read"
    writer.transport.get_protocol().resume_writing()
    await asyncio.wait_for(sent, BOUND)
    assert not link.answers_due(), "the `locked` read while the lock's write drained did not end the exchange"


async def test_a_reply_read_while_the_write_drains_leaves_no_event_due(host: Host) -> None:
    """An `identify` goes as a v1 exchange (the station's version unknown); a v3 station's REPLY carries the identity.
    Read while the write still drains, it is the whole answer all the same: no event is due after it."""
    link, station_end, read, writer = host
    sent, seq = await _sent_while_draining(host, {"cmd": "identify"})
    os.write(station_end, encode_frame(STATION, seq, Kind.REPLY, encode_message(IDENTITY, VERSION_3), VERSION_3, True))
    await asyncio.wait_for(read.get(), BOUND)  # the identity
    assert not sent.done(), "the write drained before the answer was read"
    writer.transport.get_protocol().resume_writing()
    await asyncio.wait_for(sent, BOUND)
    assert not link.answers_due(), "the REPLY read while the identify's write drained left an event counted due"


async def test_the_answer_to_a_copy_is_awaited_though_answers_due_was_asked_between_the_copies(
    host_4800: Host,
) -> None:
    link, station_end, _read, _writer = host_4800
    loop = asyncio.get_running_loop()
    pauses = LoopPauses()
    asked = loop.time()
    sent = asyncio.ensure_future(link.send_to(STATION, {"cmd": "identify"}))
    first, *copies = await copies_read(station_end, pauses, 0.8)
    await asyncio.sleep(0.6)  # the station's silence: the scenario itself, past the first copy's 0.5 s line time
    # A lock pressed now asks whether an answer is due: none within its line time. Only while the copy cannot have
    # gone: a stall of this process (tools/stall.py) that stretched the sleep past the ACK timeout let the host
    # write it, rightly, and its answer is then due.
    if loop.time() - asked < 0.8:
        assert not link.answers_due(), "the first copy's line time has not passed: the station is not late"
    if not copies:
        copies = await asyncio.to_thread(read_seqs, station_end, 1)
    reply = encode_frame(STATION, first, Kind.REPLY, encode_message(IDENTITY, VERSION_3), VERSION_3, True)
    os.write(station_end, reply)  # the first copy's answer, late: it ends the exchange
    await asyncio.wait_for(sent, BOUND)
    copies += frames_waiting(station_end)  # a stall past a second ACK timeout: a third copy; none after the end
    await pauses.stop()
    assert copies == [first] * len(copies), (first, copies)
    if pauses.longest < 0.4:
        assert len(copies) == 1, (copies, pauses.longest)
    # The copy went 0.8 s after the first at the earliest, its answer due for its line time (0.5 s) from then: past
    # that (a stall), the host rightly counts the station late, and nothing is due.
    if loop.time() - asked < 0.8 + 0.5:
        assert link.answers_due(), "the station's answer to the copy is still to come on the return pair"
    link.hold()
    try:
        clear = asyncio.ensure_future(link.clear_for_group(0.0))
        os.write(station_end, reply * len(copies))  # the answer to each copy
        assert await asyncio.wait_for(clear, BOUND)
    finally:
        link.unhold()
    assert not link.answers_due()
