"""What the wager-bus tests share: the seven seats and their addresses, an event recorder, and the waits."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from drivers.interfaces import DeviceEvent, DeviceOnline
from drivers.reference.bus_window import Addressed
from drivers.reference.framing import BROADCAST_ADDRESS, Kind, decode_message
from drivers.reference.wager_bus import BusWagerStation, ReferenceWagerBus
from drivers.registry import create_driver
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.line_log import LineLog, OnLine

SEATS = range(1, 8)
# Addresses differ from seats so a mix-up between the two cannot pass unnoticed.
ADDRESSES = {seat: 10 + seat for seat in SEATS}


E = TypeVar("E", bound=DeviceEvent)


class Recorder:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[DeviceEvent] = asyncio.Queue()
        self.seen: list[DeviceEvent] = []

    def __call__(self, event: DeviceEvent) -> None:
        self.seen.append(event)
        self.queue.put_nowait(event)

    async def next(self, kind: type[E]) -> E:
        async def find() -> E:
            while True:
                event = await self.queue.get()
                if isinstance(event, kind):
                    return event

        return await asyncio.wait_for(find(), 5.0)


async def all_online(recorders: dict[int, Recorder]) -> list[DeviceOnline]:
    return list(await asyncio.gather(*(r.next(DeviceOnline) for r in recorders.values())))


async def settled(sim: WagerBusSim) -> None:
    """Return once no station has a frame awaiting its ACK and both pairs have delivered what was queued on them.

    The seven 217-byte identities queue 133 ms on the shared return pair; a simulated station's ACK timer starts once
    its frame has left the line, so none is sent twice (test_a_paced_seven_station_start_retransmits_nothing), but the
    host's ACKs of the last ones may still be crossing it. Under load, frames still queued when the GROUP frame went out
    held the confirmations behind them, and the window closed first: the host locked every station alone."""
    for station in sim.stations.values():
        assert station._link is not None
        async with station._link._send_lock:  # held by a send until its ACK, retransmissions included
            pass
    endpoint = sim._endpoint
    assert endpoint is not None
    for direction in (endpoint.outbound, endpoint.inbound):
        drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        direction.after(functools.partial(drained.set_result, None))
        await drained


def bus_driver(port: str, **settings: Any) -> ReferenceWagerBus:
    """The host's driver for the seven stations at ADDRESSES on `port`, not started; no heartbeat, so nothing moves on
    the line but what a test asks for."""
    driver = create_driver(
        "wager_bus",
        {
            "driver": "reference-wager-bus",
            "port": port,
            "stations": [{"seat": seat, "address": address} for seat, address in ADDRESSES.items()],
            "heartbeat_interval": 0,
            **settings,
        },
    )
    assert isinstance(driver, ReferenceWagerBus)
    return driver


# A started line: the simulated stations, the frames on the line, the host's driver, its stations, what each reported.
Line = tuple[WagerBusSim, LineLog, ReferenceWagerBus, dict[int, BusWagerStation], dict[int, Recorder]]


Started = list[tuple[WagerBusSim, ReferenceWagerBus]]


async def start_line(
    started: Started, v3_seat: int | None = None, paced: bool = True, v1_seat: int | None = None, **settings: Any
) -> Line:
    """The seven stations (seat `v3_seat` kept to protocol 3, seat `v1_seat` to protocol 1: a mixed line) and the host's
    driver on one line, every station online and the line quiet; appended to `started` for stop_lines()."""
    sim = WagerBusSim("wager_bus", addresses=ADDRESSES, timing=LineTiming() if paced else None)
    if v3_seat is not None:
        sim.stations[v3_seat].configure_line((1, 2, 3))
    if v1_seat is not None:
        sim.stations[v1_seat].configure_line((1,))
    await sim.start()
    assert sim._endpoint is not None
    log = LineLog(sim._endpoint)
    driver = bus_driver(sim.port, **settings)
    started.append((sim, driver))
    recorders = {seat: Recorder() for seat in SEATS}
    await asyncio.gather(*(s.start(recorders[seat]) for seat, s in driver.stations.items()))
    await all_online(recorders)
    await settled(sim)
    return sim, log, driver, dict(driver.stations), recorders


async def stop_lines(started: Started) -> None:
    for sim, driver in started:
        await asyncio.gather(*(s.stop() for s in driver.stations.values()))
        await sim.stop()


async def commands_done(stations: dict[int, BusWagerStation]) -> None:
    """Return once the bus's commands to several stations (a GROUP lock, its fallbacks and proofs) have ended."""
    await next(iter(stations.values()))._bus.commands_done()


