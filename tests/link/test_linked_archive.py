"""A linked hit's amount, in cents, agrees across the link's ledger (link_hit in PostgreSQL), the winning table's
journal (link.claim_answered, progressive.settled, progressive.hit, progressive.paid, round.completed) and the round's
archive (`round.recorded`, settled again by `tablectl settle --journal`), with real tables, a real `tablectl link`,
a real PostgreSQL pair and a real mosquitto (605a.8, NY 9 NYCRR 5321.18 as the stand-in; 655a.12(c)(4): the meter at
the player's turn).

Every deal has thirteen hearts on top, so every round hits, and the link's meter at each claim holds the round's own
contributions, sent at the lock-out, which the display the table last heard does not: the archive must settle from the
link's meter at the turn, not from that display (link19: `tablectl settle` paid the display's share, cents apart from
what the link paid and the table settled). A share of the meter is paid like "N for 1" odds (655a.12(c)(1)): the
award includes the wager, so progressive.settled's `paid` is the award less the wager and `returned` the wager.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

from controller.store.reader import JournalReader
from tests.broker import Mosquitto, Subscribe
from tests.floor.conftest import CONFIGS, TableProcess
from tests.link.conftest import LinkProcess, LinkTable, command, link_toml, rows, send
from tests.tablectl_runs import here

pytestmark = [pytest.mark.floor, pytest.mark.e2e]

ROUNDS = 5
WAGER = 500  # the tables' $5 Progressive Payout Wager
HEARTS = ["Ah", "Kh", "Qh", "Jh", "Th", "9h", "8h", "7h", "6h", "5h", "4h", "3h", "2h"]
RANKS = "23456789TJQKA"


def _config(table_id: str, prefix: str, tmp: Path) -> Path:
    """configs/mississippi-stud-progressive.toml as a linked table on paytable B (the link's mega and major)."""
    text = (CONFIGS / "mississippi-stud-progressive.toml").read_text()
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M)
    text = text.replace('prefix = "tablectl"', f'prefix = "{prefix}"')
    text = text.replace('progressive_paytable = "C"', 'progressive_paytable = "B"')
    text = text.replace("progressive_wager_cents = 100", f"progressive_wager_cents = {WAGER}")
    text = re.sub(r"^six_card_bonus_paytable = .*$", "", text, flags=re.M)
    text += '\n[progressive]\nlink = "mega"\nheartbeat_ms = 500\nresend_ms = 1000\n'
    path = tmp / f"{table_id}.toml"
    path.write_text(text)
    return path


def _events(journal: Path) -> list[dict[str, Any]]:
    with JournalReader(journal) as r:
        return [dict(row) for row in r.rows()]


def test_a_linked_hit_is_the_same_cents_in_the_ledger_the_journal_and_the_archive(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str, link_db: str
) -> None:
    rng = random.Random(19)
    config = tmp_path / "link.toml"
    config.write_text(link_toml(link_db, mosquitto.url, unique_id))
    link = LinkProcess(config, tmp_path)
    tables: dict[str, TableProcess] = {}
    try:
        link.start()
        probe = LinkTable("ms-01", "127.0.0.1", mosquitto.port, unique_id)
        probe.until_acked({"kind": "heartbeat"}, within=90)
        probe.close()
        assert send(mosquitto, subscribe, unique_id, "open_link", command("open_link", {}))["accepted"]
        script = tmp_path / "decks.toml"
        decks = []
        for _ in range(ROUNDS + 10):
            rest = [r + s for s in "cdhs" for r in RANKS if r + s not in HEARTS]
            rng.shuffle(rest)
            decks.append(" ".join([*HEARTS, *rest]))
        script.write_text("decks = [\n" + ",\n".join(json.dumps(d) for d in decks) + "\n]\n")
        for tid in ("ms-01", "ms-02"):
            tables[tid] = TableProcess(
                tid, _config(tid, unique_id, tmp_path), tmp_path / f"{tid}.sqlite", tmp_path, mosquitto.url, ROUNDS
            )
            tables[tid].script = script
            tables[tid].start(rng.randrange(1 << 30))
        deadline = time.monotonic() + 240
        while any(t.proc is not None and t.proc.poll() is None for t in tables.values()):
            assert time.monotonic() < deadline, "the tables did not finish their rounds\n" + link.log()[-3000:]
            time.sleep(0.5)
        assert all(t.completed() == ROUNDS for t in tables.values()), link.log()[-3000:]
        checked = sum(_check_table(tid, t, link_db) for tid, t in tables.items())
        assert checked >= 2, "hearts on top of every deal: a progressive wager there hits"
    finally:
        for t in tables.values():
            if t.proc is not None and t.proc.poll() is None:
                t.proc.kill()
        link.stop()


