"""A claim's and a paid report's answers renew the lease like every other answer of an open, healthy link.

`tablectl demo --linked` showed `progressive.locked_out` "the link grants no lease (open)" mid-round at a hit:
the link answered a claim (and a paid report) with no `lease_ms`, which the table's client reads as 0, "the link
grants no lease", and so ended its lease at the winner's turn while the link was open and its database healthy.
A real `tablectl link` on real PostgreSQL and mosquitto (tests/link/conftest.py); 605a.8, NY 9 NYCRR 5321.18 as the
stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from floor.links import LinkJackpotsMsg
from floor.messages import LinkIncoming, parse
from tests.broker import Mosquitto, Subscribe
from tests.floor.conftest import wait_for
from tests.link.conftest import LinkProcess, LinkTable, command, link_on, link_toml, rows, send

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


@pytest.fixture
def link(mosquitto: Mosquitto, link_db: str, tmp_path: Path, unique_id: str) -> Iterator[LinkProcess]:
    with link_on(mosquitto, link_db, tmp_path, unique_id) as process:
        yield process


def test_a_hit_keeps_the_winning_tables_lease(
    link: LinkProcess, mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str
) -> None:
    table = LinkTable("ms-02", "127.0.0.1", mosquitto.port, unique_id)
    try:
        table.until_acked({"kind": "heartbeat"}, within=60)
        assert send(mosquitto, subscribe, unique_id, "open_link", command("open_link", {}))["accepted"]
        wait_for(lambda: (table.ask({"kind": "heartbeat"}) or {}).get("lease_ms") == 2000, 20, "a lease")
        contribution = {"seat": 3, "wager": "progressive", "cents": 500}
        body = {"kind": "contribute", "round_id": "ms-02-r7", "contributions": [contribution]}
        assert table.until_acked(body)["lease_ms"] == 2000
        claim = {"seat": 3, "level": "mega", "percent": 10, "rule": "655a.11(i)(1)(iv)"}
        claimed = table.until_acked({"kind": "claim", "round_id": "ms-02-r7", "claim": claim})
        assert claimed["hit"]["order"] > 0 and claimed["status"] == "open"
        assert claimed["lease_ms"] == 2000, "a claim answered by an open, healthy link renews the lease"
        amount = claimed["hit"]["amount_cents"]
        paid = {"seat": 3, "level": "mega", "amount_cents": amount, "by": "floor1"}
        answered = table.until_acked({"kind": "paid", "round_id": "ms-02-r7", "paid": paid})
        assert answered["hit"]["validated_by"] == "floor1 at ms-02"
        assert answered["lease_ms"] == 2000, "a paid report answered by an open, healthy link renews the lease"
    finally:
        table.close()


@pytest.mark.parametrize("meter_after_on", [False, True], ids=["default", "jackpot_meter_after"])
def test_a_claim_answers_the_meter_after_the_award_and_reseed(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, link_db: str, tmp_path: Path, meter_after_on: bool
) -> None:
    """A 100 % hit's answer carries the level's meter as the link left it: the reserve it had put aside moves in, so
    with a reserve above the reseed amount the meter restarts above it (a chapter's own estimate knows only the reseed
    amount: 655a.12(e)(4)'s Five Card Hand Bonus reseeds at $0 with an 8 % reserve). A resent claim answers the same
    figure. The retained pending jackpots carry it only with `[link] jackpot_meter_after = true` (a floor older than
    the field refuses the list whole: docs/mqtt.md's upgrade order); this floor reads the list either way."""
    config = tmp_path / "link.toml"
    text = link_toml(link_db, mosquitto.url, unique_id).replace("reseed_cents = 5000000", "reseed_cents = 100")
    if meter_after_on:
        text = text.replace("[link]\n", "[link]\njackpot_meter_after = true\n", 1)
    config.write_text(text)
    (tmp_path / "logs").mkdir()
    process = LinkProcess(config, tmp_path / "logs")
    pending = subscribe(f"{unique_id}/link/mega/jackpot")
    process.start()
    table = LinkTable("ms-03", "127.0.0.1", mosquitto.port, unique_id)
    try:
        table.until_acked({"kind": "heartbeat"}, within=60)
        wagers = [{"seat": s, "wager": "progressive", "cents": 500} for s in range(1, 8)]
        table.until_acked({"kind": "contribute", "round_id": "ms-03-r1", "contributions": wagers})
        claim = {"seat": 3, "level": "mega", "percent": 100, "rule": "655a.11(i)(1)(iv)"}
        body = {"kind": "claim", "round_id": "ms-03-r1", "claim": claim}
        hit = table.until_acked(body)["hit"]
        # 7 x $5: 11 % to the meter, 10 % (350 cents) to the reserve, which is more than the 100 cents reseed.
        assert (hit["amount_cents"], hit["meter_after_cents"]) == (5_000_000 + 7 * 55, 7 * 50)
        assert table.until_acked(body)["hit"] == hit, "a resent claim answers the hit as the link booked it"
        display = rows(link_db, "SELECT (meters->>'display_micro')::bigint FROM link_level WHERE level = 'mega'")
        assert display == [(7 * 50 * 1_000_000,)]
        pending.wait_until(lambda got: any(m.json()["pending"] for m in got), 20, "the pending jackpot")
        retained = next(m for m in reversed(pending.messages) if m.json()["pending"])
        shown = retained.json()["pending"]
        if meter_after_on:
            assert [(h["order"], h["meter_after_cents"]) for h in shown] == [(hit["order"], 7 * 50)]
        else:
            assert [(h["order"], "meter_after_cents" in h) for h in shown] == [(hit["order"], False)]
        read = parse(unique_id, retained.topic, retained.payload)
        assert isinstance(read, LinkIncoming) and isinstance(read.model, LinkJackpotsMsg), read
        assert [h.meter_after_cents for h in read.model.pending] == [7 * 50 if meter_after_on else None]
    finally:
        table.close()
        process.stop()
