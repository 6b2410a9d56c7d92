"""The `tablectl` command line: controller.cli.main and one module per verb.

structlog is imported here first, with `rich` hidden from it. structlog.dev and structlog.tracebacks import rich
whenever it is installed (the test extras install it, as import-linter needs it; a table's install has none) to
render exceptions at a terminal. That was 50 ms of CPU and 4 MB of every `tablectl run` start in a development
checkout, for a renderer the daemon, logging JSON to journald, never uses: hidden, the checkout starts as an
install does and its console tracebacks are structlog's plain ones, as an install's are. Anything else in the
process that imports rich still gets it; a process that imported structlog before (a test run) is left alone.
"""

import sys

if "structlog" not in sys.modules and "rich" not in sys.modules:
    sys.modules["rich"] = None  # type: ignore[assignment]  # what `import rich` reads as "not installed"
    try:
        import structlog  # noqa: F401  # the point: structlog.dev settles on no rich now
    finally:
        del sys.modules["rich"]
