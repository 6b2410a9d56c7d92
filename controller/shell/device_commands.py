"""The engine's device commands carried out: each command matched by its type and sent through the device's protocol
(drivers/interfaces.py). A command carries all it needs (the meters a sign shows, the stack's size), so nothing
here reads the engine's state; a command that fails becomes a DeviceFault fed back to the engine, never a dead
controller."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TypeGuard, TypeVar, assert_never, cast

import structlog

from controller.config.table import station_id
from controller.engine.commands import (
    SHOE,
    SHUFFLER,
    SIGN,
    DeviceCommand,
    DispenseStack,
    LightSeat,
    LockSeat,
    LockTerminal,
    RemoveStub,
    SendLink,
    ShowAccount,
    ShowLevels,
    ShowLink,
    ShowWin,
    Shuffle,
    UnlockSeat,
    UnlockTerminal,
)
from drivers.interfaces import (
    DealingShoe,
    Device,
    DeviceEvent,
    DeviceFault,
    ElectronicWagerTerminal,
    LinkedSign,
    ProgressiveSign,
    SeatLights,
    Shuffler,
    WagerStation,
)

log = structlog.get_logger("tablectl.service")
LINK = "link"  # not a device: SendLink wakes the link client


K = TypeVar("K")


class CommandRunner:
    """Carries out one step's commands on the configured devices; what goes wrong goes to `sink` as a DeviceFault."""

    def __init__(self, devices: Mapping[str, Device], sink: Callable[[DeviceEvent], None]) -> None:
        self.devices = devices
        self.sink = sink
        self._unlit: set[str] = set()  # stations already logged as having no seat light
        self._plain_sign = False  # a sign without LinkedSign, logged once
        self._kinds: dict[tuple[str, object], bool] = {}  # (device id, protocol) -> isinstance, asked once
        # Wakes the link client (controller/shell/link_client.py) when a step put requests in the outbox.
        self.link_wake: Callable[[], None] = lambda: None

    async def execute(self, commands: Sequence[DeviceCommand]) -> None:
        # Commands to one device keep their order; different devices are driven concurrently
        # (all six stations lock at once).
        if not commands:
            return
        by_device = _by_device(commands)
        if len(by_device) == 1:  # most steps: one device (a card dispensed), no task of its own needed
            [(dev, cmds)] = by_device.items()
            await self._run(dev, cmds)
            return
        await asyncio.gather(*(self._run(dev, cmds) for dev, cmds in by_device.items()))

    def start(self, commands: Sequence[DeviceCommand]) -> asyncio.Future[list[None]]:
        """execute's work with each device's task started now, not in a task of its own first: a lock-out's frames
        are written in the loop's next turn (controller/shell/locks.py). Done when every device's commands are."""
        return asyncio.gather(*(self._run(dev, cmds) for dev, cmds in _by_device(commands).items()))

    async def _run(self, device_id: str, commands: list[DeviceCommand]) -> None:
        if device_id == LINK:
            self.link_wake()
            return
        device = self.devices.get(device_id)
        for c in commands:
            if device is None and device_id == SIGN:
                return  # no sign configured: the meters are on the console and the MQTT progressive topics
            if device is None:
                self.sink(
                    DeviceFault(
                        device_id, code="not_configured", detail=f"no device {device_id!r} in the config for {c.verb}"
                    )
                )
                return
            try:
                await self._call(device, c)
            except Exception as err:  # a failed command is a device fault, never a dead controller
                log.warning("device command failed", device=device_id, command=c.verb, error=str(err))
                self.sink(DeviceFault(device_id, code="command_failed", detail=f"{c.verb}: {err}"))
                return

    async def _call(self, device: Device, c: DeviceCommand) -> None:
        """Carry one command out through the device's protocol (drivers/interfaces.py, checked with isinstance); a
        device of the wrong kind for it raises DeviceMismatch, which the caller reports as the command's failure."""
        match c:
            case LockSeat() | UnlockSeat():
                if not self._is(device, WagerStation):
                    raise _mismatch(device, "wager station", c)
                await (device.lock() if isinstance(c, LockSeat) else device.unlock())
            case LightSeat(on=on):
                if not self._is(device, SeatLights):
                    self._no_seat_light(device)
                elif on:
                    await device.light_on()
                else:
                    await device.light_off()
            case Shuffle():
                if not self._is(device, Shuffler):
                    raise _mismatch(device, "shuffler", c)
                await device.shuffle()
            case DispenseStack(cards=cards):
                if not self._is(device, DealingShoe):
                    raise _mismatch(device, "dealing shoe", c)
                await device.dispense_stack(cards)
            case RemoveStub():
                if not self._is(device, DealingShoe):
                    raise _mismatch(device, "dealing shoe", c)
                await device.remove_stub()
            case ShowLevels(levels=levels):
                if not self._is(device, ProgressiveSign):
                    raise _mismatch(device, "progressive sign", c)
                await device.show_levels(levels)
            case ShowWin(level=level, amount_cents=amount, seat=seat):
                if not self._is(device, ProgressiveSign):
                    raise _mismatch(device, "progressive sign", c)
                await device.show_win(level, amount, seat)
            case ShowLink(up=up, message=message, pending=pending):
                if self._is(device, LinkedSign):
                    await device.show_link(up, message, pending)
                elif not self._plain_sign:
                    self._plain_sign = True
                    log.warning(
                        "the progressive sign cannot show the link's state: the table's events and status say it",
                        device=device.device_id,
                        driver=type(device).__name__,
                    )
            case SendLink():
                self.link_wake()
            case LockTerminal() | UnlockTerminal():
                if not self._is(device, ElectronicWagerTerminal):
                    raise _mismatch(device, "electronic wagering terminal", c)
                await (device.lock() if isinstance(c, LockTerminal) else device.unlock())
            case ShowAccount(balance_cents=balance, message=message):
                if not self._is(device, ElectronicWagerTerminal):
                    raise _mismatch(device, "electronic wagering terminal", c)
                await device.show(balance, message)
            case _:
                assert_never(c)

    def _is(self, device: Device, kind: Callable[..., K]) -> TypeGuard[K]:
        """isinstance against a runtime-checkable Protocol of drivers/interfaces.py, once per configured device: on
        Python 3.11 the check walks the Protocol's members every time (about 50 us, for every command carried out),
        and the runner's devices are fixed for its life."""
        key = (device.device_id, kind)
        known = self._kinds.get(key)
        if known is None:
            known = self._kinds[key] = isinstance(device, cast(type, kind))  # a Protocol class, passed as a callable
        return known

    def _no_seat_light(self, device: Device) -> None:
        # A station without a seat light (a driver without drivers.interfaces.SeatLights): the hit event names
        # the seat for the dealer. Said once per station, not at every hit and restart.
        if device.device_id not in self._unlit:
            self._unlit.add(device.device_id)
            log.warning(
                "wager station has no seat light: the dealer verifies the winning seat from the "
                "progressive.hit event instead",
                device=device.device_id,
                driver=type(device).__name__,
            )


class DeviceMismatch(TypeError):
    """A command reached a device of another kind (a config naming the wrong driver for a role)."""


def _mismatch(device: Device, kind: str, c: DeviceCommand) -> DeviceMismatch:
    return DeviceMismatch(f"{type(device).__name__} is not a {kind}: it cannot {c.verb}")


def _by_device(commands: Sequence[DeviceCommand]) -> dict[str, list[DeviceCommand]]:
    by_device: dict[str, list[DeviceCommand]] = defaultdict(list)
    for c in commands:
        by_device[device_for(c)].append(c)
    return by_device


def device_for(c: DeviceCommand) -> str:
    """The configured device that carries a command out: the seat's wager station, or the device of the role."""
    match c:
        case LockSeat(seat=seat) | UnlockSeat(seat=seat) | LightSeat(seat=seat):
            return station_id(seat)
        case Shuffle():
            return SHUFFLER
        case DispenseStack() | RemoveStub():
            return SHOE
        case ShowLevels() | ShowWin() | ShowLink():
            return SIGN
        case SendLink():
            return LINK
        case LockTerminal(seat=seat) | UnlockTerminal(seat=seat) | ShowAccount(seat=seat):
            return f"wager_terminal_{seat}"
        case _:
            assert_never(c)
