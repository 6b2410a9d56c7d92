"""What a verb of `tablectl` is: a module of controller.cli with `add_parser(sub)`, which adds its subparser,
and `main(args) -> int`, which carries it out and returns the exit status. A verb refuses what cannot be used
(a config, a file, an option) by raising UsageError; `tablectl` prints it as `tablectl: <what to fix>` and exits
with status 2 (controller.cli.main). Anything else a verb raises is one line on stderr and status 1, never a
traceback (a journal whose disk failed: its message says the cause, the file and the fix).

This module imports nothing, so that `tablectl` can list and dispatch verbs without importing any of them.
"""

from __future__ import annotations

import argparse
from typing import Protocol, TypeAlias

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # Ctrl-C: a shell's status for a command SIGINT ended (128 + 2)
EXIT_FAILED = 1  # the verb could not do its work (a journal's disk failed, a file could not be read)

# What `add_subparsers()` returns; quoted because the class is not subscriptable at run time.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """A config, file or option that cannot be used; the message says what to fix."""


class VerbModule(Protocol):
    def add_parser(self, sub: Subparsers) -> None: ...

    def main(self, args: argparse.Namespace) -> int: ...
