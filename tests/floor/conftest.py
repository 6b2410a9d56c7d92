"""The floor's fixtures: one real PostgreSQL cluster for the session (floor.pgcluster, started as an unprivileged
user in a temp dir on a free loopback port), a fresh database for each test, and the floor service as a real
`tablectl floor` process."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
import structlog

from controller.store.reader import JournalReader
from controller.store.schema import JournalError
from floor.pgcluster import ClusterError, PgCluster
from tests.tablectl_runs import TABLECTL

if TYPE_CHECKING:
    from tests.floor.marked_table import Archiver

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
KEYS = ("event_id", "boot_id", "seq", "ts", "table_id", "round_id", "type", "rule", "payload")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    try:
        # fsync off: these clusters are thrown away; the benches keep it on (a commit's cost is their baseline).
        cluster = PgCluster.create(durable=False)
    except ClusterError as err:
        pytest.fail(f"{err} (python3 dev.py test installs PostgreSQL)", pytrace=False)
    try:
        cluster.start()
    except ClusterError as err:
        cluster.remove()  # initdb's dir, and a server that started but never answered
        pytest.fail(f"{err} (python3 dev.py test installs PostgreSQL)", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def floor_dsn(pg_cluster: PgCluster) -> str:
    """A database of its own for one test."""
    return pg_cluster.create_database("floor_" + uuid.uuid4().hex[:12])


@pytest.fixture
def archiver(floor_dsn: str) -> Iterator[Archiver]:
    """The archive's writer on the test's database, closed after it (tests/floor/marked_table.py: the console's and the
    recall's tests feed it a table's events). Imported here, not at the top: most floor tests never use it."""
    from tests.floor.marked_table import archiving

    with archiving(floor_dsn) as a:
        yield a


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.05) -> None:
    """Poll a condition on the archive (a database has no notification a test could wait on instead)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(poll)


def floor_toml(dsn: str, broker: str, prefix: str, client_id: str, extra: str = "") -> str:
    return (
        f'name = "test-floor"\n[database]\ndsn = "{dsn}"\n'
        f'[mqtt]\nbroker = "{broker}"\nprefix = "{prefix}"\nclient_id = "{client_id}"\n{extra}'
    )


