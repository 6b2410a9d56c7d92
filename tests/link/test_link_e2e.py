"""The link controller as a real `tablectl link` process on a real PostgreSQL primary with a synchronous standby
and a real mosquitto, three linked tables speaking its MQTT v5 request/response protocol (tests/link/conftest.py
says what the tables here are). 605a.8, with NY 9 NYCRR 5321.18 as the stand-in for its text."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.broker import Mosquitto, Subscribe
from tests.floor.conftest import wait_for
from tests.link.conftest import (
    FLOORPERSON,
    TABLES,
    LinkProcess,
    LinkTable,
    Pair,
    command,
    link_toml,
    make_pair,
    rows,
    send,
)
from tests.tablectl_runs import here

pytestmark = [pytest.mark.floor, pytest.mark.e2e]


@pytest.fixture
def linked(
    mosquitto: Mosquitto, link_db: str, tmp_path: Path, unique_id: str
) -> Iterator[tuple[LinkProcess, dict[str, LinkTable], str]]:
    config = tmp_path / "link.toml"
    config.write_text(link_toml(link_db, mosquitto.url, unique_id))
    (tmp_path / "logs").mkdir()
    link = LinkProcess(config, tmp_path / "logs")
    link.start()
    tables = {t: LinkTable(t, "127.0.0.1", mosquitto.port, unique_id) for t in TABLES}
    try:
        yield link, tables, unique_id
    finally:
        for t in tables.values():
            t.close()
        link.stop()


def test_lease_contributions_hit_pending_on_every_sign_and_validation(
    linked: tuple[LinkProcess, dict[str, LinkTable], str], mosquitto: Mosquitto, subscribe: Subscribe, link_db: str
) -> None:
    _, tables, prefix = linked
    signs = subscribe(f"{prefix}/link/mega/jackpot", f"{prefix}/link/mega/progressive/+", f"{prefix}/link/mega/event")
    first = tables["ms-01"].until_acked({"kind": "heartbeat"}, within=60)
    assert first["status"] == "closed" and first["lease_ms"] == 0, "a closed link grants no lease (5321.18)"
    # bad input is answered with the reason and changes nothing; the controller keeps running
    bad = tables["ms-01"].ask({"kind": "contribute", "round_id": "r", "contributions": [{"seat": 1, "cents": -5}]})
    assert bad is not None and not bad["ok"] and "contributions.0" in bad["error"]
    stranger = LinkTable("ms-99", "127.0.0.1", mosquitto.port, prefix)
    refused = stranger.ask({"kind": "heartbeat"})
    stranger.close()
    assert refused is not None and "not on link mega: add it to [[tables]]" in refused["error"]
    assert send(mosquitto, subscribe, prefix, "open_link", command("open_link", {}))["accepted"]
    wait_for(lambda: (tables["ms-02"].ask({"kind": "heartbeat"}) or {}).get("lease_ms") == 2000, 20, "a lease")
    for tid, table in tables.items():
        body = {
            "kind": "contribute",
            "round_id": f"{tid}-r1",
            "contributions": [{"seat": s, "wager": "progressive", "cents": 500} for s in (1, 2, 3)],
        }
        assert table.until_acked(body)["new"] == 3
        assert table.until_acked(body)["duplicates"] == 3, "a resend changes nothing"
    # a floorperson may not take the link out of operation
    not_allowed = send(mosquitto, subscribe, prefix, "close_link", command("close_link", {}, FLOORPERSON, "floor1"))
    assert not_allowed["code"] == "not_allowed"
    claim = {
        "kind": "claim",
        "round_id": "ms-03-r1",
        "claim": {"seat": 2, "level": "mega", "percent": 100, "rule": "655a.11(i)(1)(iv)"},
    }
    hit = tables["ms-03"].until_acked(claim)["hit"]
    assert hit["amount_cents"] == 5_000_000 + 9 * 500 * 11 // 100 and hit["asset_number"] == "A-03"
    signs.wait_until(
        lambda got: any(m.topic.endswith("/jackpot") and m.json()["pending"] for m in got), 20, "the pending jackpot"
    )
    pending = [m.json() for m in signs.messages if m.topic.endswith("/jackpot") and m.json()["pending"]][-1]
    assert pending["pending"][0]["table_id"] == "ms-03" and pending["pending"][0]["level"] == "mega"
    validate = command(
        "validate_jackpot",
        {"table_id": "ms-03", "round_id": "ms-03-r1", "seat": 2, "level": "mega"},
        FLOORPERSON,
        "floor1",
    )
    assert send(mosquitto, subscribe, prefix, "validate_jackpot", validate)["accepted"]
    again = send(mosquitto, subscribe, prefix, "validate_jackpot", validate)
    assert again["code"] == "replayed", "a signed command is carried out once"
    signs.wait_until(
        lambda got: any(m.topic.endswith("/jackpot") and m.json()["pending"] == [] for m in got[-5:]), 20, "paid"
    )
    # closing the link: the leases stop (the tables lock progressive wagers out), a parameter change goes through
    assert send(mosquitto, subscribe, prefix, "close_link", command("close_link", {}))["accepted"]
    assert (tables["ms-01"].until_acked({"kind": "heartbeat"}))["lease_ms"] == 0
    wait_for(lambda: len({m.json()["seq"] for m in signs.messages if m.topic.endswith("/event")}) >= 24, 20, "events")
    seqs = sorted({m.json()["seq"] for m in signs.messages if m.topic.endswith("/event")})
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "the link's events have a gap-free seq"
    assert rows(link_db, "SELECT verb, key_id, outcome FROM link_command ORDER BY received_at")[:2] == [
        ("open_link", "manager", "done"),
        ("close_link", "floor1", "not_allowed"),
    ]


def test_code_that_does_not_verify_keeps_the_link_inoperable(
    mosquitto: Mosquitto, subscribe: Subscribe, link_db: str, tmp_path: Path, unique_id: str
) -> None:
    """5321.18: the controller authenticates its own software at power-up and operates only if that passes. Here the
    config requires verified code and no signed manifest vouches for it: the link starts tilted, grants no lease
    (every linked table locks its progressive wagers out), and refuses open_link and clear_tilt while this code runs."""
    config = tmp_path / "link.toml"
    missing = tmp_path / "no-such-manifest.json"
    config.write_text(
        link_toml(link_db, mosquitto.url, unique_id)
        + f'\n[software]\nrequire_verified = true\nmanifest = "{missing}"\n'
    )
    (tmp_path / "logs").mkdir()
    link = LinkProcess(config, tmp_path / "logs")
    link.start()
    table = LinkTable("ms-01", "127.0.0.1", mosquitto.port, unique_id)
    try:
        first = table.until_acked({"kind": "heartbeat"}, within=60)
        assert first["status"] == "tilted" and first["lease_ms"] == 0
        for verb in ("open_link", "clear_tilt"):
            reply = send(mosquitto, subscribe, unique_id, verb, command(verb, {}))
            assert not reply["accepted"] and "signed release manifest" in reply["reason"], reply
        assert table.until_acked({"kind": "heartbeat"})["lease_ms"] == 0
        assert "self-check failed: the installed link code does not verify" in link.log()
        tilt = rows(link_db, "SELECT tilt FROM link_state")[0][0]
        assert tilt.startswith("software: "), tilt
    finally:
        table.close()
        link.stop()


# Per table; bounded for CI (the whole suite stays under 15 min); the long campaign: TABLECTL_LINK_ROUNDS=500.
ROUNDS = 24


def test_kill_tables_controller_and_primary_nothing_lost_or_doubled(
    mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str
) -> None:
    """kill -9 of the controller and of the PostgreSQL primary (the standby promoted) while three tables resend
    each lock-out's contributions until acknowledged: none lost, none counted twice, every hit paid once in commit
    order, the balance exact."""
    rounds = int(os.environ.get("TABLECTL_LINK_ROUNDS", ROUNDS))
    pair: Pair = make_pair()
    rng = random.Random(1515)
    try:
        dsn = pair.dsn("link")
        config = tmp_path / "link.toml"
        config.write_text(link_toml(dsn, mosquitto.url, unique_id))
        (tmp_path / "logs").mkdir()
        link = LinkProcess(config, tmp_path / "logs")
        link.start()
        tables = {t: LinkTable(t, "127.0.0.1", mosquitto.port, unique_id) for t in TABLES}
        tables["ms-01"].until_acked({"kind": "heartbeat"}, within=60)  # the controller is up and subscribed
        assert send(mosquitto, subscribe, unique_id, "open_link", command("open_link", {}))["accepted"]
        sent: dict[str, int] = {}
        claims: list[dict[str, Any]] = []
        kill_link_at, kill_primary_at = rng.randrange(5, rounds // 2), rng.randrange(rounds // 2, rounds - 5)
        for r in range(rounds):
            if r == kill_link_at:
                link.kill()
                link.start()
            if r == kill_primary_at:
                pair.primary.kill()  # a power cut of the primary; the standby has every acknowledged commit
                pair.standby.promote()
            for tid, table in tables.items():
                seats = rng.sample(range(1, 8), rng.randint(1, 4))
                wagers = {s: rng.choice([100, 500]) for s in seats}
                body = {
                    "kind": "contribute",
                    "round_id": f"{tid}-r{r}",
                    "contributions": [{"seat": s, "wager": "progressive", "cents": c} for s, c in wagers.items()],
                }
                table.until_acked(body, within=120)
                sent.update({f"{tid}/{r}/{s}": c for s, c in wagers.items()})
                if rng.random() < 0.03:
                    claim = {
                        "kind": "claim",
                        "round_id": f"{tid}-r{r}",
                        "claim": {"seat": seats[0], "level": "major", "percent": 100, "rule": "655a.11(i)(1)(iv)"},
                    }
                    claims.append(table.until_acked(claim, within=120)["hit"])
                    claims.append(table.until_acked(claim, within=120)["hit"])  # resent: the same hit
        stored = rows(dsn, "SELECT table_id, round_id, seat, cents FROM link_contribution")
        assert {f"{t}/{r.rsplit('-r', 1)[1]}/{s}": c for t, r, s, c in stored} == sent
        major = rows(dsn, "SELECT meters FROM link_level WHERE level = 'major'")[0][0]
        assert major["in_count"] == len(sent) and major["in_cents"] == sum(sent.values())
        hits = rows(dsn, "SELECT hit_seq, amount_cents FROM link_hit ORDER BY hit_seq")
        assert len(hits) == len(claims) // 2 and major["hits"] == len(hits)
        assert [(h["order"], h["amount_cents"]) for h in claims[::2]] == hits
        report = link.config.parent / "report.json"
        out = here("link", "--config", config, "report", "--json")
        report.write_text(out.stdout)
        assert out.returncode == 0 and json.loads(out.stdout)["balanced"], out.stdout + out.stderr + link.log()
        for t in tables.values():
            t.close()
        link.stop()
    finally:
        pair.remove()
