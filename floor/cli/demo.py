"""`tablectl demo --floor`: a floor of simulated tables, the floor service and its console, on a private PostgreSQL
(and a private mosquitto unless --broker names one), with the console's URL printed to open (docs/console.md).

Each table is a real `tablectl demo` process on simulated devices (its own journal); the floor is
floor.service.FloorService in this process with its console on --http. The console approves every key enrolled in
it (`demo_approve_all`, loopback only) and the demo does what an administrator would: it adds the key's
[[supervisors]] entry to every table's config and restarts each table between rounds (SIGINT closes a table after
its round in progress; one held for a jackpot at once), so a key made in the browser validates jackpots a minute
later. Without --rounds nobody simulated validates jackpots: they wait for the person at the console.

Two of the tables (ms-1, ms-2) are on a linked progressive (docs/linked-progressives.md): a real `tablectl link`
process keeps their one meter on a second database of the same private PostgreSQL, opened with a signed `open_link`
from a key the demo makes; the third table (lir-1) keeps its local meters. The floor may not import `link/`
(pyproject.toml's layering), so the demo writes the link's config and drives it through `tablectl link` and
`tablectl link send`, as an operator would. At the linked tables the second shuffle and every third after it deal
thirteen hearts from the top (a sim script), so a linked hit comes within three rounds: pending on both linked tiles,
validated at the table, reported paid to the link by the table itself, and the meter reseeded. An enrolled key goes
into the link's [[supervisors]] too (the link restarted on its database), so the console's link verbs work with it.

With --rounds N every table plays N rounds (its simulated floorperson validating jackpots) and the demo exits 0 once
the floor archived them, printing `tablectl link report`. Its floor config is printed for `tablectl floor`/`report`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from floor.cli.demo_parts import TABLE_STOP_S, StartSignals, deck_script, link_summary
from floor.cli.private import private_servers, signing_key
from floor.config import parse_floor_config
from floor.live import JACKPOT_PENDING, TableLive
from floor.service import FloorService

ROOT_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# The floor's tables: (table id, config, pit). The two Mississippi Stud tables are on the linked progressive LINK_ID.
TABLES = (
    ("ms-1", "mississippi-stud-progressive.toml", "pit-1"),
    ("ms-2", "mississippi-stud-progressive.toml", "pit-1"),
    ("lir-1", "let-it-ride-progressive.toml", "pit-2"),
)
PREFIX = "tablectl"
LINK_ID = "floor-demo-mega"
LINKED = {"ms-1": "T-2001", "ms-2": "T-2002"}  # table id -> asset number (5321.18: each linked table identified)
LINK_KEY_ID = "demo-link-operator"  # the demo's own key: it opens the link
HELD_POLL_S = 0.5  # how often a restart waiting for a table's round looks whether the floor sees it held for a jackpot


def link_toml(dsn: str, broker: str, supervisors: str) -> str:
    """The link's config: ms-1 and ms-2 on one $5 Progressive Payout Wager meter (as `tablectl demo --linked`)."""
    tables = "".join(f'[[tables]]\ntable_id = "{t}"\nasset_number = "{a}"\n\n' for t, a in LINKED.items())
    return f"""[link]
id = "{LINK_ID}"
lease_ms = 3000
heartbeat_ms = 750

[database]
dsn = "{dsn}"

[mqtt]
broker = "{broker}"
prefix = "{PREFIX}"
client_id = "tablectl-link-floor-demo-{os.getpid()}"

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
{supervisors}"""


def linked_table_toml(text: str) -> str:
    """A Mississippi Stud table on the link: paytable A's one meter (the link's level), a $5 wager."""
    text = text.replace('progressive_paytable = "C"', 'progressive_paytable = "A"')
    text = text.replace("progressive_wager_cents = 100", "progressive_wager_cents = 500")
    text = re.sub(r"^six_card_bonus_paytable = .*$", "", text, flags=re.M)  # the hearts deal needs no bonus cards
    return text + f'\n[progressive]\nlink = "{LINK_ID}"\nheartbeat_ms = 750\n'


