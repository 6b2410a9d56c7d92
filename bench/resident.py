"""What the daemon's resident memory is made of: `tablectl run` as bench/footprint.py runs it, looked at from inside.

Measured: the daemon of bench/footprint.py (seven-seat 643a table, simulated devices over real ptys, a private
mosquitto, a temporary journal), started under a small wrapper that, at the first round.completed and again at the
last, writes what the process holds: VmRSS and VmHWM, /proc/self/smaps (anonymous and each file), malloc's bytes in
use and free (mallinfo2), SQLite's own (sqlite3_memory_used), the pydantic models built and deferred and the
TypeAdapters, the threads, and the modules loaded with the size of their bytecode by package. With --trace,
tracemalloc runs from the interpreter's start and Python's allocations are summed by package (tracemalloc itself
adds about half again to RSS: read those figures as shares, not as the daemon's size).

Baseline: `python -c 'import controller.cli, controller.shell.runner'` (as bench/footprint.py's), its RSS; beside it
what the libraries alone hold (`python -c 'import pydantic.main, aiomqtt, structlog'`, rich hidden as controller.cli
hides it) and a bare interpreter.

With --tls the table connects as production's do, over TLS to the shipped broker config (bench/brokers.py).

    .venv/bin/python bench/resident.py [--rounds 40] [--trace] [--tls]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import benchlib
import brokers
import footprint
import procfs
from procfs import rss_mb

from controller.shell.logs import configure_logging

# Runs the daemon (as footprint.PROFILED does); SIGUSR1 and SIGUSR2 write OUT.1.json and OUT.2.json.
WRAP = (
    procfs.WRAP_ARGS
    + r"""
import collections, ctypes, gc, json, os, signal, threading, tracemalloc
if os.environ.get("RESIDENT_TRACE") == "1":
    tracemalloc.start()
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t)
                for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
def package(name):
    top = name.split(".")[0]
    return ".".join(name.split(".")[:2]) if top in ("controller", "drivers") else top
def where(filename):
    if filename.startswith("<frozen importlib"):
        return "code objects (imports)"
    for mark in ("site-packages/", "/controller/", "/drivers/", "/python3.11/"):
        if mark in filename:
            rest = filename.split(mark, 1)[1]
            head = rest.split("/")[0].removesuffix(".py")
            return {"/controller/": "controller." + head, "/drivers/": "drivers"}.get(mark, head)
    return filename
