"""`tablectl journal`: read, export, verify and total a table's journal without touching it; archive its old rounds.

Every action but `archive` opens the file read-only (controller.store.reader.JournalReader), so it is safe beside a
running daemon and on an examiner's copy. `archive` (controller.store.archive) seals completed rounds into segment
files and removes them from the journal, crash-safe, also beside a running daemon. Exit status: 0 done (verify:
intact), 1 verify found the chain broken, 2 a usage problem or a file that cannot be read as a journal.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from controller.cli import numbers
from controller.cli.journal_check import check_lines
from controller.cli.journal_totals import add_totals, print_totals
from controller.cli.shown import shown, shown_json, shown_lines
from controller.cli.verb import Subparsers, UsageError
from controller.config.errors import ConfigError
from controller.config.files import FileRefused, check_regular
from controller.config.table import load_config
from controller.shell.archiver import archive_directory
from controller.shell.configured import journal_path
from controller.store.archive import archive, default_dir
from controller.store.reader import JournalReader
from controller.store.schema import JournalError
from controller.store.segments import Segment
from controller.store.walk import SegmentError, VerifyReport, verify_segment_file

SEGMENT_MAX_BYTES = 1 << 40  # no real bound: a segment is as large as the rounds it seals
PROGRESS_EVERY = 10_000  # rows between progress lines on stderr for a long export or verify
FOLLOW_POLL_SECONDS = 0.5  # SQLite has no change notification across processes: --follow polls


_count = numbers.whole("-n", 1, 10**9, "-n 20")
_keep_rounds = numbers.whole("--keep-rounds", 1, 10**9, "--keep-rounds 250")


def add_parser(sub: Subparsers) -> None:
    where = argparse.ArgumentParser(add_help=False)
    src = where.add_mutually_exclusive_group()
    src.add_argument("--journal", type=Path, metavar="FILE", help="the journal's SQLite file")
    src.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="table config TOML: its journal.path, else ~/.local/state/tablectl/<table_id>.sqlite",
    )

    p = sub.add_parser(
        "journal",
        help="show, export, verify or total a table's journal (read-only); archive its old rounds",
        description="Reads a table's journal without changing it (safe while the daemon runs). The journal is "
        "chosen by --journal FILE, or by --config FILE (its journal.path, else the default path). "
        "Exit status: 0 done (verify: intact), 1 verify found the hash chain broken, 2 a usage problem "
        "or a file that cannot be read as a journal.",
    )
    actions = p.add_subparsers(dest="journal_action", required=True, metavar="ACTION")

    for add in (_add_tail, _add_export, _add_verify, _add_archive, add_totals):
        add(actions, where)


def _add_tail(actions: Subparsers, where: argparse.ArgumentParser) -> None:
    """`journal tail`: the last events, or following them."""
    tail = actions.add_parser(
        "tail",
        parents=[where],
        help="the last events, optionally following new ones",
        description="Prints the last N events written, oldest first; --follow keeps printing "
        "new ones as the daemon writes them (Ctrl-C stops). Card identities "
        "(the sealed part) are never shown.",
    )
    tail.add_argument("-n", type=_count, default=20, metavar="N", help="how many events (default 20)")
    tail.add_argument("--follow", "-f", action="store_true", help="keep printing events as they are written")
    tail.add_argument("--json", action="store_true", help="one JSON object per line instead of text")


def _add_export(actions: Subparsers, where: argparse.ArgumentParser) -> None:
    """`journal export`: every event as JSON lines with its hash."""
    export = actions.add_parser(
        "export",
        parents=[where],
        help="every event as JSON lines, in seq order, with hashes",
        description="Writes every event as one JSON object per line, in seq order, each with its hash, so that the "
        "chain can be checked independently (docs/journal.md). Without --sealed the card identities "
        "are left out, as published. Progress goes to stderr.",
    )
    export.add_argument("--out", type=Path, metavar="FILE", help="write here instead of stdout")
    export.add_argument(
        "--sealed",
        action="store_true",
        help="include the sealed part (card identities, deck order): for the table PC only; never "
        "hand such an export to anyone not entitled to see the cards",
    )


def _add_verify(actions: Subparsers, where: argparse.ArgumentParser) -> None:
    """`journal verify`: the hash chain, seq and head; archive segments too."""
    verify = actions.add_parser(
        "verify",
        parents=[where],
        help="check the hash chain, seq and head; exit 1 when broken",
        description="Walks every table's hash chain in seq order and checks the chain head, so an altered row, a "
        "missing seq or a removed tail is found. Exit 0 intact, 1 broken (what and where), 2 unreadable.",
    )
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.add_argument(
        "--archives",
        type=Path,
        metavar="DIR",
        help="also check every archive segment the journal records, in DIR (tablectl journal archive --to), and the "
        "chain through them all from the first row",
    )
    verify.add_argument(
        "--segment",
        type=Path,
        metavar="FILE",
        help="check one archive segment file by itself instead (no journal needed): its rows chain from where it "
        "says to its head; prints its sha256 to compare with the journal's record (verify --archives does)",
    )


def _add_archive(actions: Subparsers, where: argparse.ArgumentParser) -> None:
    """`journal archive`: completed rounds sealed into segment files."""
    arch = actions.add_parser(
        "archive",
        parents=[where],
        help="seal completed rounds older than the last N into segment files, and remove them from the journal",
        description="Seals the rows of completed rounds older than the last N (and only rows the broker has "
        "acknowledged) into SQLite segment files, each verifying on its own, records each segment's name, seq range "
        "and chain head in the journal, and only then removes those rows. Crash-safe at every step and safe while "
        "the daemon runs. `verify` then checks the journal from the last segment's head; `verify --archives DIR` "
        "the whole chain. Exit 0 done (also when there was nothing to archive), 2 a problem (named).",
    )
    arch.add_argument(
        "--keep-rounds",
        type=_keep_rounds,
        required=True,
        metavar="N",
        help="rounds to keep in the journal (1 or more; the round in progress is never archived)",
    )
    arch.add_argument(
        "--to",
        type=Path,
        metavar="DIR",
        help="where the segment files go (default: the config's journal.archive_dir, else <journal>.archive beside "
        "the journal); back it up",
    )


def _path(args: argparse.Namespace) -> Path:
    if args.journal is not None:
        return Path(args.journal)
    if args.config is None:
        raise JournalError("say which journal: --journal FILE, or --config FILE for the table's configured journal")
    try:
        config = load_config(args.config)
    except ConfigError as err:
        raise JournalError(str(err)) from None
    return journal_path(config)


def _archives(args: argparse.Namespace, path: Path) -> Path:
    """The segments' directory for `totals`: --archives, else where `archive` seals them ([journal] archive_dir)."""
    if args.archives is not None:
        return Path(args.archives)
    return default_dir(path) if args.config is None else archive_directory(load_config(args.config), path)


