"""Supervisor-command fixtures: seeded signing keys, a table config that lists them, a real daemon in-process
(run_table on simulated devices over real ptys, a real journal file, the real broker) and a supervisor's MQTT
client that publishes raw payloads and waits for the table's reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import paho.mqtt.client as paho
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion

from controller.config.table import TableConfig, demo_config
from controller.core.events import JournaledEvent
from controller.people.demo import RandomPolicy
from controller.people.floor import SimulatedFloor
from controller.shell.runner import build_devices, run_table
from controller.shell.service import TableService
from controller.supervisor.envelope import public_key_b64, sign_command
from drivers.sim.table import SimulatedTable
from tests.broker import Mosquitto, Subscribe, Subscriber

WAIT = 15.0  # failure bound only: replies and events normally come within milliseconds


@dataclass(frozen=True)
class Key:
    key_id: str
    role: str
    private: Ed25519PrivateKey

    def sign(self, table_id: str, verb: str, **kw: Any) -> dict[str, Any]:
        return sign_command(self.private, table_id=table_id, verb=verb, key_id=self.key_id, **kw)

    def entry(self) -> dict[str, str]:
        return {"key_id": self.key_id, "role": self.role, "public_key": public_key_b64(self.private)}


def seeded_key(key_id: str, role: str, seed: int) -> Key:
    # Seeded, so a failing run can be repeated exactly.
    return Key(key_id, role, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


@pytest.fixture(scope="session")
def keys() -> dict[str, Key]:
    """One key per role, plus `stranger`, a key no table lists."""
    return {
        "floorperson": seeded_key("floor-ann", "floorperson", 1),
        "supervisor": seeded_key("super-bob", "supervisor", 2),
        "technician": seeded_key("tech-cy", "technician", 3),
        "stranger": seeded_key("floor-ann", "floorperson", 4),
    }  # a known key_id, another key


def make_table_config(table_id: str, prefix: str, keys: dict[str, Key], **game: object) -> TableConfig:
    """The demo table with the floorperson's, supervisor's and technician's keys; `game` overrides [game]."""
    data = demo_config().model_dump()
    data["table_id"] = table_id
    data["mqtt"]["prefix"] = prefix
    data["game"].update(game)
    data["supervisors"] = [keys[r].entry() for r in ("floorperson", "supervisor", "technician")]
    return TableConfig.model_validate(data)


class MakeTableConfig(Protocol):
    """The table_config fixture: make_table_config."""

    def __call__(self, table_id: str, prefix: str, keys: dict[str, Key], **game: object) -> TableConfig: ...


@pytest.fixture
def table_config() -> MakeTableConfig:
    return make_table_config


class Daemon:
    """The real table controller in this event loop: run_table with the command listener, the journal, the
    publisher; simulated devices on ptys and the demo's simulated dealer and players (no floorperson: that
    is the test, through signed commands)."""

    def __init__(
        self,
        config: TableConfig,
        journal: Path,
        broker: str,
        seed: int = 7,
        *,
        terminals: bool = False,
        dealer: bool = True,
    ) -> None:
        self.config, self.journal, self.broker, self.seed = config, journal, broker, seed
        # terminals: one simulated wager terminal per seat (the config must list them); dealer False: nobody plays, so
        # the table waits in betting and a test drives the devices itself (self.sims).
        self.terminals, self.dealer = terminals, dealer
        self.sims: SimulatedTable | None = None
        self.events: list[JournaledEvent] = []
        self.service: TableService | None = None
        self.task: asyncio.Task[int] | None = None
        self._changed = asyncio.Condition()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Daemon:
        rng = random.Random(self.seed)
        sims = await self._stack.enter_async_context(
            SimulatedTable(self.config.game.seats, rng, terminals=self.terminals)
        )
        self.sims = sims

        def people(service: TableService) -> list[Coroutine[Any, Any, None]]:
            self.service = service
            collect = self._collect(service.subscribe("test", "lossless"))
            if not self.dealer:
                return [collect]
            floor = SimulatedFloor(service, sims, RandomPolicy(rng), None, 0.0)
            return [floor.run(), collect]

        self.task = asyncio.create_task(
            run_table(
                self.config,
                build_devices(self.config, sims.ports),
                broker=self.broker,
                journal_path=self.journal,
                companions=people,
            )
        )
        await self.wait_for(lambda e: e.type == "command.listening", what="the command listener subscribed")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()  # as SIGTERM: stop now
        if self.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self._stack.aclose()

    async def _collect(self, q: asyncio.Queue[JournaledEvent]) -> None:
        while True:
            ev = await q.get()
            async with self._changed:
                self.events.append(ev)
                self._changed.notify_all()

    async def wait_for(
        self, pred: Callable[[JournaledEvent], bool], after: int = 0, what: str = "", within: float = WAIT
    ) -> JournaledEvent:
        """The first event past seq `after` that matches."""

        def found() -> JournaledEvent | None:
            return next((e for e in self.events if e.seq > after and pred(e)), None)

        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: found() is not None), within)
            except TimeoutError:
                tail = [(e.seq, e.type) for e in self.events[-15:]]
                raise AssertionError(f"timed out waiting for {what or pred}; last events {tail}") from None
        ev = found()
        assert ev is not None
        return ev

    def by_seq(self, seq: int) -> JournaledEvent:
        return next(e for e in self.events if e.seq == seq)

    async def stopped(self, within: float = WAIT) -> int:
        assert self.task is not None
        return await asyncio.wait_for(self.task, within)