def report(n):
    def write(*_):
        info = {}
        for line in open("/proc/self/status"):
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                info[key] = int(value.split()[0])
        anon, files, name = 0, collections.Counter(), ""
        for line in open("/proc/self/smaps"):
            head = line.split()
            if not head[0].endswith(":"):
                name = head[5] if len(head) > 5 and head[5].startswith("/") else ""
            elif head[0] == "Rss:":
                if name:
                    files[name.rsplit("/", 1)[1]] += int(head[1])
                else:
                    anon += int(head[1])
        info["anonymous"], info["files"] = anon, files.most_common(8)
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        m = libc.mallinfo2()
        info["malloc"] = [(m.uordblks + m.hblkhd) // 1024, m.fordblks // 1024]
        sqlite = ctypes.CDLL("libsqlite3.so.0")
        sqlite.sqlite3_memory_used.restype = ctypes.c_int64
        info["sqlite"] = sqlite.sqlite3_memory_used() // 1024
        import pydantic, pydantic_core
        def below(c):
            for s in c.__subclasses__():
                yield s
                yield from below(s)
        built = sorted(c.__qualname__ for c in set(below(pydantic.BaseModel))
                       if isinstance(c.__dict__.get("__pydantic_validator__"), pydantic_core.SchemaValidator))
        info["models"] = [built, len(set(below(pydantic.BaseModel))) - len(built)]
        named = {f"{m}.{k}" for m, mod in list(sys.modules.items()) for k, v in list(vars(mod).items())
                 if isinstance(v, pydantic.TypeAdapter)}
        info["adapters"] = [sorted(named), sum(isinstance(o, pydantic.TypeAdapter) for o in gc.get_objects())]
        info["threads"] = [t.name for t in threading.enumerate()]
        code = collections.Counter()
        for name, mod in list(sys.modules.items()):
            cached = getattr(getattr(mod, "__spec__", None), "cached", None)
            if cached and os.path.exists(cached):
                code[package(name)] += os.path.getsize(cached) // 1024
        info["modules"] = [len(sys.modules), code.most_common(10)]
        if tracemalloc.is_tracing():
            by = collections.Counter()
            for s in tracemalloc.take_snapshot().statistics("filename"):
                by[where(s.traceback[0].filename)] += s.size // 1024
            info["traced"] = by.most_common(14)
        with open(f"{out}.{n}.json", "w") as f:
            json.dump(info, f)
    return write
signal.signal(signal.SIGUSR1, report(1))
signal.signal(signal.SIGUSR2, report(2))
"""
    + procfs.WRAP_RUN
)


def mb(kib: float) -> str:
    return f"{kib / 1024:.1f} MB"


def print_parts(label: str, info: dict[str, Any], base_rss: float) -> None:
    rss = info["VmRSS"] / 1024
    in_use, free = info["malloc"]
    print(f"{label}: RSS {rss:.1f} MB ({rss / base_rss:.2f}x the baseline), peak (VmHWM) {mb(info['VmHWM'])}")
    print(
        f"  anonymous {mb(info['anonymous'])}: malloc in use {mb(in_use)} (SQLite's own {mb(info['sqlite'])}), "
        f"malloc free but kept {mb(free)}, the rest {mb(info['anonymous'] - in_use - free)} (Python's object "
        "arenas, the threads' stacks)"
    )
    print("  files: " + ", ".join(f"{name} {mb(kib)}" for name, kib in info["files"]))
    built, deferred = info["models"]
    named, unnamed = info["adapters"]
    print(
        f"  pydantic: {len(built)} models built ({', '.join(built)}), {deferred} not built (defer_build); "
        f"TypeAdapters: {', '.join(named) or 'none'} at module level, {unnamed} more found by the collector"
    )
    count, code = info["modules"]
    print(f"  {count} modules; their bytecode files by package: " + ", ".join(f"{p} {kib} kB" for p, kib in code))
    print(f"  threads: {', '.join(info['threads'])}")
    if "traced" in info:
        print("  Python's allocations (tracemalloc, by the file that made them): " + ", ".join(
            f"{part} {mb(kib)}" for part, kib in info["traced"]))  # fmt: skip


# What the daemon's libraries alone hold: pydantic (the product's choice), aiomqtt (with paho, ssl and libcrypto) and
# structlog, imported by a bare interpreter, with `rich` hidden from structlog as controller.cli hides it (rich comes
# with the test extras only; structlog would load it and pygments, ~4.4 MB). What is above it is the table's own code
# and what it does (issue 19).
LIBRARIES = "pydantic.main, aiomqtt, structlog"
BASELINE = "controller.cli, controller.shell.runner"


async def import_baseline(modules: str = BASELINE, prelude: str = "") -> float:
    # It waits in signal.pause() until stop()'s SIGTERM: its stdin is /dev/null (procfs.spawn), so a read of it
    # returned at once and the probe exited as it said ready, its RSS read from a process ending or already gone.
    proc = await procfs.spawn(
        sys.executable,
        "-c",
        f"import signal, sys; {prelude}import {modules}; print('ready', flush=True); signal.pause()",
    )
    try:
        await procfs.wait_ready(proc, f"the import of {modules}")
        rss, _ = rss_mb(proc.pid)
    finally:
        await procfs.stop(proc)
    return rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trace", action="store_true", help="tracemalloc from the start (adds ~50%% to RSS)")
    ap.add_argument("--tls", action="store_true", help="the table over TLS, as production connects (bench/brokers.py)")
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds: at least 2 (the report is taken at the first round.completed and at the last)")
    configure_logging(json=False, level="warning")
    print(f"machine: {benchlib.machine()}; {benchlib.compile_bytecode()}")
    if args.trace:
        os.environ["RESIDENT_TRACE"] = "1"  # read by WRAP in the daemon, which inherits it
    config = benchlib.seven_seat_config()
    with (
        brokers.broker(args.tls, [config.table_id]) as broker,
        tempfile.TemporaryDirectory(prefix="bench-resident-") as tmp,
    ):
        out = Path(tmp) / "resident"
        benchlib.progress(f"daemon playing {args.rounds} rounds of a seven-seat 643a table, broker {broker.kind}")
        asyncio.run(footprint.measure(broker, config, args.rounds, 1.0, args.seed, Path(tmp), out, WRAP))
        base_rss = asyncio.run(import_baseline())
        libraries_rss = asyncio.run(import_baseline(LIBRARIES, "sys.modules['rich'] = None; "))
        bare_rss = asyncio.run(import_baseline("os"))
        first, last = (json.loads(Path(f"{out}.{n}.json").read_text()) for n in (1, 2))
    print(f"baseline `python -c 'import controller.cli, controller.shell.runner'`: RSS {base_rss:.1f} MB")
    print(
        f"  of which the libraries: `python -c 'import {LIBRARIES}'` (no rich) {libraries_rss:.1f} MB "
        f"({libraries_rss / base_rss:.2f}x; a bare interpreter {bare_rss:.1f} MB)"
    )
    if args.trace:
        print("(under tracemalloc: RSS figures inflated by its own bookkeeping)")
    print_parts("the daemon at its first round.completed", first, base_rss)
    print_parts(f"the daemon after {args.rounds} rounds", last, base_rss)
    return 0


if __name__ == "__main__":
    sys.exit(main())