def main(args: argparse.Namespace) -> int:
    try:
        if args.journal_action == "verify" and args.segment is not None:
            if args.journal is not None or args.config is not None or args.archives is not None:
                raise JournalError(
                    "--segment checks one segment file by itself: give it without --journal, --config or --archives"
                )
            return _verify_segment(args.segment, args.json)
        path = _path(args)
        if args.journal_action == "archive":
            to = args.to
            if to is None and args.config is not None:  # where the daemon seals them ([journal] archive_dir)
                to = archive_directory(load_config(args.config), path)
            return _archive(path, args.keep_rounds, to)
        with JournalReader(path) as reader:
            if args.journal_action == "tail":
                return _tail(reader, args.n, args.follow, args.json, sys.stdout)
            if args.journal_action == "export":
                return _export(reader, args.out, args.sealed)
            if args.journal_action == "totals":
                return print_totals(reader, args, _archives(args, path))
            return _verify(reader, args.json, args.archives)
    except JournalError as err:
        print(f"tablectl journal: {shown_lines(str(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head`: the reader went away, which is fine
        return 0


# An event's text can be anyone's: a supervisor's reason, a driver's message, a player's name. Printed as JSON with
# ensure_ascii=False, its ESC, C1 controls and bidi overrides reached the terminal raw; shown_json() escapes them
# (controller/core/shown.py says why not ensure_ascii=True) and reads back to the same values. The hashes are
# unaffected: each covers the row's fields as stored (docs/journal.md, "The hash chain"), payload and sealed as their
# canonical JSON text, which an exported row's values give back (tests/journal/test_journal_cli.py recomputes the chain
# from an export), never the bytes printed; verify and the archive read the journal, not this output.
def _line(row: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return shown_json(row)
    rule = f" [{shown(row['rule'])}]" if row["rule"] else ""
    rid = f" {shown(row['round_id'])}" if row["round_id"] else ""
    return f"{row['seq']:>8} {shown(row['ts'])} {shown(row['type'])}{rule}{rid} {shown_json(row['payload'])}"


def _tail(reader: JournalReader, n: int, follow: bool, as_json: bool, out: TextIO) -> int:
    last = 0
    for rowid, row in reader.tail(n):
        print(_line(row, as_json), file=out)
        last = rowid
    out.flush()
    if not follow:
        return 0
    try:
        while True:
            rows = reader.after(last)
            for rowid, row in rows:
                print(_line(row, as_json), file=out)
                last = rowid
            if rows:
                out.flush()
            time.sleep(FOLLOW_POLL_SECONDS)
    except KeyboardInterrupt:
        return 0


def _progress(done: int, total: int, verb: str) -> None:
    print(
        f"tablectl journal: {verb} {done} of {total} rows ({100 * done // max(total, 1)} %)",
        file=sys.stderr,
        flush=True,
    )


def _export(reader: JournalReader, out_path: Path | None, sealed: bool) -> int:
    total = reader.count()
    try:
        out = sys.stdout if out_path is None else out_path.open("w", encoding="utf-8")
    except OSError as err:
        raise JournalError(f"cannot write {out_path}: {err.strerror}; choose another --out") from None
    done = 0
    try:
        for row in reader.rows(sealed=sealed):
            out.write(shown_json(row))  # terminal-safe, same values (_line says why): a file is cat'ed too
            out.write("\n")
            done += 1
            if done % PROGRESS_EVERY == 0:
                _progress(done, total, "exported")
    finally:
        if out is not sys.stdout:
            out.close()
    where = f" to {out_path}" if out_path is not None else ""
    print(
        f"tablectl journal: exported {done} rows{where}" + (" WITH card identities (table PC only)" if sealed else ""),
        file=sys.stderr,
    )
    return 0


def _verify_segment(path: Path, as_json: bool) -> int:
    try:
        # Looked at before SQLite opens it: SQLite's open of a FIFO waits for a writer for ever.
        check_regular(path, SEGMENT_MAX_BYTES)
    except FileRefused as err:
        raise UsageError(
            f"cannot check segment {err.path}: {err.problem}; give a segment file journal archive wrote"
        ) from None
    try:
        seg, report = verify_segment_file(path)
    except SegmentError as err:
        raise JournalError(str(err)) from None
    if as_json:
        # As the journal's verify --json: the same values, what a terminal acts on as \uXXXX, a name still readable.
        print(
            shown_json(
                {**report.as_dict(), "segment": {"table_id": seg.table_id, **seg.as_dict()}}, separators=(", ", ": ")
            )
        )
        return 0 if report.ok else 1
    # A segment is a file from anywhere (a backup, a copy on a stick): its path, its table id and the breaks that
    # quote them are shown escaped, as every text from outside the CLI is (controller/cli/shown.py).
    what = (
        f"table {shown(seg.table_id)}, seq {seg.first_seq} to {seg.last_seq} chained from seq {seg.prev_seq}, "
        f"head {shown(seg.head_hash[:16])}..., sha256 {shown(seg.sha256)}"
    )
    if report.ok:
        print(f"segment {shown(path)}: intact: {report.rows_checked} rows checked ({what})")
        return 0
    print(f"segment {shown(path)}: BROKEN: {shown(report.first_break)}")
    for b in report.breaks[1:10]:
        print(f"  also: {shown(b)}")
    print(f"  {report.rows_checked} rows checked ({what})")
    return 1


def _archive(path: Path, keep_rounds: int, to: Path | None) -> int:
    directory = default_dir(path) if to is None else to
    try:
        outcomes = archive(
            path,
            keep_rounds,
            directory,
            progress=lambda line: print(f"tablectl journal: sealed {shown(line)}", file=sys.stderr),
        )
    except (OSError, sqlite3.Error) as err:
        # Disk full, a directory gone read-only: every step before the journal's own commit leaves it as it was.
        raise JournalError(
            f"archiving {path} into {directory} stopped ({type(err).__name__}: {err}); the journal holds every row "
            "it did not record as sealed: free space or fix the directory and run it again"
        ) from None
    for o in outcomes:
        rows = sum(s.rows for s in o.sealed)
        done = (
            f"{rows} rows in {len(o.sealed)} segment(s) to seq {o.sealed[-1].last_seq} sealed into {directory}"
            if o.sealed
            else "nothing to archive"
        )
        print(
            f"journal {shown(path)}, table {shown(o.table_id)}: {shown(done)}; "
            f"{o.live_rows} rows kept ({shown(o.plan.why)})"
        )
    return 0


def _archived(report: VerifyReport) -> str:
    parts = []
    for t, segs in sorted(report.segments.items()):
        if segs:
            rows = sum(s.rows for s in segs)
            how = "checked" if report.archives_checked else "not checked: give --archives DIR"
            parts.append(
                f"{shown(t)}: {rows} rows to seq {segs[-1].last_seq} archived in {len(segs)} segment(s), {how}"
            )
    return "; ".join(parts)


def _verify(reader: JournalReader, as_json: bool, archives: Path | None) -> int:
    try:
        total = reader.count() + sum(s.rows for segs in _recorded(reader) for s in segs) * (archives is not None)
    except sqlite3.DatabaseError:  # a damaged file: no progress to show, and the report says what is wrong
        total = 0
    report: VerifyReport = reader.verify(
        progress=lambda done: _progress(done, total, "verified") if total > PROGRESS_EVERY else None,
        archives=archives,
        watch=check_lines(),
    )
    if as_json:
        print(shown_json(report.as_dict(), separators=(", ", ": ")))
        return 0 if report.ok else 1
    tables = ", ".join(f"{shown(t)} to seq {s}" for t, s in sorted(report.tables.items())) or "no rows"
    archived = _archived(report)
    if archived:
        tables += f"; {archived}"
    if report.ok:
        print(f"journal {shown(reader.path)}: intact: {report.rows_checked} rows checked ({tables})")
        return 0
    first = report.first_break
    print(f"journal {shown(reader.path)}: BROKEN: {shown(first)}")
    for b in report.breaks[1:10]:
        print(f"  also: {shown(b)}")
    more = len(report.breaks) - 10 + report.more_breaks
    if more > 0:
        print(f"  and {more} more")
    print(f"  {report.rows_checked} rows checked ({tables})")
    return 1


def _recorded(reader: JournalReader) -> list[list[Segment]]:
    return [reader.segments(t) for t in reader.table_ids()]
