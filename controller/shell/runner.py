"""Running a table: the service with its journal, publisher, console and signal handling.

`tablectl run` drives the configured devices; `tablectl demo` drives simulators and adds the simulated
people as companions. Both stop the same way: the first Ctrl-C closes the table once the round in
progress is complete, a second Ctrl-C or SIGTERM stops at once (the journal keeps what happened).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, NoReturn, TextIO

import structlog

from controller.config.table import TableConfig
from controller.core.events import DomainEvent
from controller.engine import recovery
from controller.engine.context import BonusDraws
from controller.engine.inputs import CloseTable
from controller.engine.state import Phase
from controller.mqtt.anchor import read_retained_anchor
from controller.mqtt.birth import software_check
from controller.shell import journal_lock
from controller.shell.configured import begin_devices, build_devices, default_journal_path, playable
from controller.shell.configured import journal_path as configured_journal
from controller.shell.inbox import EarlyStart
from controller.shell.leftovers import StartLeftovers
from controller.shell.noise import quiet_connection_noise
from controller.shell.sdnotify import SdNotify
from controller.shell.service import TableService
from controller.shell.software import operator_message
from controller.shell.start_signals import StartSignals
from controller.shell.supervised import PUBLISHER, SupervisedTable
from controller.shell.watchdog import SystemdSupervisor, journal_check_notices
from controller.shell.writer import HUNG_COMMIT_S, STOP_BUDGET_S
from controller.store import check_watch
from controller.store.failure import StorageError
from controller.store.journal import Journal
from controller.store.schema import JournalError, JournalRefused
from drivers.interfaces import Device
from drivers.tasks import ended_after_cancel

log = structlog.get_logger("tablectl")
# A task still running this long after its cancel at the stop swallowed it, and is cancelled again.
STOP_AGAIN_S = 1.0
# The stop at once waits for its `table.stopped` to be journaled (after the commit in flight) while the journal's disk
# makes progress, up to STOP_BUDGET_S for both, and gives up after this long without any (controller/shell/writer.py),
# then exits with STOP_UNWRITTEN: a disk that hangs would otherwise hold the stop until systemd's SIGKILL
# (TimeoutStopSec=20, systemd/tablectl.service), which says nothing of why.
STOP_WRITE_S = HUNG_COMMIT_S
# The exit status of a stop whose `table.stopped` could not be written because the journal's disk hangs.
STOP_UNWRITTEN = 3

# Where they were before controller.shell.configured: the tests, demo and tools import them from here.
__all__ = ["begin_devices", "build_devices", "default_journal_path", "playable", "run_table"]

Companions = Callable[[TableService], list[Coroutine[Any, Any, None]]]


async def run_table(
    config: TableConfig,
    devices: Mapping[str, Device],
    *,
    broker: str | None = None,
    journal_path: Path | None = None,
    out: TextIO | None = None,
    companions: Companions = lambda _: [],
    draws: BonusDraws | None = None,
    begun: tuple[EarlyStart, StartLeftovers] | None = None,
    start: StartSignals | None = None,
) -> int:
    """Run until the table is closed (or stopped); returns the number of rounds started. A storage failure stops
    the table cleanly (devices stopped, the backlog offered to the broker, status "offline" with the reason) and
    is then raised: StorageError, whose message is the one line to show. `begun`: the devices were started already
    (begin_devices), as `tablectl run` does before it loads this module; `start`, its signals (the demo has none)."""
    start = start or StartSignals()
    journal = await _journal_or_let_go(configured_journal(config, journal_path), config, devices, begun, start)
    quiet_connection_noise(asyncio.get_running_loop())
    early, leftovers = begun if begun is not None else begin_devices(devices)
    table = await _restored(config, devices, journal, broker, draws, early, start)
    service, publisher, tasks = table.service, table.publisher, table.tasks
    first_round = service.state.rounds_played
    # systemd Type=notify: READY=1, STATUS=, WATCHDOG=1 while healthy (None outside systemd).
    systemd = SystemdSupervisor.from_environment(
        service, broker_connected=lambda: publisher.connected, tasks_down=lambda: tasks.down(required_only=True)
    )
    specs = table.specs(out, companions(service), systemd)
    service_task = asyncio.create_task(service.run(), name="service")
    supervised = asyncio.create_task(tasks.run(specs), name="tasks")
    watches = asyncio.create_task(table.watch_devices(), name="device-watches")
    let_go = asyncio.create_task(leftovers.let_go(service.ready), name="start-leftovers")
    stop = _stop_on_signals(service, service_task, start)
    failure: StorageError | None = None
    try:
        await asyncio.wait((service_task, supervised), return_when=asyncio.FIRST_COMPLETED)
        failure = _storage_failure(service_task, supervised)
    finally:
        if systemd is not None:
            systemd.stopping()
        await _signals_done(service, service_task, stop)
        watches.cancel()
        let_go.cancel()
        service_task.cancel()
        tasks.cancel(*(n for n in tasks.running() if n != PUBLISHER))
        await service.stop_devices()
        table.meters_at_close()
        # The publisher gets its chance to deliver the backlog before the process goes.
        with contextlib.suppress(Exception):
            await publisher.close(drain_timeout=5.0, reason=None if failure is None else f"stopped: {failure}")
        supervised.cancel()
        await ended_after_cancel([service_task, watches, let_go, *tasks.alive(), supervised], again_after=STOP_AGAIN_S)
        failure = failure or _storage_failure(service_task, supervised)
        if failure is None and service.closed.is_set():
            await _archive_at_close(table)
        await _close_journal(journal, service)
    if failure is not None:
        log.error("table stopped: its journal failed", error=str(failure), cause=failure.cause)
        raise failure
    return service.state.rounds_played - first_round


async def _restored(
    config: TableConfig,
    devices: Mapping[str, Device],
    journal: Journal,
    broker: str | None,
    draws: BonusDraws | None,
    early: EarlyStart,
    start: StartSignals,
) -> SupervisedTable:
    """The table on its restored state, read while the devices come up (begin_devices)."""
    try:
        # The journal is held against the anchor the broker retains as well as its own anchor file (bounded wait).
        start.reached("reading the retained anchor")
        remote = await read_retained_anchor(config.mqtt, config.table_id, broker)
        start.reached("restoring the table")
        return SupervisedTable(config, devices, journal, broker, remote_anchor=remote, draws=draws, early=early)
    except BaseException:
        await early.abandon(devices.values())
        raise


async def _journal_or_let_go(
    path: Path,
    config: TableConfig,
    devices: Mapping[str, Device],
    begun: tuple[EarlyStart, StartLeftovers] | None,
    start: StartSignals,
) -> Journal:
    """The software check said, then the journal; the devices begun already are let go again when it cannot be
    opened."""
    _report_software(config)
    start.reached("opening the journal")
    try:
        return _open_journal(path, config.table_id)
    except BaseException:
        if begun is not None:
            await begun[0].abandon(devices.values())
        raise


def _open_journal(path: Path, table_id: str) -> Journal:
    notifier = SdNotify.from_environment()
    # The check of the file after a crash must not run into systemd's start timeout (controller.store.check_watch).
    told = contextlib.nullcontext() if notifier is None else check_watch.reporting(journal_check_notices(notifier))
    try:
        journal_lock.hold_journal(path)  # held already by `run`; the demo's tables take it here
        with told:
            return Journal(path, table_id, boot_id=uuid.uuid4().hex)
    except journal_lock.JournalBusy as err:
        raise JournalRefused(str(err)) from None
    except JournalError as err:  # a newer schema, not a journal: say so and stop before any device is commanded
        log.error("journal unusable", path=str(path), error=str(err))
        raise JournalRefused(str(err)) from None
    finally:
        if notifier is not None:
            notifier.close()


async def _close_journal(journal: Journal, service: TableService) -> None:
    """Closed, and its lock let go: a table of the demo may be run again in this process (tests, `demo --floor`). A
    note made while the table stopped (a task's failure) is committed first, rather than refused by a closed journal."""
    if await service.notes_settled(HUNG_COMMIT_S):
        journal.close()  # under the journal's lock, on the loop: only once no commit holds it
    else:  # the process ends with the file as a crash leaves it (WAL and all), readable at the next start
        log.error("the journal was not closed: a commit did not return", journal=str(journal.path))
    journal_lock.let_go(journal.path)


async def _archive_at_close(table: SupervisedTable) -> None:
    """[journal] keep_rounds: the table closed and the publisher's backlog was acknowledged, the quietest moment
    there is (controller/shell/archiver.py). A failure is journaled (published at the next start) and logged."""
    if table.archiver is None:
        return
    from controller.shell.archiver import TASK as ARCHIVE_TASK  # loaded with the archiver ([journal] keep_rounds)
    from controller.shell.archiver import ArchiveFailed

    try:
        await table.archiver.at_close()
    except ArchiveFailed as err:
        payload = {
            "task": ARCHIVE_TASK,
            "error": str(err)[:500],
            "then": "retried at the next start",
            "restart_in_seconds": None,
            "escalated": False,
            "failures_in_window": 1,
            "required": False,
        }
        # Awaited: the journal is closed right after (a note still on the writer thread would meet it closed).
        with contextlib.suppress(Exception):  # logged by the service (controller/shell/notes.py)
            await table.service.note([DomainEvent("task.failed", None, payload)])


def _report_software(config: TableConfig) -> None:
    """The check of the installed code (605a.4(c)), said before the table opens; the service journals it."""
    check = software_check(config)
    j = check.judgement
    if check.refused:
        log.error(
            "software check failed: the table stays closed", verdict=j.verdict, problem=j.problem, digest=j.digest
        )
        print(operator_message(check), file=sys.stderr)
    elif j.verdict != "verified":
        log.warning("software not verified", verdict=j.verdict, problem=j.problem, digest=j.digest)
    else:
        log.info("software verified", digest=j.digest, files=len(j.found), key=j.key)


def _storage_failure(*tasks: asyncio.Task[None]) -> StorageError | None:
    """The StorageError that ended one of `tasks` (the service's, or the supervisor's group), if one did; any other
    exception of the service's is raised (a bug: its traceback is the report)."""
    for task in tasks:
        if not task.done() or task.cancelled():
            continue
        err = task.exception()
        if isinstance(err, BaseExceptionGroup):
            match, _ = err.split(StorageError)
            err = match.exceptions[0] if match is not None else err
        if isinstance(err, StorageError):
            return err
        if err is not None and task.get_name() == "service":
            raise err
    return None


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _StopNow:
    """What asked the table to stop at once (SIGTERM, a second interrupt), once something did."""

    by: str | None = None


async def _signals_done(service: TableService, task: asyncio.Task[None], stop: _StopNow) -> None:
    """The handlers removed; a stop at once they asked for journaled, before the publisher's drain offers it. A
    journal that does not answer within STOP_WRITE_S (its disk hangs) ends the process here (_abandon)."""
    _restore_signals()
    asked = stop.by is not None and task.cancelled() and not service.closed.is_set()
    if asked and not await _journal_stop(service, str(stop.by)):
        _abandon(service, stop)


async def _journal_stop(service: TableService, by: str) -> bool:
    """`table.stopped` as the journal's last event: the service has ended (cancelled), so nothing follows it, and the
    file tells this stop from a crash. Best effort: a journal that refuses it (a full disk) is logged and the stop goes
    on, the file then reading as a crash; the publisher's drain that follows is bounded (5 s, under the unit's
    TimeoutStopSec). A journal that does not answer (a write that never returns) is given up on after STOP_WRITE_S
    without progress, a slow one after STOP_BUDGET_S: False."""
    service.ending = True  # a note the command listener makes meanwhile (subscribing late) must not follow it
    try:
        journaled = await service.note_within([recovery.stopped(service.state, by)], STOP_WRITE_S)
    except Exception as err:
        log.error("the stop could not be journaled: the journal reads as a crash", by=by, error=str(err))
        return True
    if journaled is None:
        return False
    ev = journaled[-1]
    log.warning("table stopped at once", by=by, seq=ev.seq, phase=ev.payload["phase"], policy=ev.payload["policy"])
    return True


def _abandon(service: TableService, stop: _StopNow) -> NoReturn:
    """The journal's disk hangs: nothing more can be written or read from it (every use waits on the writer thread
    stuck inside it: the devices' stop, which notes their status, the publisher's drain, the journal's close, and the
    interpreter's exit, which joins that thread), so the process ends now, with STOP_UNWRITTEN, saying what was not
    written. Its devices see the port close, as after a crash; the journal reads as one."""
    journal = str(service.journal.path)
    log.error(
        "the stop could not be journaled: the journal's disk does not answer; exiting without it",
        by=stop.by,
        unwritten="table.stopped",
        journal=journal,
        still_s=STOP_WRITE_S,
        budget_s=STOP_BUDGET_S,
        exit_status=STOP_UNWRITTEN,
    )
    print(
        f"tablectl: the stop ({stop.by}) was not journaled: journal {journal} did not answer within {STOP_WRITE_S:g} s "
        f"(no progress; or not done within the stop's {STOP_BUDGET_S:g} s), so `table.stopped` and anything in flight "
        "are not in it and it reads as a crash; check the disk (dmesg) before starting the table again",
        file=sys.stderr,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(STOP_UNWRITTEN)


def _stop_on_signals(service: TableService, task: asyncio.Task[None], start: StartSignals) -> _StopNow:
    """First Ctrl-C: close the table once the round in progress is complete. Again, or SIGTERM: stop now (the
    returned record says by what). A signal of the start not acted on yet (`start`) is acted on as if it came now."""
    loop = asyncio.get_running_loop()
    stop = _StopNow()
    presses = 0

    def interrupt() -> None:
        nonlocal presses
        presses += 1
        if presses == 1 and service.state.phase is not Phase.CLOSED:  # a table that never opened has no round
            log.info("closing the table after the round in progress; press Ctrl-C again to stop now")
            service.submit(CloseTable(by="interrupt"))
        else:
            stop.by = stop.by or ("second interrupt" if presses > 1 else "interrupt")
            _stop_now(task, lambda: service.settling)

    def terminate() -> None:
        stop.by = stop.by or "SIGTERM"
        _stop_now(task, lambda: service.settling)

    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread (tests)
        loop.add_signal_handler(signal.SIGINT, interrupt)
        loop.add_signal_handler(signal.SIGTERM, terminate)
    start.reached("handlers installed")
    start.hand_over(lambda by: interrupt() if by == signal.SIGINT.name else terminate())
    return stop


def _stop_now(task: asyncio.Task[None], settling: Callable[[], bool] = lambda: False) -> None:
    """Cancel the service, and again each STOP_AGAIN_S while it runs on: a cancel that lands as an awaited wait
    completes can be swallowed (drivers.tasks.cancel_and_wait), and the table would then ignore SIGTERM until
    systemd killed it after TimeoutStopSec. Not while it waits out a slow commit: that wait is bounded by itself."""
    loop = asyncio.get_running_loop()

    def again() -> None:
        if not task.done() and settling():
            loop.call_later(STOP_AGAIN_S, again)
        elif not task.done():
            log.warning("the table went on after its stop; cancelling it again", task=task.get_name())
            task.cancel()
            loop.call_later(STOP_AGAIN_S, again)

    task.cancel()
    loop.call_later(STOP_AGAIN_S, again)


def _restore_signals() -> None:
    loop = asyncio.get_running_loop()
    for sig in _SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(sig)
