"""Signed commands through a real mosquitto to a real table controller (run_table in this process: simulated
devices on real ptys, a real journal file, its publisher and its command listener), from a supervisor's own
MQTT client. Only the people at the table are simulated (the demo's dealer and players); the dealer's own
inspection is submitted as the dealer's input, since no supervisor command may stand in for it (.4(a))."""

from __future__ import annotations

import base64
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.engine.inputs import Confirm
from controller.supervisor.envelope import canonical_bytes
from controller.supervisor.gate import MAX_PAYLOAD_BYTES
from tests.broker import Mosquitto, Subscribe
from tests.commands.conftest import DaemonFactory, Key, MakeTableConfig, SupervisorFactory

pytestmark = pytest.mark.e2e


def resigned(key: Key, body: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in body.items() if k != "signature"}
    body["signature"] = base64.b64encode(key.private.sign(canonical_bytes(body))).decode()
    return body


async def test_every_rejection_through_the_broker_then_commands_run_the_table(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    subscribe: Subscribe,
    tmp_path: Path,
) -> None:
    prefix = f"cmd-{unique_id}"
    # Cards not preinspected: the table opens and waits for the dealer's inspection and the floorperson's
    # verification (655a.4(a)), a state where every command's effect is certain.
    config = table_config(unique_id, prefix, keys, cards_preinspected=False)
    published = subscribe(f"{prefix}/{unique_id}/event")
    sup = supervisor_factory(prefix, unique_id)
    floor, boss, tech, stranger = (keys[r] for r in ("floorperson", "supervisor", "technician", "stranger"))
    now = datetime.now(UTC)

    async with daemon_factory(config) as table:
        await table.wait_for(lambda e: e.type == "cards.inspection_requested")
        good = boss.sign(unique_id, "close_table")
        cases: list[tuple[str, bytes | str, str]] = [
            ("close_table", b"\x00" * (MAX_PAYLOAD_BYTES + 1), "too_big"),
            ("close_table", "close the table", "not_json"),
            ("close_table", "[1, 2]", "not_object"),
            ("close_table", json.dumps({"verb": "close_table", "key_id": "super-bob"}), "missing_fields"),
            ("close_table", json.dumps({k: v for k, v in good.items() if k != "signature"}), "unsigned"),
            ("close_table", json.dumps({**good, "signature": base64.b64encode(bytes(64)).decode()}), "bad_signature"),
            ("close_table", json.dumps({**good, "args": {"note": "changed"}}), "bad_signature"),
            ("verify_deck", json.dumps(stranger.sign(unique_id, "verify_deck")), "bad_signature"),
            ("close_table", json.dumps(resigned(boss, {**good, "key_id": "mallory"})), "unknown_key"),
            ("close_table", json.dumps(boss.sign("another-table", "close_table")), "wrong_table"),
            ("open_table", json.dumps(good), "verb_mismatch"),
            ("self_destruct", json.dumps(boss.sign(unique_id, "self_destruct")), "unknown_verb"),
            ("close_table", json.dumps(floor.sign(unique_id, "close_table")), "role_not_allowed"),
            ("verify_deck", json.dumps(tech.sign(unique_id, "verify_deck")), "role_not_allowed"),
            (
                "close_table",
                json.dumps(boss.sign(unique_id, "close_table", issued_at=now - timedelta(seconds=90))),
                "stale",
            ),
            (
                "close_table",
                json.dumps(boss.sign(unique_id, "close_table", issued_at=now + timedelta(seconds=90))),
                "future",
            ),
            (
                "mark_out_of_order",
                json.dumps(tech.sign(unique_id, "mark_out_of_order", args={"device": "dryer"})),
                "bad_args",
            ),
        ]
        for topic_verb, payload, code in cases:
            reply = await sup.raw(topic_verb, payload)
            assert (reply["outcome"], reply["code"]) == ("rejected", code), (code, reply)
            assert reply["table_id"] == unique_id and reply["reason"]
            (seq,) = reply["event_seqs"]
            ev = table.by_seq(seq)
            assert ev.type == "command.rejected" and ev.payload["code"] == code
            assert ev.payload["reason"] == reply["reason"]
            assert ev.payload["command_id"] == reply["command_id"]
        # A replay: the same signed bytes twice; the first is carried out (the floorperson may not verify
        # before the dealer inspected: ignored, with the rule), the second refused.
        first = floor.sign(unique_id, "verify_inspection")
        reply = await sup.send(first)
        assert (reply["outcome"], reply["reason"]) == (
            "ignored",
            "the floorperson verifies the dealer's inspection: the dealer inspects first (655a.4(a))",
        )
        assert [table.by_seq(s).type for s in reply["event_seqs"]] == ["command.accepted", "input.refused"]
        reply = await sup.send(first)
        assert (reply["outcome"], reply["code"]) == ("rejected", "replayed")

        # Nothing so far changed the table: it still waits for its opening inspection.
        assert table.service is not None and "inspection" in table.service.state.blocks
        # A technician covers the shuffler and puts it back (.13(g)); the journal says who, in the same step.
        reply = await sup.send(tech.sign(unique_id, "mark_out_of_order", args={"device": "shuffler"}))
        assert reply["outcome"] == "applied", reply
        accepted, marked = (table.by_seq(s) for s in reply["event_seqs"])
        assert (accepted.type, dict(accepted.payload)) == (
            "command.accepted",
            {"command_id": reply["command_id"], "verb": "mark_out_of_order", "key_id": "tech-cy", "role": "technician"},
        )
        assert (marked.type, marked.rule, marked.payload["device"]) == ("device.out_of_order", "655a.13(g)", "shuffler")
        assert "shuffler" in table.service.state.out_of_order
        reply = await sup.send(tech.sign(unique_id, "back_in_service", args={"device": "shuffler"}))
        assert reply["outcome"] == "applied"
        assert [table.by_seq(s).type for s in reply["event_seqs"]] == ["command.accepted", "device.back_in_service"]
        assert table.service.state.out_of_order == {}

        # The dealer inspects; the floorperson verifies by a signed command; the table plays.
        table.service.submit(Confirm("dealer", "cards_inspected"))
        await table.wait_for(lambda e: e.type == "cards.inspected")
        reply = await sup.send(floor.sign(unique_id, "verify_inspection", args={"note": "deck A, no defects"}))
        assert reply["outcome"] == "applied"
        assert [table.by_seq(s).type for s in reply["event_seqs"]][:3] == [
            "command.accepted",
            "cards.inspection_verified",
            "table.block_cleared",
        ]
        done = await table.wait_for(lambda e: e.type == "round.completed", what="a round played after the commands")
        assert done.payload["round_no"] == 1

        # The supervisor closes the table; the reply comes although the table stops at once after it.
        reply = await sup.send(boss.sign(unique_id, "close_table"))
        assert reply["outcome"] == "applied"
        assert table.by_seq(reply["event_seqs"][0]).type == "command.accepted"
        assert table.by_seq(reply["event_seqs"][-1]).type in ("table.closed", "table.closing")
        assert await table.stopped() >= 1

    # Every command event reached the broker's subscribers too, in seq order.
    await published.await_until(lambda ms: any(b'"table.closed"' in m.payload for m in ms), 15, "table.closed")
    types = [m.json()["type"] for m in published.messages]
    assert types.count("command.rejected") == len(cases) + 1 and types.count("command.accepted") == 5
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    codes = [
        json.loads(p)["code"]
        for (p,) in db.execute("select payload from events where type = ? order by seq", ("command.rejected",))
    ]
    assert codes == [c for _, _, c in cases] + ["replayed"]


