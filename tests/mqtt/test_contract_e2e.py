"""The whole MQTT contract, end to end: the real daemon (`tablectl demo`, `tablectl simulate`) in its own process,
on simulated devices over real ptys, journaling to a real SQLite file and publishing to a real mosquitto, watched
by an independent subscriber to <prefix>/<table_id>/# from before the table opens until it has said offline.

Everything received must validate against its model, the event seqs must be gap-free and match the journal, the
retained topics must be there for a late subscriber, and no card may appear before its round's settlement.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.config.table import TableConfig, configured_devices, load_config
from controller.core.cards import STANDARD_DECK
from controller.mqtt.contract import Birth, DeviceStatus, Topics
from controller.release.installed import installed_root, scan
from controller.release.manifest import digest_of
from tests.broker import Mosquitto, Received, Subscribe
from tests.mqtt.conftest import ContractCheck, Delivered

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120
# One of each chapter, voids and full rounds; 679a deals from the hand, with the cards the shuffler read.
SCENARIOS = [
    "demo--shoe-jam-void",
    "demo--full-round",
    "let-it-ride--shoe-jam-void",
    "cajun-stud--full-round",
    "three-card-prime--shuffler-jam-reshuffle",
    "chapter-684a--full-round",
]


def _config(tmp_path: Path, name: str, table_id: str) -> Path:
    """configs/<name>.toml under a fresh table id, so retained topics never meet another test's."""
    text = (ROOT / "configs" / f"{name}.toml").read_text(encoding="utf-8")
    text, n = re.subn(r'(?m)^table_id = ".*"$', f'table_id = "{table_id}"', text)
    assert n == 1
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
        env={**os.environ, "XDG_STATE_HOME": "/nonexistent"},
    )


def _journal(path: Path) -> list[tuple[int, str, str | None, int]]:
    """(seq, event_id, sealed, published) of every journaled event, read straight from the file."""
    with sqlite3.connect(path) as db:
        return list(db.execute("SELECT seq, event_id, sealed, published_at IS NOT NULL FROM events ORDER BY seq"))


class Played(TypedDict):
    """What _play gathered: the messages a subscriber got, and what the table wrote and was configured with."""

    messages: list[Received]
    prefix: str
    topics: Topics
    journal: list[tuple[int, str, str | None, int]]
    config: TableConfig


def _play(kind: str, mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, table_id: str) -> Played:
    config_name = "demo" if kind == "demo" else kind.split("--")[0]
    config = _config(tmp_path, config_name, table_id)
    journal = tmp_path / "journal.sqlite"
    prefix = load_config(config).mqtt.prefix
    topics = Topics(prefix, table_id)
    sub = subscribe(f"{topics.base}/#")
    if kind == "demo":
        done = _run(
            "demo",
            "--pace",
            "0",
            "--seed",
            "7",
            "--rounds",
            "3",
            "--quiet",
            "--config",
            str(config),
            "--broker",
            mosquitto.url,
            "--journal",
            str(journal),
        )
    else:
        scenario = ROOT / "docs" / "examples" / f"{kind}.scenario.toml"
        done = _run(
            "simulate",
            "--config",
            str(config),
            "--scenario",
            str(scenario),
            "--broker",
            mosquitto.url,
            "--journal",
            str(journal),
            "--public",
        )
    assert done.returncode == 0, done.stderr[-3000:]
    # "offline" is the table's last word, published after the outbox is drained.
    sub.wait_until(
        lambda ms: any(m.topic == topics.status and json.loads(m.payload)["state"] == "offline" for m in ms),
        timeout=20,
        what="status offline",
    )
    return {
        "messages": list(sub.messages),
        "prefix": prefix,
        "topics": topics,
        "journal": _journal(journal),
        "config": load_config(config),
    }


