"""Supervisor commands: how fast a running table answers them, one at a time, in a burst, and behind a flood.

Measured: `tablectl run` on bench/seven-seats.toml (643a) in a process of its own, its devices simulated by this
process over real ptys, its journal a temporary SQLite file in --journal-dir (WAL, synchronous=FULL: each commit
an fsync), its broker a private loopback mosquitto. A supervisor's client here (aiomqtt) publishes on
<prefix>/<table>/cmd/<verb> at QoS 1 and reads <prefix>/<table>/cmd/reply. Three figures:
  - one at a time: --sequential signed commands (open_table, which a running table journals and ignores), each
    sent once the previous one's reply is in: the round trip a supervisor waits for.
  - burst: --burst signed commands published back to back: commands handled per second (judged, journaled,
    stepped, answered), from the first publish to the last reply. Target: at least 1,000/s.
  - flood: --flood junk payloads (not JSON, not UTF-8, lone surrogates, bad signatures, another table's), then one
    real command: seconds until the real command's reply. Target: within 2 s. Every junk payload is journaled
    and answered first.

Baseline: the same three exchanges against a bare MQTT responder (this script with --echo, in a process of its
own) that answers each request with one QoS 1 message on the same broker and does nothing else: the broker's
and the clients' share of each figure. Every client here sets TCP_NODELAY, as the table's connections do. The
ratios say how much the table's checks, journal and engine cost.

    .venv/bin/python bench/commands.py [--sequential 200] [--burst 2000] [--flood 2000] [--journal-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
import benchlib
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.config.table import TableConfig
from controller.mqtt.connection import NO_DELAY
from controller.supervisor.envelope import public_key_b64, sign_command
from drivers.sim.table import SimulatedTable

KEY_ID = "bench-boss"
TARGET_RATE = 1000.0
TARGET_FLOOD_SECONDS = 2.0
WAIT = 120.0  # failure bound only


@dataclass(frozen=True)
class Figures:
    sequential: float  # exchanges per second, one at a time
    burst: float  # exchanges per second, back to back
    flood: float  # seconds from the first junk payload to the real command's reply


Payload = tuple[str, bytes]  # (topic verb, payload)
Matches = Callable[[dict[str, Any]], bool]


class Exchange:
    """A supervisor's connection: publishes on <base>/<verb>, counts what comes back on <base>/reply."""

    def __init__(self, client: aiomqtt.Client, base: str) -> None:
        self.client = client
        self.base = base
        self.replies: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    async def follow(self) -> None:
        async for message in self.client.messages:
            raw = message.payload
            self.replies.append(json.loads(raw if isinstance(raw, bytes | bytearray) else str(raw)))
            self._changed.set()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(WAIT):
            while len(self.replies) < count:
                self._changed.clear()
                await self._changed.wait()

    async def sequential(self, payloads: Sequence[Payload]) -> float:
        start = time.perf_counter()
        for verb, body in payloads:
            wanted = len(self.replies) + 1
            await self.client.publish(f"{self.base}/{verb}", body, qos=1)
            await self.until(wanted)
        return len(payloads) / (time.perf_counter() - start)

    async def burst(self, payloads: Sequence[Payload]) -> float:
        """Seconds from the first publish to the last payload's reply."""
        wanted = len(self.replies) + len(payloads)
        start = time.perf_counter()
        await asyncio.gather(*(self.client.publish(f"{self.base}/{v}", b, qos=1) for v, b in payloads))
        await self.until(wanted)
        return time.perf_counter() - start


async def measure(
    url: str, base: str, make: Callable[[str], Payload], junk: Callable[[int], Payload], n: argparse.Namespace
) -> Figures:
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    async with aiomqtt.Client(
        host,
        int(port),
        identifier=f"bench-sup-{uuid.uuid4().hex[:8]}",
        max_inflight_messages=100,
        socket_options=NO_DELAY,
    ) as client:
        client.pending_calls_threshold = 100_000
        await client.subscribe(f"{base}/reply", qos=1)
        ex = Exchange(client, base)
        follower = asyncio.create_task(ex.follow())
        try:
            await ex.sequential([make("warm-up") for _ in range(20)])
            sequential = await ex.sequential([make(f"s{i}") for i in range(n.sequential)])
            benchlib.progress(f"one at a time: {sequential:,.0f}/s")
            burst = n.burst / await ex.burst([make(f"b{i}") for i in range(n.burst)])
            benchlib.progress(f"burst: {burst:,.0f}/s")
            flood = await ex.burst([junk(i) for i in range(n.flood)] + [make("real")])
            last = ex.replies[-1]
            if last.get("outcome") not in ("applied", "ignored", "echo"):
                sys.exit(f"bench: the real command behind the flood was not carried out: {last}")
            benchlib.progress(f"flood: the real command answered {flood:.3f} s after the first junk payload")
        finally:
            follower.cancel()
    return Figures(sequential, burst, flood)


# -- the table ---------------------------------------------------------------------------------------------------


def junk_maker(table_id: str, key: Ed25519PrivateKey) -> Callable[[int], Payload]:
    good = sign_command(key, table_id=table_id, verb="open_table", key_id=KEY_ID)
    kinds: list[Callable[[int], bytes]] = [
        lambda i: f"junk {i}".encode(),
        lambda i: b"\xff" + str(i).encode(),
        lambda i: json.dumps({**good, "command_id": f"{i:032x}", "key_id": "\ud800"}).encode(),
        lambda i: json.dumps({**good, "command_id": f"{i:032x}"}).encode(),  # bad signature
        lambda i: json.dumps({**good, "command_id": f"{i:032x}", "table_id": "another"}).encode(),
        lambda i: json.dumps([i]).encode(),
    ]
    return lambda i: ("open_table", kinds[i % len(kinds)](i))