def after_group(driver: ReferenceWagerBus, action: Callable[[], Any]) -> list[asyncio.Future[Any]]:
    """Start `action()` (a coroutine) as a task right after the next GROUP frame is written, in the same turn: the
    window is open. The started task is appended to the list returned."""
    link = driver.link
    assert link is not None
    real = link.send_group
    started: list[asyncio.Future[Any]] = []

    def spy(code: int, stations: Any, on: bool | None = None) -> None:
        real(code, stations, on)
        if not started:
            started.append(asyncio.ensure_future(action()))

    link.send_group = spy  # type: ignore[method-assign]
    return started


@dataclass
class Windows:
    """When each GROUP frame was written, and when a station was sent its command on its own after one (it had not
    answered in the window), by the loop's clock."""

    opened: list[float] = field(default_factory=list)
    alone: list[tuple[float, int]] = field(default_factory=list)

    def late(self, ack_timeout: float, since: int = 0) -> set[int]:
        """The stations sent their command on their own after a GROUP frame. The host does so only once the ACK timeout
        has passed since the GROUP frame without the station's answer (a simulator slowed by a loaded machine answers
        later than that, and the host is right to); asserted here. `since`: the count of such sends to leave out."""
        for at, _address in self.alone[since:]:
            opened_at = max(opened for opened in self.opened if opened <= at)
            assert at - opened_at >= ack_timeout, (self, ack_timeout)
        return {address for _at, address in self.alone[since:]}


def watch_windows(driver: ReferenceWagerBus) -> Windows:
    link = driver.link
    assert link is not None
    loop = asyncio.get_running_loop()
    windows = Windows()
    send_group = link.send_group

    def on_send(code: int, stations: Any, on: bool | None = None) -> None:
        windows.opened.append(loop.time())
        send_group(code, stations, on)

    link.send_group = on_send  # type: ignore[method-assign]
    for station in driver.stations.values():
        alone = station.alone

        async def on_alone(
            code: int, on: bool | None = None, alone: Any = alone, address: int = station.address
        ) -> None:
            windows.alone.append((loop.time(), address))
            await alone(code, on)

        station.alone = on_alone  # type: ignore[method-assign]
    return windows


@dataclass
class Writes:
    """Each copy of a frame the host wrote to one station, as (loop time just before its write, address, SEQ)."""

    seen: list[tuple[float, int, int]] = field(default_factory=list)

    def resent(self, ack_timeout: float) -> dict[int, int]:
        """The SEQ of the one command each station was written, asserting that each copy after the first is that
        command sent again at least the ACK timeout after the copy before it (a stall of the machine past the ACK
        timeout delays the answer, and the host is right to resend); a second command to a station fails here."""
        last: dict[int, tuple[float, int]] = {}
        for at, address, seq in self.seen:
            if address in last:
                before, first_seq = last[address]
                assert seq == first_seq and at - before >= ack_timeout, (self, ack_timeout)
            last[address] = (at, seq)
        return {address: seq for address, (_at, seq) in last.items()}


