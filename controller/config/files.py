"""Reading the files a config names, and the config itself: a regular file only, up to a size bound, within a time.

A FIFO as `password_file` blocks its reader until someone writes to it (the daemon froze before the table opened,
deaf to SIGTERM); `/dev/zero` as a config path never ends (read without bound until memory ran out). So a file is
refused, named, unless it is a regular file no bigger than what such a file can be, and the read runs in a
thread of its own that the caller stops waiting for after READ_TIMEOUT_SECONDS (a hung network mount).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

# Longer than any local disk takes for these small files; short enough that a stuck read is reported, not waited on.
READ_TIMEOUT_SECONDS = 5.0

# The bounds: a table config is a few kilobytes; a password one line; a CA bundle (the system's is ~200 KB) or
# a certificate chain well under a megabyte. Anything bigger is the wrong file.
CONFIG_MAX_BYTES = 1024 * 1024
SECRET_MAX_BYTES = 4096
PEM_MAX_BYTES = 1024 * 1024


class FileRefused(ValueError):
    """A file that cannot be used: `problem` says why (the caller names the field and adds the fix)."""

    def __init__(self, path: str, problem: str, denied: bool = False) -> None:
        super().__init__(f"{path} {problem}")
        self.path = path
        self.problem = problem
        self.denied = denied  # the service user may not read it: the fix is a chmod


def kind_of(mode: int) -> str | None:
    """What a file that is not a regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str | Path, limit: int) -> os.stat_result:
    """The file's stat when it is a regular file of at most `limit` bytes; FileRefused otherwise. Looks without
    opening: opening a device can act on it (a serial port raises DTR)."""
    try:
        st = os.stat(path)
    except OSError as err:
        raise FileRefused(str(path), _os_problem(err), isinstance(err, PermissionError)) from None
    kind = kind_of(st.st_mode)
    if kind is not None:
        raise FileRefused(str(path), f"is {kind}, not a regular file")
    if st.st_size > limit:
        raise FileRefused(str(path), f"is {st.st_size:,} bytes, more than the {limit:,} such a file can be")
    return st


def read_bounded(path: str | Path, limit: int, timeout: float = READ_TIMEOUT_SECONDS) -> bytes:
    """The bytes of the regular file at `path`, at most `limit`; FileRefused for anything else, or when the read
    does not finish within `timeout` seconds."""
    result: list[bytes | BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            result.append(_read(path, limit))
        except BaseException as err:  # handed to the caller's thread
            result.append(err)
        finally:
            done.set()

    # A daemon thread: a read stuck in the kernel cannot be interrupted, but it must not keep the process alive.
    threading.Thread(target=read, name=f"read {path}", daemon=True).start()
    if not done.wait(timeout):
        raise FileRefused(
            str(path), f"could not be read within {timeout:g} s (a stalled disk or a hung network mount?)"
        )
    got = result[0]
    if isinstance(got, BaseException):
        raise got
    return got


def _read(path: str | Path, limit: int) -> bytes:
    check_regular(path, limit)
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since it was looked at, opening it does not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        raise FileRefused(str(path), _os_problem(err), isinstance(err, PermissionError)) from None
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise FileRefused(str(path), f"is {kind}, not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise FileRefused(str(path), _os_problem(err), isinstance(err, PermissionError)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise FileRefused(str(path), f"is more than the {limit:,} bytes such a file can be")
    return b"".join(chunks)


def _os_problem(err: OSError) -> str:
    if isinstance(err, FileNotFoundError):
        return "does not exist"
    if isinstance(err, PermissionError):
        return "cannot be read: permission denied"
    return f"cannot be read: {err.strerror or err}"
