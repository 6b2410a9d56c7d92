"""What the sweep at a simulator process's start costs (drivers/sim/scratch.py: `tablectl demo`, `tablectl simulate`),
against loading the demo's code, which every `tablectl demo` start pays anyway.

  load the demo (baseline)  a fresh interpreter importing controller.cli.demo (bytecode warm), as `tablectl demo` does
  sweep, nothing stale      leash.sweep(SIM_PATTERNS) over a temp dir of --entries unrelated entries and --live dirs
                            of our kind whose owner runs: what every start pays
  sweep after a kill        the same with one dir a SIGKILLed demo left (a lease, a replay file): read /proc once,
                            delete it; what the first start after a kill pays

Each `--repeat` times over a private temp dir (the machine's own /tmp is not touched); medians and the ratios to the
baseline are printed.

    .venv/bin/python bench/sim_sweep.py [--repeat N] [--entries N] [--live N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchlib import machine, progress

from leash import LEASH_FILE, SIM_PATTERNS, start_time, sweep


def median_ms(work: Callable[[], object], repeat: int, before: Callable[[], object] = lambda: None) -> float:
    samples = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        work()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--entries", type=int, default=1500, help="unrelated entries in the temp dir (a busy /tmp)")
    ap.add_argument("--live", type=int, default=20, help="dirs of our kind whose owner runs (other simulators)")
    args = ap.parse_args()
    me, started = os.getpid(), start_time(os.getpid())
    assert started is not None
    with tempfile.TemporaryDirectory(prefix="bench-sim-sweep-") as tmp:
        root = Path(tmp)
        for i in range(args.entries):
            (root / f"pip-unpack-{i}").mkdir()
        for i in range(args.live):
            d = root / f"tablectl-sim-live{i}"
            (d / "shoe-x").mkdir(parents=True)
            (d / LEASH_FILE).write_text(f"owner {me} {started}\n")
        progress(f"{machine()}; {args.entries} entries, {args.live} live dirs")

        load = median_ms(
            lambda: subprocess.run([sys.executable, "-c", "import controller.cli.demo"], check=True), args.repeat
        )
        progress(f"load the demo (baseline): {load:.1f} ms")

        def clean() -> None:
            assert sweep(root, SIM_PATTERNS) == []

        nothing = median_ms(clean, args.repeat)
        progress(f"sweep, nothing stale: {nothing:.2f} ms")

        def plant() -> None:
            d = root / "tablectl-sim-killed"
            (d / "demo-signers-x").mkdir(parents=True)
            (d / "demo-signers-x" / "commands.sqlite").write_bytes(b"\0" * 65536)
            (d / LEASH_FILE).write_text("owner 999999999 1\n")  # above pid_max: gone

        def killed() -> None:
            assert len(sweep(root, SIM_PATTERNS)) == 1

        after = median_ms(killed, args.repeat, before=plant)
        progress(f"sweep after a kill: {after:.2f} ms")
    print(f"load the demo (baseline)  {load:8.1f} ms")
    print(f"sweep, nothing stale      {nothing:8.2f} ms  {nothing / load:.4f} x baseline")
    print(f"sweep after a kill        {after:8.2f} ms  {after / load:.4f} x baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
