"""A multi-drop line's start: the host identifies a few stations at a time, as many as the line carries answers for
in half the ACK timeout (docs/protocol.md section 2, "Identify a few stations at a time"), so no station's ACK queues
behind the others' identities past the host's ACK timeout.

Seven stations on a real pty paced at 115200 baud. With every identify written at once, a station's ACK waited on the
shared return pair behind up to six identities (217 bytes each in v1, 99 in v3) and the host sent `identify` again:
bench/bus_start.py counted 2 resends at every v1 start. The tests count the frames on the wire and check their order:
an identify leaves only while fewer than the window's are unanswered and within their first ACK timeout. A stall of a
loaded machine past the ACK timeout (the simulated stations run in this process) has the host, rightly, send an
identify again and give up its turn: each such copy is checked against the host's clock (Writes.resent), then allowed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.reference.bus_link import identify_window
from drivers.reference.bus_window import IDENTITY_ANSWER, Addressed, LineWindow
from drivers.reference.framing import Kind
from drivers.reference.wager_bus import ReferenceWagerBus
from drivers.sim.line import LineTiming
from drivers.sim.wager_bus import WagerBusSim
from tests.drivers.bus_helpers import Writes
from tests.drivers.line_log import LineLog, OnLine, start_logged_bus

SEATS = range(1, 8)
ACK_TIMEOUT = 0.1  # the driver's default
WINDOW = identify_window(115200, ACK_TIMEOUT)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    """Each copy of an identify as the host writes it, by the loop's clock (the links are made inside the start)."""
    seen = Writes()
    turn = LineWindow.turn

    async def on_turn(window: LineWindow, frame: Addressed) -> None:
        await turn(window, frame)  # the copy's turn: it is written right after
        if frame.answer_bytes == IDENTITY_ANSWER:
            seen.seen.append((asyncio.get_running_loop().time(), frame.address, frame.seq))

    monkeypatch.setattr(LineWindow, "turn", on_turn)
    return seen


@given(st.integers(300, 4_000_000), st.floats(0.01, 5.0))
def test_the_window_answers_fit_in_half_the_ack_timeout(baud: int, ack_timeout: float) -> None:
    window = identify_window(baud, ack_timeout)
    answer = 226 * 10 / baud  # a v1 identity and its ACK
    assert window >= 1
    assert window == 1 or window * answer <= ack_timeout / 2 + 1e-9, "more answers than fit"
    assert (window + 1) * answer > ack_timeout / 2 - 1e-9, "room for one more was left unused"


def test_the_window_is_what_the_line_carries_in_half_the_ack_timeout() -> None:
    # A v1 identity and its ACK are 226 bytes: 19.6 ms at 115200 baud, 235 ms at 9600, 4.9 ms at 460800.
    assert (WINDOW, identify_window(9600, 0.1), identify_window(460800, 0.1), identify_window(115200, 0.5)) == (
        2,
        1,
        10,
        12,
    )


async def start_line(
    sim: WagerBusSim, protocol: int, seats: Collection[int] = SEATS
) -> tuple[LineLog, set[str], ReferenceWagerBus]:
    """Start every seat of the driver at once, as the controller does; return once the stations in `seats` are online
    (the line's log, who is online, the driver to stop)."""
    wire, online, driver = await start_logged_bus(sim, {"seats": list(SEATS), "protocol": protocol}, len(seats))
    return wire, {e.device_id for e in online}, driver


def identifies(wire: LineLog) -> list[tuple[int, OnLine]]:
    """(position in the log, frame) of every identify the host put on the line, in order."""
    return [(i, seen) for i, seen in enumerate(wire.frames) if seen.from_host and seen.name == "identify"]


def acked_at(wire: LineLog, identify: OnLine) -> int | None:
    """Where in the log the station's ACK of `identify` came, if it did (a v1 ACK names only the SEQ: the host never
    has two frames with one SEQ outstanding on a line)."""
    for i, seen in enumerate(wire.frames):
        if not seen.from_host and seen.frame.kind == Kind.ACK and seen.frame.seq == identify.frame.seq:
            return i
    return None