def supervisor_entry(key_id: str, role: str, public_key: str) -> str:
    return f'\n[[supervisors]]\nkey_id = "{key_id}"\nrole = "{role}"\npublic_key = "{public_key}"\n'


class Link:
    """The link controller, a real `tablectl link` process; its signed commands sent with `tablectl link send`."""

    def __init__(self, workdir: Path, dsn: str, broker: str) -> None:
        self.config = workdir / "link.toml"
        self.key = workdir / "link-operator.pem"
        self.log = workdir / "link.log"
        _, public = signing_key(self.key)
        self.config.write_text(link_toml(dsn, broker, supervisor_entry(LINK_KEY_ID, "supervisor", public)))
        self.proc: asyncio.subprocess.Process | None = None
        self.restarting = asyncio.Lock()  # two enrolments at once restart it one after the other, never twice over

    async def _tablectl(self, *argv: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller.cli", "link", "--config", str(self.config), *argv,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await proc.communicate()
        return proc.returncode or 0, out.decode(errors="replace")

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller.cli", "link", "--config", str(self.config),
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
        )  # fmt: skip

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()

    async def open(self) -> str | None:
        """Opens the link with the demo's signed open_link; None once it is open, else why not."""
        why = "no reply"
        for _ in range(30):  # the controller starts (migrations, the self-check) and subscribes
            if self.proc is not None and self.proc.returncode is not None:
                return f"the link controller exited {self.proc.returncode}"
            code, out = await self._tablectl(
                "send", "open_link", "--key", str(self.key), "--key-id", LINK_KEY_ID, "--timeout", "2"
            )
            reply = json.loads(out.strip().splitlines()[-1]) if out.strip().startswith("{") else {}
            if code == 0 or "open_link applies only when it is closed" in str(reply.get("reason")):
                return None  # opened, or a reply lost to the timeout had opened it already
            why = str(reply.get("reason") or out.strip()[-300:])
            if reply.get("code") not in ("no_reply", "no_broker"):
                return why
        return why

    async def admit(self, entry: str) -> None:
        """The administrator's step for the link: the key in its [[supervisors]], the controller restarted (its
        books and its open state are in PostgreSQL; the tables ride out the restart on their lease or resend)."""
        self.config.write_text(self.config.read_text() + entry)
        async with self.restarting:
            await self.stop()
            await self.start()

    async def report(self) -> tuple[int, str]:
        return await self._tablectl("report", "--json")


def table_toml(table_id: str, source: str) -> str:
    """A table's config as the demo writes it: the shipped `source` under the table's id, on the link if LINKED."""
    text = (ROOT_CONFIGS / source).read_text()
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M)
    return linked_table_toml(text) if table_id in LINKED else text


def table_tomls() -> dict[str, str]:
    """Every table's config by id: `tablectl demo --floor` checks each as `run` would (a birth within the broker's
    packet limit) before anything starts (controller/cli/demo.py)."""
    return {tid: table_toml(tid, source) for tid, source, _ in TABLES}


