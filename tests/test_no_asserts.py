"""No `assert` in the project's packages: the table runs optimised (`PYTHONOPTIMIZE=2` in systemd/tablectl.service,
issue 19's memory), which strips every `assert`, so a check that guards money, meters or a device's session must be
an explicit one (controller.core.invariant: `present`, InvariantBroken and the `tilt:invariant` tilt of an engine
step; a driver's own errors and session reasons). tests/ and bench/ may assert: they never run optimised."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("controller", "drivers", "floor", "link", "leash")


def asserts(source: str) -> list[int]:
    """The line of each `assert` statement in `source`."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assert)]


def test_no_package_module_asserts() -> None:
    modules = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    assert len(modules) > 300 and ROOT / "controller" / "engine" / "round.py" in modules  # the packages were found
    found = [f"{p.relative_to(ROOT)}:{line}" for p in modules for line in asserts(p.read_text(encoding="utf-8"))]
    assert not found, f"an explicit check instead (it must hold under python -O too): {found}"


def test_the_check_sees_every_form_of_assert() -> None:
    """The check itself can fail: an assert at any depth, with a message or in parentheses, is found; the word in a
    string, a comment or a name is not."""
    source = """
def f(x):
    assert x
    if x:
        for y in x:
            assert (y, "a tuple is always true")
    class C:
        def g(self):
            assert self, "said"
    asserted = "assert x"  # assert
    return asserted
"""
    assert asserts(source) == [3, 6, 9]
