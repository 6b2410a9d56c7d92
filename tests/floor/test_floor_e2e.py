"""A floor of three real tables (`tablectl demo` on simulated devices over real ptys: Mississippi Stud with
progressives, 655a; Let It Ride with both progressives, 643a; Cajun Stud, 683a) publishing to a real mosquitto, and
`tablectl floor` archiving them into a real PostgreSQL. The floor service and the tables are killed with SIGKILL at
seeded instants and restarted (a table on its own journal) until every table has played its rounds.

Then: the archive equals the union of the tables' journals (the same events, the same content, nothing twice), with
no integrity alarm, no open gap and nothing refused; and the report's figures, recomputed here independently from
the journals, agree: rounds, handle, collected and paid per wager, take rates, paytable rows hit, jackpots paid and
supervisor commands; and `tablectl journal totals` on each table's journal equals the report's table rows.
Round recall shows a round's events as the journal has them, and every report format renders.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.core.cards import STANDARD_DECK
from controller.store.reader import JournalReader
from tests.broker import Mosquitto, fresh_id
from tests.floor.conftest import (
    KEYS,
    FloorProcess,
    TableProcess,
    count,
    floor_toml,
    table_config,
    wait_for,
)
from tests.floor.reconciling import journal_totals_cli, reconcile
from tests.tablectl_runs import here

# One worker runs the module: its tests read what one `played` fixture made (about 20 s of tables, kills and a floor),
# which a module split across the two xdist workers would make twice.
pytestmark = [pytest.mark.e2e, pytest.mark.floor, pytest.mark.xdist_group("floor_e2e")]

SEED = 16_016
ROUNDS = 24  # per table, over all its boots
PER_BOOT = 9
TABLES = {"fl-ms": "demo.toml", "fl-lir": "let-it-ride-progressive.toml", "fl-cajun": "cajun-stud.toml"}
# 643a.10(b), as tests/e2e/test_kill9_recovery.py deals it: the first player's As Ks Qs is a mini-royal in spades,
# 100 % of the Three-Card Progressive meter (643a.12(d)(1)), so jackpots are hit, validated by the demo's
# floorperson (a signed command) and paid within the run; every third shuffle deals it.
LIR_TOP = "As Ks Qs 2c 5d 9c 3d 8c Jd 4c 7d Tc Kh Qh Jh Th 9h 8h 7h 6h 5h 4h 3h".split()  # noqa: SIM905


@dataclass
class Floor:
    dsn: str
    config: Path
    tables: dict[str, TableProcess]
    floor_kills: int = 0
    journals: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _play(floor: FloorProcess, tables: dict[str, TableProcess], rng: random.Random) -> int:
    """Run the tables to ROUNDS each, killing the floor and the tables at seeded instants; the floor kills."""
    floor_kills = 0
    deadline = time.monotonic() + 240  # a bound on failure only
    while True:
        for t in tables.values():
            # A table killed is restarted even with its rounds played, as systemd would restart it: the events it
            # journaled but had not yet published reach the floor only from its next boot.
            if t.proc is not None and t.proc.poll() is not None and (t.completed() < ROUNDS or t.proc.returncode < 0):
                t.start(rng.randrange(1 << 30))
        if all(t.proc is not None and t.proc.poll() is not None for t in tables.values()):
            return floor_kills
        assert time.monotonic() < deadline, "the tables did not finish their rounds"
        time.sleep(rng.uniform(0.15, 0.6))  # the next kill's instant (scenario, not synchronisation)
        victim = rng.choice(["floor", "table", "none"])
        if victim == "floor" and floor_kills < 5:
            floor.kill()
            floor_kills += 1
            time.sleep(rng.uniform(0.0, 0.4))  # the floor stays down a moment: the broker queues for it
            floor.start()
        elif victim == "table":
            t = rng.choice(list(tables.values()))
            if t.kills < 2 and t.proc is not None and t.proc.poll() is None:
                t.proc.kill()
                t.proc.wait()
                t.kills += 1


def _missing(dsn: str, table: TableProcess, rows: list[dict[str, Any]]) -> str:
    """What a failed wait names: the table's seqs the archive lacks, and which of them its broker never acknowledged."""
    with psycopg.connect(dsn) as conn:
        have = {int(s) for (s,) in conn.execute("SELECT seq FROM events WHERE table_id = %s", (table.table_id,))}
    lacking = sorted(int(r["seq"]) for r in rows if int(r["seq"]) not in have)
    with JournalReader(table.journal) as r:
        unacked = sum(1 for row in r.rows() if row["published_at"] is None)
    return (
        f"{table.table_id}: {len(lacking)} of {len(rows)} rows missing (first {lacking[:5]}, last {lacking[-5:]}); "
        f"{unacked} journal rows never acknowledged by the broker; boots {table.boots}, kills {table.kills}, "
        f"last exit {None if table.proc is None else table.proc.returncode}"
    )