async def test_a_replay_is_refused_after_the_daemon_restarts(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    tmp_path: Path,
) -> None:
    prefix = f"cmd-{unique_id}"
    config = table_config(unique_id, prefix, keys, cards_preinspected=False)
    sup = supervisor_factory(prefix, unique_id)
    tech, boss = keys["technician"], keys["supervisor"]
    journal = tmp_path / "table.sqlite"
    covered = tech.sign(unique_id, "mark_out_of_order", args={"device": "shoe"})

    async with daemon_factory(config, journal) as table:
        assert (await sup.send(covered))["outcome"] == "applied"
        assert (await sup.send(boss.sign(unique_id, "close_table")))["outcome"] == "applied"
        await table.stopped()

    async with daemon_factory(config, journal) as table:  # the same journal file: a restart
        reply = await sup.send(covered)
        assert (reply["outcome"], reply["code"]) == ("rejected", "replayed")
        assert "already received" in reply["reason"]
        # A new command with an old nonce is a replay too.
        reply = await sup.send(
            tech.sign(unique_id, "mark_out_of_order", args={"device": "shoe"}, nonce=covered["nonce"])
        )
        assert (reply["outcome"], reply["code"]) == ("rejected", "replayed") and "nonce" in reply["reason"]
        assert (await sup.send(boss.sign(unique_id, "close_table")))["outcome"] == "applied"
        await table.stopped()


async def test_the_listener_comes_back_after_a_broker_outage(
    daemon_factory: DaemonFactory,
    supervisor_factory: SupervisorFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    mosquitto: Mosquitto,
) -> None:
    prefix = f"cmd-{unique_id}"
    config = table_config(unique_id, prefix, keys, cards_preinspected=False)
    boss = keys["supervisor"]
    async with daemon_factory(config) as table:
        listening = [e.seq for e in table.events if e.type == "command.listening"]
        mosquitto.stop()
        mosquitto.start()
        await table.wait_for(
            lambda e: e.type == "command.listening", after=listening[-1], what="the listener subscribed again"
        )
        sup = supervisor_factory(prefix, unique_id)
        reply = await sup.send(boss.sign(unique_id, "close_table"))
        assert reply["outcome"] == "applied"
        await table.stopped()
