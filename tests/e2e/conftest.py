"""What the fault tests share: a small filesystem that fills up or turns read-only under a running daemon, and the
daemon itself (`tablectl demo` as a subprocess, its simulated devices and people in it)."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker import fresh_id

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


class SmallDisk:
    """A tmpfs of `size` mounted on `path`, as a table PC's full or failing disk: SQLite meets ENOSPC and EROFS
    exactly as on a real disk. Mounting needs root (CAP_SYS_ADMIN); where the machine refuses, `mounted` is False
    and the tests that need it use RLIMIT_FSIZE instead (see `daemon_env`), which makes SQLite fail its writes the
    same way (SQLITE_IOERR_WRITE rather than SQLITE_FULL) and says so in the test."""

    def __init__(self, path: Path, size: str) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.mounted = False
        if os.geteuid() == 0:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=False)
            self.mounted = done.returncode == 0

    def read_only(self, tries: int = 200) -> bool:
        """Remount read-only; False when the kernel kept refusing (EBUSY: a file on it is being written)."""
        for _ in range(tries):
            done = subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=False, capture_output=True)
            if done.returncode == 0:
                return True
        return False

    def read_write(self) -> None:
        subprocess.run(["mount", "-o", "remount,rw", str(self.path)], check=True)

    def unmount(self) -> None:
        if self.mounted:
            # Lazy: a daemon killed a moment ago may still hold the file for the kernel's last breath.
            subprocess.run(["umount", "-l", str(self.path)], check=False)
            self.mounted = False


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    disk = SmallDisk(tmp_path / "disk", "768k")
    try:
        yield disk
    finally:
        disk.unmount()


def file_size_limit(limit: int) -> None:
    """preexec_fn: the child's writes past `limit` bytes fail with EFBIG (SIGXFSZ ignored, so it is not killed)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def table_config(tmp: Path, table_id: str, prefix: str, extra: str = "", name: str = "demo.toml") -> Path:
    text = (CONFIGS / name).read_text()
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M)
    text = text.replace('prefix = "tablectl"', f'prefix = "{prefix}"')
    path = tmp / f"{table_id}.toml"
    path.write_text(text + extra)
    return path


def start_demo(
    config: Path, journal: Path, broker: str, log: Path, *, seed: int = 12, limit_bytes: int | None = None
) -> subprocess.Popen[bytes]:
    """`tablectl demo` playing until stopped, its JSON log in `log`."""
    args = [sys.executable, "-m", "controller.cli", "--log-json", "demo", "--pace", "0", "--seed", str(seed)]
    args += ["--journal", str(journal), "--quiet", "--broker", broker, "--config", str(config)]
    with log.open("wb") as out:
        return subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=out,
            stdin=subprocess.DEVNULL,
            preexec_fn=None if limit_bytes is None else (lambda: file_size_limit(limit_bytes)),
        )


def stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the daemon did not stop on SIGTERM") from None


@pytest.fixture
def table_id() -> str:
    return fresh_id("f")


@contextlib.contextmanager
def killed_at_exit(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
