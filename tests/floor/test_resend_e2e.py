"""A gap the table's own replay never fills, filled by a person (at the command line, or at the console): the table
(run_table in this process on simulated devices over real ptys, a real SQLite journal) publishes through a real
mosquitto before the floor has ever subscribed, so the floor's new session never gets those events. The floor (a
real `tablectl floor` process on a real PostgreSQL cluster) holds no key (DESIGN.md, "The floor"): once the gap has
stayed open past `[gaps] grace_s` it warns once in its log and `tablectl floor gaps` prints the gap, its age and the
exact `tablectl command send ... resend` line. A technician runs that very line with a key made by `tablectl command
keygen`, or a floorperson logged in to the console (over HTTP, as tests/floor/test_console_links.py drives it; the
browser's part, signing, is done here with the same envelope) is told of the stale gap on the live stream and sends
the alert's resend, which the floor relays untouched. The table sends the events again, flagged replayed: the gap is
marked filled, the archive equals the journal row for row, no integrity alarm is raised and `floor gaps` reports
none."""

from __future__ import annotations

import asyncio
import base64
import json
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest

from controller.config.table import TableConfig
from controller.store.reader import JournalReader
from controller.supervisor.envelope import sign_command
from floor.console.auth import login_bytes
from tests.broker import Mosquitto
from tests.commands.conftest import Daemon, Key, make_table_config, seeded_key
from tests.floor.conftest import KEYS, FloorProcess, console_port, count, floor_toml, wait_for
from tests.floor.console_probe import console_up
from tests.floor.event_stream import Stream
from tests.tablectl_runs import tablectl

pytestmark = [pytest.mark.e2e, pytest.mark.floor]


def _archive(dsn: str, upto: int) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT event_id, boot_id, seq, ts_text, table_id, round_id, type, rule, payload FROM events"
            " WHERE seq <= %s ORDER BY seq",
            (upto,),
        ).fetchall()
    return [dict(zip(KEYS, r, strict=True)) for r in rows]


def _journal(path: Path, upto: int) -> list[dict[str, Any]]:
    with JournalReader(path) as r:
        return [{k: row[k] for k in KEYS} for row in r.rows() if row["seq"] <= upto]


