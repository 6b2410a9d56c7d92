"""What the daemon benchmarks share: a private mosquitto, the seven-seat table, figures, progress, the machine,
and the subscriber process (bench/subscriber.py) that receives what the daemon publishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.config.table import TableConfig

from controller.cli.verb import UsageError
from controller.config.table import TableConfig, load_config
from controller.core.events import DomainEvent
from controller.store.journal import Journal
from drivers.interfaces import WAGER_BUS_ID
from floor.cli.private import start_mosquitto, stop_mosquitto
from leash import Leash

BENCH = Path(__file__).resolve().parent
SEVEN_SEATS = BENCH / "seven-seats.toml"
SUBSCRIBER = BENCH / "subscriber.py"


# -- figures and progress --------------------------------------------------------------------------------------


def percentile(samples: Sequence[float], p: float) -> float:
    """The p-th percentile (0 < p < 100), linear between the nearest ranks (statistics' "inclusive" method)."""
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=1000, method="inclusive")[round(p * 10) - 1]


def progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of the process. schedstat counts nanoseconds where /proc/<pid>/stat counts clock
    ticks (10 ms): over 20 s a tick is already 0.05 % of a core, too coarse for an idle process."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended since the listing
            total += int((task / "schedstat").read_text().split()[0])
    if total:
        return total / 1e9
    # Kernels without schedstats: fields after the command name (which may hold spaces, hence the split at the
    # last ")"); utime is the 14th field of the line, stime the 15th.
    rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def compile_bytecode() -> str:
    """Write the bytecode of the project's packages, as `pip install` does for an installed release, and say so.

    A daemon spawned from a checkout where nothing wrote `__pycache__` (an editable install, PYTHONDONTWRITEBYTECODE
    set) compiles every module from source at each start: about a third of its import time, which no installed
    table pays. The release check skips `__pycache__` (controller/release/installed.py)."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    ok = all(compileall.compile_dir(root / pkg, quiet=2) for pkg in ("controller", "drivers"))
    return "bytecode compiled as pip installs it" if ok else "bytecode NOT compiled (see compileall's errors)"


# How systemd/tablectl.service runs the table (issue 19's memory): python -OO (no docstrings, no asserts) and no
# column tables, on bytecode compiled so at install (systemd/README.md).
OPTIMISED = {"PYTHONOPTIMIZE": "2", "PYTHONNODEBUGRANGES": "1"}


def optimise_children() -> str:
    """From now on every Python this bench starts (the daemon and the baselines alike, so ratios compare like with
    like) runs as the unit runs it; the bench itself does not (argparse reads its docstring). Compiles what they
    load as systemd/README.md's install does: the standard library, the venv's packages and the project's, -OO
    without column tables (compileall skips a file whose bytecode is up to date)."""
    import sysconfig

    root = Path(__file__).resolve().parent.parent
    paths = sorted({sysconfig.get_path(n) for n in ("stdlib", "purelib", "platlib")})
    paths += [str(root / pkg) for pkg in ("controller", "drivers")]
    compiled = subprocess.run(
        [sys.executable, "-X", "no_debug_ranges", "-OO", "-m", "compileall", "-q", "-j", "0", "-x", SKIPPED, *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    os.environ.update(OPTIMISED)
    how = ", ".join(f"{k}={v}" for k, v in OPTIMISED.items())
    said = "compiled" if compiled.returncode == 0 else f"compiled with errors ({compiled.stdout[-300:]!r})"
    return f"daemon and baselines run with {how}; their -OO bytecode without column tables {said}"


SKIPPED = r"/(test|tests|idlelib|lib2to3)/"  # the standard library's own tests (some deliberately do not compile)


def machine() -> str:
    """What the figures were measured on; the load says how much other work shared the cores."""
    load = Path("/proc/loadavg").read_text().split()[:3]
    return f"{os.cpu_count()} cores, load average {' '.join(load)} (1, 5, 15 min) at the start"


def filesystem(path: Path) -> str:
    """The type of the filesystem `path` is on (from /proc/mounts): tmpfs makes fsync free, a disk does not."""
    best, kind = "", "?"
    target = str(path.resolve())
    for line in Path("/proc/mounts").read_text().splitlines():
        _dev, mount, fstype, *_ = line.split()
        if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
            best, kind = mount, fstype
    return kind


def journal_commit_ms(directory: Path, commits: int = 200, anchored: bool = False) -> tuple[float, float]:
    """p50 and p99 of one Journal.append (one event, its own transaction, synchronous=FULL) in `directory`:
    what the disk charges for each durable step; `anchored` adds the anchor file's fdatasync that the journal's
    writer thread does before any of a commit's events may leave (Journal.make_durable, docs/journal.md)."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        journal = Journal(Path(tmp) / "commit.sqlite", "bench", uuid.uuid4().hex)
        samples = []
        try:
            for i in range(commits):
                start = time.perf_counter()
                journal.append([DomainEvent("bench.commit", "bench", {"i": i})], datetime.now(UTC))
                if anchored:
                    journal.make_durable()
                samples.append((time.perf_counter() - start) * 1000)
        finally:
            journal.close()
    return statistics.median(samples), percentile(samples, 99)


# -- the table ---------------------------------------------------------------------------------------------------


