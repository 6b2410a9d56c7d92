"""A mixed line (docs/protocol.md sections 10 and 13): a v1 station beside v4 stations, so "no more bets" is the v1
station's own `lock` and v2's broadcast lock for the others. In a lock-out the v1 `lock` is written first (its task's
first step writes it; the broadcast is gathered a turn later), and its answer, an ACK and then its `locked` as a frame
of its own, crosses the return pair: the broadcast waits for that answer as a GROUP frame does (the host MUST NOT write
a frame whose slots follow it while an answer may still come), so the `locked` does not land on the first slots.  Seven
stations (bus simulator, seat 2 kept to protocol 1) and the bus driver on a real pty paced at 115200 baud; frames read
by the endpoint's tap (line_log), in the order the line delivered them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from drivers.interfaces import DeviceFault, LockAcknowledged
from drivers.reference.bus_window import ANSWER_SLACK, EVENT_ANSWER, Addressed
from drivers.reference.framing import BROADCAST_ADDRESS, Kind, decode_message
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import (
    ADDRESSES,
    SEATS,
    Line,
    commands_done,
    settled,
    start_line,
    stop_lines,
    without_start_answers,
)

V1_SEAT = 2


@pytest.fixture
async def mixed_line() -> AsyncIterator[Line]:
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []
    line = await start_line(started, v1_seat=V1_SEAT)
    assert [s.protocol_version for s in line[2].stations.values()] == [1 if s == V1_SEAT else 4 for s in SEATS]
    yield line
    await stop_lines(started)


def spy_writes(driver: ReferenceWagerBus) -> tuple[list[float], list[float]]:
    """The loop's time as the v1 station's frames are written (LineWindow.written, right after each write) and just
    before each broadcast is."""
    link = driver.link
    assert link is not None
    v1_at: list[float] = []
    broadcast_at: list[float] = []
    written, broadcast = link.window.written, link.broadcast

    def on_written(frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
        if frame.address == ADDRESSES[V1_SEAT]:
            v1_at.append(asyncio.get_running_loop().time())
        written(frame, length, answer)

    async def on_broadcast(*args: Any) -> None:
        broadcast_at.append(asyncio.get_running_loop().time())
        await broadcast(*args)

    link.window.written = on_written  # type: ignore[method-assign]
    link.broadcast = on_broadcast  # type: ignore[method-assign,assignment]
    return v1_at, broadcast_at


async def test_the_broadcast_lock_waits_for_the_v1_stations_locked(mixed_line: Line) -> None:
    """The broadcast is written once the v1 station's `locked` was read, or at the latest once that exchange's line time
    has passed since its `lock` was written (the `lock`, 2 byte times, an ACK and a v1 event, and 1 ms: a simulator
    slowed by a loaded machine answers later than a station would). Before, the broadcast went right behind the v1
    `lock` and the v1 station's 34-byte `locked` crossed the return pair while the v4 stations' slots began (a
    collision on a real line, at the 2 byte times of idle both wait for)."""
    sim, log, driver, stations, recorders = mixed_line
    v1_at, broadcast_at = spy_writes(driver)
    mark = log.mark()
    await asyncio.gather(*(s.lock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]
    await commands_done(stations)
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    seen = [(f.from_host, f.name, f.frame.address, f.frame.version) for f in frames]
    v1 = ADDRESSES[V1_SEAT]
    broadcast_index = seen.index((True, "lock", BROADCAST_ADDRESS, 2))
    # Before the broadcast: the v1 station's whole exchange, its lock, ACK and `locked` (ADDR 0, `src` inside), and
    # nothing from any other station; or, the simulator late, at least the exchange's line time between the two writes.
    before = [(h, n, v) for h, n, _a, v in seen[:broadcast_index] if (h, n) != (True, "ACK")]
    v1_lock = 23  # bytes: a v1 `lock` to one station
    line_time = (v1_lock + 2 + EVENT_ANSWER) * 10 / 115200 + ANSWER_SLACK
    if before != [(True, "lock", 1), (False, "ACK", 1), (False, "locked", 1)]:
        assert before[0] == (True, "lock", 1) and broadcast_at[0] - v1_at[0] >= line_time, (seen, v1_at, broadcast_at)
    else:
        assert [decode_message(f.frame.payload).get("src") for f in frames[:broadcast_index] if f.name == "locked"] == [
            v1
        ]
    # After it: the six `locked` of the stations it named. A machine loaded enough to stall this process past the ACK
    # timeout has the host name some again (test_wager_bus.py, a v1 station on a v2 line): only the first is checked.
    six = sorted(a for seat, a in ADDRESSES.items() if seat != V1_SEAT)
    assert decode_message(frames[broadcast_index].frame.payload) == {"cmd": "lock", "stations": six}
    slots = [f.frame.address for f in frames[broadcast_index:] if not f.from_host and f.frame.version == 2]
    assert sorted(set(slots)) == six
    assert [ev for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)] == []


async def test_a_v1_lock_queued_behind_a_heartbeat_goes_before_the_broadcast(mixed_line: Line) -> None:
    """A ping to the v1 station just before "no more bets": its `lock` waits for the ping's ACK, then goes at once,
    crossing the host's pair while the station's `pong` crosses the return pair; the broadcast, which waits for the
    `pong` anyway, waits for the `lock`'s answer too. Before, the `lock` was held while the broadcast waited and went
    only after the six slots: the v1 station locked 13 ms later, and the lock-out ended later by the `lock`'s own
    line time (bench/lock_in_window.py --mixed --busy).

    What the host guarantees is that the `lock` is never held for the broadcast: under load the ping's ACK and its
    `pong` (or its line time's end) can be read in one turn of the loop, and the broadcast's wait then ends before the
    `lock`'s task, woken by the same read, has reached the line; that `lock` rightly waits for the broadcast's slots.
    So either the `lock` went before the broadcast, or it asked for its turn on the line only once the broadcast was
    written (before the change it asked while the broadcast waited, and was held)."""
    sim, log, driver, stations, recorders = mixed_line
    v1_at, broadcast_at = spy_writes(driver)
    link = driver.link
    assert link is not None
    # (SEQ, broadcasts written) as each copy of the v1 station's frames asked for its turn: the ping's SEQ first.
    asked: list[tuple[int, int]] = []
    turn = link.window.turn

    async def on_turn(frame: Addressed) -> None:
        if frame.address == ADDRESSES[V1_SEAT]:
            asked.append((frame.seq, len(broadcast_at)))
        await turn(frame)

    link.window.turn = on_turn  # type: ignore[method-assign]
    mark = log.mark()
    # The ping's task is made first: its first step writes the ping before the locks' first steps.
    ping = asyncio.ensure_future(stations[V1_SEAT].ping())
    await asyncio.gather(*(s.lock() for s in stations.values()))
    assert await ping
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]
    await commands_done(stations)
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    seen = [(f.from_host, f.name, f.frame.version) for f in frames if (f.from_host, f.name) != (True, "ACK")]
    broadcast_index = seen.index((True, "lock", 2))
    assert seen[0] == (True, "ping", 1), seen
    line_time = (23 + 2 + EVENT_ANSWER) * 10 / 115200 + ANSWER_SLACK
    # The broadcast waited for the ping's whole answer, or (the simulator late) its line time.
    pong_first = (False, "pong", 1) in seen[:broadcast_index]
    assert pong_first or broadcast_at[0] - v1_at[0] >= line_time, (seen, v1_at, broadcast_at)
    # A copy sent again after a stall past the ACK timeout is not the `lock`: that is the first frame of another SEQ.
    lock_asked = next(broadcasts for seq, broadcasts in asked if seq != asked[0][0])
    lock_at = v1_at[next(i for i, (seq, _b) in enumerate(asked) if seq != asked[0][0])]
    if (True, "lock", 1) in seen[:broadcast_index]:
        # It went first: the broadcast waited for its answer too, or (the simulator late) its line time.
        v1_exchanges = [(True, "ping", 1), (False, "ACK", 1), (False, "pong", 1), (True, "lock", 1), (False, "ACK", 1)]
        answered = sorted(seen[:broadcast_index]) == sorted([*v1_exchanges, (False, "locked", 1)])
        assert answered or broadcast_at[0] - lock_at >= line_time, (seen, v1_at, broadcast_at)
    else:
        assert lock_asked == 1, ("the v1 `lock` was held while the broadcast waited", seen, asked, broadcast_at)
    assert [ev for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)] == []


async def test_a_broadcast_named_again_waits_for_an_answer_due_too(mixed_line: Line) -> None:
    """Seat 3 never answers, so the host names it again after the ACK timeout; a ping to the v1 station written just
    before that second broadcast has its answer (ACK, then `pong`) due on the return pair, where seat 3's slot would
    begin: the second broadcast waits for it as the first does. Before, only the first broadcast waited."""
    sim, log, driver, stations, recorders = mixed_line
    link = driver.link
    assert link is not None
    v1_at, broadcast_at = spy_writes(driver)
    await sim.stations[3].inject(Fault(FaultKind.NO_REPLY))
    real = link.await_slots
    pinged: list[asyncio.Future[bool]] = []

    async def then_ping(confirmations: Any, window: float) -> None:
        await real(confirmations, window)
        if not pinged:
            # Back to the broadcasts once the ping is written (its answer due), whenever the event loop writes it.
            written = asyncio.Event()
            inner = link.window.written

            def on_written(frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
                inner(frame, length, answer)
                if frame.address == ADDRESSES[V1_SEAT]:
                    written.set()

            link.window.written = on_written  # type: ignore[method-assign]
            pinged.append(asyncio.ensure_future(stations[V1_SEAT].ping()))
            await written.wait()

    link.await_slots = then_ping  # type: ignore[method-assign]
    mark = log.mark()
    await asyncio.gather(*(s.lock() for s in stations.values()))
    assert await pinged[0]
    fault = await recorders[3].next(DeviceFault)
    assert fault.code == "timeout"
    await commands_done(stations)
    await settled(sim)
    seen = [
        (f.from_host, f.name, f.frame.version)
        for f in without_start_answers(log, mark, log.window(mark))
        if (f.from_host, f.name) != (True, "ACK")
    ]
    second = [i for i, s in enumerate(seen) if s == (True, "lock", 2)][1]
    line_time = (23 + 2 + EVENT_ANSWER) * 10 / 115200 + ANSWER_SLACK
    pong_first = seen.index((False, "pong", 1)) < second
    # The ping written before the second broadcast (a copy sent again after a stall may follow it, held for its slots).
    ping_at = max(at for at in v1_at if at <= broadcast_at[1])
    assert pong_first or broadcast_at[1] - ping_at >= line_time, (seen, v1_at, broadcast_at)