def _keygen(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A technician's key, made as a person makes one; the [[supervisors]] entry it prints."""
    pem = tmp_path / "tech.pem"
    made = tablectl("command", "keygen", "--out", pem, "--key-id", "tech.tom", "--role", "technician")
    assert made.returncode == 0, made.stderr
    entry = tomllib.loads(made.stdout[made.stdout.index("[[supervisors]]") :])["supervisors"][0]
    return pem, entry


class _Console:
    """A floorperson's console session, driven over HTTP as the page drives it; the stream read as a browser does."""

    def __init__(self, url: str, key: Key, http: aiohttp.ClientSession, csrf: str, stream: Stream) -> None:
        self.url, self.key, self.http, self.csrf, self.stream = url, key, http, csrf, stream

    async def resend(self, table_id: str, missing: str) -> dict[str, Any]:
        """Wait for the stale gap's alert on the live stream, then press its button: the envelope signed here, as
        the page signs it with the browser's key, and posted for the floor to relay."""

        def stale(alert: dict[str, Any]) -> bool:
            return alert["kind"] == "gap" and alert.get("verb") == "resend" and alert["key"] == missing

        got = await self.stream.next_where(
            "update", lambda u: any(stale(a) for a in u["alerts"].get(f"table:{table_id}", []))
        )
        alert = next(a for a in got["alerts"][f"table:{table_id}"] if stale(a))
        assert "stale" in alert["text"]
        env = sign_command(
            self.key.private, table_id=table_id, verb="resend", key_id=self.key.key_id, args=alert["args"]
        )
        headers = {"Origin": self.url, "Content-Type": "application/json", "X-CSRF-Token": self.csrf}
        r = await self.http.post(
            f"{self.url}/api/tables/{table_id}/commands/resend", data=json.dumps(env).encode(), headers=headers
        )
        assert r.status == 200, await r.text()
        return dict(await r.json())

    async def close(self) -> None:
        await self.http.close()


async def _log_in(url: str, key: Key) -> _Console:
    await asyncio.to_thread(wait_for, lambda: console_up(url), 30, "the console")
    http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    h = {"Origin": url}
    c = await (await http.post(f"{url}/api/login/challenge", json={"key_id": key.key_id}, headers=h)).json()
    sig = base64.b64encode(key.private.sign(login_bytes(c["challenge"], key.key_id, url))).decode()
    body = {"key_id": key.key_id, "challenge": c["challenge"], "signature": sig}
    assert (await http.post(f"{url}/api/login", json=body, headers=h)).status == 200
    session = await (await http.get(f"{url}/api/session")).json()
    assert "resend" in session["allowed"], session
    stream = Stream(await http.get(f"{url}/api/stream"))
    await stream.next_where("floor", lambda f: True)
    return _Console(url, key, http, session["csrf"], stream)


@pytest.mark.parametrize("way", ["cli", "console"])
async def test_a_stale_gap_is_shown_and_a_persons_resend_fills_it(
    mosquitto: Mosquitto, floor_dsn: str, tmp_path: Path, unique_id: str, way: str
) -> None:
    prefix = f"resend-{unique_id}"
    keys = {r: seeded_key(f"k-{r}", r, i) for i, r in enumerate(("floorperson", "supervisor", "technician"), 1)}
    pem, entry = await asyncio.to_thread(_keygen, tmp_path)
    data = make_table_config(unique_id, prefix, keys).model_dump()
    data["supervisors"].append(entry)
    config = TableConfig.model_validate(data)
    journal = tmp_path / "journal.sqlite"
    floor_config = tmp_path / "floor.toml"
    extra = "[gaps]\ngrace_s = 1\n"
    floorperson = keys["floorperson"]
    if way == "console":
        # Port 0: the console says which port it got (console_port); one picked here could be taken before it binds.
        extra += '[console]\nlisten = "127.0.0.1:0"\ncommand_timeout_s = 20\n[[console.supervisors]]\n' + "".join(
            f'{k} = "{v}"\n' for k, v in floorperson.entry().items()
        )
    floor_config.write_text(floor_toml(floor_dsn, mosquitto.url, prefix, f"floor-{unique_id}", extra))
    floor = FloorProcess(floor_config, tmp_path)
    async with Daemon(config, journal, mosquitto.url) as table:
        # Published with no floor session at the broker: lost for the floor, kept in the journal.
        before = await table.wait_for(lambda e: e.type == "round.completed", what="a round before the floor")
        try:
            floor.start()
            await asyncio.to_thread(wait_for, lambda: "subscribed to the tables" in floor.log(), 30, "the floor")
            console: _Console | None = None
            if way == "console":
                port = await asyncio.to_thread(console_port, floor)
                console = await _log_in(f"http://127.0.0.1:{port}", floorperson)
            # An event the floor hears live, whatever the table is doing now (it may have played on, or be blocked
            # awaiting a floorperson): a payload that is no command, journaled as `command.rejected` and published.
            # Everything before it reaches the floor only by resend.
            heard_from = table.events[-1].seq
            junk = ["mosquitto_pub", "-p", str(mosquitto.port), "-t", f"{prefix}/{unique_id}/cmd/x", "-m", "junk"]
            await asyncio.to_thread(subprocess.run, junk, check=True)
            after = await table.wait_for(lambda e: e.type == "command.rejected", heard_from, "an event the floor hears")

            # The floor asks nothing: it warns once the gap is stale, naming the table, the range and the command.
            await asyncio.to_thread(
                wait_for, lambda: "seq gap stale" in floor.log(), 30, f"the warning:\n{floor.log()}"
            )
            warned = [json.loads(line) for line in floor.log().splitlines() if "seq gap stale" in line]
            assert len(warned) == 1 and warned[0]["table_id"] == unique_id, warned
            first, _, last = warned[0]["missing"].partition("-")
            assert int(first) == 1 and int(last or first) >= before.seq
            assert warned[0]["command"] == [
                f"tablectl command send --key KEY.pem --key-id KEY_ID --broker {mosquitto.url} --prefix {prefix} "
                f"--table {unique_id} resend from_seq={first} to_seq={last or first}"
            ]
            assert "resend requested" not in floor.log()

            shown = await asyncio.to_thread(tablectl, "floor", "--config", floor_config, "gaps")
            assert shown.returncode == 1, shown.stdout + shown.stderr
            lines = shown.stdout.splitlines()
            assert lines[0] == "1 open seq gap(s), 1 stale (open over 1 s)", shown.stdout
            assert (
                lines[1].startswith(f"table {unique_id} seq {warned[0]['missing']} missing (")
                and ", STALE, " in lines[1]
            )
            assert lines[2].strip() == warned[0]["command"][0]
            status = await asyncio.to_thread(tablectl, "floor", "--config", floor_config, "status")
            assert f"seq gap {warned[0]['missing']} STALE: tablectl floor gaps" in status.stdout, status.stdout

            if console is None:
                # The technician runs the printed line with his own key: signed on his side, judged by the table.
                line = shlex.split(lines[2].strip().replace("KEY.pem", str(pem)).replace("KEY_ID", entry["key_id"]))
                assert line[:3] == ["tablectl", "command", "send"]
                sent = await asyncio.to_thread(tablectl, *line[1:])
                assert sent.returncode == 0, sent.stdout + sent.stderr
                assert "applied" in sent.stdout, sent.stdout
            else:
                reply = await console.resend(unique_id, warned[0]["missing"])
                assert reply["outcome"] == "applied", reply

            def filled() -> bool:
                with psycopg.connect(floor_dsn) as conn:
                    row = conn.execute(
                        "SELECT count(*), count(filled_at) FROM seq_gaps WHERE table_id = %s", (unique_id,)
                    ).fetchone()
                return row is not None and row[0] >= 1 and row[0] == row[1]

            await asyncio.to_thread(wait_for, filled, 60, f"the gap filled; floor log:\n{floor.log()}")
        finally:
            if console is not None:
                await console.close()
            floor.stop()
    log = floor.log()
    assert "seq gap filled" in log and log.count("seq gap stale") == 1, log
    # Row for row what the table journaled (event id, boot, seq, ts, type, rule, payload): the resend republished
    # the originals, and the archive's content check (digest) raised nothing.
    assert _archive(floor_dsn, after.seq) == _journal(journal, after.seq)
    assert count(floor_dsn, "SELECT count(*) FROM integrity_alarms") == 0
    with psycopg.connect(floor_dsn) as conn:
        replayed = conn.execute("SELECT count(*) FROM events WHERE seq <= %s AND replayed", (before.seq,)).fetchone()
    assert replayed is not None and replayed[0] == before.seq  # every event of the gap came flagged replayed
    # The table's journal says who asked, with the role, and the engine never saw it.
    asked = [
        r for r in _journal(journal, 10**9) if r["type"] == "command.accepted" and r["payload"]["verb"] == "resend"
    ]
    who = ("tech.tom", "technician") if way == "cli" else (floorperson.key_id, "floorperson")
    assert len(asked) == 1 and (asked[0]["payload"]["key_id"], asked[0]["payload"]["role"]) == who
    assert asked[0]["payload"]["from_seq"] == 1
    done = await asyncio.to_thread(tablectl, "floor", "--config", floor_config, "gaps")
    assert done.returncode == 0 and done.stdout.startswith("0 open seq gap(s), 0 stale"), done.stdout + done.stderr
