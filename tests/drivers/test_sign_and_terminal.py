"""The progressive sign and the electronic wagering terminal against their simulators, through real ptys."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from drivers.interfaces import (
    AccountRequested,
    CreditConfirmed,
    DealerConfirmed,
    Device,
    DeviceFault,
    DeviceOffline,
    DeviceOnline,
    ElectronicWagerTerminal,
    LockAcknowledged,
    MetersShown,
    ProgressiveSign,
    WagerDetected,
    WagerRefused,
)
from drivers.registry import DriverConfigError, available_drivers, create_driver
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.table import SimulatedTable
from tests.drivers.conftest import DriverFactory, Recorder

LEVELS = {"mega": 1250000, "major": 180000, "minor": 2500}


@pytest.fixture
async def extras_table(rng: random.Random) -> AsyncIterator[SimulatedTable]:
    async with SimulatedTable(seats=3, rng=rng, sign=True, terminals=True) as simulated:
        yield simulated


async def start_sign(table: SimulatedTable, start_driver: DriverFactory, **settings: Any) -> tuple[Any, Recorder]:
    sign, events = await start_driver(
        "progressive_sign", "reference-progressive-sign", table.ports["progressive_sign"], **settings
    )
    await events.next(DeviceOnline)
    return sign, events


async def start_terminal(table: SimulatedTable, start_driver: DriverFactory, seat: int) -> tuple[Any, Recorder]:
    device_id = f"wager_terminal_{seat}"
    terminal, events = await start_driver(device_id, "reference-wager-terminal", table.ports[device_id], seat=seat)
    await events.next(DeviceOnline)
    return terminal, events


# --- progressive sign ------------------------------------------------------------------------------


async def test_sign_identifies_and_shows_levels(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sign, events = await start_driver(
        "progressive_sign", "reference-progressive-sign", extras_table.ports["progressive_sign"]
    )
    assert isinstance(sign, ProgressiveSign)
    online = await events.next(DeviceOnline)
    assert online.identity["model"] == "SIM-PROGRESSIVE-SIGN"

    await sign.show_levels(LEVELS)
    assert await events.next(MetersShown) == MetersShown("progressive_sign", LEVELS)
    assert extras_table.sign is not None and extras_table.sign.levels == LEVELS

    # The display shows exactly the levels last sent, not a merge with earlier ones.
    await sign.show_levels({"mega": 1250100})
    assert (await events.next(MetersShown)).levels == {"mega": 1250100}
    assert extras_table.sign.levels == {"mega": 1250100}


async def test_sign_records_wins(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sign, events = await start_sign(extras_table, start_driver)
    await sign.show_win("major", 180000, 3)
    await sign.show_win("minor", 2500, 1)
    # Commands are handled in order, so the meters' confirmation proves both wins were handled.
    await sign.show_levels(LEVELS)
    await events.next(MetersShown)
    assert extras_table.sign is not None
    assert extras_table.sign.wins == [("major", 180000, 3), ("minor", 2500, 1)]
    assert not any(isinstance(e, DeviceFault) for e in events.seen)


@pytest.mark.parametrize(
    ("call", "args", "field"),
    [
        ("show_levels", ({},), "levels"),
        ("show_levels", ({"Mega": 5},), "Mega"),
        ("show_levels", ({"x" * 33: 5},), "x" * 33),
        ("show_levels", ({"mega": -1},), "amount"),
        ("show_levels", ({"mega": True},), "amount"),
        ("show_win", ("major!", 5, 1), "level"),
        ("show_win", ("major", 1.5, 1), "amount"),
        ("show_win", ("major", 5, 0), "seat"),
    ],
)
async def test_sign_refuses_bad_requests_without_sending(
    extras_table: SimulatedTable, start_driver: DriverFactory, call: str, args: tuple[Any, ...], field: str
) -> None:
    sign, events = await start_sign(extras_table, start_driver)
    await getattr(sign, call)(*args)
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_request" and field in fault.detail
    await sign.show_levels({"mega": 1})
    await events.next(MetersShown)
    assert extras_table.sign is not None and extras_table.sign.wins == []


async def test_sign_bad_messages_become_faults(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    _sign, events = await start_sign(extras_table, start_driver)
    assert extras_table.sign is not None
    for bad, expect in (
        ({"evt": "levels_shown"}, "levels"),
        ({"evt": "levels_shown", "levels": []}, "levels"),
        ({"evt": "levels_shown", "levels": {}}, "levels"),
        ({"evt": "levels_shown", "levels": {"Major": 5}}, "Major"),
        ({"evt": "levels_shown", "levels": {"major": -5}}, "amount"),
        ({"evt": "levels_shown", "levels": {"major": "5"}}, "amount"),
        ({"evt": "credited", "amount": 5, "reference": "r"}, "credited"),  # a terminal's event, not a sign's
    ):
        await extras_table.sign.send(bad)
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message" and expect in fault.detail, fault


async def test_sign_faults_unplug_replug_garbage(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = extras_table.sign
    assert sim is not None
    sign, events = await start_sign(extras_table, start_driver)

    await sim.inject(Fault(FaultKind.GARBAGE))
    await sign.show_levels(LEVELS)
    assert (await events.next(MetersShown)).levels == LEVELS

    await sim.inject(Fault(FaultKind.UNPLUG), "show_win 1")  # the cable comes out as the win is announced
    await sign.show_win("mega", 1250000, 2)
    assert (await events.next(DeviceOffline)).reason
    assert sim.wins == []

    await sim.inject(Fault(FaultKind.REPLUG))
    await events.next(DeviceOnline)
    await sign.show_win("mega", 1250000, 2)
    await sign.show_levels({"mega": 0})
    await events.next(MetersShown)
    assert sim.wins == [("mega", 1250000, 2)]


async def test_sign_slow_and_no_reply(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = extras_table.sign
    assert sim is not None
    sign, events = await start_sign(extras_table, start_driver, heartbeat_interval=0.2)
    await sim.inject(Fault(FaultKind.SLOW_REPLY, delay_ms=150))  # within the retry budget of 4 x 100 ms
    await sign.show_levels(LEVELS)
    assert (await events.next(MetersShown)).levels == LEVELS

    await sim.inject(Fault(FaultKind.NO_REPLY))
    await sign.show_levels(LEVELS)
    assert (await events.next(DeviceFault)).code == "timeout"
    assert "heartbeat" in (await events.next(DeviceOffline)).reason


async def test_sign_has_no_behaviour_faults(extras_table: SimulatedTable) -> None:
    assert extras_table.sign is not None
    with pytest.raises(ValueError, match="cannot have fault 'jam'"):
        await extras_table.sign.inject(Fault(FaultKind.JAM))
    with pytest.raises(ValueError, match="never sees event 'shuffle'"):
        await extras_table.sign.inject(Fault(FaultKind.UNPLUG), "shuffle 1")


# --- electronic wagering terminal ------------------------------------------------------------------


async def test_terminal_wagers_lock_and_refusal(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = extras_table.terminals[2]
    terminal, events = await start_driver("wager_terminal_2", "reference-wager-terminal", sim.port, seat=2)
    assert isinstance(terminal, ElectronicWagerTerminal) and terminal.seat == 2
    assert (await events.next(DeviceOnline)).identity["model"] == "SIM-WAGER-TERMINAL"

    await sim.place(100)
    assert await events.next(WagerDetected) == WagerDetected("wager_terminal_2", 2, "five_card_hand_bonus", 100)

    await terminal.lock()
    assert await events.next(LockAcknowledged) == LockAcknowledged("wager_terminal_2", 2, True)
    assert sim.locked
    await sim.place(500)
    assert await events.next(WagerRefused) == WagerRefused("wager_terminal_2", 2, "five_card_hand_bonus", 500, "locked")

    await terminal.unlock()
    assert await events.next(LockAcknowledged) == LockAcknowledged("wager_terminal_2", 2, False)
    assert not sim.locked
    await sim.place(200)
    assert (await events.next(WagerDetected)).amount_cents == 200


async def test_terminal_credits_once_per_reference(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = extras_table.terminals[3]
    terminal, events = await start_terminal(extras_table, start_driver, 3)

    await terminal.credit(4900, "r-12-s3")
    assert await events.next(CreditConfirmed) == CreditConfirmed("wager_terminal_3", 3, 4900, "r-12-s3")
    assert sim.credits == [(4900, "r-12-s3")]

    # Sent again (as after a reconnect): confirmed again, paid once.
    await terminal.credit(4900, "r-12-s3")
    assert (await events.next(CreditConfirmed)).reference == "r-12-s3"
    assert sim.credits == [(4900, "r-12-s3")]

    await terminal.credit(5000, "r-12-s3")
    fault = await events.next(DeviceFault)
    assert fault.code == "duplicate_reference" and "r-12-s3" in fault.detail
    assert sim.credits == [(4900, "r-12-s3")]

    await terminal.credit(100, "r-13-s3")
    assert (await events.next(CreditConfirmed)).amount_cents == 100
    assert sim.credits == [(4900, "r-12-s3"), (100, "r-13-s3")]


@pytest.mark.parametrize(
    ("amount", "reference", "field"),
    [
        (-1, "r-1", "amount"),
        (True, "r-1", "amount"),
        (10, "", "reference"),
        (10, "r 1", "reference"),
        (10, "r" * 65, "reference"),
    ],
)
async def test_terminal_refuses_bad_credit_without_sending(
    extras_table: SimulatedTable, start_driver: DriverFactory, amount: Any, reference: Any, field: str
) -> None:
    terminal, events = await start_terminal(extras_table, start_driver, 1)
    await terminal.credit(amount, reference)
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_request" and field in fault.detail
    await terminal.lock()
    await events.next(LockAcknowledged)
    assert extras_table.terminals[1].credits == []


async def test_terminal_bad_messages_become_faults(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = extras_table.terminals[1]
    _terminal, events = await start_terminal(extras_table, start_driver, 1)
    for bad, expect in (
        ({"evt": "wager", "spot": "ante", "amount": 5}, "spot"),  # a wager station's spot, not a terminal's
        ({"evt": "wager", "spot": "five_card_hand_bonus", "amount": -5}, "amount"),
        ({"evt": "wager_refused", "spot": "five_card_hand_bonus"}, "amount"),
        ({"evt": "credited", "amount": 5}, "reference"),
        ({"evt": "credited", "amount": 5, "reference": "r 1"}, "reference"),
        ({"evt": "credited", "amount": "5", "reference": "r-1"}, "amount"),
        ({"evt": "levels_shown", "levels": {"mega": 1}}, "levels_shown"),  # a sign's event
    ):
        await sim.send(bad)
        fault = await events.next(DeviceFault)
        assert fault.code == "bad_message" and expect in fault.detail, fault
    await sim.place(100)  # still working afterwards
    assert (await events.next(WagerDetected)).amount_cents == 100


async def test_terminal_unplugged_mid_credit_pays_nothing(
    extras_table: SimulatedTable, start_driver: DriverFactory
) -> None:
    sim = extras_table.terminals[2]
    terminal, events = await start_terminal(extras_table, start_driver, 2)
    await sim.inject(Fault(FaultKind.UNPLUG), "credit 1")
    await terminal.credit(4900, "r-7-s2")
    assert (await events.next(DeviceOffline)).reason
    assert sim.credits == []
    assert not any(isinstance(e, CreditConfirmed) for e in events.seen)

    await sim.replug()
    await events.next(DeviceOnline)
    await terminal.credit(4900, "r-7-s2")
    assert (await events.next(CreditConfirmed)).amount_cents == 4900
    assert sim.credits == [(4900, "r-7-s2")]


async def test_terminal_offline_commands_fault(extras_table: SimulatedTable, start_driver: DriverFactory) -> None:
    sim = extras_table.terminals[1]
    terminal, events = await start_terminal(extras_table, start_driver, 1)
    await sim.unplug()
    await events.next(DeviceOffline)
    await terminal.credit(100, "r-1")
    assert (await events.next(DeviceFault)).code == "offline"


# --- registry and table ----------------------------------------------------------------------------


def test_registry_lists_and_builds_both() -> None:
    drivers = available_drivers()
    assert {"reference-progressive-sign", "reference-wager-terminal"} <= set(drivers)
    sign = create_driver("progressive_sign", {"driver": "reference-progressive-sign", "port": "/dev/ttySign"})
    assert isinstance(sign, Device) and isinstance(sign, ProgressiveSign)
    terminal = create_driver(
        "wager_terminal_4", {"driver": "reference-wager-terminal", "port": "/dev/ttyEwt4", "seat": 4}
    )
    assert isinstance(terminal, ElectronicWagerTerminal) and terminal.seat == 4


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"driver": "reference-wager-terminal", "port": "/dev/x"}, "seat"),
        ({"driver": "reference-wager-terminal", "port": "/dev/x", "seat": 0}, "seat"),
        ({"driver": "reference-wager-terminal", "port": "/dev/x", "seat": 1, "address": 255}, "address"),
        ({"driver": "reference-progressive-sign", "port": "/dev/x", "seat": 1}, "seat"),
        ({"driver": "reference-progressive-sign", "port": ""}, "port"),
        ({"driver": "reference-progressive-sign"}, "port"),
    ],
)
def test_bad_settings_name_the_field(settings: dict[str, object], field: str) -> None:
    with pytest.raises(DriverConfigError) as info:
        create_driver("dev", settings)
    assert field in str(info.value) and "invalid settings" in str(info.value)


async def test_extras_are_off_by_default(rng: random.Random) -> None:
    plain = SimulatedTable(seats=2, rng=rng)
    assert plain.sign is None and plain.terminals == {}
    assert [d.device_id for d in plain.devices] == [
        "shuffler",
        "shoe",
        "wager_station_1",
        "wager_station_2",
        "dealer_panel",
    ]
    extras = SimulatedTable(seats=2, rng=rng, sign=True, terminals=True)
    assert {"progressive_sign", "wager_terminal_1", "wager_terminal_2"} <= {d.device_id for d in extras.devices}
    assert extras.device("wager_terminal_2") is extras.terminals[2]


async def test_terminal_accounts_buy_in_cash_out_cancel_and_display(
    extras_table: SimulatedTable, start_driver: DriverFactory
) -> None:
    """Issue 14 item 2, through a real pty: what the player and the dealer do at the terminal (docs/protocol.md)."""
    sim = extras_table.terminals[1]
    terminal, events = await start_terminal(extras_table, start_driver, 1)

    await sim.buy_in(5_000, "chips")
    assert await events.next(AccountRequested) == AccountRequested("wager_terminal_1", 1, "buy_in", 5_000, "chips")
    await sim.dealer_confirm("buy_in")
    assert await events.next(DealerConfirmed) == DealerConfirmed("wager_terminal_1", 1, "buy_in", True)
    await sim.cash_out("ticket")
    assert await events.next(AccountRequested) == AccountRequested("wager_terminal_1", 1, "cash_out", 0, "ticket")
    await sim.dealer_confirm("cash_out", confirmed=False)
    assert await events.next(DealerConfirmed) == DealerConfirmed("wager_terminal_1", 1, "cash_out", False)
    await sim.cancel()
    assert await events.next(WagerDetected) == WagerDetected("wager_terminal_1", 1, "five_card_hand_bonus", 0)

    # The balance and the message the player sees (655a.7(d)(5): the player verifies the wager was accepted).
    await terminal.show(4_900, "wager accepted\x07")
    await terminal.ping()  # frames are handled in order: once the ping is acknowledged the show was handled
    assert sim.shown == [(4_900, "wager accepted")] and sim.balance == 4_900
    await terminal.show(-1, "x")
    assert (await events.next(DeviceFault)).code == "bad_request" and sim.shown == [(4_900, "wager accepted")]

    # A garbled request from a terminal is a fault, never money moved.
    await sim.send({"evt": "buy_in", "amount": 500, "medium": "bitcoin"})
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_message" and "medium" in fault.detail
    await sim.send({"evt": "dealer_confirmed", "request": "buy_in", "confirmed": "yes"})
    assert "true or false" in (await events.next(DeviceFault)).detail
