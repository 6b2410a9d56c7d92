"""Critical state records: what is stored beside a step's events, in the same transaction, and read back.

The engine's TableState (controller.store.snapshot) and the progressive meters (controller.progressive.codec)
are records; the journal keeps each in one or more copies, each with its own checksum, so a damaged copy is
told from a sound one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Record:
    """A critical state record to store beside a step's events. `copies` > 1 keeps that many copies, each with
    its own checksum (e.g. the progressive meters in two copies), so one damaged copy is told from the other.
    `sha256` is computed once here: the copies and the journal's manifest (controller.store.manifest) carry it."""

    name: str
    body: bytes
    copies: int = 1
    sha256: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha256", hashlib.sha256(self.body).hexdigest())


@dataclass(frozen=True, slots=True)
class StoredCopy:
    """One stored copy of a critical state record, as read back; `intact` when its sha256 matches its body."""

    record: str
    copy: int
    body: bytes
    sha256: str
    seq: int
    updated_at: str

    @classmethod
    def of(cls, row: tuple[object, ...]) -> StoredCopy:
        """From a `critical_state` row: record, copy, body (a BLOB, or text from an older file), sha256, seq, at."""
        r, c, b, h, s, u = row
        body = bytes(b) if isinstance(b, bytes | memoryview) else str(b).encode()
        return cls(str(r), int(c), body, str(h), int(s), str(u))  # type: ignore[call-overload]

    @property
    def intact(self) -> bool:
        return hashlib.sha256(self.body).hexdigest() == self.sha256
