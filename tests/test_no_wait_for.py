"""No `asyncio.wait_for` in the project's packages. On Python 3.11 (the table PC's, and this machine's only Python)
it returns the inner result instead of raising when its task is cancelled in the loop turn the inner wait completes
(cpython#86296; 3.12 rewrote it), so a loop around it goes on after a stop: `tablectl link` ignored SIGTERM that way
(tests/link/test_cancel_race.py). `async with asyncio.timeout(...)` waits in the task itself and never swallows a
cancel. Read with ast: a comment or a string naming it does not count; an alias does."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("controller", "drivers", "floor", "link", "leash")


def wait_fors(source: str) -> list[int]:
    """The line of each `asyncio.wait_for` call or import of it in `source`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "wait_for":
            if isinstance(node.value, ast.Name) and node.value.id == "asyncio":
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("asyncio"):
            lines += [node.lineno for alias in node.names if alias.name == "wait_for"]
    return lines


def test_no_package_module_uses_asyncio_wait_for() -> None:
    modules = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    assert len(modules) > 300 and ROOT / "link" / "signs.py" in modules  # the packages were found
    found = [f"{p.relative_to(ROOT)}:{line}" for p in modules for line in wait_fors(p.read_text(encoding="utf-8"))]
    assert not found, f"`async with asyncio.timeout(seconds): await ...` instead (a cancel is never lost): {found}"


def test_the_check_sees_each_form() -> None:
    source = """
import asyncio
from asyncio import wait_for as wf
async def f(e, client):
    await asyncio.wait_for(e.wait(), 1)
    await client.wait_for(1)  # another object's method of the same name is not asyncio's
    said = "asyncio.wait_for"  # asyncio.wait_for
    return said
"""
    assert wait_fors(source) == [3, 5]
