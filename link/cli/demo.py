"""`tablectl demo --linked`: three Mississippi Stud tables on one linked progressive (docs/linked-progressives.md).

A private PostgreSQL (floor.pgcluster, a temp dir) holds the link's meters; a private mosquitto carries the protocol
unless --broker names a broker; the link controller is a real `tablectl link` process and each table a real
`tablectl demo` process on simulated devices with its own journal, all three feeding one meter. The demo opens the
link with a signed `open_link`; every hit the link holds pending (shown on every linked sign) is validated and paid at
its table by the table's simulated floorperson, and the table reports it paid to the link, which closes it. A line a
second shows the meter, the rounds and the pending jackpots. With --rounds N it exits 0 once every table played N
rounds, no hit is left pending and the link's books balance (`tablectl link report`, printed at the end).

Every third shuffle deals thirteen hearts from the top (a sim script), so hits come often enough to watch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiomqtt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import sign_command
from floor.cli.private import private_servers, signing_key

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
LINK_ID = "ms-demo-mega"
PREFIX = "tablectl"
TABLES = (("ms-link-1", "T-1001"), ("ms-link-2", "T-1002"), ("ms-link-3", "T-1003"))
HEARTS = ["Ah", "Kh", "Qh", "Jh", "Th", "9h", "8h", "7h", "6h", "5h", "4h", "3h", "2h"]
RANKS = "23456789TJQKA"


def link_toml(dsn: str, broker: str, supervisor_public_key: str) -> str:
    tables = "".join(f'[[tables]]\ntable_id = "{t}"\nasset_number = "{a}"\n\n' for t, a in TABLES)
    return f"""[link]
id = "{LINK_ID}"
lease_ms = 3000
heartbeat_ms = 750

[database]
dsn = "{dsn}"

[mqtt]
broker = "{broker}"
prefix = "{PREFIX}"

{tables}
# 655a.12(c)(3) paytable A on a $5 Progressive Payout Wager: $10,000 for 1, 21 % of each wager.
[[progressive]]
wager = "progressive"
wager_cents = 500
rule = "655a.12(c)(3) paytable A"

[[progressive.levels]]
level = "progressive"
seed_cents = 5000000
reseed_cents = 5000000
primary_percent = 21
rule = "655a.12(c)(3) paytable A"

