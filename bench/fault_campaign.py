"""A fault campaign a lab can re-run: real daemons (`tablectl demo` on simulated devices, its own mosquitto) put
through kill -9, SIGSTOP/SIGCONT of the daemon, a broker outage, a SIGSTOPped broker and a storage fault (its
journal's writes failing, RLIMIT_FSIZE), each trial followed by a clean restart on the same journal. At the end, per
trial kind: events lost (published, never received by an independent subscriber whose session the broker keeps, as
a floor's), wagers settled twice, meters inconsistent (the two stored copies disagreeing), tasks dead (`task.failed`
events) and whether the journal verifies. Prints one table; exit status 1 if anything was lost or counted twice.

    python3 bench/fault_campaign.py --trials 5          # five of each kind
    python3 bench/fault_campaign.py --trials 1 --kinds kill9,broker_outage
"""

from __future__ import annotations

import argparse
import random
import re
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leash import Leash  # noqa: E402
from tests.broker import Mosquitto, Subscriber, find_mosquitto  # noqa: E402

KINDS = ("kill9", "daemon_stop", "broker_outage", "broker_stall", "storage")
PREFIX = "fc"
ROW = "{:<14} {:>6} {:<18} {:>7} {:>5} {:>9} {:>6} {:>5} {:>6}"
CATCH_UP = 30.0  # seconds the subscriber may take to receive what the broker acknowledged; failure bound only


def _config(tmp: Path, table_id: str) -> Path:
    text = (ROOT / "configs" / "demo.toml").read_text()
    text = re.sub(r'^table_id = ".*"$', f'table_id = "{table_id}"', text, count=1, flags=re.M)
    path = tmp / "table.toml"
    path.write_text(text.replace('prefix = "tablectl"', f'prefix = "{PREFIX}"'))
    return path


