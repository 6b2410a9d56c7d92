"""Whatever bytes reach a table's command topic, the table answers and journals a rejection, in arrival order
(issue 12, items 4-5): lone surrogates, invalid UTF-8, 5 MB, deep nesting; a real command behind 2,000 junk
payloads is carried out after all of them; every broker connection runs with TCP_NODELAY.

A real mosquitto and a real table controller (run_table in this process, simulated devices on real ptys, a
real journal file). How fast all this goes is measured by bench/commands.py, not here.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.config.broker import MAX_PACKET_SIZE
from controller.config.table import MqttSettings
from controller.mqtt.connection import client_kwargs
from controller.supervisor.gate import MAX_DEPTH
from tests.broker import Mosquitto, Subscribe
from tests.commands.conftest import DaemonFactory, Key, MakeTableConfig, SupervisorFactory

pytestmark = pytest.mark.e2e

# The broker (the shipped max_packet_size, tests/broker.py) refuses a bigger packet before any table sees it (a
# 5 MB one is tests/mqtt/test_broker_acl.py's case): the largest it passes is past the table's own 16 KiB bound.
NEAR_LIMIT = MAX_PACKET_SIZE - 1024


def _json(obj: Any) -> str:
    # ensure_ascii (json's default): a lone surrogate goes on the wire as the six characters \ud800, as any
    # sender's JSON library would write it.
    return json.dumps(obj)


def hostile(good: dict[str, Any]) -> list[tuple[str, bytes | str, str, str | None]]:
    """(topic verb, payload, code, the command_id the reply and the event name) for each hostile payload."""
    cid = good["command_id"]
    return [
        ("close_table", _json({**good, "command_id": "\ud800"}), "not_json", "\\ud800"),
        ("close_table", _json({**good, "key_id": "\udfff"}), "not_json", cid),
        ("close_table", _json({**good, "verb": "close\ud800table"}), "not_json", cid),
        ("close_table", _json({**good, "args": {"note": "a\udc00b"}}), "not_json", cid),
        ("close_table", _json({"\ud800": 1, **good}), "not_json", cid),
        ("close_table", b"\xff\xfe" + json.dumps(good).encode(), "not_json", None),
        ("close_table", json.dumps(good).encode().replace(b'"args"', b'"\xed\xa0\x80"'), "not_json", None),
        ("close_table", b"{" + b" " * NEAR_LIMIT + b"}", "too_big", None),
        ("close_table", b"[" * 8000 + b"]" * 8000, "not_json", None),
        ("close_table", '{"a":' * 2500 + "1" + "}" * 2500, "not_json", None),
        ("close_table", _json({**good, "args": {"note": _nested(MAX_DEPTH)}}), "not_json", cid),
        ("close_table", b"", "not_json", None),
        ("close_table", b"\x00\x00", "not_json", None),
    ]


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


async def test_every_hostile_payload_gets_a_reply_and_a_journaled_rejection_in_order(
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
    boss, floor = keys["supervisor"], keys["floorperson"]
    async with daemon_factory(config) as table:
        good = boss.sign(unique_id, "close_table")
        cases = hostile(good)
        seqs: list[int] = []
        for topic_verb, payload, code, command_id in cases:
            reply = await sup.raw(topic_verb, payload)
            what = (code, str(payload)[:60])
            assert (reply["outcome"], reply["code"], reply["command_id"]) == ("rejected", code, command_id), what
            (seq,) = reply["event_seqs"]
            ev = table.by_seq(seq)
            assert ev.type == "command.rejected", what
            assert (ev.payload["code"], ev.payload["reason"], ev.payload["command_id"]) == (
                code,
                reply["reason"],
                command_id,
            ), what
            seqs.append(seq)
        assert seqs == sorted(seqs)
        key_case = table.by_seq(seqs[1]).payload
        assert key_case["key_id"] == "\\udfff" and "lone UTF-16 surrogate" in key_case["reason"]
        assert "nested too deeply" in table.by_seq(seqs[8]).payload["reason"]
        assert f"more than {MAX_DEPTH} levels" in table.by_seq(seqs[10]).payload["reason"]
        # A character beyond U+FFFF, escaped as its surrogate pair, is text like any other.
        reply = await sup.send(floor.sign(unique_id, "verify_inspection", args={"note": "deck \U0001f0a1 ok"}))
        assert reply["outcome"] == "ignored" and reply["reason"].endswith("(655a.4(a))")
        # The table still takes a real command.
        reply = await sup.send(good)
        assert reply["outcome"] == "applied"
        await table.stopped()
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    codes = [
        json.loads(p)["code"]
        for (p,) in db.execute("select payload from events where type = ? order by seq", ("command.rejected",))
    ]
    assert codes == [code for _, _, code, _ in cases]


def junk(i: int, good: dict[str, Any], unique_id: str) -> tuple[str, bytes | str, str]:
    """The i-th of a flood of junk payloads: (topic verb, payload, the code it earns), each kind in turn."""
    cid = f"{i:032x}"
    kinds: list[tuple[str, bytes | str, str]] = [
        ("close_table", f"junk {i}", "not_json"),
        ("close_table", b"\xff" + str(i).encode(), "not_json"),
        ("close_table", _json({**good, "command_id": cid, "key_id": "\ud800"}), "not_json"),
        ("close_table", _json({**good, "command_id": cid}), "bad_signature"),
        ("close_table", _json({**good, "command_id": cid, "table_id": "another"}), "wrong_table"),
        ("close_table", _json([i]), "not_object"),
    ]
    return kinds[i % len(kinds)]


async def test_a_command_behind_2000_junk_payloads_is_carried_out_after_every_one_is_answered_and_journaled(
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
    tech = keys["technician"]
    async with daemon_factory(config) as table:
        flood = [junk(i, keys["supervisor"].sign(unique_id, "close_table"), unique_id) for i in range(2000)]
        real = tech.sign(unique_id, "mark_out_of_order", args={"device": "shuffler"})
        replies = await sup.burst([(v, p) for v, p, _ in flood] + [("mark_out_of_order", json.dumps(real))], 120)
        assert len(replies) == 2001
        assert [(r["outcome"], r["code"]) for r in replies[:-1]] == [("rejected", code) for _, _, code in flood]
        # Each envelope-shaped junk payload is named by its own id: the replies came in the order sent.
        named = [r["command_id"] for r in replies[:-1] if r["command_id"] is not None]
        assert named == [f"{i:032x}" for i in range(2000) if i % 6 in (2, 3, 4)]
        last = replies[-1]
        assert (last["command_id"], last["outcome"]) == (real["command_id"], "applied")
        seqs = [s for r in replies for s in r["event_seqs"]]
        assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
        assert [table.by_seq(s).type for s in last["event_seqs"]] == ["command.accepted", "device.out_of_order"]
        assert table.service is not None and "shuffler" in table.service.state.out_of_order
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    rows = db.execute(
        "select type, payload from events where type like 'command.%' and type != 'command.listening' order by seq"
    ).fetchall()
    assert [t for t, _ in rows] == ["command.rejected"] * 2000 + ["command.accepted"]
    assert [json.loads(p)["code"] for _, p in rows[:-1]] == [code for _, _, code in flood]


# -- TCP_NODELAY ---------------------------------------------------------------------------------------------


def _broker_sockets(port: int) -> dict[int, bool]:
    """This process's TCP connections to the broker on `port`: local port -> whether TCP_NODELAY is set."""
    found: dict[int, bool] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue  # not a socket (or already closed)
        with s:
            if s.family != socket.AF_INET or s.type != socket.SOCK_STREAM:
                continue
            try:
                peer = s.getpeername()
            except OSError:
                continue
            if peer[1] == port:
                found[s.getsockname()[1]] = bool(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    return found


async def test_every_broker_connection_of_the_table_and_of_tablectl_command_has_tcp_nodelay(
    daemon_factory: DaemonFactory,
    keys: dict[str, Key],
    table_config: MakeTableConfig,
    unique_id: str,
    mosquitto: Mosquitto,
    subscribe: Subscribe,
) -> None:
    status = subscribe(f"cmd-{unique_id}/{unique_id}/status")
    before = set(_broker_sockets(mosquitto.port))
    config = table_config(unique_id, f"cmd-{unique_id}", keys, cards_preinspected=False)
    async with daemon_factory(config) as table:
        # Connected, both: the listener announced its subscription (the daemon fixture waited for it) and the
        # publisher put the table's status online.
        await status.await_until(lambda ms: any(m.json().get("state") == "online" for m in ms), 15, "online")
        ours = {p: nodelay for p, nodelay in _broker_sockets(mosquitto.port).items() if p not in before}
        assert len(ours) == 2 and all(ours.values()), ours
        assert table.service is not None
    # `tablectl command send` connects with client_kwargs too.
    settings = MqttSettings(broker=mosquitto.url)
    async with aiomqtt.Client(**client_kwargs(settings), identifier=f"nodelay-{unique_id}"):
        mine = {p: nodelay for p, nodelay in _broker_sockets(mosquitto.port).items() if p not in before}
        assert mine and all(mine.values()), mine
