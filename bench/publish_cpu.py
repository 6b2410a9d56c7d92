"""The publisher's CPU per round: a seven-seat round's events published by EventPublisher, against bare aiomqtt.

Measured: the event loop thread's CPU, user and system (getrusage RUSAGE_THREAD) while EventPublisher publishes a
round's --events events to a private mosquitto in steps of --step events, each step handed over as the journal's writer
thread does (`offer`, the default) or announced for the publisher to read back from the outbox (`--path outbox`),
until the publisher has every PUBACK of the step; everything the publisher does for them counts (JSON bodies,
packets, PUBACKs, the retained anchor after each batch, outbox marks). The journal commits that produce the events are
not counted (made before the clock starts, on the same thread).

Baseline, in the same process and the same rounds (interleaved): a bare aiomqtt client publishing the same bodies on
its own connection to the same broker, QoS 1, each step's publishes gathered and awaited. The issue's budget is 5 ms
for a whole round of the controller (issue 19 item 3): the publisher's share must stay well under it.

    .venv/bin/python bench/publish_cpu.py [--rounds 30] [--events 66] [--step 2] [--path offer|outbox]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import aiomqtt
import benchlib

from controller.config.table import MqttSettings
from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt.messages import event_body
from controller.mqtt.publisher import EventPublisher
from controller.shell.logs import configure_logging
from controller.store.journal import Journal

TABLE = "bench-publish"
BUDGET_MS = 5.0  # the controller's whole round (issue 19)


def cpu() -> tuple[float, float]:
    """This thread's user and system CPU seconds (the kernel's TCP work for loopback sends is charged to the sender)."""
    use = resource.getrusage(resource.RUSAGE_THREAD)
    return use.ru_utime, use.ru_stime


def step_events(first: int, count: int) -> list[DomainEvent]:
    # The size of a 643a settlement event (643a.11: a seat's hand, its wagers and what each paid).
    return [
        DomainEvent(
            "hand.settled",
            "643a.11(a)",
            {
                "seat": n % 7 + 1,
                "cards": ["Jc", "Ah", "3s"],
                "community": ["8h", "4h"],
                "hand": "high_card",
                "paytable": "643a.12(a)",
                "paid": 0,
                "wagers": [
                    {"wager": w, "amount": 500, "outcome": "lose", "paid": 0, "returned": 0, "collected": 500}
                    for w in ("first", "second", "third")
                ],
            },
            round_id=f"{TABLE}-r{first:06d}",
        )
        for n in range(first, first + count)
    ]


class Acked:
    """Resolves once the publisher has had every event up to a seq acknowledged (its anchor's hook)."""

    def __init__(self, pub: EventPublisher) -> None:
        anchor = pub._anchor
        self.upto = 0
        self.waiting: tuple[int, asyncio.Future[None]] | None = None
        real = anchor.acknowledged

        def acknowledged(last: JournaledEvent) -> None:
            real(last)
            self.upto = max(self.upto, last.seq)
            if self.waiting is not None and self.upto >= self.waiting[0] and not self.waiting[1].done():
                self.waiting[1].set_result(None)

        anchor.acknowledged = acknowledged  # type: ignore[method-assign]

    async def until(self, seq: int) -> None:
        if self.upto >= seq:
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiting = (seq, fut)
        await asyncio.wait_for(fut, 10)


Cpu = list[tuple[float, float]]  # per round: (user, system) milliseconds


async def run(args: argparse.Namespace, url: str, directory: Path) -> tuple[Cpu, Cpu]:
    journal = Journal(directory / "journal.db", TABLE, "bench-boot")
    settings = MqttSettings(broker=url, prefix="bench")
    pub = EventPublisher(journal, settings, TABLE)
    acked = Acked(pub)
    task = asyncio.create_task(pub.run())
    ours: Cpu = []
    bare: Cpu = []
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    try:
        async with aiomqtt.Client(host, int(port), identifier="bench-bare", protocol=aiomqtt.ProtocolVersion.V5) as mq:
            mq.pending_calls_threshold = 1000
            # No wait for the connection: the warm-up rounds' first step waits for its PUBACKs, and is not counted.
            seq = 0
            for n in range(args.warmup + args.rounds):
                if n % 10 == 0:
                    benchlib.progress(f"round {n + 1}/{args.warmup + args.rounds}")
                ours_u = ours_s = bare_u = bare_s = 0.0
                for first in range(0, args.events, args.step):
                    count = min(args.step, args.events - first)
                    evs = journal.append(step_events(seq + 1, count), datetime.now(UTC))
                    seq = evs[-1].seq
                    u0, s0 = cpu()
                    if args.path == "offer":
                        pub.offer(evs)
                    else:
                        pub.notify()
                    await acked.until(seq)
                    u1, s1 = cpu()
                    bodies = [event_body(ev, False) for ev in evs]  # the bare client needs the bodies too: counted
                    await asyncio.gather(*(mq.publish("bench/bare/event", b, qos=1) for b in bodies))
                    u2, s2 = cpu()
                    ours_u, ours_s = ours_u + u1 - u0, ours_s + s1 - s0
                    bare_u, bare_s = bare_u + u2 - u1, bare_s + s2 - s1
                if n >= args.warmup:
                    ours.append((ours_u * 1000, ours_s * 1000))
                    bare.append((bare_u * 1000, bare_s * 1000))
    finally:
        await pub.close()
        await asyncio.gather(task, return_exceptions=True)
        journal.close()
    return ours, bare


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--events", type=int, default=66, help="events a round (a seven-seat 643a round: 66)")
    ap.add_argument("--step", type=int, default=2, help="events a step (a round's steps hand over about 2 each)")
    ap.add_argument("--path", choices=("offer", "outbox"), default="offer")
    args = ap.parse_args()
    configure_logging(level="warning")
    print(benchlib.machine())
    with benchlib.mosquitto() as url, tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        ours, bare = asyncio.run(run(args, url, Path(tmp)))
    ou, os_ = (sum(x) / len(ours) for x in zip(*ours, strict=True))
    bu, bs = (sum(x) / len(bare) for x in zip(*bare, strict=True))
    steps = -(-args.events // args.step)
    print(f"{args.rounds} rounds of {args.events} events in {steps} steps of {args.step} (path: {args.path})")
    print(
        f"baseline: bare aiomqtt publishing the same bodies, QoS 1: {bu + bs:.2f} ms of CPU a round "
        f"({bu:.2f} user, {bs:.2f} system)"
    )
    share = f"{(ou + os_) / BUDGET_MS:.0%} of the controller's 5 ms budget"
    print(
        f"EventPublisher: {ou + os_:.2f} ms of CPU a round ({ou:.2f} user, {os_:.2f} system); "
        f"{(ou + os_) / (bu + bs):.2f}x the baseline, user {ou / bu:.2f}x; {share}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
