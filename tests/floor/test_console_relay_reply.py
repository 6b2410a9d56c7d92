"""A table's reply is outside text of any size (docs/console.md, "Limits"): the audit keeps at most its gist and the
evidence of what was cut. Real parts: the console in this process on a loopback socket, a real PostgreSQL cluster (the
audit) and a real mosquitto carrying a 1 MiB reply from a test client standing in for the table's command desk (the
relay cannot tell it from one)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.config.broker import MAX_PACKET_SIZE
from floor.console.relay import KEEP_HEAD, MAX_REASON, MAX_REPLY
from floor.live import TableLive
from tests.broker import Mosquitto
from tests.floor.console_served import Served, serve

pytestmark = pytest.mark.floor


@pytest.fixture
async def served(floor_dsn: str, tmp_path: Path, mosquitto: Mosquitto) -> AsyncIterator[Served]:
    async for s in serve(floor_dsn, tmp_path, mosquitto.url, ""):
        yield s


async def test_a_huge_reply_is_stored_cut_to_its_gist_with_the_size_and_sha256_of_the_whole(
    served: Served, mosquitto: Mosquitto
) -> None:
    """Before, the audit stored whatever the broker delivered on cmd/reply: a 1 MiB reply was a 1 MiB jsonb row (and
    a 1 MiB answer to the browser), as many as commands were sent."""
    served.server.view.live["t1"] = TableLive("t1")
    # The largest the broker passes (the shipped max_packet_size, tests/broker.py), a multi-byte character first.
    reason = "é" + "why " * ((MAX_PACKET_SIZE - 1024) // 4)
    reply = json.dumps(
        {"command_id": "CID", "outcome": "rejected", "code": "bad_args", "rule": "655a.13(f)", "reason": reason},
        ensure_ascii=False,
    ).encode()
    status, body, _ = await served.relay(mosquitto, reply, "c-big")
    assert status == 200, body
    shown = json.loads(body)
    sent = reply.replace(b"CID", b"c-big")  # what the desk published, as the broker carried it
    assert len(sent) > 3 * MAX_REPLY
    ((stored, stored_reason, size),) = served.audit(
        "SELECT reply, reason, pg_column_size(reply) FROM console_audit WHERE command_id = 'c-big'"
    )
    assert stored == shown  # the browser is shown what the record keeps
    cut = stored.pop("cut")
    assert stored == {
        "command_id": "c-big",
        "outcome": "rejected",
        "code": "bad_args",
        "rule": "655a.13(f)",
        "reason": reason[:MAX_REASON],
    }
    assert cut["bytes"] == len(sent) and cut["sha256"] == hashlib.sha256(sent).hexdigest()
    assert cut["limit_bytes"] == MAX_REPLY
    assert cut["head"] == sent[:KEEP_HEAD].decode("utf-8", "replace")
    assert stored_reason == reason[:MAX_REASON]
    assert size < 2 * MAX_REPLY, size


async def test_a_reply_within_the_cap_is_stored_whole(served: Served, mosquitto: Mosquitto) -> None:
    served.server.view.live["t1"] = TableLive("t1")
    reason = "x" * (MAX_REPLY - 200)
    reply = json.dumps({"command_id": "CID", "outcome": "ignored", "reason": reason}).encode()
    status, body, _ = await served.relay(mosquitto, reply, "c-ok")
    assert status == 200, body
    ((stored,),) = served.audit("SELECT reply FROM console_audit WHERE command_id = 'c-ok'")
    assert stored == {"command_id": "c-ok", "outcome": "ignored", "reason": reason}
