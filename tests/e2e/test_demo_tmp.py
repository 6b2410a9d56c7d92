"""`tablectl demo` leaves nothing in the temp dir: its simulators' symlinks and its floorperson's replay file
(commands.sqlite with its -wal and -shm) go when it ends, however it ends.

On main the demo left a `tablectl-demo-*` dir (a TemporaryDirectory never closed, its SQLite file still open) and one
`tablectl-sim-*` dir per simulated device: 4,852 and 53,524 of them in one machine's /tmp after a few days."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from floor.leash import sweep
from tests.conftest import Mosquitto
from tests.e2e.conftest import table_config


def demo(tmp: Path, broker: str, *args: str) -> subprocess.Popen[str]:
    """`tablectl demo` (Mississippi Stud with progressives: a simulated floorperson signs jackpot validations, so the
    replay file is made) with `tmp` as its only temp dir; a table of its own, so no other test's retained anchor on
    the shared broker makes its fresh journal look rolled back."""
    table_id = "t" + uuid.uuid4().hex[:10]
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


def test_a_killed_demo_leaves_one_dir_that_the_sweep_takes(mosquitto: Mosquitto, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = demo(tmp, mosquitto.url)  # plays until stopped
    try:
        assert proc.stdout is not None
        # Its first round is on the line: the simulators and the signers' replay file are all made by then.
        while "round 1 complete" not in proc.stdout.readline():
            assert proc.poll() is None, (tmp.parent / "stderr.log").read_text()
        (top,) = tmp.iterdir()
        assert top.name.startswith("tablectl-sim-")
        assert [p.name for p in top.rglob("commands.sqlite")] == ["commands.sqlite"]
        proc.send_signal(signal.SIGKILL)  # an operator's kill -9: no finally, no exit handler
        proc.wait(timeout=30)
        assert top.is_dir()
        assert len(sweep(tmp)) == 1
        assert list(tmp.iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
