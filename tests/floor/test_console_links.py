"""The console's linked progressives, its held phase and its deltas, without a broker (pure parts), then through a
real mosquitto and PostgreSQL with the floor service in this process: the test publishes the link controller's
retained topics and events as `tablectl link` does (the controller itself is tested in tests/link/), and plays the
link's command desk for the relay (it checks the relayed bytes and their signature, as the link's CommandDesk
does, and answers in the link's reply format)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import aiomqtt
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from controller.mqtt.contract import SupervisorCommand, TableEvent
from controller.supervisor.envelope import loads, public_key_b64, sign_command, signature_problem
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.console.floor_alerts import link_alerts
from floor.console.server import ConsoleServer
from floor.console.verbs import LINK_VERBS
from floor.links import (
    LinkHitMsg,
    LinkJackpotsMsg,
    LinkLive,
    LinkMeterMsg,
    LinkRefusalsMsg,
    LinkStateMsg,
    LinkTableLease,
)
from floor.live import JACKPOT_PENDING, TableLive
from floor.messages import LinkIncoming, Rejected, parse
from floor.service import FloorService
from link import protocol
from link.commands import VERBS as LINK_DESK_VERBS
from tests.broker import Mosquitto, free_port, fresh_id
from tests.floor.event_stream import Stream
from tests.floor.service_running import running

PREFIX = "linktest"


def ev(seq: int, type_: str, payload: dict[str, Any] | None = None, table: str = "t1") -> TableEvent:
    return TableEvent.model_validate(
        {
            "event_id": f"{table}-{seq}",
            "boot_id": "b",
            "seq": seq,
            "ts": f"2026-11-26T12:00:{seq:02d}.000000Z",
            "table_id": table,
            "round_id": f"{table}-r1",
            "type": type_,
            "rule": "655a.11(i)(1)(iii)",
            "payload": payload or {},
        }
    )


# -- the mirror of the link's contract -----------------------------------------------------------------------------


def test_the_floor_reads_the_link_messages_the_link_publishes() -> None:
    pairs: list[tuple[type[BaseModel], type[BaseModel]]] = [
        (LinkStateMsg, protocol.LinkState),
        (LinkRefusalsMsg, protocol.LinkRefusals),
        (LinkTableLease, protocol.TableLease),
        (LinkMeterMsg, protocol.LinkMeter),
        (LinkHitMsg, protocol.HitOut),
        (LinkJackpotsMsg, protocol.PendingJackpots),
    ]
    for mine, theirs in pairs:
        assert set(mine.model_fields) == set(theirs.model_fields), mine.__name__
    # And what the link's own models write parses here as it is.
    state = protocol.LinkState(
        link_id="mega", status="open", tilt=None, database="up", seq=3,
        tables={"t1": protocol.TableLease(asset_number="A-1", leased=True, last_seen="2026-11-26T12:00:00Z")},
    )  # fmt: skip
    got = parse(PREFIX, f"{PREFIX}/link/mega/state", state.model_dump_json().encode())
    assert isinstance(got, LinkIncoming) and got.kind == "link_state" and got.link_id == "mega"
    will = parse(PREFIX, f"{PREFIX}/link/mega/state", b'{"status": "offline"}')
    assert isinstance(will, LinkIncoming) and isinstance(will.model, LinkStateMsg) and will.model.status == "offline"
    wrong = parse(PREFIX, f"{PREFIX}/link/other/progressive/mega", b'{"link_id":"mega","level":"mega",'
                  b'"display_cents":5,"seq":1}')  # fmt: skip
    assert isinstance(wrong, Rejected) and "names link 'mega'" in wrong.reason
    bad = parse(PREFIX, f"{PREFIX}/link/mega/jackpot", b'{"link_id":"mega","pending":[{"seat":0}]}')
    assert isinstance(bad, Rejected) and "link_jackpot contract" in bad.reason
    # Requests, answers and commands on the link are not the floor's to take.
    for topic in ("request/t1", "response/t1", "cmd/open_link", "cmd/reply"):
        assert parse(PREFIX, f"{PREFIX}/link/mega/{topic}", b"{}") is None


def test_a_link_state_with_or_without_its_refusals_is_read_and_their_outside_text_escaped() -> None:
    """A link older than the refusal counts (or one that refused nothing) leaves the field out; a newer one's state
    carries them. Both are read, and the counts' latest topic and reason, a publisher's words, are kept escaped
    (controller/core/shown.py) for the console to set as text."""
    lease = {"t1": protocol.TableLease(asset_number="A-1", leased=True)}
    older = protocol.LinkState(link_id="mega", status="open", tilt=None, database="up", seq=3, tables=lease)
    body = older.model_dump_json(exclude={"refusals"}).encode()
    assert b"refusals" not in body
    got = parse(PREFIX, f"{PREFIX}/link/mega/state", body)
    assert isinstance(got, LinkIncoming) and isinstance(got.model, LinkStateMsg) and got.model.refusals is None
    live = LinkLive("mega")
    live.apply(got.model, "2026-11-26T12:00:00Z")
    assert live.refusals is None and live.panel()["refusals"] is None
    refusals = protocol.LinkRefusals(
        total=1000, counts={"request_malformed": 999, "command bad_signature": 1}, last_kind="request_malformed",
        last_at="2026-11-26T12:00:01+00:00", last_topic="linktest/link/mega/request/t\\x1b[2J1",
        last_reason="\\x1b]0;owned\\x07 <b>junk</b>\\u202e",
    )  # fmt: skip
    newer = older.model_copy(update={"refusals": refusals})
    got = parse(PREFIX, f"{PREFIX}/link/mega/state", newer.model_dump_json().encode())
    assert isinstance(got, LinkIncoming) and isinstance(got.model, LinkStateMsg)
    live.apply(got.model, "2026-11-26T12:00:02Z")
    panel = live.panel()["refusals"]
    assert panel["total"] == 1000 and panel["counts"] == {"command bad_signature": 1, "request_malformed": 999}
    assert panel["last_reason"] == "\\x1b]0;owned\\x07 <b>junk</b>\\u202e"  # as the link escaped it, markup too
    # A forged state with raw control characters in the reason is escaped here, not shown raw.
    raw = newer.model_copy(update={"refusals": refusals.model_copy(update={"last_reason": "\x1b[2Jgone\r"})})
    got = parse(PREFIX, f"{PREFIX}/link/mega/state", raw.model_dump_json().encode())
    assert isinstance(got, LinkIncoming) and isinstance(got.model, LinkStateMsg)
    live.apply(got.model, "2026-11-26T12:00:03Z")
    assert live.refusals is not None and live.refusals["last_reason"] == "\\x1b[2Jgone\\r"
    # The last will says nothing of them: the counts stay as last known.
    live.apply(LinkStateMsg(status="offline"), "2026-11-26T12:00:04Z")
    assert live.refusals is not None and live.refusals["total"] == 1000
    # Counts are numbers of refusals: a negative one is not a link's and the state is refused whole.
    bad = newer.model_dump_json().replace('"command bad_signature":1', '"command bad_signature":-1').encode()
    assert isinstance(parse(PREFIX, f"{PREFIX}/link/mega/state", bad), Rejected)


def test_a_field_the_floor_does_not_know_in_refusals_is_passed_over_and_elsewhere_refused() -> None:
    """A newer link may add to its refusal summary without the floor upgraded first: the state is read, its leases
    and counts applied, the unknown field shown nowhere. An unknown field anywhere else in the state (a lease, the
    state itself) still refuses it whole (docs/mqtt.md, "The link": the upgrade order)."""
    lease = {"t1": protocol.TableLease(asset_number="A-1", leased=True)}
    refusals = protocol.LinkRefusals(total=3, counts={"request_malformed": 3}, last_kind="request_malformed")
    state = protocol.LinkState(
        link_id="mega", status="open", tilt=None, database="up", seq=4, tables=lease, refusals=refusals
    )
    content = json.loads(state.model_dump_json())
    content["refusals"]["by_table"] = {"t1": 3}  # a field a later link might add
    got = parse(PREFIX, f"{PREFIX}/link/mega/state", json.dumps(content).encode())
    assert isinstance(got, LinkIncoming) and isinstance(got.model, LinkStateMsg), got
    live = LinkLive("mega")
    live.apply(got.model, "2026-11-26T12:00:00Z")
    assert live.tables["t1"]["leased"] is True and live.seq == 4
    assert live.refusals is not None and live.refusals["total"] == 3
    assert live.refusals["counts"] == {"request_malformed": 3} and "by_table" not in json.dumps(live.panel())
    for where in ("state", "lease"):
        strange = json.loads(state.model_dump_json())
        (strange if where == "state" else strange["tables"]["t1"])["by_table"] = {"t1": 3}
        refused = parse(PREFIX, f"{PREFIX}/link/mega/state", json.dumps(strange).encode())
        assert isinstance(refused, Rejected) and "link_state contract" in refused.reason, (where, refused)
        assert "by_table" in refused.reason, refused.reason  # the reason names the field


def test_the_console_offers_each_link_verb_to_the_roles_the_link_accepts() -> None:
    assert set(LINK_VERBS) == set(LINK_DESK_VERBS) - {"set_parameters"}
    for name, verb in LINK_VERBS.items():
        assert verb.roles == LINK_DESK_VERBS[name].roles, name


# -- the held phase --------------------------------------------------------------------------------------------------

BETWEEN = ["hand.settled", "progressive.settled", "meter.reseeded", "three_card_bonus.settled", "table.blocked"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(BETWEEN), max_size=8), st.sampled_from(BETWEEN[:2]))
def test_a_held_jackpot_stays_the_phase_whatever_is_published_meanwhile(between: list[str], before: str) -> None:
    live = TableLive("t1")
    live.apply_event(ev(1, "lockout.confirmed"))
    live.apply_event(ev(2, before, {"seat": 1}))
    live.apply_event(ev(3, "progressive.hit", {"hit": "t1-r1-h1", "seat": 3, "level": "major", "amount": 100_000}))
    seq = 4
    for t in between:
        reasons = {"jackpot": "jackpot awaiting validation"} if t == "table.blocked" else {}
        live.apply_event(ev(seq, t, {"seat": 2, "reasons": reasons}))
        assert (live.phase, live.phase_since) == (JACKPOT_PENDING, "2026-11-26T12:00:03.000000Z"), t
        seq += 1
    live.apply_event(ev(seq, "progressive.paid", {"hit": "t1-r1-h1"}))
    live.apply_event(ev(seq + 1, "table.block_cleared", {"block": "jackpot"}))
    assert live.phase != JACKPOT_PENDING and live.pending_jackpots == {}
    live.apply_event(ev(seq + 2, "round.completed"))
    assert live.phase == "complete" and live.held_since is None
    # A live model stored before this field existed reads back with its round's phase.
    old = {k: v for k, v in live.to_json().items() if not k.startswith(("round_phase", "held"))}
    assert TableLive.from_json(old).round_phase == "complete"


# -- deltas ----------------------------------------------------------------------------------------------------------


def _server() -> ConsoleServer:
    return ConsoleServer(parse_floor_config('[database]\ndsn = "dbname=none"\n[console]\nlisten = "127.0.0.1:0"\n'))


def _incoming(table: str, e: TableEvent) -> Any:
    return parse(PREFIX, f"{PREFIX}/{table}/event", e.model_dump_json().encode())


def _sent(q: asyncio.Queue[tuple[str, str] | None]) -> str:
    item = q.get_nowait()
    assert item is not None and item[0] == "update"
    return item[1]


def test_an_update_carries_only_the_changed_tiles_and_alert_groups() -> None:
    server = _server()
    q: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()
    server.streams.add(q)
    live = {f"t{i}": TableLive(f"t{i}") for i in range(1, 4)}
    msgs = []
    for table, model in live.items():
        e = ev(1, "betting.opened", table=table)
        model.apply_event(e)
        msgs.append(_incoming(table, e))
    server.archived(msgs, live)
    first = json.loads(_sent(q))
    assert [t["table_id"] for t in first["tiles"]] == ["t1", "t2", "t3"]
    assert first["alerts"] == {"table:t1": [], "table:t2": [], "table:t3": []}
    # One table moves on: only its tile; its alerts are what they were, so none.
    e = ev(2, "no_more_bets", {"players": [1, 2]}, table="t2")
    live["t2"].apply_event(e)
    server.archived([_incoming("t2", e)], live)
    second = json.loads(_sent(q))
    assert [t["table_id"] for t in second["tiles"]] == ["t2"] and second["tiles"][0]["players"] == 2
    assert second["alerts"] == {} and [line["type"] for line in second["lines"]] == ["no_more_bets"]
    # A hit: the tile and its table's alert group, nothing of the others.
    e = ev(3, "progressive.hit", {"hit": "h1", "seat": 3, "level": "major", "amount": 100_000}, table="t2")
    live["t2"].apply_event(e)
    server.archived([_incoming("t2", e)], live)
    third = json.loads(_sent(q))
    assert [t["phase"] for t in third["tiles"]] == [JACKPOT_PENDING]
    assert [a["kind"] for a in third["alerts"]["table:t2"]] == ["jackpot"] and list(third["alerts"]) == ["table:t2"]


def test_a_linked_hit_is_on_every_linked_tile_and_first_of_the_alerts() -> None:
    server = _server()
    live = {t: TableLive(t) for t in ("t1", "t2", "t3")}
    msgs: list[Any] = []
    for table, model in live.items():
        e = ev(1, "table.blocked", {"reasons": {"tilt:sign": "the sign is dark"}}, table=table)
        model.apply_event(e)
        msgs.append(_incoming(table, e))
    server.archived(msgs, live)
    links: dict[str, LinkLive] = {}
    state = protocol.LinkState(
        link_id="mega", status="open", tilt=None, database="up", seq=9,
        tables={t: protocol.TableLease(asset_number=f"A-{t}", leased=t == "t1") for t in ("t1", "t2")},
    )  # fmt: skip
    hit = protocol.HitOut(table_id="t2", asset_number="A-t2", round_id="t2-r9", seat=4, level="mega", order=9,
                          amount_cents=5_230_000, meter_before_cents=5_230_000)  # fmt: skip
    jackpots = protocol.PendingJackpots(link_id="mega", pending=[hit])
    for topic, body in (("state", state), ("jackpot", jackpots)):
        m = parse(PREFIX, f"{PREFIX}/link/mega/{topic}", body.model_dump_json().encode())
        assert isinstance(m, LinkIncoming)
        links.setdefault("mega", LinkLive("mega")).apply(m.model, "2026-11-26T13:00:00.000000Z")
        server.archived([m], live, links)
    floor = server.view.floor(datetime(2026, 11, 26, 13, 1, tzinfo=UTC))
    tiles = {t["table_id"]: t for t in floor["tiles"]}
    assert (
        [h["order"] for h in tiles["t1"]["linked_jackpots"]]
        == [9]
        == [h["order"] for h in tiles["t2"]["linked_jackpots"]]
    )
    assert tiles["t3"]["linked_jackpots"] == [] and tiles["t3"]["links"] == []
    assert [(x["healthy"], x["leased"]) for x in tiles["t1"]["links"]] == [(True, True)]
    assert [(x["healthy"], x["leased"]) for x in tiles["t2"]["links"]] == [(False, False)]
    top = floor["alerts"][0]
    assert (top["kind"], top["target"], top["target_id"], top["verb"]) == (
        "link_jackpot",
        "link",
        "mega",
        "validate_jackpot",
    )
    assert top["args"] == {"table_id": "t2", "round_id": "t2-r9", "seat": 4, "level": "mega"}
    assert "$52,300.00" in top["text"] and "A-t2" in top["text"]
    # The tilts are older, yet after the jackpot.
    assert [a["kind"] for a in floor["alerts"]] == ["link_jackpot", "tilt", "tilt", "tilt"]
    assert floor["links"][0]["pending"][0]["since"] == "2026-11-26T13:00:00.000000Z"


@pytest.mark.parametrize("meter_after", [None, 1_234_500], ids=["old-shape", "with-meter-after"])
def test_a_pending_list_with_or_without_meter_after_is_read_and_the_meter_after_shown(meter_after: int | None) -> None:
    """The link's retained list as a link publishes it by default (no `meter_after_cents`: a floor older than the
    field refuses it) and with `[link] jackpot_meter_after = true` (docs/mqtt.md's upgrade order): both are read, and
    the alert and the panel say the meter the link left when the list says it."""
    hit = protocol.HitOut(
        table_id="t2", asset_number="A-t2", round_id="t2-r9", seat=4, level="mega", order=9,
        amount_cents=5_230_000, meter_before_cents=5_230_000, meter_after_cents=meter_after,
    )  # fmt: skip
    jackpots = protocol.PendingJackpots(link_id="mega", pending=[hit])
    text = jackpots.model_dump_json(
        exclude={"pending": {"__all__": {"meter_after_cents"}}} if meter_after is None else None
    )
    assert ("meter_after_cents" in text) == (meter_after is not None)
    m = parse(PREFIX, f"{PREFIX}/link/mega/jackpot", text.encode())
    assert isinstance(m, LinkIncoming), m
    link = LinkLive("mega")
    link.apply(m.model, "2026-11-26T13:00:00.000000Z")
    assert [h["meter_after_cents"] for h in link.panel()["pending"]] == [meter_after]
    (alert,) = link_alerts(link)
    assert "$52,300.00" in alert["text"]
    assert ("the meter after it $12,345.00" in alert["text"]) == (meter_after is not None), alert["text"]


# -- through the broker and the archive ------------------------------------------------------------------------------

# The suite's broker is shared by the worker's tests, and the link's topics are retained: a prefix no other test uses.
WIRE = fresh_id("linktest")
KEY = Ed25519PrivateKey.from_private_bytes(b"\x17" * 32)


@pytest.fixture
async def floor_with_console(mosquitto: Mosquitto, floor_dsn: str) -> AsyncIterator[tuple[FloorService, str]]:
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "{mosquitto.url}"\nprefix = "{WIRE}"\n'
        f'client_id = "floor-{free_port()}"\n[console]\nlisten = "127.0.0.1:0"\ncommand_timeout_s = 10\n'
        f'[[console.supervisors]]\nkey_id = "sue.sup"\nrole = "supervisor"\npublic_key = "{public_key_b64(KEY)}"\n'
    )
    service = FloorService(config)
    async with running(service, console=True):
        assert service.console is not None
        yield service, service.console.url.rstrip("/")


async def test_link_topics_reach_the_tiles_and_a_linked_hit_is_validated_through_the_link(
    mosquitto: Mosquitto, floor_with_console: tuple[FloorService, str], floor_dsn: str
) -> None:
    _, url = floor_with_console
    jar = aiohttp.CookieJar(unsafe=True)  # the cookie of a console on 127.0.0.1 (an IP address)
    async with aiohttp.ClientSession(cookie_jar=jar) as http, aiomqtt.Client("127.0.0.1", mosquitto.port) as mqtt:
        h = {"Origin": url}
        c = await (await http.post(f"{url}/api/login/challenge", json={"key_id": "sue.sup"}, headers=h)).json()
        sig = base64.b64encode(KEY.sign(login_bytes(c["challenge"], "sue.sup", url))).decode()
        r = await http.post(f"{url}/api/login", json={"key_id": "sue.sup", "challenge": c["challenge"],
                                                       "signature": sig}, headers=h)  # fmt: skip
        assert r.status == 200
        session = await (await http.get(f"{url}/api/session")).json()
        assert session["link_allowed"] == ["validate_jackpot", "open_link", "close_link", "clear_tilt"]
        stream = Stream(await http.get(f"{url}/api/stream"))
        await stream.next_where("floor", lambda f: True)

        for table in ("ms-1", "ms-2"):
            e = ev(1, "betting.opened", table=table)
            await mqtt.publish(f"{WIRE}/{table}/event", e.model_dump_json(), qos=1)
        await stream.next_where("update", lambda u: {"ms-1", "ms-2"} <= {t["table_id"] for t in u["tiles"]})

        base = f"{WIRE}/link/mega"
        state = protocol.LinkState(
            link_id="mega", status="open", tilt=None, database="up", seq=41,
            tables={t: protocol.TableLease(asset_number=f"A-{t}", leased=True) for t in ("ms-1", "ms-2")},
        )  # fmt: skip
        hit = protocol.HitOut(table_id="ms-2", asset_number="A-ms-2", round_id="ms-2-r7", seat=5, level="mega",
                              order=41, amount_cents=5_012_345, meter_before_cents=5_012_345)  # fmt: skip
        await mqtt.publish(f"{base}/state", state.model_dump_json(), qos=1, retain=True)
        meter = protocol.LinkMeter(link_id="mega", level="mega", display_cents=500_000, seq=41)
        await mqtt.publish(f"{base}/progressive/mega", meter.model_dump_json(), qos=1, retain=True)
        event = {
            "seq": 41, "ts": "2026-11-26T12:00:00+00:00", "type": "meter.hit", "rule": protocol.RULE_CITE,
            "table_id": "ms-2", "round_id": "ms-2-r7", "payload": {"level": "mega", "amount_cents": 5_012_345},
        }  # fmt: skip
        await mqtt.publish(f"{base}/event", json.dumps(event), qos=1)
        jackpots = protocol.PendingJackpots(link_id="mega", pending=[hit])
        await mqtt.publish(f"{base}/jackpot", jackpots.model_dump_json(), qos=1, retain=True)

        got = await stream.next_where("update", lambda u: any(a["kind"] == "link_jackpot"
                                                              for a in u["alerts"].get("link:mega", [])))  # fmt: skip
        floor = await (await http.get(f"{url}/api/floor")).json()
        tiles = {t["table_id"]: t for t in floor["tiles"]}
        for t in ("ms-1", "ms-2"):
            assert [j["order"] for j in tiles[t]["linked_jackpots"]] == [41]
            assert tiles[t]["links"][0]["healthy"] is True
            assert tiles[t]["linked_meters"] == {"mega/mega": {"display_cents": 500_000, "seq": 41}}
        assert floor["alerts"][0]["kind"] == "link_jackpot" and floor["alerts"][0]["target_id"] == "mega"
        assert [(p["link_id"], p["status"], p["meters"]["mega"]["display_cents"]) for p in floor["links"]] == [
            ("mega", "open", 500_000)
        ]
        alert = got["alerts"]["link:mega"][0]

        # The link's desk, played here: it takes the command on the link's topic and answers as the link does.
        relayed: list[bytes] = []

        async def desk() -> None:
            async with aiomqtt.Client("127.0.0.1", mosquitto.port) as d:
                await d.subscribe(f"{base}/cmd/validate_jackpot", qos=1)
                ready.set()
                async for m in d.messages:
                    raw = m.payload if isinstance(m.payload, bytes) else b""
                    relayed.append(raw)
                    obj = loads(raw.decode())
                    cmd = SupervisorCommand.model_validate(obj)
                    problem = signature_problem(obj, cmd, KEY.public_key())
                    reply = {"command_id": cmd.command_id, "verb": cmd.verb, "accepted": problem is None,
                             "code": "done" if problem is None else "bad_signature", "reason": problem}  # fmt: skip
                    await d.publish(f"{base}/jackpot", protocol.PendingJackpots(link_id="mega", pending=[])
                                    .model_dump_json(), qos=1, retain=True)  # fmt: skip
                    await d.publish(f"{base}/cmd/reply", json.dumps(reply), qos=1)
                    return

        ready = asyncio.Event()
        desk_task = asyncio.create_task(desk())
        await ready.wait()
        envelope = sign_command(KEY, table_id="mega", verb="validate_jackpot", key_id="sue.sup", args=alert["args"])
        raw = json.dumps(envelope).encode()
        post = {"Origin": url, "Content-Type": "application/json", "X-CSRF-Token": session["csrf"]}
        wrong = await http.post(f"{url}/api/links/mega/commands/open_link", data=raw, headers=post)
        assert wrong.status == 400 and "table_id and verb" in (await wrong.json())["error"]
        r = await http.post(f"{url}/api/links/mega/commands/validate_jackpot", data=raw, headers=post)
        reply = await r.json()
        assert r.status == 200 and reply["outcome"] == "applied" and reply["code"] == "done", reply
        await desk_task
        assert relayed == [raw]  # untouched
        await stream.next_where("update", lambda u: u["alerts"].get("link:mega") == [])

    with psycopg.connect(floor_dsn) as conn:
        assert conn.execute("SELECT link_id, seq, type, table_id FROM link_events").fetchall() == [
            ("mega", 41, "meter.hit", "ms-2")
        ]
        audit = conn.execute("SELECT table_id, verb, outcome FROM console_audit WHERE action = 'command' ORDER BY id")
        assert audit.fetchall() == [("link:mega", "open_link", "refused"), ("link:mega", "validate_jackpot", "applied")]
