"""USB HID dealer button panel, read through pyusb (libusb) in a worker thread.

pyusb is blocking, so every call into it runs in a thread of the panel's own (`usb-panel:<device id>`), one
at a time: finding the panel and claiming its HID interface, reading interrupt IN reports (press edges become
ButtonPressed events, a card keyed face up a FaceUpCard, handed to the event loop), letting it go. The connection
is DeviceBase's like every driver's: an unplugged panel goes offline and is looked for again with the same backoff
as the serial drivers (0.1 s doubling to 5 s). See docs/usb-panel.md for the report format, udev permissions and
an example configuration.
"""

from __future__ import annotations

import contextlib
import errno
import threading
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import structlog
import usb.core
import usb.util
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from drivers.base import DeviceBase
from drivers.interfaces import BUTTONS, ButtonPressed, EventSink, FaceUpCard
from drivers.tasks import BlockingCalls

log = structlog.get_logger(__name__)

T = TypeVar("T")
# A synchronous libusb read cannot be interrupted from another thread, so stop() waits out the current read
# (read_timeout_ms <= 0.5 s keeps stop() under a second); the join limit only guards against a wedged libusb.
STOP_JOIN_TIMEOUT = 2.0

ENDPOINT_TYPE_INTERRUPT = 3
HID_CLASS = 3
# The face-up byte's values 1..52: suit by suit (clubs, diamonds, hearts, spades), 2 to ace in each; 0 is no card.
CARDS = tuple(rank + suit for suit in "cdhs" for rank in "23456789TJQKA")


class UsbHidDealerPanelSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    driver: Literal["usb-hid-dealer-panel"] = "usb-hid-dealer-panel"
    vendor_id: int = Field(ge=0, le=0xFFFF, description="USB idVendor, e.g. 0x16c0 (TOML accepts hex literals)")
    product_id: int = Field(ge=0, le=0xFFFF, description="USB idProduct")
    serial_number: str | None = Field(
        default=None, min_length=1, description="Only this panel's serial; needed when two panels share vid:pid"
    )
    interface: int = Field(default=0, ge=0, le=255, description="bInterfaceNumber of the HID interface")
    endpoint: int = Field(
        default=0x81, ge=0x81, le=0x8F, description="bEndpointAddress of the interrupt IN endpoint (0x81..0x8f)"
    )
    report_size: int = Field(default=8, ge=1, le=64, description="Bytes of each input report the panel sends")
    read_timeout_ms: int = Field(
        default=100, ge=10, le=500, description="Longest blocking read; stop() waits for at most one read"
    )
    buttons: dict[Annotated[int, Field(ge=0)], str] = Field(
        min_length=1,
        description="Bit number in the input report -> button name; bit n is bit n % 8 (LSB = 0) of byte n // 8",
    )
    face_up_byte: int | None = Field(
        default=None,
        ge=0,
        description="Byte of the input report holding the card the dealer keys as found face up in the deck "
        "(.13(a)): 0 none, 1..52 a card (2c..Ac, 2d..Ad, 2h..Ah, 2s..As); none: the panel keys no card",
    )

    @field_validator("buttons")
    @classmethod
    def _known_buttons(cls, value: dict[int, str]) -> dict[int, str]:
        for bit, name in value.items():
            if name not in BUTTONS:
                raise ValueError(f"bit {bit}: unknown button {name!r}; allowed buttons: {', '.join(BUTTONS)}")
        return value

    @model_validator(mode="after")
    def _bits_inside_report(self) -> UsbHidDealerPanelSettings:
        bits = self.report_size * 8
        outside = sorted(bit for bit in self.buttons if bit >= bits)
        if outside:
            raise ValueError(
                f"buttons: bit(s) {outside} lie outside a {self.report_size}-byte report (bits 0..{bits - 1}); "
                "raise report_size or fix the bit numbers"
            )
        return self

    @model_validator(mode="after")
    def _card_byte_inside_report(self) -> UsbHidDealerPanelSettings:
        card, size = self.face_up_byte, self.report_size
        if card is None:
            return self
        if card >= size:
            raise ValueError(
                f"face_up_byte = {card} lies outside a {size}-byte report (bytes 0..{size - 1}); "
                "raise report_size or fix the byte number"
            )
        shared = sorted(bit for bit in self.buttons if bit // 8 == card)
        if shared:
            raise ValueError(
                f"face_up_byte = {card} holds button bit(s) {shared}: the card's byte carries no buttons; "
                "move the buttons or the card to another byte"
            )
        return self


class _ConfigMismatch(ValueError):
    """The panel found does not have the interface/endpoint the settings name."""


class _Down(Exception):
    """A blocking call failed: the session ends, for `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UsbHidDealerPanel(DeviceBase):
    """DealerPanel over USB HID. `backend` is a pyusb backend for tests; None means pyusb's default (libusb)."""

    Settings: ClassVar[type[UsbHidDealerPanelSettings]] = UsbHidDealerPanelSettings

    def __init__(self, device_id: str, settings: UsbHidDealerPanelSettings, *, backend: Any = None) -> None:
        super().__init__(device_id)
        self.settings = settings
        self._backend = backend
        self._calls = BlockingCalls(f"usb-panel:{device_id}")
        self._halt = threading.Event()  # set by stop(): the blocking read in progress ends at its next timeout
        self._reported_faults: set[tuple[str, str]] = set()
        # Touched only by the blocking calls, which run one at a time.
        self._device: Any = None  # the claimed panel
        self._read_size = settings.report_size
        self._detached_kernel_driver = False
        self._mask = 0
        for bit in settings.buttons:
            self._mask |= 1 << bit

    async def start(self, sink: EventSink) -> None:
        self._halt.clear()
        await super().start(sink)

    async def stop(self) -> None:
        self._halt.set()  # first, so the read in progress ends on its own whatever happens to this stop()
        await super().stop()

    # --- DeviceBase session: each step a blocking call -----------------------------------------------

    async def _connect(self) -> str | None:
        try:
            identity = await self._blocking(self._open_and_identify)
        except _Down as down:
            return down.reason
        if identity is None:
            return self._not_found_reason()
        self._reported_faults.clear()
        self._set_online(identity)
        return None

    async def _serve(self) -> str:
        try:
            return await self._blocking(self._read_reports)
        except _Down as down:
            return down.reason

    async def _disconnect(self) -> None:
        # A call cancelled with the session (by stop()) may still run: it owns the panel until it returns.
        if not await self._calls.join(STOP_JOIN_TIMEOUT):
            return  # a wedged libusb: leave the panel to it rather than touch it from a second thread
        if self._device is not None:
            with contextlib.suppress(_Down):
                await self._blocking(self._release)
            await self._calls.join(STOP_JOIN_TIMEOUT)

    async def _blocking(self, fn: Callable[[], T]) -> T:
        """fn() in the panel's thread; what pyusb raises becomes _Down(why), reported once as a fault if it
        will not go away by itself (no permission, interface busy, no libusb, a bug)."""
        try:
            return await self._calls.call(fn)
        except usb.core.USBError as exc:
            raise _Down(self._usb_error_reason(exc)) from None
        except usb.core.NoBackendError as exc:
            reason = f"no USB backend: {exc}"
            self._fault_once("driver_error", f"{reason}; install libusb-1.0 (apt install libusb-1.0-0)")
            raise _Down(reason) from None
        except Exception as exc:
            log.exception("usb panel attempt failed", device=self.device_id)
            self._fault_once("driver_error", str(exc) or repr(exc))
            raise _Down(f"driver error: {exc}") from None

    def _fault_once(self, code: str, detail: str) -> None:
        # A fault that repeats on every retry (wrong endpoint, no permission) is reported once per
        # connection, not every 5 s forever; a successful connection re-arms it.
        if (code, detail) in self._reported_faults:
            return
        self._reported_faults.add((code, detail))
        self.fault(code, detail)

    def _not_found_reason(self) -> str:
        s = self.settings
        serial = f" serial {s.serial_number!r}" if s.serial_number else ""
        return f"no USB device {s.vendor_id:04x}:{s.product_id:04x}{serial} found"

    def _usb_error_reason(self, exc: usb.core.USBError) -> str:
        if exc.errno == errno.EACCES:
            detail = (
                f"permission denied opening {self.settings.vendor_id:04x}:{self.settings.product_id:04x}; "
                "install the udev rule in docs/usb-panel.md"
            )
            self._fault_once("access_denied", detail)
            return detail
        if exc.errno == errno.EBUSY:
            detail = f"interface {self.settings.interface} is claimed by another program: {exc}"
            self._fault_once("busy", detail)
            return detail
        return f"USB error: {exc}"

    # --- blocking calls (the panel's thread) ------------------------------------------------------------

    def _open_and_identify(self) -> dict[str, str] | None:
        """Find and claim the panel and read its identity; None if it is not connected."""
        device = self._open()
        if device is None:
            return None
        self._device = device  # claimed: from here on _release lets it go, whatever happens next
        if self._halt.is_set():
            self._release()  # stop() came while we looked: hand the panel back at once
            return None
        return self._identify(device)

    def _open(self) -> Any:
        """Find the panel and claim its interface; None if it is not connected."""
        s = self.settings

        def matches_serial(candidate: Any) -> bool:
            if s.serial_number is None:
                return True
            try:
                return bool(_string(candidate, candidate.iSerialNumber) == s.serial_number)
            finally:
                # Reading the serial opened the candidate; a panel that is not ours must not stay open.
                usb.util.dispose_resources(candidate)

        device = usb.core.find(
            backend=self._backend, idVendor=s.vendor_id, idProduct=s.product_id, custom_match=matches_serial
        )
        if device is None:
            return None
        try:
            self._claim(device)
        except BaseException:
            self._release_device(device)
            raise
        return device

    def _claim(self, device: Any) -> None:
        s = self.settings
        self._detached_kernel_driver = False
        with contextlib.suppress(NotImplementedError):  # not every platform/backend can tell or detach
            if device.is_kernel_driver_active(s.interface):
                # Linux binds usbhid to every HID interface; libusb cannot claim it until it lets go.
                device.detach_kernel_driver(s.interface)
                self._detached_kernel_driver = True
        try:
            config = device.get_active_configuration()
        except usb.core.USBError:
            # Unconfigured (no OS driver configured it): the panel has a single configuration.
            device.set_configuration()
            config = device.get_active_configuration()
        interface = usb.util.find_descriptor(config, bInterfaceNumber=s.interface)
        if interface is None:
            found = sorted({i.bInterfaceNumber for i in config})
            raise _ConfigMismatch(f"panel has no interface {s.interface} (it has {found}); fix `interface`")
        endpoint = usb.util.find_descriptor(interface, bEndpointAddress=s.endpoint)
        if endpoint is None or (endpoint.bmAttributes & 0x3) != ENDPOINT_TYPE_INTERRUPT:
            found = [
                f"0x{e.bEndpointAddress:02x}"
                for e in interface
                if (e.bmAttributes & 0x3) == ENDPOINT_TYPE_INTERRUPT and e.bEndpointAddress & 0x80
            ]
            raise _ConfigMismatch(
                f"interface {s.interface} has no interrupt IN endpoint 0x{s.endpoint:02x} "
                f"(interrupt IN endpoints: {found or 'none'}); fix `endpoint`"
            )
        if interface.bInterfaceClass != HID_CLASS:
            log.warning(
                "interface is not HID class",
                device=self.device_id,
                interface=s.interface,
                interface_class=interface.bInterfaceClass,
            )
        usb.util.claim_interface(device, s.interface)
        # Read at least a full packet: a buffer shorter than what the panel sends is a libusb overflow error.
        self._read_size = max(s.report_size, int(endpoint.wMaxPacketSize))

    def _identify(self, device: Any) -> dict[str, str]:
        bcd = int(device.bcdDevice)
        product = _string(device, device.iProduct)
        return {
            "manufacturer": _string(device, device.iManufacturer),
            "product": product,
            # `model` is the key the reference drivers and `tablectl devices probe` use.
            "model": product,
            "serial": _string(device, device.iSerialNumber),
            "firmware": f"{bcd >> 8:x}.{bcd & 0xFF:02x}",
            "usb_id": f"{int(device.idVendor):04x}:{int(device.idProduct):04x}",
        }

    def _read_reports(self) -> str:
        """Read until stopped or the panel fails; returns why reading ended."""
        try:
            return self._read_until_done(self._device)
        finally:
            if self._halt.is_set():
                self._release()  # stop() is under way: hand the panel back now, even if that stop() is cancelled

    def _read_until_done(self, device: Any) -> str:
        s = self.settings
        previous = 0  # all released: a button held while the panel (re)connects counts as a press
        keyed = 0  # no card keyed: a card shown while the panel (re)connects counts as keyed
        while not self._halt.is_set():
            try:
                data = device.read(s.endpoint, self._read_size, s.read_timeout_ms)
            except usb.core.USBTimeoutError:
                continue  # no report within the timeout: nothing changed on the panel
            except usb.core.USBError as exc:
                if exc.errno == errno.ETIMEDOUT:
                    continue  # some backends raise a plain USBError for timeouts
                return f"read failed: {exc}"
            report = bytes(data)
            if len(report) < s.report_size:
                # Missing bytes are unknown, not zero; guessing would invent release/press edges.
                detail = f"short report: {len(report)} bytes, expected {s.report_size}"
                self._from_thread(self._fault_once, "bad_report", detail)
                continue
            state = int.from_bytes(report[: s.report_size], "little") & self._mask
            pressed = state & ~previous
            previous = state
            for bit in sorted(s.buttons):
                if pressed >> bit & 1 and not self.emit_threadsafe(ButtonPressed(self.device_id, s.buttons[bit])):
                    log.warning("event loop closed; usb panel stops reading", device=self.device_id)
                    return "event loop closed"
            if s.face_up_byte is not None and report[s.face_up_byte] != keyed:
                keyed = report[s.face_up_byte]
                if keyed and not self._face_up(keyed):
                    return "event loop closed"
        return "stopped"

    def _face_up(self, value: int) -> bool:
        """A card keyed face up (its byte went from 0 or another card to this one): FaceUpCard; a value that is
        no card is a bad report. False once the event loop is gone."""
        if value > len(CARDS):
            detail = f"face_up_byte {self.settings.face_up_byte}: {value} is no card (0 none, 1..52 a card)"
            self._from_thread(self._fault_once, "bad_report", detail)
            return True
        if self.emit_threadsafe(FaceUpCard(self.device_id, CARDS[value - 1])):
            return True
        log.warning("event loop closed; usb panel stops reading", device=self.device_id)
        return False

    def _release(self) -> None:
        device, self._device = self._device, None
        if device is not None:
            self._release_device(device)

    def _release_device(self, device: Any) -> None:
        with contextlib.suppress(usb.core.USBError, NotImplementedError, ValueError):
            usb.util.release_interface(device, self.settings.interface)
        if self._halt.is_set() and self._detached_kernel_driver:
            # Hand the panel back to the OS on a deliberate stop; after an unplug there is nothing to give back.
            with contextlib.suppress(usb.core.USBError, NotImplementedError, ValueError):
                device.attach_kernel_driver(self.settings.interface)
        with contextlib.suppress(usb.core.USBError):
            usb.util.dispose_resources(device)


def _string(device: Any, index: int) -> str:
    """A string descriptor, or "" when the panel has none or will not give it."""
    if not index:
        return ""
    try:
        return str(usb.util.get_string(device, index) or "")
    except usb.core.USBError as exc:
        if exc.errno == errno.ENODEV:
            raise
        return ""
    except ValueError:  # no language ids: the panel supports no strings
        return ""
