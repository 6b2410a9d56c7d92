"""The host's link on a serial port parses each frame in the transport's read callback (drivers/reference/transport.py,
PushReader): one loop callback a device frame, not the read and then a wake-up of a reader task (bench/footprint.py
--wakeups). Real pseudo-terminals, opened by drivers/serial_port.open_serial as a driver opens its port; the device
end is a simulator's link (drivers/sim/pty.py) or bytes the test writes itself.
"""

from __future__ import annotations

import asyncio
import os
import tty
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from drivers.reference.framing import HOST_ADDRESS, VERSION_3, Frame, FrameParser, Kind, encode_frame, encode_message
from drivers.reference.link import IDLE_EXPIRY, Link
from drivers.reference.transport import PushReader
from drivers.serial_port import open_serial
from drivers.sim.pty import PtyEndpoint
from tests.drivers.loop_pauses import LoopPauses

TIMEOUT = 5.0


async def test_a_device_frame_is_acked_and_delivered_in_the_read_that_brought_it() -> None:
    """A station's REPLY (docs/protocol.md section 12) and an event of its own reach the host's on_data in the
    transport's read callback (no task is running), with the REPLY's waiter already resolved and the event's ACK
    already written: before, a reader task was woken for each, one loop callback more a frame."""
    endpoint = PtyEndpoint()
    device: Link

    def on_command(_payload: bytes) -> None:
        assert device.answer({"evt": "locked"})

    device = Link(endpoint, endpoint, local_address=1, peer_address=HOST_ADDRESS, on_data=on_command, name="device")
    device.follow_peer = True
    device.start()
    seen: list[tuple[bytes, bool, bool]] = []  # (payload, in a task, the lock's waiter resolved)
    reader, writer = await open_serial(endpoint.path)
    assert isinstance(reader, PushReader)
    host: Link

    def on_data(payload: bytes) -> None:
        awaiting = host._awaiting
        seen.append((payload, asyncio.current_task() is not None, awaiting is None or awaiting[1].done()))

    host = Link(reader, writer, local_address=HOST_ADDRESS, peer_address=1, on_data=on_data, name="host")
    host.version = VERSION_3
    host.start()
    pauses = LoopPauses()
    try:
        async with asyncio.timeout(TIMEOUT):
            await host.send({"cmd": "lock"})
            await device.send({"evt": "wager", "spot": "ante", "amount_cents": 500})
        await pauses.stop()
        assert seen == [
            (encode_message({"evt": "locked"}, VERSION_3), False, True),
            (encode_message({"evt": "wager", "spot": "ante", "amount_cents": 500}, VERSION_3), False, True),
        ]
        # Two frames read; a third only if a stall of this process past the device's ACK timeout (the device is held
        # with the host) had it send its wager again, the copy then ACKed and not delivered twice (above).
        assert host.data_versions[VERSION_3] == 2 or pauses.longest >= device.ack_timeout / 2, pauses.longest
    finally:
        await pauses.stop()
        await host.close()
        await device.close()
        endpoint.close()


@asynccontextmanager
async def _raw_line(
    on_data: Callable[[bytes], None], on_closed: Callable[[str], None], on_noise: Callable[[int, int], None]
) -> AsyncIterator[tuple[int, Link]]:
    """A host link on the slave of a pty whose master the test writes raw device bytes to."""
    master, slave = os.openpty()
    tty.setraw(slave)
    reader, writer = await open_serial(os.ttyname(slave))
    link = Link(
        reader,
        writer,
        local_address=HOST_ADDRESS,
        peer_address=1,
        on_data=on_data,
        on_closed=on_closed,
        on_noise=on_noise,
        name="host",
    )
    link.start()
    try:
        yield master, link
    finally:
        await link.close()
        os.close(master)
        os.close(slave)


def _event(seq: int, name: str) -> bytes:
    return encode_frame(1, seq, Kind.DATA, encode_message({"evt": name}, VERSION_3), VERSION_3, True)


async def test_a_partial_frame_is_dropped_once_its_line_is_silent_and_the_next_frame_is_read() -> None:
    """A frame cut off mid-way (an unplug, a device reset) is discarded IDLE_EXPIRY after its last byte with no further
    bytes to trigger it (a timer, as the read loop's timeout was), and the next whole frame is delivered."""
    loop = asyncio.get_running_loop()
    delivered: asyncio.Queue[bytes] = asyncio.Queue()
    noise: asyncio.Future[tuple[int, int]] = loop.create_future()

    def on_noise(discarded: int, bad: int) -> None:
        if not noise.done():
            noise.set_result((discarded, bad))

    async with _raw_line(delivered.put_nowait, lambda _reason: None, on_noise) as (master, link):
        whole = _event(7, "button")
        cut_at = loop.time()
        os.write(master, whole[:5])
        async with asyncio.timeout(TIMEOUT):
            assert await noise == (5, 1)  # five bytes dropped, as one bad frame
        assert loop.time() - cut_at >= IDLE_EXPIRY
        assert not link.parser.pending
        os.write(master, whole)
        async with asyncio.timeout(TIMEOUT):
            assert await delivered.get() == encode_message({"evt": "button"}, VERSION_3)


class _BrokenParser(FrameParser):
    """A parser with a bug: nothing the line can send makes the real one raise (tests/drivers/test_protocol.py runs
    it under hypothesis), so the fault is put in by hand."""

    def feed(self, data: bytes) -> list[Frame]:
        raise ValueError("parser bug")


async def test_a_parser_error_in_the_read_callback_ends_the_session_loudly(caplog: pytest.LogCaptureFixture) -> None:
    """An exception while parsing in the transport's callback must not vanish into the loop's exception handler with
    the link still looking alive: the session ends with the error (on_closed: the driver goes offline and
    reconnects), and nothing read afterwards is acted on."""
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[str] = loop.create_future()
    delivered: list[bytes] = []
    async with _raw_line(delivered.append, closed.set_result, lambda _d, _b: None) as (master, link):
        link.parser = _BrokenParser()
        os.write(master, _event(1, "button"))
        async with asyncio.timeout(TIMEOUT):
            assert await closed == "read failed: parser bug"
        assert link.closed.is_set() and link.close_reason == "read failed: parser bug"
        link.parser = FrameParser()
        with pytest.raises(Exception, match="parser bug"):
            await link.send({"cmd": "ping"})
    assert delivered == []


def test_what_arrived_before_the_link_attached_is_handed_over_first() -> None:
    """Bytes the transport read between opening the port and the link's start, and an end of file among them, reach
    the consumer on attach, in order."""
    loop = asyncio.new_event_loop()
    reader = PushReader(loop=loop)
    loop.close()  # the reader only needs one to be built; nothing here waits
    reader.feed_data(b"\xa5\x3b")
    reader.feed_data(b"\x01\x07")
    reader.feed_eof()
    chunks: list[bytes] = []
    ends: list[BaseException | None] = []
    reader.attach(chunks.append, ends.append)
    assert chunks == [b"\xa5\x3b\x01\x07"] and ends == [None]
    reader.feed_data(b"late")
    assert chunks == [b"\xa5\x3b\x01\x07", b"late"]
