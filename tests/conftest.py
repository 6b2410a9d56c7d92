"""Shared fixtures: a real mosquitto broker and an independent MQTT subscriber (made of tests/broker.py's parts).

Tests run with --import-mode=importlib, so test modules cannot import helpers from each other; what several areas
need lives in helper modules (tests/broker.py) and in the fixtures here. Area-specific fixtures belong in
tests/<area>/conftest.py.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from leash import sweep_stale
from tests.broker import (
    ISSUED,
    Mosquitto,
    Subscribe,
    Subscriber,
    find_mosquitto,
    fresh_id,
    retained_topics,
    unregistered,
)

# The simulators pace their lines at 115200 baud by default (drivers/sim/line.py), as benchmarks and the demo
# want; the suite runs unpaced (in this process and the simulator processes it starts) to stay fast, and
# tests/drivers/test_line_pacing.py turns pacing on where it is the subject.
os.environ.setdefault("TABLECTL_SIM_PACING", "off")

# Speed is measured by bench/, never asserted by a test (CONTRIBUTING.md): hypothesis's per-example deadline is a
# timed assertion, and on a loaded 2-core machine it failed examples whose code was right
# (test_any_sequence_of_device_events_keeps_the_status_consistent at load 11). A test's own @settings still wins.
settings.register_profile("tablectl", deadline=None)
settings.load_profile("tablectl")

# The longest modules run first (measured with --durations under `dev.py test`'s two xdist workers: each kill -9
# recovery test 36-49 s, the floor's and the link's end-to-end runs 19-27 s). Left for the end of the collection order,
# one of them started last keeps one worker busy after the other is done; run first, the short tests fill in around
# them. Only the order changes: every test is still independent of every other.
LONG_FIRST = (
    "tests/e2e/test_kill9_recovery.py",
    "tests/floor/test_floor_e2e.py",
    "tests/link/test_linked_tables.py",
    "tests/e2e/test_quiet_logs.py",
    "tests/e2e/test_bench_smoke.py",
    "tests/link/test_link_e2e.py",
    "tests/mqtt/test_publisher.py",
)


def _by_directory(arg: str) -> tuple[str, ...]:
    return Path(arg.split("::", 1)[0]).absolute().parts


def pytest_configure(config: pytest.Config) -> None:
    # pytest 9.1 loses a directory's conftest fixtures when the paths it is given leave that directory and come back
    # (`tests/floor/a.py tests/test_x.py tests/floor/b.py`: "fixture 'floor_dsn' not found" for b; pytest-dev/pytest
    # #14964, #14971, a regression of 9.1's #14004; the whole suite, given as `tests`, never met it). Paths of one
    # directory next to each other keep them; the tests run in the order pytest_collection_modifyitems gives anyway.
    config.args[:] = sorted(config.args, key=_by_directory)
    # A run started in the background by a script (no job control) inherits SIGINT ignored, and so would every child
    # it starts: the Ctrl-C tests' commands then never see their SIGINT (tests/test_sigint_default.py). Python's own
    # handler here makes each exec'd child start with SIGINT at its default, as a shell's foreground command does.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return LONG_FIRST.index(path) if path in LONG_FIRST else len(LONG_FIRST)

    items.sort(key=rank)  # stable: the order within each module, and of all the others, is kept


def campaign_requested(config: pytest.Config) -> bool:
    return "campaign" in str(config.getoption("-m") or "")


@pytest.fixture
def campaign(request: pytest.FixtureRequest) -> bool:
    """True when the run asked for the full campaigns (`pytest -m campaign`). A test marked `campaign` (millions of
    hands, hundreds of kill -9 restarts) runs its bounded version otherwise, so the suite stays within CI's 15
    minutes on two cores; `-m campaign` selects those tests alone and runs each in full."""
    return campaign_requested(request.config)


@pytest.fixture(scope="session")
def mosquitto() -> Iterator[Mosquitto]:
    binary = find_mosquitto()
    if binary is None:
        pytest.fail(
            "mosquitto is not installed; run the tests with `python3 dev.py test`, which installs it "
            "(or: sudo apt-get install mosquitto mosquitto-clients)",
            pytrace=False,
        )
    # The servers and temp dirs an earlier run left when it was killed together with its watchdog.
    for line in sweep_stale():
        print(f"leash: swept {line}", file=sys.stderr)
    broker = Mosquitto.leashed(binary)  # port None: a taken one is replaced
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def subscribe(mosquitto: Mosquitto) -> Iterator[Subscribe]:
    """Factory: `subscribe("prefix/#")` returns a Subscriber whose subscription is already acknowledged."""
    made: list[Subscriber] = []

    def make(*topics: str) -> Subscriber:
        sub = Subscriber(mosquitto.host, mosquitto.port, list(topics))
        made.append(sub)
        sub.wait_subscribed()
        return sub

    yield make
    for sub in made:
        sub.close()


@pytest.fixture
def unique_id() -> str:
    """A fresh id for table ids and topic prefixes, so retained messages never leak between tests."""
    return fresh_id()


# The retained topics on the suite's broker as the last guarded test left them (one broker per xdist worker).
_SEEN: dict[str, bytes] = {}


@pytest.fixture(autouse=True)
def shared_broker_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that leaves a retained topic on the suite's shared broker without an id from `unique_id` or
    fresh_id() in it (a fixed table id or prefix, such as configs/demo.toml's tablectl/demo-ms-1): the next test of
    the worker to run the same table would read its status, meters and anchor as its own, and a fresh journal behind
    that anchor is taken for a rollback. Autouse, so it is set up first and checks after every other teardown."""
    yield
    if "mosquitto" not in request.fixturenames:
        return
    broker: Mosquitto = request.getfixturevalue("mosquitto")
    now = retained_topics(broker.host, broker.port)
    changed = {t: p for t, p in now.items() if _SEEN.get(t) != p}
    _SEEN.clear()
    _SEEN.update(now)
    fixed = unregistered(changed, ISSUED)
    if fixed:
        pytest.fail(
            f"{request.node.nodeid} (or a fixture it uses) left retained topics on the suite's shared broker under a "
            "fixed table id or prefix, which another test of the worker may use too (its retained anchor then reads "
            "as a rollback): take the table id or prefix from the `unique_id` fixture or tests.broker.fresh_id():\n"
            + "\n".join(fixed[:20]),
            pytrace=False,
        )
