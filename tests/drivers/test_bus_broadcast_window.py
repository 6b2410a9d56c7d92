"""v2's broadcast lock on a multi-drop line (docs/protocol.md section 10, "Broadcast lock"): the named stations answer
in slots back to back after the frame, each after 2 byte times of idle, so the host counts their answers as due, as it
counts a GROUP frame's slots (section 13, "What the host writes around a window"): a frame a station answers that falls
due meanwhile (a heartbeat) goes after the last `locked`, not into the slots.

Seven stations kept to protocol 2 (bus simulator) and the bus driver on a real pty paced at 115200 baud; frames read by
the endpoint's tap (line_log). The heartbeat is started by a spy on BusLink.broadcast right after the real call wrote
the frame: the order comes from the event loop, not from sleeping.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from drivers.interfaces import DeviceFault, LockAcknowledged
from drivers.reference.bus_window import Addressed
from drivers.reference.framing import BROADCAST_ADDRESS, FrameParser, Kind, decode_message
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import ADDRESSES, SEATS, Line, settled, start_line, stop_lines, without_late_acks
from tests.drivers.line_log import until_readable


@pytest.fixture
async def v2_line() -> AsyncIterator[Line]:
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []
    line = await start_line(started, protocol=2)
    assert {s.protocol_version for s in line[2].stations.values()} == {2}
    yield line
    await stop_lines(started)


def after_broadcast(driver: ReferenceWagerBus, action: Any, at: list[float] | None = None) -> list[asyncio.Future[Any]]:
    """Start `action()` (a coroutine) as a task once the next broadcast frame is written; the loop's time just before
    the write goes to `at`."""
    link = driver.link
    assert link is not None
    real = link.broadcast
    started: list[asyncio.Future[Any]] = []

    async def spy(*args: Any) -> None:
        if at is not None and not started:
            at.append(asyncio.get_running_loop().time())
        await real(*args)
        if not started:
            started.append(asyncio.ensure_future(action()))

    link.broadcast = spy  # type: ignore[method-assign,assignment]
    return started


async def test_a_heartbeat_due_during_a_broadcast_locks_slots_leaves_after_the_last_locked(v2_line: Line) -> None:
    """The ping is written once the seventh `locked` was read, or at the latest once the slots' line time has passed
    since the broadcast (the frame and 7 x (11 + 2) byte times: a simulator slowed by a loaded machine answers later
    than its slot). Before, the ping went on the line right behind the broadcast, and its answer crossed the return pair
    among the seven `locked` frames (on a real line: in the 2 byte times of idle a slot begins with, a collision)."""
    sim, log, driver, stations, recorders = v2_line
    link = driver.link
    assert link is not None
    mark = log.mark()
    broadcast_at: list[float] = []
    pinged = after_broadcast(driver, stations[4].ping, broadcast_at)
    written = link.window.written
    ping_at: list[float] = []

    def spy(frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
        if frame.address == ADDRESSES[4] and not ping_at:
            ping_at.append(asyncio.get_running_loop().time())
        written(frame, length, answer)

    link.window.written = spy  # type: ignore[method-assign]
    await asyncio.gather(*(s.lock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]
    assert await pinged[0]
    await settled(sim)
    frames = without_late_acks(log, mark, log.window(mark))
    seen = [(f.from_host, f.name, f.frame.address) for f in frames]
    assert seen[0] == (True, "lock", BROADCAST_ADDRESS), "\n".join(map(str, frames))
    locked = [i for i, (from_host, name, _a) in enumerate(seen) if not from_host and name == "locked"]
    # Each station's first `locked`; a repeat is its retransmission (the same frame: the host's ACK came after its ACK
    # timeout, a stall of this process holding the simulated station's timer and the host alike) or its answer to a
    # broadcast naming it again (sent only after the ACK timeout without its answer).
    first = {seen[i][2]: i for i in reversed(locked)}
    broadcasts = [i for i, s in enumerate(seen) if s == (True, "lock", BROADCAST_ADDRESS)]
    for i in locked:
        address = seen[i][2]
        named_again = any(
            first[address] < b < i and address in decode_message(frames[b].frame.payload)["stations"]
            for b in broadcasts
        )
        assert i == first[address] or frames[i].frame == frames[first[address]].frame or named_again, frames[i]
    answered = sorted(first.values())
    assert sorted(first) == sorted(ADDRESSES.values())
    ping = seen.index((True, "ping", ADDRESSES[4]))
    slots = (20 + 7 * (11 + 2)) * 10 / 115200
    assert ping > max(answered) or ping_at[0] - broadcast_at[0] >= slots, (
        f"ping written {(ping_at[0] - broadcast_at[0]) * 1000:.2f} ms after the broadcast:\n"
        + "\n".join(map(str, frames))
    )
    assert all(station.locked for station in sim.stations.values())
    assert [ev for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)] == []


async def test_the_broadcasts_answers_are_due_until_the_last_station_answered(v2_line: Line) -> None:
    """The depth a GROUP frame's slots are counted at: LineWindow says an answer is due (so a GROUP frame waits and an
    addressed frame is held) from the broadcast's write until the seventh `locked` was read, or the slots' line time
    passed (a loaded machine can run the look after that: then nothing is due any more, rightly)."""
    _sim, _log, driver, stations, recorders = v2_line
    link = driver.link
    assert link is not None
    loop = asyncio.get_running_loop()
    due: list[tuple[bool, float]] = []
    written: list[float] = []

    async def look() -> None:
        due.append((link.answers_due(), loop.time() - written[0]))

    after_broadcast(driver, look, written)
    await asyncio.gather(*(s.lock() for s in stations.values()))
    await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    slots = (20 + 7 * (11 + 2)) * 10 / 115200
    assert len(due) == 1 and (due[0][0] or due[0][1] >= slots), f"not due {due[0][1] * 1000:.2f} ms after the write"
    assert not link.answers_due()


@pytest.fixture
async def slow_v2_line() -> AsyncIterator[Line]:
    """v2_line with an ACK timeout no loaded machine's scheduling reaches before the simulated stations (run in this
    process) heard the broadcast: only the stall a test makes outlasts it."""
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []
    yield await start_line(started, protocol=2, ack_timeout=0.5)
    await stop_lines(started)


async def test_a_stalled_host_reads_the_answers_on_its_port_before_it_names_the_stations_again(
    slow_v2_line: Line,
) -> None:
    """The seven stations answer the broadcast, but the host's loop is held up (a journal commit, a GC pause, a loaded
    machine) past its ACK timeout: when it runs again their `locked` frames wait on its port, and its timer is due in
    the same turn as they landed, before the transport has read them. The host reads them before it names anyone again:
    one broadcast (before the fix it sent a second naming all seven, each of which answered twice)."""
    sim, log, driver, stations, recorders = slow_v2_line
    loop = asyncio.get_running_loop()
    endpoint = sim._endpoint
    assert endpoint is not None
    send, deliver = endpoint.outbound.send, endpoint.outbound._deliver
    queued: list[int] = []
    stalled: list[float] = []
    landed = [0]

    def stall() -> None:
        started = loop.time()
        time.sleep(2 * driver.settings.ack_timeout)  # the stall under test, not a wait for anything
        stalled.append(loop.time() - started)

    def queue(data: bytes, *, gap: bool = True) -> None:
        # Each station's answer is queued for the return pair at once, delivered at its line time; once the seventh is
        # queued the loop stalls past their line times and the host's timeout (the order comes from the loop).
        send(data, gap=gap)
        for frame in FrameParser().feed(data):
            if frame.kind == Kind.DATA and decode_message(frame.payload).get("evt") == "locked":
                queued.append(frame.address)
        if len(queued) == len(SEATS) and not stalled:
            stalled.append(0.0)
            loop.call_soon(stall)

    def land(data: bytes) -> None:
        # After the stall the answers are delivered in the turn the host's timer runs, before it: each is made to wait
        # on the host's side of the pty (the kernel hands pty bytes across a moment later), as a UART's bytes would.
        deliver(data)
        if len(stalled) == 2:
            landed[0] += len(data)
            until_readable(endpoint.slave_fd, landed[0])

    endpoint.outbound.send = queue  # type: ignore[method-assign]
    endpoint.outbound._deliver = land
    mark = log.mark()
    await asyncio.gather(*(s.lock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]
    assert len(stalled) == 2 and stalled[1] > driver.settings.ack_timeout, "the loop must be held up past the timeout"
    await settled(sim)
    broadcasts = [f for f in log.window(mark) if f.from_host and f.frame.address == BROADCAST_ADDRESS]
    assert [f.name for f in broadcasts] == ["lock"], "the host named stations again whose answers were on its port"
    assert set(queued) == set(ADDRESSES.values())  # a station whose ACK the stall held up sent its `locked` again
    assert [ev for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)] == []
