"""How the cost grows with the work: lock-out p99 from 1 to 7 stations, journal size and `journal verify` time with
the rounds journaled.

Lock-out: bench/lockout.py's measurement (paced 115200-baud lines, the protocol the drivers negotiate with the
simulators by default, v3: CODE lock and REPLY on a line each, the GROUP lock and slot confirmations on one multi-drop
line) for 1, 2, 4 and 7 stations; the baseline of each is the line time of its own frames.

CPU per round: `tablectl demo`'s table at pace 0 (the controller, its simulators and the simulated people in this one
process, journal durable, a private mosquitto), Let It Ride with its four optional wagers offered
(configs/let-it-ride-progressive.toml's [game]: Five Card Bonus, Three Card Bonus and both progressives), from 1 to 7
seats with no optional wager, then seven seats with 1 to 4 optional wagers each; every seat wagers every round. The
baseline is the one-seat table with no optional wager: the ratio is what the work adds.

Journal: a fresh journal file filled with synthetic rounds shaped like the seven-seat table's (66 events a round,
payloads of the sizes a 643a round journals, one transaction a round), its size and the time `Journal.verify` (the
walk `tablectl journal verify` makes) takes at each doubling up to --rounds. The baseline of the verify time is
reading the same rows without checking them (one SELECT over the events), so the ratio is what the checking adds.

    .venv/bin/python bench/growth.py [--rounds 100000] [--trials 200] [--cpu-rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import benchlib
import lockout
import lockout_wire

from controller.config.table import TableConfig, read_config
from controller.core.events import DomainEvent, JournaledEvent
from controller.games.registry import chapter_of
from controller.people.demo import RandomPolicy, play
from controller.shell.logs import configure_logging
from controller.store.archive import archive
from controller.store.journal import Journal
from drivers.sim.line import LineTiming

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = ("five_card_bonus", "three_card_bonus", "three_card_progressive", "five_card_progressive")  # 643a.7(e)-(h)
EVENTS_PER_ROUND = 66  # bench/table_rounds.py's seven-seat 643a table journals 66 events a round


def synthetic_round(n: int) -> list[DomainEvent]:
    """66 events with payloads of a real round's sizes: wagers, lock-out, cards dealt (sealed), settlements."""
    round_id = f"r-{n}"
    events = [DomainEvent("round.started", "643a.5(a)", {"round_no": n}, round_id=round_id)]
    for seat in range(1, 8):
        for spot in ("ante", "bet_1", "bet_2", "three_card_bonus", "progressive"):
            events.append(
                DomainEvent(
                    "wager.accepted", "643a.7(a)", {"seat": seat, "spot": spot, "amount_cents": 500}, round_id=round_id
                )
            )
    for seat in range(1, 8):
        events.append(DomainEvent("lock.confirmed", "643a.8(a)", {"seat": seat}, round_id=round_id))
    events.append(DomainEvent("lockout.confirmed", "643a.8(a)", {"seats": list(range(1, 8))}, round_id=round_id))
    for seat in range(1, 8):
        events.append(
            DomainEvent(
                "hand.settled",
                "643a.11(b)",
                {"seat": seat, "ante_cents": 500, "bet_1_cents": 500, "net_cents": -1000, "cards": 3},
                sealed={"cards": ["As", "Kd", "Qh", "Jc", "Ts"]},
                round_id=round_id,
            )
        )
    while len(events) < EVENTS_PER_ROUND - 1:
        events.append(
            DomainEvent("decision.made", "643a.9(a)", {"seat": 1, "decision": "let_it_ride"}, round_id=round_id)
        )
    events.append(DomainEvent("round.completed", "643a.11(a)", {"round_no": n}, round_id=round_id))
    return events


