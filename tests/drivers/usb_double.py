"""A pyusb backend double for the USB HID dealer panel driver, and an awaitable event sink: shared by
tests/drivers/test_usb_panel.py and test_usb_panel_face_up.py (a test module may not import another).

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
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import usb.backend
import usb.core

from drivers.interfaces import ButtonPressed
from tests.drivers.conftest import Recorder as DriverRecorder

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


class Recorder(DriverRecorder):
    """The device tests' recorder (tests/drivers/conftest.py), and the panel's presses in a row."""

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