def _check_table(tid: str, t: TableProcess, dsn: str) -> int:
    """Each of this table's hits: the same cents in link_hit, the journal's events and `tablectl settle`."""
    ledger = {
        (rid, seat, level): (amount, before)
        for rid, seat, level, amount, before in rows(
            dsn,
            "SELECT round_id, seat, level, amount_cents, meter_before_cents FROM link_hit WHERE table_id = %s",
            tid,
        )
    }
    after = {
        (rid, seat, level): meter
        for rid, seat, level, meter in rows(
            dsn,
            "SELECT payload->>'round_id', (payload->>'seat')::int, payload->>'level', "
            "(payload->>'meter_after_cents')::bigint FROM link_event WHERE type = 'link.jackpot_pending' "
            "AND payload->>'table_id' = %s",
            tid,
        )
    }
    events = _events(t.journal)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_type.setdefault(e["type"], []).append({**e["payload"], "round_id": e["round_id"]})
    hits = {(p["round_id"], p["seat"], p["level"]): p for p in by_type.get("progressive.hit", [])}
    assert set(hits) == set(ledger), f"{tid}: the journal's hits and the link's ledger differ"
    for (rid, seat, level), (amount, before) in ledger.items():
        # The archive first: `tablectl settle` of the round's record pays what the link paid at that turn.
        again = _settle_again(t, rid)
        row = next(w for s in again["seats"] if s["seat"] == seat for w in s["wagers"] if w["wager"] == "progressive")
        assert row["paid"] + row["returned"] == amount, f"{tid} {rid}: the archive settles another amount: {row}"
        completed = next(p for p in by_type["round.completed"] if p["round_id"] == rid)
        assert again["totals"]["paid"] == completed["paid"], f"{tid} {rid}: the archive and the table disagree"
        answered = next(p for p in by_type["link.claim_answered"] if (p["round_id"], p["seat"]) == (rid, seat))
        assert (answered["amount"], answered["meter_before"]) == (amount, before)
        assert (answered["wager"], answered["paid_besides_wager"]) == (WAGER, amount - WAGER)
        assert hits[(rid, seat, level)]["amount"] == amount
        # The hit event says the meter the link left (after the award and its reseed), as its claim answer does:
        # what a supervisor watching the table's events sees the sign restart from.
        assert answered["meter_after"] == after.get((rid, seat, level)), f"{tid} {rid}: {answered}"
        assert hits[(rid, seat, level)].get("meter_after") == answered["meter_after"], f"{tid} {rid}: no meter after"
        settled = next(
            p for p in by_type["progressive.settled"] if (p["round_id"], p["seat"]) == (rid, seat)
        )  # "N for 1": the award, the wager included, is paid (award less the wager) and returned (the wager)
        assert (settled["award"], settled["paid"], settled["returned"]) == (amount, amount - WAGER, WAGER)
        paid = [p for p in by_type["progressive.paid"] if (p["round_id"], p["seat"]) == (rid, seat)]
        assert [p["amount"] for p in paid] == [amount], f"{tid} {rid}: paid once, the link's amount"
    return len(ledger)


def _settle_again(t: TableProcess, round_id: str) -> dict[str, Any]:
    argv = ["settle", "--config", str(t.config), "--journal", str(t.journal), "--round", round_id]
    out = here(*argv)
    assert out.returncode == 0, out.stdout + out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result
