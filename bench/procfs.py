"""What /proc says of a running process (its resident memory and parts, its main thread's CPU), and spawning one."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import benchlib

# How a wrapper run with `python -c WRAPPER ARG module args...` (footprint.PROFILED, resident.WRAP) starts and ends:
# its own argument off argv, then the daemon as `python -m` runs it. Its SystemExit, and so its exit status, goes
# through: a wrapper that swallowed it made a daemon that failed exit 0, and the bench went on with wrong figures.
WRAP_ARGS = """
import runpy, sys
out, module = sys.argv[1], sys.argv[2]
sys.argv = [module, *sys.argv[3:]]
"""
WRAP_RUN = """
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of the process in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024  # kB
    return fields["VmRSS"], fields["VmHWM"]


def main_thread_cpu(pid: int) -> float:
    """CPU seconds of the process's main thread alone (its event loop), from schedstat; 0 where there is none."""
    try:
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def resident_parts(pid: int) -> tuple[float, float, list[tuple[str, float]]]:
    """What the process's resident memory is, from /proc/<pid>/smaps: (anonymous MB: Python's objects in its arenas
    and malloc's heap, the threads' stacks and arenas; proportional set size MB: each shared page divided among the
    processes that map it; the file-backed mappings by file name, largest first, each in MB)."""
    anonymous, pss = 0, 0
    files: dict[str, int] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if not head[0].endswith(":"):  # a mapping's first line: address range, perms, offset, dev, inode[, path]
            name = head[5] if len(head) > 5 and head[5].startswith("/") else ""
        elif head[0] == "Rss:":
            kb = int(head[1])
            if name:
                files[name] = files.get(name, 0) + kb
            else:
                anonymous += kb
        elif head[0] == "Pss:":
            pss += int(head[1])
    ranked = sorted(((Path(f).name, kb / 1024) for f, kb in files.items()), key=lambda p: -p[1])
    return anonymous / 1024, pss / 1024, ranked


async def idle_cpu(pid: int, seconds: float) -> float:
    """Percent of one core the process used over `seconds` of wall time."""
    start_cpu, start = benchlib.cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)  # the measurement window itself, not synchronisation
    return (benchlib.cpu_seconds(pid) - start_cpu) / (time.monotonic() - start) * 100


# How much of a spawned process's stderr is kept for the report of its failure (exited() prints the last 2000
# characters). The rest is read and dropped as it comes.
TAIL_BYTES = 64 * 1024


@dataclass
class _Stderr:
    """A spawned process's stderr, read as it comes (its last TAIL_BYTES kept) by `drain`."""

    tail: bytearray = field(default_factory=bytearray)
    drain: asyncio.Task[None] | None = None

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(TAIL_BYTES):
            self.tail += chunk
            del self.tail[:-TAIL_BYTES]


_STDERR: weakref.WeakKeyDictionary[asyncio.subprocess.Process, _Stderr] = weakref.WeakKeyDictionary()


async def spawn(
    *args: str, env: dict[str, str] | None = None, stdout: int = asyncio.subprocess.PIPE, cwd: str | None = None
) -> asyncio.subprocess.Process:
    """Start `args` with its stderr read while it runs: a daemon that logs more than a pipe holds (64 KiB on Linux)
    before it is ready, or during the rounds, would block on its write if the bench read stderr only after its end,
    and the bench would hang or measure a stalled daemon. stderr_tail() gives the end of what it wrote."""
    proc = await asyncio.create_subprocess_exec(
        *args, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=stdout, stderr=asyncio.subprocess.PIPE, cwd=cwd
    )
    assert proc.stderr is not None
    err = _STDERR[proc] = _Stderr()
    err.drain = asyncio.create_task(err.read(proc.stderr))
    return proc


async def stderr_tail(proc: asyncio.subprocess.Process) -> str:
    """The end of what `proc` (started by spawn()) wrote to stderr: all of it once it has exited and its stderr is
    closed (waited for up to 5 s: a child of its own could hold it open), else what it has written so far."""
    err = _STDERR.get(proc)
    if err is None:
        return ""
    if proc.returncode is not None and err.drain is not None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await asyncio.shield(err.drain)
    return bytes(err.tail).decode(errors="replace")


async def stop(proc: asyncio.subprocess.Process, sig: int = signal.SIGTERM) -> None:
    if proc.returncode is None:
        proc.send_signal(sig)
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def exited(proc: asyncio.subprocess.Process, what: str) -> NoReturn:
    """Fail the bench as `proc` failed: with its exit status (128 + N for signal N, as a shell says it) and the end
    of its stderr, which says why. Called once it has exited."""
    code = proc.returncode if proc.returncode is not None else await proc.wait()
    err = await stderr_tail(proc)
    print(f"bench: {what} exited with {code}; the end of its stderr:\n{err[-2000:]}", file=sys.stderr, flush=True)
    raise SystemExit(code if code > 0 else 128 - code if code < 0 else 1)


async def wait_ready(proc: asyncio.subprocess.Process, what: str) -> None:
    assert proc.stdout is not None
    async with asyncio.timeout(30):
        line = await proc.stdout.readline()
    if not line.startswith(b"ready"):
        if not line:  # its stdout closed: it is ending, and its stderr says why
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await proc.wait()
        sys.exit(f"bench: {what} did not start: {line!r} {(await stderr_tail(proc))[-2000:]}")
