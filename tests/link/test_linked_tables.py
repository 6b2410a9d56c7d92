"""Three real linked tables (`tablectl demo` on simulated devices over ptys, each its own journal) feeding one real
`tablectl link` controller on a real PostgreSQL primary with a synchronous standby, through a real mosquitto
(605a.8, NY 9 NYCRR 5321.18 as the stand-in). kill -9 of the tables, of the controller and of the primary (the
standby promoted) at seeded random moments: no contribution lost or counted twice (each journal's sent keys against
the link's rows), every hit claimed once and paid what the link recorded in commit order, the link's books balance
(`tablectl link report`), and a table cut off from the controller takes no progressive wager past its lease.

Bounded for CI: TABLECTL_LINK_ROUNDS rounds per table (default below, about a minute); the long campaign sets more.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.store import snapshot
from controller.store.schema import JournalError
from tests.broker import Mosquitto, Subscribe
from tests.floor.conftest import CONFIGS, TableProcess
from tests.link.conftest import (
    ROOT,
    TABLES,
    LinkProcess,
    LinkTable,
    Pair,
    command,
    link_toml,
    make_pair,
    rows,
    send,
)
from tests.tablectl_runs import here, tablectl

pytestmark = [pytest.mark.floor, pytest.mark.e2e]

ROUNDS = 8  # per table in CI (the suite stays under 15 min); TABLECTL_LINK_ROUNDS=200 for the campaign
LEASE_MS = 2000
# Thirteen hearts from the top: whatever the number of players up to five, the last one dealt makes a straight flush
# (a major hit under 655a.12(c)(1) paytable B) and a lone player a royal flush (the mega), when they made the wager.
HEARTS = ["Ah", "Kh", "Qh", "Jh", "Th", "9h", "8h", "7h", "6h", "5h", "4h", "3h", "2h"]
RANKS = "23456789TJQKA"


def full_deck(top: list[str], rng: random.Random) -> list[str]:
    rest = [r + s for s in "cdhs" for r in RANKS if r + s not in top]
    rng.shuffle(rest)
    return [*top, *rest]


def linked_table_config(table_id: str, prefix: str, tmp: Path) -> Path:
    """configs/mississippi-stud-progressive.toml as a linked table on paytable B (the link's mega and major)."""
    text = (CONFIGS / "mississippi-stud-progressive.toml").read_text()
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M)
    text = text.replace('prefix = "tablectl"', f'prefix = "{prefix}"')
    text = text.replace('progressive_paytable = "C"', 'progressive_paytable = "B"')
    text = text.replace("progressive_wager_cents = 100", "progressive_wager_cents = 500")
    text = re.sub(r"^six_card_bonus_paytable = .*$", "", text, flags=re.M)  # no Six Card Bonus cards in the deal
    text += f'\n[progressive]\nlink = "mega"\nheartbeat_ms = {LEASE_MS // 4}\nresend_ms = 1000\n'
    path = tmp / f"{table_id}.toml"
    path.write_text(text)
    return path


def journal_rows(path: Path) -> list[dict[str, Any]]:
    from controller.store.reader import JournalReader

    with JournalReader(path) as r:
        return [dict(row) for row in r.rows()]