class DaemonFactory(Protocol):
    """The daemon_factory fixture: a Daemon for this config, its journal in tmp_path unless given."""

    def __call__(
        self,
        config: TableConfig,
        journal: Path | None = None,
        seed: int = 7,
        *,
        terminals: bool = False,
        dealer: bool = True,
    ) -> Daemon: ...


@pytest.fixture
async def daemon_factory(mosquitto: Mosquitto, tmp_path: Path) -> AsyncIterator[DaemonFactory]:
    made: list[Daemon] = []

    def make(
        config: TableConfig, journal: Path | None = None, seed: int = 7, *, terminals: bool = False, dealer: bool = True
    ) -> Daemon:
        d = Daemon(
            config, journal or tmp_path / "journal.sqlite", mosquitto.url, seed, terminals=terminals, dealer=dealer
        )
        made.append(d)
        return d

    yield make
    for d in made:  # a test that failed half-way still stops its daemon
        if d.task is not None and not d.task.done():
            await d.__aexit__()


# The supervisor_factory fixture: (prefix, table_id) -> a Supervisor on that table's command topics.
SupervisorFactory = Callable[[str, str], "Supervisor"]


class Supervisor:
    """A supervisor's console on the broker: publishes any payload on a command topic and waits for the reply
    (paho in its own thread, so it shares nothing with the daemon's aiomqtt clients)."""

    def __init__(self, host: str, port: int, replies: Subscriber, prefix: str, table_id: str) -> None:
        self.replies = replies  # a tests/broker.py Subscriber on .../cmd/reply
        self.base = f"{prefix}/{table_id}/cmd"
        self.reply_topic = f"{self.base}/reply"
        self._client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"test-supervisor-{os.getpid()}-{id(self)}")
        self._client.connect(host, port, keepalive=30)
        self._client.loop_start()

    async def raw(self, topic_verb: str, payload: bytes | str) -> dict[str, Any]:
        """Publish on .../cmd/<topic_verb>; the next reply (commands go one at a time)."""
        before = len(self.replies.on(self.reply_topic))
        info = self._client.publish(f"{self.base}/{topic_verb}", payload, qos=1)
        await asyncio.to_thread(info.wait_for_publish, WAIT)
        await self.replies.await_until(
            lambda ms: len([m for m in ms if m.topic == self.reply_topic]) > before,
            WAIT,
            f"a reply to {str(payload)[:80]!r}",
        )
        reply: dict[str, Any] = self.replies.on(self.reply_topic)[before].json()
        return reply

    async def burst(self, payloads: list[tuple[str, bytes | str]], within: float = WAIT) -> list[dict[str, Any]]:
        """Publish every (topic verb, payload) back to back, without waiting for replies; then their replies,
        in the order they came (one each is expected)."""
        before = len(self.replies.on(self.reply_topic))
        infos = [self._client.publish(f"{self.base}/{verb}", payload, qos=1) for verb, payload in payloads]
        await asyncio.to_thread(infos[-1].wait_for_publish, within)
        await self.replies.await_until(
            lambda ms: len([m for m in ms if m.topic == self.reply_topic]) >= before + len(payloads),
            within,
            f"{len(payloads)} replies",
        )
        return [m.json() for m in self.replies.on(self.reply_topic)[before:]]

    async def send(self, envelope: dict[str, Any], topic_verb: str | None = None) -> dict[str, Any]:
        reply = await self.raw(topic_verb or envelope["verb"], json.dumps(envelope))
        assert reply["command_id"] == envelope["command_id"], reply
        return reply

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


@pytest.fixture
def supervisor_factory(mosquitto: Mosquitto, subscribe: Subscribe) -> Iterator[SupervisorFactory]:
    made: list[Supervisor] = []

    def make(prefix: str, table_id: str) -> Supervisor:
        s = Supervisor(mosquitto.host, mosquitto.port, subscribe(f"{prefix}/{table_id}/cmd/reply"), prefix, table_id)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()
