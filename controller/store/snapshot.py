"""The engine's critical round state as stored: TableState <-> bytes, with a format version.

The codec is pydantic's TypeAdapter over the engine's plain dataclasses, so the stored form follows the
dataclasses without a hand-written mapping, and restoring validates every field's type: a body that was
damaged, or written by software whose state this one does not understand, is refused with the reason,
never half-read. The journal adds a sha256 per stored copy (controller.store.records.Record / StoredCopy).

Format history (bump FORMAT when TableState changes incompatibly, and teach `decode` the old one):
    1  {"format": 1, "state": <TableState>}
A field added with a default needs no new format: a state stored before it restores with the default, and where that
default hides something the table had (`closing_by`: who asked a close) `decode` says so in the log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import structlog
from pydantic import TypeAdapter, ValidationError

from controller.engine.state import TableState
from controller.store.records import Record, StoredCopy

FORMAT: Literal[1] = 1
RECORD = "engine"  # the record name in the journal's critical_state

log = structlog.get_logger(__name__)


@dataclass
class _Snapshot:
    """The engine's state as stored, with its format number: the shape the TypeAdapter reads and writes."""

    format: Literal[1]
    state: TableState


_ADAPTER: TypeAdapter[_Snapshot] = TypeAdapter(_Snapshot)


class SnapshotError(ValueError):
    """A stored state that cannot be restored; the message says why (for the `critical_state` tilt)."""


def encode(state: TableState) -> bytes:
    return _ADAPTER.dump_json(_Snapshot(FORMAT, state))


def record(body: bytes) -> Record:
    return Record(RECORD, body)


def decode(body: bytes) -> TableState:
    """The TableState in `body`, or SnapshotError naming what is wrong with it."""
    try:
        head = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise SnapshotError(f"the stored engine state is not JSON ({err})") from None
    if not isinstance(head, dict) or "format" not in head:
        raise SnapshotError("the stored engine state has no format version")
    fmt = head["format"]
    if isinstance(fmt, int) and fmt > FORMAT:
        raise SnapshotError(
            f"the stored engine state has format {fmt}, newer than this software's {FORMAT}: upgrade tablectl"
        )
    try:
        state = _ADAPTER.validate_json(body).state
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise SnapshotError(
            f"the stored engine state does not validate: {where}: {first['msg']} ({err.error_count()} problem(s))"
        ) from None
    stored = head.get("state")
    if state.closing and isinstance(stored, dict) and "closing_by" not in stored:
        # Stored by software that did not keep who asked the close: said here, once (the state stored next has it).
        log.warning(
            "the table was closing when stored by older software: who asked the close is not known",
            after_round=state.round.number if state.round else None,
            remedy="none needed; the table closes after the round as asked, its table.closed naming nobody",
        )
    return state


def restore(copies: Sequence[StoredCopy]) -> TableState | None:
    """The engine state from its stored copies: None when none was ever stored (a new table), else the
    state, or SnapshotError when it fails its checksum or does not validate."""
    if not copies:
        return None
    problems = []
    for c in copies:
        if not c.intact:
            problems.append(f"copy {c.copy} (seq {c.seq}) fails its sha256 check")
            continue
        try:
            return decode(c.body)
        except SnapshotError as err:
            problems.append(f"copy {c.copy} (seq {c.seq}): {err}")
    raise SnapshotError("; ".join(problems))
