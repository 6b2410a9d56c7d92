"""Common machinery of the simulated devices: pty, link, identify/ping, outbound queue, fault injection."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, ClassVar

import structlog

from drivers.reference.framing import HOST_ADDRESS, PROTOCOLS, VERSION_3, VERSION_4, ProtocolError, decode_message
from drivers.reference.link import ByteReader, ByteWriter, Link, LinkError
from drivers.sim.faults import COMMON_EVENTS, DEFAULT_GARBAGE, IMMEDIATE, REPORTED, Fault, FaultKind, Trigger
from drivers.sim.line import LineTiming, default_timing
from drivers.sim.pty import PtyEndpoint, StableName
from drivers.tasks import cancel_and_wait, simulator_task

log = structlog.get_logger(__name__)

FIRMWARE = "1.0.0-sim"


class SimDevice:
    """A simulated device speaking reference protocol v1 and v2 on the master side of a real pty.

    `port` is a stable symlink (what a udev rule gives in production) to the pty's slave, so an unplug
    and replug gives the driver a new pty under the same name, as re-plugging a USB device does.
    `protocols`: the versions it speaks, (1,) for a device built before v2 (it neither offers nor reads v2).
    `timing`: the line's baud rate and pacing (drivers/sim/line.py; default from TABLECTL_SIM_PACING).
    """

    model = "SIM"
    # Behaviour faults this device understands -> the event each one changes (see drivers.sim.faults).
    behaviours: ClassVar[Mapping[FaultKind, str]] = {}
    # Device-specific events a Trigger may count (commands it handles, plus "load" / "place").
    events: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        device_id: str,
        address: int = 1,
        *,
        protocols: tuple[int, ...] = (1, 2, 3, 4),
        timing: LineTiming | None = None,
    ) -> None:
        self.device_id = device_id
        self.address = address
        self.protocols: tuple[int, ...] = (1, 2, 3, 4)
        self.timing = default_timing()
        self.configure_line(protocols, timing)
        self._endpoint: PtyEndpoint | None = None
        self._link: Link | None = None
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._name = StableName(device_id)
        self._reply_delay = 0.0
        self._counts: Counter[str] = Counter()
        self._armed: list[tuple[Fault, Trigger]] = []
        self._clears: list[tuple[str, str, Trigger]] = []  # the attendant's scripted clears: code, detail, when
        # A clear's "ping n" counts the heartbeats since the device's last own fault report (none before it): the
        # attendant's time at the fault, which a script writer can see. Counted from the simulator's start it depended
        # on how long the controller had been connected, which nothing in a script shows.
        self._pings_since_report: int | None = None
        self._active: list[Fault] = []
        self._chores: set[asyncio.Task[None]] = set()

    def configure_line(self, protocols: tuple[int, ...] = (1, 2, 3, 4), timing: LineTiming | None = None) -> None:
        """The versions this device speaks and its line's timing; takes effect at the next plug (call before start)."""
        if not set(protocols) <= PROTOCOLS or 1 not in protocols or (VERSION_4 in protocols and 3 not in protocols):
            raise ValueError(f"protocols must include 1 and be among 1, 2, 3 and 4 (4 with 3), got {protocols}")
        self.protocols = tuple(sorted(set(protocols)))
        if timing is not None:
            self.timing = timing

    @property
    def port(self) -> str:
        return self._name.path

    @property
    def plugged(self) -> bool:
        return self._endpoint is not None

    @property
    def line_seconds(self) -> tuple[float, float]:
        """The wire time its line has carried since plugged in, (to the device, from it): drivers/sim/line.py."""
        end = self._endpoint
        return (0.0, 0.0) if end is None else (end.inbound.line_seconds, end.outbound.line_seconds)

    @property
    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "model": self.model,
            "serial": self.device_id,
            "firmware": FIRMWARE,
            "firmware_hash": hashlib.sha256(f"{self.model}/{FIRMWARE}".encode()).hexdigest(),
        }
        if self.protocols != (1,):
            identity["protocols"] = list(self.protocols)  # a v1 device says nothing (docs/protocol.md section 10)
        return identity

    async def start(self) -> None:
        self._name.create()
        try:
            await self._plug()
        except BaseException:
            await self.stop()  # half plugged: its pty closed and its dir gone, as after a stop
            raise

    async def stop(self) -> None:
        try:
            for chore in list(self._chores):
                await cancel_and_wait(chore)
            await self._unplug()
        finally:
            self._name.remove()

    async def _plug(self) -> None:
        self._endpoint = PtyEndpoint(self.timing)
        self._attach(self._endpoint, self._endpoint, self._endpoint.unread)
        self._name.point(self._endpoint.path)

    async def _unplug(self) -> None:
        await self._detach()
        if self._endpoint is not None:
            self._endpoint.close()
            self._endpoint = None
        self._name.point(None)  # udev removes the stable name when the device goes away

    def _attach(self, reader: ByteReader, writer: ByteWriter, in_waiting: Callable[[], int] | None = None) -> Link:
        """Start talking on a line: the link (returned) and the sender of queued replies. `in_waiting` counts the
        bytes that arrived unread, which the link reads before it resends on an ACK timeout, as the host's does."""
        self._outbox = asyncio.Queue()
        self._link = link = Link(
            reader,
            writer,
            local_address=self.address,
            peer_address=HOST_ADDRESS,
            on_data=self._on_data,
            name=f"sim:{self.device_id}",
            versions=frozenset(self.protocols),
            in_waiting=in_waiting,
        )
        self._link.follow_peer = True
        # An event no host ACKed waits for the next host's identify (docs/protocol.md section 4), as a shuffler
        # must not forget a shuffle it finished while the controller restarted.
        self._link.keep_undelivered = True
        self._link.control_delay = self._reply_delay
        self._link.start()
        self._sender = simulator_task(
            asyncio.get_running_loop().create_task(self._send_loop(), name=f"sim-send:{self.device_id}")
        )
        return link

    async def _detach(self) -> None:
        await cancel_and_wait(self._sender)
        self._sender = None
        if self._link is not None:
            await self._link.close()
            self._link = None

    async def send(self, message: Mapping[str, Any]) -> None:
        """Send one event now and wait for the host's ACK (raises LinkError if none comes)."""
        if self._link is None:
            raise RuntimeError(f"simulator {self.device_id} is not started")
        await self._link.send(message)
        self._said(message)

    def reply(self, message: dict[str, Any]) -> None:
        """Answer a command: in v3 a bare answer (`locked`, `pong`...) given while the command is being delivered goes
        back at once in the REPLY that ACKs it, when no earlier answer waits (docs/protocol.md section 12); otherwise
        it is queued, and answers leave in order after the command's ACK."""
        if self._outbox.empty() and self._link is not None and self._link.answer(message):
            self._said(message)
            return
        self._outbox.put_nowait(message)

    # --- fault injection ---------------------------------------------------------------------------

    def supports(self, kind: FaultKind) -> bool:
        return kind in IMMEDIATE or kind in self.behaviours

    def trigger_events(self) -> frozenset[str]:
        return COMMON_EVENTS | self.events

    async def inject(self, fault: Fault, when: Trigger | str | None = None) -> None:
        """Inject `fault` now (when=None or "now") or just before the device handles event `when`.

        Immediate faults happen when active; a behaviour fault, once active, changes the next event it
        applies to (every such event if persistent). ValueError if this device cannot have the fault.
        """
        if not self.supports(fault.kind):
            raise ValueError(
                f"{self.device_id} ({type(self).__name__}) cannot have fault {fault.kind.value!r}; "
                f"it takes {', '.join(sorted(k.value for k in IMMEDIATE | set(self.behaviours)))}"
            )
        trigger = Trigger.parse(when) if isinstance(when, str) else when
        if trigger is None:
            await self._activate(fault)
            return
        if trigger.event not in self.trigger_events():
            raise ValueError(
                f"{self.device_id} never sees event {trigger.event!r}; "
                f"it counts {', '.join(sorted(self.trigger_events()))}"
            )
        self._armed.append((fault, trigger))

    async def clear_at(self, code: str, when: Trigger | str | None = None, detail: str = "") -> None:
        """The attendant clears fault `code` now (when=None or "now") or once the device has seen event `when` (e.g.
        "fault 1": just after its first fault report; "ping n": the n-th heartbeat after its last fault report):
        `fault_cleared` below. `clear_faults` leaves armed clears."""
        trigger = Trigger.parse(when) if isinstance(when, str) else when
        if trigger is None:
            await self.fault_cleared(code, detail)
            return
        if trigger.event not in self.trigger_events():
            raise ValueError(
                f"{self.device_id} never sees event {trigger.event!r}; "
                f"it counts {', '.join(sorted(self.trigger_events()))}"
            )
        self._clears.append((code, detail, trigger))

    def clear_faults(self) -> None:
        """Forget armed and active faults and stop delaying replies (a hung or unplugged device stays so)."""
        self._armed.clear()
        self._active.clear()
        self._set_reply_delay(0.0)

    async def fault_cleared(self, code: str, detail: str = "") -> None:
        """The attendant cleared the fault `code` (a jam taken out by hand): the armed and active faults are forgotten
        and the device says so, `fault_cleared` (docs/protocol.md section 5), with no restart. Waits for the ACK."""
        self.clear_faults()
        await self.send({"evt": "fault_cleared", "code": code} | ({"detail": detail} if detail else {}))

    async def unplug(self) -> None:
        """Pull the cable: the pty closes and the stable name disappears. Its tasks stop as at a normal stop; the
        driver finds the device offline (that is the event the table reports)."""
        await self._unplug()
        log.info("simulator unplugged", device=self.device_id, port=self.port)

    async def replug(self) -> None:
        """Plug back in: a new pty under the same stable name (also revives a hung device)."""
        await self._unplug()
        await self._plug()

    async def hang(self) -> None:
        """Stop answering (no ACKs, no events) while the port stays plugged in."""
        await cancel_and_wait(self._sender)
        if self._link is not None:
            await self._link.close("hung by fault injection", close_transport=False)

    def inject_garbage(self, data: bytes) -> None:
        """Write raw bytes into the line between frames (line-noise fault injection)."""
        if self._endpoint is not None:
            self._endpoint.write(data)

    async def _activate(self, fault: Fault) -> None:
        match fault.kind:
            case FaultKind.UNPLUG:
                await self.unplug()
            case FaultKind.REPLUG:
                await self.replug()
            case FaultKind.GARBAGE:
                self.inject_garbage(fault.data or DEFAULT_GARBAGE)
            case FaultKind.SLOW_REPLY:
                self._set_reply_delay(fault.delay_ms / 1000)
            case FaultKind.NO_REPLY:
                await self.hang()
            case _:
                self._active.append(fault)
                if fault.report:
                    await self.send({"evt": "fault", "code": fault.kind.value, "detail": REPORTED})

    def _set_reply_delay(self, seconds: float) -> None:
        self._reply_delay = seconds
        if self._link is not None:
            self._link.control_delay = seconds

    def _note(self, event: str) -> bool:
        """Count an event and activate the faults due on it; True if the device went silent doing so."""
        self._counts[event] += 1
        if event == "fault" or (event == "ping" and self._pings_since_report is not None):
            self._pings_since_report = 0 if event == "fault" else (self._pings_since_report or 0) + 1
        due = [(f, t) for f, t in self._armed if t.event == event and t.count == self._counts[event]]
        silenced = False
        for fault, trigger in due:
            self._armed.remove((fault, trigger))
            log.info("fault activated", device=self.device_id, fault=fault.kind.value, when=str(trigger))
            if fault.kind in IMMEDIATE:
                silenced |= fault.kind in (FaultKind.UNPLUG, FaultKind.NO_REPLY)
                # Unplugging closes the link whose reader is running this very callback: do it in a task.
                self._chore(self._activate(fault))
            elif fault.report:
                self._chore(self._activate(fault))  # reported from a task: this may run inside the link's reader
            else:
                self._active.append(fault)
        count = self._pings_since_report if event == "ping" else self._counts[event]
        for clear in [c for c in self._clears if c[2].event == event and c[2].count == count]:
            self._clears.remove(clear)
            log.info("fault clear scripted", device=self.device_id, code=clear[0], when=str(clear[2]))
            self._chore(self.fault_cleared(clear[0], clear[1]))
        return silenced

    def _chore(self, work: Coroutine[Any, Any, None]) -> None:
        chore = asyncio.get_running_loop().create_task(work)
        self._chores.add(chore)
        chore.add_done_callback(self._chore_done)

    def _chore_done(self, chore: asyncio.Task[None]) -> None:
        # A scripted report or clear the host never ACKed is said here, not lost with its task.
        self._chores.discard(chore)
        if not chore.cancelled() and (exc := chore.exception()) is not None:
            log.warning("simulator chore failed", device=self.device_id, error=repr(exc))

    def _said(self, message: Mapping[str, Any]) -> None:
        """Count the device's own fault reports (the trigger event "fault")."""
        if message.get("evt") == "fault":
            self._note("fault")

    def _take(self, event: str) -> Fault | None:
        """The active behaviour fault for this event, if any; a one-shot fault is used up."""
        for fault in self._active:
            if self.behaviours.get(fault.kind) == event:
                if not fault.persistent:
                    self._active.remove(fault)
                return fault
        return None

    # --- protocol ----------------------------------------------------------------------------------

    async def _send_loop(self) -> None:
        while True:
            message = await self._outbox.get()
            if self._reply_delay:
                await asyncio.sleep(self._reply_delay)
            try:
                await self.send(message)
            except LinkError as exc:
                log.warning("simulator reply not acknowledged", device=self.device_id, error=str(exc))
            except Exception:
                log.exception("simulator reply failed", device=self.device_id, message=message)

    def _on_data(self, payload: bytes) -> None:
        try:
            message = decode_message(payload)
        except ProtocolError as exc:
            self.reply({"evt": "fault", "code": "bad_command", "detail": str(exc)})
            return
        command = message.get("cmd")
        stations = message.get("stations")
        if isinstance(stations, list) and self.address not in stations:
            return  # a broadcast for other stations on the line (docs/protocol.md, "Broadcast lock")
        if isinstance(command, str) and self._note(command):
            return
        if command == "identify":
            if self._link is not None:
                self._link.peer_restarted()  # what we were resending goes first, at once: identity follows it
                version = self._identity_version(message.get("protocols"))
                # v4 is v3's frames, with whole answers in ANSWER frames (docs/protocol.md section 14).
                self._link.version = min(version, VERSION_3)
                self._link.answers_whole = version >= VERSION_4
            self.reply({"evt": "identity", **self.identity})
        elif command == "ping":
            self.reply({"evt": "pong"})
        else:
            try:
                handled = self.handle(str(command), message)
            except (TypeError, ValueError, KeyError) as exc:
                self.reply({"evt": "fault", "code": "bad_command", "detail": f"{command}: {exc}"})
                return
            if not handled:
                self.reply({"evt": "fault", "code": "bad_command", "detail": f"unknown command {command!r}"})

    def _identity_version(self, offered: object) -> int:
        """The version to answer `identify` in: the highest this device speaks of those the host's identify offers, v1
        when it offers none (a host built before the offer, or kept to v1: docs/protocol.md section 10, rule 2)."""
        if not isinstance(offered, list):
            return 1
        common = [v for v in offered if type(v) is int and v in self.protocols]
        return max(common, default=1)

    def handle(self, command: str, message: Mapping[str, Any]) -> bool:
        """Handle a device-specific command; False if this device does not know it."""
        return False
