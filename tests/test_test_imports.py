"""A test module is run, not imported: one test file importing another (tests/journal/test_early_start.py took the
SUBACK-holding proxy from tests/mqtt/test_anchor_late_suback.py) runs the other's module-level code and fixtures in
its process, and ties the two files so that renaming or trimming one breaks the other. Shared helpers live in helper
modules (conftest.py or a module not named test_*) that both import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# Imports of one test module by another that predate this check and still wait to move to a helper module: none are
# left. The set only shrinks: a new import fails the test, and so does one that has moved but is still listed.
KNOWN: set[tuple[str, str]] = set()


def _imported(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            # `from tests.floor import test_archive` imports the module by its last name.
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def _test_modules(source: str) -> set[str]:
    """The test modules (tests.<...>.test_*) this source imports."""
    return {
        name
        for name in _imported(ast.parse(source))
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
    }


WAYS = {
    "from tests.floor.test_archive import msg": {"tests.floor.test_archive"},
    "import tests.floor.test_archive": {"tests.floor.test_archive"},
    "from tests.floor import test_archive": {"tests.floor.test_archive"},
    "from tests.floor.archiving import msg, writer": set(),
    "from tests.floor.conftest import count": set(),
}


@pytest.mark.parametrize("source", list(WAYS))
def test_every_way_of_importing_a_test_module_is_seen(source: str) -> None:
    assert _test_modules(source) == WAYS[source]


def test_no_test_module_imports_another_test_module() -> None:
    found = {
        (str(path.relative_to(TESTS.parent)), name)
        for path in sorted(TESTS.rglob("*.py"))
        for name in _test_modules(path.read_text(encoding="utf-8"))
    }
    new = [f"{path} imports {name}: move what it needs to a helper module both import" for path, name in found - KNOWN]
    assert not sorted(new), "\n".join(sorted(new))
    assert not KNOWN - found, f"moved, so take them off KNOWN: {sorted(KNOWN - found)}"