class Table:
    def __init__(self, table_id: str, source: str, workdir: Path, broker: str, rounds: int | None, seed: int) -> None:
        self.table_id = table_id
        self.config = workdir / f"{table_id}.toml"
        text = table_toml(table_id, source)
        self.script: Path | None = None
        if table_id in LINKED:
            self.script = workdir / f"{table_id}-decks.toml"
            self.script.write_text(deck_script(random.Random(seed)))
        self.config.write_text(text)
        self.journal = workdir / f"{table_id}.sqlite"
        self.log = workdir / f"{table_id}.log"
        self.broker = broker
        self.rounds = rounds
        self.seed = seed
        self.proc: asyncio.subprocess.Process | None = None
        self.stopped = False  # the demo is ending: a restart under way starts nothing more

    async def start(self) -> None:
        if self.stopped:
            return
        argv = ["-m", "controller.cli", "demo", "--config", str(self.config), "--journal", str(self.journal)]
        argv += ["--broker", self.broker, "--quiet", "--pace", "0.3" if self.rounds is None else "0.02"]
        argv += ["--rounds", str(self.rounds)] if self.rounds is not None else ["--human-floor"]
        if self.script is not None:
            argv += ["--script", str(self.script), "--seed", str(self.seed)]
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, *argv, stdout=self.log.open("ab"), stderr=subprocess.STDOUT
        )

    async def restart(self, held: Callable[[], bool]) -> None:
        """Between rounds: SIGINT closes the table after its round in progress; then it starts on its journal. A round
        held for a jackpot (`held`) completes only when validated with the key this brings: such a table is stopped
        now (a second SIGINT), restored still awaiting it (docs/recovery.md), and started again once it closes."""
        proc, stopped_now = self.proc, False
        if proc is not None and proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            while proc.returncode is None:
                try:
                    async with asyncio.timeout(HELD_POLL_S):
                        await asyncio.shield(proc.wait())
                except TimeoutError:
                    if held() and not stopped_now:
                        proc.send_signal(signal.SIGINT)  # "press Ctrl-C again to stop now"
                        stopped_now = True
        await self.start()
        if stopped_now and self.proc is not None:
            await self.proc.wait()
            await self.start()

    async def stop(self) -> None:
        """Stopped at once, as systemd stops a table: SIGTERM (its runner journals `table.stopped`, or its start stops
        with its line), killed only if it has not ended within TABLE_STOP_S."""
        self.stopped = True
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            async with asyncio.timeout(TABLE_STOP_S):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


def main(args: argparse.Namespace, start: StartSignals) -> int:
    """The floor demo; a signal before its console is up stops it (the controller says so: StoppedAtStart), one after
    stops the floor service and ends the demo with 0, as before."""
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-floor-demo-"))
    try:
        return asyncio.run(start.guarding(_demo(args, workdir, start)))
    except KeyboardInterrupt:
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


async def _demo(args: argparse.Namespace, workdir: Path, start: StartSignals) -> int:
    # More than mosquitto's default 1000 queued messages a client: the floor's session must not drop the tables' events.
    start.reached("starting the private servers")
    with private_servers(workdir, "--floor", args.broker, max_queued_messages=100000) as (cluster, broker):
        dsn = cluster.create_database("floor")
        http = args.http or "127.0.0.1:8480"
        pits: dict[str, list[str]] = {}
        for tid, _, pit in TABLES:
            pits.setdefault(pit, []).append(tid)
        pit_lines = "\n".join(
            f'"{pit}" = [{", ".join(repr(t) for t in ts)}]'.replace("'", '"') for pit, ts in pits.items()
        )
        floor_toml = workdir / "floor.toml"
        floor_toml.write_text(
            f'name = "demo-floor"\n[database]\ndsn = "{dsn}"\n'
            f'[mqtt]\nbroker = "{broker}"\nprefix = "{PREFIX}"\nclient_id = "tablectl-floor-demo-{os.getpid()}"\n'
            f'[console]\nlisten = "{http}"\ndemo_approve_all = true\n[console.pits]\n{pit_lines}\n'
        )
        service = FloorService(parse_floor_config(floor_toml.read_text(), str(floor_toml)))
        rng = random.Random(args.seed)
        tables = [Table(tid, source, workdir, broker, args.rounds, rng.randrange(1 << 30)) for tid, source, _ in TABLES]
        link = Link(workdir, cluster.create_database("link"), broker)
        return await _run(service, tables, link, args.rounds, floor_toml, start)


