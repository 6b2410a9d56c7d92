"""A lease the link withdraws reads apart from one that ran out: the table's `progressive.locked_out` detail quotes the
link's reason and adds its last lease's term and how long ago it was renewed (docs/linked-progressives.md, "The
lease"). Its figures had no test of their own: the term must be the link's `lease_ms` (2000 here; the heartbeats are
every 500 ms, which a wrong figure would show), and the age must count from the heartbeat that last renewed it, so it
is at least one heartbeat interval (the withdrawing heartbeat was sent one interval after it at the earliest) and at
most the time since that heartbeat was sent.

A real `tablectl link` on real PostgreSQL and mosquitto, the table's real link client (controller/shell/link_client.py)
and its real engine (the pure RoundEngine; the table's journal and devices are not what this is about), a real signed
`close_link` withdrawing the lease."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from pathlib import Path

import pytest

from controller.config.table import load_config
from controller.engine.commands import DeviceCommand, SendLink, ShowLink
from controller.engine.inputs import Input, OpenTable
from controller.engine.round import RoundEngine
from controller.engine.state import TableState
from controller.games.mississippi_stud.rules import MississippiStudRules
from controller.games.mississippi_stud.spec import MississippiStudSpec
from controller.shell.link_client import LinkClient
from tests.broker import Mosquitto, Subscribe
from tests.engine.conftest import PureTable
from tests.floor.conftest import CONFIGS
from tests.link.conftest import command, link_on, send

pytestmark = [pytest.mark.floor, pytest.mark.e2e]
HEARTBEAT_MS = 500
WITHDRAWN = re.compile(
    r"^the link grants no lease \(link closed\); the last lease, of ([0-9]+) ms, was renewed ([0-9]+) ms ago$"
)


class EngineTable:
    """What the link client serves (controller.shell.link_client.LinkedTable): the engine, stepped at each input."""

    def __init__(self) -> None:
        rules = MississippiStudRules.model_validate(
            {
                "chapter": "655a",
                "three_card_bonus_paytable": "A",
                "progressive_paytable": "B",
                "progressive_wager_cents": 500,
            }
        )
        engine = RoundEngine(MississippiStudSpec(), rules, "automated_shoe")
        engine.link = "mega"
        self.pure = PureTable(engine, TableState("ms-01"))
        perfect = self.pure.perfect_devices

        def answer(c: DeviceCommand) -> list[Input]:
            return [] if isinstance(c, ShowLink | SendLink) else perfect(c)

        self.pure.answer = answer
        self.pure.feed(OpenTable())

    @property
    def state(self) -> TableState:
        return self.pure.state

    def submit(self, inp: Input) -> None:
        self.pure.feed(inp)


def _table_config(tmp_path: Path, prefix: str) -> Path:
    text = (CONFIGS / "mississippi-stud-progressive.toml").read_text()
    text = re.sub(r'^table_id = ".*"$', 'table_id = "ms-01"', text, count=1, flags=re.M)
    text = text.replace('prefix = "tablectl"', f'prefix = "{prefix}"')
    text = text.replace('progressive_paytable = "C"', 'progressive_paytable = "B"')
    text += f'\n[progressive]\nlink = "mega"\nheartbeat_ms = {HEARTBEAT_MS}\n'
    path = tmp_path / "ms-01.toml"
    path.write_text(text)
    return path


async def _until(predicate: object, what: str) -> None:
    if not callable(predicate):
        raise TypeError(predicate)
    try:
        async with asyncio.timeout(60):
            while not predicate():  # noqa: ASYNC110 (the engine's state has no event to wait on)
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def test_a_withdrawn_lease_says_its_last_term_and_age(
    mosquitto: Mosquitto, subscribe: Subscribe, link_db: str, tmp_path: Path, unique_id: str
) -> None:
    table = EngineTable()
    with link_on(mosquitto, link_db, tmp_path, unique_id):
        client = LinkClient(table, load_config(_table_config(tmp_path, unique_id)), mosquitto.url)
        running = asyncio.create_task(client.run())
        try:
            await _until(lambda: "link closed" in client.lapse_why, "the link answering (closed, at its start)")
            opened = await asyncio.to_thread(
                send, mosquitto, subscribe, unique_id, "open_link", command("open_link", {})
            )
            assert opened["accepted"], opened
            await _until(lambda: table.state.link_lease, "the lease granted")
            await asyncio.to_thread(send, mosquitto, subscribe, unique_id, "close_link", command("close_link", {}))
            await _until(lambda: not table.state.link_lease, "the lease withdrawn")
            seen_at = time.monotonic()
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
    detail = [e.payload["detail"] for e in table.pure.events if e.type == "progressive.locked_out"][-1]
    said = WITHDRAWN.match(detail)
    assert said is not None, detail
    term, age = int(said[1]), int(said[2])
    assert term == 2000, detail  # the link's lease_ms (tests/link/conftest.py link_toml), not a heartbeat's interval
    assert client.renewed is not None
    renewed_at, _ = client.renewed  # the last granted heartbeat's send: a withdrawal does not move it
    assert HEARTBEAT_MS <= age <= (seen_at - renewed_at) * 1000 + 1, (detail, seen_at - renewed_at)
