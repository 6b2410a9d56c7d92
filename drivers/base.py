"""DeviceBase: what every driver does the same way, written once (as python-can's BusABC is for its interfaces).

A driver says how to reach its device (`_connect`), how to serve it until it goes (`_serve`) and how to let it
go (`_disconnect`). The base does the rest: start() and stop(), handing events to the controller's sink,
keeping the device connected (a session after a backoff that starts at BACKOFF_FIRST and doubles to
BACKOFF_MAX, reset once a session came up), reporting the device offline once per outage, and turning a crash
of its own loop into a DeviceFault: a driver task never dies silently. docs/new-driver.md shows a whole driver.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import ClassVar, TypeVarTuple

import structlog
from pydantic import BaseModel

from drivers.interfaces import DeviceEvent, DeviceFault, DeviceOffline, DeviceOnline, EventSink
from drivers.tasks import cancel_and_wait

log = structlog.get_logger(__name__)

BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
START_WAIT = 2.0  # start() returns once the first session settled, or after this long
NOISE_REPORT_INTERVAL = 1.0  # one line_noise fault a second flags a noisy line well enough

Ts = TypeVarTuple("Ts")


class DeviceBase(ABC):
    """Base of every driver; implements interfaces.Device.

    Subclasses set `Settings` (the pydantic model the registry validates a device's settings with) and take
    `(device_id, settings)` in __init__. A driver whose line belongs to another (a station on a wager bus)
    overrides `_launch` and `_end` to share that line's lifetime instead of running a loop of its own.
    """

    Settings: ClassVar[type[BaseModel]]

    def __init__(self, device_id: str) -> None:
        self.device_id = device_id
        self.identity: dict[str, str] = {}
        self._sink: EventSink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()  # set once a session settled either way: start() waits for it
        self._online: bool | None = None  # None until the first session settles
        self._offline_reason = ""
        self._stopping = False
        self._last_noise_report = float("-inf")

    # --- what a driver implements ------------------------------------------------------------------

    @abstractmethod
    async def _connect(self) -> str | None:
        """Open the line and make sure the device is there (calling `_set_online`): None, or why not."""

    @abstractmethod
    async def _serve(self) -> str:
        """Serve the connected device until the line dies or the device falls silent; return why."""

    @abstractmethod
    async def _disconnect(self) -> None:
        """Let the line go (also called by stop(), after the session was cancelled). Harmless when closed."""

    # --- interfaces.Device -------------------------------------------------------------------------

    async def start(self, sink: EventSink) -> None:
        """Begin supervising the device; returns once the first attempt to reach it settled."""
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._launch()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(START_WAIT):
                await self._first_attempt.wait()

    async def stop(self) -> None:
        """Stop supervising and let the device go. Cancel-safe; harmless twice or before start()."""
        self._stopping = True
        await self._end()

    @property
    def online(self) -> bool | None:
        """True while the device is connected, False while it is away, None before the first session settled."""
        return self._online

    # --- lifetime ----------------------------------------------------------------------------------

    @property
    def supervised(self) -> bool:
        return self._supervisor is not None and not self._supervisor.done()

    def _launch(self) -> None:
        """Start the reconnect loop unless it runs already."""
        if self.supervised:
            return
        self._first_attempt.clear()
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(), name=f"driver:{self.device_id}")

    async def _end(self) -> None:
        await cancel_and_wait(self._supervisor)
        self._supervisor = None
        await self._disconnect()

    def _running(self) -> bool:
        return not self._stopping

    async def _supervise(self) -> None:
        """Until cancelled (or `_running()` is false): a session, the device reported down, a backoff."""
        delay = BACKOFF_FIRST
        try:
            while self._running():
                reason, opened = await self._session()
                if opened:
                    delay = BACKOFF_FIRST
                self._went_down(reason)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # should be unreachable; if not, the controller must hear of it
            self._crashed(exc)

    async def _session(self) -> tuple[str, bool]:
        """Connect, serve until the device goes, disconnect: why it ended, and whether it had connected."""
        reason = await self._connect()
        opened = reason is None
        if reason is None:
            reason = await self._serve()
        await self._disconnect()
        return reason, opened

    def _went_down(self, reason: str) -> None:
        self._set_offline(reason)
        self._settle()

    def _crashed(self, exc: Exception) -> None:
        log.exception("driver supervisor crashed", device=self.device_id)
        self.fault("driver_error", f"supervisor crashed: {exc!r}")
        self._set_offline(f"driver error: {exc!r}")
        self._settle()

    def _settle(self) -> None:
        """The first attempt to reach the device is over: start() may return."""
        self._first_attempt.set()

    # --- online and offline ------------------------------------------------------------------------

    def _set_online(self, identity: Mapping[str, str] | None = None, **log_fields: object) -> None:
        """The device answered: report it online (with `identity`, if it has a new one)."""
        if identity is not None:
            self.identity = dict(identity)
        self._online = True
        log.info("device online", **{**log_fields, **self.identity, "device": self.device_id})
        self.emit(DeviceOnline(self.device_id, dict(self.identity)))
        self._settle()

    def _set_offline(self, reason: str) -> None:
        """The device is away; reported once, however many sessions fail until it is back."""
        self._offline_reason = reason
        if self._online is False:
            return
        self._online = False
        log.warning("device offline", device=self.device_id, reason=reason)
        self.emit(DeviceOffline(self.device_id, reason))

    # --- events ------------------------------------------------------------------------------------

    def emit(self, event: DeviceEvent) -> None:
        """Hand `event` to the controller; a sink that raises is logged, never the driver's end."""
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception:
            log.exception("event sink failed", device=self.device_id, event_type=type(event).__name__)

    def fault(self, code: str, detail: str) -> None:
        self.emit(DeviceFault(self.device_id, code, detail))

    def _report_noise(self, detail: str) -> None:
        """A line_noise fault, at most one per NOISE_REPORT_INTERVAL (`detail` carries the running totals)."""
        now = asyncio.get_running_loop().time()
        if now - self._last_noise_report < NOISE_REPORT_INTERVAL:
            return
        self._last_noise_report = now
        self.fault("line_noise", detail)

    def _from_thread(self, callback: Callable[[*Ts], None], *args: *Ts) -> bool:
        """From a worker thread (a blocking vendor library): run callback(*args) on the event loop.

        What arrives after stop() is dropped: nothing is reported for a stopped driver. False if the loop is
        gone, so the thread knows nobody hears it any more."""
        loop = self._loop
        if loop is None:
            return False

        def deliver() -> None:
            if not self._stopping:
                callback(*args)

        try:
            loop.call_soon_threadsafe(deliver)
        except RuntimeError:  # the loop is closed
            return False
        return True

    def emit_threadsafe(self, event: DeviceEvent) -> bool:
        """emit() from a worker thread; False if the event loop is gone."""
        return self._from_thread(self.emit, event)