async def _run(
    service: FloorService, tables: list[Table], link: Link, rounds: int | None, floor_toml: Path, start: StartSignals
) -> int:
    start.reached("starting the floor service")
    floor = asyncio.create_task(service.run(), name="floor")
    restarts: set[asyncio.Task[None]] = set()
    try:
        return await _started(service, floor, tables, link, rounds, floor_toml, start, restarts)
    finally:
        # A table first (each stopped at once, its stop journaled), then the link and the floor that hear them.
        for task in list(restarts):
            task.cancel()
        await asyncio.gather(*(t.stop() for t in tables))
        await link.stop()
        service.stop()
        with contextlib.suppress(Exception):
            await floor


# size: the start's steps in order, each said (start.reached) and each failure's line, then the demo's own wait
async def _started(
    service: FloorService,
    floor: asyncio.Task[None],
    tables: list[Table],
    link: Link,
    rounds: int | None,
    floor_toml: Path,
    start: StartSignals,
    restarts: set[asyncio.Task[None]],
) -> int:
    ready = asyncio.create_task(service.console_ready.wait())
    await asyncio.wait({floor, ready}, return_when=asyncio.FIRST_COMPLETED)
    if floor.done():
        floor.result()  # the floor failed to start: its error
        return 1
    console = service.console
    if console is None:  # the demo's config sets [console] listen, so a ready floor has one
        print("tablectl demo --floor: the floor started without its console", file=sys.stderr)
        return 1
    console.on_enrol = _admitter(tables, link, rounds, restarts, console.view.live)
    # The link controller first, opened, so the linked tables get their lease at once (they start locked out).
    start.reached("opening the link")
    await link.start()
    why = await link.open()
    if why is not None:
        print(f"tablectl demo --floor: the link did not open: {why}; its log: {link.log}", file=sys.stderr)
        return 1
    start.reached("starting the tables")
    for t in tables:
        await t.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stop)
    start.reached("handlers installed")
    start.hand_over(lambda _by: service.stop())
    linked = " and ".join(LINKED)
    print(f"tablectl demo --floor: link {LINK_ID} open: {linked} on one linked progressive", flush=True)
    print(f"tablectl demo --floor: floor config for `tablectl floor` and `tablectl report`: {floor_toml}", flush=True)
    print(f"tablectl demo --floor: open {console.url} (enrol a key, then log in)", flush=True)
    if rounds is None:
        await floor
        return 0
    for t in tables:
        code = await t.proc.wait() if t.proc is not None else 1  # started above: each has its process
        if code != 0:
            print(f"tablectl demo --floor: table {t.table_id} exited {code}; its log: {t.log}", file=sys.stderr)
            return 1
    while not all(console.view.live.get(t.table_id) and console.view.live[t.table_id].rounds_completed >= rounds
                  for t in tables):  # fmt: skip
        if floor.done():
            return 1
        await asyncio.sleep(0.2)  # the archive has no notification to wait on; the tables are done already
    print(f"tablectl demo --floor: every table played {rounds} round(s); the floor archived them", flush=True)
    return await link_summary(link)


def _admitter(
    tables: list[Table],
    link: Link,
    rounds: int | None,
    restarts: set[asyncio.Task[None]],
    live: Mapping[str, TableLive],
) -> Callable[[str, str, str], None]:
    """What the console calls with each key enrolled: the administrator's step, done for the demo."""

    def admit(key_id: str, role: str, public_key: str) -> None:
        # The key in every table's config, each table restarted, and in the link's (which knows floorpersons and
        # supervisors only: a technician has no link verb).
        entry = supervisor_entry(key_id, role, public_key)
        steps = []
        for t in tables:
            t.config.write_text(t.config.read_text() + entry)
            if rounds is None:
                steps.append(t.restart(functools.partial(_held, live, t.table_id)))
        if role in ("floorperson", "supervisor"):
            steps.append(link.admit(entry))
        for step in steps:
            task = asyncio.create_task(step)
            restarts.add(task)
            task.add_done_callback(restarts.discard)

    return admit


def _held(live: Mapping[str, TableLive], table_id: str) -> bool:
    """Whether the floor sees the table's round held for a jackpot's validation."""
    table = live.get(table_id)
    return table is not None and table.phase == JACKPOT_PENDING