async def table_figures(url: str, journal_dir: Path, n: argparse.Namespace) -> Figures:
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))  # fixed: a rerun signs the same way
    config = benchlib.seven_seat_config()
    table_id = config.table_id
    base = f"{config.mqtt.prefix}/{table_id}/cmd"

    def make(_tag: str) -> Payload:
        return "open_table", json.dumps(sign_command(key, table_id=table_id, verb="open_table", key_id=KEY_ID)).encode()

    with tempfile.TemporaryDirectory(dir=journal_dir, prefix="bench-commands-") as tmp:
        async with SimulatedTable(config.game.seats, random.Random(1)) as sims:
            path = _config_with_key(config, key, sims.ports, Path(tmp))
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "controller.cli", "--log-level", "warning", "run", "--config", str(path),
                "--broker", url, "--journal", str(Path(tmp) / "journal.sqlite"),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await _until_listening(url, f"{config.mqtt.prefix}/{table_id}/event")
                return await measure(url, base, make, junk_maker(table_id, key), n)
            finally:
                proc.terminate()
                await proc.wait()


def _config_with_key(config: TableConfig, key: Ed25519PrivateKey, ports: dict[str, str], directory: Path) -> Path:
    path = benchlib.write_config(config, ports, directory)
    entry = f'\n[[supervisors]]\nkey_id = "{KEY_ID}"\nrole = "supervisor"\npublic_key = "{public_key_b64(key)}"\n'
    # benchlib writes the empty list as `supervisors = []`, which the array of tables replaces.
    path.write_text(path.read_text().replace("supervisors = []\n", "") + entry)
    return path


async def _until_listening(url: str, event_topic: str) -> None:
    """Until the daemon's command listener says it is subscribed (its `command.listening` event)."""
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    async with aiomqtt.Client(host, int(port), identifier=f"bench-wait-{uuid.uuid4().hex[:8]}") as client:
        await client.subscribe(event_topic, qos=1)
        async with asyncio.timeout(60):
            async for message in client.messages:
                if b'"command.listening"' in bytes(message.payload if isinstance(message.payload, bytes) else b""):
                    return


# -- the baseline: a bare responder --------------------------------------------------------------------------


async def echo(host: str, port: int, base: str) -> None:
    """--echo: answer each request on <base>/+ with one QoS 1 message on <base>/reply, until killed."""
    async with aiomqtt.Client(
        host, port, identifier=f"bench-echo-{os.getpid()}", max_inflight_messages=100, socket_options=NO_DELAY
    ) as client:
        client.pending_calls_threshold = 100_000
        await client.subscribe(f"{base}/+", qos=1)
        print("ready", flush=True)
        async for message in client.messages:
            if message.topic.value != f"{base}/reply":
                await client.publish(f"{base}/reply", b'{"outcome":"echo"}', qos=1)


async def baseline_figures(url: str, n: argparse.Namespace) -> Figures:
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    base = f"bench-echo/{uuid.uuid4().hex[:8]}/cmd"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--echo", host, port, base, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            await proc.stdout.readline()
        request = ("request", b'{"request":true}')
        return await measure(url, base, lambda _t: request, lambda _i: request, n)
    finally:
        proc.terminate()
        await proc.wait()


def main() -> int:
    if sys.argv[1:2] == ["--echo"]:
        asyncio.run(echo(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sequential", type=int, default=200, help="commands sent one at a time (default 200)")
    parser.add_argument("--burst", type=int, default=2000, help="commands sent back to back (default 2000)")
    parser.add_argument("--flood", type=int, default=2000, help="junk payloads before one real command (default 2000)")
    parser.add_argument("--journal-dir", type=Path, default=Path(tempfile.gettempdir()), help="where the journal goes")
    n = parser.parse_args()
    print(f"machine: {benchlib.machine()}")
    p50, p99 = benchlib.journal_commit_ms(n.journal_dir)
    fs = benchlib.filesystem(n.journal_dir)
    print(f"journal in {n.journal_dir} ({fs}): one commit p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    with benchlib.mosquitto() as url:
        benchlib.progress("baseline: a bare MQTT responder")
        base = asyncio.run(baseline_figures(url, n))
        benchlib.progress("the table: tablectl run")
        table = asyncio.run(table_figures(url, n.journal_dir, n))
    print()
    print(f"{'':<34}{'baseline':>12}{'table':>12}{'table/baseline':>16}")
    rows = [
        ("one at a time (commands/s)", base.sequential, table.sequential),
        (f"burst of {n.burst} (commands/s)", base.burst, table.burst),
    ]
    for label, b, t in rows:
        print(f"{label:<34}{b:>12,.0f}{t:>12,.0f}{t / b:>16.2f}")
    label = f"real command behind {n.flood} junk (s)"
    print(f"{label:<34}{base.flood:>12.3f}{table.flood:>12.3f}{table.flood / base.flood:>16.2f}")
    ok_rate = table.burst >= TARGET_RATE
    ok_flood = table.flood <= TARGET_FLOOD_SECONDS
    print(f"target: burst at least {TARGET_RATE:,.0f}/s: {'met' if ok_rate else 'NOT met'}; "
          f"real command within {TARGET_FLOOD_SECONDS:g} s of a flood: {'met' if ok_flood else 'NOT met'}")  # fmt: skip
    return 0 if ok_rate and ok_flood else 1


if __name__ == "__main__":
    sys.exit(main())
