"""What every reference-protocol driver shares on DeviceBase: the link, identify, heartbeat, event translation."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import structlog
from pydantic import BaseModel, ConfigDict, Field

from drivers.base import DeviceBase
from drivers.interfaces import DeviceEvent, DeviceFault, DeviceFaultCleared, DeviceOnline
from drivers.reference.framing import HOST_ADDRESS, PROTOCOLS, VERSION_3, ProtocolError, decode_message, is_card
from drivers.reference.link import Link, LinkError
from drivers.serial_port import open_serial, unread_input

log = structlog.get_logger(__name__)

IDENTIFY_TIMEOUT = 1.0
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
    protocol: int = Field(
        default=4,
        ge=1,
        le=4,
        description="Highest reference-protocol version to speak, of those the device offers at identify: 4 (v3 and "
        "an identity that carries its ACK, a bus line's GROUP unlock), 3 (short frames, answers that carry the ACK), 2 "
        "(compact CBOR frames) or 1 (JSON frames)",
    )


class BadMessage(ValueError):
    """A device message that does not match the v1 vocabulary."""


Translator = Callable[[Mapping[str, Any]], DeviceEvent | None]


class ReferenceDevice(DeviceBase):
    """Base of the reference drivers. Subclasses fill `translators` (evt name -> event builder, or None when
    the driver holds the event back, as the wager station's debounce does)."""

    Settings: ClassVar[type[ReferenceSettings]] = ReferenceSettings

    def __init__(self, device_id: str, settings: ReferenceSettings) -> None:
        super().__init__(device_id)
        self.settings = settings
        self._link: Link | None = None
        self._identity_waiter: asyncio.Future[dict[str, str]] | None = None
        # The device kind's event table, built at its first event, not again for every frame (bench/footprint.py).
        self._translators: Mapping[str, Translator] | None = None
        # What the device offered at its last identify, and the version the host chose from it.
        self._offered: frozenset[int] = frozenset((1,))
        self.protocol_version = 1
        # Messages that came while identify was under way (a device still resending what a previous host session
        # never ACKed): the link ACKed them at once, the driver hands them on after the device is online, in order
        # (docs/protocol.md section 5, "Before identity").
        self._early: list[dict[str, Any]] = []

    def translators(self) -> Mapping[str, Translator]:
        """The device kind's events by name: read once per device, so it must not depend on the device's state."""
        return {}

    # --- commands ----------------------------------------------------------------------------------

    async def command(self, message: Mapping[str, Any]) -> bool:
        """Send a command; failures become DeviceFault events, never exceptions. True if ACKed."""
        link = self._link
        if link is None or not self._online:
            self.fault("offline", f"cannot send {message.get('cmd')}: device offline")
            return False
        try:
            await self._send(link, message)
        except ValueError as exc:  # the message itself cannot be encoded
            self.fault("bad_request", f"{message.get('cmd')}: {exc}")
            return False
        except LinkError as exc:
            self.fault("timeout", f"{message.get('cmd')}: {exc}")
            return False
        return True

    async def ping(self) -> bool:
        return await self.command({"cmd": "ping"})

    # --- the line: a port of its own (a station on a bus overrides these) ----------------------------

    async def _send(self, link: Link, message: Mapping[str, Any]) -> None:
        await link.send(message)

    async def _open_link(self) -> str | None:
        """Open the port and start the link on it: None, or why not."""
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
            # An ACK timer that expires reads what the port already holds first (LinkCore._answer_to).
            in_waiting=unread_input(writer),
        )
        self._link.start()
        return None

    async def _went_silent(self, link: Link, reason: str) -> None:
        """The device stopped answering pings: close the link (deaf: the port stays open until disconnect)."""
        if not link.closed.is_set():
            await link.close(reason, close_transport=False)

    async def _disconnect(self) -> None:
        link, self._link = self._link, None
        if link is None:
            return
        await link.close()

    # --- DeviceBase session ------------------------------------------------------------------------

    async def _connect(self) -> str | None:
        """Open, link and identify. None on success, else why it failed."""
        reason = await self._open_link()
        if reason is not None:
            return reason
        link = self._link
        if link is None:  # _open_link links on success: a session that reports none is retried, not trusted
            return "the line opened without a link"
        self._identity_waiter = asyncio.get_running_loop().create_future()
        self._offered = frozenset((1,))
        self._use_protocol(link, 1)  # identify is always v1: a device of either version reads it
        try:
            # A number of this connection's own in the identify: a device compares a frame with the last one it
            # delivered, across host sessions too (docs/protocol.md section 4), so a bare identify whose random first
            # SEQ repeats the last session's (1 start in 256, for a device told nothing else since) was ACKed as a
            # retransmission and never answered: a start 1 s late. From the OS, not `random`, which may be seeded.
            await self._send(link, self._identify_message())
            async with asyncio.timeout(IDENTIFY_TIMEOUT):
                identity = await self._identity_waiter
        except (LinkError, TimeoutError) as exc:
            # A TimeoutError says nothing of itself: name what did not come.
            return f"identify failed: {str(exc) or f'no identity reply within {IDENTIFY_TIMEOUT:g} s'}"
        finally:
            self._identity_waiter = None
        self._use_protocol(link, max(v for v in self._offered if v <= self.settings.protocol))
        self._set_online(identity, port=self.settings.port, address=self.settings.address)
        early, self._early = self._early, []
        for message in early:
            self._take(message)
        return None

    def _identify_message(self) -> dict[str, Any]:
        """`identify` in v1, naming the versions this host speaks (up to its `protocol` setting) when that is more than
        v1: a device that speaks one of them answers `identity` in the highest, its firmware_hash as 32 bytes (about
        100 bytes instead of 217). Seven stations answer one after another on a shared line's return pair, 133 ms of
        wire at every start in v1 (docs/protocol.md section 10, "Negotiation"). At `protocol = 1` the identify is
        what it always was."""
        message: dict[str, Any] = {"cmd": "identify", "session": secrets.randbits(31)}
        if self.settings.protocol > 1:
            message["protocols"] = list(range(1, self.settings.protocol + 1))
        return message

    def _use_protocol(self, link: Link, version: int) -> None:
        """Send to this device in `version` from now on (its answers may come in either); v4 sends v3 frames."""
        self.protocol_version = version
        link.version = min(version, VERSION_3)

    async def _serve(self) -> str:
        """Wait until the link dies; with a heartbeat, a device that stops answering pings kills it."""
        link = self._link
        if link is None:  # only served after _connect linked it
            return "no link to serve"
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
                await self._send(link, {"cmd": "ping"})
            except LinkError as exc:
                if link.closed.is_set():
                    break
                reason = f"heartbeat: {exc}"
                await self._went_silent(link, reason)
                return reason
        return link.close_reason

    # --- incoming ----------------------------------------------------------------------------------

    def _on_noise(self, discarded_bytes: int, bad_frames: int) -> None:
        self._report_noise(f"{discarded_bytes} bytes discarded, {bad_frames} bad frames so far")

    def _on_data(self, payload: bytes) -> None:
        try:
            message = decode_message(payload)
        except ProtocolError as exc:
            self.fault("bad_message", f"{exc}: {payload[:200]!r}")
            return
        if self._identity_waiter is not None and message.get("evt") != "identity":
            # Not acted on before we know the device: kept (the identify failing too) until it is online.
            self._early.append(message)
            return
        self._take(message)

    def _take(self, message: dict[str, Any]) -> None:
        try:
            event = self._translate(message)
        except BadMessage as exc:
            self.fault("bad_message", f"{exc}: {str(message)[:200]}")
            return
        if event is not None:
            self.emit(event)

    def _translate(self, message: Mapping[str, Any]) -> DeviceEvent | None:
        evt = message.get("evt")
        if evt == "identity":
            identity = {key: str(message.get(key, "")) for key in IDENTITY_KEYS}
            offered = message.get("protocols")
            # A device that says nothing, or something unreadable, speaks v1 (docs/protocol.md section 10).
            if isinstance(offered, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in offered):
                self._offered = frozenset(v for v in offered if v in PROTOCOLS) | {1}
            if self._identity_waiter is not None and not self._identity_waiter.done():
                self._identity_waiter.set_result(identity)
                return None
            self.identity = identity
            return DeviceOnline(self.device_id, dict(identity))
        if evt == "pong":
            return None
        if evt == "fault":
            return DeviceFault(self.device_id, require_str(message, "code"), str(message.get("detail", "")))
        if evt == "fault_cleared":
            return DeviceFaultCleared(self.device_id, require_str(message, "code"), str(message.get("detail", "")))
        table = self._translators
        if table is None:
            table = self._translators = self.translators()
        translator = table.get(str(evt))
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
