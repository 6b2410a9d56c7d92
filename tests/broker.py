"""The test suite's MQTT parts, for any test, bench or fixture to import (tests/conftest.py's `mosquitto` and
`subscribe` fixtures are made of them): a real private mosquitto on a loopback port that retries a taken port, and an
independent subscriber. A helper module, not conftest.py, so that importing them does not import a conftest's
fixtures and hooks (and conftest.py stays within CONTRIBUTING.md's size limit)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import pwd
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.config.broker import MAX_PACKET_SIZE
from floor.ports import ADDRESS_IN_USE, PORT_ATTEMPTS, PortsTaken, PortTaken, on_a_free_port

# free_port() names a port free a moment ago: a server started on it may find it taken by the other xdist worker's
# server; the starters (Mosquitto, PgCluster) then take another. Re-exported: the tests import it from here.
from floor.ports import free_port as free_port
from leash import LEASH_FILE, Leash

STARTUP_TIMEOUT = 10.0
BROKER_DIR = "tablectl-test-broker-"  # leash.PATTERNS knows it


def find_mosquitto() -> str | None:
    # Debian installs the broker in /usr/sbin, which is not on an ordinary user's PATH.
    return shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if os.access(p, os.X_OK)), None
    )


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for the block's duration: bound (so no other process, such as the
    other xdist worker's server, can listen on it) but not listening, so a connect is refused at once. A port from
    free_port() only was free a moment ago: a server could be answering on it by the time a test connects."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


class Mosquitto:
    """A private mosquitto on a loopback port; stop()/start() simulate an outage on the same port."""

    def __init__(
        self,
        binary: str,
        workdir: Path,
        port: int | None = None,
        persistence: bool = False,
        *,
        ports: Callable[[], int] = free_port,
        conf: Callable[[int], str] | None = None,
    ) -> None:
        """`persistence`: the broker saves its retained messages, sessions and queued messages at stop and loads
        them at start, as systemd/mosquitto/mosquitto.conf configures it for a floor. `workdir` must be a dir on the
        leash (Leash.mkdtemp, or Mosquitto.leashed): a broker in pytest's own tmp dir outlives a run SIGKILLed
        together with its watchdog, since the sweep judges only the dirs the leash owns.

        `port` None: one from `ports`, and should another process bind it before the broker does (free_port() only
        names a port free a moment ago; the other xdist worker may take it), the first start() retries on a fresh
        one. An explicit `port` is kept: the caller may have handed it out already.

        `conf`: the whole mosquitto.conf for a port, for a broker configured otherwise (tests/mqtt/test_broker_acl.py's
        TLS one, from systemd/mosquitto/); it must log to stderr (`log_dest stderr`), where start() reads that the
        broker is running or that its port is taken. None: the suite's anonymous loopback broker."""
        if not (workdir / LEASH_FILE).is_file():
            raise ValueError(
                f"mosquitto's dir {workdir} is not on the leash, so no sweep would stop a broker left there: use "
                "Mosquitto.leashed(binary, port) (or a dir from Leash.mine().mkdtemp(prefix)), not tmp_path"
            )
        self.binary = binary
        self.host = "127.0.0.1"
        self.config = workdir / "mosquitto.conf"
        self.persistence = persistence
        self.ports = ports
        self.conf = conf
        self.fresh_port = port is None
        self._configure(ports() if port is None else port)
        self.proc: subprocess.Popen[str] | None = None
        # The tail of the broker's log, for failure messages.
        self.log: collections.deque[str] = collections.deque(maxlen=400)

    def _configure(self, port: int) -> None:
        self.port = port
        self.url = f"mqtt://{self.host}:{port}"
        if self.conf is not None:
            self.config.write_text(self.conf(port))
            return
        workdir = self.config.parent
        persist = f"persistence true\npersistence_location {workdir}/\n" if self.persistence else "persistence false\n"
        self.config.write_text(
            f"listener {port} 127.0.0.1\n"
            # Started as root (as CI runs), mosquitto drops to the `mosquitto` user, which cannot write its
            # persistence file in this root-only temp directory: it then PUBACKs, fails to save at SIGTERM ("Error
            # saving in-memory database ... Permission denied") and comes back without the kept sessions' queues.
            # Run as whoever runs the tests (a non-root user ignores this line).
            f"user {pwd.getpwuid(os.geteuid()).pw_name}\n"
            "allow_anonymous true\n"
            f"{persist}"
            # Without it Nagle holds a small second message until the subscriber's delayed ACK (40 ms).
            "set_tcp_nodelay true\n"
            # A replayed backlog arrives faster than a subscriber reads it; mosquitto's default queue of 1,000
            # messages per client would drop the rest (the example config for the floor says the same).
            "max_queued_messages 100000\n"
            # The shipped broker's packet limit (systemd/mosquitto/mosquitto.conf): tests meet what production meets.
            f"max_packet_size {MAX_PACKET_SIZE}\n"
            # stderr, not stdout: mosquitto block-buffers stdout into a pipe, hiding the "running" line.
            "log_dest stderr\n"
            "log_type all\n"
            "connection_messages true\n"
        )

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        # Only before the first start may the port change: clients know it after (stop()/start() is an outage).
        attempts = PORT_ATTEMPTS if self.fresh_port and self.proc is None else 1
        try:
            on_a_free_port(self._start_on, self.ports, first=self.port, attempts=attempts)
        except PortsTaken as taken:
            more = f" (and {len(taken.ports) - 1} fresh ports before it)" if len(taken.ports) > 1 else ""
            pytest.fail(
                f"mosquitto could not listen on {self.host}:{self.port}{more}: another process holds the port. "
                "Find it with `ss -ltnp`; give Mosquitto no port (port=None) to have a taken one replaced.\n"
                + taken.log,
                pytrace=False,
            )

    def _start_on(self, port: int) -> None:
        if port != self.port:  # a fresh port after a taken one
            self._configure(port)
        self._start_once()

    def _start_once(self) -> None:
        proc = subprocess.Popen(
            [self.binary, "-c", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.proc = proc
        # Stopped with the test process however it ends, SIGKILL included (leash/ says why a watchdog).
        Leash.mine().hold(proc.pid, signal.SIGTERM)
        # Its dir is owned (__init__ saw to it): the sweep's backstop names the broker too.
        Leash.mine().note_server(self.config.parent, proc.pid, signal.SIGTERM)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            # Keeps reading for the broker's whole life so a chatty log never fills the pipe and stalls it.
            assert proc.stderr is not None
            for line in proc.stderr:
                self.log.append(line.rstrip())
                lines.put(line)
            lines.put(None)

        self._pump = threading.Thread(target=pump, name=f"mosquitto-log-{self.port}", daemon=True)
        self._pump.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        mine: list[str] = []  # this start's lines: an earlier start's error is not this one's
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                self.stop()
                pytest.fail(f"mosquitto did not report running within {STARTUP_TIMEOUT}s:\n" + self.tail())
            if line is None:
                proc.wait()
                self._pump.join(timeout=10)
                Leash.mine().drop(proc.pid)
                if any(ADDRESS_IN_USE in seen for seen in mine):
                    raise PortTaken(self.port, "\n".join(mine[-40:]))
                pytest.fail(f"mosquitto exited with {proc.returncode} while starting:\n" + self.tail())
            mine.append(line.rstrip())
            # "... running" is logged after every listener socket is open, so clients can connect now.
            if " running" in line and "mosquitto version" in line:
                return

    def stop(self, kill: bool = False) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.kill() if kill else proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        Leash.mine().drop(proc.pid)
        self._pump.join(timeout=10)  # the log's last lines: the save at SIGTERM
        if self.persistence and not kill and any("Error saving in-memory database" in line for line in self.log):
            pytest.fail(
                "mosquitto could not save its persistence file at stop, so what it acknowledged is lost with its "
                f"restart; make {self.config.parent} writable by the broker's user:\n" + self.tail()
            )

    def tail(self, n: int = 40) -> str:
        return "\n".join(list(self.log)[-n:])

    @classmethod
    def leashed(
        cls, binary: str, port: int | None = None, persistence: bool = False, prefix: str = BROKER_DIR
    ) -> Mosquitto:
        """A broker in a temp dir of its own on the leash (leash/): with its process, the dir goes too, and
        should the process and its watchdog both be SIGKILLed, the next run's sweep stops the broker and deletes
        the dir (a dir in pytest's own tmp dir is never swept). close() when done."""
        return cls(binary, Leash.mine().mkdtemp(prefix), port, persistence)

    def close(self) -> None:
        """stop(), then the leashed dir deleted."""
        self.stop()
        Leash.mine().release(self.config.parent)


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    retain: bool

    def json(self) -> Any:
        return json.loads(self.payload)


class Subscriber:
    """An independent MQTT client (paho, own thread) that records everything it receives.

    It resubscribes after every reconnect, so it follows a broker through stop()/start(). The wait_*
    methods block the calling thread; from async tests use the `a*` variants, which wait in a worker
    thread and leave the event loop free for the code under test.
    """

    def __init__(self, host: str, port: int, topics: list[str], session: str | None = None) -> None:
        """`session`: a client id whose session the broker keeps across disconnects (clean session off), as the
        floor's subscription is kept (docs/floor.md): what the broker queued for it survives a restart with
        persistence."""
        self.topics = topics
        self.messages: list[Received] = []
        self.subscriptions = 0  # SUBACKs received, one per (re)connect
        self._cond = threading.Condition()
        self._client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=session or f"test-sub-{os.getpid()}-{id(self)}",
            clean_session=session is None,
        )
        # Short retry delay: after a broker restart the test should not wait seconds for the subscriber.
        # paho's types say whole seconds; it takes fractions, which is the point here.
        self._client.reconnect_delay_set(min_delay=0.05, max_delay=0.5)  # type: ignore[arg-type]
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._client.connect(host, port, keepalive=30)
        self._client.loop_start()

    def _on_connect(self, client: paho.Client, userdata: Any, flags: Any, rc: Any, props: Any = None) -> None:
        if not rc.is_failure:
            client.subscribe([(t, 1) for t in self.topics])

    def _on_subscribe(self, client: paho.Client, userdata: Any, mid: int, rcs: Any, props: Any = None) -> None:
        with self._cond:
            self.subscriptions += 1
            self._cond.notify_all()

    def _on_message(self, client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        with self._cond:
            self.messages.append(Received(msg.topic, bytes(msg.payload), bool(msg.retain)))
            self._cond.notify_all()

    def wait_until(self, predicate: Callable[[list[Received]], bool], timeout: float = 10.0, what: str = "") -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self.messages), timeout):
                got = "\n".join(f"{m.topic} {m.payload[:200]!r}" for m in self.messages[-20:])
                raise AssertionError(
                    f"timed out after {timeout}s waiting for {what or predicate}; last messages:\n{got}"
                )

    def wait_subscribed(self, count: int = 1, timeout: float = 10.0) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.subscriptions >= count, timeout):
                raise AssertionError(f"subscriber got {self.subscriptions} SUBACKs within {timeout}s, wanted {count}")

    async def await_until(
        self, predicate: Callable[[list[Received]], bool], within: float = 10.0, what: str = ""
    ) -> None:
        await asyncio.to_thread(self.wait_until, predicate, within, what)

    def on(self, topic: str) -> list[Received]:
        with self._cond:
            return [m for m in self.messages if m.topic == topic]

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


