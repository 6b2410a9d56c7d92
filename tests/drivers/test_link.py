"""Link layer: ACK, NAK, retransmission, duplicates, closure (over an in-memory transport)."""

from __future__ import annotations

import asyncio
from typing import TypedDict, Unpack

import pytest

from drivers.reference.framing import Frame, FrameParser, Kind, encode_frame
from drivers.reference.link import Link, LinkClosed, LinkTimeout

TIMEOUT = 5.0


class FakeWriter:
    """Records every frame the link writes."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[Frame] = asyncio.Queue()
        self._parser = FrameParser()

    def write(self, data: bytes) -> None:
        for frame in self._parser.feed(data):
            self.frames.put_nowait(frame)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def next(self) -> Frame:
        return await asyncio.wait_for(self.frames.get(), TIMEOUT)


class Tuning(TypedDict, total=False):
    """The Link's timing a test may change."""

    ack_timeout: float
    retries: int


class Harness:
    def __init__(self, **kwargs: Unpack[Tuning]) -> None:
        self.reader = asyncio.StreamReader()
        self.writer = FakeWriter()
        self.delivered: list[bytes] = []
        self.closed_reasons: list[str] = []
        self.link = Link(
            self.reader,
            self.writer,
            local_address=0,
            peer_address=1,
            on_data=self.delivered.append,
            on_closed=self.closed_reasons.append,
            initial_seq=7,
            **kwargs,
        )
        self.link.start()

    def peer_sends(self, kind: Kind, seq: int, payload: bytes = b"") -> None:
        self.reader.feed_data(encode_frame(0, seq, kind, payload))


async def test_send_completes_on_ack() -> None:
    h = Harness(ack_timeout=10)
    send = asyncio.create_task(h.link.send({"cmd": "ping"}))
    frame = await h.writer.next()
    assert (frame.address, frame.seq, frame.kind, frame.payload) == (1, 7, Kind.DATA, b'{"cmd":"ping"}')
    h.peer_sends(Kind.ACK, 7)
    await asyncio.wait_for(send, TIMEOUT)
    await h.link.close()


async def test_nak_triggers_immediate_retransmission() -> None:
    h = Harness(ack_timeout=10)  # far longer than the test's bound: only the NAK can cause the resend
    send = asyncio.create_task(h.link.send({"cmd": "shuffle"}))
    first = await h.writer.next()
    h.peer_sends(Kind.NAK, first.seq)
    assert await h.writer.next() == first
    h.peer_sends(Kind.ACK, first.seq)
    await asyncio.wait_for(send, TIMEOUT)
    await h.link.close()


async def test_unacknowledged_send_times_out_after_retries() -> None:
    h = Harness(ack_timeout=0.01, retries=3)
    with pytest.raises(LinkTimeout, match="4 attempts"):
        await asyncio.wait_for(h.link.send({"cmd": "lock"}), TIMEOUT)
    assert h.writer.frames.qsize() == 4
    await h.link.close()


async def test_ack_for_another_seq_is_ignored() -> None:
    h = Harness(ack_timeout=0.01, retries=1)
    send = asyncio.create_task(h.link.send({"cmd": "lock"}))
    await h.writer.next()
    h.peer_sends(Kind.ACK, 99)
    with pytest.raises(LinkTimeout):
        await asyncio.wait_for(send, TIMEOUT)
    await h.link.close()


async def test_duplicate_is_acked_again_but_delivered_once() -> None:
    h = Harness()
    for _ in range(2):
        h.peer_sends(Kind.DATA, 200, b'{"evt":"pong"}')
        ack = await h.writer.next()
        assert (ack.kind, ack.seq, ack.address) == (Kind.ACK, 200, 1)
    h.peer_sends(Kind.DATA, 201, b'{"evt":"pong"}')
    await h.writer.next()
    assert h.delivered == [b'{"evt":"pong"}', b'{"evt":"pong"}']
    await h.link.close()


async def test_corrupt_data_frame_is_nakked() -> None:
    h = Harness()
    damaged = bytearray(encode_frame(0, 33, Kind.DATA, b'{"evt":"pong"}'))
    damaged[9] ^= 0x20
    h.reader.feed_data(bytes(damaged))
    nak = await h.writer.next()
    assert (nak.kind, nak.seq) == (Kind.NAK, 33)
    assert h.delivered == []
    await h.link.close()


async def test_frames_for_other_addresses_are_ignored() -> None:
    h = Harness()
    h.reader.feed_data(encode_frame(5, 1, Kind.DATA, b"{}"))
    h.peer_sends(Kind.DATA, 2, b'{"evt":"pong"}')
    ack = await h.writer.next()
    assert ack.seq == 2
    assert h.delivered == [b'{"evt":"pong"}']
    await h.link.close()


async def test_failing_callback_does_not_kill_the_reader() -> None:
    h = Harness()

    def explode(_: bytes) -> None:
        raise RuntimeError("boom")

    h.link._on_data = explode  # a consumer bug must not stop the link
    h.peer_sends(Kind.DATA, 1, b"{}")
    await h.writer.next()
    h.link._on_data = h.delivered.append
    h.peer_sends(Kind.DATA, 2, b"{}")
    await h.writer.next()
    assert h.delivered == [b"{}"]
    await h.link.close()


async def test_eof_closes_link_and_fails_pending_send() -> None:
    h = Harness(ack_timeout=10)
    send = asyncio.create_task(h.link.send({"cmd": "ping"}))
    await h.writer.next()
    h.reader.feed_eof()
    with pytest.raises(LinkClosed):
        await asyncio.wait_for(send, TIMEOUT)
    await asyncio.wait_for(h.link.closed.wait(), TIMEOUT)
    assert h.closed_reasons == ["end of file"]
    with pytest.raises(LinkClosed):
        await h.link.send({"cmd": "ping"})
    await h.link.close()
    assert h.closed_reasons == ["end of file"]


async def test_read_error_is_reported_not_silent() -> None:
    h = Harness()
    h.reader.set_exception(OSError(5, "Input/output error"))
    await asyncio.wait_for(h.link.closed.wait(), TIMEOUT)
    assert h.closed_reasons and "Input/output error" in h.closed_reasons[0]
    await h.link.close()
