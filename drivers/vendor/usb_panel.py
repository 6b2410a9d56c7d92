"""USB HID dealer button panel, read through pyusb (libusb) in a worker thread.

pyusb is blocking, so one thread per panel owns the USB device: it finds the panel, claims its HID
interface, reads interrupt IN reports and turns press edges into ButtonPressed events, which it hands to
the asyncio loop with `loop.call_soon_threadsafe`. The thread also supervises the connection: an unplugged
panel goes offline and is looked for again with the same backoff as the serial drivers (0.1 s doubling to
5 s). See docs/usb-panel.md for the report format, udev permissions and an example configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import threading
from typing import Annotated, Any, ClassVar, Literal

import structlog
import usb.core
import usb.util
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from drivers.interfaces import BUTTONS, ButtonPressed, DeviceEvent, DeviceFault, DeviceOffline, DeviceOnline, EventSink

log = structlog.get_logger(__name__)

BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
START_WAIT = 2.0
# A synchronous libusb read cannot be interrupted from another thread, so stop() waits out the current read
# (read_timeout_ms <= 0.5 s keeps stop() under a second); the join limit only guards against a wedged libusb.
STOP_JOIN_TIMEOUT = 2.0

ENDPOINT_TYPE_INTERRUPT = 3
HID_CLASS = 3


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


class _ConfigMismatch(ValueError):
    """The panel found does not have the interface/endpoint the settings name."""


class UsbHidDealerPanel:
    """DealerPanel over USB HID. `backend` is a pyusb backend for tests; None means pyusb's default (libusb)."""

    Settings: ClassVar[type[UsbHidDealerPanelSettings]] = UsbHidDealerPanelSettings

    def __init__(self, device_id: str, settings: UsbHidDealerPanelSettings, *, backend: Any = None) -> None:
        self.device_id = device_id
        self.settings = settings
        self.identity: dict[str, str] = {}
        self._backend = backend
        self._sink: EventSink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._first_attempt: asyncio.Event | None = None
        # Everything below is touched by the worker thread only.
        self._online: bool | None = None  # None until the first attempt settles
        self._reported_faults: set[tuple[str, str]] = set()
        self._read_size = settings.report_size
        self._detached_kernel_driver = False
        self._mask = 0
        for bit in settings.buttons:
            self._mask |= 1 << bit

    # --- Device protocol ---------------------------------------------------------------------------

    async def start(self, sink: EventSink) -> None:
        """Start the reader thread; returns once the first attempt to reach the panel settled."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        self._first_attempt = asyncio.Event()
        self._stop.clear()
        self._online = None
        self._thread = threading.Thread(target=self._run, name=f"usb-panel:{self.device_id}", daemon=True)
        self._thread.start()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT):
                await self._first_attempt.wait()

    async def stop(self) -> None:
        """Stop reading and release the panel. Cancel-safe; harmless twice or before start()."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            # Joined in an executor so the loop keeps running; if stop() is cancelled the thread still
            # ends on its own because the stop flag is already set.
            await asyncio.to_thread(thread.join, STOP_JOIN_TIMEOUT)
            if thread.is_alive():
                log.error("usb panel thread did not stop", device=self.device_id, timeout=STOP_JOIN_TIMEOUT)
        self._thread = None
        # Callbacks the thread scheduled but the loop has not run yet are dropped: nothing after stop().
        self._sink = None

    # --- event delivery (thread -> loop) -----------------------------------------------------------

    def _emit(self, event: DeviceEvent) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._deliver, event)
        except RuntimeError:
            # The loop is closed: nobody can hear us any more, so the thread has no reason to go on.
            log.warning("event loop closed; usb panel thread stopping", device=self.device_id)
            self._stop.set()

    def _deliver(self, event: DeviceEvent) -> None:
        sink = self._sink
        if sink is None:
            return
        try:
            sink(event)
        except Exception:
            log.exception("event sink failed", device=self.device_id, event=type(event).__name__)

    def _settle_first_attempt(self) -> None:
        loop, settled = self._loop, self._first_attempt
        if loop is None or settled is None:
            return
        # Scheduled after the Online/Offline event, so start() returns with that event already delivered.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settled.set)

    def _set_online(self, identity: dict[str, str]) -> None:
        self._online = True
        self._reported_faults.clear()
        self.identity = identity
        log.info("device online", device=self.device_id, **identity)
        self._emit(DeviceOnline(self.device_id, dict(identity)))

    def _set_offline(self, reason: str) -> None:
        if self._online is False:
            return
        self._online = False
        log.warning("device offline", device=self.device_id, reason=reason)
        self._emit(DeviceOffline(self.device_id, reason))

    def _fault_once(self, code: str, detail: str) -> None:
        # A fault that repeats on every retry (wrong endpoint, no permission) is reported once per
        # connection, not every 5 s forever; a successful connection re-arms it.
        if (code, detail) in self._reported_faults:
            return
        self._reported_faults.add((code, detail))
        self._emit(DeviceFault(self.device_id, code, detail))

    # --- the worker thread -------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._supervise()
        except Exception as exc:
            # Should be unreachable (_supervise catches per attempt); if not, the controller must hear of it.
            log.exception("usb panel thread crashed", device=self.device_id)
            self._emit(DeviceFault(self.device_id, "driver_error", f"reader thread crashed: {exc!r}"))
            self._set_offline(f"driver error: {exc!r}")
        finally:
            self._settle_first_attempt()

    def _supervise(self) -> None:
        delay = BACKOFF_FIRST
        while not self._stop.is_set():
            device: Any = None
            try:
                device = self._open()
                if device is None:
                    reason = self._not_found_reason()
                else:
                    self._set_online(self._identify(device))
                    self._settle_first_attempt()
                    delay = BACKOFF_FIRST
                    reason = self._read_reports(device)
            except usb.core.USBError as exc:
                reason = self._usb_error_reason(exc)
            except usb.core.NoBackendError as exc:
                reason = f"no USB backend: {exc}"
                self._fault_once("driver_error", f"{reason}; install libusb-1.0 (apt install libusb-1.0-0)")
            except Exception as exc:
                log.exception("usb panel attempt failed", device=self.device_id)
                reason = f"driver error: {exc}"
                self._fault_once("driver_error", str(exc) or repr(exc))
            finally:
                if device is not None:
                    self._release(device)
            if self._stop.is_set():
                break
            self._set_offline(reason)
            self._settle_first_attempt()
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, BACKOFF_MAX)

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
            self._release(device)
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

    def _read_reports(self, device: Any) -> str:
        """Read until stopped or the panel fails; returns why reading ended."""
        s = self.settings
        previous = 0  # all released: a button held while the panel (re)connects counts as a press
        while not self._stop.is_set():
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
                self._fault_once("bad_report", f"short report: {len(report)} bytes, expected {s.report_size}")
                continue
            state = int.from_bytes(report[: s.report_size], "little") & self._mask
            pressed = state & ~previous
            previous = state
            for bit in sorted(s.buttons):
                if pressed >> bit & 1:
                    self._emit(ButtonPressed(self.device_id, s.buttons[bit]))
        return "stopped"

    def _release(self, device: Any) -> None:
        with contextlib.suppress(usb.core.USBError, NotImplementedError, ValueError):
            usb.util.release_interface(device, self.settings.interface)
        if self._stop.is_set() and self._detached_kernel_driver:
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
