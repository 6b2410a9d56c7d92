"""The daemon's ear for supervisor commands: its own broker connection, subscribed to <prefix>/<table>/cmd/+.

Each payload goes through controller.supervisor.gate.CommandGate. A rejection is journaled (`command.rejected`) and
answered; an accepted command is stepped by the service (the engine journals `command.accepted` and the
input's events in one step) and answered with what the step did. Replies go to <prefix>/<table>/cmd/reply
(QoS 1). Nothing a sender publishes can stop the listener: every payload gets an answer, the connection is
re-made with backoff after a broker outage, and a flood of rejections is summarised in the log rather than
written out line by line.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

import aiomqtt
import structlog

from controller.config.table import TableConfig
from controller.core.events import DomainEvent, JournaledEvent
from controller.engine.inputs import Input
from controller.mqtt.connection import client_kwargs
from controller.mqtt.contract import CommandReply, Topics
from controller.store.journal import Journal
from controller.supervisor.gate import Accepted, CommandGate, Rejected
from controller.supervisor.replay import ReplayStore

log = structlog.get_logger("tablectl.commands")

# When the runner stops the listener right after the step it is waiting for (a close_table command closes the
# table, and the runner cancels its helpers at once), this long is left to send that command's reply.
REPLY_GRACE_SECONDS = 2.0


class CommandTable(Protocol):
    """What the listener needs of the table service: its config and journal, when it is ready or closed, and the
    two ways in (journal a rejection; step an accepted command and get the events it journaled)."""

    config: TableConfig
    journal: Journal
    ready: asyncio.Event
    closed: asyncio.Event

    def note(self, events: list[DomainEvent]) -> list[JournaledEvent]: ...

    async def submit_and_wait(self, inp: Input) -> list[JournaledEvent]: ...


def _utc_now() -> datetime:
    return datetime.now(UTC)


class RateLimit:
    """At most `burst` log lines per `window` seconds; the next line allowed says how many were held back."""

    def __init__(self, burst: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.window = window
        self._clock = clock
        self._start = clock()
        self._logged = 0
        self.suppressed = 0

    def allow(self) -> int | None:
        """None: do not log this one. Otherwise log it, saying the returned number were not logged before it."""
        now = self._clock()
        if now - self._start >= self.window:
            self._start, self._logged = now, 0
        if self._logged >= self.burst:
            self.suppressed += 1
            return None
        self._logged += 1
        held, self.suppressed = self.suppressed, 0
        return held


class CommandListener:
    def __init__(
        self,
        service: CommandTable,
        broker: str | None = None,
        *,
        clock: Callable[[], datetime] = _utc_now,
        connect_timeout: float = 3.0,
        keepalive: int = 15,
        backoff_min: float = 0.2,
        backoff_max: float = 5.0,
    ) -> None:
        self.service = service
        config = service.config
        self.table_id = config.table_id
        self._broker = broker
        self._clock = clock
        self._timeout = connect_timeout
        self._keepalive = keepalive
        self._backoff = (backoff_min, backoff_max)
        topics = Topics(config.mqtt.prefix, config.table_id)
        self.subscription = topics.cmd("+")
        self.reply_topic = topics.cmd_reply
        self.subscribed = asyncio.Event()  # set while subscribed (tests, health)
        self._limit = RateLimit()
        self._log = structlog.get_logger("tablectl.commands", table_id=config.table_id)
        self._gate: CommandGate | None = None
        self._pending: asyncio.Future[list[JournaledEvent]] | None = None  # the step of the command in hand

    async def run(self) -> None:
        """Until cancelled. Opens its own connection to the journal's file for the replay store."""
        config = self.service.config
        # Commands act on the restored state: the recovery step comes first in the journal, then `command.listening`.
        await self.service.ready.wait()
        store = ReplayStore(self.service.journal.path, self.table_id)
        self._gate = CommandGate(self.table_id, config.supervisors, config.commands, store)
        try:
            await self._connect_loop()
        except Exception:
            # The runner gathers its helpers without looking: say it here, or the table goes deaf unseen.
            self._log.exception("command listener failed: supervisor commands are not received")
            raise
        finally:
            self.subscribed.clear()
            self._gate = None
            store.close()

    async def _connect_loop(self) -> None:
        backoff_min, backoff_max = self._backoff
        backoff = backoff_min
        connected = False
        while True:
            try:
                kwargs = client_kwargs(self.service.config.mqtt, self._broker)
            except Exception as err:  # a secret file that cannot be read (whatever reading it raised) may be fixed
                self._log.error("command listener cannot connect", error=str(err) or repr(err), retry_in=backoff_max)
                await asyncio.sleep(backoff_max)
                continue
            client = aiomqtt.Client(
                **kwargs,
                identifier=f"tablectl-{self.table_id}-commands",
                timeout=self._timeout,
                keepalive=self._keepalive,
            )
            try:
                async with client:
                    connected = True
                    await client.subscribe(self.subscription, qos=1)
                    backoff = backoff_min
                    self.subscribed.set()
                    self._listening()
                    async for message in client.messages:
                        try:
                            await self._on_message(client, message)
                        except aiomqtt.MqttError:
                            raise
                        except Exception:  # one command lost to a bug, never the listener
                            self._log.exception("supervisor command not handled", topic=message.topic.value)
            except aiomqtt.MqttError as exc:
                self._log.warning(
                    "command listener lost the broker" if connected else "command listener: broker unavailable",
                    error=str(exc) or type(exc).__name__,
                    retry_in=backoff,
                )
            finally:
                self.subscribed.clear()
            connected = False
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, backoff_max)

    def _listening(self) -> None:
        config = self.service.config
        keys = {s.key_id: s.role for s in config.supervisors}
        self._log.info("command listener subscribed", topic=self.subscription, keys=len(keys))
        self.service.note(
            [
                DomainEvent(
                    "command.listening",
                    None,
                    {
                        "topic": self.subscription,
                        "reply_topic": self.reply_topic,
                        "keys": keys,
                        "max_age_seconds": config.commands.max_age_seconds,
                        "max_clock_skew_seconds": config.commands.max_clock_skew_seconds,
                    },
                )
            ]
        )

    # -- one message ---------------------------------------------------------------------------------------

    async def _on_message(self, client: aiomqtt.Client, message: aiomqtt.Message) -> None:
        self._pending = None
        topic = message.topic.value
        if topic == self.reply_topic:
            return  # our own replies (and other tables' consumers' echoes) share the wildcard
        raw = message.payload
        payload = raw if isinstance(raw, bytes | bytearray) else str(raw if raw is not None else "").encode()
        try:
            if self._gate is None:
                raise RuntimeError("the command listener is not running")
            result = self._gate.check(topic.rsplit("/", 1)[-1], bytes(payload), self._clock())
        except Exception as err:  # a bug here must cost one command, not the listener
            self._log.exception("command check failed", topic=topic)
            result = Rejected(
                "internal_error", f"the table could not check the command ({type(err).__name__}); see the table's log"
            )
        if isinstance(result, Rejected):
            await self._send(client, self._rejected(result))
            return
        try:
            reply = await self._apply(result)
        except asyncio.CancelledError:
            # Stopped while the step ran: the runner stops its helpers as soon as the table is closed, which is
            # what close_table does. The step has been journaled; its reply is still owed.
            if self._pending is not None:
                await asyncio.wait((self._pending,), timeout=REPLY_GRACE_SECONDS)
            late = self._late_reply(result)
            if late is not None:
                await self._send(client, late)
            raise
        await self._send(client, reply)

    def _rejected(self, r: Rejected) -> CommandReply:
        journaled: list[JournaledEvent] = []
        try:
            journaled = self.service.note([DomainEvent("command.rejected", None, r.payload())])
        except Exception:
            self._log.exception("command rejection not journaled", code=r.code, command_id=r.command_id)
        held = self._limit.allow()
        if held is not None:
            self._log.warning(
                "supervisor command rejected",
                code=r.code,
                reason=r.reason,
                command_id=r.command_id,
                verb=r.verb,
                key_id=r.key_id,
                **({"not_logged_before": held} if held else {}),
            )
        return CommandReply(
            command_id=r.command_id,
            table_id=self.table_id,
            verb=r.verb,
            outcome="rejected",
            reason=r.reason,
            code=r.code,
            event_seqs=[e.seq for e in journaled],
            ts=self._clock(),
        )

    async def _apply(self, a: Accepted) -> CommandReply:
        self._log.info(
            "supervisor command accepted",
            command_id=a.command.command_id,
            verb=a.command.verb,
            key_id=a.command.key_id,
            role=a.role,
        )
        self._pending = asyncio.ensure_future(self.service.submit_and_wait(a.input))
        closed = asyncio.ensure_future(self.service.closed.wait())
        try:
            await asyncio.wait((self._pending, closed), return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        reply = self._late_reply(a)
        if reply is None:
            return self._reply(a, "ignored", "the table closed before the command was carried out", [])
        return reply

    def _late_reply(self, a: Accepted) -> CommandReply | None:
        step = self._pending
        if step is None or not step.done() or step.cancelled() or step.exception() is not None:
            return None
        events = step.result()
        seqs = [e.seq for e in events]
        for e in events:
            if e.type in ("input.ignored", "input.refused"):
                why = str(e.payload.get("reason", ""))
                return self._reply(a, "ignored", f"{why} ({e.rule})" if e.rule else why, seqs)
        return self._reply(a, "applied", None, seqs)

    def _reply(self, a: Accepted, outcome: str, reason: str | None, seqs: list[int]) -> CommandReply:
        return CommandReply.model_validate(
            {
                "command_id": a.command.command_id,
                "table_id": self.table_id,
                "verb": a.command.verb,
                "outcome": outcome,
                "reason": reason,
                "event_seqs": seqs,
                "ts": self._clock(),
            }
        )

    async def _send(self, client: aiomqtt.Client, reply: CommandReply) -> None:
        try:
            await client.publish(self.reply_topic, reply.model_dump_json(), qos=1, timeout=REPLY_GRACE_SECONDS)
        except (aiomqtt.MqttError, TimeoutError) as err:
            # The journal holds the outcome either way; the sender sees no reply and may ask again.
            self._log.warning("command reply not delivered", command_id=reply.command_id, error=str(err))
