"""`tablectl command keygen` and `tablectl command send` end to end, as an operator runs them: real
subprocesses, a real daemon (`tablectl demo` on simulated devices) and a real mosquitto."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.broker import Mosquitto, Subscribe, refused_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TABLECTL = [sys.executable, "-m", "controller.cli"]


def tablectl(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TABLECTL, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def keygen(path: Path, key_id: str, role: str) -> str:
    """The [[supervisors]] entry keygen prints."""
    out = tablectl("command", "keygen", "--out", path, "--key-id", key_id, "--role", role)
    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    entry = out.stdout[out.stdout.index("[[supervisors]]") :]
    public = re.search(r"^public key: (\S+)$", out.stdout, re.M)
    assert public is not None and f'public_key = "{public.group(1)}"' in entry
    return entry


def test_keygen_never_overwrites_a_key(tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    keygen(key, "k", "technician")
    before = key.read_bytes()
    out = tablectl("command", "keygen", "--out", key)
    assert out.returncode == 2 and "exists" in out.stderr and key.read_bytes() == before
    out = tablectl("command", "keygen", "--out", tmp_path / "x.pem", "--key-id", "ann floor")
    assert out.returncode == 2 and "key id 'ann floor' may only have" in out.stderr
    assert not (tmp_path / "x.pem").exists()


def test_send_refuses_bad_input_before_touching_the_broker(tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    keygen(key, "k", "supervisor")
    common: list[str | Path] = [
        "command",
        "send",
        "--key",
        key,
        "--key-id",
        "k",
        "--table",
        "t1",
        "--broker",
        "mqtt://127.0.0.1:1",
    ]
    out = tablectl(*common, "mark_out_of_order", "device=toaster")
    assert out.returncode == 2 and "args.device" in out.stderr and "'shuffler' or 'shoe'" in out.stderr
    out = tablectl(*common, "dance")
    assert out.returncode == 2 and "there is no verb 'dance'" in out.stderr
    out = tablectl(*common, "close_table", "now")
    assert out.returncode == 2 and "is not name=value" in out.stderr
    not_a_key = tmp_path / "x.pem"
    not_a_key.write_text("hello")
    out = tablectl(*common[:2], "--key", not_a_key, *common[4:], "close_table")
    assert out.returncode == 2 and "is not a PEM private key" in out.stderr
    out = tablectl(*common, "--ca", "ca.pem", "close_table")
    assert out.returncode == 2 and "is not TLS: use an mqtts:// URL" in out.stderr
    out = tablectl("command", "send", "--help")
    assert out.returncode == 0 and "validate_jackpot" in out.stdout and "seat, level, hit" in out.stdout


def test_no_reply_names_the_broker_and_topics_it_tried_and_the_likely_fixes(
    mosquitto: Mosquitto, unique_id: str, tmp_path: Path
) -> None:
    """A real mosquitto and no table listening: "no reply" said only "is the table running", not which broker and
    topic it tried; a wrong --broker, --prefix or --table, or an ACL dropping the publish, looked the same."""
    key = tmp_path / "k.pem"
    keygen(key, "k", "supervisor")
    send: list[str | Path] = ["command", "send", "--key", key, "--key-id", "k", "--prefix", "cli", "--table", unique_id]
    out = tablectl(*send, "--broker", mosquitto.url, "--timeout", "1", "close_table")
    assert out.returncode == 3, out.stderr
    said = out.stderr
    assert f"no reply from table {unique_id} at {mosquitto.url} " in said
    assert f"(sent to cli/{unique_id}/cmd/close_table, listened on cli/{unique_id}/cmd/reply): none within 1 s" in said
    assert "Is the table running, connected to this broker" in said and "Are --broker, --prefix and --table" in said
    assert f"Does the broker's ACL let this user publish to cli/{unique_id}/cmd/close_table" in said

    with refused_port() as port:
        nobody = f"mqtt://127.0.0.1:{port}"
        out = tablectl(*send, "--broker", nobody, "--timeout", "5", "close_table")
    assert out.returncode == 3, out.stderr
    assert f"no reply from table {unique_id} at {nobody} " in out.stderr
    assert "the broker cannot be reached" in out.stderr and "Check --broker (or the --config's mqtt.broker)" in (
        out.stderr
    )


def test_send_signs_publishes_and_reports_the_tables_answer(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    boss, ann = tmp_path / "boss.pem", tmp_path / "ann.pem"
    entries = keygen(boss, "boss", "supervisor") + "\n" + keygen(ann, "ann", "floorperson")
    demo = (ROOT / "configs" / "demo.toml").read_text()
    demo = demo.replace('table_id = "demo-ms-1"', f'table_id = "{unique_id}"')
    demo = demo.replace('broker = "mqtt://127.0.0.1:1883"', f'broker = "{mosquitto.url}"')
    demo = demo.replace('prefix = "tablectl"', 'prefix = "cli"')
    # Cards not preinspected: the table waits for its opening inspection, so the commands' effects are certain.
    demo = demo.replace("[game]\n", "[game]\ncards_preinspected = false\n")
    config = tmp_path / "table.toml"
    config.write_text(demo + "\n" + entries)
    events = subscribe(f"cli/{unique_id}/event")
    log = (tmp_path / "daemon.log").open("w")  # a file, not a pipe nobody drains
    daemon = subprocess.Popen(
        [
            *TABLECTL,
            "demo",
            "--pace",
            "0",
            "--quiet",
            "--config",
            str(config),
            "--journal",
            str(tmp_path / "journal.sqlite"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:
        events.wait_until(lambda ms: any(b'"command.listening"' in m.payload for m in ms), 30, "command.listening")
        send = ["command", "send", "--broker", mosquitto.url, "--prefix", "cli", "--table", unique_id]

        out = tablectl(*send, "--key", boss, "--key-id", "boss", "mark_out_of_order", "device=shuffler")
        assert out.returncode == 0, out.stderr
        reply = json.loads(out.stdout)
        assert (reply["outcome"], reply["verb"], reply["table_id"]) == ("applied", "mark_out_of_order", unique_id)
        assert "mark_out_of_order: applied" in out.stderr

        out = tablectl(*send, "--key", ann, "--key-id", "ann", "close_table")
        assert out.returncode == 1
        reply = json.loads(out.stdout)
        assert (reply["outcome"], reply["code"]) == ("rejected", "role_not_allowed")
        assert "close_table: rejected (role_not_allowed): key ann has the role floorperson" in out.stderr

        out = tablectl(*send, "--key", ann, "--key-id", "ann", "verify_inspection")
        assert out.returncode == 1
        assert json.loads(out.stdout)["outcome"] == "ignored" and "the dealer inspects first" in out.stderr

        out = tablectl(*send[:-1], "no-such-table", "--timeout", "1", "--key", boss, "--key-id", "boss", "close_table")
        assert out.returncode == 3 and "no reply from table no-such-table at " in out.stderr

        # --config: the broker and prefix come from the table's config, the table id too.
        out = tablectl("command", "send", "--config", config, "--key", boss, "--key-id", "boss", "close_table")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["outcome"] == "applied"
        assert daemon.wait(timeout=30) == 0, (tmp_path / "daemon.log").read_text()[-2000:]
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        log.close()
    published = [m.json() for m in events.messages]
    accepted = [e["payload"] for e in published if e["type"] == "command.accepted"]
    assert [(p["verb"], p["key_id"], p["role"]) for p in accepted] == [
        ("mark_out_of_order", "boss", "supervisor"),
        ("verify_inspection", "ann", "floorperson"),
        ("close_table", "boss", "supervisor"),
    ]
    assert [e["payload"]["code"] for e in published if e["type"] == "command.rejected"] == ["role_not_allowed"]
    assert published[-1]["type"] == "table.closed"
    assert os.path.exists(tmp_path / "journal.sqlite")


def test_send_refuses_a_key_that_is_a_fifo_instead_of_waiting_for_it(tmp_path: Path) -> None:
    fifo = tmp_path / "ann.pem"
    os.mkfifo(fifo)
    send = ["command", "send", "--key", str(fifo), "--key-id", "ann", "--table", "t1", "close_table"]
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", *send],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"cannot read the key {fifo}: it is a FIFO (named pipe), not a regular file" in proc.stderr
