"""The link's fixtures: a real PostgreSQL primary with a real synchronous standby (floor.pgcluster: initdb,
pg_basebackup, synchronous_standby_names), the link controller as a real `tablectl link` process, and linked
tables speaking the link's MQTT v5 request/response protocol through the real mosquitto.

Most tables here are protocol clients (`LinkTable`), not whole `tablectl run` daemons, so a test can send exactly the
request it means; each client resends a request under the same key until the controller acknowledges it, as a
table's journal-backed sender does. Whole linked tables play in tests/link/test_linked_tables.py.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.supervisor.envelope import public_key_b64, sign_command
from floor.pgcluster import ClusterError, PgCluster
from tests.broker import Mosquitto, Subscribe
from tests.floor.conftest import ServiceProcess

ROOT = Path(__file__).resolve().parents[2]
SUPERVISOR = Ed25519PrivateKey.from_private_bytes(b"\x02" * 32)
FLOORPERSON = Ed25519PrivateKey.from_private_bytes(b"\x03" * 32)
TABLES = ("ms-01", "ms-02", "ms-03")


@dataclass
class Pair:
    primary: PgCluster
    standby: PgCluster

    def dsn(self, db: str) -> str:
        p, s = self.primary, self.standby
        return (
            f"host={p.host},{s.host} port={p.port},{s.port} user=tablectl dbname={db} "
            "target_session_attrs=read-write connect_timeout=3"
        )

    def remove(self) -> None:
        self.standby.remove()
        self.primary.remove()


def make_pair() -> Pair:
    try:
        primary = PgCluster.create(durable=False)
    except ClusterError as err:
        pytest.fail(f"{err} (python3 dev.py test installs PostgreSQL)", pytrace=False)
    try:
        primary.start()
        primary.create_database("link")
        return Pair(primary, primary.add_standby("standby1", synchronous=True))
    except (ClusterError, psycopg.Error) as err:
        primary.remove()  # add_standby removes a half-made standby itself
        pytest.fail(f"{err} (python3 dev.py test installs PostgreSQL)", pytrace=False)


@pytest.fixture(scope="session")
def pg_pair() -> Iterator[Pair]:
    pair = make_pair()
    try:
        yield pair
    finally:
        pair.remove()


@pytest.fixture
def link_db(pg_pair: Pair) -> str:
    """A database of its own on the shared pair, as a multi-host DSN."""
    name = "link_" + uuid.uuid4().hex[:12]
    pg_pair.primary.create_database(name)
    return pg_pair.dsn(name)


def link_toml(dsn: str, broker: str, prefix: str, link_id: str = "mega", lease_ms: int = 2000) -> str:
    tables = "".join(f'[[tables]]\ntable_id = "{t}"\nasset_number = "A-{t[-2:]}"\n\n' for t in TABLES)
    return f"""
[link]
id = "{link_id}"
lease_ms = {lease_ms}
heartbeat_ms = {lease_ms // 4}

[database]
dsn = "{dsn}"

[mqtt]
broker = "{broker}"
prefix = "{prefix}"

{tables}
[[progressive]]
wager = "progressive"
wager_cents = 500
rule = "655a.12(c)(3) paytable B"

[[progressive.levels]]
level = "mega"
seed_cents = 5000000
reseed_cents = 5000000
primary_percent = 11
reserve_percent = 10
rule = "655a.12(c)(3) paytable B"

[[progressive.levels]]
level = "major"
seed_cents = 500000
reseed_cents = 500000
primary_percent = 4.25
rule = "655a.12(c)(3) paytable B"

[[supervisors]]
key_id = "manager"
role = "supervisor"
public_key = "{public_key_b64(SUPERVISOR)}"

[[supervisors]]
key_id = "floor1"
role = "floorperson"
public_key = "{public_key_b64(FLOORPERSON)}"
"""


class LinkProcess(ServiceProcess):
    """`tablectl link --config LINK.toml` as a child process, a log per boot."""

    verb = "link"
    tail = 4000


@contextmanager
def link_on(broker: Mosquitto, link_db: str, tmp_path: Path, prefix: str) -> Iterator[LinkProcess]:
    """A `tablectl link` on this broker and database, its config and logs in tmp_path, stopped at the end."""
    config = tmp_path / "link.toml"
    config.write_text(link_toml(link_db, broker.url, prefix))
    (tmp_path / "logs").mkdir()
    process = LinkProcess(config, tmp_path / "logs")
    process.start()
    try:
        yield process
    finally:
        process.stop()


class LinkTable:
    """One linked table's side of the protocol (MQTT v5 request/response, correlation data, QoS 1)."""

    def __init__(self, table_id: str, host: str, port: int, prefix: str, link_id: str = "mega") -> None:
        self.table_id = table_id
        self.base = f"{prefix}/link/{link_id}"
        self.response_topic = f"{self.base}/response/{table_id}"
        self.answers: dict[bytes, dict[str, Any]] = {}
        self.cond = threading.Condition()
        self.client = paho.Client(
            CallbackAPIVersion.VERSION2, client_id=f"{table_id}-{uuid.uuid4().hex[:6]}", protocol=paho.MQTTv5
        )
        self.client.on_message = self._on_message
        self.client.on_connect = lambda c, u, f, rc, p=None: c.subscribe(self.response_topic, qos=1)
        self.client.connect(host, port)
        self.client.loop_start()

    def _on_message(self, client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        corr = getattr(msg.properties, "CorrelationData", None)
        if corr is not None:
            with self.cond:
                self.answers[bytes(corr)] = json.loads(msg.payload)
                self.cond.notify_all()

    def ask(self, body: dict[str, Any], timeout: float = 3.0) -> dict[str, Any] | None:
        """One request; its answer, or None when none came within `timeout` (the caller resends)."""
        corr = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.ResponseTopic = self.response_topic
        props.CorrelationData = corr
        self.client.publish(f"{self.base}/request/{self.table_id}", json.dumps(body), qos=1, properties=props)
        deadline = time.monotonic() + timeout
        with self.cond:
            while corr not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.answers.pop(corr)

    def until_acked(self, body: dict[str, Any], within: float = 90.0) -> dict[str, Any]:
        """Resend under the same key until the controller answers ok (a table's journal-backed sender does this)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            answer = self.ask(body, timeout=2.0)
            if answer is not None and answer.get("ok"):
                return answer
        raise AssertionError(f"{self.table_id}: no acknowledgement within {within}s for {body}")

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def command(verb: str, args: dict[str, Any], key: Ed25519PrivateKey = SUPERVISOR, key_id: str = "manager") -> str:
    return json.dumps(sign_command(key, table_id="mega", verb=verb, key_id=key_id, args=args))


def send(mosquitto: Mosquitto, subscribe: Subscribe, prefix: str, verb: str, payload: str) -> dict[str, Any]:
    """A signed command (`command`) published to the link as an operator's client does: the link's reply to it."""
    sub = subscribe(f"{prefix}/link/mega/cmd/reply")
    cid = json.loads(payload)["command_id"]
    table = LinkTable("operator", "127.0.0.1", mosquitto.port, prefix)
    table.client.publish(f"{prefix}/link/mega/cmd/{verb}", payload, qos=1)
    sub.wait_until(lambda got: any(m.json().get("command_id") == cid for m in got), 20, f"the reply to {verb}")
    table.close()
    return next(m.json() for m in sub.messages if m.json().get("command_id") == cid)


def rows(dsn: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql.encode(), params).fetchall()