@pytest.fixture(scope="module")
def played(mosquitto: Mosquitto, pg_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Floor]:
    tmp = tmp_path_factory.mktemp("floor-e2e")
    prefix = fresh_id("floor")
    dsn = pg_cluster.create_database("floor_e2e")
    config = tmp / "floor.toml"
    config.write_text(floor_toml(dsn, mosquitto.url, prefix, f"floor-e2e-{prefix}"))
    logs = tmp / "logs"
    logs.mkdir()
    floor = FloorProcess(config, logs)
    floor.start()
    # The floor's session must exist at the broker before the tables publish, or their first events go nowhere.
    wait_for(lambda: "subscribed to the tables" in floor.log(), 30, "the floor's subscription")
    tables = {
        tid: TableProcess(
            tid, table_config(tid, name, prefix, tmp), tmp / f"{tid}.sqlite", logs, mosquitto.url, PER_BOOT
        )
        for tid, name in TABLES.items()
    }
    rng = random.Random(SEED)
    deck = [*LIR_TOP, *(c for c in STANDARD_DECK if c not in LIR_TOP)]
    decks = [" ".join(deck if i % 3 == 0 else rng.sample(STANDARD_DECK, 52)) for i in range(PER_BOOT * 3)]
    tables["fl-lir"].script = tmp / "lir-decks.toml"
    tables["fl-lir"].script.write_text("decks = [" + ", ".join(f'"{d}"' for d in decks) + "]\n")
    for t in tables.values():
        t.start(rng.randrange(1 << 30))
    try:
        kills = _play(floor, tables, rng)
        result = Floor(dsn, config, tables, kills)
        result.journals = {tid: t.rows() for tid, t in tables.items()}
        for tid, rows in result.journals.items():

            def archived(tid: str = tid, n: int = len(rows)) -> bool:
                return count(dsn, "SELECT count(*) FROM events WHERE table_id = %s", tid) >= n

            try:
                wait_for(archived, 60, f"the archive to hold {tid}'s journal")
            except AssertionError as err:
                raise AssertionError(f"{err}\n{_missing(dsn, tables[tid], rows)}\nfloor log:\n{floor.log()}") from None
        assert floor.stop() == 0
        yield result
    finally:
        floor.kill()
        for t in tables.values():
            if t.proc is not None and t.proc.poll() is None:
                t.proc.kill()


def _archive(dsn: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT event_id, boot_id, seq, ts_text, table_id, round_id, type, rule, payload FROM events"
            " ORDER BY table_id, seq"
        ).fetchall()
    return [dict(zip(KEYS, r, strict=True)) for r in rows]


