"""A journal file that is damaged, not an earlier state (a kill -9 inside a WAL checkpoint with the -wal then lost, a
truncated file, a page of zeros, a damaged header: tests/journal/torn_files.py builds each deterministically): the
daemon refuses to start on it, exit status 2, one line naming the file, the damage and the fix, and nothing is
journaled or published; it neither starts a fresh table in its place nor plays on from what it can read.
`tablectl journal verify` says the same. Before, a torn file whose schema page was intact, and one with a page of
zeros, stopped `tablectl run` with exit 1 as "unexpected DatabaseError (a bug)" (which systemd restarts), and the
others were called "not a tablectl journal" with the advice to move them aside, which starts a fresh table.

Real parts: the real `tablectl run` (tests/tablectl_runs.py's TABLECTL) on the demo table's simulated devices (a
process of their own), a real mosquitto, real SQLite files damaged on disk."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog.testing

from controller.core.events import DomainEvent
from controller.store.anchor import read_sidecar
from controller.store.journal import Journal
from tests.broker import Mosquitto, fresh_id, retained_topics
from tests.e2e.conftest import table_config
from tests.e2e.sim_devices import running_simulators
from tests.journal.torn_files import COMMITS, DAMAGES, T0, journal_with_wal
from tests.tablectl_runs import TABLECTL, here

BOUND_S = 60  # a bound on failure only


@pytest.fixture(scope="module")
def simulators(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with running_simulators(tmp_path_factory.mktemp("sims") / "ports.json") as ports:
        yield ports


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def says_damaged(text: str, journal: Path) -> None:
    """The one line an operator reads: the file, that it is damaged (not "not a journal"), and the fix."""
    assert f"journal {journal} is damaged" in text, text
    assert "not an earlier state" in text and "restore the journal" in text, text
    assert f"tablectl journal verify --journal {journal}" in text and "fresh journal" in text, text


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_journal_verify_says_the_file_is_damaged(damage: str, tmp_path: Path) -> None:
    journal = DAMAGES[damage](tmp_path, "t-verify")
    before = digest(journal)
    verify = here("journal", "verify", "--journal", journal)
    assert verify.returncode in (1, 2), verify
    says_damaged(verify.stdout + verify.stderr, journal)
    assert digest(journal) == before


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_the_daemon_refuses_a_damaged_journal_and_journals_and_publishes_nothing(
    damage: str, simulators: Path, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    table_id = fresh_id("dj")
    config = table_config(tmp_path, table_id, table_id)
    journal = DAMAGES[damage](tmp_path / "state", table_id)
    before = digest(journal)
    run = subprocess.run(
        [*TABLECTL, "run", "--config", config, "--ports", simulators, "--broker", mosquitto.url, "--journal", journal],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert run.returncode == 2, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    # What the operator reads besides the JSON log lines (check-config's report for a damaged header, read first).
    says_damaged("\n".join(x for x in run.stderr.splitlines() if not x.startswith("{")), journal)
    assert digest(journal) == before  # nothing journaled, nothing repaired over the evidence
    assert not Path(f"{journal}-wal").exists() or Path(f"{journal}-wal").stat().st_size == 0
    # Nothing published: no retained status, anchor or event under the table's prefix (the broker returns every
    # retained message before a marker published after the subscription).
    assert [t for t in retained_topics(mosquitto.host, mosquitto.port) if table_id in t] == []


def test_a_kill_9_with_the_wal_kept_is_no_damage(tmp_path: Path) -> None:
    """The same files with the -wal kept (a kill -9 anywhere, the -wal beside the file): SQLite finishes the
    checkpoint from it, and verify finds the journal intact; the check does not take a crash for damage."""
    journal = journal_with_wal(tmp_path, "t-kept")
    verify = here("journal", "verify", "--journal", journal)
    assert verify.returncode == 0, verify
    assert "intact: 320 rows checked" in verify.stdout, verify.stdout


def checked(journal: Path, table_id: str) -> bool:
    """Whether the daemon's open of `journal` checks the whole file (its log says so), the journal closed after."""
    with structlog.testing.capture_logs() as logs:
        Journal(journal, table_id, "boot-next").close()
    return any(e["event"] == "journal file checked" and e["sound"] for e in logs)


def closed(journal: Path) -> bool:
    claim = read_sidecar(journal).claim
    assert claim is not None
    return claim.closed


def test_the_whole_file_is_checked_after_a_crash_and_not_after_a_clean_close(tmp_path: Path) -> None:
    """The check costs some 45 s on a 100,000-round journal (docs/performance-history.md): the daemon pays it after a
    crash or a power cut, a -wal lost or not, and not after the journal was closed cleanly (the anchor file's
    `closed`, cleared by the next commit)."""
    journal = journal_with_wal(tmp_path, "t-clean")  # as a kill -9 leaves it, the -wal kept
    assert not closed(journal)
    assert checked(journal, "t-clean")  # after the crash; and this open was closed cleanly
    found = read_sidecar(journal).claim
    assert found is not None and found.closed and found.seq == COMMITS
    assert not checked(journal, "t-clean")
    with Journal(journal, "t-clean", "boot-more") as more:
        more.append([DomainEvent("table.noted", None, {"n": 1})], T0)
        assert not closed(journal)
        copy = tmp_path / "copy"
        copy.mkdir()
        for suffix in ("", "-wal", ".anchor"):  # a kill -9 after a commit
            shutil.copyfile(f"{journal}{suffix}", copy / f"table.sqlite{suffix}")
    assert checked(copy / "table.sqlite", "t-clean")