def journal_growth(rounds: int, keep: int = 0) -> list[tuple[int, int, float, float]]:
    """(rounds, file bytes, verify seconds, plain read seconds) at each doubling; with `keep`, the journal archived at
    each doubling to its last `keep` rounds (`tablectl journal archive --keep-rounds`) before it is verified."""
    out = []
    checkpoints, at = [], min(1000, rounds)
    while at < rounds:
        checkpoints.append(at)
        at *= 2
    checkpoints.append(rounds)
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        path = Path(tmp) / "growth.sqlite"
        journal = Journal(path, "bench-growth", uuid.uuid4().hex)
        try:
            done = marked = 0
            for target in checkpoints:
                while done < target:
                    done += 1
                    journal.append(synthetic_round(done), datetime.now(UTC))
                    if done % 1000 == 0:
                        benchlib.progress(f"{done}/{rounds} rounds journaled")
                if keep:
                    # The broker acknowledged everything (only acknowledged rows are archived); seal, then measure.
                    journal.mark_published(range(marked + 1, journal.last_seq + 1), replayed=False)
                    marked = journal.last_seq
                    archive(path, keep)
                size = sum(
                    p.stat().st_size for p in Path(tmp).iterdir() if p.name.startswith("growth.sqlite") and p.is_file()
                )
                start = time.perf_counter()
                report = journal.verify()
                verify_s = time.perf_counter() - start
                if not report.ok:
                    sys.exit(f"bench: the synthetic journal does not verify: {report}")
                start = time.perf_counter()
                rows = len(journal.events())
                read_s = time.perf_counter() - start
                assert rows == min(done, keep or done) * EVENTS_PER_ROUND
                out.append((done, size, verify_s, read_s))
        finally:
            journal.close()
    return out


class EveryoneWagers(RandomPolicy):
    """Every seat wagers every round: its three bets at the minimum and its first `optional` optional wagers."""

    def __init__(self, rng: random.Random, optional: int) -> None:
        super().__init__(rng)
        self.optional = optional

    def wagers(self, round_no: int, config: TableConfig) -> dict[int, dict[str, int]]:
        offers = {o.spot: o.min_cents for o in chapter_of(config.game).spec.offers(config.game)}
        spots = ["bet_1", "bet_2", "bet_3", *OPTIONAL[: self.optional]]
        return {seat: {spot: offers[spot] for spot in spots} for seat in range(1, config.game.seats + 1)}


def growth_config(seats: int) -> TableConfig:
    """The benches' simulated seven-seat table with let-it-ride-progressive.toml's [game], cut to `seats` seats."""
    data = benchlib.seven_seat_config().model_dump()
    game = read_config(ROOT / "configs" / "let-it-ride-progressive.toml")["game"]
    data["game"] = {**game, "seats": seats}
    devices = data["devices"]
    devices["wager_stations"] = [s for s in devices["wager_stations"] if int(s["seat"]) <= seats]
    return TableConfig.model_validate(data)


def cpu_per_round(seats: int, optional: int, rounds: int, url: str) -> tuple[float, float]:
    """CPU ms per round and rounds/s over the rounds after the first (its start is not a round's work)."""
    config = growth_config(seats)
    marks: list[tuple[float, float]] = []

    def on_event(ev: JournaledEvent) -> None:
        if ev.type == "round.completed":
            usage = resource.getrusage(resource.RUSAGE_SELF)
            marks.append((time.perf_counter(), usage.ru_utime + usage.ru_stime))

    with tempfile.TemporaryDirectory(prefix="bench-growth-cpu-") as tmp:
        played = asyncio.run(
            play(
                config,
                rounds=rounds,
                broker=url,
                seed=1,
                pace=0.0,
                journal_path=Path(tmp) / "j.sqlite",
                policy=EveryoneWagers(random.Random(1), optional),
                on_event=on_event,
            )
        )
    if played != rounds or len(marks) < 2:
        sys.exit(f"bench: the {seats}-seat table played {played} rounds, not {rounds}: see the log")
    (w0, c0), (w1, c1) = marks[0], marks[-1]
    n = len(marks) - 1
    return (c1 - c0) / n * 1000, n / (w1 - w0)


