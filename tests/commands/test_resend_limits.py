"""A resend reply stays well under the broker's packet limit whatever the journal holds: 10,000 seqs (the most one
resend asks for) with every other row damaged are 5,000 missing ranges, some 600 KB listed in full. The broker here
runs with the shipped `max_packet_size` (tests/broker.py), which disconnected the table's listener before it could
answer: now the reply lists the first ranges, counts the rest and arrives (a real journal file, damaged with SQL as a
changed byte would be; the real daemon; a real mosquitto)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import aiomqtt
import pytest

from controller.config.broker import MAX_PACKET_SIZE
from controller.core.events import DomainEvent
from controller.mqtt.contract import CommandReply, Resent, SeqsMissing
from controller.mqtt.limits import publish_size
from controller.store.journal import Journal
from controller.supervisor import resend
from controller.supervisor.verbs import MAX_RESEND, ResendArgs
from tests.broker import Mosquitto, find_mosquitto
from tests.commands.conftest import DaemonFactory, Key, MakeTableConfig, SupervisorFactory

pytestmark = pytest.mark.e2e


def _seeded(path: Path, table_id: str, rows: int) -> None:
    """`rows` events journaled and published in an earlier run, every even seq then damaged (its payload changed, so
    it no longer matches its hash)."""
    j = Journal(path, table_id, "earlier-boot")
    j.append([DomainEvent("device.online", None, {"device_id": "shoe", "n": i}) for i in range(rows)], j_now())
    j.mark_published(list(range(1, rows + 1)), replayed=False)
    j.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET payload = '{\"n\":-1}' WHERE seq % 2 = 0 AND seq <= ?", (rows,))
    db.commit()
    db.close()


def j_now() -> datetime:
    return datetime.now(UTC)


async def test_a_reply_naming_5000_damaged_ranges_arrives_and_counts_what_it_leaves_out(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    tmp_path: Path,
) -> None:
    prefix = f"resendcap-{unique_id}"
    config = table_config(unique_id, prefix, keys)
    journal = tmp_path / "journal.sqlite"
    _seeded(journal, unique_id, MAX_RESEND)
    sup = supervisor_factory(prefix, unique_id)
    async with daemon_factory(config, journal):
        reply = await sup.send(
            keys["floorperson"].sign(unique_id, "resend", args={"from_seq": 1, "to_seq": MAX_RESEND})
        )
    assert reply["outcome"] == "applied", reply
    resent = reply["resent"]
    assert resent["sent"] == MAX_RESEND // 2
    assert len(resent["missing"]) == resend.MAX_LISTED
    assert [m["first_seq"] for m in resent["missing"]] == list(range(2, 2 * resend.MAX_LISTED + 1, 2))
    assert all(m["why"].startswith("damaged: its contents no longer match its hash") for m in resent["missing"])
    assert resent["missing_not_listed"] == MAX_RESEND // 2 - resend.MAX_LISTED
    assert resent["seqs_not_listed"] == MAX_RESEND // 2 - resend.MAX_LISTED
    assert f"{MAX_RESEND // 2 - resend.MAX_LISTED} of them not listed in this reply" in reply["reason"]
    assert f"ask again from seq {2 * resend.MAX_LISTED + 1}" in reply["reason"]


def test_the_largest_reply_the_table_can_build_fits_a_quarter_of_the_limit() -> None:
    """Every seq of the largest resend missing on its own, each `why` as long as a path can make it: the reply the
    listener would send is held to a quarter of the packet limit (and to the console's 16 KiB)."""
    why = "archived out of reach: segment " + "s" * 4000
    missing = [SeqsMissing(first_seq=s, last_seq=s, why=why) for s in range(1, MAX_RESEND + 1)]
    listed = resend.listed(Resent(from_seq=1, to_seq=MAX_RESEND, sent=0, missing=missing))
    reason = resend.summary(1, MAX_RESEND, 0, listed.missing, listed.missing_not_listed)
    reply = CommandReply.model_validate(
        {
            "command_id": "0" * 32,
            "table_id": "t" * 64,
            "verb": "resend",
            "outcome": "applied",
            "reason": reason,
            "event_seqs": [10**12],
            "ts": "2026-11-21T08:00:00Z",
            "resent": listed,
        }
    )
    size = publish_size("tablectl/" + "t" * 64 + "/cmd/reply", len(reply.model_dump_json().encode()))
    assert size <= 16 * 1024 and size * 4 <= MAX_PACKET_SIZE, size
    assert (listed.missing_not_listed, listed.seqs_not_listed) == (MAX_RESEND - resend.MAX_LISTED,) * 2


async def test_a_broker_failure_names_each_unsent_seq_once_with_its_first_reason(tmp_path: Path) -> None:
    """Seqs 1-5 asked again: 2 damaged, 4 too large for the broker, and the broker gone before anything is
    acknowledged. Each seq is named once: 2 damaged, 4 too large (its first reasons), 1, 3 and 5 not acknowledged,
    and no "not acknowledged" range spans 2 or 4 (before, 1-5 was one such range, naming 2 and 4 twice). A real
    journal file damaged with SQL, a real mosquitto of its own, stopped to fail the publish."""
    binary = find_mosquitto()
    assert binary is not None
    broker = Mosquitto.leashed(binary)
    broker.start()
    path, table_id = tmp_path / "journal.sqlite", "T1"
    j = Journal(path, table_id, "earlier-boot")
    big = {"blob": "x" * (MAX_PACKET_SIZE + 10)}
    j.append([DomainEvent("round.recorded", None, big if n == 4 else {"n": n}) for n in range(1, 6)], j_now())
    j.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET payload = '{\"n\":-1}' WHERE seq = 2")
    db.commit()
    db.close()
    found = resend.collect(path, tmp_path / "archive", table_id, 1, 5, 5)
    assert [e.seq for e in found.events] == [1, 3, 4, 5]
    try:
        async with aiomqtt.Client(broker.host, broker.port, identifier=f"resend-{table_id}") as client:
            broker.stop()  # gone before any PUBACK: the publish fails (connection lost, or no PUBACK in time)
            got = await resend.send_again(
                client, "tablectl/T1/event", found, ResendArgs(from_seq=1, to_seq=5), 2.0, MAX_PACKET_SIZE
            )
    except aiomqtt.MqttError:
        pass  # leaving the context of a client whose broker is gone; send_again has returned by then
    finally:
        broker.close()
    assert got.sent == 0
    named = [(m.first_seq, m.last_seq, m.why.split(":")[0].split(" (")[0]) for m in got.missing]
    assert named == [
        (1, 1, "not acknowledged by the broker"),
        (2, 2, "damaged"),
        (3, 3, "not acknowledged by the broker"),
        (4, 4, "too large for the broker"),
        (5, 5, "not acknowledged by the broker"),
    ], got.missing
    seqs = [s for m in got.missing for s in range(m.first_seq, m.last_seq + 1)]
    assert seqs == [1, 2, 3, 4, 5]


def test_each_seq_takes_its_first_reason_and_ranges_of_one_reason_join() -> None:
    journal_says = [SeqsMissing(first_seq=3, last_seq=4, why="damaged")]
    too_large = [
        SeqsMissing(first_seq=4, last_seq=4, why="too large"),
        SeqsMissing(first_seq=9, last_seq=9, why="too large"),
    ]
    unacked = [SeqsMissing(first_seq=1, last_seq=10, why="not acknowledged")]
    assert resend.missing_once(journal_says, too_large, unacked) == [
        SeqsMissing(first_seq=1, last_seq=2, why="not acknowledged"),
        SeqsMissing(first_seq=3, last_seq=4, why="damaged"),
        SeqsMissing(first_seq=5, last_seq=8, why="not acknowledged"),
        SeqsMissing(first_seq=9, last_seq=9, why="too large"),
        SeqsMissing(first_seq=10, last_seq=10, why="not acknowledged"),
    ]
