"""The outbox publisher: drains the journal to the MQTT broker, surviving broker outages.

Delivery is at-least-once: an event is marked published only after the broker's PUBACK, so an event
whose PUBACK was lost is published again after reconnecting. Consumers dedupe by `event_id` and detect
gaps by `seq` (DESIGN.md, MQTT contract).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, TypeVar

import aiomqtt
import structlog

from controller.journal import Journal
from controller.mqtt_connection import parse_broker_address

T = TypeVar("T")

def parse_broker_url(url: str) -> tuple[str, int]:
    """Split `mqtt://host[:port]` (or mqtts://) into (host, port); see controller.mqtt_connection."""
    address = parse_broker_address(url)
    return address.host, address.port


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _compact(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


class EventPublisher:
    """Publishes the journal's outbox in seq order; reconnects with backoff until cancelled or closed.

    Run `run()` as a task in the daemon's event loop, call `notify()` after each `Journal.append`, and
    stop with `await close()` (which drains, then publishes the retained "offline" status). All methods
    must be called from the event loop's thread.
    """

    def __init__(
        self,
        journal: Journal,
        broker_url: str,
        prefix: str,
        table_id: str,
        *,
        client_id: str | None = None,
        connect_timeout: float = 3.0,
        keepalive: int = 15,
        backoff_min: float = 0.2,
        backoff_max: float = 5.0,
    ) -> None:
        self._journal = journal
        self._host, self._port = parse_broker_url(broker_url)
        self.broker = f"{self._host}:{self._port}"
        self._table_id = table_id
        self._status_topic = f"{prefix}/{table_id}/status"
        self._event_topic = f"{prefix}/{table_id}/event"
        self._client_id = client_id or f"tablectl-{table_id}"
        # Also bounds each PUBACK wait: a broker that stops answering is treated as an outage.
        self._timeout = connect_timeout
        self._keepalive = keepalive
        self._backoff_min = backoff_min
        self._backoff_max = backoff_max
        self._wake = asyncio.Event()
        self._connected = False
        self._closing = False
        self._close_deadline: float | None = None
        self._cancelled_by_close = False
        self._task: asyncio.Task[None] | None = None
        # A lazy proxy rather than log.bind(): bind() would freeze the structlog configuration in force
        # now, and the daemon may configure logging after constructing the publisher.
        self._log = structlog.get_logger(__name__, broker=self.broker, table_id=table_id)

    @property
    def connected(self) -> bool:
        return self._connected

    def notify(self) -> None:
        """New events were appended: wake the drain loop."""
        self._wake.set()

    def _status(self, state: str) -> str:
        return _compact(
            {"state": state, "table_id": self._table_id, "boot_id": self._journal.boot_id, "ts": _now_iso()}
        )

    async def run(self) -> None:
        """Connect, publish, reconnect; returns after `close()`, otherwise runs until cancelled."""
        self._task = asyncio.current_task()
        try:
            await self._connect_loop()
        except asyncio.CancelledError:
            # close() cancels a publisher that has nothing to drain; that is a normal stop, so return
            # normally, unless someone else cancelled us as well.
            task = asyncio.current_task()
            if self._cancelled_by_close and task is not None and task.uncancel() == 0:
                return
            raise
        except Exception:
            # Not a broker problem (those are retried): e.g. the journal failed. Say so before dying.
            self._log.exception("mqtt publisher failed")
            raise

    async def _connect_loop(self) -> None:
        backoff = self._backoff_min
        while not self._closing:
            client = aiomqtt.Client(
                self._host,
                self._port,
                identifier=self._client_id,
                will=aiomqtt.Will(self._status_topic, self._status("lost"), qos=1, retain=True),
                timeout=self._timeout,
                keepalive=self._keepalive,
            )
            try:
                async with client:
                    self._connected = True
                    backoff = self._backoff_min
                    self._log.info("mqtt connected", last_seq=self._journal.last_seq)
                    await self._session(client)
            except aiomqtt.MqttError as exc:
                self._log.warning(
                    "mqtt connection lost" if self._connected else "mqtt broker unavailable",
                    error=str(exc) or type(exc).__name__,
                    retry_in=backoff,
                    last_seq=self._journal.last_seq,
                )
            finally:
                self._connected = False
            if self._closing:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self._backoff_max)

    async def _session(self, client: aiomqtt.Client) -> None:
        # aiomqtt only reports a lost connection to pending operations or the message iterator; watching
        # the iterator makes an idle publisher notice the loss at once, and lets a publish whose PUBACK
        # will never come fail immediately instead of waiting for the timeout.
        lost = asyncio.ensure_future(self._until_lost(client))
        try:
            # Everything already in the journal when this connection starts was journaled while we were
            # disconnected (or in an earlier run): it is a replay, and says so.
            replay_upto = self._journal.last_seq
            await self._guard(lost, client.publish(self._status_topic, self._status("online"), qos=1, retain=True))
            while True:
                self._wake.clear()
                if self._closing:
                    await self._final(client, lost, replay_upto)
                    return
                await self._drain(client, lost, replay_upto)
                if self._closing:
                    continue
                waiter = asyncio.ensure_future(self._wake.wait())
                try:
                    await asyncio.wait((waiter, lost), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                if lost.done():
                    lost.result()
        except asyncio.CancelledError:
            if not self._closing:
                # Cancelled without close(): still leave an honest retained status behind, briefly.
                with contextlib.suppress(aiomqtt.MqttError, TimeoutError):
                    await asyncio.wait_for(
                        client.publish(self._status_topic, self._status("offline"), qos=1, retain=True), 0.5
                    )
            raise
        finally:
            lost.cancel()
            if lost.done() and not lost.cancelled():
                lost.exception()  # retrieved here, so asyncio does not warn "exception never retrieved"

    async def _final(self, client: aiomqtt.Client, lost: asyncio.Future[None], replay_upto: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = self._close_deadline if self._close_deadline is not None else loop.time() + 2.0
        try:
            async with asyncio.timeout_at(deadline):
                await self._drain(client, lost, replay_upto, final=True)
        except TimeoutError:
            self._log.warning("mqtt close: outbox not fully drained", left=len(self._journal.unpublished()))
        remaining = max(deadline - loop.time(), 0.05)
        await self._guard(
            lost,
            client.publish(self._status_topic, self._status("offline"), qos=1, retain=True, timeout=remaining),
        )
        self._log.info("mqtt closed", last_seq=self._journal.last_seq)

    async def _drain(
        self, client: aiomqtt.Client, lost: asyncio.Future[None], replay_upto: int, final: bool = False
    ) -> None:
        while batch := self._journal.unpublished():
            for ev in batch:
                body = ev.public()
                replayed = ev.seq <= replay_upto
                if replayed:
                    body["replayed"] = True
                if self._closing and not final:
                    return  # close() was called: hand over to the deadline-bounded final drain
                await self._guard(lost, client.publish(self._event_topic, _compact(body), qos=1))
                # Marked one by one after each PUBACK so a crash or outage mid-batch republishes as
                # little as possible.
                self._journal.mark_published([ev.seq], replayed)

    @staticmethod
    async def _until_lost(client: aiomqtt.Client) -> None:
        # We subscribe to nothing, so the iterator only ever ends by raising MqttError on disconnect.
        async for _ in client.messages:
            pass
        raise aiomqtt.MqttError("disconnected")

    @staticmethod
    async def _guard(lost: asyncio.Future[None], op: Awaitable[T]) -> T:
        task = asyncio.ensure_future(op)
        try:
            await asyncio.wait((task, lost), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        if task.done():
            return task.result()
        task.cancel()
        lost.result()  # raises the MqttError that ended the connection
        raise aiomqtt.MqttError("disconnected")

    async def close(self, drain_timeout: float = 2.0) -> None:
        """Drain what is left if connected, publish retained "offline", disconnect; bounded by the timeout."""
        self._closing = True
        task = self._task
        if task is None or task.done():
            return
        loop = asyncio.get_running_loop()
        # Leave a tenth of the budget for cancelling the task if the broker stalls.
        self._close_deadline = loop.time() + drain_timeout * 0.9
        self._wake.set()
        if not self._connected:
            # Nothing to drain to; stop reconnecting now rather than waiting for a backoff to end.
            self._cancelled_by_close = True
            task.cancel()
        done, _ = await asyncio.wait((task,), timeout=drain_timeout * 0.9)
        if not done:
            self._log.warning("mqtt close timed out; dropping the connection")
            self._cancelled_by_close = True
            task.cancel()
            await asyncio.wait((task,), timeout=drain_timeout * 0.1)
        if task.done() and not task.cancelled() and task.exception() is not None:
            self._log.error("mqtt publisher failed", error=repr(task.exception()))