def test_the_archive_equals_the_union_of_the_journals_across_kills(played: Floor) -> None:
    assert played.floor_kills >= 2, "the scenario must kill the floor service"
    assert sum(t.kills for t in played.tables.values()) >= 2, "the scenario must kill tables"
    assert all(t.completed() >= ROUNDS for t in played.tables.values())
    archive = _archive(played.dsn)
    union = sorted((r for rows in played.journals.values() for r in rows), key=lambda r: (r["table_id"], r["seq"]))
    assert len(archive) == len(union) == len({r["event_id"] for r in archive})
    assert archive == union
    assert count(played.dsn, "SELECT count(*) FROM integrity_alarms") == 0
    assert count(played.dsn, "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL") == 0
    assert count(played.dsn, "SELECT count(*) FROM rejected_messages") == 0
    for tid, t in played.tables.items():
        boots = len({r["boot_id"] for r in played.journals[tid]})
        assert count(played.dsn, "SELECT count(DISTINCT boot_id) FROM births WHERE table_id = %s", tid) >= 1
        assert count(played.dsn, "SELECT count(DISTINCT boot_id) FROM statuses WHERE table_id = %s", tid) <= boots
        assert boots <= t.boots  # a boot killed before its first event journals nothing


def _report(played: Floor, *extra: str) -> str:
    today = datetime.now(UTC).date()
    argv = ["report", "--config", str(played.config), "--from", str(today - timedelta(days=1))]
    done = here(*argv, "--to", str(today + timedelta(days=1)), *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _expected_from_journals(journals: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The report's figures at the table scope, computed straight from the journals."""
    wagers: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    rounds: Counter[str] = Counter()
    takes: Counter[tuple[str, str]] = Counter()
    played: Counter[str] = Counter()
    jackpots: Counter[tuple[str, str]] = Counter()
    commands: Counter[tuple[str, str, str]] = Counter()
    for tid, rows in journals.items():
        for r in rows:
            t, p = r["type"], r["payload"]
            if t == "round.completed":
                rounds[tid] += 1
            elif t == "no_more_bets":
                for spots in p["wagers"].values():
                    played[tid] += 1
                    for spot in spots:
                        takes[(tid, spot)] += 1
            elif t == "seat.folded":
                for wager, amount in p["collected"].items():
                    acc = wagers[(tid, wager)]
                    acc[0], acc[1], acc[2] = acc[0] + 1, acc[1] + amount, acc[2] + amount
            elif t.endswith(".settled"):
                for w in p.get("wagers", [p]):
                    if w.get("outcome") == "withdrawn":
                        continue
                    acc = wagers[(tid, w.get("wager", t.split(".")[0]))]
                    acc[0] += 1
                    acc[1] += w.get("amount", 0)
                    acc[2] += w.get("collected", 0)
                    acc[3] += w["paid"]
            elif t == "progressive.paid":
                jackpots[(tid, p["level"])] += p["amount"]
            elif t == "command.accepted":
                commands[(tid, p["verb"], p["role"])] += 1
    return {
        "rounds": dict(rounds),
        "wagers": {k: v for k, v in wagers.items()},
        "takes": {k: (n, played[k[0]]) for k, n in takes.items()},
        "jackpots": dict(jackpots),
        "commands": dict(commands),
    }


def test_the_report_agrees_with_figures_recomputed_from_the_journals(played: Floor) -> None:
    report = json.loads(_report(played, "--format", "json"))["sections"]
    want = _expected_from_journals(played.journals)
    table_rows = {k: [r for r in rows if r.get("scope", "table") == "table"] for k, rows in report.items()}
    assert {r["id"]: r["rounds"] for r in table_rows["rounds"]} == want["rounds"]
    got_wagers = {
        (r["id"], r["wager"]): [r["settled"], r["handle_cents"], r["collected_cents"], r["paid_cents"]]
        for r in table_rows["wagers"]
    }
    assert got_wagers == want["wagers"]
    for r in table_rows["wagers"]:
        assert r["win_cents"] == r["collected_cents"] - r["paid_cents"]
    got_takes = {(r["id"], r["wager"]): (r["seats_placing"], r["seats_playing"]) for r in table_rows["take_rates"]}
    assert got_takes == want["takes"]
    assert {(r["id"], r["level"]): r["paid_cents"] for r in table_rows["jackpots"]} == want["jackpots"]
    assert {(r["id"], r["verb"], r["role"]): r["count"] for r in table_rows["commands"]} == want["commands"]
    assert want["jackpots"], "the progressive tables should have paid a jackpot in this run"
    floor_rounds = next(r for r in report["rounds"] if r["scope"] == "floor")
    assert floor_rounds["rounds"] == sum(want["rounds"].values())
    floor_handle = sum(r["handle_cents"] for r in report["wagers"] if r["scope"] == "floor")
    assert floor_handle == sum(v[1] for v in want["wagers"].values())


def test_each_tables_journal_totals_equal_the_report(played: Floor) -> None:
    """What an auditor does by hand (docs/floor.md, "Reconciling"): `tablectl journal totals` on each table's own
    journal, every figure equal to the report's table rows, to the cent; the tables were killed and replayed late."""
    report = json.loads(_report(played, "--format", "json"))["sections"]
    table_rows = {k: [r for r in rows if r.get("scope") == "table"] for k, rows in report.items()}
    today = datetime.now(UTC).date()
    period = ("--from", str(today - timedelta(days=1)), "--to", str(today + timedelta(days=1)))
    for tid, t in played.tables.items():
        mine = journal_totals_cli(t.journal, *period)
        assert mine["table_id"] == tid and mine["rounds"] >= ROUNDS
        reconcile(table_rows, mine)
        if tid in ("fl-ms", "fl-lir"):  # progressive tables: what their wagers fed each meter, reconciled above
            assert mine["contributions"], f"{tid} should have contributed to its progressive meters"
    assert any(j for t in played.tables.values() for j in journal_totals_cli(t.journal, *period)["jackpots"])


def test_round_recall_shows_the_rounds_events_as_journaled(played: Floor) -> None:
    rows = played.journals["fl-lir"]
    round_id = next(r["round_id"] for r in rows if r["type"] == "hand.settled")
    done = here("floor", "--config", played.config, "round", round_id, "--json")
    assert done.returncode == 0, done.stderr
    story = json.loads(done.stdout)
    assert [line["seq"] for line in story["lines"]] == [r["seq"] for r in rows if r["round_id"] == round_id]
    settled = [r for r in rows if r["round_id"] == round_id and r["type"].endswith(".settled")]
    assert len(story["settlements"]) == len(settled)
    assert all(s["rule"].startswith("643a.11") for s in story["settlements"])
    assert story["outcome"] == "completed"
    last = here("floor", "--config", played.config, "rounds", "fl-lir", "--last", "3", "--json")
    assert last.returncode == 0, last.stderr
    newest = sorted({r["round_id"] for r in rows if r["round_id"]})[-3:][::-1]
    assert [s["round_id"] for s in json.loads(last.stdout)] == newest


def test_every_report_format_renders_and_the_html_is_self_contained(played: Floor) -> None:
    text = _report(played)
    assert "Handle, win and hold by wager" in text and "Hit frequency of each paytable row" in text
    table = list(csv.reader(io.StringIO(_report(played, "--format", "csv"))))
    assert ["section", "scope", "id", "rounds", "voided", "active_hours", "rounds_per_hour"] in table
    html = _report(played, "--format", "html")
    assert html.count("<svg") == 3
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the HTML must fetch nothing"
    assert "@media print" in html
    by_game = json.loads(_report(played, "--game", "643a", "--format", "json"))["sections"]["rounds"]
    assert {r["id"] for r in by_game} == {"fl-lir", "643a", "all"}
    one = json.loads(_report(played, "--table", "fl-cajun", "--format", "json"))["sections"]["wagers"]
    assert {r["id"] for r in one if r["scope"] == "table"} == {"fl-cajun"}
    status = here("floor", "--config", played.config, "status")
    assert status.returncode == 0
    assert all(tid in status.stdout for tid in TABLES)
