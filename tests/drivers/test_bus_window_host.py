"""What the host writes around a GROUP frame's slot window (docs/protocol.md section 13, "What the host writes around a
window"): no frame a station answers while the window is open (a heartbeat due then leaves after the last slot), no
GROUP frame while an answer to an addressed frame is still due (the lock waits for the pong, not behind the ping), and a
lock pressed during a reopening's window goes as a GROUP lock once that window has closed, every slot intact.

Seven v4 stations (bus simulator) and the bus driver on a real pty paced at 115200 baud; frames counted by the
endpoint's tap (line_log). The order is made by the event loop, never by sleeping: what falls due "during the window" is
started by a spy on BusLink.send_group right after the real call wrote the GROUP frame.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from drivers.interfaces import DeviceFault, LockAcknowledged
from drivers.reference.bus_window import ANSWER_SLACK, LINE_MARGIN, Addressed
from drivers.reference.framing import BROADCAST_ADDRESS, Kind, decode_message
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import (
    ADDRESSES,
    SEATS,
    Line,
    Recorder,
    after_group,
    commands_done,
    settled,
    start_line,
    stop_lines,
    watch_windows,
    without_start_answers,
)
from tests.drivers.line_log import OnLine

STATIONS = sorted(ADDRESSES.values())


@pytest.fixture
async def line() -> AsyncIterator[Callable[[], Any]]:
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []

    async def start(**settings: Any) -> Line:
        started_line = await start_line(started, **settings)
        assert {s.protocol_version for s in started_line[2].stations.values()} == {4}
        return started_line

    yield start
    await stop_lines(started)


def described(frames: list[OnLine]) -> list[tuple[bool, str, int]]:
    """(from the host, what, address) for each frame: GROUP frames by their command, slots as SLOT."""
    out = []
    for seen in frames:
        what = seen.name
        if seen.frame.kind == Kind.GROUP:
            what = f"GROUP {decode_message(seen.frame.payload)['cmd']}"
        out.append((seen.from_host, what, seen.frame.address))
    return out


def slots(frames: list[OnLine]) -> list[int]:
    return [seen.frame.address for seen in frames if seen.frame.kind == Kind.SLOT]


def no_faults(recorders: dict[int, Recorder]) -> None:
    assert [ev for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)] == []


async def test_a_heartbeat_due_during_a_reopenings_window_leaves_after_the_last_slot(line: Any) -> None:
    """The host holds the ping until every confirmation was read (its receive window closed) or the window has ended on
    the line, as it counts it from the GROUP frame's write, plus LINE_MARGIN: a real station answers in its slot by
    then. The simulator shares this loaded machine and its last slots can come later than a station's would; the ping
    then crosses the host's pair while they cross the return pair (no collision: two pairs), and what the host
    guarantees is the wait, checked by the loop's clock."""
    sim, log, driver, stations, recorders = await line()
    link = driver.link
    assert link is not None
    loop = asyncio.get_running_loop()
    ping_at: list[tuple[float, bool]] = []  # the loop's time at the ping's write, and whether the window was open
    opened_at: list[float] = []
    written, opened = link.window.written, link.window.open

    def on_written(frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
        if frame.address == ADDRESSES[4]:
            ping_at.append((loop.time(), link.window.is_open()))
        written(frame, length, answer)

    def on_open(frame_bytes: int, named: int) -> None:
        opened_at.append(loop.time())  # just before the host counts the window's end on the line from its clock
        opened(frame_bytes, named)

    link.window.written, link.window.open = on_written, on_open
    windows = watch_windows(driver)
    mark = log.mark()

    async def ping_in_window() -> bool:
        answered: bool = await stations[4].ping()
        return answered

    # The heartbeat (the ping a station's session sends) falls due inside the GROUP unlock's window.
    pinged = after_group(driver, ping_in_window)
    await asyncio.gather(*(s.unlock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, False) for seat in SEATS]
    assert await pinged[0]
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    # A station whose slot the simulator, stalled, sent later than the ACK timeout is sent its unlock on its own.
    late = windows.late(driver.settings.ack_timeout)
    seen = [
        s for s in described(frames) if s[1:] not in {("unlock", a) for a in late} | {("unlocked", a) for a in late}
    ]
    slots_then_ping = [(True, "GROUP unlock", BROADCAST_ADDRESS), *[(False, "SLOT", a) for a in STATIONS]]
    window_on_line = (10 + 2 + 4 * len(STATIONS)) * 10 / 115200 + LINE_MARGIN  # a 10-byte GROUP unlock naming seven
    # On the line: the GROUP unlock, the seven slot pairs in address order, and only then the ping and its REPLY; or,
    # the simulator's slots late, the ping written once every confirmation was read or no sooner than the window's end
    # on the line and its margin.
    # A stall past the ACK timeout has the ping sent again, and answered again: copies, not other frames.
    exchange = {(True, "ping", ADDRESSES[4]), (False, "pong", ADDRESSES[4])}
    if seen[:8] != slots_then_ping:
        at, window_open = ping_at[0]
        assert not window_open or at - opened_at[0] >= window_on_line, (seen, opened_at, ping_at)
        assert set(seen) == {*slots_then_ping, *exchange} and len(seen) <= 8 + 2 * len(ping_at), seen
    else:
        assert seen[8] == (True, "ping", ADDRESSES[4]) and set(seen[8:]) == exchange, seen
    assert slots(frames) == STATIONS
    assert [seen.size for seen in frames if seen.frame.kind == Kind.SLOT] == [2] * 7  # every confirmation intact
    if late:  # a pair read after the window closed is noise to the host
        assert {ev.code for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)} == {"line_noise"}
    else:
        no_faults(recorders)


