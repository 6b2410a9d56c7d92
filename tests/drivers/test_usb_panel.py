"""The USB HID dealer panel driver against a pyusb backend double.

No USB device exists on CI machines, so `FakeHidBackend` stands in for both libusb and a real panel: it
implements pyusb's `usb.backend.IBackend`, and the driver runs unchanged on top of pyusb's real `usb.core`
and `usb.util` (find, descriptor parsing, string descriptors through GET_DESCRIPTOR control transfers,
interface claiming, Device.read), exactly as it would on libusb.

What the double models: one full-speed HID device (vid:pid 16c0:27db) with realistic device,
configuration, interface (+ HID class descriptor) and endpoint descriptors; language ids and string
descriptors (manufacturer, product, serial) served through control transfers; a Linux kernel driver
(usbhid) bound at plug time that must be detached before the interface can be claimed (EBUSY otherwise);
an interrupt IN endpoint 0x81 fed from a queue the test fills (`press(bits)`, `release()`, `send(raw)`),
which raises `usb.core.USBTimeoutError` (errno 110, libusb code -7) when no report arrives in time and
LIBUSB_ERROR_OVERFLOW when the buffer is too small; `unplug()` makes every call on an open handle fail
with a USBError errno 19 (ENODEV, libusb code -4) and hides the device from enumeration; `replug()` brings
it back as a new device (old handles stay dead, the kernel driver binds again).

What it does not model: USB timing and the panel's polling interval, HID report descriptors and report
ids, SET_IDLE/GET_REPORT class requests, several devices or configurations, permissions (EACCES), and
libusb's own threading. Hardware acceptance still needs a real panel (docs/usb-panel.md).
"""

from __future__ import annotations

import array
import asyncio
import errno
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol, TypeVar

import pytest
import usb.backend
import usb.core

from drivers.interfaces import ButtonPressed, DealerPanel, DeviceEvent, DeviceFault, DeviceOffline, DeviceOnline
from drivers.registry import DriverConfigError, available_drivers, create_driver
from drivers.vendor.usb_panel import UsbHidDealerPanel

E = TypeVar("E", bound=DeviceEvent)

TIMEOUT = 5.0  # failure bound only; events normally arrive in milliseconds
VID, PID = 0x16C0, 0x27DB
REPORT_SIZE = 8
ENODEV_MESSAGE = "No such device (it may have been disconnected)"


def _descriptor(**fields: Any) -> SimpleNamespace:
    return SimpleNamespace(**fields)


@dataclass
class _Handle:
    generation: int
    closed: bool = False