def final_outbox(path: Path, table_id: str) -> set[str]:
    """The outbox as the table's last stored engine state holds it (read only, the journal not opened to write)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        row = db.execute(
            "SELECT body FROM critical_state WHERE table_id = ? AND record = ? ORDER BY copy LIMIT 1",
            (table_id, snapshot.RECORD),
        ).fetchone()
    return (
        set(snapshot.decode(bytes(row[0]) if isinstance(row[0], bytes) else str(row[0]).encode()).link_outbox)
        if row
        else set()
    )


def test_three_linked_tables_survive_kills_of_tables_controller_and_primary(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    rounds = int(os.environ.get("TABLECTL_LINK_ROUNDS", ROUNDS))
    rng = random.Random(1516)
    pair: Pair = make_pair()
    logs = tmp_path / "logs"
    logs.mkdir()
    tables: dict[str, TableProcess] = {}
    link: LinkProcess | None = None
    try:
        dsn = pair.dsn("link")
        config = tmp_path / "link.toml"
        config.write_text(link_toml(dsn, mosquitto.url, unique_id, lease_ms=LEASE_MS))
        link = LinkProcess(config, logs)
        link.start()
        probe = LinkTable("ms-01", "127.0.0.1", mosquitto.port, unique_id)
        probe.until_acked({"kind": "heartbeat"}, within=90)  # the controller is up and subscribed
        probe.close()
        assert send(mosquitto, subscribe, unique_id, "open_link", command("open_link", {}))["accepted"]
        script = tmp_path / "decks.toml"
        decks = [full_deck(HEARTS if i % 2 == 0 else [], rng) for i in range(rounds + 40)]
        script.write_text("decks = [\n" + ",\n".join(json.dumps(" ".join(d)) for d in decks) + "\n]\n")
        for tid in TABLES:
            tables[tid] = TableProcess(
                tid,
                linked_table_config(tid, unique_id, tmp_path),
                tmp_path / f"{tid}.sqlite",
                logs,
                mosquitto.url,
                rounds_per_boot=max(3, rounds // 3),
                script=script,
            )
            tables[tid].start(rng.randrange(1 << 30))
        # The faults, at seeded random moments: a table killed, the controller killed, the primary killed.
        kills: list[tuple[str, float]] = []
        link_killed_at: list[datetime] = []
        primary_done = False
        deadline = time.monotonic() + 60 + rounds * 12
        while time.monotonic() < deadline:
            done = {tid: _completed(t) for tid, t in tables.items()}
            if all(n >= rounds for n in done.values()):
                break
            for tid, t in tables.items():
                if t.proc is not None and t.proc.poll() is not None and done[tid] < rounds:
                    t.start(rng.randrange(1 << 30))  # a boot's rounds played (or killed): the next boot
            roll = rng.random()
            played = sum(done.values())
            # Each fault at a seeded moment, and each at least once whatever the machine's pace: the table and the
            # controller by the time a third of the rounds are played, the primary by two thirds.
            if not kills and played >= len(TABLES) * rounds // 3:
                roll = 0.0
            elif not link_killed_at and played >= len(TABLES) * rounds // 3:
                roll = 0.05
            elif not primary_done and played >= 2 * len(TABLES) * rounds // 3:
                roll = 0.06
            if roll < 0.04:
                tid = rng.choice(TABLES)
                t = tables[tid]
                if t.proc is not None and t.proc.poll() is None:
                    t.proc.kill()
                    t.proc.wait()
                    t.kills += 1
                    kills.append((tid, time.monotonic()))
            elif roll < 0.055:
                link_killed_at.append(datetime.now().astimezone())
                link.kill()
                time.sleep(rng.uniform(0.5, 2 * LEASE_MS / 1000))  # the tables' leases lapse meanwhile
                link.start()
            elif roll < 0.065 and not primary_done and played > rounds:
                primary_done = True
                pair.primary.kill()  # a power cut of the primary; the standby has every acknowledged commit
                pair.standby.promote()
            time.sleep(0.25)
        else:
            raise AssertionError(
                f"the tables did not play {rounds} rounds each: {done}\n" + link.log()[-3000:] + _logs(logs)
            )
        for t in tables.values():
            if t.proc is not None:
                t.proc.wait(timeout=60)
        assert kills and link_killed_at and primary_done, (
            "the seeded campaign kills tables, the controller, the primary"
        )
        summary = _check_books(tables, dsn, config, link, link_killed_at, kills)
        print(f"linked campaign: {summary}, {len(kills)} table kills, {len(link_killed_at)} controller kills, promoted")
    finally:
        for t in tables.values():
            if t.proc is not None and t.proc.poll() is None:
                t.proc.kill()
        if link is not None:
            link.stop()
        pair.remove()


def _completed(t: TableProcess) -> int:
    try:
        return t.completed()
    except JournalError:
        return 0  # the table's first boot is creating its journal right now


def _logs(logs: Path) -> str:
    return "\n".join(p.name + ":\n" + p.read_text(errors="replace")[-1500:] for p in sorted(logs.glob("ms-*.log")))


def _check_books(
    tables: dict[str, TableProcess],
    dsn: str,
    config: Path,
    link: LinkProcess,
    link_killed_at: list[datetime],
    kills: list[tuple[str, float]],
) -> str:
    stored = {
        (t, r, s, w): c
        for t, r, s, w, c in rows(dsn, "SELECT table_id, round_id, seat, wager, cents FROM link_contribution")
    }
    hits = rows(dsn, "SELECT table_id, round_id, seat, level, hit_seq, amount_cents FROM link_hit ORDER BY hit_seq")
    sent_total = 0
    table_hits: list[tuple[str, str, int, str, int, int]] = []
    for tid, t in tables.items():
        events = journal_rows(t.journal)
        pending = final_outbox(t.journal, tid)
        sent = {}
        for e in events:
            p = e["payload"]
            if e["type"] == "link.contribution_sent":
                for c in p["contributions"]:
                    k = (tid, e["round_id"], c["seat"], c["wager"])
                    assert k not in sent, f"{k} sent under two keys"
                    sent[k] = c["cents"]
            elif e["type"] == "progressive.hit":
                table_hits.append((tid, e["round_id"], p["seat"], p["level"], p["order"], p["amount"]))
        sent_total += len(sent)
        mine = {k: v for k, v in stored.items() if k[0] == tid}
        # Nothing the link counted that this table did not send; nothing sent lost (unless still in the outbox).
        assert set(mine) <= set(sent), f"{tid}: the link holds contributions the journal never sent"
        lost = {k for k in sent if k not in mine and f"contribute:{k[1]}" not in pending}
        assert not lost, f"{tid}: sent, never counted and no longer in the outbox: {sorted(lost)[:5]}"
        assert all(mine[k] == sent[k] for k in mine), f"{tid}: an amount changed on the way"
        # A cut-off table takes no progressive wager past its lease: none accepted between a link kill + the lease
        # (and a second for the scheduler) and the table's next `link.up`.
        _no_progressive_wager_while_cut_off(tid, events, link_killed_at)
    assert sent_total > 0 and hits, "the campaign made contributions and hits"
    # Every hit claimed once (the link's key) and paid at its table what the link recorded, in commit order.
    assert Counter((h[0], h[1], h[2], h[3]) for h in hits).most_common(1)[0][1] == 1
    linked = {(h[0], h[1], h[2], h[3]): (h[4], h[5]) for h in hits}
    for tid, rid, seat, level, order, amount in table_hits:
        assert linked[(tid, rid, seat, level)] == (order, amount), "a table paid other than the link recorded"
    paid_once = Counter((h[0], h[1], h[2], h[3]) for h in table_hits)
    assert all(n == 1 for n in paid_once.values()), "a hit announced twice at its table"
    out = here("link", "--config", config, "report", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["balanced"], out.stdout + out.stderr + link.log()
    return f"{sent_total} contributions, {len(hits)} hits"


def _no_progressive_wager_while_cut_off(tid: str, events: list[dict[str, Any]], killed: list[datetime]) -> None:
    for at in killed:
        cutoff = at + timedelta(milliseconds=LEASE_MS + 1000)
        up = next((_ts(e) for e in events if e["type"] == "link.up" and _ts(e) > at), None)
        for e in events:
            if e["type"] != "wager.accepted":
                continue
            p = e["payload"]
            if p.get("spot") == "progressive" and cutoff < _ts(e) and (up is None or _ts(e) < up):
                raise AssertionError(f"{tid} took a progressive wager at {_ts(e)}, the link down since {at}")


def _ts(e: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(e["ts"]))


def test_demo_linked_plays_three_tables_on_one_meter_and_balances(tmp_path: Path) -> None:
    """`tablectl demo --linked --rounds 3 --keep DIR`: its own PostgreSQL, mosquitto, link controller and three
    tables; exits 0 once each played 3 rounds, every contribution on the one meter, the report balanced, the journals
    kept. Seed 1 has hits in round 3 (ms-link-1's, ms-link-2's): the winning tables keep their lease through the
    claim and the paid report (each answer of the link used to withdraw it: `the link grants no lease (open)`)."""
    kept = tmp_path / "kept"
    # A child process: the demo starts its own servers and processes, and a hang is bounded by the timeout.
    out = tablectl("demo", "--linked", "--rounds", "3", "--seed", "1", "--keep", kept, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "balance: exact to the micro-cent" in out.stdout
    for table in ("ms-link-1", "ms-link-2", "ms-link-3"):
        assert re.search(rf"^\s+{table}\s+\$[0-9]", out.stdout, re.M), f"{table} contributed to the link's meter"
    assert "every table played 3 round(s)" in out.stdout
    hits = 0
    for table in ("ms-link-1", "ms-link-2", "ms-link-3"):
        events = journal_rows(kept / f"{table}.sqlite")
        assert (kept / f"{table}.log").exists() and (kept / f"{table}.toml").exists()
        hits += sum(1 for e in events if e["type"] == "link.claim_answered")
        lockouts = [e["payload"]["detail"] for e in events if e["type"] == "progressive.locked_out"]
        assert lockouts == ["the table started: awaiting the link's lease"], f"{table}: {lockouts}"
    assert hits >= 2, "seed 1 wins the linked progressive in round 3"
