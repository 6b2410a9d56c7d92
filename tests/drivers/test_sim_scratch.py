"""The simulators leave nothing in the temp dir: not after a stop, a replug, a start that fails midway, a second
start, a stop that fails for one device, an exit with simulators still running, or a SIGKILL (the sweep takes that).

Each test runs with a private temp dir (tempfile.tempdir) and a fresh per-process scratch state, so what it counts is
its own while other runs share /tmp. On main, every simulator made a `tablectl-sim-*` dir that a stop left when it
failed, a second start orphaned, and a killed or careless run never removed: 53,524 of them in one machine's /tmp."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import leash
from drivers.sim import scratch
from drivers.sim.alpha_sign import AlphaSignSim
from drivers.sim.dealer_panel import DealerPanelSim
from drivers.sim.shoe import ShoeSim
from drivers.sim.table import SimulatedTable
from drivers.sim.wager_bus import WagerBusSim
from leash import LEASH_FILE, SIM_PATTERNS, start_time, sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    monkeypatch.setattr(scratch, "_dir", scratch._ProcessDir())
    yield private


def owner_line(path: Path) -> list[str]:
    return (path / ".leash").read_text().split()


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


class PlugFails(DealerPanelSim):
    """A device whose pty is made but whose plugging then fails (a fault no real pty gives on demand)."""

    async def _plug(self) -> None:
        await super()._plug()
        raise OSError("simulated: the device's line could not be set up")


class StopFails(ShoeSim):
    """A device whose stop fails after closing its line (as a cancelled chore's error would surface)."""

    async def stop(self) -> None:
        await super().stop()
        raise RuntimeError("simulated: the shoe's stop failed")


async def test_a_table_uses_one_dir_and_a_stop_leaves_none(tmp: Path) -> None:
    table = SimulatedTable(seats=3, rng=random.Random(1), sign=True, terminals=True)
    async with table:
        # Ten devices, one top-level dir, owned by this process in the leash's format (leash.own_dir).
        (top,) = (p for p in listing(tmp) if "/" not in p)
        assert top.startswith("tablectl-sim-")
        assert scratch.process_dir() == tmp / top
        assert owner_line(tmp / top)[:2] == ["owner", str(os.getpid())]
        assert len(table.ports) == 10
        assert {str(Path(port).relative_to(tmp)).split("/")[0] for port in table.ports.values()} == {top}
        assert all(f"{p}" in listing(tmp) for p in (Path(port).relative_to(tmp) for port in table.ports.values()))
    assert listing(tmp) == []
    assert scratch.process_dir() is None


async def test_replugs_keep_one_name_and_a_stop_removes_it(tmp: Path) -> None:
    table = SimulatedTable(seats=2, rng=random.Random(2))
    bus = WagerBusSim("wager_bus", seats=(1, 2))
    sign = AlphaSignSim("alpha_sign")
    async with table:
        await bus.start()
        await sign.start()
        before = listing(tmp)
        for _ in range(3):
            await table.shoe.replug()
            await table.stations[1].replug()
            await bus.replug()
            await sign.replug(power_lost=True)
        # Each replug points the same name at a new pty: no dir more, none less.
        assert listing(tmp) == before
        await bus.stop()
        await sign.stop()
    assert listing(tmp) == []


async def test_a_start_that_fails_midway_leaves_no_dir_and_no_open_pty(tmp: Path) -> None:
    table = SimulatedTable(seats=2, rng=random.Random(3))
    table.panel = PlugFails("dealer_panel")
    with pytest.raises(OSError, match="could not be set up"):
        async with table:
            pass
    assert not any(device.plugged for device in table.devices)
    assert listing(tmp) == []

    alone = PlugFails("dealer_panel")
    with pytest.raises(OSError, match="could not be set up"):
        await alone.start()
    assert not alone.plugged
    assert listing(tmp) == []


async def test_a_second_start_and_a_failing_stop_leave_no_dir(tmp: Path) -> None:
    shoe = ShoeSim("shoe")
    await shoe.start()
    port = shoe.port
    await shoe.start()  # on main: a second dir, the first orphaned
    assert shoe.port == port
    await shoe.stop()
    assert listing(tmp) == []

    table = SimulatedTable(seats=2, rng=random.Random(4))
    table.shoe = StopFails("shoe")
    with pytest.raises(RuntimeError, match="stop failed"):
        async with table:
            pass
    # The devices after the shoe were stopped all the same.
    assert not any(device.plugged for device in table.devices)
    assert listing(tmp) == []


SIMS_THEN_WAIT = textwrap.dedent(
    """
    import asyncio, random, sys
    from drivers.sim import scratch
    from drivers.sim.table import SimulatedTable

    async def main() -> None:
        table = SimulatedTable(seats=2, rng=random.Random(5))
        await table.start()  # never stopped: {end}
        print(scratch.process_dir(), flush=True)
        {wait}

    asyncio.run(main())
    """
)


def run_sims(tmp: Path, end: str, wait: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SIMS_THEN_WAIT.format(end=end, wait=wait)],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_process_that_exits_without_stopping_its_simulators_leaves_no_dir(tmp: Path) -> None:
    proc = run_sims(tmp, "the exit handler removes the dir", "pass")
    out, _ = proc.communicate(timeout=60)  # stdin closed
    assert proc.returncode == 0
    assert out.startswith(str(tmp))
    assert listing(tmp) == []


def test_a_killed_process_dir_is_swept_and_a_live_ones_is_not(tmp: Path) -> None:
    killed = run_sims(tmp, "SIGKILLed", "await asyncio.sleep(3600)")
    live = run_sims(tmp, "still running", "sys.stdin.read()")
    try:
        assert killed.stdout is not None and live.stdout is not None
        killed_dir, live_dir = Path(killed.stdout.readline().strip()), Path(live.stdout.readline().strip())
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        assert killed_dir.is_dir()  # no exit handler ran

        swept = sweep(tmp)
        assert [line.split(":")[0] for line in swept] == [str(killed_dir)]
        assert not killed_dir.exists()
        assert live_dir.is_dir()
    finally:
        for proc in (killed, live):
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)


