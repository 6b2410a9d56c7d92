"""`resend` at a real table (run_table in this process: simulated devices on real ptys, a real journal file, a real
mosquitto): the rows go out again exactly as first published, flagged replayed and in seq order, from the live journal
and from its archive segments; seqs the table has not (archived out of reach, not journaled yet) are named in the
reply; the live stream goes on meanwhile, unflagged."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from controller.store.archive import archive, default_dir
from tests.broker import Subscribe
from tests.commands.conftest import DaemonFactory, Key, MakeTableConfig, SupervisorFactory

pytestmark = pytest.mark.e2e


async def test_resend_publishes_the_originals_again_and_names_what_it_has_not(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    subscribe: Subscribe,
    tmp_path: Path,
) -> None:
    prefix = f"resend-{unique_id}"
    config = table_config(unique_id, prefix, keys)
    topic = f"{prefix}/{unique_id}/event"
    published = subscribe(topic)
    sup = supervisor_factory(prefix, unique_id)
    tech = keys["technician"]
    journal = tmp_path / "journal.sqlite"

    def live() -> dict[int, dict[str, Any]]:
        return {m.json()["seq"]: m.json() for m in published.on(topic) if not m.json().get("replayed")}

    def replayed(after: int) -> list[dict[str, Any]]:
        return [m.json() for m in published.on(topic)[after:] if m.json().get("replayed")]

    async with daemon_factory(config, journal) as table:
        first = await table.wait_for(lambda e: e.type == "round.completed", what="round 1")
        second = await table.wait_for(lambda e: e.type == "round.completed", first.seq, "round 2")
        last = second.seq
        await published.await_until(lambda ms: last in live(), 15, "round 2 published")
        # Round 1 sealed into a segment beside the journal, as the daemon's own archiver does between rounds (only
        # rows the broker acknowledged go: the publisher's marks are committed lazily, so ask until one is sealed).
        sealed = []
        for _ in range(100):
            sealed = [s for o in await asyncio.to_thread(archive, journal, 1) for s in o.sealed]
            if sealed:
                break
            await table.wait_for(lambda e: True, table.events[-1].seq, "another event")
        assert sealed, "round 1 was never archived"
        archived_upto = sealed[-1].last_seq
        assert 1 < archived_upto < last

        seen = len(published.on(topic))
        reply = await sup.send(tech.sign(unique_id, "resend", args={"from_seq": 1, "to_seq": last}))
        assert reply["outcome"] == "applied", reply
        assert reply["resent"] == {"from_seq": 1, "to_seq": last, "sent": last, "missing": []}
        await published.await_until(lambda ms: len(replayed(seen)) >= last, 15, "the resent events")
        again = replayed(seen)
        assert [e["seq"] for e in again] == list(range(1, last + 1))  # in seq order, archived ones included
        originals = live()
        for e in again:
            assert {k: v for k, v in e.items() if k != "replayed"} == originals[e["seq"]]
        accepted = table.by_seq(reply["event_seqs"][0])
        assert (accepted.type, accepted.payload["verb"], accepted.payload["role"]) == (
            "command.accepted",
            "resend",
            "technician",
        )

        # The live stream went on, unflagged: the next round is published as ever.
        third = await table.wait_for(lambda e: e.type == "round.completed", last, "round 3")
        await published.await_until(lambda ms: third.seq in live(), 15, "round 3 published live")

        # The segments moved away: the archived seqs are named, the rest still sent; seqs ahead are not journaled yet.
        default_dir(journal).rename(tmp_path / "elsewhere")
        ahead = table.events[-1].seq + 5_000
        reply = await sup.send(tech.sign(unique_id, "resend", args={"from_seq": 1, "to_seq": ahead}))
        resent = reply["resent"]
        assert reply["outcome"] == "applied" and resent["missing"][0]["first_seq"] == 1, reply
        assert resent["missing"][0]["last_seq"] == archived_upto
        assert resent["missing"][0]["why"].startswith("archived out of reach: segment ")
        assert resent["missing"][-1]["last_seq"] == ahead and resent["missing"][-1]["why"] == "not journaled yet"
        assert resent["sent"] == resent["missing"][-1]["first_seq"] - 1 - archived_upto
        assert "not sent: 1-" in reply["reason"]
