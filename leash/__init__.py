"""Servers and temp dirs on a leash: every PostgreSQL and mosquitto the tests, benches and demos start, and every
temp dir the project makes, dies with the process that started it, even when that process is SIGKILLed.

A package of its own, neither table side nor floor side, and standard library only: the table side (drivers/sim's
scratch dir, under `tablectl demo` and `tablectl simulate` on a dealer's PC) and the floor (its clusters) both import
it, so the `.leash` owner line has one writer and one reader (`own_dir`, `owner_of`); and the watchdog below runs this
very file as a script with `python -I`, by whatever interpreter started it (dev.py's system python has no venv).
import-linter keeps it so (pyproject.toml: it imports none of the project's packages and no third-party library).

Why a watchdog process and a pipe, not prctl(PR_SET_PDEATHSIG) on the server: the parent-death signal fires when the
*thread* that forked exits (a cluster started from a worker thread, asyncio.to_thread or a console-in-a-thread
fixture, would be killed under the test that still uses it), it is cleared when the server changes its user (a root
mosquitto drops to `mosquitto`), and it cannot delete a data dir. Here each owning process starts one small watchdog
(this file run as a script, stdlib only, `python -I`), in a session of its own so a terminal's Ctrl-C does not reach
it, and keeps the write end of a pipe to it. The kernel closes that pipe however the owner ends (return, exception,
Ctrl-C twice, SIGKILL, a timeout's kill): at EOF the watchdog stops every server it holds (PostgreSQL with SIGQUIT,
an immediate shutdown whose postmaster takes its backends with it; mosquitto with SIGTERM; SIGKILL after 10 s),
then removes the dirs it was given. A server is named by pid and start time (/proc/PID/stat), so a recycled pid is
never signalled.

The backstop for what the watchdog cannot cover (the watchdog itself SIGKILLed, the machine rebooted, a process with
no watchdog, as the simulators' one dir per process, drivers/sim/scratch.py), or a run from before this file: each
owned dir holds a `.leash` file naming its owner and its servers, and `sweep()` stops the servers of a dir whose
owner is gone and deletes it; a dir whose owner is alive (same pid, same start time) is never touched. It runs at
the first cluster a process makes (floor.pgcluster), at the first simulator dir a process makes (its own kind,
SIM_PATTERNS: so `tablectl demo` and `tablectl simulate` clean up after a killed predecessor), by the mosquitto
fixture, and by hand: `python3 -m leash --sweep` (or `python3 leash/__init__.py --sweep` without the venv).

Protocol on the watchdog's stdin, one line each: `hold PID START SIG`, `drop PID`, `dir PATH`, `undir PATH`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

LEASH_FILE = ".leash"
# The simulators' one dir per process (drivers/sim/scratch.py, owned with own_dir), and what older simulators, demos
# and `tablectl simulate` made one per device or run (`tablectl-alpha-*`, `tablectl-demo-*`, `tablectl-simulate-*`:
# no owner recorded, so swept once idle). What a process that makes simulator dirs sweeps at its first one.
SIM_PATTERNS = ("tablectl-sim-*", "tablectl-alpha-*", "tablectl-demo-*", "tablectl-simulate-*")
# The temp dirs the project names: floor.pgcluster's clusters and standbys, the floor's and the linked demo's
# workdirs (their broker's config), dev.py demo's broker, the benches' broker; then the simulators' (SIM_PATTERNS).
PATTERNS = (
    "tablectl-pg-*",
    "tablectl-floor-demo-*",
    "tablectl-linked-demo-*",
    "tablectl-demo-broker-*",
    "bench-mosquitto-*",
    # the suite's brokers (tests/conftest.py's fixture, tests/mqtt/test_broker_acl.py's TLS one) and the fault
    # campaign's dir (its broker and daemons): made by Leash.mkdtemp, so never outside this list
    "tablectl-test-broker-*",
    "tablectl-faults-*",
    # a private TMPDIR a test gives a run it kills (tests/floor/test_leash.py): no other process's sweep gets in its way
    "tablectl-tmp-*",
    *SIM_PATTERNS,
)
# A dir from before the `.leash` file (no owner recorded) with no server running is swept once untouched this long:
# long past any initdb, pg_basebackup or stopped-for-a-test window of an older checkout's run.
LEGACY_IDLE_S = 600.0
STOP_TIMEOUT_S = 10.0


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None when it is gone or a
    zombie (it has exited; only its parent's wait is missing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def alive(pid: int, start: int) -> bool:
    return pid > 0 and start_time(pid) == start


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def stop(pid: int, start: int, sig: int, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Signal the process if it is still the one started at `start`, wait for it to end (SIGKILL after `timeout`);
    True when it was running."""
    if not alive(pid, start):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    for deadline, then in ((timeout, signal.SIGKILL), (5.0, None)):
        # Not our child (its owner is gone or elsewhere): nothing to wait on but /proc.
        end = time.monotonic() + deadline
        while alive(pid, start) and time.monotonic() < end:
            time.sleep(0.02)
        if not alive(pid, start) or then is None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, then)
    return True


