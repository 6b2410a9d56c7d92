"""End to end: a fault injected into a simulator (through a sim script) produces the chapter's remedy.

The whole table runs through `controller.people.demo.play` on real ptys with a real journal; no broker is needed
(`mqtt://127.0.0.1:1` refuses, the journal keeps everything). Remedies are read back from the journal file.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.engine.inputs import CloseTable
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from controller.shell.service import TableService
from drivers.sim.base import SimDevice
from drivers.sim.faults import Fault, FaultKind
from drivers.sim.script import SimScript, load_sim_script
from drivers.sim.table import SimulatedTable
from tests.e2e.attending import FAILURE_BOUND, NO_BROKER, Attendant, journal_events, play_attended

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        "sim_script" not in inspect.signature(play).parameters,
        reason="controller.people.demo.play does not take sim_script= yet",
    ),
]

TOP = ["Ah", "Ad", "9c", "4d", "Qs", "Js", "Ks", "Ts", "9s", "2d", "Ac", "7h", "7s"]
DECK = TOP + [c for c in STANDARD_DECK if c not in TOP]
ROUND = ScriptedRound(
    wagers={1: {"ante": 1000}, 2: {"ante": 500, "three_card_bonus": 200}, 4: {"ante": 500, "six_card_bonus": 300}},
    decisions={
        (1, "street_3"): 1000,
        (1, "street_4"): 1000,
        (1, "street_5"): 1000,
        (2, "street_3"): 500,
        (4, "street_3"): 500,
        (4, "street_4"): 500,
        (4, "street_5"): 500,
    },
)


def _config(table_id: str) -> TableConfig:
    data = demo_config().model_dump()
    data["table_id"] = table_id
    return TableConfig.model_validate(data)


def _script(tmp_path: Path, faults: str) -> SimScript:
    path = tmp_path / "faults.toml"
    path.write_text(f"decks = [{json.dumps(' '.join(DECK))}]\n{faults}")
    return load_sim_script(path)


def _run(table_id: str, journal: Path, script: SimScript) -> Coroutine[Any, Any, int]:
    # Passed by keyword dict so the module still imports (and skips) while play lacks the parameter.
    extra: dict[str, Any] = {"sim_script": script}
    return play(
        _config(table_id),
        rounds=1,
        broker=NO_BROKER,
        seed=5,
        journal_path=journal,
        policy=ScriptedPolicy([ROUND]),
        **extra,
    )


async def _play(tmp_path: Path, table_id: str, script: SimScript) -> int:
    return int(await asyncio.wait_for(_run(table_id, tmp_path / "j.sqlite", script), FAILURE_BOUND))


async def test_shuffler_jam_reshuffles_and_the_round_plays(tmp_path: Path) -> None:
    script = _script(tmp_path, '[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "shuffle 1"\n')
    assert await _play(tmp_path, "fault-jam", script) == 1
    types = [(e["type"], e["rule"]) for e in journal_events(tmp_path / "j.sqlite")]
    failed = types.index(("shuffle.failed", "655a.13(e)"))
    assert types[failed - 1][0] == "device.fault"
    assert types[failed + 1] == ("shuffle.started", "655a.5(a)")
    assert ("shuffle.completed", "655a.5(b)") in types[failed:]
    assert types.index(("round.completed", "655a.11(j)")) > failed


async def test_shuffler_count_51_removes_the_deck(tmp_path: Path) -> None:
    script = _script(tmp_path, '[[faults]]\ndevice = "shuffler"\nfault = "count_51"\nwhen = "shuffle 1"\n')
    journal = tmp_path / "j.sqlite"
    task = asyncio.create_task(_run("fault-51", journal, script))
    try:
        async with asyncio.timeout(FAILURE_BOUND):
            while not any(e["type"] == "deck.removed" for e in journal_events(journal)):
                assert not task.done(), "play ended before the deck was removed"
                await asyncio.sleep(0.02)  # polling the journal file: the condition is what we wait on
    finally:
        # The table now blocks until a supervisor verifies a new deck; stopping it is the runner's "stop now".
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    removed = next(e for e in journal_events(journal) if e["type"] == "deck.removed")
    assert removed["rule"] == "655a.5(b)" and removed["payload"]["card_count"] == 51
    assert not any(e["type"] == "betting.opened" for e in journal_events(journal))


async def test_shoe_jam_while_dealing_voids_the_round(tmp_path: Path) -> None:
    script = _script(tmp_path, '[[faults]]\ndevice = "shoe"\nfault = "jam"\nwhen = "dispense 2"\n')
    assert await _play(tmp_path, "fault-shoe", script) == 1
    events = journal_events(tmp_path / "j.sqlite")
    voided = [e for e in events if e["type"] == "round.voided"]
    assert [e["rule"] for e in voided] == ["655a.13(f)"]
    assert voided[0]["payload"]["returned"] == {
        "1": {"ante": 1000},
        "2": {"ante": 500, "three_card_bonus": 200},
        "4": {"ante": 500, "six_card_bonus": 300},
    }
    assert "jam" in voided[0]["payload"]["reason"]
    assert not any(e["type"] == "round.completed" for e in events)


class JamTaker(Attendant):
    """Once the table shows itself blocked by the jammed shoe, the attendant takes the jam out by hand and the shoe
    says so (`fault_cleared`, docs/protocol.md section 5)."""

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "table.blocked" and "device:shoe" in ev.payload.get("reasons", {}):
            self.do(self.device("shoe").fault_cleared("jam", "taken out by hand"))


async def test_a_shoe_jammed_while_dealing_holds_round_two_until_it_says_the_jam_is_cleared(tmp_path: Path) -> None:
    """The shoe jams on round 1's second stack and stays jammed (every later dispense would jam): round 1 is void
    (.13(f)) and the shoe held (.13(g)), so round 2 takes no wager until the attendant clears it; then it plays."""
    journal = tmp_path / "j.sqlite"
    jam = '[[faults]]\ndevice = "shoe"\nfault = "jam"\nwhen = "dispense 2"\npersistent = true\n'
    played = await play_attended(
        _config("fault-deal-jam"),
        JamTaker(),
        journal,
        rounds=2,
        policy=ScriptedPolicy([ROUND]),
        script=_script(tmp_path, jam),
    )
    assert played == 2
    events = journal_events(journal)
    types = [e["type"] for e in events]
    assert types.count("round.voided") == 1 and types.count("round.completed") == 1
    unusable, voided = types.index("device.unusable"), types.index("round.voided")
    assert events[unusable]["rule"] == "655a.13(g)" and "jam" in events[unusable]["payload"]["reason"]
    assert events[voided]["rule"] == "655a.13(f)" and events[voided]["round_id"].endswith("r000001")
    blocked, said = types.index("table.blocked"), types.index("device.fault_cleared")
    assert unusable < voided < blocked < said < types.index("table.block_cleared")
    assert events[said]["payload"]["code"] == "jam" and events[said]["payload"]["still_held"] == []
    accepted = [i for i, e in enumerate(events) if e["type"] == "wager.accepted" and e["round_id"].endswith("r000002")]
    assert accepted and min(accepted) > said
    assert events[types.index("round.completed")]["round_id"].endswith("r000002")


async def test_one_face_up_card_is_discarded_and_the_round_completes(tmp_path: Path) -> None:
    script = _script(tmp_path, '[[faults]]\ndevice = "shoe"\nfault = "face_up"\nwhen = "dispense 1"\n')
    assert await _play(tmp_path, "fault-faceup", script) == 1
    events = journal_events(tmp_path / "j.sqlite")
    types = [(e["type"], e["rule"]) for e in events]
    assert types.count(("card.face_up_discarded", "655a.13(a)")) == 1
    assert ("round.completed", "655a.11(j)") in types
    assert not any(e["type"] == "round.voided" for e in events)


class ShoeAttendant(Attendant):
    """The automated shoe jams once round 1 is dealt (it says so at once, unasked, and would jam its next dispense);
    once the table shows itself blocked by it, the attendant clears it and plugs it back in, so it identifies again
    (unless `clears` is false: nobody comes)."""

    def __init__(self, clears: bool = True) -> None:
        super().__init__()
        self.clears = clears

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "stub.discarded" and ev.round_id is not None and ev.round_id.endswith("r000001"):
            self.do(self._jam())
        elif self.clears and ev.type == "table.blocked" and "device:shoe" in ev.payload.get("reasons", {}):
            self.do(replugged(self.device("shoe")))

    async def _jam(self) -> None:
        await self.device("shoe").inject(Fault(FaultKind.JAM))
        await self.device("shoe").send({"evt": "fault", "code": "jam", "detail": "card jam at the dispensing gate"})


async def replugged(device: SimDevice) -> None:
    """The attendant clears the device and plugs it back in: it identifies again."""
    device.clear_faults()
    await device.replug()


async def test_shoe_jam_after_the_deal_stops_the_next_round_before_wagers(tmp_path: Path) -> None:
    """A jam the shoe reports while round 1 is in its decisions: round 1 is settled on its cards, round 2 opens no
    betting until the shoe is back (.13(g)), so no wager of round 2 is voided by its first dispense (.13(f))."""
    journal = tmp_path / "j.sqlite"
    played = await play_attended(
        _config("fault-late-jam"),
        ShoeAttendant(),
        journal,
        rounds=2,
        policy=ScriptedPolicy([ROUND]),
        script=_script(tmp_path, ""),
    )
    assert played == 2
    events = journal_events(journal)
    types = [e["type"] for e in events]
    assert "round.voided" not in types and types.count("round.completed") == 2
    unusable = types.index("device.unusable")
    assert events[unusable]["rule"] == "655a.13(g)" and "jam" in events[unusable]["payload"]["reason"]
    first_done, cleared = types.index("round.completed"), types.index("table.block_cleared")
    blocked = types.index("table.blocked")
    assert first_done < blocked < cleared and "jam" in events[blocked]["payload"]["reasons"]["device:shoe"]
    assert events[cleared]["payload"]["block"] == "device:shoe"
    # Round 2 opens betting, and takes its wagers, only once the shoe is back.
    opened = [i for i, e in enumerate(events) if e["type"] == "betting.opened"]
    accepted = [i for i, e in enumerate(events) if e["type"] == "wager.accepted" and e["round_id"].endswith("r000002")]
    assert len(opened) == 2 and opened[1] > cleared and accepted and min(accepted) > cleared


class StillJammed(Attendant):
    """The second start of a table whose shoe jammed and was never cleared: the new simulator is jammed from its
    start (its next dispense would fail), and the attendant clears it and plugs it back in only once the table,
    having heard the shoe identify at start-up, still says it is unusable."""

    def __init__(self) -> None:
        super().__init__()
        self.identified = False

    def found(self, sims: SimulatedTable) -> None:
        super().found(sims)
        self.do(sims.device("shoe").inject(Fault(FaultKind.JAM)))

    def heard(self, ev: JournaledEvent) -> None:
        if ev.type == "device.online" and ev.payload.get("device_id") == "shoe":
            self.identified = True
        elif ev.type == "device.unusable" and self.identified and ev.payload.get("restored"):
            self.identified = False
            self.do(replugged(self.device("shoe")))


async def _blocked_by_the_jam(journal: Path, stop: str) -> None:
    """The shoe jams after round 1's deal and nobody clears it; once the table is blocked by it, the daemon stops:
    at once (SIGTERM: the table stays blocked in its journal) or by closing the table first (Ctrl-C)."""
    jammer = ShoeAttendant(clears=False)
    services: list[TableService] = []
    extra: dict[str, Any] = {
        "sim_script": _script(journal.parent, ""),
        "on_sims": jammer.found,
        "on_event": jammer.heard,
        "on_service": services.append,
    }
    first = asyncio.create_task(
        play(_config("fault-jam-restart"), rounds=2, broker=NO_BROKER, seed=5, journal_path=journal, **extra)
    )
    try:
        async with asyncio.timeout(FAILURE_BOUND):
            while not any(
                e["type"] == "table.blocked" and "device:shoe" in e["payload"]["reasons"]
                for e in journal_events(journal)
            ):
                assert not first.done(), "play ended before the table blocked on the shoe"
                await asyncio.sleep(0.02)  # polling the journal file: the condition is what we wait on
            if stop == "close":
                services[0].submit(CloseTable())
                assert await first == 1
    finally:
        first.cancel()  # the runner's "stop now" (SIGTERM)
        await asyncio.gather(first, *jammer.chores, return_exceptions=True)


@pytest.mark.parametrize("stop", ["sigterm", "close"])
async def test_a_shoe_jam_nobody_cleared_still_blocks_the_table_after_a_restart(tmp_path: Path, stop: str) -> None:
    """The daemon is started again on the same journal with the shoe still jammed. Its identification at start-up
    does not clear the block (no round 2 wager is taken and voided at the first dispense, .13(f)); the attendant's
    clearing and restarting it does."""
    journal = tmp_path / "j.sqlite"
    await _blocked_by_the_jam(journal, stop)
    before = len(journal_events(journal))
    played = await play_attended(
        _config("fault-jam-restart"), StillJammed(), journal, rounds=1, script=_script(tmp_path, ""), seed=6
    )
    assert played == 1
    events = journal_events(journal)[before:]
    types = [e["type"] for e in events]
    assert "round.voided" not in types and types.count("round.completed") == 1
    if stop == "sigterm":
        recovered = events[types.index("table.recovered")]
        assert recovered["payload"]["policy"] == "resume_between_rounds"
        assert "device:shoe" in recovered["payload"]["blocks"]
    else:
        assert "table.recovered" not in types and "table.opened" in types
    restored = [i for i, e in enumerate(events) if e["type"] == "device.unusable" and e["payload"].get("restored")]
    assert restored and all(events[i]["rule"] == "655a.13(g)" for i in restored)
    assert events[restored[0]]["payload"]["fault"]["code"] == "jam"
    cleared = types.index("table.block_cleared")
    assert events[cleared]["payload"]["block"] == "device:shoe" and len(restored) == 2 and restored[1] < cleared
    assert min(i for i, t in enumerate(types) if t == "betting.opened") > cleared