class ServiceProcess:
    """`tablectl VERB --config CONFIG` (the floor, the link controller) as a child process, its log kept per boot;
    tests/link's LinkProcess is this with verb "link"."""

    verb = "floor"
    tail = 3000  # the characters of each boot's log that log() shows in a failure's message

    def __init__(self, config: Path, logs: Path, env: dict[str, str] | None = None) -> None:
        self.config = config
        self.logs = logs
        self.env = env or {}  # added to the test's environment (AIOHTTP_NO_EXTENSIONS: test_console_wire.py)
        self.boots = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.boots += 1
        log = (self.logs / f"{self.verb}-{self.boots}.log").open("wb")
        self.proc = subprocess.Popen(
            [*TABLECTL, "--log-json", self.verb, "--config", str(self.config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
        )

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                # A service deaf to SIGTERM is the failure: killed, so the test's cleanup goes on, and its log shown.
                self.kill()
                raise AssertionError(
                    f"`tablectl {self.verb}` ignored SIGTERM for 30 s; its log:\n{self.log()}"
                ) from None
        return self.proc.returncode

    def log(self) -> str:
        boots = sorted(self.logs.glob(f"{self.verb}-*.log"))
        return "\n".join(p.read_text(errors="replace")[-self.tail :] for p in boots)


class FloorProcess(ServiceProcess):
    """`tablectl floor --config FLOOR.toml` as a child process, its log kept per boot."""


def console_floor(
    tmp: Path, dsn: str, broker: str, prefix: str, console: str = "", env: dict[str, str] | None = None
) -> tuple[FloorProcess, int]:
    """The floor service with its console on a loopback port of its own (plus `console`'s [console] lines; `env` added
    to its environment), started and serving: the process (its config at `.config`, its logs under tmp/logs) and the
    console's port."""
    config = tmp / "floor.toml"
    # Port 0: the console binds a port the kernel picks and says which. A port a test picked (free_port()) was only
    # free a moment ago, and the other xdist worker's server could bind it before this floor did.
    listen = f'[console]\nlisten = "127.0.0.1:0"\n{console}'
    config.write_text(floor_toml(dsn, broker, prefix, f"floor-{prefix}", listen))
    logs = tmp / "logs"
    logs.mkdir()
    floor = FloorProcess(config, logs, env)
    floor.start()
    return floor, console_port(floor)


CONSOLE_AT = re.compile(r"^tablectl floor: console at https?://[^/]*:([0-9]+)/$", re.MULTILINE)


def console_port(floor: ServiceProcess, timeout: float = 60) -> int:
    """The port a started floor's console serves on, as it says on stdout (floor/service.py) once it is listening: a
    console given port 0 (listen = "127.0.0.1:0") is on one the kernel picked."""
    ports: list[int] = []

    def said() -> bool:
        ports[:] = [int(m.group(1)) for m in CONSOLE_AT.finditer(floor.log())]
        if not ports and floor.proc is not None and floor.proc.poll() is not None:
            raise AssertionError(f"the floor exited with {floor.proc.returncode} before its console served")
        return bool(ports)

    try:
        wait_for(said, timeout, "the floor's console (`tablectl floor: console at URL` on its stdout)")
    except AssertionError as err:
        raise AssertionError(f"{err}; the floor's log:\n{floor.log()}") from None
    return ports[-1]  # the latest boot's


def count(dsn: str, sql: str, *params: object) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql.encode(), params).fetchone()
        return int(row[0]) if row else 0


def table_config(table_id: str, name: str, prefix: str, tmp: Path) -> Path:
    """configs/<name> as table `table_id` under MQTT prefix `prefix`."""
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', (CONFIGS / name).read_text(), count=1, flags=re.M)
    path = tmp / f"{table_id}.toml"
    path.write_text(text.replace('prefix = "tablectl"', f'prefix = "{prefix}"'))
    return path


@dataclass
class TableProcess:
    """A real table: `tablectl demo` on simulated devices over ptys, on its own journal, a boot at a time."""

    table_id: str
    config: Path
    journal: Path
    logs: Path
    broker: str
    rounds_per_boot: int
    boots: int = 0
    kills: int = 0
    proc: subprocess.Popen[bytes] | None = None
    script: Path | None = None
    pace: str = "0"  # seconds between the simulated people's actions (`demo --pace`)

    def start(self, seed: int) -> None:
        self.boots += 1
        log = (self.logs / f"{self.table_id}-{self.boots}.log").open("wb")
        argv = ["demo", "--config", str(self.config), "--journal", str(self.journal), "--broker", self.broker]
        argv += ["--script", str(self.script)] if self.script else []
        argv += ["--rounds", str(self.rounds_per_boot), "--pace", self.pace, "--seed", str(seed), "--quiet"]
        self.proc = subprocess.Popen([*TABLECTL, *argv], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)

    def completed(self) -> int:
        if not self.journal.exists():
            return 0
        try:
            with JournalReader(self.journal) as r:
                return sum(1 for row in r.rows() if row["type"] == "round.completed")
        except JournalError:
            # A first boot killed before its journal's schema was written leaves an SQLite file with no events
            # table: no round played yet; the next boot writes the schema into it.
            return 0

    def rows(self) -> list[dict[str, Any]]:
        with JournalReader(self.journal) as r:
            return [{k: row[k] for k in KEYS} for row in r.rows()]


@pytest.fixture
def structlog_at_debug() -> Iterator[None]:
    """Debug calls reach capture_logs: another test of this worker may have set tablectl's logging to info
    (controller/shell/logs.py), whose filtering logger drops them before any processor sees them."""
    before = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    yield
    structlog.configure(wrapper_class=before)
