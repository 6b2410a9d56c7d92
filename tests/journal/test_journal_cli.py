"""`tablectl journal tail | export | verify` on real files: most cases call the CLI's main() in this process (the
suite's time), the exit statuses and --follow run it as the real subprocess an operator starts."""

from __future__ import annotations

import hashlib
import json
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.cli.journal import PROGRESS_EVERY
from controller.core.events import DomainEvent
from controller.store.journal import Journal
from controller.store.schema import SCHEMA_VERSION
from tests.tablectl_runs import in_process, tablectl

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
Run = Callable[..., subprocess.CompletedProcess[str]]
DEMO = Path(__file__).resolve().parents[2] / "configs" / "demo.toml"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """tablectl in this process: the same main() the console script calls."""
    return lambda *args: in_process(capsys, *args)


def make_journal(path: Path, n: int, table_id: str = "T1") -> None:
    j = Journal(path, table_id, "boot-a")
    j.append(
        [DomainEvent("card.dealt", "655a.10(b)", {"n": i}, "T1-r000001", {"card": "Ah"}) for i in range(1, n + 1)], T0
    )
    j.close()


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    path = tmp_path / "j.sqlite"
    make_journal(path, 12)
    return path


def test_verify_intact_and_broken(journal: Path) -> None:
    ok = tablectl("journal", "verify", "--journal", str(journal))
    assert ok.returncode == 0, ok.stderr
    assert "intact: 12 rows checked (T1 to seq 12)" in ok.stdout
    db = sqlite3.connect(journal)
    db.execute("UPDATE events SET payload = '{\"n\":99}' WHERE seq = 5")
    db.commit()
    db.close()
    bad = tablectl("journal", "verify", "--journal", str(journal))
    assert bad.returncode == 1
    assert "BROKEN: altered row at seq 5 (table T1)" in bad.stdout
    as_json = tablectl("journal", "verify", "--json", "--journal", str(journal))
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and report["ok"] is False
    assert (report["first_break"]["seq"], report["first_break"]["what"], report["rows_checked"]) == (
        5,
        "altered row",
        12,
    )


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no journal at"),
        ("text", "is not a tablectl journal"),
        ("newer", "newer than this software understands"),
        ("none", "say which journal: --journal FILE, or --config FILE"),
    ],
)
def test_unreadable_journals_exit_2_naming_the_problem(cli: Run, tmp_path: Path, setup: str, message: str) -> None:
    path = tmp_path / "x.sqlite"
    if setup == "text":
        path.write_text("hello\n" * 200)
    elif setup == "newer":
        sqlite3.connect(path).execute("PRAGMA user_version=7").connection.close()
    args = ["journal", "verify"] + ([] if setup == "none" else ["--journal", str(path)])
    proc = cli(*args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert setup != "missing" or not path.exists()


def test_usage_errors_exit_2(cli: Run) -> None:
    assert cli("journal", "tail", "-n", "0", "--journal", "x").returncode == 2
    both = cli("journal", "tail", "--journal", "a", "--config", "b")
    assert both.returncode == 2 and "not allowed with" in both.stderr
    helptext = cli("journal", "export", "--help").stdout
    assert "table PC only" in " ".join(helptext.split())


def test_tail_text_and_json_never_show_the_cards(cli: Run, journal: Path) -> None:
    text = cli("journal", "tail", "-n", "3", "--journal", str(journal))
    lines = text.stdout.splitlines()
    assert text.returncode == 0 and len(lines) == 3
    assert lines[0].split()[0] == "10" and "card.dealt [655a.10(b)] T1-r000001" in lines[0]
    rows = [
        json.loads(x)
        for x in cli("journal", "tail", "-n", "2", "--json", "--journal", str(journal)).stdout.splitlines()
    ]
    assert [r["seq"] for r in rows] == [11, 12]
    assert all("sealed" not in r and len(r["hash"]) == 64 for r in rows)
    assert "Ah" not in text.stdout


def test_tail_follow_prints_what_the_daemon_writes(journal: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "journal",
            "tail",
            "-n",
            "1",
            "--follow",
            "--json",
            "--journal",
            str(journal),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert json.loads(lines.get(timeout=20))["seq"] == 12
        j = Journal(journal, "T1", "boot-b")
        j.append([DomainEvent("round.completed", "655a.11(j)", {"round_no": 1})], T0)
        j.close()
        new = json.loads(lines.get(timeout=20))
        assert (new["seq"], new["type"], new["boot_id"]) == (13, "round.completed", "boot-b")
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0


def test_export_in_seq_order_with_hashes_and_sealed_only_when_asked(cli: Run, journal: Path, tmp_path: Path) -> None:
    public = cli("journal", "export", "--journal", str(journal))
    rows = [json.loads(x) for x in public.stdout.splitlines()]
    assert public.returncode == 0 and [r["seq"] for r in rows] == list(range(1, 13))
    stored = dict(sqlite3.connect(journal).execute("SELECT seq, hash FROM events").fetchall())
    assert all(r["hash"] == stored[r["seq"]] for r in rows)
    assert all("sealed" not in r for r in rows) and "Ah" not in public.stdout
    out = tmp_path / "sealed.jsonl"
    sealed = cli("journal", "export", "--sealed", "--out", str(out), "--journal", str(journal))
    assert sealed.returncode == 0 and "WITH card identities (table PC only)" in sealed.stderr
    assert [json.loads(x)["sealed"] for x in out.read_text().splitlines()] == [{"card": "Ah"}] * 12


def test_long_export_shows_progress(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite"
    make_journal(path, PROGRESS_EVERY + 5)
    proc = cli("journal", "export", "--out", str(tmp_path / "big.jsonl"), "--journal", str(path))
    assert proc.returncode == 0
    assert f"exported {PROGRESS_EVERY} of {PROGRESS_EVERY + 5} rows" in proc.stderr
    assert len((tmp_path / "big.jsonl").read_text().splitlines()) == PROGRESS_EVERY + 5


def test_config_chooses_the_journal(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configured = tmp_path / "configured.sqlite"
    make_journal(configured, 4, "demo-ms-1")
    config = tmp_path / "table.toml"
    config.write_text(DEMO.read_text() + f'\n[journal]\npath = "{configured}"\n')
    proc = cli("journal", "verify", "--config", str(config))
    assert proc.returncode == 0 and "intact: 4 rows checked (demo-ms-1 to seq 4)" in proc.stdout
    # Without journal.path: the default path under the state directory, as `tablectl run` uses it.
    state = tmp_path / "state"
    make_journal(state / "tablectl" / "demo-ms-1.sqlite", 2, "demo-ms-1")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    proc = cli("journal", "verify", "--config", str(DEMO))
    assert proc.returncode == 0 and "intact: 2 rows checked" in proc.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("table_id = 5\n")
    proc = cli("journal", "verify", "--config", str(bad))
    assert proc.returncode == 2 and "table_id" in proc.stderr


def test_the_daemon_refuses_a_journal_it_cannot_use(cli: Run, tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    sqlite3.connect(newer).execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}").connection.close()
    proc = cli("demo", "--rounds", "1", "--quiet", "--journal", str(newer), "--broker", "mqtt://127.0.0.1:1")
    assert proc.returncode == 2
    newest = SCHEMA_VERSION
    assert (
        f"schema version {newest + 1}, newer than this software understands ({newest}); upgrade tablectl" in proc.stderr
    )


def test_a_refused_journal_is_one_line_and_no_traceback_after_it(tmp_path: Path) -> None:
    """The refusal is raised in the loop's task: a SystemExit there left the loop at once and the task kept it, so
    asyncio logged "Task exception was never retrieved" with its traceback when the task was collected, on the
    operator's stderr after the message (and, in this process, in whichever later test the collection fell)."""
    newer = tmp_path / "newer.sqlite"
    sqlite3.connect(newer).execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}").connection.close()
    proc = tablectl("demo", "--rounds", "1", "--quiet", "--journal", newer, "--broker", "mqtt://127.0.0.1:1")
    assert proc.returncode == 2, proc.stderr
    assert "newer than this software understands" in proc.stderr
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr, proc.stderr


HOSTILE = "clear\x1b[2J\x1b]0;pwned\x07 back\r over\u202edesrever C1\x85\x9b[31m del\x7f sep\u2028 zw\u200b"
KEPT = "Δημήτρης ดีลเลอร์ é"  # a name in Greek or Thai reads as itself, not as \\u escapes


def test_tail_and_export_escape_what_a_terminal_acts_on_and_read_back_the_same(
    cli: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An event's text is anyone's (a supervisor's reason, a driver's message). Before, tail and export printed it with
    ensure_ascii=False: ESC, CR, C1 controls and U+202E reached the terminal raw. Now every line is printable (str.
    isprintable), stays JSON that reads back to the stored values, and the exported rows still chain: the hashes
    cover the values as stored (docs/journal.md's recipe, run here over the export), not the bytes printed."""
    path = tmp_path / "j.sqlite"
    j = Journal(path, "T1", "boot-a")
    payloads: list[dict[str, Any]] = [{"reason": HOSTILE, "by": KEPT}, {"message": HOSTILE, "n": 2}]
    j.append([DomainEvent("table.note", "655a.7(a)", p, "T1-r000001", {"card": HOSTILE}) for p in payloads], T0)
    j.close()
    capsys.readouterr()  # the journal's own log lines (structlog prints to stdout until the CLI configures it)
    tail_text = cli("journal", "tail", "--journal", str(path)).stdout
    tail_json = cli("journal", "tail", "--json", "--journal", str(path)).stdout
    export = cli("journal", "export", "--sealed", "--journal", str(path)).stdout
    for out in (tail_text, tail_json, export):
        lines = out.splitlines()
        assert len(lines) == 2 and all(line.isprintable() for line in lines), lines
        assert "\x1b" not in out and "\r" not in out and "\u202e" not in out and "\x85" not in out
        assert KEPT in out
    assert "\\u001b[2J" in tail_text and "\\u202e" in tail_text
    rows = [json.loads(line) for line in export.splitlines()]
    assert [r["payload"] for r in rows] == payloads and [r["sealed"] for r in rows] == [{"card": HOSTILE}] * 2
    assert [json.loads(line)["payload"] for line in tail_json.splitlines()] == payloads
    prev = "0" * 64
    for r in rows:  # docs/journal.md, "The hash chain": payload and sealed as their canonical stored text
        stored = [
            json.dumps(r[k], sort_keys=True, separators=(",", ":"), ensure_ascii=False) for k in ("payload", "sealed")
        ]
        fields = [r["seq"], r["event_id"], r["boot_id"], r["ts"], r["table_id"], r["round_id"], r["type"], r["rule"]]
        enc = json.dumps([*fields, *stored], ensure_ascii=False, separators=(",", ":")).encode()
        prev = hashlib.sha256(bytes.fromhex(prev) + enc).hexdigest()
        assert prev == r["hash"], r["seq"]
    verified = cli("journal", "verify", "--journal", str(path))
    assert verified.returncode == 0 and "intact: 2 rows checked" in verified.stdout


EVIL_ID = "T\x1b[2J\u202eX"  # a table id as a journal copied from elsewhere may carry it: ESC sequence, bidi override
EVIL_ID_SHOWN = "T\\x1b[2J\\u202eX"


def test_verify_and_archive_show_paths_and_table_ids_escaped(
    cli: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify, verify --archives, verify --segment (intact and broken) and archive print the journal's path, the
    segment's and every table id as `shown` escapes them (controller/core/shown.py), as tail and the floor's and the
    link's commands do. Before, a directory or table id carrying ESC or U+202E reached the terminal raw."""
    where = tmp_path / "usb\x1b]0;pwned\x07\u202e"
    where.mkdir()
    path = where / "j.sqlite"
    j = Journal(path, EVIL_ID, "boot-a")
    for n in range(1, 5):
        rid = f"{EVIL_ID}-r{n:06d}"
        j.append(
            [
                DomainEvent("round.started", "655a.5(a)", {"round_no": n}, rid),
                DomainEvent("round.completed", "655a.12", {"round_no": n}, rid),
            ],
            T0,
        )
    j.mark_published(list(range(1, j.last_seq + 1)), replayed=False)
    j.close()
    capsys.readouterr()  # the journal's own log lines (structlog prints to stdout until the CLI configures it)
    archives = where / "archive"
    outs = {
        "archive": cli("journal", "archive", "--keep-rounds", "1", "--to", str(archives), "--journal", str(path)),
        "verify": cli("journal", "verify", "--journal", str(path)),
        "verify --archives": cli("journal", "verify", "--archives", str(archives), "--journal", str(path)),
    }
    (seg,) = archives.glob("*.segment.sqlite")
    outs["verify --segment"] = cli("journal", "verify", "--segment", str(seg))
    broken = where / "copy.segment.sqlite"
    broken.write_bytes(seg.read_bytes())
    db = sqlite3.connect(broken)
    db.execute("UPDATE events SET payload = '{\"round_no\":9}' WHERE seq = 2")
    db.commit()
    db.close()
    outs["verify --segment broken"] = cli("journal", "verify", "--segment", str(broken))
    for what, proc in outs.items():
        assert proc.returncode == (1 if what.endswith("broken") else 0), (what, proc.stdout, proc.stderr)
        assert all(line.isprintable() for line in proc.stdout.splitlines()), (what, proc.stdout)
        assert not any(c in proc.stdout for c in "\x1b\x07\u202e"), (what, proc.stdout)
        assert "usb\\x1b]0;pwned\\x07\\u202e" in proc.stdout and EVIL_ID_SHOWN in proc.stdout, (what, proc.stdout)
    assert f"({EVIL_ID_SHOWN} to seq 8; {EVIL_ID_SHOWN}: 6 rows" in outs["verify --archives"].stdout
    assert f"altered row at seq 2 (table {EVIL_ID_SHOWN})" in outs["verify --segment broken"].stdout
    # --json: one printable line that reads back to the table id as stored.
    as_json = cli("journal", "verify", "--segment", str(seg), "--json").stdout
    assert as_json.rstrip("\n").isprintable() and json.loads(as_json)["segment"]["table_id"] == EVIL_ID, as_json


def test_error_lines_show_paths_escaped(cli: Run, tmp_path: Path) -> None:
    """The errors (a journal that is not there, a config that cannot be read) quote the path the
    operator gave, as `shown` escapes it. Before, a directory named with ESC or U+202E reached the terminal raw."""
    where = tmp_path / "usb\x1b]0;pwned\x07\u202e"
    where.mkdir()
    outs = {
        "journal verify": cli("journal", "verify", "--journal", str(where / "missing.sqlite")),
        "check-config": cli("check-config", str(where / "missing.toml")),
        "settle": cli("settle", "--config", str(where / "missing.toml"), str(where / "missing.json")),
    }
    for what, proc in outs.items():
        said = proc.stdout + proc.stderr  # check-config reports on stdout, the others fail on stderr
        assert proc.returncode != 0, (what, said)
        assert not any(c in said for c in "\x1b\x07\u202e"), (what, said)  # cannot drive a terminal...
        assert "\\x1b]0;pwned\\x07\\u202e" in said, (what, said)  # ...and still names the path