def _limit_writes() -> None:
    """preexec_fn of a storage trial: the journal's writes fail past the limit (EFBIG, as a failing disk)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (_LIMIT[0], resource.RLIM_INFINITY))


_LIMIT = [0]  # bytes, for _limit_writes (a preexec_fn takes no argument)


def _start(
    config: Path, journal: Path, broker: str, seed: int, log: Path, limit: int | None = None
) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "controller.cli", "--log-json", "demo", "--pace", "0", "--seed", str(seed)]
    args += ["--journal", str(journal), "--quiet", "--broker", broker, "--config", str(config)]
    if limit is not None:
        _LIMIT[0] = limit
    with log.open("ab") as out:
        return subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=out, cwd=ROOT, preexec_fn=_limit_writes if limit else None
        )


def _seqs(journal: Path) -> int:
    db = sqlite3.connect(journal)
    try:
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
    except sqlite3.OperationalError:  # the daemon has not created its tables yet
        return 0
    finally:
        db.close()


def _wait(condition: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling other processes' files and sockets
    return True


def _trial(kind: str, rng: random.Random, ctx: dict[str, object]) -> str:
    """One fault against a playing daemon; returns how the daemon ended (its exit status or the signal)."""
    config, journal, broker, log = ctx["config"], ctx["journal"], ctx["broker"], ctx["log"]
    assert isinstance(config, Path) and isinstance(journal, Path) and isinstance(broker, Mosquitto)
    assert isinstance(log, Path)
    before = _seqs(journal) if journal.exists() else 0
    # RLIMIT_FSIZE bounds each file's size: the largest of the journal's files now, plus room for a few rounds.
    files = [f for f in (journal, journal.with_name(journal.name + "-wal")) if f.exists()]
    limit = max((f.stat().st_size for f in files), default=0) + 400_000 if kind == "storage" else None
    proc = _start(config, journal, broker.url, rng.randrange(1 << 30), log, limit)
    try:
        _wait(lambda: journal.exists() and _seqs(journal) > before + 20, 60)
        time.sleep(rng.uniform(0.2, 1.5))  # the fault's instant, seeded
        if kind == "kill9":
            proc.kill()
        elif kind == "daemon_stop":
            proc.send_signal(signal.SIGSTOP)
            time.sleep(2)
            proc.send_signal(signal.SIGCONT)
        elif kind == "broker_outage":
            broker.stop()
            time.sleep(2)
            broker.start()
        elif kind == "broker_stall" and broker.proc is not None:
            broker.proc.send_signal(signal.SIGSTOP)
            time.sleep(4)
            broker.proc.send_signal(signal.SIGCONT)
        if kind == "storage":
            proc.wait(timeout=120)
        elif proc.poll() is None:
            time.sleep(1)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return str(proc.returncode)


def _drain(ctx: dict[str, object], sub: Subscriber, topic: str) -> None:
    """A clean boot on the same journal until everything journaled so far has reached the subscriber."""
    config, journal, broker, log = ctx["config"], ctx["journal"], ctx["broker"], ctx["log"]
    assert isinstance(config, Path) and isinstance(journal, Path) and isinstance(broker, Mosquitto)
    assert isinstance(log, Path)
    proc = _start(config, journal, broker.url, 1, log)
    try:
        _wait(lambda: {m.json()["seq"] for m in sub.on(topic)} >= set(range(1, _seqs(journal) - 200)), 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _findings(journal: Path, sub: Subscriber, topic: str) -> dict[str, int]:
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("SELECT seq, type, round_id || payload, published_at FROM events ORDER BY seq").fetchall()
        copies = db.execute("SELECT body FROM critical_state WHERE record = 'meters' ORDER BY copy").fetchall()
    finally:
        db.close()
    published = {seq for seq, _, _, at in rows if at is not None}
    # Marked published means the broker PUBACKed it, not that the subscriber's thread has read it yet: the last
    # events of the drain's final close are marked moments before this runs. A bound on failure only.
    _wait(lambda: published <= {m.json()["seq"] for m in sub.on(topic)}, CATCH_UP)
    received = {m.json()["seq"] for m in sub.on(topic)}
    # A hand settled twice is the same round's same settlement journaled again (round id and payload alike).
    settled = Counter(r[2] for r in rows if r[1] == "hand.settled")
    twice = sum(1 for n in settled.values() if n > 1)
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "journal", "verify", "--journal", str(journal)],
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    return {
        "events": len(rows),
        "lost": len(published - received),
        "settled_twice": twice,
        "meters_inconsistent": int(len({bytes(c[0]) for c in copies}) > 1),
        "tasks_dead": sum(1 for r in rows if r[1] == "task.failed"),
        "verify_broken": int(done.returncode != 0),
    }


def _ranges(seqs: list[int]) -> str:
    out: list[str] = []
    for s in sorted(seqs):
        if out and int(out[-1].split("-")[-1]) == s - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{s}"
        else:
            out.append(str(s))
    return ", ".join(out)


def _explain(kind: str, journal: Path, sub: Subscriber, topic: str, log: Path, broker: Mosquitto) -> None:
    """What a bad row is made of, on stderr: the seqs lost with their journal rows, the hands settled twice, the
    daemons' warnings and the broker's log tail; the campaign's dir is deleted at exit, so this is all that is left."""
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("SELECT seq, type, boot_id, published_at, replayed FROM events ORDER BY seq").fetchall()
        twice = db.execute(
            "SELECT round_id, payload, GROUP_CONCAT(seq) FROM events WHERE type = 'hand.settled' "
            "GROUP BY round_id, payload HAVING COUNT(*) > 1"
        ).fetchall()
    finally:
        db.close()
    received = [m.json() for m in sub.on(topic)]
    seen = {b["seq"] for b in received}
    lost = [r for r in rows if r[3] is not None and r[0] not in seen]
    err = sys.stderr
    print(f"--- {kind}: {len(rows)} events journaled, {len(received)} messages received", file=err)
    if lost:
        print(f"lost (published, never received): seqs {_ranges([r[0] for r in lost])}", file=err)
        for seq, type_, boot, at, replayed in lost[:20]:
            print(f"  seq {seq} {type_} boot {boot[:8]} published_at {at} replayed {replayed}", file=err)
    for round_id, payload, seqs in twice:
        print(f"settled twice: round {round_id} seqs {seqs}: {payload[:200]}", file=err)
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    loud = [line for line in lines if '"level": "warning"' in line or '"level": "error"' in line or "Traceback" in line]
    print(f"daemon log ({len(lines)} lines), its warnings and errors, last 40:", file=err)
    for line in loud[-40:]:
        print("  " + line[:400], file=err)
    print("broker log, last 40 lines:\n" + broker.tail(), file=err)


