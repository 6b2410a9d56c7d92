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

from tests.broker import Mosquitto, Subscribe
from tests.floor.conftest import wait_for
from tests.link.conftest import LinkProcess, LinkTable, command, link_on, send

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