[[supervisors]]
key_id = "demo-shift-manager"
role = "supervisor"
public_key = "{supervisor_public_key}"
"""


def table_toml(table_id: str) -> str:
    text = (CONFIGS / "mississippi-stud-progressive.toml").read_text()
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M)
    text = text.replace('progressive_paytable = "C"', 'progressive_paytable = "A"')
    text = text.replace("progressive_wager_cents = 100", "progressive_wager_cents = 500")
    text = re.sub(r"^six_card_bonus_paytable = .*$", "", text, flags=re.M)  # the hearts deal needs no bonus cards
    return text + f'\n[progressive]\nlink = "{LINK_ID}"\nheartbeat_ms = 750\n'


def table_tomls() -> dict[str, str]:
    """Every table's config by id: `tablectl demo --linked` checks each as `run` would (a birth within the broker's
    packet limit) before anything starts (controller/cli/demo.py)."""
    return {tid: table_toml(tid) for tid, _ in TABLES}


def deck_script(rng: random.Random, n: int = 300) -> str:
    decks = []
    for i in range(n):
        top = HEARTS if i % 3 == 2 else []
        rest = [r + s for s in "cdhs" for r in RANKS if r + s not in top]
        rng.shuffle(rest)
        decks.append(" ".join([*top, *rest]))
    return "decks = [\n" + ",\n".join(json.dumps(d) for d in decks) + "\n]\n"


def main(args: argparse.Namespace) -> int:
    keep: Path | None = args.keep  # checked new or empty by controller/cli/demo.py
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-linked-demo-"))
    try:
        return asyncio.run(_demo(args, workdir))
    except KeyboardInterrupt:
        return 0
    finally:
        if keep is not None:
            _keep(workdir, keep)
        shutil.rmtree(workdir, ignore_errors=True)


def _keep(workdir: Path, keep: Path) -> None:
    """The files only (journals, configs, logs): the private PostgreSQL and broker folders are not worth keeping."""
    keep.mkdir(parents=True, exist_ok=True)
    for f in sorted(workdir.iterdir()):
        if f.is_file():
            shutil.copy2(f, keep / f.name)
    print(f"tablectl demo --linked: journals, configs and logs kept in {keep}", flush=True)


class _Proc:
    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        self.name, self.argv, self.log = name, argv, log
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller.cli", *self.argv, stdout=self.log.open("ab"), stderr=subprocess.STDOUT
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(sig)


async def _demo(args: argparse.Namespace, workdir: Path) -> int:
    rng = random.Random(args.seed)
    supervisor, public = signing_key()
    with private_servers(workdir, "--linked", args.broker) as (cluster, broker):
        dsn = cluster.create_database("link")
        (workdir / "link.toml").write_text(link_toml(dsn, broker, public))
        (workdir / "decks.toml").write_text(deck_script(rng))
        link = _Proc("link", ["link", "--config", str(workdir / "link.toml")], workdir / "link.log")
        tables = []
        for tid, _ in TABLES:
            (workdir / f"{tid}.toml").write_text(table_toml(tid))
            argv = ["demo", "--config", str(workdir / f"{tid}.toml"), "--journal", str(workdir / f"{tid}.sqlite")]
            argv += ["--broker", broker, "--quiet", "--pace", "0.02", "--script", str(workdir / "decks.toml")]
            argv += ["--seed", str(rng.randrange(1 << 30))]
            argv += ["--rounds", str(args.rounds)] if args.rounds is not None else []
            tables.append(_Proc(tid, argv, workdir / f"{tid}.log"))
        return await _run(args, broker, workdir, link, tables, supervisor)


async def _run(
    args: argparse.Namespace,
    broker: str,
    workdir: Path,
    link: _Proc,
    tables: list[_Proc],
    supervisor: Ed25519PrivateKey,
) -> int:
    base = f"{PREFIX}/link/{LINK_ID}"
    host, port = broker.removeprefix("mqtt://").rsplit(":", 1)
    await link.start()
    watch = _Watch()
    try:
        async with aiomqtt.Client(host, int(port), identifier=f"tablectl-linked-demo-{os.getpid()}") as client:
            await client.subscribe([(f"{base}/#", 1), (f"{PREFIX}/+/event", 1)])
            listener = asyncio.create_task(watch.listen(client, base))
            if not await _open(client, base, supervisor, watch):
                print(
                    f"tablectl demo --linked: the link did not open; its log: {workdir / 'link.log'}", file=sys.stderr
                )
                return 1
            for t in tables:
                await t.start()
            print(f"tablectl demo --linked: link {LINK_ID} open; three tables on it (logs in {workdir})", flush=True)
            code = await _play(args, client, base, tables, supervisor, watch)
            listener.cancel()
        if code == 0 and args.rounds is not None:
            report = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "controller.cli", "link", "--config", str(workdir / "link.toml"), "report",
                stdout=subprocess.PIPE,
            )  # fmt: skip
            text, _ = await report.communicate()
            print(text.decode(errors="replace"), end="")
            code = report.returncode or 0
            done = f"every table played {args.rounds} round(s); the link's books balance"
            print(f"tablectl demo --linked: {done if code == 0 else 'the report found a mismatch'}", flush=True)
        return code
    finally:
        for t in tables:
            t.stop(signal.SIGKILL)
        link.stop()
        if link.proc is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await link.proc.wait()


class _Watch:
    """What the demo shows: the link's meter and pending jackpots, each table's rounds; the replies it awaits."""

    def __init__(self) -> None:
        self.meter: dict[str, int] = {}
        self.pending: list[dict[str, Any]] = []
        self.rounds: dict[str, int] = {}
        self.paid: set[tuple[str, str, int]] = set()  # (table, round, seat) paid at the table
        self.replies: dict[str, dict[str, Any]] = {}
        self.state = ""
        self.changed = asyncio.Event()

    async def listen(self, client: aiomqtt.Client, base: str) -> None:
        async for m in client.messages:
            topic = str(m.topic)
            try:
                body = json.loads(bytes(m.payload) if isinstance(m.payload, bytes | bytearray) else b"{}")
            except ValueError:
                continue
            if not isinstance(body, dict):
                continue
            if topic.startswith(f"{base}/progressive/"):
                self.meter[str(body.get("level"))] = int(body.get("display_cents", 0))
            elif topic == f"{base}/jackpot":
                self.pending = list(body.get("pending", []))
            elif topic == f"{base}/state":
                self.state = str(body.get("status", ""))
            elif topic == f"{base}/cmd/reply":
                self.replies[str(body.get("command_id"))] = body
            elif topic.endswith("/event"):
                table = topic.split("/")[-2]
                if body.get("type") == "round.completed":
                    self.rounds[table] = self.rounds.get(table, 0) + 1
                elif body.get("type") == "progressive.paid":
                    p = body.get("payload", {})
                    self.paid.add((table, str(body.get("round_id")), int(p.get("seat", 0))))
            self.changed.set()


async def _command(
    client: aiomqtt.Client, base: str, key: Ed25519PrivateKey, verb: str, args: dict[str, Any], watch: _Watch
) -> dict[str, Any] | None:
    envelope = sign_command(key, table_id=LINK_ID, verb=verb, key_id="demo-shift-manager", args=args)
    deadline = time.monotonic() + 10
    await client.publish(f"{base}/cmd/{verb}", json.dumps(envelope), qos=1)
    while time.monotonic() < deadline:
        if envelope["command_id"] in watch.replies:
            return watch.replies.pop(envelope["command_id"])
        watch.changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                await watch.changed.wait()
    return None


async def _open(client: aiomqtt.Client, base: str, key: Ed25519PrivateKey, watch: _Watch) -> bool:
    for _ in range(60):  # the controller starts (migrations, the self-check) and subscribes
        reply = await _command(client, base, key, "open_link", {}, watch)
        if reply is not None:
            return bool(reply.get("accepted"))
    return False


async def _play(
    args: argparse.Namespace,
    client: aiomqtt.Client,
    base: str,
    tables: list[_Proc],
    key: Ed25519PrivateKey,
    watch: _Watch,
) -> int:
    shown: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    last_line = 0.0
    while True:
        # The winning table's floorperson validates and pays the hit there; the table reports it paid, and the link
        # closes it in its books and takes it off every sign (docs/linked-progressives.md, "Validation").
        now_pending = {
            (str(h["table_id"]), str(h["round_id"]), int(h["seat"]), str(h["level"])): h for h in watch.pending
        }
        for k, hit in shown.items():
            if k not in now_pending:
                print(f"  jackpot paid at {hit['asset_number']} seat {k[2]} {k[3]} ${hit['amount_cents'] / 100:,.2f} "
                      f"(order {hit['order']}): closed at the link, off every sign", flush=True)  # fmt: skip
        shown = now_pending
        now = time.monotonic()
        if now - last_line >= 1.0:
            last_line = now
            meter = ", ".join(f"{lv} ${c / 100:,.2f}" for lv, c in sorted(watch.meter.items())) or "-"
            pending = ", ".join(
                f"{h['asset_number']} {h['level']} ${h['amount_cents'] / 100:,.2f}" for h in watch.pending
            )
            rounds = " ".join(f"{t.name}:{watch.rounds.get(t.name, 0)}" for t in tables)
            print(f"link {watch.state or '?'}: {meter} | rounds {rounds} | pending: {pending or 'none'}", flush=True)
        exited = [t for t in tables if t.proc is not None and t.proc.returncode is not None]
        bad = [t for t in exited if t.proc is not None and t.proc.returncode != 0]
        if bad:
            code = bad[0].proc.returncode if bad[0].proc else "?"
            print(f"tablectl demo --linked: table {bad[0].name} exited {code}; its log: {bad[0].log}", file=sys.stderr)
            return 1
        if args.rounds is not None and len(exited) == len(tables) and not watch.pending:
            return 0
        watch.changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                await watch.changed.wait()
