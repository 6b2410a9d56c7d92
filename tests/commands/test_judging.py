"""A batch judged as the listener judges it (controller/supervisor/judging.py): the checks on the loop, only the replay
store's records on the checks' thread, one hand-off a batch and none for a batch of junk, the answers in the payloads'
order; a real SQLite file, a real thread."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import structlog

from controller.mqtt.offloop import JournalThread
from controller.supervisor.gate import Accepted, Rejected
from controller.supervisor.judging import Payload, judge
from controller.supervisor.replay import ReplayStore
from tests.commands.conftest import Key
from tests.commands.gate_inputs import NOW, TABLE, make_gate, raw

T = TypeVar("T")
LOG = structlog.get_logger("test")
TOPIC = f"casino/{TABLE}/cmd/close_table"


class CountingThread(JournalThread):
    """A real checks' thread that counts the hand-offs made to it."""

    def __init__(self) -> None:
        super().__init__("command-checks-test")
        self.posts = 0

    def post(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        self.posts += 1
        return super().post(fn)


def junk(n: int) -> list[Payload]:
    return [(TOPIC, f"junk {i}".encode()) for i in range(n)]


def command(keys: dict[str, Key], who: str = "supervisor") -> Payload:
    return TOPIC, raw(keys[who].sign(TABLE, "close_table", issued_at=NOW))


async def test_a_batch_of_junk_costs_no_hand_off(tmp_path: Path, keys: dict[str, Key]) -> None:
    gate = make_gate(tmp_path / "journal.sqlite", keys)
    thread = CountingThread()
    forged = (TOPIC, command(keys)[1].replace(b'"signature": "', b'"signature": "AA'))
    judged = await judge(gate, thread, [*junk(5), forged], NOW, LOG)
    assert [j.code for j in judged if isinstance(j, Rejected)] == ["not_json"] * 5 + ["bad_signature"]
    assert thread.posts == 0 and gate.store.count() == 0
    thread.close()


async def test_one_hand_off_a_batch_records_committed_answers_in_order(tmp_path: Path, keys: dict[str, Key]) -> None:
    path = tmp_path / "journal.sqlite"
    gate = make_gate(path, keys)
    thread = CountingThread()
    first, second, technician = command(keys), command(keys), command(keys, "technician")
    batch = [junk(1)[0], first, second, first, technician]
    judged = await judge(gate, thread, batch, NOW, LOG)
    assert thread.posts == 1
    assert [type(j).__name__ for j in judged] == ["Rejected", "Accepted", "Accepted", "Rejected", "Rejected"]
    replayed, refused = judged[3], judged[4]
    assert isinstance(replayed, Rejected) and replayed.code == "replayed"
    # A technician may not close the table: refused after its record, so its id stays spent.
    assert isinstance(refused, Rejected) and refused.code == "role_not_allowed"
    assert ReplayStore(path, TABLE).count() == 3  # committed before the answers came back, on another connection
    assert all(isinstance(j, Accepted) for j in judged[1:3])
    thread.close()


async def test_a_failed_record_refuses_every_command_of_its_batch(tmp_path: Path, keys: dict[str, Key]) -> None:
    path = tmp_path / "journal.sqlite"
    gate = make_gate(path, keys)
    with sqlite3.connect(path) as db:  # a real SQLite error inside the batch's transaction, on its second record
        db.execute(
            "CREATE TRIGGER refuse AFTER INSERT ON command_seen WHEN (SELECT COUNT(*) FROM command_seen) > 1 "
            "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
    thread = CountingThread()
    judged = await judge(gate, thread, [command(keys), junk(1)[0], command(keys)], NOW, LOG)
    refused = [j for j in judged if isinstance(j, Rejected)]
    assert [j.code for j in refused] == ["internal_error", "not_json", "internal_error"]
    assert all("could not record the command against replay" in j.reason for j in refused if j.code != "not_json")
    assert ReplayStore(path, TABLE).count() == 0  # neither record kept: neither command may be carried out
    thread.close()
