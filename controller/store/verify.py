"""Verifying a journal file: every table's hash chain walked in seq order, and its chain head compared.

`verify_connection` never raises: a damaged or unreadable file is a finding (`Break`), so the CLI and an
examiner always get a report of what holds and where it does not (docs/journal.md, "Integrity").
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.store.chain import GENESIS, row_hash
from controller.store.schema import COLUMNS, SCHEMA_VERSION

# Called now and then during a long walk with the number of rows checked so far.
Progress = Callable[[int], object]
PROGRESS_EVERY = 10_000


@dataclass(frozen=True, slots=True)
class Break:
    """Where the chain does not hold. what: "altered row", "missing seq", "head mismatch", "quarantined row" (one
    the daemon cannot publish: not UTF-8, not JSON), "unchained" (a schema 1 file) or "unreadable"."""

    table_id: str
    seq: int | None
    what: str
    detail: str

    def __str__(self) -> str:
        at = f" at seq {self.seq}" if self.seq is not None else ""
        return f"{self.what}{at} (table {self.table_id}): {self.detail}"

    def as_dict(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "seq": self.seq, "what": self.what, "detail": self.detail}


@dataclass
class VerifyReport:
    """What `verify` found. `ok` only when every table's chain and head hold; never raised, always returned."""

    path: str
    rows_checked: int = 0
    tables: dict[str, int] = field(default_factory=dict)  # table_id -> last seq seen
    breaks: list[Break] = field(default_factory=list)  # the first MAX_BREAKS found, in seq order per table
    more_breaks: int = 0  # found beyond those listed

    MAX_BREAKS = 100

    @property
    def ok(self) -> bool:
        return not self.breaks

    @property
    def first_break(self) -> Break | None:
        return self.breaks[0] if self.breaks else None

    def add(self, b: Break) -> None:
        if len(self.breaks) < self.MAX_BREAKS:
            self.breaks.append(b)
        else:
            self.more_breaks += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "rows_checked": self.rows_checked,
            "tables": dict(self.tables),
            "first_break": None if self.first_break is None else self.first_break.as_dict(),
            "breaks": [b.as_dict() for b in self.breaks],
            "more_breaks": self.more_breaks,
        }


def verify_connection(
    conn: sqlite3.Connection, path: str, version: int = SCHEMA_VERSION, progress: Progress | None = None
) -> VerifyReport:
    """Walk every table's chain in seq order. Never raises: a damaged or unreadable file is a finding."""
    report = VerifyReport(path)
    factory = conn.text_factory
    # Damaged text must not stop the walk: decode what cannot be UTF-8 so that it hashes as the bytes stored.
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        if version < 2:
            n = int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
            detail = (
                f"schema version {version} has no hash chain ({n} rows); the daemon adds it when it next opens the file"
            )
            report.add(Break("*", None, "unchained", detail))
            return report
        heads = {t: (int(s), h) for t, s, h in conn.execute("SELECT table_id, seq, hash FROM chain_head")}
        tables = [t for (t,) in conn.execute("SELECT DISTINCT table_id FROM events ORDER BY table_id")]
        for table_id in sorted(set(tables) | set(heads)):
            last = _walk(conn, table_id, report, progress)
            report.tables[table_id] = last[0] if last else 0
            broken = _head_break(table_id, heads.get(table_id), last)
            if broken is not None:
                report.add(broken)
    except Exception as err:  # never raised: whatever the damage, it is a finding
        report.add(Break("*", None, "unreadable", f"{type(err).__name__} while reading: {err}"))
    finally:
        conn.text_factory = factory
    return report


def _walk(
    conn: sqlite3.Connection, table_id: str, report: VerifyReport, progress: Progress | None
) -> tuple[int, str] | None:
    """Check one table's rows link by link; the (seq, hash) of its last row, or None when it has none."""
    prev = GENESIS
    expected = 1
    last: tuple[int, str] | None = None
    cur = conn.execute(f"SELECT {COLUMNS}, hash FROM events WHERE table_id = ? ORDER BY seq", (table_id,))
    for row in cur:
        seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed, stored = row
        if seq != expected:
            gap = f" to {seq - 1}" if seq - 1 > expected else ""
            report.add(Break(table_id, expected, "missing seq", f"seq {expected}{gap} absent (next row is seq {seq})"))
        computed = row_hash(prev, seq, event_id, boot_id, ts, tid, round_id, type_, rule, payload, sealed)
        if stored != computed and seq == expected:
            detail = (
                f"stored hash {str(stored)[:16]}... does not match the row's contents "
                f"({computed[:16]}...): the row, or the one before it, was changed"
            )
            report.add(Break(table_id, seq, "altered row", detail))
        damage = _unreadable(payload, sealed, event_id, boot_id, ts, tid, round_id, type_, rule)
        if damage is not None:
            detail = f"{damage}: the daemon never publishes it, it reports it in a journal.row_quarantined event"
            report.add(Break(table_id, seq, "quarantined row", detail))
        # Carry on from the stored hash, so one altered row is reported once and the rows after it still checked.
        prev = stored if isinstance(stored, str) else computed
        expected = seq + 1
        last = (seq, prev)
        report.rows_checked += 1
        if progress is not None and report.rows_checked % PROGRESS_EVERY == 0:
            progress(report.rows_checked)
    return last


def _unreadable(payload: object, sealed: object, *texts: object) -> str | None:
    """Why a row cannot be published as journaled (controller/store/outbox.py quarantines it), or None. The walk
    reads text with surrogateescape, so bytes that are not UTF-8 show as lone surrogates."""
    for text in (payload, sealed, *texts):
        if isinstance(text, str) and any("\udc80" <= c <= "\udcff" for c in text):
            return "its stored text is not UTF-8"
    try:
        body = json.loads(str(payload))
        if sealed is not None:
            json.loads(str(sealed))
    except ValueError:
        return "its payload is not JSON"
    return None if isinstance(body, dict) else "its payload is not a JSON object"


def _head_break(table_id: str, head: tuple[int, str] | None, last: tuple[int, str] | None) -> Break | None:
    """How the recorded chain head disagrees with the table's last row: a removed or replaced tail."""
    if head is None:
        if last is None:
            return None
        return Break(table_id, None, "head mismatch", f"no chain head recorded, yet rows up to seq {last[0]} exist")
    if last is None:
        detail = f"the head says seq {head[0]} but the table has no rows: every row was removed"
        return Break(table_id, head[0], "head mismatch", detail)
    if head[0] != last[0]:
        what = (
            "rows after it were removed (the tail was truncated)"
            if head[0] > last[0]
            else "rows were added without updating the head"
        )
        detail = f"the head says seq {head[0]}, the last row is seq {last[0]}: {what}"
        return Break(table_id, last[0], "head mismatch", detail)
    if head[1] != last[1]:
        detail = "the head's hash differs from the last row's: the last row was replaced"
        return Break(table_id, last[0], "head mismatch", detail)
    return None