@pytest.mark.parametrize("kind", ["demo", *SCENARIOS])
def test_everything_published_keeps_the_contract(
    kind: str, mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path, unique_id: str, contract: type[ContractCheck]
) -> None:
    run = _play(kind, mosquitto, subscribe, tmp_path, unique_id)
    messages, topics = run["messages"], run["topics"]

    assert contract.violations(messages, run["prefix"], unique_id) == []

    # Every journaled event was published, each once (no broker outage here), in seq order.
    events = [json.loads(m.payload) for m in messages if m.topic == topics.event]
    journal = run["journal"]
    assert [(e["seq"], e["event_id"]) for e in events] == [(seq, eid) for seq, eid, _, _ in journal]
    assert all(published for *_, published in journal)
    assert not any(e.get("replayed") for e in events)

    # The check had something to find: the journal sealed card identities that were never published early.
    sealed = " ".join(s for _, _, s, _ in journal if s)
    assert list(contract.card_tokens(sealed))
    if "void" not in kind:
        # ... and once settled, the cards are published (the scanner is not blind to them).
        settled = [e for e in events if contract.is_settlement(e["type"]) and e["type"] != "round.voided"]
        assert any(list(contract.card_tokens(e["payload"])) for e in settled)
    else:
        assert [e["type"] for e in events].count("round.voided") >= 1

    # A supervisor connecting now still sees the table: status, birth and every device, retained.
    configured = sorted(configured_devices(run["config"]) or _simulated_ids(run["config"]))
    late = subscribe(topics.status, topics.birth, f"{topics.base}/device/+")
    late.wait_until(lambda ms: len(ms) >= 2 + len(configured), what="retained topics")
    assert all(m.retain for m in late.messages)
    retained = {topics.relative(m.topic): m for m in late.messages}
    assert json.loads(retained["status"].payload)["state"] == "offline"
    birth = Birth.model_validate_json(retained["birth"].payload)
    # 605a.4(c): the digest of the code as installed, as `tablectl verify-software` and coreutils compute it.
    installed = scan(installed_root())
    assert (birth.software.code_sha256, birth.software.code_files) == (digest_of(installed), len(installed))
    assert birth.game.chapter == run["config"].game.chapter
    # Every round dealt says how, once, before its first card (`deal.started`, docs/events.md): here the configured
    # method, no device being marked out of order. The round recall's "dealt by" reads it (floor/recall.py).
    dealt = {e["round_id"] for e in events if e["round_id"] and e["type"].endswith((".dealt", ".awaiting_dealer"))}
    assert dealt
    for round_id in dealt:
        said = [(e["type"], e["payload"]) for e in events if e["round_id"] == round_id]
        first_card = next(i for i, (t, _) in enumerate(said) if t.endswith((".dealt", ".awaiting_dealer")))
        started = [(i, p) for i, (t, p) in enumerate(said) if t == "deal.started"]
        assert [p for _, p in started] == [{"dealing_method": birth.game.dealing_method, "out_of_order": {}}]
        assert started[0][0] < first_card, said
    assert sorted(d.device_id for d in birth.devices) == configured
    assert all(d.identity and d.identity["serial"] for d in birth.devices), "every device identified itself"
    states = {
        rel: DeviceStatus.model_validate_json(m.payload)
        for rel, m in retained.items()
        if rel and rel.startswith("device/")
    }
    assert sorted(s.device_id for s in states.values()) == configured
    assert all(s.online and s.seq is not None for s in states.values())
    if kind.endswith("shoe-jam-void"):
        shoe = states["device/shoe"]
        # A jam voids the round (.13(f)) and holds the shoe (.13(g)) until it says the jam is cleared: it still
        # answers (online), but it cannot be used.
        assert (shoe.fault_code, shoe.state, shoe.online) == ("jam", "unusable", True)

    # The check can fail: a card planted anywhere before settlement is caught, in an event or a retained topic.
    rng = random.Random(unique_id)
    for planted in _plants(messages, topics, contract, rng):
        assert contract.card_leaks(planted, run["prefix"], unique_id), "a planted card went unnoticed"


def _simulated_ids(config: TableConfig) -> list[str]:
    from controller.people.simulate import simulated_config

    return list(configured_devices(simulated_config(config)))


def _plants(
    messages: list[Received], topics: Topics, contract: type[ContractCheck], rng: random.Random
) -> list[list[Delivered]]:
    """Copies of the stream, each with one card put where it must not be."""
    settled: set[str] = set()
    early = []  # indexes of events before their round's settlement (or of no round)
    for i, m in enumerate(messages):
        if m.topic != topics.event:
            continue
        e = json.loads(m.payload)
        if e["round_id"] and contract.is_settlement(e["type"]):
            settled.add(e["round_id"])
        if e["round_id"] not in settled:
            early.append(i)
    device = next(i for i, m in enumerate(messages) if "/device/" in m.topic)
    out = []
    for i, spot in [(rng.choice(early), "payload"), (rng.choice(early), "key"), (device, "detail")]:
        card = rng.choice(STANDARD_DECK)
        body = json.loads(messages[i].payload)
        if spot == "payload":
            body["payload"]["note"] = ["seat 3", {"hole": f"dealt {card} face down"}]
        elif spot == "key":
            body["payload"][card.replace("T", "10")] = 1
        else:
            body["fault_detail"] = f"misread {card}"
        planted: list[Delivered] = list(messages)
        planted[i] = contract.Message(messages[i].topic, json.dumps(body).encode())
        out.append(planted)
    return out


@given(
    card=st.sampled_from(STANDARD_DECK),
    before=st.sampled_from(["", " ", "(", "'", ": ", "[", "-"]),
    after=st.sampled_from(["", " ", ")", "'", ",", ".", "]"]),
    ten=st.booleans(),
    depth=st.integers(min_value=0, max_value=4),
)
def test_a_card_anywhere_in_a_payload_is_found(
    card: str, before: str, after: str, ten: bool, depth: int, contract: type[ContractCheck]
) -> None:
    written = card.replace("T", "10") if ten else card
    value: Any = f"x{before}{written}{after}y" if before and after else f"{before}{written}{after}"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    assert [c for _, c in contract.card_tokens(value)] == [written]


@pytest.mark.parametrize(
    "text",
    [
        "Ask the floorperson",
        "12d",
        "3rd Street",
        "Ts1",
        "655a.11(h)(2)",
        "AsK",
        "wager_station_2",
        "2d2",
        "card_count 52",
        "Kings",
        "10dB",
        "pair_of_6s_to_10s",
    ],
)
def test_words_and_citations_are_not_cards(text: str, contract: type[ContractCheck]) -> None:
    assert list(contract.card_tokens({"detail": text})) == []
