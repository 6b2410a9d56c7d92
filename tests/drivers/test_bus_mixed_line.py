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

import pytest

from drivers.interfaces import DeviceFault, LockAcknowledged
from drivers.reference.framing import BROADCAST_ADDRESS, decode_message
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import ADDRESSES, SEATS, Line, commands_done, settled, start_line, stop_lines

V1_SEAT = 2


@pytest.fixture
async def mixed_line() -> AsyncIterator[Line]:
    started: list[tuple[WagerBusSim, ReferenceWagerBus]] = []
    line = await start_line(started, v1_seat=V1_SEAT)
    assert [s.protocol_version for s in line[2].stations.values()] == [1 if s == V1_SEAT else 4 for s in SEATS]
    yield line
    await stop_lines(started)


async def test_the_broadcast_lock_waits_for_the_v1_stations_locked(mixed_line: Line) -> None:
    """Before, the broadcast went right behind the v1 `lock` and the v1 station's 34-byte `locked` crossed the return
    pair while the v4 stations' slots began (a collision on a real line, at the 2 byte times of idle both wait for)."""
    sim, log, _driver, stations, recorders = mixed_line
    mark = log.mark()
    await asyncio.gather(*(s.lock() for s in stations.values()))
    acks = await asyncio.gather(*(r.next(LockAcknowledged) for r in recorders.values()))
    assert [(a.seat, a.locked) for a in acks] == [(seat, True) for seat in SEATS]
    await commands_done(stations)
    await settled(sim)
    frames = log.window(mark)
    seen = [(f.from_host, f.name, f.frame.address, f.frame.version) for f in frames]
    v1 = ADDRESSES[V1_SEAT]
    broadcast_at = seen.index((True, "lock", BROADCAST_ADDRESS, 2))
    # Before the broadcast: the v1 station's whole exchange, its lock, ACK and `locked` (ADDR 0, `src` inside), and
    # nothing from any other station.
    before = [(h, n, v) for h, n, _a, v in seen[:broadcast_at] if (h, n) != (True, "ACK")]
    assert before == [(True, "lock", 1), (False, "ACK", 1), (False, "locked", 1)], seen
    assert [decode_message(f.frame.payload).get("src") for f in frames[:broadcast_at] if f.name == "locked"] == [v1]
    # After it: the six `locked` in the slots' order, one broadcast only.
    slots = [f.frame.address for f in frames[broadcast_at:] if not f.from_host and f.name == "locked"]
    assert slots == sorted(a for seat, a in ADDRESSES.items() if seat != V1_SEAT)
    assert [s for s in seen if s[2] == BROADCAST_ADDRESS] == [(True, "lock", BROADCAST_ADDRESS, 2)]
    assert [ev for r in recorders.values() for ev in r.seen if isinstance(ev, DeviceFault)] == []