def _campaign(kind: str, trials: int, rng: random.Random, broker: Mosquitto, tmp: Path) -> int:
    """The trials of one kind on a table of their own, its row printed; returns the problems found."""
    table_id = f"fc{kind.replace('_', '')}{rng.randrange(10**6)}"
    work = tmp / table_id
    work.mkdir()
    topic = f"{PREFIX}/{table_id}/event"
    sub = Subscriber(broker.host, broker.port, [topic], session=f"fc-floor-{table_id}")
    sub.wait_subscribed()
    ctx: dict[str, object] = {
        "config": _config(work, table_id),
        "journal": work / "table.sqlite",
        "broker": broker,
        "log": work / "daemon.log",
    }
    ends = Counter(_trial(kind, rng, ctx) for _ in range(trials))
    _drain(ctx, sub, topic)
    f = _findings(work / "table.sqlite", sub, topic)
    bad = f["lost"] + f["settled_twice"] + f["meters_inconsistent"] + f["verify_broken"]
    if bad:
        _explain(kind, work / "table.sqlite", sub, topic, work / "daemon.log", broker)
    sub.close()
    said = ",".join(f"{k}x{v}" for k, v in sorted(ends.items()))
    verify = "ok" if not f["verify_broken"] else "BROKEN"
    row = (f["events"], f["lost"], f["settled_twice"], f["meters_inconsistent"], f["tasks_dead"], verify)
    print(ROW.format(kind, trials, said, *row))
    return bad


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=3, help="trials of each kind (default 3)")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    p.add_argument("--seed", type=int, default=12_064)
    args = p.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        p.error(f"unknown kinds {sorted(unknown)}: use {', '.join(KINDS)}")
    binary = find_mosquitto()
    if binary is None:
        print("fault_campaign: mosquitto is not installed (python3 dev.py test installs it)", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    print(f"fault campaign: {args.trials} trial(s) of {', '.join(kinds)}; seed {args.seed}")
    print(ROW.format("kind", "trials", "ends", "events", "lost", "settled2x", "meters", "tasks", "verify"))
    bad = 0
    # On the leash (leash/): should the campaign be killed, its watchdog stops the broker and the daemons and
    # deletes the dir; should the watchdog be killed too, the next sweep does (the dir's name is one it knows).
    leash = Leash.mine()
    tmp = leash.mkdtemp("tablectl-faults-")
    # Set up as a floor's (docs/floor.md): persistence on, and below a subscriber whose session the broker keeps. The
    # table's promise ends at the broker's PUBACK (docs/mqtt.md, "Guarantees"); a clean-session subscriber on a broker
    # without persistence misses, through a broker outage, what the broker acknowledged just before its SIGTERM and
    # whatever the daemon replays before the subscriber's own reconnect has subscribed again (a race of the two
    # reconnect backoffs), losses the table neither causes nor sees (tests/mqtt/test_publisher.py says the same).
    broker = Mosquitto(binary, tmp, persistence=True)  # port None: a port taken before it binds is replaced
    try:
        broker.start()
        try:
            for kind in kinds:
                bad += _campaign(kind, args.trials, rng, broker, tmp)
        finally:
            broker.stop()
    finally:
        leash.release(tmp)
    print("result: nothing lost, nothing settled twice" if not bad else f"result: {bad} problem(s) found")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
