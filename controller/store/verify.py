"""Verifying a journal file: every table's hash chain walked in seq order, and its chain head compared; what must
exist (the manifest, the critical state records it lists) and the anchor file beside the journal.

`verify_connection` never raises: a damaged or unreadable file is a finding (`Break`), so the CLI and an
examiner always get a report of what holds and where it does not (docs/journal.md, "Integrity").
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from controller.store import manifest, segments
from controller.store.anchor import Found, read_sidecar
from controller.store.chain import GENESIS
from controller.store.check_watch import CheckProgress, Watch, watched
from controller.store.damage import damaged, quick_check
from controller.store.records import StoredCopy
from controller.store.schema import SCHEMA_VERSION
from controller.store.walk import Break, Progress, VerifyReport, check_segment, walk_chain


def verify_connection(
    conn: sqlite3.Connection,
    path: str,
    version: int = SCHEMA_VERSION,
    progress: Progress | None = None,
    archives: Path | None = None,
    watch: Watch | None = None,
) -> VerifyReport:
    """Walk every table's chain in seq order. Never raises: a damaged or unreadable file is a finding.

    Rows sealed into archive segments (controller.store.archive) are not in the file: the walk starts from the last
    segment's recorded head, so its time is bounded by the rows kept. With `archives` (the segments' directory) every
    segment file is checked first and the chain is walked through them all from genesis. SQLite's check of the file
    comes before the walk, reported as it runs to `watch` if given (controller.store.check_watch)."""
    report = VerifyReport(path, archives_checked=archives is not None)
    # The anchor file first, the journal's rows after, in one read transaction: a daemon committing meanwhile can
    # only put the journal ahead of what the anchor said, never behind it, and every check sees the same rows.
    found = read_sidecar(Path(path)) if version >= 3 else None
    factory = conn.text_factory
    # Damaged text must not stop the walk: decode what cannot be UTF-8 so that it hashes as the bytes stored.
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    began = not conn.in_transaction
    try:
        if began:
            conn.execute("BEGIN")
        _damage(conn, path, report, watch)
        if version < 2:
            return _unchained(conn, version, report)
        heads = {t: (int(s), h) for t, s, h in conn.execute("SELECT table_id, seq, hash FROM chain_head")}
        tables = [t for (t,) in conn.execute("SELECT DISTINCT table_id FROM events ORDER BY table_id")]
        manifests = set() if version < 3 else {t for (t,) in conn.execute("SELECT table_id FROM manifest")}
        lasts: dict[str, tuple[int, str] | None] = {}
        for table_id in sorted(set(tables) | set(heads) | manifests):
            skipped = manifest.rollbacks(conn, table_id)
            segs = report.segments[table_id] = segments.recorded(conn, table_id)
            for seq, what in segments.link_problems(segs):
                report.add(Break(table_id, seq, "archive", what))
            if archives is not None:
                for seg in segs:
                    check_segment(archives, seg, skipped, report, progress)
            last = lasts[table_id] = walk_chain(conn, table_id, report, progress, skipped, segments.head(segs))
            report.tables[table_id] = last[0] if last else 0
            broken = _head_break(table_id, heads.get(table_id), last)
            if broken is not None:
                report.add(broken)
            if version >= 3:
                _must_exist(conn, table_id, last, report)
        if found is not None:
            _anchor_breaks(conn, found, lasts, report)
    except Exception as err:  # never raised: whatever the damage, it is a finding
        report.add(Break("*", None, "unreadable", f"{type(err).__name__} while reading: {err}"))
    finally:
        conn.text_factory = factory
        if began and conn.in_transaction:
            # A read transaction: nothing to lose by ending it so, and nothing raised on a file too damaged to end it.
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
    return report


def _unchained(conn: sqlite3.Connection, version: int, report: VerifyReport) -> VerifyReport:
    n = int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    detail = f"schema version {version} has no hash chain ({n} rows); the daemon adds it when it next opens the file"
    report.add(Break("*", None, "unchained", detail))
    return report


def _damage(conn: sqlite3.Connection, path: str, report: VerifyReport, watch: Watch | None) -> None:
    """A torn or corrupt file first (controller.store.damage): the walk reads only the rows and records, and a
    damaged page elsewhere (an index, a freed page) would go unsaid. Watched, it runs on a thread of its own and
    `watch` hears of it every few seconds: on a 2.5 GB journal it takes 7-60 s (docs/performance-history.md)."""
    if watch is None:
        findings = quick_check(conn)
    else:
        mb = sum(p.stat().st_size for p in (Path(path), Path(f"{path}-wal")) if p.exists()) / 1e6
        begun = CheckProgress(Path(path), mb, 0.0, 0.0, True, False)
        findings = watched(lambda: quick_check(conn), conn, watch.report, begun, watch.every)
    if findings:
        report.add(Break("*", None, "damaged", damaged(Path(path), findings)))


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


# -- what must exist (controller.store.manifest) and the anchor file (controller.store.anchor) --------------------


def _must_exist(conn: sqlite3.Connection, table_id: str, last: tuple[int, str] | None, report: VerifyReport) -> None:
    """The manifest against the rows, and every record it lists against the records stored."""
    try:
        m = manifest.read(conn, table_id)
    except manifest.ManifestError as err:
        report.add(Break(table_id, None, "manifest", str(err)))
        return
    if m is None:
        if last is not None:
            report.add(Break(table_id, None, "manifest", f"no manifest, yet rows up to seq {last[0]} exist"))
        return
    seq, hash_ = last or (0, GENESIS)
    if (m.seq, m.hash) != (seq, hash_):
        what = "rows after it are gone" if m.seq > seq else "the rows differ from what was written"
        report.add(
            Break(table_id, seq, "manifest", f"the manifest says seq {m.seq}, the last row is seq {seq}: {what}")
        )
    for name, entry in sorted(m.records.items()):
        problem = manifest.record_problem(name, entry, _stored(conn, table_id, name))
        if problem is not None:
            report.add(Break(table_id, None, "missing record", problem))


def _stored(conn: sqlite3.Connection, table_id: str, name: str) -> list[StoredCopy]:
    cur = conn.execute(
        "SELECT copy, body, sha256, seq, updated_at FROM critical_state WHERE table_id = ? AND record = ?",
        (table_id, name),
    )
    return [StoredCopy(name, int(c), bytes(b), str(h), int(s), str(u)) for c, b, h, s, u in cur]


def _anchor_breaks(
    conn: sqlite3.Connection, found: Found, lasts: dict[str, tuple[int, str] | None], report: VerifyReport
) -> None:
    """The anchor file beside the journal against the rows of the table it anchors."""
    if found.problem is not None:
        if any((_commits(conn, t) or 0) > 0 for t in lasts):  # else never relied on: a first write torn
            report.add(Break("*", None, "anchor", found.problem))
        return
    claim = found.claim
    if claim is None:
        counted = [t for t in lasts if (_commits(conn, t) or 0) > 0]
        if len(lasts) == 1 and counted:  # a daemon's journal: one table, which anchors it after every commit
            detail = f"{found.path} is missing: whether the journal lost committed events cannot be told; copy it too"
            report.add(Break(counted[0], None, "anchor", detail))
        return
    seq = (lasts.get(claim.table_id) or (0, GENESIS))[0]
    if claim.seq > seq:
        detail = (
            f"{claim.describe()} was committed, but the journal ends at seq {seq}: seq {seq + 1} to {claim.seq} "
            "are gone (a deleted -wal file, an older copy of the journal)"
        )
        report.add(Break(claim.table_id, seq + 1, "rolled back", detail))
        return
    at = _hash_at(conn, claim.table_id, claim.seq)
    if at is None and manifest.lost_in(manifest.rollbacks(conn, claim.table_id), claim.seq) is not None:
        return  # lost in a rollback recorded since, and reported as such
    if at is None and claim.seq <= segments.head_of(conn, claim.table_id)[0]:
        return  # archived since: its segment holds it (checked by verify --archives)
    if at != claim.hash:
        detail = f"{claim.describe()}, but this journal has {'no row' if at is None else 'another hash'} there"
        report.add(Break(claim.table_id, claim.seq, "anchor", detail + ": it is not the journal that was anchored"))
        return
    commits = _commits(conn, claim.table_id)
    if claim.commits is not None and commits is not None and claim.commits > commits:
        detail = f"{claim.describe()} after {claim.commits} transactions, the journal holds {commits}: some are gone"
        report.add(Break(claim.table_id, None, "rolled back", detail))


def _commits(conn: sqlite3.Connection, table_id: str) -> int | None:
    """The transactions the manifest counts; None without a manifest (itself a finding)."""
    row = conn.execute("SELECT commits FROM manifest WHERE table_id = ?", (table_id,)).fetchone()
    return None if row is None else int(row[0])


def _hash_at(conn: sqlite3.Connection, table_id: str, seq: int) -> str | None:
    if seq == 0:
        return GENESIS
    row = conn.execute("SELECT hash FROM events WHERE table_id = ? AND seq = ?", (table_id, seq)).fetchone()
    if row is not None:
        return str(row[0])
    ends = [s.head_hash for s in segments.recorded(conn, table_id) if s.last_seq == seq]
    if ends:
        return ends[-1]
    skipped = [r.hash for r in manifest.rollbacks(conn, table_id) if r.upto_seq == seq and r.skipped]
    return skipped[-1] if skipped else None
