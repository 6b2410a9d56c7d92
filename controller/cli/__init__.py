"""The `tablectl` command line: controller.cli.main and one module per verb.

structlog is imported here first, with `rich` hidden from it. structlog.dev and structlog.tracebacks import rich
whenever it is installed (the test extras install it, as import-linter needs it; a table's install has none) to
render exceptions at a terminal. That was 50 ms of CPU and 4 MB of every `tablectl run` start in a development
checkout, for a renderer the daemon, logging JSON to journald, never uses: hidden, the checkout starts as an
install does and its console tracebacks are structlog's plain ones, as an install's are. Anything else in the
process that imports rich still gets it; a process that imported structlog before (a test run) is left alone.

Run optimised (-OO, as systemd/tablectl.service runs the table), every class loses its docstring, and `dataclasses`
then writes one from `inspect.signature(cls)` for each of the ~190 dataclasses a table start defines: ~6 ms of its
CPU idle, 20 under load (issue 19: READY in 0.3 s), for text nobody reads (-OO dropped every other docstring).
Under -OO only, `dataclasses` is given an `inspect` whose `signature` declines, and a dataclass's __doc__ is its
bare name (tests/cli/test_dataclass_docs.py). The same measure as for `rich`: the process is otherwise untouched.
"""

import inspect
import sys
import types


class _NoSignatures(types.ModuleType):
    """`inspect` for `dataclasses` under -OO: the same module, but no signature to make a docstring of."""

    def __getattr__(self, name: str) -> object:
        return getattr(inspect, name)

    @staticmethod
    def signature(obj: object) -> inspect.Signature:
        raise ValueError("-OO: no docstrings, so none made of signatures")  # dataclasses then writes the bare name


if sys.flags.optimize >= 2:
    import dataclasses

    dataclasses.inspect = _NoSignatures("inspect")  # type: ignore[attr-defined]  # its module global, set once

if "structlog" not in sys.modules and "rich" not in sys.modules:
    sys.modules["rich"] = None  # type: ignore[assignment]  # what `import rich` reads as "not installed"
    try:
        import structlog  # noqa: F401  # the point: structlog.dev settles on no rich now
    finally:
        del sys.modules["rich"]