def _processes() -> list[tuple[int, int, list[bytes]]]:
    """(pid, start, argv) of every process now: read once per sweep, not once per dir (a machine with thousands of
    dirs from before `.leash` would otherwise read all of /proc thousands of times)."""
    found = []
    for entry in os.scandir("/proc"):
        if not (entry.name.isascii() and entry.name.isdigit()):
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        start = start_time(int(entry.name))
        if start is not None:
            found.append((int(entry.name), start, argv))
    return found


def _servers_in(path: Path, processes: list[tuple[int, int, list[bytes]]] | None = None) -> list[tuple[int, int, int]]:
    """(pid, start, signal) of each server recorded in the dir's `.leash` file, and of each process whose command line
    names a file in the dir (a postmaster's -D, a mosquitto's -c: how a run from before `.leash` is found); SIGQUIT
    for a postmaster (an immediate shutdown that takes its backends with it), SIGTERM for the rest."""
    found: dict[int, tuple[int, int, int]] = {}
    with contextlib.suppress(OSError):
        for line in (path / LEASH_FILE).read_text().splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[0] == "server" and all(p.isascii() and p.isdigit() for p in parts[1:]):
                found[int(parts[1])] = (int(parts[1]), int(parts[2]), int(parts[3]))
    inside = os.fsencode(f"{path}{os.sep}")
    for pid, start, argv in _processes() if processes is None else processes:
        if any(arg.startswith(inside) for arg in argv):
            sig = signal.SIGQUIT if os.path.basename(argv[0]) == b"postgres" else signal.SIGTERM
            found.setdefault(pid, (pid, start, int(sig)))
    return list(found.values())


def own_dir(path: Path, pid: int | None = None) -> bool:
    """Write the dir's `.leash` owner line, `owner PID START` (this process by default): the sweep leaves the dir
    while that process runs and deletes it once it is gone. False when the process is gone already (nothing written)."""
    pid = os.getpid() if pid is None else pid
    start = start_time(pid)
    if start is None:
        return False
    (path / LEASH_FILE).write_text(f"owner {pid} {start}\n")
    return True


