"""`tablectl demo` leaves nothing in the temp dir: its simulators' symlinks and its floorperson's replay file
(commands.sqlite with its -wal and -shm) go when it ends, however it ends.

On main the demo left a `tablectl-demo-*` dir (a TemporaryDirectory never closed, its SQLite file still open) and one
`tablectl-sim-*` dir per simulated device: 4,852 and 53,524 of them in one machine's /tmp after a few days."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from leash import LEASH_FILE, owner_of, start_time
from tests.broker import Mosquitto, fresh_id
from tests.e2e.conftest import table_config


def demo(tmp: Path, broker: str, *args: str) -> subprocess.Popen[str]:
    """`tablectl demo` (Mississippi Stud with progressives: a simulated floorperson signs jackpot validations, so the
    replay file is made) with `tmp` as its only temp dir; a table of its own, so no other test's retained anchor on
    the shared broker makes its fresh journal look rolled back."""
    table_id = fresh_id()
    config = table_config(tmp.parent, table_id, f"tmp{table_id}")
    # stderr to a file, read after: a pipe nobody drains would stall the demo
    with (tmp.parent / "stderr.log").open("w") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "demo",
                "--seed",
                "3",
                "--pace",
                "0",
                "--broker",
                broker,
                *args,
                "--config",
                str(config),
            ],
            env={**os.environ, "TMPDIR": str(tmp), "XDG_STATE_HOME": str(tmp.parent / "state")},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )


def test_a_demo_round_leaves_the_temp_dir_empty(mosquitto: Mosquitto, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = demo(tmp, mosquitto.url, "--rounds", "1")
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (tmp.parent / "stderr.log").read_text()
    assert "round 1 complete" in out
    assert sorted(p.name for p in tmp.rglob("*")) == []


def first_round(proc: subprocess.Popen[str], tmp: Path) -> None:
    """Block until the demo has played its first round: its simulators and signers' replay file are all made then."""
    assert proc.stdout is not None
    while "round 1 complete" not in proc.stdout.readline():
        assert proc.poll() is None, (tmp.parent / "stderr.log").read_text()


def test_a_killed_demos_dir_is_gone_once_the_next_demo_starts_and_a_live_owners_is_not(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """A dealer's PC runs no sweep of its own: the next `tablectl demo` takes what a kill -9 left (drivers/sim/
    scratch.py, at its first simulator), and never a dir whose owner runs, judged by pid and start time together."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    first = demo(tmp, mosquitto.url)  # plays until stopped
    second: subprocess.Popen[str] | None = None
    try:
        first_round(first, tmp)
        (killed,) = tmp.iterdir()
        assert killed.name.startswith("tablectl-sim-")
        assert [p.name for p in killed.rglob("commands.sqlite")] == ["commands.sqlite"]
        first.send_signal(signal.SIGKILL)  # an operator's kill -9: no finally, no exit handler
        first.wait(timeout=30)
        assert killed.is_dir()
        # Owned by a live process that is not the demo (this test's), and by this pid as if recycled: the pid runs,
        # but it is another process than the one that wrote the line (another start time).
        me, started = os.getpid(), start_time(os.getpid())
        assert started is not None
        live, recycled = tmp / "tablectl-sim-live", tmp / "tablectl-sim-recycled"
        for d, start in ((live, started), (recycled, started - 1)):
            d.mkdir()
            (d / "demo-signers-x").mkdir()
            (d / LEASH_FILE).write_text(f"owner {me} {start}\n")
        second = demo(tmp, mosquitto.url)
        first_round(second, tmp)
        (running,) = (d for d in tmp.iterdir() if d not in (killed, live, recycled))
        assert owner_of(running) == (second.pid, start_time(second.pid))
        assert not killed.exists()
        assert not recycled.exists()
        assert sorted(p.name for p in live.iterdir()) == [LEASH_FILE, "demo-signers-x"]
        swept = (tmp.parent / "stderr.log").read_text()
        assert str(killed) in swept and str(recycled) in swept and str(live) not in swept
        second.send_signal(signal.SIGINT)  # closes the table after the round in progress
        second.communicate(timeout=60)
        assert second.returncode == 0, (tmp.parent / "stderr.log").read_text()
        assert sorted(p.name for p in tmp.iterdir()) == [live.name]
    finally:
        for proc in (first, second):
            if proc is not None:
                if proc.poll() is None:
                    proc.kill()
                proc.communicate(timeout=30)
