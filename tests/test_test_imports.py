"""A test module is run, not imported: one test file importing another (tests/journal/test_early_start.py took the
SUBACK-holding proxy from tests/mqtt/test_anchor_late_suback.py) runs the other's module-level code and fixtures in
its process, and ties the two files so that renaming or trimming one breaks the other. Shared helpers live in helper
modules (conftest.py or a module not named test_*) that both import."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# Imports of one test module by another that predate this check, each still to move to a helper module. The list only
# shrinks: a new one fails the test, and so does moving one without taking it off the list.
KNOWN = {
    ("tests/systemd/test_service_units.py", "tests.systemd.test_unit"),
}


def _imported(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_no_test_module_imports_another_test_module() -> None:
    found = {
        (str(path.relative_to(TESTS.parent)), name)
        for path in sorted(TESTS.rglob("*.py"))
        for name in _imported(ast.parse(path.read_text(encoding="utf-8")))
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
    }
    new = [f"{path} imports {name}: move what it needs to a helper module both import" for path, name in found - KNOWN]
    assert not sorted(new), "\n".join(sorted(new))
    assert not KNOWN - found, f"moved, so take them off KNOWN: {sorted(KNOWN - found)}"
