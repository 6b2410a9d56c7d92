"""The USB HID dealer panel driver against a pyusb backend double (tests/drivers/usb_double.py: what it models and
what it does not)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

import pytest

from drivers.interfaces import ButtonPressed, DealerPanel, DeviceEvent, DeviceFault, DeviceOffline, DeviceOnline
from drivers.registry import DriverConfigError, available_drivers, create_driver
from drivers.vendor.usb_panel import UsbHidDealerPanel
from tests.drivers.usb_double import (
    SETTINGS,
    FakeHidBackend,
    Recorder,
)


def panel_threads(device_id: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"usb-panel:{device_id}" and t.is_alive()]


class StartPanel(Protocol):
    """The started fixture: a running UsbHidDealerPanel on this backend, and its Recorder."""

    async def __call__(self, backend: FakeHidBackend, **overrides: Any) -> tuple[UsbHidDealerPanel, Recorder]: ...


@pytest.fixture
async def started() -> AsyncIterator[StartPanel]:
    """started(backend, **settings) -> (running panel, Recorder); every panel is stopped afterwards."""
    panels: list[UsbHidDealerPanel] = []

    async def start(backend: FakeHidBackend, **overrides: Any) -> tuple[UsbHidDealerPanel, Recorder]:
        settings = UsbHidDealerPanel.Settings.model_validate(SETTINGS | overrides)
        panel = UsbHidDealerPanel("dealer_panel", settings, backend=backend)
        recorder = Recorder()
        panels.append(panel)
        await panel.start(recorder)
        return panel, recorder

    yield start
    for panel in panels:
        await panel.stop()


async def test_online_with_identity_from_descriptors(started: StartPanel) -> None:
    backend = FakeHidBackend()
    panel, events = await started(backend)
    assert isinstance(panel, DealerPanel)
    online = await events.next(DeviceOnline)
    assert online.device_id == "dealer_panel"
    assert online.identity == {
        "manufacturer": "Acme Gaming",
        "product": "Dealer Panel DP-2",
        "model": "Dealer Panel DP-2",
        "serial": "DP2-000417",
        "firmware": "1.02",
        "usb_id": "16c0:27db",
    }
    # usbhid was detached so the interface could be claimed (the double refuses a claim otherwise).
    assert backend.calls.index("detach") < backend.calls.index("claim")
    assert backend.claimed == {0}


async def test_start_returns_with_online_already_delivered(started: StartPanel) -> None:
    _, events = await started(FakeHidBackend())
    assert isinstance(events.queue.get_nowait(), DeviceOnline)


async def test_press_gives_one_event_with_the_mapped_name(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    backend.press(0b01)
    backend.release()
    backend.press(0b10)
    assert await events.presses(2) == ["no_more_bets", "fold"]
    assert events.queue.empty()


async def test_held_button_fires_once(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    for _ in range(5):  # a panel that repeats its state while the button is held
        backend.press(0b01)
    backend.press(0b11)  # fold pressed while no_more_bets is still held: only fold is a new edge
    # Reports are handled in order, so a duplicate no_more_bets would come before the fold.
    assert await events.presses(2) == ["no_more_bets", "fold"]


async def test_two_buttons_in_one_report_give_two_events(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    backend.press(0b11)
    assert await events.presses(2) == ["no_more_bets", "fold"]


async def test_release_gives_nothing_and_rearms_the_button(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    backend.press(0b10)
    backend.release()
    backend.release()
    backend.press(0b10)
    # Two presses, nothing for the releases in between.
    assert await events.presses(2) == ["fold", "fold"]


async def test_unmapped_bits_are_ignored(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    backend.press(1 << 5)  # not in `buttons`
    backend.press(0xFF00)  # byte 1, not mapped either
    backend.press(1 << 5 | 0b01)  # the mapped bit goes 0 -> 1 while the unmapped one stays set
    assert await events.presses(1) == ["no_more_bets"]


async def test_bits_beyond_the_first_byte(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend, buttons={9: "fold", 16: "no_more_bets"})
    await events.next(DeviceOnline)
    backend.press(1 << 9)
    backend.press(1 << 9 | 1 << 16)
    assert await events.presses(2) == ["fold", "no_more_bets"]


async def test_short_report_is_a_fault_not_a_press(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    backend.send(b"\x01")
    fault = await events.next(DeviceFault)
    assert fault.code == "bad_report" and "1 bytes" in fault.detail
    backend.press(0b01)
    assert await events.presses(1) == ["no_more_bets"]


async def test_unplug_goes_offline_and_replug_comes_back(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend)
    await events.next(DeviceOnline)
    backend.press(0b01)
    assert await events.presses(1) == ["no_more_bets"]

    backend.unplug()
    offline = await events.next(DeviceOffline)
    assert "No such device" in offline.reason
    assert backend.open_handles == 0  # the dead handle was closed

    backend.replug()
    online = await events.next(DeviceOnline)
    assert online.identity["serial"] == "DP2-000417"
    backend.press(0b01)
    assert await events.presses(1) == ["no_more_bets"]
    # Exactly one offline for the one unplug, however many times the driver looked while it was gone.
    assert [type(e) for e in events.seen if not isinstance(e, ButtonPressed)] == [
        DeviceOnline,
        DeviceOffline,
        DeviceOnline,
    ]


async def test_absent_at_start_goes_offline_once_then_online(started: StartPanel) -> None:
    backend = FakeHidBackend(present=False)
    _, events = await started(backend)
    # start() returned after the first attempt settled, so the offline is already there.
    offline = events.queue.get_nowait()
    assert isinstance(offline, DeviceOffline) and "16c0:27db" in offline.reason
    backend.replug()
    await events.next(DeviceOnline)
    backend.press(0b10)
    assert await events.presses(1) == ["fold"]
    assert [type(e) for e in events.seen] == [DeviceOnline, ButtonPressed]


async def test_serial_number_selects_the_panel(started: StartPanel) -> None:
    _, events = await started(FakeHidBackend(), serial_number="SOMEONE-ELSE")
    offline = await events.next(DeviceOffline)
    assert "SOMEONE-ELSE" in offline.reason

    backend = FakeHidBackend()
    _, events = await started(backend, serial_number="DP2-000417")
    await events.next(DeviceOnline)


async def test_wrong_endpoint_is_a_driver_fault_reported_once(started: StartPanel) -> None:
    backend = FakeHidBackend()
    _, events = await started(backend, endpoint=0x82)
    fault = await events.next(DeviceFault)
    assert fault.code == "driver_error" and "0x82" in fault.detail and "0x81" in fault.detail
    await events.next(DeviceOffline)
    assert backend.claimed == set() and backend.open_handles == 0


async def test_failing_sink_does_not_stop_the_panel(started: StartPanel) -> None:
    backend = FakeHidBackend()
    events = Recorder()

    def sink(event: DeviceEvent) -> None:
        events(event)
        if isinstance(event, ButtonPressed) and event.button == "fold":
            raise RuntimeError("controller bug")

    settings = UsbHidDealerPanel.Settings.model_validate(SETTINGS)
    panel = UsbHidDealerPanel("dealer_panel", settings, backend=backend)
    try:
        await panel.start(sink)
        await events.next(DeviceOnline)
        backend.press(0b10)
        backend.press(0b11)
        assert await events.presses(2) == ["fold", "no_more_bets"]
    finally:
        await panel.stop()


async def test_stop_is_prompt_and_releases_the_panel(started: StartPanel) -> None:
    backend = FakeHidBackend()
    panel, events = await started(backend, read_timeout_ms=500)  # the longest blocking read allowed
    await events.next(DeviceOnline)
    # Each blocking call has a thread of its own: the reader's exists once its read blocks (not at DeviceOnline).
    assert await asyncio.to_thread(backend.reading.wait, 5)
    assert len(panel_threads("dealer_panel")) == 1
    began = time.monotonic()
    await asyncio.wait_for(panel.stop(), 1.5)  # failure bound; the assertion below is the requirement
    assert time.monotonic() - began < 1.0
    assert panel_threads("dealer_panel") == []
    assert backend.claimed == set() and backend.open_handles == 0
    assert backend.kernel_driver_active  # handed back to usbhid
    await panel.stop()  # a second stop is harmless


async def test_stop_while_offline_is_prompt(started: StartPanel) -> None:
    panel, events = await started(FakeHidBackend(present=False))
    await events.next(DeviceOffline)
    began = time.monotonic()
    await asyncio.wait_for(panel.stop(), 1.5)
    assert time.monotonic() - began < 1.0
    assert panel_threads("dealer_panel") == []


async def test_stop_before_start_is_harmless() -> None:
    panel = UsbHidDealerPanel("dealer_panel", UsbHidDealerPanel.Settings.model_validate(SETTINGS))
    await panel.stop()


# --- configuration through the registry ------------------------------------------------------------


def test_entry_point_is_registered() -> None:
    assert available_drivers()["usb-hid-dealer-panel"] is UsbHidDealerPanel


def test_create_driver_with_toml_shaped_settings() -> None:
    # TOML table keys are always strings: `[devices.dealer_panel.buttons]` then `0 = "no_more_bets"`.
    raw = SETTINGS | {"buttons": {"0": "no_more_bets", "1": "fold"}, "serial_number": "DP2-000417"}
    panel = create_driver("dealer_panel", raw)
    assert isinstance(panel, UsbHidDealerPanel) and isinstance(panel, DealerPanel)
    assert panel.settings.buttons == {0: "no_more_bets", 1: "fold"}
    assert (panel.settings.interface, panel.settings.endpoint, panel.settings.report_size) == (0, 0x81, 8)


def test_a_port_override_leaves_a_usb_panel_alone() -> None:
    # `tablectl run --ports` points serial devices at simulator ptys; a USB panel has no port to replace.
    panel = create_driver("dealer_panel", SETTINGS, port_override="/dev/pts/9")
    assert isinstance(panel, UsbHidDealerPanel) and "port" not in panel.settings.model_dump()


def test_unknown_button_name_lists_the_allowed() -> None:
    with pytest.raises(DriverConfigError) as info:
        create_driver("dealer_panel", SETTINGS | {"buttons": {0: "no_more_bet"}})
    message = str(info.value)
    assert "buttons" in message and "'no_more_bet'" in message
    assert "no_more_bets" in message and "fold" in message


@pytest.mark.parametrize(
    ("change", "field_name"),
    [
        ({"vendor_id": None}, "vendor_id"),
        ({"product_id": 0x10000}, "product_id"),
        ({"endpoint": 0x01}, "endpoint"),
        ({"read_timeout_ms": 1000}, "read_timeout_ms"),
        ({"buttons": {}}, "buttons"),
        ({"buttons": {64: "fold"}}, "buttons"),
        ({"port": "/dev/ttyUSB0"}, "port"),
    ],
)
def test_bad_settings_name_the_field(change: dict[str, Any], field_name: str) -> None:
    raw = {k: v for k, v in (SETTINGS | change).items() if v is not None}
    with pytest.raises(DriverConfigError) as info:
        create_driver("dealer_panel", raw)
    assert field_name in str(info.value) and "invalid settings" in str(info.value)


async def test_dealer_confirmation_keys_in_the_key_map(started: StartPanel) -> None:
    """The docs' key map (docs/usb-panel.md) with the dealer's confirmations; counts stay unsupported on HID."""
    backend = FakeHidBackend()
    keys = {0: "no_more_bets", 1: "fold", 2: "inspected", 3: "shuffled", 4: "misdeal", 5: "no_misdeal"}
    _, events = await started(backend, buttons=keys)
    await events.next(DeviceOnline)
    for bit in (2, 3, 4, 5):
        backend.press(1 << bit)
        backend.release()
    assert await events.presses(4) == ["inspected", "shuffled", "misdeal", "no_misdeal"]
