"""What a verb of `tablectl` is: a module of controller.cli with `add_parser(sub)`, which adds its subparser,
and `main(args) -> int`, which carries it out and returns the exit status. A verb refuses what cannot be used
(a config, a file, an option) by raising UsageError; `tablectl` prints it as `tablectl: <what to fix>` and exits
with status 2 (controller.cli.main).

This module imports nothing, so that `tablectl` can list and dispatch verbs without importing any of them.
"""

from __future__ import annotations

import argparse
from typing import Protocol, TypeAlias

EXIT_USAGE = 2

# What `add_subparsers()` returns; quoted because the class is not subscriptable at run time.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """A config, file or option that cannot be used; the message says what to fix."""


class VerbModule(Protocol):
    def add_parser(self, sub: Subparsers) -> None: ...

    def main(self, args: argparse.Namespace) -> int: ...