def seven_seat_config(table_id: str | None = None) -> TableConfig:
    """bench/seven-seats.toml (Let It Ride, 643a.2(a): seven betting positions) under a fresh table_id, so the
    retained topics of one run never meet another's."""
    return table_config(SEVEN_SEATS, table_id)


def table_config(path: Path, table_id: str | None = None) -> TableConfig:
    """The table config at `path` under a fresh table_id (as seven_seat_config)."""
    data = load_config(path).model_dump()
    data["table_id"] = table_id or f"bench-{uuid.uuid4().hex[:8]}"
    return TableConfig.model_validate(data)


def write_config(config: TableConfig, ports: dict[str, str], directory: Path) -> Path:
    """The config as TOML for a daemon subprocess, each device's port pointing at its simulator."""
    data = config.model_dump(mode="json", exclude_none=True)
    devices = data["devices"]
    for key in ("shuffler", "shoe", "dealer_panel"):
        devices[key]["port"] = ports[key]
    for station in devices["wager_stations"]:
        station["port"] = ports[f"wager_station_{station['seat']}"]
    if WAGER_BUS_ID in devices:  # the stations on one multi-drop line (bench/restart.py --bus)
        devices[WAGER_BUS_ID]["port"] = ports[WAGER_BUS_ID]
    if "progressive_sign" in devices:  # configs/demo.toml's (bench/restart.py --config)
        devices["progressive_sign"]["port"] = ports["progressive_sign"]
    path = directory / f"{config.table_id}.toml"
    path.write_text(_toml(data))
    return path


def spawn_service(checkout: Path, service: str, config: Path, out: IO[bytes]) -> subprocess.Popen[bytes]:
    """`checkout`'s `tablectl floor` (or `link`, `service`) on `config`, its JSON log to `out`: the service benches
    paired against a baseline checkout run each tree's own code in its own venv."""
    return subprocess.Popen(
        [str(checkout / ".venv/bin/python"), "-m", "controller.cli", "--log-json", service, "--config", str(config)],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=checkout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def print_medians(times: dict[str, list[float]], ratios: list[float]) -> None:
    """The closing line of a bench paired against a baseline checkout: each side's median, their ratio, the load."""
    print(
        f"median: baseline {statistics.median(times['baseline']):.2f} s, this {statistics.median(times['this']):.2f} s,"
        f" this/baseline {statistics.median(ratios):.3f}; load average {Path('/proc/loadavg').read_text().split()[0]}"
        " at the end"
    )


def _toml(data: dict[str, Any]) -> str:
    # The configs are flat tables and arrays of flat tables: enough TOML for them without another dependency.
    def value(v: Any) -> str:
        return "[" + ", ".join(value(x) for x in v) + "]" if isinstance(v, list) else json.dumps(v)

    lines: list[str] = []

    def table(name: str, body: dict[str, Any], array: bool = False) -> None:
        lines.append(f"[[{name}]]" if array else f"[{name}]")
        nested = []
        for k, v in body.items():
            if isinstance(v, dict):
                nested.append((f"{name}.{k}", v, False))
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                nested.extend((f"{name}.{k}", x, True) for x in v)
            elif v != []:
                lines.append(f"{k} = {value(v)}")
        for sub, sub_body, sub_array in nested:
            table(sub, sub_body, sub_array)

    for k, v in data.items():
        if not isinstance(v, dict):
            lines.append(f"{k} = {value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            table(k, v)
    return "\n".join(lines) + "\n"


# -- the broker --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def mosquitto(extra: str = "") -> Iterator[str]:
    """A private mosquitto on a free loopback port for the bench's duration, started as the demo starts its own
    (floor/cli/private.py: the shipped packet limit, no Nagle stalls, a taken port replaced); yields its mqtt:// URL.
    `extra`: more config lines. Its per-client queue is raised as systemd/mosquitto/mosquitto.conf does: a burst is
    queued, not dropped."""
    with tempfile.TemporaryDirectory(prefix="bench-mosquitto-") as tmp:
        leash = Leash.mine()  # should the bench be killed, it stops the broker and deletes the dir (leash/)
        leash.own(Path(tmp))
        try:
            proc, url = start_mosquitto(Path(tmp), max_queued_messages=100_000, extra=extra)
        except UsageError as err:
            sys.exit(f"bench: {err}")
        try:
            yield url
        finally:
            stop_mosquitto(proc)
            leash.disown(Path(tmp))


class Subscriber:
    """The subscriber process (bench/subscriber.py), read by a thread: `.lines` gets (monotonic ns, topic,
    payload) for every message, in arrival order; `.arrived` (topic, payload) -> the kernel's monotonic ns of the
    packet's arrival on the subscriber's socket (bench/subscriber.py), when the kernel stamped it."""

    def __init__(self, url: str, topics: Sequence[str]) -> None:
        host, port = url.removeprefix("mqtt://").rsplit(":", 1)
        self.proc = subprocess.Popen(
            [sys.executable, str(SUBSCRIBER), host, port, *topics],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[tuple[int, str, str]] = queue.Queue()
        self.arrived: dict[tuple[str, str], int] = {}
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.startswith("ready"):
                    ready.set()
                    continue
                ns, arrived, topic, payload = line.rstrip("\n").split(" ", 3)
                if int(arrived):
                    self.arrived[(topic, payload)] = int(arrived)
                self.lines.put((int(ns), topic, payload))

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(15):
            self.close()
            sys.exit("bench: the subscriber process did not subscribe within 15 s")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
