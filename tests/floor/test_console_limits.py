"""The console's bounds on what anyone who reaches it can make it keep or hold (docs/console.md, "Limits"), and what it
keeps when a table or a live event says something unexpected: the console served in this process on a real loopback
socket with `tablectl floor`'s aiohttp options, a real PostgreSQL cluster (the keys, the audit), a real mosquitto
(the relay and a table answering it: a test client standing in for a table's command desk, which the relay cannot
tell from one), and `tablectl floor console reject` as a real process. The clock is the test's: a minute passes
when the test says so."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from controller.mqtt.contract import TableEvent
from floor.live import TableLive
from floor.messages import Incoming, parse
from tests.broker import Mosquitto
from tests.floor.conftest import wait_for
from tests.floor.console_served import PREFIX, Served, serve
from tests.tablectl_runs import tablectl

pytestmark = pytest.mark.floor


@pytest.fixture
async def served(
    floor_dsn: str, tmp_path: Path, mosquitto: Mosquitto, request: pytest.FixtureRequest
) -> AsyncIterator[Served]:
    limits = getattr(request, "param", "")
    async for s in serve(floor_dsn, tmp_path, mosquitto.url, limits):
        yield s


# -- 1. enrolment and log-in: bounded ---------------------------------------------------------------------------------


@pytest.mark.parametrize("served", ["max_pending_enrolments = 3\nattempts_per_minute = 1000"], indirect=True)
async def test_pending_enrolments_are_capped_until_an_administrator_approves_or_rejects(served: Served) -> None:
    """Before, each POST /api/enrol added a console_keys row, without bound."""
    for i in range(3):
        assert (await served.enrol(f"k{i}"))[0] == 200
    status, body = await served.enrol("k3")
    assert status == 409, body
    assert "3 enrolments are already waiting for approval" in body["error"]
    assert "max_pending_enrolments" in body["error"] and "console reject KEY_ID" in body["error"]
    assert "console approve KEY_ID" in body["error"]
    assert served.audit("SELECT count(*) FROM console_keys") == [(3,)]
    refused = served.audit("SELECT key_id, reason FROM console_audit WHERE action = 'enrol' AND outcome = 'refused'")
    assert [r[0] for r in refused] == ["k3"] and "max_pending_enrolments" in refused[0][1]

    # The administrator's side, as a real command: reject one, approve one; two places free.
    def console(*argv: str) -> subprocess.CompletedProcess[str]:
        return tablectl("floor", "--config", served.config, "console", *argv)

    done = await asyncio.to_thread(console, "reject", "k0", "--by", "ann")
    assert (done.returncode, done.stdout.strip()) == (0, "enrolment of k0 rejected"), done
    assert (await asyncio.to_thread(console, "approve", "k1", "--by", "ann")).returncode == 0
    approved = await asyncio.to_thread(console, "reject", "k1")
    assert approved.returncode != 0 and "is approved, not pending" in approved.stderr, approved
    assert served.audit("SELECT key_id, outcome, reason FROM console_audit WHERE action = 'reject'") == [
        ("k0", "rejected", "by ann")
    ]

    # Ten at once for the two places: the count and the insert are one step, so exactly two get in.
    got = await asyncio.gather(*(served.enrol(f"many{i}") for i in range(10)))
    assert sorted(s for s, _ in got) == [200] * 2 + [409] * 8
    assert served.audit("SELECT count(*) FROM console_keys WHERE approved_at IS NULL") == [(3,)]


@pytest.mark.parametrize("served", ["attempts_per_minute = 5"], indirect=True)
async def test_enrolments_and_refused_logins_are_limited_per_client_and_the_refusals_coalesced(
    served: Served,
) -> None:
    """Before, every refused log-in added an audit row and every enrolment a key row, as fast as a client sent them.
    Now a client gets 5 a minute; past that a 429 with Retry-After, its bodies unread, and one audit row for its run
    of refusals with the count and first and last seen."""
    assert (await served.enrol("e1"))[0] == 200
    assert (await served.enrol("e2"))[0] == 200
    for _ in range(3):
        assert (await served.bad_login())[0] == 403
    start = served.clock.now
    status, body = await served.enrol("e3")
    assert (status, body["retry_after"]) == (429, "60"), body
    assert "at most 5 a minute ([console] attempts_per_minute); try again in 60 s" in body["error"]
    for i in range(60):
        served.clock.now = start + timedelta(milliseconds=500 * i)  # half a second apart: 30 s of flood
        status, body = await served.bad_login()
        assert status == 429, body
    assert body["retry_after"] == "31"  # the oldest counted attempt leaves the window 60 s after `start`
    assert served.audit("SELECT count(*) FROM console_audit WHERE action = 'login'") == [(3,)]
    assert served.audit("SELECT count(*) FROM console_keys") == [(2,)]
    rows = served.audit("SELECT reply, remote FROM console_audit WHERE action = 'throttle' AND outcome = 'refused'")
    assert len(rows) == 1, rows  # one row for the run, brought up to date at most once a second
    assert rows[0][0]["first_seen"] == start.isoformat() and rows[0][0]["count"] >= 59

    served.clock.now = start + timedelta(seconds=61)  # the minute passed: judged again, the run's row finished
    assert (await served.bad_login())[0] == 403
    ((reply, reason),) = served.audit("SELECT reply, reason FROM console_audit WHERE action = 'throttle'")
    last = (start + timedelta(milliseconds=500 * 59)).isoformat()
    assert reply == {
        "count": 61,
        "first_seen": start.isoformat(),
        "last_seen": last,
        "limit_per_minute": 5,
        "client": "127.0.0.1",
    }
    assert reason.startswith("61 enrolments or log-ins from 127.0.0.1 refused unjudged between")


# -- 2. a table's reply PostgreSQL cannot hold --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "kept", "reason"),
    [
        (
            b'{"command_id": "CID", "outcome": "rejected", "code": "bad\\u0000", "reason": "no \\u0000 here"}',
            {"command_id": "c-1", "outcome": "rejected", "code": "bad\\x00", "reason": "no \\x00 here"},
            "no \\x00 here",
        ),
        (
            b'{"command_id": "CID", "outcome": "ignored", "reason": "\\ud800",'
            b' "detail": {"\\udfff": [NaN, -Infinity]}}',
            {"command_id": "c-1", "outcome": "ignored", "reason": "\\ud800", "detail": {"\\udfff": ["nan", "-inf"]}},
            "\\ud800",
        ),
        (
            b'{"command_id": "CID", "outcome": "rejected\\u0000", "reason": {"why": "\\u0000"}}',
            {"command_id": "c-1", "outcome": "rejected\\x00", "reason": {"why": "\\x00"}},
            "{'why': '\\x00'}",
        ),
    ],
    ids=["nul", "lone-surrogate-and-nan", "nul-in-outcome"],
)
async def test_a_reply_postgresql_cannot_hold_is_escaped_and_the_audit_row_written(
    served: Served, mosquitto: Mosquitto, reply: bytes, kept: dict[str, Any], reason: str
) -> None:
    """Before, the audit's INSERT failed on the reply after the command was relayed: a 500 to the browser and no
    record of a command the table had judged. The browser is shown what the record keeps (no NaN its JSON.parse
    refuses)."""
    served.server.view.live["t1"] = TableLive("t1")
    status, body, relayed = await served.relay(mosquitto, reply, "c-1")
    assert status == 200, body
    assert json.loads(body, parse_constant=lambda c: pytest.fail(f"{c} sent to the browser")) == kept
    envelope = {"command_id": "c-1", "key_id": "sup", "table_id": "t1", "verb": "clear_tilt", "args": {}}
    assert json.loads(relayed) == envelope  # relayed as sent
    rows = served.audit(
        "SELECT outcome, reason, reply FROM console_audit WHERE action = 'command' AND command_id = 'c-1'"
    )
    assert rows == [(kept["outcome"], reason, kept)]


# -- 3. a live event whose payload is not as its type's ----------------------------------------------------------


def _event(seq: int, type_: str, payload: dict[str, Any]) -> Incoming:
    e = TableEvent.model_validate(
        {
            "event_id": f"t1-{seq}",
            "boot_id": "b",
            "seq": seq,
            "ts": f"2026-11-26T12:00:{seq:02d}.000000Z",
            "table_id": "t1",
            "round_id": "t1-r1",
            "type": type_,
            "rule": "655a.11(h)(3)",
            "payload": payload,
        }
    )
    m = parse(PREFIX, f"{PREFIX}/t1/event", e.model_dump_json().encode())
    if isinstance(m, Incoming):
        return m
    # The floor's intake refuses such a payload now (floor/messages.py); the console must still survive one that
    # reached the archive before that check, or that a later event type makes odd: built as intake would have.
    content = e.model_dump(mode="json")
    return Incoming("event", "t1", e, content, hashlib.sha256(json.dumps(content, sort_keys=True).encode()).digest())


async def _frame(reader: aiohttp.StreamReader, name: str) -> Any:
    while True:
        line = (await reader.readline()).decode()
        if line == f"event: {name}\n":
            return json.loads((await reader.readline()).decode().removeprefix("data: "))


async def test_a_malformed_live_payload_is_shown_as_such_and_the_stream_goes_on(served: Served) -> None:
    """Before, summarize() (and the players' count) raised on such a payload inside archived(): the batch's update
    never left, the good events in it with it."""
    jar, _ = await served.session("sup")
    live = {"t1": TableLive("t1")}
    async with aiohttp.ClientSession(cookie_jar=jar) as http, http.get(f"{served.origin}/api/stream") as stream:
        await _frame(stream.content, "floor")
        batch = [
            _event(1, "hand.settled", {"seat": 1, "wagers": [7]}),  # wagers of numbers, not objects
            _event(2, "no_more_bets", {"players": 5}),  # a count where the seats should be
            _event(3, "wager.accepted", {"seat": 2, "spot": "ante", "amount": 500}),
        ]
        served.server.archived(batch, live)
        update = await _frame(stream.content, "update")
        lines = {line["seq"]: line for line in update["lines"]}
        assert lines[1]["text"].startswith("(payload not as expected: what a hand.settled holds (TypeError")
        assert lines[1]["bad"].startswith("what a hand.settled holds")
        assert lines[2]["bad"].startswith("what a no_more_bets holds (TypeError")
        assert lines[3]["text"] == "seat 2: ante $5.00" and "bad" not in lines[3]
        served.server.archived([_event(4, "round.completed", {"collected": 500, "paid": 0, "table_result": 500})], live)
        update = await _frame(stream.content, "update")
        assert [line["seq"] for line in update["lines"]] == [4]
    assert served.server.view.table("t1").players == 0  # the count that was not a list left out


# -- 5. event streams: per session and overall --------------------------------------------------------------------


@pytest.mark.parametrize("served", ["streams_per_session = 2\nmax_streams = 3"], indirect=True)
async def test_event_streams_are_capped_per_session_and_overall(served: Served) -> None:
    """Before, one session (a script with its cookie) could open event streams without end, each a socket, a task
    and a queue of up to 2000 updates."""
    sup, _ = await served.session("sup")
    ann, _ = await served.session("ann")
    async with (
        aiohttp.ClientSession(cookie_jar=sup) as s1,
        aiohttp.ClientSession(cookie_jar=sup) as s2,
        aiohttp.ClientSession(cookie_jar=sup) as s3,
        aiohttp.ClientSession(cookie_jar=ann) as a1,
        aiohttp.ClientSession(cookie_jar=ann) as a2,
    ):
        url = f"{served.origin}/api/stream"
        first = await s1.get(url)
        second = await s2.get(url)
        for r in (first, second):
            assert r.status == 200
            await _frame(r.content, "floor")
        third = await s3.get(url)
        assert (third.status, third.headers["Retry-After"]) == (429, "15")
        assert "this session already has 2 live streams open" in (await third.json())["error"]
        assert "streams_per_session" in (await third.json())["error"]
        ann1 = await a1.get(url)
        assert ann1.status == 200
        await _frame(ann1.content, "floor")
        ann2 = await a2.get(url)
        assert ann2.status == 429 and "the console already serves 3 live streams" in (await ann2.json())["error"]
        assert sorted(served.server.stream_limits.open.values()) == [1, 2]

        first.close()  # the browser closes a tab: its stream's place is free again
        await asyncio.to_thread(
            wait_for, lambda: sum(served.server.stream_limits.open.values()) == 2, 30, "the closed stream let go"
        )
        again = await s3.get(url)
        assert again.status == 200
        await _frame(again.content, "floor")
        for r in (second, ann1, again):
            r.close()