def plant(tmp: Path, name: str, owner: str) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "shoe-x").mkdir()
    (d / LEASH_FILE).write_text(owner)
    return d


def test_the_first_dir_a_process_makes_sweeps_dead_owners_dirs_of_its_kind_and_no_other(tmp: Path) -> None:
    """What `tablectl demo` and `tablectl simulate` do at start: the killed, the recycled pid (it runs, but is another
    process: another start time) and an old simulator's idle unowned dir go; a live owner's, a just-made unowned one
    (a mkdtemp before its owner line) and a kind not ours (a cluster's: floor.pgcluster sweeps those) stay."""
    assert f"{scratch.PREFIX}*" in SIM_PATTERNS
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(done.stdout)  # exited and reaped: its pid names no process now, or another one
    me, started = os.getpid(), start_time(os.getpid())
    assert started is not None
    killed = plant(tmp, "tablectl-sim-killed", f"owner {gone} 1\n")
    recycled = plant(tmp, "tablectl-sim-recycled", f"owner {me} {started - 1}\n")
    live = plant(tmp, "tablectl-sim-live", f"owner {me} {started}\n")
    old = tmp / "tablectl-alpha-old"
    old.mkdir()
    os.utime(old, (0, 0))  # untouched since 1970: long past leash.LEGACY_IDLE_S
    fresh = tmp / "tablectl-sim-fresh"
    fresh.mkdir()
    cluster = plant(tmp, "tablectl-pg-killed", f"owner {gone} 1\n")

    leased = scratch.lease("shoe")
    try:
        assert leased.parent.name.startswith(scratch.PREFIX)
        assert sorted(p.name for p in tmp.iterdir()) == sorted(
            [live.name, fresh.name, cluster.name, leased.parent.name]
        )
        assert not killed.exists() and not recycled.exists() and not old.exists()
        assert sorted(p.name for p in live.iterdir()) == [LEASH_FILE, "shoe-x"]
        assert killed.name not in str(leash.sweep_stale(SIM_PATTERNS))  # once per process and temp dir
        (tmp / killed.name).mkdir()
        second = scratch.lease("panel")  # the process's dir exists: no second sweep
        assert (tmp / killed.name).is_dir()
        scratch.release(second)
    finally:
        scratch.release(leased)
    assert sorted(p.name for p in tmp.iterdir()) == sorted([live.name, fresh.name, cluster.name, killed.name])
