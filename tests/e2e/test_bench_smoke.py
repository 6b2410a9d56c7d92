"""The daemon benchmarks still run: each bench script, at its smallest, prints its figures against its baseline.

Only that they run and report is checked, never how fast anything was (the figures come from full runs, see
README "Benchmarks"). Each starts its own mosquitto and uses real ptys, SQLite files and subprocesses.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from controller.config.table import load_config
from controller.shell.runner import playable
from tests.broker import Mosquitto, fresh_id

pytestmark = pytest.mark.e2e

BENCH = Path(__file__).resolve().parents[2] / "bench"
FAILURE_BOUND = 180  # seconds; failure bound only


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def _bench(script: str, *args: str) -> str:
    try:
        proc = subprocess.run(
            [sys.executable, str(BENCH / script), *args],
            capture_output=True,
            text=True,
            timeout=FAILURE_BOUND,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as late:
        # What it printed until then says where it was (a bench that explains its failure does so on stderr).
        pytest.fail(
            f"{script} still running after {FAILURE_BOUND} s:\n--- stdout\n{_text(late.stdout)}\n"
            f"--- stderr (tail)\n{_text(late.stderr)[-12000:]}",
            pytrace=False,
        )
    assert proc.returncode == 0, (
        f"{script} exited with {proc.returncode}:\n--- stdout\n{proc.stdout}\n--- stderr (tail)\n{proc.stderr[-12000:]}"
    )
    return proc.stdout


def test_the_seven_seat_table_is_a_playable_643a_config() -> None:
    config = load_config(BENCH / "seven-seats.toml")
    assert config.game.chapter == "643a" and config.game.seats == 7  # 643a.2(a): at most seven
    assert playable(config) is None


def test_table_rounds_reports_a_rate_against_the_engine(tmp_path: Path) -> None:
    out = _bench("table_rounds.py", "--rounds", "12", "--warmup", "2", "--journal-dir", str(tmp_path))
    assert re.search(r"pure engine on the same \d+ inputs \(baseline\): [\d,]+ rounds/s", out), out
    assert re.search(r"table: [\d.]+ rounds/s \([\d.]+x the pure engine; (meets|misses) the target of 50\)", out), out
    assert re.search(r"per round: \d+ events, \d+ journal commits and \d+ outbox marks", out), out


@pytest.mark.parametrize(
    ("where", "ran"),
    [("--sims-process", "in a process of their own"), ("--no-sims-process", "in this process, on the controller's")],
)
def test_event_latency_reports_percentiles_against_bare_paho(tmp_path: Path, where: str, ran: str) -> None:
    out = _bench("event_latency.py", "--rounds", "2", "--pace", "0", "--journal-dir", str(tmp_path), where)
    assert f"the simulated devices and people ran {ran}" in out, out
    assert re.search(r"offered -> written to the socket .*: p50 [\d.]+ ms", out), out
    assert re.search(r"bare paho publish -> receive: p50 [\d.]+ ms, p99 [\d.]+ ms", out), out
    assert re.search(r"baseline, a bare publish round trip plus a bare commit: p50 [\d.]+ ms, p99 [\d.]+ ms", out), out
    assert re.search(r"engine step -> subscriber, every event: p50 [\d.]+ ms, p99 [\d.]+ ms", out), out
    assert re.search(r"ratio to the baseline: p50 [\d.]+x, p99 [\d.]+x; p99 (meets|misses) the target", out), out


# footprint.py's idle at the smokes: the daemon's and the bare baseline's idle CPU each read over it (1 s before: 2 s of
# each run, 4 of the TLS pair's).
IDLE_S = "0.25"


@pytest.fixture(scope="module")
def footprint_plain_and_tls() -> str:
    """One `footprint.py --tls` run: it plays the plain broker's run first and prints its whole report, then the TLS
    run's and the comparison, so the plain figures' test and the TLS test read the same output (a plain run alone
    repeated the first half of it: 4 s). Idle IDLE_S: the idle figures are printed, their values not asserted."""
    return _bench("footprint.py", "--rounds", "2", "--idle-seconds", IDLE_S, "--tls")


# The module fixture above is made once only with its two tests on one worker.
@pytest.mark.xdist_group("bench_footprint")
def test_footprint_reports_rss_and_idle_cpu(footprint_plain_and_tls: str) -> None:
    out = footprint_plain_and_tls.split("-- broker: TLS")[0]  # the plain broker's run, as `footprint.py` alone prints
    assert "-- broker: plain" in out, out
    assert re.search(r"2 rounds played", out), out
    assert re.search(r"peak \(VmHWM\) [\d.]+ MB = [\d.]+x the baseline; (meets|misses) the target of 45 MB", out), out
    assert re.search(r"baseline: a bare aiomqtt process publishing the same \d+ events .*: [\d.]+ ms of CPU", out), out
    alone = r"the controller alone .* CPU per seven-seat round [\d.]+ ms \([\d.]+x the baseline; (meets|misses) the"
    assert re.search(alone, out), out
    bound = r"the journal: [\d.]+ durable commits a round .*: \d+ us of wall time, .* bound the table to \d+ rounds/s"
    assert re.search(bound, out), out
    assert re.search(rf"idle with the table open, over {IDLE_S} s: [\d.]+ % of a core .*a smoke run", out), out


@pytest.mark.xdist_group("bench_footprint")
def test_footprint_over_tls_reports_beside_the_plain_run(footprint_plain_and_tls: str) -> None:
    """--tls: the same run on the shipped broker config (TLS, the table's own user), its figures beside the plain's."""
    out = footprint_plain_and_tls
    assert out.count("2 rounds played") == 2, out
    assert "-- broker: TLS (mqtts://" in out, out
    for figure in ("RSS with the table open", "peak RSS \\(VmHWM\\)", "CPU a seven-seat round"):
        assert re.search(figure + r": plain [\d.]+ \S+, TLS [\d.]+ \S+ \([+-][\d.]+, [\d.]+x\)", out), out


def test_footprint_does_not_block_a_daemon_that_writes_to_stdout(
    tmp_path: Path, mosquitto: Mosquitto, monkeypatch: pytest.MonkeyPatch
) -> None:
    """footprint.measure() gave the daemon a stdout pipe nobody read: asyncio buffers 128 KiB of it and the pipe 64
    KiB, so a daemon that wrote more blocked on its write, the table never opened, and the bench gave up after 60 s.
    The daemon here (under a wrap, as bench/resident.py runs it) writes 1 MiB to stdout first, then plays."""
    monkeypatch.syspath_prepend(str(BENCH))
    footprint, procfs = importlib.import_module("footprint"), importlib.import_module("procfs")
    # On the suite's shared broker the bench's table takes a registered id (tests/conftest.py's guard).
    benchlib = importlib.import_module("benchlib")
    seven = benchlib.seven_seat_config
    monkeypatch.setattr(benchlib, "seven_seat_config", lambda table_id=None: seven(table_id or fresh_id("bench-")))
    noisy = (
        procfs.WRAP_ARGS
        + "import signal\n"
        + "signal.signal(signal.SIGUSR1, signal.SIG_IGN); signal.signal(signal.SIGUSR2, signal.SIG_IGN)\n"
        + "sys.stdout.write('x' * 1048576); sys.stdout.flush()\n"
        + procfs.WRAP_RUN
    )
    broker = importlib.import_module("brokers").Broker(mosquitto.url)
    config = seven(fresh_id("bench-"))
    figures = asyncio.run(footprint.measure(broker, config, 2, 0.2, 1, tmp_path, tmp_path / "out", noisy))
    assert figures.rounds == 2 and figures.rss_open > 0


def test_footprint_timeline_says_what_a_round_waits_on_and_which_steps_commit(tmp_path: Path) -> None:
    out = _bench("footprint.py", "--rounds", "3", "--idle-seconds", IDLE_S, "--timeline", str(tmp_path / "t.json"))
    wall = r"timeline of a round \(the loop thread, 2 rounds\): wall [\d.]+ ms = waiting for inputs [\d.]+ ms \+ in"
    assert re.search(wall, out), out
    assert re.search(r"awaiting commits [\d.]+ ms, device commands on the wire [\d.]+ ms", out), out
    own = r"the controller's own time bounds the table to \d+ rounds/s \(its commits alone \d+\)"
    assert re.search(own, out), out
    wire = r"the busiest line \(\w+\) carries [\d.]+ ms a round .* the wire alone bounds the table to \d+"
    assert re.search(wire, out), out
    assert re.search(r"the outside \(this process: .*\) [\d.]+ ms of CPU a round, busy \d+ %", out), out
    # Every round locks the seven stations: their confirmations are stepped, so some batch of them commits.
    assert re.search(r"\n    (\dx )?LockAcknowledged@wager_station +[\d.]+\n", out), out
    assert re.search(r"\n    LockSeat( \+ \w+)*|\n    7x LockSeat", out), out


def test_footprint_wakeups_count_the_loops_turns_and_callbacks_by_source(tmp_path: Path) -> None:
    out = _bench("footprint.py", "--rounds", "3", "--idle-seconds", IDLE_S, "--wakeups", str(tmp_path / "w.json"))
    head = r"event loop a round over 2 rounds \(thread CPU, census overhead included\): (\d+) turns [\d.]+ ms, of which"
    found = re.search(head + r" select [\d.]+ ms and (\d+) callbacks [\d.]+ ms", out)
    assert found, out
    assert int(found[1]) > 0 and int(found[2]) >= int(found[1]) // 2, out
    # Tasks by their coroutines and names: the service's steps, the publisher (a supervised task); a reader callback by
    # its function: the devices' serial ports, which parse and deliver each frame there (no reader task to wake).
    assert re.search(r"\n +[\d.]+ +[\d.]+  task TableService\.run \[service\] \(", out), out
    assert re.search(r"\n +[\d.]+ +[\d.]+  task TaskSupervisor\._keep \[publisher\] \(", out), out
    assert re.search(r"\n +[\d.]+ +[\d.]+  callback serial_asyncio_fast\.SerialTransport\._read_ready\n", out), out
    assert "_read_loop" not in out, out


def test_the_timeline_puts_each_wait_on_the_input_that_ended_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """round_timeline.read on a log as the daemon's wrap writes it: a gap goes to the next batch's first input, split
    at the input's arrival into the outside's part and the controller's (queued); a batch's commit to its inputs'
    kinds, the wait after the last batch to neither; an input that arrived during the batch before counts as held."""
    monkeypatch.syspath_prepend(str(BENCH))
    timeline = importlib.import_module("round_timeline")
    log = {
        "wall": [10.0, 10.1],
        "batches": [
            [10.01, 10.02, ["WagerDetected@wager_station"], 1, True, 10.008],
            [10.05, 10.06, ["LockAcknowledged@wager_station"] * 7, 1, True, 10.015],  # held 5 ms, queued 30
            [10.07, 10.08, ["Tick"], 0, False, None],  # not stamped: the outside's
        ],
        # submitted, ended, and on the writer thread: append began, appended, anchor synced
        "commits": [[10.011, 10.015, 10.0115, 10.013, 10.014], [10.051, 10.053, 10.0515, 10.052, 10.0525]],
        "commands": [[10.016, 10.019, ["UnlockSeat"], 0.0005], [10.055, 10.058, ["DispenseStack"], 0.001]],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(log))
    t = timeline.read(path)
    assert t.idle_before == {
        "WagerDetected@wager_station": pytest.approx(0.008),
        "LockAcknowledged@wager_station": 0.0,
        "Tick": pytest.approx(0.01),
        "(after the last batch)": pytest.approx(0.02),
    }
    assert t.queued == pytest.approx(0.032) and t.held == pytest.approx(0.005)
    assert t.held_on_acks == pytest.approx(0.003)  # of its 5 ms, while the batch before awaited UnlockSeat's ACK
    assert t.commits_by == {"WagerDetected@wager_station": 1, "7x LockAcknowledged@wager_station": 1}
    assert t.busy == pytest.approx(0.03) and t.commit_wait == pytest.approx(0.006)
    assert t.command_line == pytest.approx(0.0015) and t.stepping == pytest.approx(0.018)
    assert t.own == pytest.approx(0.032 + 0.018 + 0.006)
    c = t.commit_stages
    assert (c.to_writer, c.append, c.anchor, c.to_loop, c.n) == pytest.approx((0.001, 0.002, 0.0015, 0.0015, 2))
    assert t.batch_sizes == {1: 2, 7: 1} and t.events == 2
    report = timeline.report(path, 2, {"shoe": (0.004, 0.006), "dealer_panel": (0.001, 0.001)})
    assert "wall 50.0 ms = waiting for inputs 35.0 ms + in step batches 15.0 ms" in report, report
    assert "1.0 commits a round for 1.0 events" in report, report
    assert "the controller's own 28.0 (inputs queued for the loop 16.0, stepping 9.0, awaiting commits 3.0)" in report
    assert "the controller's own time bounds the table to 36 rounds/s (its commits alone 333)" in report, report
    assert "their frames' and ACKs' line time 0.8, the devices' answers and the host's read 2.3" in report, report
    assert "waited 2.5 ms for it to end (LockAcknowledged@wager_station 2.5), 1.5 ms of it while" in report, report
    # The busiest line carried 5 ms a round (2+3): 200 rounds/s; 333 if its directions overlapped.
    assert "the busiest line (shoe) carries 2.0 ms a round to its device and 3.0 ms from it" in report, report
    assert "the wire alone bounds the table to 200 rounds/s (333 if" in report, report


def test_the_profiled_daemon_exits_as_the_daemon_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """footprint.PROFILED runs `tablectl run` under cProfile: a daemon that fails (here: no such config) exits with
    its own status and message, not 0 (the wrapper swallowed SystemExit, and the bench went on)."""
    monkeypatch.syspath_prepend(str(BENCH))
    profiled = str(importlib.import_module("footprint").PROFILED)
    run = ["controller.cli", "run", "--config", str(tmp_path / "missing.toml")]
    bare = subprocess.run([sys.executable, "-m", *run], capture_output=True, text=True, check=False)
    wrapped = subprocess.run(
        [sys.executable, "-c", profiled, str(tmp_path / "prof"), *run], capture_output=True, text=True, check=False
    )
    assert bare.returncode == 2 and "cannot read config" in bare.stderr, bare.stderr
    assert (wrapped.returncode, wrapped.stderr) == (bare.returncode, bare.stderr)


def test_footprint_fails_with_the_daemons_status_and_stderr_when_it_fails_under_profile(tmp_path: Path) -> None:
    """--profile to a FILE that cannot be written: the daemon (under PROFILED) fails at its start, and the bench
    fails with its exit status and the end of its stderr (before: "exited with 0", or figures and no profile)."""
    out = tmp_path / "no-such-dir" / "prof"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "footprint.py"), "--rounds", "2", "--idle-seconds", "1", "--profile", str(out)],
        capture_output=True,
        text=True,
        timeout=FAILURE_BOUND,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "bench: the daemon exited with 1; the end of its stderr:" in proc.stderr, proc.stderr
    assert f"FileNotFoundError: [Errno 2] No such file or directory: '{out}'" in proc.stderr, proc.stderr
    assert "rounds played" not in proc.stdout, proc.stdout


# A child that says more on stderr than a pipe holds (64 KiB) before it is ready, as a daemon logging at debug, or a
# warning a round, does; then waits for its SIGTERM.
CHATTY = """
import signal, sys
sys.stderr.write("x" * 1_000_000 + "\\nthe last line before ready\\n")
sys.stderr.flush()
print("ready", flush=True)
signal.pause()
"""


async def test_a_spawned_process_that_fills_its_stderr_pipe_is_not_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """procfs.spawn (footprint's daemon and baselines, resident's, restart's) reads the child's stderr as it comes and
    keeps its end for procfs.exited: before, nothing read it until the child ended, so the child blocked on its write
    at 64 KiB, never said "ready", and the bench hung (or measured a stalled daemon)."""
    monkeypatch.syspath_prepend(str(BENCH))
    procfs = importlib.import_module("procfs")
    proc = await procfs.spawn(sys.executable, "-c", CHATTY)
    try:
        async with asyncio.timeout(20):  # failure bound only: a blocked child never gets ready
            await procfs.wait_ready(proc, "the chatty child")
            await procfs.stop(proc)
            tail = await procfs.stderr_tail(proc)
    finally:
        if proc.returncode is None:
            proc.kill()  # not waited for: with its stderr unread, Process.wait() waits for the pipe forever
    assert proc.returncode == -signal.SIGTERM
    assert tail == ("x" * 1_000_000 + "\nthe last line before ready\n")[-procfs.TAIL_BYTES :]  # the end, kept


async def test_the_end_of_a_failed_childs_stderr_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """procfs.exited fails the bench with the child's status (128 + 15 for SIGTERM) and the end of its stderr."""
    monkeypatch.syspath_prepend(str(BENCH))
    procfs = importlib.import_module("procfs")
    proc = await procfs.spawn(sys.executable, "-c", CHATTY)
    try:
        async with asyncio.timeout(20):  # failure bound only
            await procfs.wait_ready(proc, "the chatty child")
            await procfs.stop(proc)
            with pytest.raises(SystemExit) as ended:
                await procfs.exited(proc, "the chatty child")
    finally:
        if proc.returncode is None:
            proc.kill()
    assert ended.value.code == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    said = "x" * 1_000_000 + "\nthe last line before ready\n"
    assert err == f"bench: the chatty child exited with -15; the end of its stderr:\n{said[-2000:]}\n", err[-200:]


def test_resident_says_what_the_daemons_memory_is_made_of() -> None:
    out = _bench("resident.py", "--rounds", "2")
    assert re.search(r"baseline `python -c 'import controller.cli, controller.shell.runner'`: RSS [\d.]+ MB", out), out
    libraries = r"of which the libraries: `python -c 'import pydantic.main, aiomqtt, structlog'` \(no rich\) "
    assert re.search(libraries + r"[\d.]+ MB \([\d.]+x; a bare interpreter [\d.]+ MB\)", out), out
    assert re.search(r"the daemon after 2 rounds: RSS [\d.]+ MB \([\d.]+x the baseline\)", out), out
    assert re.search(r"malloc in use [\d.]+ MB \(SQLite's own [\d.]+ MB\)", out), out
    assert re.search(r"pydantic: \d+ models built \(.*TableConfig.*\), \d+ not built", out), out
    assert "TypeAdapters: controller.store.snapshot._ADAPTER at module level" in out, out


def test_lockout_reports_against_the_line_time_of_the_frames_sent() -> None:
    """Paced lines, protocols v3, v2 and v1, a line each and one multi-drop line (docs/protocol.md sections 10, 12,
    13: on the multi-drop line v3 is the GROUP lock with slot confirmations, v2 the broadcast lock)."""
    for args, version in (
        ((), 4),
        (("--protocol", "2", "--journal-first"), 2),
        (("--protocol", "1", "--bus"), 1),
        (("--protocol", "2", "--bus"), 2),
        (("--protocol", "3", "--bus"), 3),
        (("--bus", "--sims-process"), 4),
    ):
        out = _bench("lockout.py", "--trials", "3", "--stations", "3", *args)
        assert f"over paced 115200-baud lines, protocol v{version}" in out, out
        where = "in a process of their own" if "--sims-process" in args else "in this process"
        assert f"the simulators ran {where}" in out, out
        baseline = r"line time of the critical-path frames actually sent at 115200 baud \(baseline\): [\d.]+ ms"
        assert re.search(baseline, out), out
        assert "the lines carried other frames than the baseline names" not in out, out
        assert re.search(r"from the press reaching the controller: p50 [\d.]+ ms \([\d.]+x line time\)", out), out
        assert re.search(r"target p99 <= \d+ ms.*: (meets|misses)", out), out
        # Where the time went: the host's parts and the stations' (the simulators stamp when their answers left).
        parts = r"host [\d.]+ \+ lines and stations [\d.]+ \+ host's read -?[\d.]+ \+ host [\d.]+ ms"
        assert re.search(r"where it went \(medians\): every trial " + parts + r";\n  the slowest 1 % " + parts, out), (
            out
        )


def test_lockout_pinned_and_unpinned_side_by_side() -> None:
    """--pin alternate: every other 50 trials the controller's process keeps to one core and the simulators' to the
    other (every thread of each, as the OS reads the affinity back); both sets of figures are printed, each named."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("pinning needs two cores this process may use")
    out = _bench("lockout.py", "--trials", "100", "--stations", "3", "--sims-process", "--pin", "alternate")
    pinned = re.search(
        r"pinned the controller \(pid \d+, all (\d+) threads: the loop's, the journal writer's and asyncio's\) to CPU "
        r"(\d+), the simulators \(pid \d+, all \d+ threads\) to CPU (\d+)\n",
        out,
    )
    assert pinned is not None, out
    assert int(pinned[1]) >= 2 and pinned[2] != pinned[3], out
    label = f"pinned (controller on CPU {pinned[2]}, simulators on CPU {pinned[3]})"
    figures = r": 50 trials\nbytes the station lines carried .*\nfrom the press: p50 .*\n"
    figures += r"from the press reaching the controller: p50"
    for name in ("unpinned (either process on any core)", label):
        assert re.search("-- " + re.escape(name) + figures, out), out
    ratios = r"pinned over unpinned, from the press reaching the controller: p50 [\d.]+x, p99 [\d.]+x"
    assert re.search(ratios, out), out


def test_lockout_pin_needs_the_simulators_in_a_process_of_their_own() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "lockout.py"), "--trials", "1", "--pin", "on"],
        capture_output=True,
        text=True,
        timeout=FAILURE_BOUND,
        check=False,
    )
    assert proc.returncode == 2, proc
    assert "--pin needs --sims-process: the simulators in this process cannot have a core of their own" in proc.stderr


def test_growth_reports_lockout_and_journal_growth() -> None:
    # Two rounds a table shape for CPU a round (the first is the start's, the second measured): 20 took 35 s of 40.
    out = _bench("growth.py", "--rounds", "40", "--trials", "2", "--cpu-rounds", "2")
    assert "CPU per round, 2 rounds each at pace 0" in out, out
    for seats, optional in ((1, 0), (2, 0), (4, 0), (7, 0), (7, 1), (7, 2), (7, 3), (7, 4)):
        shape = rf"\n  {seats} seat\(s\), {optional} optional wager\(s\) a seat: [\d.]+ ms CPU a round \([\d.]+x\), "
        assert re.search(shape + r"[\d.]+ rounds/s\n", out), out
    # Measured in the protocol the drivers negotiate by default: v4 (v3's GROUP lock on the multi-drop line).
    assert re.search(r"7 station\(s\), one multi-drop line, v4: p99 [\d.]+ ms", out), out
    assert "the drivers' default protocol (v4;" in out, out
    assert re.search(r"\s+40 rounds: +[\d.]+ MB .* journal verify [\d.]+ s", out), out
    assert "100000 rounds, extrapolated linearly" in out


def test_bus_start_reports_v3_and_v4_against_v1_and_what_crossed_the_line() -> None:
    out = _bench("bus_start.py", "--trials", "1", "--stations", "3")
    assert "baseline: host kept to protocol 1: 3 stations online p50" in out
    assert re.search(r"return pair \d+ bytes .*: \d+ ACK v1, 3 identity v1\n", out), out
    assert re.search(r"host kept to protocol 3: .*, 3 identity v3\n", out), out
    # v4: the identities are the ANSWERs that acknowledge the identifies, no ACK on the return pair.
    assert re.search(r"default: protocol 4: .*return pair \d+ bytes \([\d.]+ ms\): 3 identity ANSWER v3\n", out), out
    # A round's reopening: one GROUP unlock (10 bytes) and a lock (10), three 2-byte confirmations each; after the
    # lock's window, each pair's proof (docs/protocol.md section 13): three 7-byte locks and their 7-byte REPLYs.
    assert re.search(
        r"default: protocol 4: opening .*a round's lock and unlock: host->stations 41 bytes, return pair 33", out
    ), out
    assert "protocol 3 over protocol 1: start to all online p50" in out
    assert "protocol 4 over protocol 3: start p50" in out


def test_bus_lock_in_window_reports_against_the_quiet_line() -> None:
    out = _bench("lock_in_window.py", "--trials", "2")
    assert re.search(r"baseline: lock on a quiet line: median [\d.]+ ms, .* bytes on the line 24\n", out), out
    # 48 bytes (the GROUP unlock's and the GROUP lock's) unless a stalled loop sent v2's broadcast lock: not asserted.
    assert re.search(r"lock pressed in the reopening's window: median [\d.]+ ms, .* bytes on the line \d+\n", out), out
    assert re.search(r"ratio in-window / quiet: [\d.]+", out), out


@pytest.fixture(scope="module")
def restart_plain_and_tls() -> str:
    """One `restart.py --tls` run: it times the plain broker's restarts first and prints their report, then the TLS
    run's and the comparison, so the plain figures' test and the TLS test read the same output (a plain run alone
    repeated the first half of it)."""
    return _bench("restart.py", "--trials", "1", "--history-rounds", "1", "--tls")


# The module fixture above is made once only with its two tests on one worker.
@pytest.mark.xdist_group("bench_restart")
def test_restart_reports_spawn_to_ready(restart_plain_and_tls: str) -> None:
    out = restart_plain_and_tls.split(", over TLS, ")[0]  # the plain broker's run, as `restart.py` alone prints
    assert re.search(r"spawn -> retained status \"online\": p50 [\d.]+ s", out), out
    assert re.search(r"spawn -> table.opened received: p50 [\d.]+ s", out), out
    assert re.search(
        r"baseline `python -c 'import controller.cli, controller.shell.runner'` to exit: "
        r"p50 [\d.]+ s, CPU p50 [\d.]+ s",
        out,
    ), out
    # Until the daemon speaks sd_notify the bench says so; once it does, the READY=1 figure is printed.
    assert re.search(r"spawn -> READY=1(: not sent by this build| on \$NOTIFY_SOCKET: p50 [\d.]+ s)", out), out


@pytest.mark.xdist_group("bench_restart")
def test_restart_over_tls_reports_ready_beside_the_plain_run(restart_plain_and_tls: str) -> None:
    out = restart_plain_and_tls
    assert "wager stations on a line each, over TLS, journal with 1 rounds" in out, out
    assert re.search(r"a line each: READY=1 p50: plain [\d.]+ ms, TLS [\d.]+ ms \([+-][\d.]+, [\d.]+x\)", out), out


def test_fault_campaign_prints_its_table_of_trials_and_losses() -> None:
    """The bounded run: one trial of each fault kind; the full campaign is `--trials N` (bench/fault_campaign.py). Two
    campaigns side by side, each on its broker and tables of its own, the kinds split so each has about half the
    faults' waits (a stopped daemon 3 s, a broker outage 3 s, a stalled broker 5 s): most of a trial is waiting."""
    halves = ("daemon_stop,broker_outage,storage", "kill9,broker_stall")
    runs = [
        subprocess.Popen(
            [sys.executable, str(BENCH / "fault_campaign.py"), "--trials", "1", "--kinds", kinds],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for kinds in halves
    ]
    ended: list[tuple[int, str, str]] = []
    try:
        for proc in runs:
            out, err = proc.communicate(timeout=FAILURE_BOUND)  # failure bound only
            ended.append((proc.returncode, out, err))
    finally:
        for proc in runs:
            if proc.returncode is None:  # a failure above: its leash stops its broker and daemons
                proc.kill()
                proc.wait()
    for status, out, err in ended:
        assert status == 0, f"fault_campaign.py exited with {status}:\n{out}\n--- stderr (tail)\n{err[-12000:]}"
        assert "result: nothing lost, nothing settled twice" in out, out
    out = "".join(out for _, out, _ in ended)
    for kind in ("kill9", "daemon_stop", "broker_outage", "broker_stall", "storage"):
        assert re.search(rf"^{kind}\s+1\s+\S+\s+\d+\s+0\s+0\s+0\s+\d+\s+ok$", out, re.M), out


def test_software_check_reports_the_verification_against_a_bare_sha256() -> None:
    out = _bench("software_check.py", "--repeat", "2")
    assert re.search(r"bare sha256 of the same bytes \(baseline\): +[\d.]+ ms", out), out
    assert re.search(r"verification \(verified\): +[\d.]+ ms", out), out
    assert re.search(r"ratio verification/bare sha256: [\d.]+x", out), out


def test_step_commit_reports_the_service_against_a_bare_commit(tmp_path: Path) -> None:
    out = _bench("step_commit.py", "--steps", "20", "--warmup", "2", "--journal-dir", str(tmp_path))
    assert re.search(r"baseline, a bare commit .*: CPU \d+ us, wall \d+ us", out), out
    assert re.search(r"service step \+ commit \(20 steps\): process CPU \d+ us \([\d.]+x the baseline\)", out), out


def test_publish_cpu_reports_the_publisher_against_bare_aiomqtt() -> None:
    out = _bench("publish_cpu.py", "--rounds", "2", "--block", "1", "--warmup", "1")
    assert re.search(r"baseline: bare aiomqtt publishing the same bodies, QoS 1: [\d.]+ ms of CPU a round", out), out
    assert re.search(r"EventPublisher: [\d.]+ ms of CPU a round \(.*\); [\d.]+x the baseline", out), out


def test_lock_handover_times_both_orders_alternately_against_the_old_one() -> None:
    out = _bench("lock_handover.py", "--rounds", "4")
    assert "(7 stations, seven-seats.toml, paced ptys, orders alternating per trial)" in out, out
    for order in (r"state after the locks \(the product\)", r"state first, locks in a task \(c83eab6, baseline\)"):
        # Alternating per trial: four rounds' "no more bets", two in each order.
        figures = r"first p50 \d+ us, p90 \d+ us; last p50 \d+ us, p90 \d+ us"
        assert re.search(rf"  {order}, 2 lock-outs: {figures}", out), out
    for what in ("first", "last"):
        assert re.search(rf"{what} frame p50, the product over the baseline: [\d.]+x", out), out