def watch_writes(driver: ReferenceWagerBus) -> Writes:
    link = driver.link
    assert link is not None
    loop = asyncio.get_running_loop()
    writes = Writes()
    turn = link.window.turn

    async def on_turn(frame: Addressed) -> None:
        await turn(frame)  # the copy's turn: it is written right after (LineWindow.turn)
        writes.seen.append((loop.time(), frame.address, frame.seq))

    link.window.turn = on_turn  # type: ignore[method-assign]
    return writes


async def copies_answered(log: LineLog, mark: tuple[int, int, int], writes: Writes) -> None:
    """Return once the line has carried, since `mark`, every copy of a frame the host wrote (`writes`) and an answer of
    its station to each. A copy sent again after a stall past the ACK timeout can still be crossing the line when the
    first copy's answer ended the exchange (the command acknowledged, the test going on), and the station answers the
    copy too: read after the test's next mark, that answer showed as a REPLY among the next window's slot pairs."""
    sent = Counter((address, seq) for _at, address, seq in writes.seen)

    def done(frames: list[OnLine]) -> bool:
        ours = [seen for seen in frames[mark[0] :] if (seen.frame.address, seen.frame.seq) in sent]
        out = Counter((s.frame.address, s.frame.seq) for s in ours if s.from_host and s.frame.kind == Kind.DATA)
        back = Counter(
            (s.frame.address, s.frame.seq) for s in ours if not s.from_host and s.frame.kind in (Kind.REPLY, Kind.ACK)
        )
        return all(out[key] >= n and back[key] >= n for key, n in sent.items())

    await log.until(done)


def without_start_answers(log: LineLog, mark: tuple[int, int, int], frames: list[OnLine]) -> list[OnLine]:
    """`frames` (the line's since `mark`) less the start's identifies sent again and their identities: a stall past the
    ACK timeout during the start has the host send an identify again (its SEQ, the first copy before `mark`), and the
    copy and its answer can cross the line after the test's mark. Any other identify or identity fails here."""
    asked = {(s.frame.address, s.frame.seq) for s in log.frames[: mark[0]] if s.from_host and s.name == "identify"}
    late = [s for s in frames if s.name in ("identify", "identity")]
    assert all((s.frame.address, s.frame.seq) in asked for s in late), ([str(s) for s in late], asked)
    return [s for s in frames if s not in late]


def without_late_acks(log: LineLog, mark: tuple[int, int, int], frames: list[OnLine]) -> list[OnLine]:
    """`frames` (the line's since `mark`) less the host's ACKs of stations' frames that crossed the line before `mark`:
    the host writes the ACK of a station's `identity` before it reports the station online, but the pty hands the
    host's bytes across in a kernel work item of its own, and a stall of this process (a loaded machine) can hold that
    ACK on the line past the test's mark (line_log's docstring). An ACK of a frame sent after the mark stays."""
    before = {
        (station_of(s), s.frame.seq) for s in log.frames[: mark[0]] if not s.from_host and s.frame.kind == Kind.DATA
    }
    return [
        s for s in frames if not (s.from_host and s.frame.kind == Kind.ACK and (s.frame.address, s.frame.seq) in before)
    ]


def station_of(seen: OnLine) -> int:
    """The address of the station that sent `seen`: a v1 frame to the host names it in its payload's `src`, a later
    version in its header."""
    if seen.frame.version == 1:
        source = decode_message(seen.frame.payload).get("src")
        return source if isinstance(source, int) else -1
    return seen.frame.address


def own_locks(sim: WagerBusSim) -> dict[int, set[int]]:
    """ADDR -> the SEQs of the locks the host wrote to that station alone, as the stations heard them: a copy (the lock
    sent again after the ACK timeout) has its lock's SEQ, a second lock a SEQ of its own."""
    own: dict[int, set[int]] = {}
    for f in sim.heard:
        if f.kind == Kind.DATA and f.address != BROADCAST_ADDRESS and decode_message(f.payload).get("cmd") == "lock":
            own.setdefault(f.address, set()).add(f.seq)
    return own
