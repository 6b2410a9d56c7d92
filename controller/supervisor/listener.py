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
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

import aiomqtt
import structlog

from controller.config.table import TableConfig
from controller.core.events import DomainEvent, JournaledEvent
from controller.engine.inputs import Input
from controller.mqtt.connection import broker_fix, client_kwargs
from controller.mqtt.contract import CommandReply, Topics
from controller.mqtt.offloop import JournalThread
from controller.store.journal import Journal
from controller.supervisor import resend
from controller.supervisor.batches import NOTE_REPLY_S, RateLimit, rejection_replies, runs
from controller.supervisor.gate import Accepted, CommandGate, Rejected
from controller.supervisor.judging import Payload, judge
from controller.supervisor.replay import ReplayStore
from controller.supervisor.verbs import ResendArgs

log = structlog.get_logger("tablectl.commands")

# When the runner stops the listener right after the step it is waiting for (a close_table command closes the
# table, and the runner cancels its helpers at once), this long is left to send that command's reply.
REPLY_GRACE_SECONDS = 2.0
# Payloads handled together at most: a burst (2,000 junk payloads in front of a real command) is judged and
# journaled in a few transactions; the bound keeps one batch's replies and journal transaction small.
MAX_BATCH = 256


class CommandTable(Protocol):
    """What the listener needs of the table service: its config and journal, when it is ready or closed, and the
    two ways in (journal a rejection; step an accepted command and get the events it journaled)."""

    config: TableConfig
    journal: Journal
    ready: asyncio.Event
    closed: asyncio.Event
    ending: bool

    def note(self, events: list[DomainEvent]) -> asyncio.Future[list[JournaledEvent]]: ...

    async def submit_and_wait(self, inp: Input) -> list[JournaledEvent]: ...


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _as_bytes(raw: object) -> bytes:
    return bytes(raw) if isinstance(raw, bytes | bytearray) else str(raw if raw is not None else "").encode()