def cpu_growth(rounds: int) -> None:
    print(
        f"CPU per round, {rounds} rounds each at pace 0, controller + simulators + people in this process "
        "(baseline: one seat, no optional wager)"
    )
    shapes = [(n, 0) for n in (1, 2, 4, 7)] + [(7, k) for k in (1, 2, 3, 4)]
    base = 0.0
    with benchlib.mosquitto() as url:
        for seats, optional in shapes:
            benchlib.progress(f"{seats} seat(s), {optional} optional wager(s) each")
            cpu_ms, rate = cpu_per_round(seats, optional, rounds, url)
            base = base or cpu_ms
            print(
                f"  {seats} seat(s), {optional} optional wager(s) a seat: {cpu_ms:.1f} ms CPU a round "
                f"({cpu_ms / base:.2f}x), {rate:.1f} rounds/s"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100_000, help="rounds journaled at the end")
    ap.add_argument("--trials", type=int, default=200, help="lock-out trials per station count")
    ap.add_argument("--cpu-rounds", type=int, default=20, help="rounds per table shape for CPU a round (0: skip)")
    ap.add_argument("--only-cpu", action="store_true", help="measure CPU a round alone")
    ap.add_argument("--only-journal", action="store_true", help="measure the journal's growth alone")
    ap.add_argument("--keep-rounds", type=int, default=1000, help="rounds kept by the archiving run (0: skip it)")
    args = ap.parse_args()
    configure_logging(json=False, level="warning")
    print(f"machine: {benchlib.machine()}")
    if args.cpu_rounds and not args.only_journal:
        cpu_growth(args.cpu_rounds)
    if args.only_cpu:
        return 0
    if not args.only_journal:
        lockout_growth(args.trials)
    journal_report(args.rounds, args.keep_rounds)
    return 0


def lockout_growth(trials: int) -> None:
    timing = LineTiming()
    protocol = lockout_wire.DRIVER_PROTOCOL
    print(
        f"lock-out p99 with the stations on paced 115200-baud lines, the drivers' default protocol (v{protocol}; "
        "baseline: the line time of the frames it sends)"
    )
    for bus in (False, True):
        for stations in (1, 2, 4, 7):
            [figures] = asyncio.run(lockout.run(trials, stations, lambda _n: None, bus, protocol, timing)).values()
            _press, path_bytes = lockout_wire.critical_bytes(stations, figures.version, bus)
            floor = lockout_wire.line_time_ms(path_bytes, timing)
            p99 = benchlib.percentile(figures.controller, 99)
            wiring = "one multi-drop line" if bus else "a line each"
            print(
                f"  {stations} station(s), {wiring}, v{figures.version}: p99 {p99:.3f} ms from the press reaching the "
                "controller "
                f"({p99 / floor:.2f}x the {floor:.3f} ms line time; journal commit p99 "
                f"{benchlib.percentile(figures.commit, 99):.3f} ms of it)"
            )


def journal_report(total: int, keep: int) -> None:
    print(f"journal, {EVENTS_PER_ROUND} events a round (baseline: reading the rows without checking them)")
    growth = journal_growth(total)
    for rounds, size, verify_s, read_s in growth:
        print(
            f"  {rounds:>7} rounds: {size / 1e6:8.1f} MB ({size / rounds / 1024:.1f} KiB a round), journal verify "
            f"{verify_s:.2f} s ({verify_s / rounds * 1e6:.0f} us a round; {verify_s / read_s:.1f}x the plain read)"
        )
    rounds, size, verify_s, _ = growth[-1]
    if rounds < 100_000:
        scale = 100_000 / rounds
        print(
            f"  100000 rounds, extrapolated linearly: {size * scale / 1e9:.2f} GB, journal verify "
            f"{verify_s * scale:.0f} s"
        )
    print("  verify walks every row: without archiving its time grows with the journal without bound")
    if not keep:
        return
    print(
        f"journal archived at each doubling to its last {keep} rounds (tablectl journal archive --keep-rounds {keep})"
    )
    archived = journal_growth(total, keep)
    for (rounds, size, verify_s, read_s), (_, size0, verify0, _) in zip(archived, growth, strict=True):
        print(
            f"  {rounds:>7} rounds: {size / 1e6:8.1f} MB live ({size / size0:.2f}x unarchived), journal verify "
            f"{verify_s:.3f} s ({verify_s / verify0:.3f}x unarchived; {verify_s / read_s:.1f}x the plain read)"
        )
    print("  with archiving, the live journal and its verify stay bounded by the rounds kept")


if __name__ == "__main__":
    sys.exit(main())
