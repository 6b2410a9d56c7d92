"""Sign pacing: the pure SignPacer, and the reference progressive sign paced on a ManualClock through a real pty."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.interfaces import DeviceFault, DeviceOnline, MetersShown
from drivers.registry import DriverConfigError, create_driver
from drivers.sign_pacing import ManualClock, SignPacer
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory

TIMEOUT = 5.0
LEVELS = {"mega": 1_250_000, "major": 180_000, "minor": 41_000}


def test_wins_first_in_order_then_the_latest_levels_one_slot_apart() -> None:
    pacer: SignPacer[str] = SignPacer(updates_per_second=2)
    pacer.want_levels({"mega": 1})
    pacer.want_levels({"mega": 2, "major": 1})
    pacer.want_win("w1")
    pacer.want_win("w2")
    assert pacer.take(0.0) == ("win", "w1")
    assert pacer.take(0.0) == ("win", "w2")  # wins are not paced
    assert pacer.take(0.0) == ("levels", {"mega": 2, "major": 1}) and pacer.coalesced == 1
    pacer.want_levels({"mega": 3})
    assert pacer.take(0.49) is None and pacer.due_at() == 0.5
    pacer.want_win("w3")
    assert pacer.due_at() == float("-inf") and pacer.take(0.49) == ("win", "w3")
    assert pacer.take(0.5) == ("levels", {"mega": 3})
    assert not pacer.pending and pacer.take(5.0) is None
    pacer.retry_levels({"mega": 3})
    pacer.want_levels({"mega": 4})
    pacer.retry_levels({"mega": 3})  # older than what waits: ignored
    assert pacer.take(5.0) == ("levels", {"mega": 4})


def test_too_slow_a_pace_cannot_meet_the_win_deadline() -> None:
    with pytest.raises(ValueError, match="within 30 s"):
        SignPacer(updates_per_second=0.05)
    with pytest.raises(DriverConfigError, match=r"max_updates_per_second.*within 30 s"):
        create_driver("s", {"driver": "reference-progressive-sign", "port": "/dev/x", "max_updates_per_second": 0.01})


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.sampled_from(["levels", "win"]), st.floats(0, 3)), min_size=1, max_size=60),
    st.sampled_from([0.1, 0.5, 2.0, 10.0]),
)
def test_any_request_pattern(requests: list[tuple[str, float]], rate: float) -> None:
    """Meter updates at least 1/rate apart; every win out in order at once; the last levels always sent."""
    pacer: SignPacer[int] = SignPacer(rate)
    now, sent, asked_at = 0.0, [], {}
    last_levels: dict[str, int] | None = None
    for i, (kind, gap) in enumerate(requests):
        while pacer.pending and pacer.due_at() <= now + gap:  # slots that open before the next request
            now = max(now, pacer.due_at())
            taken = pacer.take(now)
            assert taken is not None
            sent.append((now, taken))
        now += gap
        if kind == "win":
            pacer.want_win(i)
            asked_at[i] = now
        else:
            last_levels = {"mega": i}
            pacer.want_levels(last_levels)
        while (taken := pacer.take(now)) is not None:  # the sender takes whatever may go now
            sent.append((now, taken))
    while pacer.pending:
        now = max(now, pacer.due_at())
        taken = pacer.take(now)
        assert taken is not None
        sent.append((now, taken))
    times = [t for t, (kind, _) in sent if kind == "levels"]
    assert all(b - a >= 1 / rate - 1e-9 for a, b in itertools.pairwise(times))
    wins: list[tuple[float, int]] = []
    for t, (kind, item) in sent:
        if kind == "win":
            assert isinstance(item, int)  # a win is the number want_win was given
            wins.append((t, item))
    assert [w for _, w in wins] == sorted(asked_at)
    assert all(t == asked_at[w] for t, w in wins)
    levels_sent = [item for _, (kind, item) in sent if kind == "levels"]
    assert (levels_sent[-1] if levels_sent else None) == last_levels


# --- the reference sign, paced --------------------------------------------------------------------------------


@pytest.fixture
async def extras_table() -> AsyncIterator[SimulatedTable]:
    async with SimulatedTable(seats=2, rng=random.Random(7), sign=True) as simulated:
        yield simulated


async def test_reference_sign_coalesces_and_spaces_updates_on_the_clock(
    extras_table: SimulatedTable, start_driver: DriverFactory
) -> None:
    sim = extras_table.sign
    assert sim is not None
    clock = ManualClock(50.0)
    sign, events = await start_driver(
        "progressive_sign",
        "reference-progressive-sign",
        extras_table.ports["progressive_sign"],
        max_updates_per_second=0.2,
    )
    sign.clock = clock  # before anything is paced; the driver only reads it when sending
    await events.next(DeviceOnline)
    for step in range(30):
        await sign.show_levels({**LEVELS, "minor": 41_000 + step})
    assert (await events.next(MetersShown)).levels["minor"] == 41_029  # one update for thirty requests
    assert sign.pacer.coalesced == 29

    await sign.show_levels({**LEVELS, "minor": 50_000})
    async with asyncio.timeout(TIMEOUT):
        await clock.until_sleeping()
    clock.advance(4.9)  # a slot every 5 s: not yet
    await asyncio.sleep(0)
    assert sim.levels["minor"] == 41_029

    # A win asked for now goes at once, ahead of the waiting meters, which keep their slot.
    asked = clock.now()
    async with asyncio.timeout(TIMEOUT):
        await sign.show_win("major", 180_000, 2)  # returns once the sign has it
    assert sim.wins == [("major", 180_000, 2)] and clock.now() == asked
    assert sim.levels["minor"] == 41_029
    async with asyncio.timeout(TIMEOUT):
        await clock.until_sleeping()
    clock.advance(0.1)
    async with asyncio.timeout(TIMEOUT):
        while sim.levels.get("minor") != 50_000:
            await events.next(MetersShown)
    assert sim.levels == {**LEVELS, "minor": 50_000}


async def test_reference_sign_shows_the_latest_values_again_after_a_replug(
    extras_table: SimulatedTable, start_driver: DriverFactory
) -> None:
    sim = extras_table.sign
    assert sim is not None
    sign, events = await start_driver(
        "progressive_sign",
        "reference-progressive-sign",
        extras_table.ports["progressive_sign"],
        max_updates_per_second=50,
    )
    await events.next(DeviceOnline)
    await sign.show_levels(LEVELS)
    await events.next(MetersShown)
    await sim.unplug()
    await sign.show_levels({**LEVELS, "mega": 1_300_000})  # while away: kept, not lost
    await sim.replug()
    await events.next(DeviceOnline)
    async with asyncio.timeout(TIMEOUT):
        while (await events.next(MetersShown)).levels != {**LEVELS, "mega": 1_300_000}:
            pass
    assert sim.levels == {**LEVELS, "mega": 1_300_000}
    assert not [e for e in events.seen if isinstance(e, DeviceFault) and e.code == "win_not_shown"]
