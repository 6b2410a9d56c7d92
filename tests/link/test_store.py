"""The link's store against a real PostgreSQL primary with a real synchronous standby (605a.8; NY 9 NYCRR 5321.18
as the stand-in): contributions counted once, hits ordered by commit under the level's row lock, parameters only
while closed, and the reconciliation's balance to the micro-cent (a mismatch tilts the link)."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import psycopg
import pytest

from link.config import ProgressiveFigures, parse_link_config
from link.records import Contribution, Hit, LinkRefused
from link.report import reconcile
from link.schema import migrate
from link.store import LinkStore
from tests.link.conftest import link_toml
from tests.tablectl_runs import here

pytestmark = pytest.mark.floor


def open_store(dsn: str, tmp_path: Path) -> LinkStore:
    config = parse_link_config(link_toml(dsn, "mqtt://127.0.0.1:1", "t"))
    conn = psycopg.connect(dsn, autocommit=True)
    migrate(conn)
    store = LinkStore(conn)
    assert store.initialise(config) is True
    assert store.initialise(config) is False  # a second start seeds nothing again
    return store


def test_each_contribution_counts_once_and_the_books_balance(link_db: str, tmp_path: Path) -> None:
    """Keyed by (table, round, seat, wager), inserted at most once with the meter change in the same transaction."""
    store = open_store(link_db, tmp_path)
    rng = random.Random(15)
    batch = [
        Contribution(f"ms-0{t}", f"r{r}", seat, "progressive", rng.choice([100, 500, 2500]))
        for t in (1, 2, 3)
        for r in range(20)
        for seat in range(1, 4)
    ]
    first = store.contribute(batch)
    again = store.contribute(batch[::-1])  # a resend, in another order
    assert (first.new, first.duplicates) == (len(batch), 0)
    assert (again.new, again.duplicates) == (0, len(batch))
    assert again.display == first.display
    total = sum(c.cents for c in batch)
    levels = store.levels()
    # 11 % + 10 % to mega, 4.25 % to major, exactly, in micro-cents
    assert levels["mega"].contributed_micro == total * 210_000
    assert levels["major"].display_micro == 500_000 * 1_000_000 + total * 42_500
    assert levels["mega"].in_count == levels["major"].in_count == len(batch)
    rec = reconcile(store.conn)
    assert rec.balanced, rec.problems
    mega = next(lv for lv in rec.levels if lv.level == "mega")
    assert sum(mega.by_table_micro.values()) == total * 210_000


def test_hits_racing_across_tables_are_ordered_by_commit(link_db: str, tmp_path: Path) -> None:
    """Two tables claim the mega at once: one commit comes first and takes the meter; the second, under the level's
    row lock, sees the reseeded meter (5321.18: the order of wins recorded)."""
    store = open_store(link_db, tmp_path)
    store.contribute([Contribution("ms-01", f"r{r}", 1, "progressive", 10_000) for r in range(50)])
    grown = store.display()["mega"]
    assert grown == 5_000_000 + 50 * 10_000 * 11 // 100
    results: list[Hit] = []
    gate = threading.Barrier(2)

    def claim(table: str) -> None:
        with psycopg.connect(link_db, autocommit=True) as conn:
            gate.wait()
            hit, new = LinkStore(conn).claim(table, "r-win", 3, "mega", 100, "655a.11(i)(1)(iv)", f"A-{table}")
            assert new
            results.append(hit)

    threads = [threading.Thread(target=claim, args=(t,)) for t in ("ms-02", "ms-03")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first, second = sorted(results, key=lambda h: h.hit_seq)
    assert first.amount_cents == grown
    # the reseed: the reserve (10 % of $5,000 of wagers) moves in, the house tops it up to $50,000
    assert second.meter_before_cents == second.amount_cents == 5_000_000
    assert [h.to_json() for h in store.hits()] == [first.to_json(), second.to_json()]
    again, new = store.claim(first.table_id, "r-win", 3, "mega", 100, "655a.11(i)(1)(iv)", "x")
    assert (again, new) == (first, False)  # a resent claim pays nothing twice
    assert reconcile(store.conn).balanced


def test_a_hit_paid_at_its_table_closes_in_the_links_books_once(link_db: str, tmp_path: Path) -> None:
    """The winning table reports its payment (after a signed validate_jackpot there, 655a.11(i)(1)(iii)-(iv)): the hit
    leaves the pending list once; a resend changes nothing; a wrong amount or an unknown hit is refused."""
    store = open_store(link_db, tmp_path)
    store.contribute([Contribution("ms-01", f"r{r}", 1, "progressive", 10_000) for r in range(10)])
    hit, _ = store.claim("ms-02", "r-win", 3, "mega", 100, "655a.11(i)(1)(iv)", "A-2")
    with pytest.raises(LinkRefused, match="the link awarded"):
        store.paid("ms-02", "r-win", 3, "mega", hit.amount_cents + 1, "floor-ann")
    with pytest.raises(LinkRefused, match="no claimed mega hit at ms-01"):
        store.paid("ms-01", "r-win", 3, "mega", hit.amount_cents, "floor-ann")
    assert [h.validated_by for h in store.hits()] == [None], "a refused report closes nothing"
    seq = store.state().seq
    done, new = store.paid("ms-02", "r-win", 3, "mega", hit.amount_cents, "floor-ann")
    assert new and done.validated_by == "floor-ann at ms-02"
    events = store.events_after(seq)
    assert [(e["type"], e["rule"], e["payload"]["amount_cents"]) for e in events] == [
        ("link.jackpot_paid", "655a.11(i)(1)(iv)", hit.amount_cents)
    ]
    again, new = store.paid("ms-02", "r-win", 3, "mega", hit.amount_cents, "floor-ann")
    assert (again, new) == (done, False) and store.state().seq == seq + 1, "a resend writes nothing"
    with pytest.raises(LinkRefused, match="validated already by floor-ann at ms-02"):
        store.validate("ms-02", "r-win", 3, "mega", "shift-boss", "c-1")
    assert [h.validated_by for h in store.hits()] == ["floor-ann at ms-02"]
    assert reconcile(store.conn).balanced


def test_parameters_change_only_while_the_link_is_closed(link_db: str, tmp_path: Path) -> None:
    store = open_store(link_db, tmp_path)
    figures = [ProgressiveFigures.model_validate(p.model_dump()) for p in store.state().figures]
    changed = [figures[0].model_copy(update={"levels": [figures[0].levels[0], *figures[0].levels[1:]]})]
    store.set_status("open", "manager", "c1")
    with pytest.raises(LinkRefused, match="only while it is closed"):
        store.set_parameters(changed, "manager", "c2")
    store.set_status("closed", "manager", "c3")
    with pytest.raises(LinkRefused, match="drop level"):
        store.set_parameters([figures[0].model_copy(update={"levels": figures[0].levels[:1]})], "manager", "c4")
    seq = store.set_parameters(changed, "manager", "c5")
    (event,) = [e for e in store.events_after(seq - 1) if e["seq"] == seq]
    assert event["type"] == "link.parameters_changed" and event["payload"]["by"] == "manager"


def test_a_mismatch_is_reported_and_tilts_the_link(link_db: str, tmp_path: Path) -> None:
    """`tablectl link report`: the balance checked to the micro-cent; a meter changed behind the link's back tilts."""
    store = open_store(link_db, tmp_path)
    store.contribute([Contribution("ms-02", "r1", 2, "progressive", 500)])
    config = tmp_path / "link.toml"
    config.write_text(link_toml(link_db, "mqtt://127.0.0.1:1", "t"))
    ok = here("link", "--config", config, "report")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "balance: exact to the micro-cent" in ok.stdout and "ms-02" in ok.stdout
    store.conn.execute(
        "UPDATE link_level SET meters = jsonb_set(meters, '{display_micro}', "
        "to_jsonb((meters->>'display_micro')::bigint + 1)) WHERE level = 'mega'"
    )
    bad = here("link", "--config", config, "report")
    assert bad.returncode == 1
    assert "BALANCE MISMATCH" in bad.stdout and "mega" in bad.stdout
    assert store.state().status == "tilted"
