"""Whether the bytecode an optimised interpreter loads is there (systemd/README.md, "Optimised bytecode").

Python keeps bytecode per optimisation level (`__pycache__/*.opt-2.pyc` under -OO) and `pip install` writes only the
plain level. systemd/tablectl.service runs the table optimised, and tablectl-floor.service and tablectl-link.service
the floor and the link, and, hardened, none can write bytecode: without the install's `compileall` every start compiles
every module it loads from source. `tablectl check-config`, `tablectl floor check-config` and `tablectl link
check-config` (the units' ExecStartPre=) say so, naming the fix, from the modules each has loaded itself (most of what
its service loads).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

COMPILE = (
    "python3 -X no_debug_ranges -OO -m compileall -q -j 0 -x '/(test|tests|idlelib|lib2to3)/' $(python3 -c "
    '\'import sysconfig as s; print(*{s.get_path(n) for n in ("stdlib", "purelib", "platlib")})\')'
)
_HEADER = 16  # magic, flags, source mtime, source size (importlib's pyc header)


def fresh(source: Path, cached: Path) -> bool:
    """Whether `cached` is bytecode the interpreter will take for `source`: there, stamped with the source's mtime
    and size (a hash-based pyc counts as fresh: its check is the interpreter's own)."""
    try:
        with cached.open("rb") as f:
            header = f.read(_HEADER)
        stat = source.stat()
    except OSError:
        return False
    if len(header) < _HEADER:
        return False
    if int.from_bytes(header[4:8], "little") != 0:
        return True
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def uncompiled(modules: Iterable[object]) -> list[str]:
    """The modules (by name) loaded from a source file whose bytecode for this interpreter's level is not fresh.
    sys.modules may hold other objects (typing.io is a class): they are passed over."""
    out: list[str] = []
    for module in modules:
        if not isinstance(module, ModuleType):
            continue
        spec = module.__spec__
        if spec is None or not spec.has_location or spec.origin is None or spec.cached is None:
            continue  # built in, frozen, or not from a file
        if spec.origin.endswith(".py") and not fresh(Path(spec.origin), Path(spec.cached)):
            out.append(spec.name)
    return sorted(out)


TABLE = "systemd/tablectl.service runs the table"


def missing_bytecode(
    level: int | None = None, modules: Iterable[object] | None = None, runs: str = TABLE
) -> tuple[str, str] | None:
    """The problem and its fix when this interpreter runs optimised (as the unit does: `runs` names it) and modules it
    loaded lack its bytecode, else None. Plain strings: the floor and the link print them without the table's
    config findings (pyproject.toml's layers keep them from its errors and games)."""
    level = sys.flags.optimize if level is None else level
    if level == 0:
        return None  # pip compiled the plain level, and an unhardened run writes what is missing itself
    missing = uncompiled(list(sys.modules.values()) if modules is None else modules)
    if not missing:
        return None
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    return (
        f"python runs optimised (PYTHONOPTIMIZE={level}, as {runs}) and {len(missing)} module(s) it loaded have no "
        f"bytecode for that level ({shown}): the hardened service cannot write it, so every start compiles them from "
        "source",
        f'compile it as the install does (systemd/README.md, "Optimised bytecode"): {COMPILE}',
    )


def bytecode_lines(runs: str) -> list[str]:
    """missing_bytecode as the floor's and the link's check-config print their problems: one line, its fix on it."""
    found = missing_bytecode(runs=runs)
    return [] if found is None else [f"warning: bytecode: {found[0]}; fix: {found[1]}"]
