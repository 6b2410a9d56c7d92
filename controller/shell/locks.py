"""Locks before the commit (docs/recovery.md): the lock commands of a step batch that may leave while the journal
commits it, and the moment they are given to write their frames."""

from __future__ import annotations

import asyncio

from controller.core.events import DomainEvent
from controller.engine.commands import DeviceCommand, LockSeat, LockTerminal
from controller.shell.device_commands import device_for


async def lock_frames_out() -> None:
    """Let lock commands just started (CommandRunner.start: a task per device) write their frames before the step's
    state is encoded and the journal's writer thread starts its commit: the thread's Python work would otherwise hold
    the GIL while the frames wait. Two turns of the loop: in the first each device's task writes its frame (a link
    writes at once when nothing is outstanding, drivers/reference/link.py) or, on a shared line, joins the line's
    GROUP lock, whose frame the line writes in the second (drivers/reference/bus_commands.py)."""
    for _turn in range(2):
        await asyncio.sleep(0)


def hoist_locks(steps: list[tuple[list[DomainEvent], list[DeviceCommand]]]) -> list[DeviceCommand]:
    """Take out of the steps the lock commands that may leave before the journal holds the steps: a station's or a
    terminal's lock that is the first command for its seat in the batch (so nothing for that device overtakes it).
    A lock is safe to send early: it only takes the chance to wager away, it is idempotent, and the engine counts
    its confirmation only as an input stepped after this commit; a crash before the commit recovers to betting,
    which unlocks the stations again (docs/recovery.md)."""
    seen: set[str] = set()
    early: list[DeviceCommand] = []
    for _events, commands in steps:
        keep: list[DeviceCommand] = []
        for c in commands:
            target = device_for(c)
            if isinstance(c, LockSeat | LockTerminal) and target not in seen:
                early.append(c)
            else:
                keep.append(c)
            seen.add(target)
        commands[:] = keep
    return early
