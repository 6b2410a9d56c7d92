"""When the host writes the frames it held for a GROUP frame's slot window (docs/protocol.md section 13, "What the host
writes around a window"), when a station missed its slot and the host's receive window stays open to the ACK timeout:
a frame to a station the window no longer awaits goes once the window has ended on the line, not at the timeout; a
frame to the station still awaited waits for the receive window to close; and a frame that waited is not written once
its sender no longer wants it (an unlock overtaken by the lock pressed while it waited).

Seven v4 stations (bus simulator) and the bus driver on a real pty paced at 115200 baud; frames read by the endpoint's
tap (line_log). What falls due "during the window" is started by a spy on BusLink.send_group right after the real call
wrote the GROUP frame; a station "misses" its slot by sending its pair damaged (a collision, to the host).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from drivers.interfaces import DeviceFault
from drivers.reference.framing import BROADCAST_ADDRESS, Kind, decode_message
from drivers.reference.wager_bus import BusWagerStation, ReferenceWagerBus
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import ADDRESSES, SEATS, Line, after_group, settled, start_line, stop_lines
from tests.drivers.line_log import OnLine


@pytest.fixture
async def line() -> AsyncIterator[Callable[..., Any]]:
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []

    async def start(**settings: Any) -> Line:
        started_line = await start_line(started, **settings)
        assert {s.protocol_version for s in started_line[2].stations.values()} == {4}
        return started_line

    yield start
    await stop_lines(started)


def frames_when_closed(driver: ReferenceWagerBus, log_frames: list[OnLine]) -> list[int]:
    """How many frames had crossed the line when the host's receive window closed (BusLink.close_slots), per close."""
    link = driver.link
    assert link is not None
    real = link.close_slots
    closed: list[int] = []

    def spy() -> None:
        closed.append(len(log_frames))
        real()

    link.close_slots = spy  # type: ignore[method-assign]
    return closed


def described(frames: list[OnLine]) -> list[tuple[bool, str, int]]:
    out = []
    for seen in frames:
        what = seen.name
        if seen.frame.kind == Kind.GROUP:
            what = f"GROUP {decode_message(seen.frame.payload)['cmd']}"
        out.append((seen.from_host, what, seen.frame.address))
    return out


async def test_a_held_heartbeat_goes_once_the_window_ended_on_the_line_not_at_the_timeout(line: Any) -> None:
    """Station 3 misses its slot of a reopening's GROUP unlock, so the host's receive window stays open to the ACK
    timeout (1 s here: a bound a loaded machine stays far inside). Heartbeats to seats 5 and 3 fall due in the window.
    Seat 5's ping goes after the last slot and is answered before the receive window closes; seat 3's, whose
    confirmation the window still awaits, goes only after it closed (before the change both waited for the close)."""
    sim, log, driver, stations, recorders = await line(ack_timeout=1.0)
    sim.stations[3].damaged_slots = 1
    mark = log.mark()
    closed = frames_when_closed(driver, log.frames)

    async def heartbeats() -> list[bool]:
        return list(await asyncio.gather(stations[5].ping(), stations[3].ping()))

    pinged = after_group(driver, heartbeats)
    await asyncio.gather(*(s.unlock() for s in stations.values()))  # returns once station 3's own unlock answered
    assert await pinged[0] == [True, True]
    await settled(sim)
    assert closed, "the receive window never closed"
    seen = described(log.frames[mark[0] :])
    before_close = seen[: closed[0] - mark[0]]
    others = [a for a in sorted(ADDRESSES.values()) if a != ADDRESSES[3]]
    # Before the window closed: the GROUP unlock, the six intact pairs (station 3's is two bytes of noise), then seat
    # 5's ping and its pong, and nothing for station 3.
    assert before_close == [
        (True, "GROUP unlock", BROADCAST_ADDRESS),
        *[(False, "SLOT", a) for a in others],
        (True, "ping", ADDRESSES[5]),
        (False, "pong", ADDRESSES[5]),
    ], "\n".join(map(str, seen))
    after = seen[closed[0] - mark[0] :]
    assert [f for f in after if f[0]] == [(True, "ping", ADDRESSES[3]), (True, "unlock", ADDRESSES[3])], seen
    assert not any(station.locked for station in sim.stations.values())
    # Station 3's damaged pair is reported as line noise, as a collision would be; nothing timed out.
    assert {ev.code for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)} == {"line_noise"}


async def test_an_unlock_that_waited_for_a_window_is_not_written_after_the_lock_pressed_meanwhile(line: Any) -> None:
    """The opening's GROUP light is on the line and station 3 missed its slot (the receive window stays open to the ACK
    timeout); the seats are unlocked meanwhile, each with an unlock frame of its own (one window at a time), which
    waits for the window. The dealer presses "no more bets" once seat 5's unlock has passed its check (`still`): the
    lock goes (v2's broadcast, the window still open) and every unlock still waiting must then not be written. Before
    the change the check came before the wait, and the unlocks went after the lock: seats open after the lock-out."""
    sim, log, driver, stations, _recorders = await line(ack_timeout=0.2)
    sim.stations[3].damaged_slots = 1
    mark = log.mark()
    loop = asyncio.get_running_loop()
    locks: list[asyncio.Future[Any]] = []

    def lock_every_station() -> None:
        locks.append(asyncio.ensure_future(asyncio.gather(*(s.lock() for s in stations.values()))))

    seat5: BusWagerStation = stations[5]
    real_wanted = seat5._unlock_wanted

    def wanted() -> bool:
        answer = real_wanted()
        if answer and not locks:
            loop.call_soon(lock_every_station)
        return answer

    seat5._unlock_wanted = wanted  # type: ignore[method-assign]

    async def reopen() -> None:
        await asyncio.gather(*(s.unlock() for s in stations.values()))

    reopened = after_group(driver, reopen)
    await asyncio.gather(*(s.light_on() for s in stations.values()))
    await reopened[0]
    assert locks, "seat 5's unlock was never checked"
    await locks[0]
    await settled(sim)
    assert {seat: station.locked for seat, station in sim.stations.items()} == dict.fromkeys(SEATS, True)
    sent = [(what, address) for from_host, what, address in described(log.frames[mark[0] :]) if from_host]
    # The lock goes as v2's broadcast if the window is still open when it is pressed, else as a GROUP lock.
    lock_at = next(
        i for i, s in enumerate(sent) if s in (("lock", BROADCAST_ADDRESS), ("GROUP lock", BROADCAST_ADDRESS))
    )
    assert [s for s in sent[lock_at:] if s[0] == "unlock"] == [], sent
