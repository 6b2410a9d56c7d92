"""People at different seats acting at the same time, each on their own device: a player's steps one after another,
the players at once (controller.people.floor). What a step does is decided before it is queued, so a seeded run's
draws do not depend on which person the event loop runs first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

# One thing a person does on a device (chips on a spot, a key at a terminal), decided when made, done when awaited.
Step = Callable[[], Awaitable[None]]


async def at_once(people: Iterable[Iterable[Step]], beat: Callable[[], Awaitable[None]]) -> None:
    """Each person's steps in order, `beat` before each, all the people at once. The first to fail stops the others
    (a TaskGroup) and is raised as itself, as when they acted one after another."""

    async def one_after_another(steps: Iterable[Step]) -> None:
        for step in steps:
            await beat()
            await step()

    try:
        async with asyncio.TaskGroup() as group:
            for steps in people:
                group.create_task(one_after_another(steps))
    except BaseExceptionGroup as failed:
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from None
        raise
