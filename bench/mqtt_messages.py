"""Cost of building the published event body from the contract model (controller.mqtt.publisher.event_message) against
the hand-built JSON the publisher used before (json.dumps of JournaledEvent.public()), on the same events.

Baseline: json.dumps(ev.public(), separators=(",", ":"), ensure_ascii=False). The events are the journal of a
seeded `tablectl demo` played here on simulated devices (real ptys), so payloads have the real shapes. The
ratio model/baseline is of events per second: below 1 means the model costs that much more per event.

Run:  .venv/bin/python bench/mqtt_messages.py [--rounds N] [--repeat K] [--seed S]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from controller.config.table import demo_config
from controller.core.events import JournaledEvent
from controller.mqtt.messages import event_message
from controller.people.demo import play
from controller.people.simulate import NO_BROKER
from controller.shell.logs import configure_logging
from controller.store.journal import Journal


def _baseline(ev: JournaledEvent) -> str:
    return json.dumps(ev.public(), separators=(",", ":"), ensure_ascii=False)


def _model(ev: JournaledEvent) -> str:
    return event_message(ev, replayed=False)


def throughput(
    label: str, build: Callable[[JournaledEvent], str], events: Sequence[JournaledEvent], repeat: int
) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        for ev in events:
            build(ev)
    elapsed = time.perf_counter() - t0
    rate = len(events) * repeat / elapsed
    print(f"  {label}: {len(events) * repeat:,} events in {elapsed:.2f} s", flush=True)
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="demo rounds to journal (default 20)")
    parser.add_argument("--repeat", type=int, default=50, help="passes over the events (default 50)")
    parser.add_argument("--seed", type=int, default=2024, help="demo seed (default 2024)")
    args = parser.parse_args()
    configure_logging(json=False, level="error")  # the demo's broker warnings are not what is measured

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite"
        print(f"playing {args.rounds} demo rounds (seed {args.seed}) to journal real events ...", flush=True)
        asyncio.run(play(demo_config(), rounds=args.rounds, broker=NO_BROKER, seed=args.seed, journal_path=path))
        with Journal(path, "demo-ms-1", "bench") as journal:
            events = journal.events()
    assert all(json.loads(_model(ev)) == json.loads(_baseline(ev)) for ev in events), "same JSON either way"
    print(f"{len(events):,} events; building each body {args.repeat} times:", flush=True)
    base = throughput("baseline json.dumps", _baseline, events, args.repeat)
    model = throughput("TableEvent model   ", _model, events, args.repeat)
    print()
    print(f"{'':>20}  {'events/s':>10}  {'us/event':>9}")
    print(f"{'baseline json.dumps':>20}  {base:>10,.0f}  {1e6 / base:>9.1f}")
    print(f"{'TableEvent model':>20}  {model:>10,.0f}  {1e6 / model:>9.1f}")
    print(f"model/baseline: {model / base:.2f}")


if __name__ == "__main__":
    main()