@dataclass(eq=False)
class FakeHidBackend(usb.backend.IBackend):
    """One HID button panel behind a libusb-shaped backend (see the module docstring)."""

    present: bool = True
    manufacturer: str = "Acme Gaming"
    product: str = "Dealer Panel DP-2"
    serial: str = "DP2-000417"
    bcd_device: int = 0x0102
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self.reading = threading.Event()  # set once a read is blocked waiting for a report
        self._reports: deque[bytes] = deque()
        self._generation = 1
        self.kernel_driver_active = True
        self.claimed: set[int] = set()
        self.open_handles = 0
        self._strings = {1: self.manufacturer, 2: self.product, 3: self.serial}

    # --- what the test controls --------------------------------------------------------------------

    def send(self, report: bytes) -> None:
        with self._cond:
            self._reports.append(report)
            self._cond.notify_all()

    def press(self, bits: int) -> None:
        """Queue a report whose button state is `bits` (bit n = bit n % 8 of byte n // 8)."""
        self.send(bits.to_bytes(REPORT_SIZE, "little"))

    def release(self) -> None:
        self.press(0)

    def unplug(self) -> None:
        with self._cond:
            self.present = False
            self._reports.clear()
            self.claimed.clear()
            self._cond.notify_all()

    def replug(self) -> None:
        with self._cond:
            self._generation += 1
            self.present = True
            self.kernel_driver_active = True  # usbhid binds to a freshly enumerated HID interface
            self._cond.notify_all()

    # --- enumeration and descriptors ---------------------------------------------------------------

    def enumerate_devices(self) -> Any:
        with self._cond:
            return [("fake-panel", self._generation)] if self.present else []

    def get_parent(self, dev: Any) -> None:
        return None

    def get_device_descriptor(self, dev: Any) -> SimpleNamespace:
        return _descriptor(
            bLength=18,
            bDescriptorType=1,
            bcdUSB=0x0200,
            bDeviceClass=0,
            bDeviceSubClass=0,
            bDeviceProtocol=0,
            bMaxPacketSize0=8,
            idVendor=VID,
            idProduct=PID,
            bcdDevice=self.bcd_device,
            iManufacturer=1,
            iProduct=2,
            iSerialNumber=3,
            bNumConfigurations=1,
            bus=1,
            address=4 + dev[1],
            port_number=2,
            port_numbers=(1, 2),
            speed=2,  # LIBUSB_SPEED_FULL
        )

    def get_configuration_descriptor(self, dev: Any, config: int) -> SimpleNamespace:
        if config != 0:
            raise IndexError(f"Invalid configuration index {config}")
        return _descriptor(
            bLength=9,
            bDescriptorType=2,
            wTotalLength=34,
            bNumInterfaces=1,
            bConfigurationValue=1,
            iConfiguration=0,
            bmAttributes=0xA0,
            bMaxPower=50,
            extra_descriptors=[],
        )

    def get_interface_descriptor(self, dev: Any, intf: int, alt: int, config: int) -> SimpleNamespace:
        if config != 0 or intf != 0 or alt != 0:
            raise IndexError(f"Invalid interface {intf} alt {alt}")
        # HID class descriptor: HID 1.11, country 0, one report descriptor of 27 bytes.
        hid = [9, 0x21, 0x11, 0x01, 0x00, 0x01, 0x22, 27, 0]
        return _descriptor(
            bLength=9,
            bDescriptorType=4,
            bInterfaceNumber=0,
            bAlternateSetting=0,
            bNumEndpoints=1,
            bInterfaceClass=3,
            bInterfaceSubClass=0,
            bInterfaceProtocol=0,
            iInterface=0,
            extra_descriptors=hid,
        )

    def get_endpoint_descriptor(self, dev: Any, ep: int, intf: int, alt: int, config: int) -> SimpleNamespace:
        self.get_interface_descriptor(dev, intf, alt, config)
        if ep != 0:
            raise IndexError(f"Invalid endpoint index {ep}")
        return _descriptor(
            bLength=7,
            bDescriptorType=5,
            bEndpointAddress=0x81,
            bmAttributes=0x03,
            wMaxPacketSize=REPORT_SIZE,
            bInterval=10,
            bRefresh=0,
            bSynchAddress=0,
            extra_descriptors=[],
        )

    # --- handles -----------------------------------------------------------------------------------

    def _check(self, handle: _Handle) -> None:
        if not self.present or handle.generation != self._generation or handle.closed:
            raise usb.core.USBError(ENODEV_MESSAGE, -4, errno.ENODEV)

    def open_device(self, dev: Any) -> _Handle:
        with self._cond:
            if not self.present or dev[1] != self._generation:
                raise usb.core.USBError(ENODEV_MESSAGE, -4, errno.ENODEV)
            self.calls.append("open")
            self.open_handles += 1
            return _Handle(self._generation)

    def close_device(self, dev_handle: _Handle) -> None:
        with self._cond:
            self.calls.append("close")
            if not dev_handle.closed:
                dev_handle.closed = True
                self.open_handles -= 1

    def get_configuration(self, dev_handle: _Handle) -> int:
        with self._cond:
            self._check(dev_handle)
            return 1  # the kernel configured the device when it enumerated

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        with self._cond:
            self._check(dev_handle)

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        with self._cond:
            self._check(dev_handle)
            return self.kernel_driver_active

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._check(dev_handle)
            self.calls.append("detach")
            self.kernel_driver_active = False

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._check(dev_handle)
            self.calls.append("attach")
            self.kernel_driver_active = True

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._check(dev_handle)
            if self.kernel_driver_active:
                raise usb.core.USBError("Resource busy", -6, errno.EBUSY)
            self.calls.append("claim")
            self.claimed.add(intf)

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._check(dev_handle)
            self.calls.append("release")
            self.claimed.discard(intf)

    # --- transfers ---------------------------------------------------------------------------------

    def ctrl_transfer(
        self,
        dev_handle: _Handle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: array.array[int],
        timeout: int,
    ) -> int:
        with self._cond:
            self._check(dev_handle)
            if bmRequestType == 0x80 and bRequest == 0x06 and wValue >> 8 == 3:  # GET_DESCRIPTOR(STRING)
                index = wValue & 0xFF
                if index == 0:
                    body = bytes([0x09, 0x04])  # LANGID en-US
                elif index in self._strings and wIndex == 0x0409:
                    body = self._strings[index].encode("utf-16-le")
                else:
                    raise usb.core.USBError("Pipe error", -9, errno.EPIPE)  # the device STALLs
                descriptor = bytes([len(body) + 2, 3]) + body
                n = min(len(descriptor), len(data))
                data[:n] = array.array("B", descriptor[:n])
                return n
            raise usb.core.USBError("Pipe error", -9, errno.EPIPE)

    def intr_read(self, dev_handle: _Handle, ep: int, intf: int, buff: array.array[int], timeout: int) -> int:
        deadline = time.monotonic() + timeout / 1000
        with self._cond:
            while True:
                self._check(dev_handle)
                if intf not in self.claimed:
                    raise usb.core.USBError("Resource busy", -6, errno.EBUSY)
                if self._reports:
                    report = self._reports.popleft()
                    if len(report) > len(buff):
                        raise usb.core.USBError("Overflow", -8, errno.EOVERFLOW)
                    buff[: len(report)] = array.array("B", report)
                    return len(report)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
                self.reading.set()
                self._cond.wait(remaining)


class Recorder:
    """An EventSink tests can await; `next` is bounded by TIMEOUT, which only bounds a failure."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[DeviceEvent] = asyncio.Queue()
        self.seen: list[DeviceEvent] = []

    def __call__(self, event: DeviceEvent) -> None:
        self.queue.put_nowait(event)

    async def next(self, kind: type[E]) -> E:
        """The next event of `kind`, skipping (but keeping in .seen) any others."""

        async def find() -> E:
            while True:
                event = await self.queue.get()
                self.seen.append(event)
                if isinstance(event, kind):
                    return event

        return await asyncio.wait_for(find(), TIMEOUT)

    async def presses(self, count: int) -> list[str]:
        """The next `count` events, which must all be ButtonPressed: anything else in between fails."""
        names = []
        for _ in range(count):
            event = await asyncio.wait_for(self.queue.get(), TIMEOUT)
            self.seen.append(event)
            assert isinstance(event, ButtonPressed), f"expected a press, got {event!r}"
            names.append(event.button)
        return names


SETTINGS: dict[str, Any] = {
    "driver": "usb-hid-dealer-panel",
    "vendor_id": VID,
    "product_id": PID,
    "buttons": {0: "no_more_bets", 1: "fold"},
}


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
