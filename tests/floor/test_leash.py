"""The servers a test run starts die with it, even SIGKILLed mid-test (leash/): a real pytest run, a real
PostgreSQL cluster (tests/floor's pg_cluster fixture), a real mosquitto (the suite's fixture) and the TLS mosquitto of
tests/mqtt/test_broker_acl.py (started outside that fixture), killed with SIGKILL.

Before the leash, the postmaster and the broker were reparented to PID 1 and kept running, their dirs in /tmp, run
after run. The second test is the backstop: the run and its watchdog both SIGKILLed leave the servers up, and the
next run's sweep stops them and deletes the dirs, never touching a dir whose owner is alive. Before, the brokers lived
in pytest's own tmp dir, which no sweep judges (and the TLS broker was on no leash at all): they outlived both."""

from __future__ import annotations

import fnmatch
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from floor.pgcluster import ClusterError, PgCluster
from leash import LEASH_FILE, PATTERNS, Leash, alive, sweep

pytestmark = pytest.mark.floor

ROOT = Path(__file__).resolve().parents[2]

# The run that is killed: it uses the suite's own fixtures, says what it started, and waits to be killed.
CHILD = """
import json, os, signal
from leash import LEASH_FILE, Leash, start_time
from tests.conftest import mosquitto  # the fixtures themselves
from tests.floor.conftest import pg_cluster
from tests.mqtt.test_broker_acl import broker  # the TLS broker of systemd/mosquitto/ as shipped

def test_waits_to_be_killed(pg_cluster, mosquitto, broker):
    recorded = [l.split() for l in (broker.dir / LEASH_FILE).read_text().splitlines()]
    secure = [int(l[1]) for l in recorded if l[0] == "server"]
    servers = [pg_cluster.proc.pid, mosquitto.proc.pid, *secure]
    dirs = [pg_cluster.base, mosquitto.config.parent, broker.dir]
    info = {"servers": [[pid, start_time(pid)] for pid in servers], "dirs": [str(d) for d in dirs],
            "leash": Leash.mine().proc.pid}
    print("READY " + json.dumps(info), flush=True)
    signal.pause()
"""


@dataclass
class Run:
    proc: subprocess.Popen[str]
    servers: list[tuple[int, int]]  # (pid, start time): the postmaster, the suite's broker, the TLS broker
    dirs: list[Path]  # the cluster's, the suite broker's, the TLS broker's
    leash: int


@pytest.fixture
def run_tmp() -> Iterator[Path]:
    """The killed run's TMPDIR, its own: every other process sweeps /tmp at its start (another xdist worker, a demo or
    a bench another test starts, a second checkout's suite), and one that ran between the kill and this test's sweep
    would take the killed run's dirs first (`len(swept) == 3` would see fewer). On the leash, and world-traversable,
    not in tmp_path (0700 root), so the unprivileged postgres account can reach the cluster inside."""
    private = Leash.mine().mkdtemp("tablectl-tmp-")
    private.chmod(0o755)
    yield private
    Leash.mine().release(private)  # with whatever server a failed test left in it


@contextmanager
def killable_run(tmp_path: Path, run_tmp: Path) -> Iterator[Run]:
    test = tmp_path / "test_killed_run.py"
    test.write_text(CHILD)
    log = (tmp_path / "run.log").open("w")
    argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(ROOT), str(test)]
    env = {**os.environ, "TMPDIR": str(run_tmp)}
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY "):
                info = json.loads(line.removeprefix("READY "))
                break
        else:
            raise AssertionError(f"the run ended before its servers started:\n{(tmp_path / 'run.log').read_text()}")
        servers = [(int(pid), int(start)) for pid, start in info["servers"]]
        yield Run(proc, servers, [Path(d) for d in info["dirs"]], int(info["leash"]))
    finally:
        proc.kill()
        proc.wait()
        log.close()


