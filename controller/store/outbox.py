"""Reading the outbox row by row, so that one damaged row is quarantined instead of stopping the publisher.

A row whose stored bytes are not UTF-8, whose payload is not JSON, or whose contents no longer match its hash
(a flipped disk byte) cannot be published as the table journaled it. Before, the first such row raised out of
the outbox query and the publisher died for good while the table played on. Here every text column is read as
bytes and decoded per row: a damaged row comes back as a `DamagedRow` (its seq and why), which the publisher
reports in a `journal.row_quarantined` event and then passes over; the row itself stays in the file as found,
for `tablectl journal verify` and the investigation (docs/journal.md, "Damaged rows").
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from controller.core.events import JournaledEvent
from controller.store.chain import GENESIS, row_hash

# The columns of COLUMNS and the hash, each read as the bytes stored (CAST keeps SQLite from decoding them).
_RAW = (
    "seq, CAST(event_id AS BLOB), CAST(boot_id AS BLOB), CAST(ts AS BLOB), CAST(table_id AS BLOB), "
    "CAST(round_id AS BLOB), CAST(type AS BLOB), CAST(rule AS BLOB), CAST(payload AS BLOB), CAST(sealed AS BLOB), "
    "CAST(hash AS BLOB)"
)


@dataclass(frozen=True, slots=True)
class DamagedRow:
    """An outbox row that cannot be published as journaled: its seq, what is wrong with it."""

    seq: int
    reason: str


OutboxItem = JournaledEvent | DamagedRow


def read_outbox(
    db: sqlite3.Connection, table_id: str, after_seq: int, limit: int, hashes: dict[int, str] | None = None
) -> list[OutboxItem]:
    """The unpublished rows after `after_seq`, oldest first: each a JournaledEvent, or a DamagedRow; `hashes` gets the
    stored chain hash of each event returned (the publisher's retained anchor names one, controller.mqtt.anchor)."""
    rows = db.execute(
        f"SELECT {_RAW} FROM events WHERE table_id = ? AND published_at IS NULL AND seq > ? ORDER BY seq LIMIT ?",
        (table_id, after_seq, limit),
    ).fetchall()
    return _items(db, table_id, rows, None, hashes)


def read_range(
    db: sqlite3.Connection, table_id: str, first: int, last: int, chain_from: tuple[int, str] | None = None
) -> list[OutboxItem]:
    """Every row from seq `first` to `last`, published or not, oldest first, read and checked as read_outbox reads
    them (a `resend`, controller.supervisor.resend). `chain_from` is the (seq, hash) the file's first row chains from
    when that row is not in `db` (the segment before, for a segment or a live journal that was archived)."""
    rows = db.execute(
        f"SELECT {_RAW} FROM events WHERE table_id = ? AND seq >= ? AND seq <= ? ORDER BY seq", (table_id, first, last)
    ).fetchall()
    return _items(db, table_id, rows, chain_from)


def _items(
    db: sqlite3.Connection,
    table_id: str,
    rows: list[Sequence[object]],
    chain_from: tuple[int, str] | None,
    hashes: dict[int, str] | None = None,
) -> list[OutboxItem]:
    out: list[OutboxItem] = []
    last: tuple[int, str | None] | None = None  # the seq and stored hash of the row read before
    for row in rows:
        seq = int(row[0])  # type: ignore[call-overload]
        # Link from the stored hash of the row before, as verify does, so one damaged row does not condemn the
        # rows after it; a row after a gap (rows already published) takes its predecessor's from the file.
        if last is not None and last[0] == seq - 1:
            prev = last[1]
        elif chain_from is not None and chain_from[0] == seq - 1:
            prev = chain_from[1]
        else:
            prev = _hash_before(db, table_id, seq)
        item, stored = _decode(seq, row, prev)
        out.append(item)
        if hashes is not None and stored is not None and not isinstance(item, DamagedRow):
            hashes[seq] = stored
        last = (seq, stored)
    return out


def _hash_before(db: sqlite3.Connection, table_id: str, seq: int) -> str | None:
    if seq == 1:
        return GENESIS
    row = db.execute(
        "SELECT CAST(hash AS BLOB) FROM events WHERE table_id = ? AND seq = ?", (table_id, seq - 1)
    ).fetchone()
    return None if row is None or row[0] is None else bytes(row[0]).decode("ascii", "replace")


def _text(value: object) -> str | None:
    return None if value is None else bytes(value).decode("utf-8")  # type: ignore[call-overload]


def _decode(seq: int, row: Sequence[object], prev: str | None) -> tuple[OutboxItem, str | None]:
    """The row as an event (or why it is damaged), and its stored hash for the next row's link."""
    stored = None if row[10] is None else bytes(row[10]).decode("ascii", "replace")  # type: ignore[call-overload]
    try:
        event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed = (_text(v) for v in row[1:10])
    except UnicodeDecodeError as err:
        return DamagedRow(seq, f"its stored text is not UTF-8 ({err.reason} at byte {err.start})"), stored
    fields = (seq, event_id, boot_id, ts, table_id, round_id, type_, rule, payload, sealed)
    if event_id is None or boot_id is None or ts is None or table_id is None or type_ is None or payload is None:
        return DamagedRow(seq, "a required column is empty"), stored
    if prev is not None and stored is not None and row_hash(prev, *fields) != stored:  # type: ignore[arg-type]
        return DamagedRow(seq, "its contents no longer match its hash (a changed byte)"), stored
    try:
        body = json.loads(payload)
        sealed_body = None if sealed is None else json.loads(sealed)
    except ValueError as err:
        return DamagedRow(seq, f"its payload is not JSON ({err})"), stored
    if not isinstance(body, dict):
        return DamagedRow(seq, "its payload is not a JSON object"), stored
    event = JournaledEvent(
        seq=seq,
        event_id=event_id,
        boot_id=boot_id,
        ts=ts,
        table_id=table_id,
        round_id=round_id,
        type=type_,
        rule=rule,
        payload=body,
        sealed=sealed_body,
    )
    return event, stored
