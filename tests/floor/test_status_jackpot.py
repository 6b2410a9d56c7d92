"""`tablectl floor status` names a pending jackpot's amount in dollars, as every other amount an operator reads."""

from __future__ import annotations

import psycopg
import pytest

from floor.live import TableLive
from floor.schema import migrate
from floor.status import status_text

pytestmark = pytest.mark.floor


def test_a_pending_jackpot_reads_in_dollars(floor_dsn: str) -> None:
    """Seen running `tablectl floor status` on `tablectl demo --floor`'s archive: `jackpot pending progressive
    450122c seat 5`, the cents raw with a `c`, where the console's alert of the same hit says $4,501.22."""
    table = TableLive("ms-1", state="online", chapter="655a", phase="jackpot pending")
    table.pending_jackpots["ms-1-r000002-h1"] = {"seat": 5, "level": "progressive", "amount": 450122, "wager": 100}
    with psycopg.connect(floor_dsn) as conn:
        migrate(conn)
        text = status_text([table], conn, 30.0)
    assert text.splitlines()[1].endswith("jackpot pending progressive $4,501.22 seat 5"), text