class Subscribe(Protocol):
    """The subscribe fixture: subscribe("prefix/#", ...) -> an acknowledged Subscriber."""

    def __call__(self, *topics: str) -> Subscriber: ...


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A loopback port another process holds for the test's duration (as the other worker's server would)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


# The ids the suite handed out (fresh_id(), the `unique_id` fixture): the suite's broker is shared by every test of a
# worker's session, so a retained topic there must carry one of them, or two tests that run a table with the same
# table id and prefix share its retained status, birth, meters and anchor (a fresh journal took another test's anchor
# for a rollback and locked its progressives out). tests/conftest.py's guard checks every test against it.
ISSUED: set[str] = set()
GUARD_TOPIC = "tablectl-test-guard"  # the retained snapshot's end marker, never retained itself


def fresh_id(head: str = "t") -> str:
    """A table id or topic prefix no other test of the session uses (registered: the guard accepts it)."""
    issued = head + uuid.uuid4().hex[:12]
    ISSUED.add(issued)
    return issued


def retained_topics(host: str, port: int, timeout: float = 10.0) -> dict[str, bytes]:
    """Every retained message on the broker now, topic -> payload. The broker sends a new subscription's retained
    messages right after its SUBACK and before anything published later, so a marker published after the SUBACK
    ends the snapshot (no waiting for silence)."""
    marker = f"{GUARD_TOPIC}/{uuid.uuid4().hex}"
    got: dict[str, bytes] = {}
    done = threading.Event()
    subscribed = threading.Event()

    def on_message(client: paho.Client, userdata: Any, msg: paho.MQTTMessage) -> None:
        if msg.topic == marker:
            done.set()
        elif msg.retain:
            got[msg.topic] = bytes(msg.payload)

    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"test-guard-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    client.on_message = on_message
    client.on_subscribe = lambda *args: subscribed.set()
    client.connect(host, port, keepalive=30)
    client.loop_start()
    try:
        client.subscribe("#", qos=1)
        if not subscribed.wait(timeout):
            raise AssertionError(f"the suite's broker did not acknowledge a subscription within {timeout}s")
        client.publish(marker, b"", qos=1)
        if not done.wait(timeout):
            raise AssertionError(f"the suite's broker did not return the retained snapshot within {timeout}s")
    finally:
        client.disconnect()
        client.loop_stop()
    return got


def unregistered(changed: dict[str, bytes], issued: set[str]) -> list[str]:
    """The topics among `changed` (set or changed retained topics) that carry no issued id: a fixed table id or
    prefix, which another test of the session may use too."""
    return sorted(t for t, payload in changed.items() if payload and not any(i in t for i in issued))


@contextlib.contextmanager
def own_mosquitto() -> Iterator[Mosquitto]:
    """A broker of the test's own (not the worker's shared one), leashed to the test process, without persistence:
    restarted, it has lost every retained message."""
    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed (python3 dev.py test installs it)"
    broker = Mosquitto.leashed(binary)
    broker.start()
    try:
        yield broker
    finally:
        broker.close()
