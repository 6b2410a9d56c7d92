"""The anchor: where a table's journal has got to, kept outside the journal file (docs/journal.md, "The anchor").

A journal can go back in time as a whole: its `-wal` file deleted after a kill -9 (every transaction since the
last checkpoint gone, the file itself still consistent), an old copy put back, a file emptied. Nothing inside the
file can tell; so after every commit the journal also writes its last seq, that row's chain hash, the number of
transactions committed and the highest round number to `<journal>.anchor`, and the publisher retains the last seq
the broker acknowledged on `<prefix>/<table_id>/anchor`. At start each is held against the journal's tail
(controller.store.integrity): a journal behind either lost committed events.

Written after every commit, because a rollback loses committed state (wagers settled, meters moved) whether or not
the broker saw it, and a kill -9 loses no page already written. Made durable (fdatasync) by the journal's writer
thread right after it hands the commit's events to the publisher and before the next commit (and before the outbox
is read), because what must survive a power loss too is every seq the floor may hold: a power loss loses at most the
last commit's anchor, a commit SQLite itself keeps, so the file is behind, never ahead; the broker's retained anchor,
written behind that commit's batch, is the other witness (docs/journal.md, "The anchor"; bench/anchor.py measures
the cost).

The file holds two fixed-size slots; commit number k goes to slot k % 2, so the write in progress never touches the
newest anchor: a torn write (power loss mid-write) leaves the other slot, older, which is still behind the journal
and so never a false alarm. Each slot is one line of canonical JSON and its sha256. The slots
are rewritten in place: no rename, no directory fsync, and no new block to allocate on a full disk.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

SUFFIX = ".anchor"
SLOT = 4096
FORMAT = "tablectl-anchor"
VERSION = 1
# The slot's canonical JSON; built once, not at every commit as json.dumps with arguments does.
_SLOT_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True, slots=True)
class Claim:
    """Where a table's journal must have got to, according to `source`: seq `seq` with chain hash `hash`, after
    `commits` transactions (None when the source does not count them), rounds numbered up to `round_no`."""

    source: str
    table_id: str
    seq: int
    hash: str
    commits: int | None = None
    round_no: int = 0
    # Written by the daemon's journal as it closed the file cleanly (checkpointed, its -wal removed), over the slot of
    # its last commit: the next start need not check the whole file (controller.store.damage). Any commit clears it.
    closed: bool = False

    def describe(self) -> str:
        return f"{self.source} says seq {self.seq} (hash {self.hash[:16]}...)"


@dataclass(frozen=True, slots=True)
class Found:
    """What the anchor file holds: `claim` when a sound slot was read; `problem` when the file exists but cannot
    be used (damaged, unreadable, another table's); neither when there is no file."""

    path: Path
    claim: Claim | None = None
    problem: str | None = None

    @property
    def exists(self) -> bool:
        return self.claim is not None or self.problem is not None


class AnchorError(OSError):
    """The anchor file could not be written (a disk error, a read-only or full disk); the message names the file.
    An OSError, so what stops the table cleanly on a disk error stops it for this too."""


def sidecar_path(journal: Path) -> Path:
    return journal.with_name(journal.name + SUFFIX)


def encode_slot(claim: Claim, ts: str) -> bytes:
    body = _SLOT_JSON.encode(
        {
            "format": FORMAT,
            "version": VERSION,
            "table_id": claim.table_id,
            "seq": claim.seq,
            "hash": claim.hash,
            "commits": claim.commits,
            "round_no": claim.round_no,
            "ts": ts,
        }
        | ({"closed": True} if claim.closed else {})
    ).encode()
    line = body + b"\n" + hashlib.sha256(body).hexdigest().encode() + b"\n"
    if len(line) > SLOT:
        raise ValueError(f"the anchor of table {claim.table_id!r} does not fit in {SLOT} bytes: shorten the table_id")
    return line.ljust(SLOT, b"\0")


def _decode_slot(raw: bytes, source: str) -> Claim | None:
    """The claim in one slot, or None when the slot is empty, torn or damaged."""
    body, sep, rest = raw.partition(b"\n")
    digest = rest[:64]
    if not sep or not body or hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    try:
        doc: Any = json.loads(body)
        if doc.get("format") != FORMAT or doc.get("version") != VERSION:
            return None
        return Claim(
            source,
            str(doc["table_id"]),
            int(doc["seq"]),
            str(doc["hash"]),
            int(doc["commits"]),
            int(doc["round_no"]),
            doc.get("closed") is True,
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def read_sidecar(journal: Path) -> Found:
    """The newest sound anchor in the journal's anchor file (never raises: what is wrong is the `problem`)."""
    path = sidecar_path(journal)
    source = f"the anchor file {path}"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Found(path)
    except OSError as err:
        return Found(path, problem=f"{path} cannot be read ({err.strerror}): check its permissions")
    if not raw.strip(b"\0"):
        # Created and never written (a crash between creating it and writing its first slot, before the journal's
        # first commit). Nothing is claimed; the journal's own count says whether that is plausible.
        return Found(path)
    claims = [c for c in (_decode_slot(raw[i : i + SLOT], source) for i in (0, SLOT)) if c is not None]
    if not claims:
        return Found(path, problem=f"{path} is damaged: neither of its two slots holds a sound anchor")
    best = max(claims, key=lambda c: (c.commits or 0, c.seq))
    return Found(path, claim=best)


class Sidecar:
    """The writer of one table's anchor file; `found` is what the file held when the journal was opened."""

    def __init__(self, journal: Path, table_id: str) -> None:
        self.journal = journal
        self.path = sidecar_path(journal)
        self.table_id = table_id
        self.found = read_sidecar(journal)
        self._fd: int | None = None
        self._synced = True

    def write(self, claim: Claim, ts: str, sync: bool = False) -> None:
        """Write `claim` into the slot of its commit number (AnchorError if the disk refuses); durable at once with
        `sync`, else at the next `sync()`."""
        data = encode_slot(claim, ts)
        try:
            fd = self._open()
            if os.pwrite(fd, data, (claim.commits or 0) % 2 * SLOT) != len(data):
                raise OSError(errno.EIO, "short write")
        except OSError as err:
            raise self._error(err) from err
        self._synced = False
        if sync:
            self.sync()

    def mark_closed(self, claim: Claim, ts: str) -> None:
        """The slot of `claim` (the journal's last commit, closed cleanly) written again with `closed`, durably; only
        when the file's newest slot is that commit's: after a commit that failed, the journal's own idea of its last
        commit is not what it holds, and the next start must check the whole file."""
        now = read_sidecar(self.journal).claim
        if now is not None and (now.seq, now.hash, now.commits) == (claim.seq, claim.hash, claim.commits):
            self.write(replace(claim, closed=True), ts, sync=True)

    def sync(self) -> None:
        """Make the last anchor written durable (one fdatasync, none if it is already)."""
        if self._fd is not None and not self._synced:
            try:
                os.fdatasync(self._fd)
            except OSError as err:
                raise self._error(err) from err
            self._synced = True

    def _error(self, err: OSError) -> AnchorError:
        return AnchorError(
            err.errno,
            f"cannot write the journal's anchor file {self.path} ({err.strerror}): check the disk and that the "
            "journal's directory is writable by the tablectl user",
        )

    def _open(self) -> int:
        if self._fd is None:
            created = not self.path.exists()
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if created:
                # The new name must survive a power loss like the slots it will hold.
                os.pwrite(self._fd, b"\0" * (2 * SLOT), 0)
                os.fsync(self._fd)
                dir_fd = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