def assert_within_window(wire: LineLog, writes: Writes) -> None:
    """Each identify left while fewer than WINDOW identifies to other stations were unanswered and within their first
    ACK timeout (the host gives a turn up then, and sends the identify again without one): at most that many
    identities are queued ahead of any station's ACK."""
    sent = identifies(wire)
    first_at = {address: at for at, address, _seq in reversed(writes.seen)}
    for n, (at, identify) in enumerate(sent):
        if any(seen.frame.address == identify.frame.address for _, seen in sent[:n]):
            continue  # a copy sent again: it takes no turn
        written = first_at[identify.frame.address]
        others = {
            seen.frame.address
            for _, seen in sent[:n]
            if seen.frame.address != identify.frame.address
            and ((acked := acked_at(wire, seen)) is None or acked > at)
            and written - first_at[seen.frame.address] < ACK_TIMEOUT
        }
        assert len(others) < WINDOW, f"{identify} left with {sorted(others)} unanswered"


def one_identify_each(wire: LineLog, writes: Writes, left_out: Collection[tuple[int, int]] = ()) -> list[int]:
    """The stations sent an identify, one each: copies of it on the line only as the host sent it again, its ACK
    timeout after the copy before (Writes.resent). `left_out`: (address, SEQ) of identifies not counted."""
    on_line = {(seen.frame.address, seen.frame.seq) for _, seen in identifies(wire)} - set(left_out)
    # A subset: a copy of the silent station's identify written just now may not have crossed the pty yet.
    assert on_line <= {(address, seq) for _at, address, seq in writes.seen}, (on_line, writes)
    return sorted(writes.resent(ACK_TIMEOUT))


async def stop(driver: ReferenceWagerBus, sim: WagerBusSim) -> None:
    await asyncio.gather(*(s.stop() for s in driver.stations.values()))
    await sim.stop()


@pytest.mark.parametrize(
    ("host", "stations"),
    [(3, (1, 2, 3)), (1, (1, 2, 3)), (3, (1,))],
    ids=["v3 host, v3 stations", "host kept to v1", "v1 stations"],
)
async def test_seven_stations_start_with_one_identify_each(
    host: int, stations: tuple[int, ...], writes: Writes
) -> None:
    sim = WagerBusSim("wager_bus", seats=SEATS, protocols=stations, timing=LineTiming())
    wire, online, driver = await start_line(sim, host)
    try:
        assert one_identify_each(wire, writes) == list(SEATS), "one identify a station"
        assert_within_window(wire, writes)
        assert online == {f"wager_station_{seat}" for seat in SEATS}
        # One identity each: a copy a station sent again (the host's ACK late past its timer) is the same frame.
        identities = {(seen.frame.seq, seen.frame.payload) for seen in wire.frames if seen.name == "identity"}
        assert len(identities) == len(SEATS), identities
        assert {s.protocol_version for s in driver.stations.values()} == {min(host, max(stations))}
    finally:
        await stop(driver, sim)


async def test_a_silent_station_holds_the_others_up_one_ack_timeout_only(writes: Writes) -> None:
    """Station 1 is configured but not on the line: its identify goes unanswered and holds one turn, and the other six
    identify once each through the others, without waiting for its retries (4 transmissions, 400 ms) to run out."""
    sim = WagerBusSim("wager_bus", seats=range(2, 8), timing=LineTiming())
    wire, online, driver = await start_line(sim, 3, seats=range(2, 8))
    try:
        to = [seen.frame.address for _, seen in identifies(wire)]
        again = given_up_on(writes, 1)
        assert one_identify_each(wire, writes, again) == list(SEATS), "one identify a station, station 1's sent again"
        assert online == {f"wager_station_{seat}" for seat in range(2, 8)}
        # The seats queue for the turns in seat order: station 2 takes the second turn while station 1 holds the first.
        assert to[:2] == [1, 2], f"identifies in the order the line carried them: {to}"
        assert_within_window(wire, writes)
    finally:
        await stop(driver, sim)


def given_up_on(writes: Writes, address: int) -> set[tuple[int, int]]:
    """Leave out of `writes` the identifies to the silent `address` after its first one was given up (sent 1 + 3 times,
    the driver's retries): a stall of this process (a loaded machine) can hold the start past that, and the host then
    identifies the station again after its back-off, rightly, with a new SEQ. Any other new SEQ to it stays (and fails
    Writes.resent); the (address, SEQ) of those left out."""
    to_it = [(at, seq) for at, a, seq in writes.seen if a == address]
    first = [at for at, seq in to_it if seq == to_it[0][1]]
    later = {(address, seq) for at, seq in to_it if len(first) == 4 and at > first[-1]}
    writes.seen = [w for w in writes.seen if (w[1], w[2]) not in later]
    return later
