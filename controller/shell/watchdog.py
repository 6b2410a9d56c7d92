"""Under systemd (Type=notify): READY=1 once the table is open, a STATUS= line an operator can read,
WATCHDOG=1 only while the table is healthy, STOPPING=1 on the way out. Before READY=1, while the journal file is
checked after a crash, EXTEND_TIMEOUT_USEC= as long as the check makes progress (`journal_check_notices`).

Healthy means the engine loop steps a `Tick` within the ping period: the tick is queued behind every input
already waiting, so its step proves that inputs are being stepped and that their journal commits finish
(the journal is written in the loop, before the next input is taken), and that no required task of the task
supervisor (publisher, command listener, tick: controller/shell/tasks.py) is down. A broker outage is not unhealthy:
the table keeps playing and journals, and the publisher catches up later. When unhealthy we say why (log
and STATUS) and stop pinging, so that systemd restarts us after WatchdogSec; if the loop recovers before
then, pinging resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
from collections.abc import Callable, Mapping

import structlog

from controller.engine.inputs import Tick
from controller.engine.state import Phase
from controller.shell.sdnotify import SdNotify, watchdog_interval
from controller.shell.service import Clock, TableService, utc_now
from controller.store.check_watch import EVERY, CheckProgress, Report

log = structlog.get_logger("tablectl.systemd")

STATUS_REFRESH = 5.0  # seconds: a STATUS line reflects the broker's state at most this late
STATUS_MIN_INTERVAL = 0.5  # seconds between STATUS lines while events stream in (a fast table)
# Each EXTEND_TIMEOUT_USEC= asks systemd for this much start time from when it is sent (sd_notify(3), systemd >= 236).
# Six of the check's report periods (check_watch.EVERY), so a report made late by a loaded machine or a slow stretch
# of disk does not end the start; bounded, because no extension is sent while the check makes no progress, and a
# check stuck on a disk that stopped answering must still meet the start timeout within this long (unbounded, the
# table would hang in "activating" for good). The last one, as the check ends, covers the rest of the start (the
# broker's retained anchor is waited for 3 s at most).
EXTEND_S = 6 * EVERY


class SystemdSupervisor:
    """Talks to systemd for one running table; `run()` is a task beside the service, `stopping()` is called
    by the runner as it shuts down."""

    def __init__(
        self,
        service: TableService,
        notifier: SdNotify,
        *,
        watchdog: float | None = None,
        broker_connected: Callable[[], bool] | None = None,
        tasks_down: Callable[[], Mapping[str, str]] | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.service = service
        self.notifier = notifier
        # sd_watchdog_enabled(3) advises pinging at half the timeout, so one late ping is not fatal.
        self.period = watchdog / 2 if watchdog else None
        self._broker_connected = broker_connected
        self._tasks_down = tasks_down or dict
        self._clock = clock
        self._first_round = service.state.rounds_played
        self._unhealthy: str | None = None
        self._last_status = ""

    @classmethod
    def from_environment(
        cls,
        service: TableService,
        *,
        broker_connected: Callable[[], bool] | None = None,
        tasks_down: Callable[[], Mapping[str, str]] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> SystemdSupervisor | None:
        """The supervisor when systemd started us with a notification socket, else None."""
        env = os.environ if environ is None else environ
        notifier = SdNotify.from_environment(env)
        if notifier is None:
            return None
        watchdog = watchdog_interval(env)
        if watchdog is not None:
            # systemd's watchdog kills with SIGABRT: dump every thread's stack to the journal first, so the
            # restart comes with where the table was stuck.
            faulthandler.enable()
        log.info("running under systemd", notify_socket=notifier.address, watchdog_seconds=watchdog)
        return cls(service, notifier, watchdog=watchdog, broker_connected=broker_connected, tasks_down=tasks_down)

    # -- what systemd shows ------------------------------------------------------------------------

    def status_line(self) -> str:
        """One line for `systemctl status`: phase (and why blocked), rounds, broker, health."""
        state = self.service.state
        phase = str(state.phase)
        if state.phase is Phase.BLOCKED and state.block_reason:
            phase = f"blocked: {state.block_reason}"
        elif state.closing:
            phase = f"{phase}, closing after this round"
        played = state.rounds_played
        parts = [
            f"{self.service.config.table_id} {phase}",
            f"round {played} ({played - self._first_round} since start)",
        ]
        if self._broker_connected is not None:
            parts.append(
                "broker connected" if self._broker_connected() else "broker unreachable, journaling to publish later"
            )
        line = "; ".join(parts)
        return f"UNHEALTHY ({self._unhealthy}); {line}" if self._unhealthy else line

    def _send_status(self, **extra: str | int) -> None:
        line = self.status_line()
        if extra or line != self._last_status:
            self.notifier.send(**extra, STATUS=line)
            self._last_status = line

    def stopping(self) -> None:
        self.notifier.send(STOPPING=1, STATUS=f"stopping: {self.status_line()}")

    # -- the tasks --------------------------------------------------------------------------------

    async def run(self) -> None:
        await self.service.ready.wait()
        self._send_status(READY=1)
        log.info("told systemd the table is ready", status=self._last_status)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._statuses(), name="systemd-status")
                if self.period is not None:
                    tasks.create_task(self._watchdog(self.period), name="systemd-watchdog")
        finally:
            self.notifier.close()

    async def _statuses(self) -> None:
        events = self.service.subscribe("systemd-status", "lossy")  # lossy: only a wake-up; the line reads the state
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STATUS_REFRESH):
                        await events.get()
                while not events.empty():
                    events.get_nowait()
                before = self._last_status
                self._send_status()
                if self._last_status != before:
                    await asyncio.sleep(STATUS_MIN_INTERVAL)
        finally:
            # A restarted task subscribes again: the queue left behind would fill for the rest of the run.
            self.service.unsubscribe(events)

    async def _watchdog(self, period: float) -> None:
        loop = asyncio.get_running_loop()
        pending: asyncio.Task[object] | None = None
        queued_at = 0.0
        try:
            while True:
                started = loop.time()
                if pending is None:
                    pending = asyncio.create_task(self.service.submit_and_wait(Tick(self._clock())))
                    queued_at = started
                done, _ = await asyncio.wait({pending}, timeout=period)
                took = loop.time() - queued_at
                if pending not in done:
                    # Not queued again: one tick waiting is the question; more would only pile up.
                    self._sick(
                        f"the engine loop has not stepped a tick queued {took:.1f} s ago "
                        f"(limit {period:g} s): an input's step or its journal commit is stuck"
                    )
                    continue
                finished, pending = pending, None
                error = None if finished.cancelled() else finished.exception()
                down = self._tasks_down()
                if error is not None:
                    self._sick(f"the engine loop failed to step a tick: {error!r}")
                elif down:
                    # A required task (publisher, command listener, tick) is down: not healthy until it runs again;
                    # if it does not within WatchdogSec, systemd restarts the daemon (docs/supervision.md).
                    self._sick("required task(s) down: " + "; ".join(f"{n} ({why})" for n, why in sorted(down.items())))
                elif took > period:
                    # The whole event loop was blocked (a journal commit waiting on a lock or a dying disk):
                    # the tick got through in the end, but not in time.
                    self._sick(f"the engine loop took {took:.1f} s to step a tick (limit {period:g} s)")
                else:
                    self._well()
                wake = max(started + period, loop.time())
                await asyncio.sleep(wake - loop.time())
                stalled = loop.time() - wake
                if stalled > period:
                    # Nothing ran, pings included: a synchronous call held the whole event loop (a journal commit
                    # waiting on a lock or a slow disk). Past WatchdogSec systemd's SIGABRT dumps the stacks.
                    log.warning(
                        "watchdog: the event loop was blocked, no watchdog pings meanwhile",
                        blocked_seconds=round(stalled, 1),
                        watchdog_seconds=2 * period,
                    )
        finally:
            if pending is not None:
                pending.cancel()

    def _sick(self, why: str) -> None:
        if self._unhealthy is None:
            log.error(
                "watchdog: the table is not healthy, no more watchdog pings: systemd restarts the service "
                "unless it recovers",
                reason=why,
                watchdog_seconds=2 * (self.period or 0),
            )
        self._unhealthy = why
        self._send_status()

    def _well(self) -> None:
        if self._unhealthy is not None:
            log.warning(
                "watchdog: the engine loop is stepping inputs again, watchdog pings resume", was=self._unhealthy
            )
            self._unhealthy = None
        self._send_status(WATCHDOG=1)


def journal_check_notices(notifier: SdNotify) -> Report:
    """What the daemon tells systemd while its journal file is checked at start (controller.store.check_watch)."""

    def notice(progress: CheckProgress) -> None:
        if progress.moving:
            notifier.send(EXTEND_TIMEOUT_USEC=round(EXTEND_S * 1_000_000), STATUS=progress.status())
        else:  # no extension: a check that stopped reading meets the start timeout as it would have
            notifier.send(STATUS=progress.status())

    return notice