async def test_a_lock_pressed_during_a_reopenings_window_goes_as_a_group_lock_after_it(line: Any) -> None:
    """Section 13's choice: the lock waits for the open window (at most its end on the line, 2.6 ms for seven) and goes
    as a GROUP lock, 3.3 ms, rather than at once as v2's broadcast lock, whose seven `locked` frames wait for the window
    anyway and then take 77 bytes and seven host ACKs (8.4 ms). The ACK timeout is 0.4 s here: the lock waits for the
    window at most its end on the line plus a quarter of it, and a loaded test machine's stall past 25 ms would send
    v2's broadcast lock (the fallback, correct but not what this test is about)."""
    sim, log, driver, stations, recorders = await line(ack_timeout=0.4)
    link = driver.link
    assert link is not None
    loop = asyncio.get_running_loop()
    opened_at: list[float] = []  # the GROUP unlock's window opened, by the loop's clock
    broadcast_at: list[float] = []  # v2's broadcast lock written
    opened, broadcast = link.window.open, link.broadcast

    def on_open(frame_bytes: int, named: int) -> None:
        opened_at.append(loop.time())
        opened(frame_bytes, named)

    async def on_broadcast(*args: Any) -> None:
        broadcast_at.append(loop.time())
        await broadcast(*args)

    link.window.open, link.broadcast = on_open, on_broadcast
    mark = log.mark()

    async def lock_every_station() -> None:
        await asyncio.gather(*(s.lock() for s in stations.values()))

    locks = after_group(driver, lock_every_station)
    await asyncio.gather(*(s.unlock() for s in stations.values()))
    await locks[0]
    for recorder in recorders.values():
        assert (await recorder.next(LockAcknowledged)).locked is False
        assert (await recorder.next(LockAcknowledged)).locked is True
    await commands_done(stations)
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    seen = described(frames)
    if broadcast_at:
        # The fallback: the unlock's window still open (a slot late, the simulator stalled) at its end on the line plus
        # a quarter of the ACK timeout, as the host counts them from the GROUP unlock's write.
        window_on_line = (10 + 2 + 4 * len(STATIONS)) * 10 / 115200
        assert broadcast_at[0] - opened_at[0] >= window_on_line + 0.4 / 4, (seen, opened_at, broadcast_at)
        assert all(station.locked for station in sim.stations.values())
        return
    assert seen[:16] == [
        (True, "GROUP unlock", BROADCAST_ADDRESS),
        *[(False, "SLOT", a) for a in STATIONS],
        (True, "GROUP lock", BROADCAST_ADDRESS),
        *[(False, "SLOT", a) for a in STATIONS],
    ]
    # Then, the window closed, each station's lock of its own proving its pair, and its REPLY.
    assert sorted(seen[16:]) == sorted([(True, "lock", a) for a in STATIONS] + [(False, "locked", a) for a in STATIONS])
    assert sum(seen.size for seen in frames[:16]) == 10 + 14 + 10 + 14
    assert all(station.locked for station in sim.stations.values())
    no_faults(recorders)