def wait_exit(pid: int, timeout: float = 60.0) -> None:
    """Block until `pid` (not our child) has exited: a pidfd turns readable then."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"pid {pid} still running after {timeout}s"
    finally:
        os.close(fd)


def test_a_sigkilled_run_leaves_no_server_and_no_dir(tmp_path: Path, run_tmp: Path) -> None:
    with killable_run(tmp_path, run_tmp) as run:
        assert all(alive(*s) for s in run.servers)
        leash = os.pidfd_open(run.leash)  # opened before the kill: the watchdog's pid cannot be mistaken after
        run.proc.kill()
        run.proc.wait()
        try:
            ready, _, _ = select.select([leash], [], [], 60)
        finally:
            os.close(leash)
        assert ready, "the watchdog did not finish within 60 s of its owner's SIGKILL"
    assert len(run.servers) == 3
    assert [s for s in run.servers if alive(*s)] == []  # the postmaster and both brokers: no longer running
    assert [d for d in run.dirs if d.exists()] == []


def test_what_a_killed_run_and_its_watchdog_leave_is_swept_at_the_next_start_and_a_live_runs_dir_is_not(
    tmp_path: Path, run_tmp: Path
) -> None:
    with killable_run(tmp_path, run_tmp) as run:
        # This run's dirs, each by a name the sweep knows (PATTERNS): other stale dirs on the machine are not this
        # test's to judge.
        only = [d.name for d in run.dirs]
        assert all(any(fnmatch.fnmatchcase(name, p) for p in PATTERNS) for name in only), only
        assert all(d.parent == run_tmp for d in run.dirs), run.dirs
        assert sweep(run_tmp, patterns=only) == []  # its owner is alive: left alone
        assert all(d.is_dir() for d in run.dirs) and all(alive(*s) for s in run.servers)
        for d in run.dirs:
            owner = (d / LEASH_FILE).read_text().split()[1]
            assert owner == str(run.proc.pid)
        os.kill(run.leash, signal.SIGKILL)
        wait_exit(run.leash)
        run.proc.kill()
        run.proc.wait()
    try:
        assert all(alive(*s) for s in run.servers), "with its watchdog gone too, nothing stopped them: the sweep must"
        swept = sweep(run_tmp, patterns=only)
        assert len(swept) == 3, swept
        for line, d, (pid, _) in zip(swept, run.dirs, run.servers, strict=True):  # swept in the order of `only`
            assert line.startswith(f"{d}: owner pid {run.proc.pid} is gone") and str(pid) in line, line
        assert [s for s in run.servers if alive(*s)] == []
        assert [d for d in run.dirs if d.exists()] == []
    finally:
        for pid, start in run.servers:  # should the sweep have missed one, it is not left running
            if alive(pid, start):
                os.kill(pid, signal.SIGKILL)


def test_a_standby_that_cannot_be_made_leaves_no_dir_and_its_primary_is_removed_whole() -> None:
    """The failing path of tests/link's pair fixture: pg_basebackup from a primary that is not running fails; before,
    the standby's half-made dir stayed in /tmp."""
    primary = PgCluster.create(durable=False)
    standby_dir = primary.base.parent / f"{primary.base.name}-standby1"
    try:
        with pytest.raises(ClusterError, match="pg_basebackup failed"):
            primary.add_standby("standby1", synchronous=True)
        assert not standby_dir.exists()
    finally:
        primary.remove()
    assert not primary.base.exists()


def test_every_test_broker_is_on_the_leash(tmp_path: Path) -> None:
    """tests/broker.py's Mosquitto takes only a dir the leash owns: before, four tests started brokers in pytest's
    own tmp dir (the demo floor's, the publisher's floor broker, the forged-table ACL broker, the quiet-logs one),
    which no sweep judges, so a run SIGKILLed with its watchdog left them running. A broker made with leashed() is
    recorded in its dir's .leash file, so the sweep finds it."""
    from tests.broker import Mosquitto, find_mosquitto, free_port

    binary = find_mosquitto()
    assert binary is not None, "mosquitto is not installed (python3 dev.py test installs it)"
    with pytest.raises(ValueError, match=r"is not on the leash.*Mosquitto\.leashed"):
        Mosquitto(binary, tmp_path, free_port())
    assert not (tmp_path / "mosquitto.conf").exists()
    broker = Mosquitto.leashed(binary)
    try:
        assert fnmatch.fnmatchcase(broker.config.parent.name, "tablectl-test-broker-*")
        assert any(fnmatch.fnmatchcase(broker.config.parent.name, p) for p in PATTERNS)
        broker.start()
        assert broker.proc is not None
        recorded = (broker.config.parent / LEASH_FILE).read_text().splitlines()
        assert recorded[0].split()[:2] == ["owner", str(os.getpid())]
        assert f"server {broker.proc.pid} " in "\n".join(recorded)
    finally:
        broker.close()
    assert not broker.config.parent.exists()
