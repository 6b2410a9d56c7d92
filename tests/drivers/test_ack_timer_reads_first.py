"""A host whose event loop stalls past its ACK timeout reads the ACK or REPLY already on its port before it resends
(docs/protocol.md sections 4 and 12): the device answered in time, so the frame crosses the line once.

The host end is the reference driver's Link on a real pty opened as the driver opens a port (drivers/serial_port.py);
the test plays the device on the pty's other end (a PtyEndpoint, whose frames tests/drivers/line_log.py counts) and
writes the answer itself, so it decides when the answer arrives.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from drivers.reference.framing import (
    HOST_ADDRESS,
    VERSION,
    VERSION_3,
    Frame,
    FrameParser,
    Kind,
    encode_frame,
    encode_message,
)
from drivers.reference.link import Link, LinkTimeout
from drivers.serial_port import open_serial, unread_input
from drivers.sim.pty import PtyEndpoint
from tests.drivers.line_log import LineLog, unread, until_readable

DEVICE = 1
TIMEOUT = 0.05  # seconds: the ACK timeout (100 ms by default; shorter keeps the test quick)
BOUND = 5.0  # failure bound only
FIRST_SEQ = 0x40


@dataclass
class Host:
    link: Link
    device: PtyEndpoint
    line: LineLog
    delivered: list[bytes] = field(default_factory=list)


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    device = PtyEndpoint()
    line = LineLog(device)
    reader, writer = await open_serial(device.path)
    delivered: list[bytes] = []
    link = Link(
        reader,
        writer,
        local_address=HOST_ADDRESS,
        peer_address=DEVICE,
        on_data=delivered.append,
        ack_timeout=TIMEOUT,
        retries=3,
        initial_seq=FIRST_SEQ,  # known to the device end before it has read the frame (the loop may be stalled then)
        name="test-host",
        in_waiting=unread_input(writer),
    )
    link.start()
    try:
        yield Host(link, device, line, delivered)
    finally:
        await link.close()
        device.close()


async def next_data(device: PtyEndpoint, parser: FrameParser) -> Frame:
    """The host's next DATA frame, as the device end reads it."""
    async with asyncio.timeout(BOUND):
        while True:
            for frame in parser.feed(await device.read(64)):
                if frame.kind == Kind.DATA:
                    return frame


@pytest.mark.parametrize("version", [VERSION, VERSION_3], ids=["v1-ACK", "v3-REPLY"])
async def test_a_stalled_host_reads_the_answer_on_its_port_before_it_resends(host: Host, version: int) -> None:
    """The device answers (v1: an ACK; v3: the REPLY that is the ACK and the answer, docs/protocol.md section 12)
    within the timeout, but the host's loop is held up (a journal commit, a GC pause) past it: when the loop runs
    again the answer waits on the host's port and the ACK timer is due in the same turn as the answer landed, before
    the transport has read it. The host reads it first: one DATA frame on the line, not two (before the fix the timer
    fired unread and the host sent the frame again)."""
    loop = asyncio.get_running_loop()
    host.link.version = version
    stalled: list[float] = []

    def stall() -> None:
        started = loop.time()
        time.sleep(2 * TIMEOUT)  # the stall under test, not a wait for anything
        stalled.append(loop.time() - started)

    def device_answers(seq: int) -> None:
        # Due before the ACK timer, so both run in the turn after the stall, this first: the answer is on the host's
        # side of the pty when the timer runs, and the loop has not polled the port since.
        if version == VERSION_3:
            answer = encode_frame(DEVICE, seq, Kind.REPLY, encode_message({"evt": "pong"}, VERSION_3), VERSION_3, True)
        else:
            answer = encode_frame(HOST_ADDRESS, seq, Kind.ACK)
        host.device.write(answer)
        until_readable(host.device.slave_fd, len(answer))

    async def frame_left() -> None:
        # Called once the DATA frame is written, just before the ACK timer starts (the same turn): the stall and the
        # answer are timed against that timer. The link's hook for a paced line; here only a clock for the test.
        host.link.frame_left = None  # the first copy only: a resend must not be answered
        loop.call_soon(stall)
        loop.call_later(TIMEOUT / 2, device_answers, FIRST_SEQ)

    host.link.frame_left = frame_left
    parser = FrameParser()
    mark = host.line.mark()
    sending = asyncio.create_task(host.link.send({"cmd": "ping"}))
    assert (await next_data(host.device, parser)).seq == FIRST_SEQ
    async with asyncio.timeout(BOUND):
        await sending
    # A fence: the host's next command, answered plainly. Once the device has read it, it has read every byte the host
    # wrote before it (a resend the pty had not yet handed across when `send` returned).
    fencing = asyncio.create_task(host.link.send({"cmd": "ping"}))
    while (fence := await next_data(host.device, parser)).seq == FIRST_SEQ:
        pass
    host.device.write(
        encode_frame(DEVICE, fence.seq, Kind.ACK, b"", VERSION_3, True)
        if version == VERSION_3
        else encode_frame(HOST_ADDRESS, fence.seq, Kind.ACK)
    )
    async with asyncio.timeout(BOUND):
        await fencing
    assert stalled and stalled[0] > TIMEOUT, "the loop must have been held up past the ACK timeout"
    window = host.line.window(mark)
    seen = [(on.from_host, on.frame.kind, on.frame.seq) for on in window]
    answer_kind = Kind.REPLY if version == VERSION_3 else Kind.ACK
    # The frame once and its answer, then the fence (its ACK may still be on its way).
    assert seen[:3] == [
        (True, Kind.DATA, FIRST_SEQ),
        (False, answer_kind, FIRST_SEQ),
        (True, Kind.DATA, fence.seq),
    ], "\n".join(map(str, window))
    if version == VERSION_3:
        assert host.delivered == [encode_message({"evt": "pong"}, VERSION_3)]  # the answer, once
    assert unread(host.device.slave_fd) == 0


async def test_no_answer_still_times_out_and_resends(host: Host) -> None:
    """A device that never answers: the frame goes out retries + 1 times, a timeout apart, then LinkTimeout."""
    mark = host.line.mark()
    with pytest.raises(LinkTimeout):
        async with asyncio.timeout(BOUND):
            await host.link.send({"cmd": "ping"})
    sent = [on for on in host.line.window(mark) if on.from_host]
    assert [on.frame.kind for on in sent] == [Kind.DATA] * 4
    assert len({on.frame.seq for on in sent}) == 1  # the same frame again, not new ones