@dataclass
class Clock:
    """By the loop's clock: each copy written to seat 2 with its line time (the frame, 2 byte times, its answer, the
    slack: LineWindow.written), each to seat 6 with whether a window was open, and each GROUP frame's write."""

    ping_at: list[tuple[float, float]] = field(default_factory=list)
    held_at: list[tuple[float, bool]] = field(default_factory=list)
    group_at: list[float] = field(default_factory=list)


def watch_clock(driver: ReferenceWagerBus) -> Clock:
    link = driver.link
    assert link is not None
    loop, clock = asyncio.get_running_loop(), Clock()
    written, send_group = link.window.written, link.send_group

    def on_written(frame: Addressed, length: int, answer: asyncio.Future[Kind]) -> None:
        if frame.address == ADDRESSES[2]:
            clock.ping_at.append((loop.time(), (length + 2 + frame.answer_bytes) * 10 / 115200 + ANSWER_SLACK))
        elif frame.address == ADDRESSES[6]:
            clock.held_at.append((loop.time(), link.window.is_open()))
        written(frame, length, answer)

    def on_send_group(code: int, stations: Iterable[int], on: bool | None = None) -> None:
        clock.group_at.append(loop.time())
        send_group(code, stations, on)

    link.window.written, link.send_group = on_written, on_send_group  # type: ignore[method-assign]
    return clock


async def test_a_lock_waits_for_the_pong_already_due_not_behind_the_heartbeat(line: Any) -> None:
    """A ping written just before "no more bets": its REPLY is due on the return pair, so the GROUP lock goes once it
    came (the exchange's line time at most), and the REPLY does not land in the slots. A heartbeat that falls due while
    the lock waits or its window is open is held: it goes after the last slot, or (the simulator's slots late) once
    the window has ended on the line. A station whose slot came past the ACK timeout is locked on its own."""
    sim, log, driver, stations, recorders = await line()
    clock, windows = watch_clock(driver), watch_windows(driver)
    mark = log.mark()
    # The ping's task is made first: its first step writes the ping (the link's write is synchronous) before the
    # locks' first steps, and the GROUP lock is written a turn after those.
    first = asyncio.ensure_future(stations[2].ping())
    held = after_group(driver, stations[6].ping)
    await asyncio.gather(*(s.lock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]
    assert await first and await held[0]
    await commands_done(stations)
    await settled(sim)
    frames = without_start_answers(log, mark, log.window(mark))
    seen = described(frames)
    lock_at = seen.index((True, "GROUP lock", BROADCAST_ADDRESS))
    # Before the GROUP lock: the first ping and its pong, and nothing else; or, the simulator late with the pong, the
    # ping alone and the lock written no sooner than the ping's line time after it.
    before, pong = sorted(seen[:lock_at]), (False, "pong", ADDRESSES[2])
    rest = seen[lock_at + 1 :]
    if before == [(True, "ping", ADDRESSES[2])]:
        assert clock.group_at[0] - clock.ping_at[0][0] >= clock.ping_at[0][1], (seen, clock)
        rest.remove(pong)  # late, it crossed the return pair beside the slots
    else:
        assert before == sorted([(True, "ping", ADDRESSES[2]), pong]), seen
    late = windows.late(driver.settings.ack_timeout)
    if rest[:7] != [(False, "SLOT", a) for a in STATIONS]:
        at, window_open = clock.held_at[0]
        window_on_line = (10 + 2 + 4 * len(STATIONS)) * 10 / 115200 + LINE_MARGIN
        assert not window_open or at - clock.group_at[0] >= window_on_line, (seen, clock)
    on_line = slots(frames)
    assert on_line == [a for a in STATIONS if a in on_line] and set(STATIONS) - late <= set(on_line), (seen, late)
    # Besides: the held ping and its pong, and each station's lock (proving its pair, or for a late one its lock of
    # its own), with its REPLY. (A stall past the ACK timeout has a frame sent again and answered again, the first
    # ping's too: copies, compared as a set.)
    proofs = [(True, "lock", a) for a in STATIONS] + [(False, "locked", a) for a in STATIONS]
    after = {s for s in rest if s[1] != "SLOT"} - {(True, "ping", ADDRESSES[2]), pong}
    assert after == {(True, "ping", ADDRESSES[6]), (False, "pong", ADDRESSES[6]), *proofs}
    faults = {ev.code for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)}
    assert faults == ({"line_noise"} if late else set())  # a pair read after the window closed is noise


