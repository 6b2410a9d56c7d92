"""What every reference-protocol driver shares: connection supervision, identify, event translation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import structlog
from pydantic import BaseModel, ConfigDict, Field

from drivers.interfaces import DeviceEvent, DeviceFault, DeviceOffline, DeviceOnline, EventSink
from drivers.link import Link, LinkError
from drivers.protocol import HOST_ADDRESS, ProtocolError, decode_message, is_card
from drivers.reconnect import Reconnecting
from drivers.serial_port import open_serial
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

IDENTIFY_TIMEOUT = 1.0
START_WAIT = 2.0
NOISE_REPORT_INTERVAL = 1.0
IDENTITY_KEYS = ("model", "serial", "firmware", "firmware_hash")


class ReferenceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    port: str = Field(min_length=1, description="Serial port path, ideally a stable udev name")
    address: int = Field(default=1, ge=1, le=254, description="Device address on the line")
    baudrate: int = Field(default=115200, gt=0)
    ack_timeout: float = Field(default=0.1, gt=0, description="Seconds to wait for an ACK before resending")
    retries: int = Field(default=3, ge=0, le=10)
    heartbeat_interval: float = Field(
        default=2.0, ge=0, description="Seconds between pings while idle; 0 disables the heartbeat"
    )


class BadMessage(ValueError):
    """A device message that does not match the v1 vocabulary."""


Translator = Callable[[Mapping[str, Any]], DeviceEvent | None]


class ReferenceDevice(Reconnecting):
    """Base of the reference drivers. Subclasses fill `translators` (evt name -> event builder, or None when
    the driver holds the event back, as the wager station's debounce does)."""

    Settings: ClassVar[type[ReferenceSettings]] = ReferenceSettings

    def __init__(self, device_id: str, settings: ReferenceSettings) -> None:
        self.device_id = device_id
        self.settings = settings
        self.identity: dict[str, str] = {}
        self._sink: EventSink | None = None
        self._link: Link | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()
        self._identity_waiter: asyncio.Future[dict[str, str]] | None = None
        self._online: bool | None = None  # None until the first connection attempt settles
        self._last_noise_report = float("-inf")
        self._stopping = False

    def translators(self) -> Mapping[str, Translator]:
        return {}

    # --- Device protocol ---------------------------------------------------------------------------

    async def start(self, sink: EventSink) -> None:
        """Begin supervising the port; returns once the first attempt to reach the device settled."""
        self._sink = sink
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(), name=f"driver:{self.device_id}")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT):
                await self._first_attempt.wait()

    async def stop(self) -> None:
        self._stopping = True
        await cancel_and_wait(self._supervisor)
        self._supervisor = None
        await self._drop_link()

    # --- commands ----------------------------------------------------------------------------------

    async def command(self, message: Mapping[str, Any]) -> bool:
        """Send a command; failures become DeviceFault events, never exceptions. True if ACKed."""
        link = self._link
        if link is None or not self._online:
            detail = f"cannot send {message.get('cmd')}: device offline"
            self.emit(DeviceFault(self.device_id, "offline", detail))
            return False
        try:
            await link.send(message)
        except ValueError as exc:  # the message itself cannot be encoded
            self.emit(DeviceFault(self.device_id, "bad_request", f"{message.get('cmd')}: {exc}"))
            return False
        except LinkError as exc:
            self.emit(DeviceFault(self.device_id, "timeout", f"{message.get('cmd')}: {exc}"))
            return False
        return True

    async def ping(self) -> bool:
        return await self.command({"cmd": "ping"})

    # --- connection supervision --------------------------------------------------------------------

    def _running(self) -> bool:
        return not self._stopping

    async def _watch_link(self) -> str:
        """Wait until the link dies; with a heartbeat, a device that stops answering pings kills it."""
        link = self._link
        assert link is not None
        interval = self.settings.heartbeat_interval
        while not link.closed.is_set():
            if not interval:
                await link.closed.wait()
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await link.closed.wait()
                break
            try:
                await link.send({"cmd": "ping"})
            except LinkError as exc:
                if not link.closed.is_set():
                    await link.close(f"heartbeat: {exc}", close_transport=False)
        return link.close_reason

    async def _connect_once(self) -> str | None:
        """Open, link and identify. None on success, else why it failed."""
        try:
            reader, writer = await open_serial(self.settings.port, self.settings.baudrate)
        except (OSError, ValueError) as exc:
            return f"cannot open {self.settings.port}: {exc}"
        self._link = Link(
            reader,
            writer,
            local_address=HOST_ADDRESS,
            peer_address=self.settings.address,
            on_data=self._on_data,
            on_noise=self._on_noise,
            ack_timeout=self.settings.ack_timeout,
            retries=self.settings.retries,
            name=f"driver:{self.device_id}",
        )
        self._link.start()
        loop = asyncio.get_running_loop()
        self._identity_waiter = loop.create_future()
        try:
            await self._link.send({"cmd": "identify"})
            async with asyncio.timeout(IDENTIFY_TIMEOUT):
                self.identity = await self._identity_waiter
        except (LinkError, TimeoutError) as exc:
            return f"identify failed: {exc or 'no identity reply'}"
        finally:
            self._identity_waiter = None
        self._online = True
        log.info("device online", device=self.device_id, port=self.settings.port, **self.identity)
        self.emit(DeviceOnline(self.device_id, dict(self.identity)))
        self._first_attempt.set()
        return None

    async def _drop_link(self) -> None:
        link, self._link = self._link, None
        if link is None:
            return
        await link.close()

    def _set_offline(self, reason: str) -> None:
        if self._online is False:
            return
        self._online = False
        log.warning("device offline", device=self.device_id, reason=reason)
        self.emit(DeviceOffline(self.device_id, reason))

    # --- incoming ----------------------------------------------------------------------------------

    def emit(self, event: DeviceEvent) -> None:
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception:
            log.exception("event sink failed", device=self.device_id, event=type(event).__name__)

    def _on_noise(self, discarded_bytes: int, bad_frames: int) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._last_noise_report < NOISE_REPORT_INTERVAL:
            return  # one report per interval is enough to flag a noisy line
        self._last_noise_report = now
        self.emit(
            DeviceFault(
                self.device_id, "line_noise", f"{discarded_bytes} bytes discarded, {bad_frames} bad frames so far"
            )
        )

    def _on_data(self, payload: bytes) -> None:
        try:
            message = decode_message(payload)
            event = self._translate(message)
        except (ProtocolError, BadMessage) as exc:
            self.emit(DeviceFault(self.device_id, "bad_message", f"{exc}: {payload[:200]!r}"))
            return
        if event is not None:
            self.emit(event)

    def _translate(self, message: Mapping[str, Any]) -> DeviceEvent | None:
        evt = message.get("evt")
        if evt == "identity":
            identity = {key: str(message.get(key, "")) for key in IDENTITY_KEYS}
            if self._identity_waiter is not None and not self._identity_waiter.done():
                self._identity_waiter.set_result(identity)
                return None
            self.identity = identity
            return DeviceOnline(self.device_id, dict(identity))
        if evt == "pong":
            return None
        if evt == "fault":
            return DeviceFault(self.device_id, require_str(message, "code"), str(message.get("detail", "")))
        translator = self.translators().get(str(evt))
        if translator is None:
            raise BadMessage(f"unexpected message for {type(self).__name__}: evt={evt!r}")
        return translator(message)


# --- field validation helpers ----------------------------------------------------------------------


def require_str(message: Mapping[str, Any], key: str, allowed: tuple[str, ...] | None = None) -> str:
    value = message.get(key)
    if not isinstance(value, str) or not value:
        raise BadMessage(f"{message.get('evt')}: {key!r} must be a non-empty string, got {value!r}")
    if allowed is not None and value not in allowed:
        raise BadMessage(f"{message.get('evt')}: {key}={value!r} is not one of {', '.join(allowed)}")
    return value


def require_count(message: Mapping[str, Any], key: str) -> int:
    value = message.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadMessage(f"{message.get('evt')}: {key!r} must be a non-negative integer, got {value!r}")
    return value


def require_cards(message: Mapping[str, Any], key: str = "cards") -> tuple[str, ...]:
    value = message.get(key)
    if not isinstance(value, list) or not all(is_card(card) for card in value):
        raise BadMessage(f'{message.get("evt")}: {key!r} must be a list of cards like "As", got {value!r}')
    return tuple(value)