def owner_of(path: Path) -> tuple[int, int] | None:
    """(pid, start time) of the dir's owner, as own_dir wrote it; None when no owner is recorded."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        first = (path / LEASH_FILE).read_text().splitlines()[0].split()
        if first[0] == "owner":
            return int(first[1]), int(first[2])
    return None


def release_dir(path: Path, processes: list[tuple[int, int, list[bytes]]] | None = None) -> list[int]:
    """Stop the servers of the dir and delete it; the pids that were running."""
    stopped = [pid for pid, start, sig in _servers_in(path, processes) if stop(pid, start, sig)]
    shutil.rmtree(path, ignore_errors=True)
    return stopped


def sweep(tmp: Path | None = None, patterns: Iterable[str] = PATTERNS) -> list[str]:
    """Stop and delete every project temp dir whose owner is gone; what was swept, one line each (for the log)."""
    swept: list[str] = []
    root = Path(tmp or tempfile.gettempdir())
    processes: list[tuple[int, int, list[bytes]]] | None = None
    # One listing of the temp dir for every pattern, not a glob each: this runs at the start of `tablectl demo`.
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return swept
    seen: set[str] = set()
    for pattern in patterns:
        for name in fnmatch.filter(names, pattern):
            path = root / name
            if name in seen or not path.is_dir() or path.is_symlink():
                continue
            seen.add(name)
            owner = owner_of(path)
            if owner is not None:
                if alive(*owner):
                    continue
                why = f"owner pid {owner[0]} is gone"
            else:
                processes = _processes() if processes is None else processes
                running = _servers_in(path, processes)
                if running:
                    # No owner recorded (a run from before .leash): the postmaster's parent started it; when that is
                    # gone the server was reparented to init or a subreaper.
                    parents = {_parent(pid) for pid, _, _ in running}
                    if all(p is not None and p > 1 and _is_python(p) for p in parents):
                        continue
                    why = "no owner recorded and its server is orphaned"
                else:
                    try:
                        # lstat: a simulator's symlink outlives the pty it named, and must not make its dir unsweepable.
                        idle = time.time() - max(p.lstat().st_mtime for p in (path, *path.iterdir()))
                    except OSError:
                        continue
                    if idle < LEGACY_IDLE_S:
                        continue
                    why = f"no owner recorded, no server running, untouched for {idle / 60:.0f} min"
            processes = _processes() if processes is None else processes
            stopped = release_dir(path, processes)
            swept.append(f"{path}: {why}; stopped server pid(s) {stopped or 'none'}; dir deleted")
    return swept


def _is_python(pid: int) -> bool:
    try:
        return b"python" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except (OSError, IndexError):
        return False


_swept: set[tuple[str, tuple[str, ...]]] = set()


def sweep_stale(patterns: Iterable[str] = PATTERNS, tmp: Path | None = None) -> list[str]:
    """sweep(), once per process for each temp dir and set of patterns (at its first cluster, its first simulator
    dir, the test session's broker): what was swept, for the caller's log (this package logs nothing itself: it is
    standard library only)."""
    key = (str(tmp or tempfile.gettempdir()), tuple(patterns))
    if key in _swept:
        return []
    _swept.add(key)
    return sweep(tmp, key[1])


class Leash:
    """The owner's end: one watchdog per process (a forked child gets its own), shared by its threads. What it holds
    is also kept here, so a watchdog that died (killed by hand) is replaced and told everything again."""

    _mine: Leash | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.held: dict[int, str] = {}
        self.dirs: set[str] = set()
        self._spawn()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        if self.proc.stdin is None:  # stdin=PIPE makes one
            raise OSError("the leash's keeper process started without a stdin pipe")
        self._stdin = self.proc.stdin

    @classmethod
    def mine(cls) -> Leash:
        with cls._lock:
            if cls._mine is None or cls._mine.pid != os.getpid():
                cls._mine = Leash()
            return cls._mine

    def _send(self, line: str) -> None:
        with self._lock:
            for _ in range(2):
                try:
                    self._stdin.write(line.encode() + b"\n")
                    self._stdin.flush()
                    return
                except (BrokenPipeError, ValueError):
                    self._spawn()
                    replay = [*self.held.values(), *(f"dir {d}" for d in self.dirs)]
                    self._stdin.write("".join(f"{r}\n" for r in replay).encode())

    def hold(self, pid: int, sig: int) -> None:
        """Stop `pid` (a child of ours, not yet waited for, so its pid is not recycled) with `sig` when we end."""
        start = start_time(pid)
        if start is None:
            return  # already ended
        self.held[pid] = f"hold {pid} {start} {int(sig)}"
        self._send(self.held[pid])

    def drop(self, pid: int) -> None:
        if self.held.pop(pid, None) is not None:
            self._send(f"drop {pid}")

    def own(self, path: Path) -> None:
        """Delete `path` (and stop the servers recorded in it) when we end; the sweep knows us as its owner."""
        own_dir(path, self.pid)
        self.dirs.add(str(path))
        self._send(f"dir {path}")

    def mkdtemp(self, prefix: str) -> Path:
        """A new temp dir owned by us (own()): deleted, its servers stopped, when we end, and swept should we and
        our watchdog both be killed. `prefix` must be one the sweep knows (PATTERNS), or the sweep never would."""
        if not any(fnmatch.fnmatchcase(f"{prefix}x", p) for p in PATTERNS):
            raise ValueError(f"temp dir prefix {prefix!r} is not one the sweep knows: add it to PATTERNS")
        path = Path(tempfile.mkdtemp(prefix=prefix))
        self.own(path)
        return path

    def release(self, path: Path) -> None:
        """Done with an owned dir: stop the servers still recorded in it, delete it, and tell the watchdog."""
        release_dir(path)
        self.disown(path)

    def note_server(self, path: Path, pid: int, sig: int) -> None:
        """Record a server running in `path`, for the sweep should this process and its watchdog both be gone."""
        with (path / LEASH_FILE).open("a") as f:
            f.write(f"server {pid} {start_time(pid)} {int(sig)}\n")

    def disown(self, path: Path) -> None:
        if str(path) in self.dirs:
            self.dirs.discard(str(path))
            self._send(f"undir {path}")


def _watch() -> None:
    """The watchdog: read the owner's lines until EOF, then stop what is held and delete the dirs."""
    for ignored in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(ignored, signal.SIG_IGN)
    held: dict[int, tuple[int, int]] = {}
    dirs: list[str] = []

    def release(*_: object) -> None:
        for pid, (start, sig) in held.items():
            stop(pid, start, sig)
        for d in dirs:
            release_dir(Path(d))
        os._exit(0)

    # Someone cleaning up with a plain kill gets the same: the servers are not left behind.
    signal.signal(signal.SIGTERM, release)
    for raw in sys.stdin.buffer:
        parts = raw.decode(errors="replace").split(" ", 1)
        verb, rest = parts[0].strip(), parts[1].rstrip("\n") if len(parts) > 1 else ""
        if verb == "hold":
            pid, start, sig = (int(x) for x in rest.split())
            held[pid] = (start, sig)
        elif verb == "drop":
            held.pop(int(rest), None)
        elif verb == "dir":
            dirs.append(rest)
        elif verb == "undir" and rest in dirs:
            dirs.remove(rest)
    release()


if __name__ == "__main__":
    if sys.argv[1:] == ["--sweep"]:
        for line in sweep():
            print(f"leash: swept {line}", file=sys.stderr)
    else:
        _watch()