async def test_a_station_that_missed_its_unlock_slot_is_not_reopened_after_the_lock(line: Any) -> None:
    """Station 3 misses its slot of a reopening's GROUP unlock (its pair damaged) and the dealer presses "no more bets"
    while that window is open. The lock goes (v2's broadcast: the window stays open to the ACK timeout, waiting for
    station 3) and locks all seven; station 3's own unlock, due only when the window ends, must then not be written:
    it would open the spots again after the lock-out."""
    sim, log, driver, stations, _recorders = await line(ack_timeout=0.2)
    sim.stations[3].damaged_slots = 1
    mark = log.mark()

    async def lock_every_station() -> None:
        await asyncio.gather(*(s.lock() for s in stations.values()))

    locks = after_group(driver, lock_every_station)
    await asyncio.gather(*(s.unlock() for s in stations.values()))  # returns once station 3's fallback is settled
    await locks[0]
    await settled(sim)
    assert all(station.locked for station in sim.stations.values()), {
        seat: station.locked for seat, station in sim.stations.items()
    }
    # Not log.window: the damaged pair is two bytes of no frame, as noise is.
    sent = [
        (what, address)
        for from_host, what, address in described(without_start_answers(log, mark, log.frames[mark[0] :]))
        if from_host
    ]
    assert ("unlock", ADDRESSES[3]) not in sent, sent
    assert sent[0] == ("GROUP unlock", BROADCAST_ADDRESS)


async def test_a_station_that_missed_its_light_slot_keeps_the_state_asked_last(line: Any) -> None:
    """Seat 3's pair of a GROUP light (on) is damaged, and the seat's light is put out (a floorperson validated the
    hit) while that window is open: the lamp must end dark. Its own `light on`, due when the window ends, is not
    written once `off` was asked."""
    sim, log, driver, stations, _recorders = await line(ack_timeout=0.2)
    sim.stations[3].damaged_slots = 1
    mark = log.mark()
    put_out = after_group(driver, stations[3].light_off)
    await asyncio.gather(*(s.light_on() for s in stations.values()))
    await put_out[0]
    await settled(sim)
    assert {seat: station.light for seat, station in sim.stations.items()} == {seat: seat != 3 for seat in SEATS}
    sent = [
        (what, address)
        for from_host, what, address in described(without_start_answers(log, mark, log.frames[mark[0] :]))
        if from_host
    ]
    assert [what for what, address in sent if address == ADDRESSES[3] and what != "ACK"] == ["light"], sent