class CommandListener:
    def __init__(
        self,
        service: CommandTable,
        broker: str | None = None,
        *,
        clock: Callable[[], datetime] = _utc_now,
        connect_timeout: float = 3.0,
        keepalive: int | None = None,
        backoff_min: float = 0.2,
        backoff_max: float = 5.0,
    ) -> None:
        self.service = service
        config = service.config
        self.table_id = config.table_id
        self._broker = broker
        self._clock = clock
        self._timeout = connect_timeout
        self._keepalive = config.mqtt.keepalive_s if keepalive is None else keepalive
        self._backoff = (backoff_min, backoff_max)
        topics = Topics(config.mqtt.prefix, config.table_id)
        self.subscription = topics.cmd("+")
        self.reply_topic = topics.cmd_reply
        self.subscribed = asyncio.Event()  # set while subscribed (tests, health)
        self._limit = RateLimit()
        self._log = structlog.get_logger("tablectl.commands", table_id=config.table_id)
        self._gate: CommandGate | None = None
        # The replay store's commits (in the journal's file, behind SQLite's write lock that a journal commit holds) off
        # the loop: a hung disk holds this thread, not the loop (docs/journal.md). The checks before them stay on the
        # loop (controller/supervisor/judging.py): pure CPU, and a batch of junk then costs no hand-off.
        self._checks = JournalThread(f"command-checks-{self.table_id}")
        # The steps of the accepted commands in hand, owed a reply even if the listener is stopped meanwhile.
        self._pending: list[tuple[Accepted, asyncio.Future[list[JournaledEvent]]]] = []

    async def run(self) -> None:
        """Until cancelled. Opens its own connection to the journal's file for the replay store."""
        config = self.service.config
        # Commands act on the restored state: the recovery step comes first in the journal, then `command.listening`.
        await self.service.ready.wait()
        path = self.service.journal.path
        store = await self._checks.call(lambda: ReplayStore(path, self.table_id))
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
            # On the checks' thread, behind a batch still there, and awaited: the journal's close, after the listener
            # ended, is then the file's last and removes its -wal (a clean stop: the next start checks nothing).
            closed = self._checks.post(store.close)
            closed.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._checks.close()
            await asyncio.wait((closed,))

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
                # A batch's replies go out together (see _handle); paho queues what exceeds this, in order.
                max_inflight_messages=100,
            )
            client.pending_calls_threshold = 2 * MAX_BATCH  # aiomqtt warns past 10 pending replies; a batch has more
            try:
                async with client:
                    connected = True
                    await client.subscribe(self.subscription, qos=1)
                    backoff = backoff_min
                    self.subscribed.set()
                    self._listening()
                    await self._session(client)
            except aiomqtt.MqttError as exc:
                self._log.warning(
                    "command listener lost the broker" if connected else "command listener: broker unavailable",
                    error=str(exc) or type(exc).__name__,
                    fix=broker_fix(str(exc)),
                    retry_in=backoff,
                )
            finally:
                self.subscribed.clear()
            connected = False
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, backoff_max)

    async def _session(self, client: aiomqtt.Client) -> None:
        """Until the connection is lost: take every payload that has arrived (up to MAX_BATCH) and handle them
        together, in their order."""
        messages = client.messages
        while True:
            batch = [await anext(messages)]
            while len(batch) < MAX_BATCH and len(messages):
                batch.append(await anext(messages))
            try:
                await self._handle(client, batch)
            except aiomqtt.MqttError:
                raise
            except Exception:  # commands lost to a bug, never the listener
                self._log.exception("supervisor commands not handled", payloads=len(batch))

    def _listening(self) -> None:
        if self.service.ending or self.service.closed.is_set():
            # Subscribed only once the table was closing or stopping (a slow broker, a quick Ctrl-C): `table.closed` or
            # the stop's event stays the journal's last, as it must (tests/e2e/test_kill9_recovery.py). `ending` is set
            # when the step is taken, before its commit: `closed` only after it, too late for a note in between.
            return
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

    # -- a batch of payloads -------------------------------------------------------------------------------
    # Judged in arrival order; each run of rejections is journaled in one transaction and each run of accepted
    # commands stepped together (the service commits them as one group), so a burst costs a few fsyncs rather
    # than one or two per payload, and the journal still has every payload's events in the order they came.

    async def _handle(self, client: aiomqtt.Client, batch: list[aiomqtt.Message]) -> None:
        sending: list[asyncio.Task[None]] = []
        self._pending = []
        try:
            gate = self._gate
            if gate is None:
                raise RuntimeError("the command listener is not running")
            judged = await judge(gate, self._checks, self._payloads(batch), self._clock(), self._log)
            for run in runs(judged):
                if isinstance(run[0], Rejected):
                    replies = await self._rejected([r for r in run if isinstance(r, Rejected)])
                elif run[0].input is None:  # a verb the shell carries out (resend): one at a time, in order
                    replies = [await self._resend(client, a) for a in run if isinstance(a, Accepted)]
                else:
                    replies = await self._apply([a for a in run if isinstance(a, Accepted)])
                sending += [asyncio.create_task(self._send(client, r)) for r in replies]
        except asyncio.CancelledError:
            # Stopped while a step ran: the runner stops its helpers as soon as the table is closed, which is what
            # close_table does. What was journaled is still owed its reply.
            undone = [f for _, f in self._pending if not f.done()]
            if undone:
                await asyncio.wait(undone, timeout=REPLY_GRACE_SECONDS)
            late = [r for a, f in self._pending if (r := self._late_reply(a, f)) is not None]
            sending += [asyncio.create_task(self._send(client, r)) for r in late]
            if sending:
                await asyncio.wait(sending, timeout=REPLY_GRACE_SECONDS)
            raise
        finally:
            self._pending = []
        if sending:
            await asyncio.gather(*sending)

    def _payloads(self, batch: list[aiomqtt.Message]) -> list[Payload]:
        # Our own replies (and others' echoes) share the wildcard: not commands.
        return [(m.topic.value, _as_bytes(m.payload)) for m in batch if m.topic.value != self.reply_topic]

    async def _rejected(self, run: list[Rejected]) -> list[CommandReply]:
        """The rejections journaled (a note, on the writer thread) and their replies, which wait for the note at most
        NOTE_REPLY_S: on a journal that does not answer (a hung disk) the reply goes without its seqs, and the note is
        journaled in its turn once the disk answers (controller/shell/notes.py)."""
        journaled: list[JournaledEvent] = []
        noted = self.service.note([DomainEvent("command.rejected", None, r.payload()) for r in run])
        await asyncio.wait((noted,), timeout=NOTE_REPLY_S)
        if not noted.done():
            self._log.warning("command rejections not journaled yet: replied without their seqs", rejections=len(run))
        elif noted.exception() is None:
            journaled = noted.result()
        else:
            self._log.error("command rejections not journaled", rejections=len(run), error=str(noted.exception()))
        seqs: list[int | None] = [e.seq for e in journaled] if len(journaled) == len(run) else [None] * len(run)
        for r in run:
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
        return rejection_replies(run, seqs, self.table_id, self._clock())

    async def _apply(self, run: list[Accepted]) -> list[CommandReply]:
        for a in run:
            self._log.info(
                "supervisor command accepted",
                command_id=a.command.command_id,
                verb=a.command.verb,
                key_id=a.command.key_id,
                role=a.role,
            )
        self._pending = [
            (a, asyncio.ensure_future(self.service.submit_and_wait(a.input))) for a in run if a.input is not None
        ]
        steps = asyncio.gather(*(f for _, f in self._pending), return_exceptions=True)
        closed = asyncio.ensure_future(self.service.closed.wait())
        try:
            await asyncio.wait((steps, closed), return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        unstepped = "the table closed before the command was carried out"
        replies = [self._late_reply(a, f) or self._reply(a, "ignored", unstepped, []) for a, f in self._pending]
        if not steps.done():  # the table closed: what it did not step, it never will
            steps.cancel()
        self._pending = []
        return replies

    def _late_reply(self, a: Accepted, step: asyncio.Future[list[JournaledEvent]]) -> CommandReply | None:
        if not step.done() or step.cancelled() or step.exception() is not None:
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

    async def _resend(self, client: aiomqtt.Client, a: Accepted) -> CommandReply:
        """`resend`: who asked is journaled (`command.accepted`, a shell note: the engine never sees it), then the
        journal's rows go out again on `event` from this connection (controller.supervisor.resend); no game state
        changes."""
        args = a.args
        if not isinstance(args, ResendArgs):
            raise TypeError(f"{a.command.verb} is not a verb the listener carries out")
        if self.service.ending or self.service.closed.is_set():
            return self._reply(a, "ignored", "the table is closing: ask again once it runs", [])
        cmd = a.command
        span = {"from_seq": args.from_seq, "to_seq": args.to_seq}
        # Awaited without a bound: who asked is in the journal before any row goes out again.
        noted = await self.service.note([resend.accepted(cmd, a.role, args)])
        seqs = [e.seq for e in noted]
        config = self.service.config
        try:
            found = await resend.collect_for(self.service.journal, config.journal, self.table_id, args)
        except Exception as err:  # a journal it cannot read costs this command, not the listener
            self._log.exception("resend: the journal could not be read", command_id=cmd.command_id, **span)
            why = f"the table could not read its journal ({err}); see the table's log"
            return self._reply(a, "ignored", why, seqs)
        topic = Topics(config.mqtt.prefix, self.table_id).event
        resent = resend.listed(
            await resend.send_again(client, topic, found, args, self._timeout, config.mqtt.max_packet_size)
        )
        missing = resent.missing
        self._log.info(
            "events sent again",
            command_id=cmd.command_id,
            key_id=cmd.key_id,
            role=a.role,
            **span,
            sent=resent.sent,
            missing=[f"{m.first_seq}-{m.last_seq}: {m.why}" for m in missing],
            missing_not_listed=resent.missing_not_listed,
            seqs_not_listed=resent.seqs_not_listed,
        )
        why = resend.summary(args.from_seq, args.to_seq, resent.sent, missing, resent.missing_not_listed)
        reply = self._reply(a, "applied", why, seqs)
        return reply.model_copy(update={"resent": resent})

    async def _send(self, client: aiomqtt.Client, reply: CommandReply) -> None:
        body = resend.reply_body(reply, self.reply_topic, self.service.config.mqtt.max_packet_size, self._log)
        try:
            await client.publish(self.reply_topic, body, qos=1, timeout=REPLY_GRACE_SECONDS)
        except (aiomqtt.MqttError, TimeoutError) as err:
            # The journal holds the outcome either way; the sender sees no reply and may ask again.
            self._log.warning("command reply not delivered", command_id=reply.command_id, error=str(err))
