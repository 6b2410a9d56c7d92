"""`tablectl rules` credits a test with a subsection only where it asserts it (docs/rules.md): its name, parametrized
table or docstring say what it checks, its `assert`s, assertion helpers and `pytest.raises` check it. A citation in a
comment or in input the test never checks credits nothing: 605a.4(c) was credited to five tests (kill9, the
simulators, the tablet console, rollback, the contract) that only mentioned it so. The trees are real files in a
temporary checkout, read as the verb reads this one."""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
from pathlib import Path

from controller.cli.rules import trace
from controller.cli.rules_reach import credits

# Built, not written out, so that a search for a subsection finds its real tests (this file's credit nothing).
SOFTWARE, METER, EXPOSED = "605a" + ".4(c)", "605a" + ".7(a)(1)", "683a" + ".13(d)"
TESTS = f'''
import pytest


def test_in_a_comment_only() -> None:
    # {SOFTWARE}: the start's check of the code comes first
    assert 1 + 1 == 2


def test_in_input_it_never_checks() -> None:
    line = {{"type": "journal.anchored", "rule": "{SOFTWARE}"}}
    assert 1 + 1 == 2  # {METER}, beside an assert that checks something else


def test_in_an_assert() -> None:
    event = {{"rule": "{SOFTWARE}"}}
    assert event["rule"] == "{SOFTWARE}"


def test_in_a_value_the_assert_uses() -> None:
    expected = ["{METER}"]
    assert [e for e in expected] == expected


def test_in_its_docstring() -> None:
    """{EXPOSED}: what the test says it checks."""
    assert True


def test_in_an_assertion_helper_and_a_raises() -> None:
    assert_rule({{"rule": "{EXPOSED}"}}, "{EXPOSED}")
    with pytest.raises(ValueError, match="{METER}"):
        raise ValueError("{METER}")


def assert_rule(event: dict[str, str], rule: str) -> None:
    assert event["rule"] == rule
'''


def test_a_mention_credits_nothing_an_assertion_does(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mentions.py").write_text(textwrap.dedent(TESTS), encoding="utf-8")
    found = credits(tmp_path / "tests", tmp_path)
    named = {cite: sorted(t.split("::")[1] for t in tests) for cite, tests in found.items()}
    assert named == {
        SOFTWARE: ["test_in_an_assert"],
        METER: ["test_in_a_value_the_assert_uses", "test_in_an_assertion_helper_and_a_raises"],
        EXPOSED: ["test_in_an_assertion_helper_and_a_raises", "test_in_its_docstring"],
    }


def test_the_software_check_is_credited_to_the_tests_that_check_it_and_only_those() -> None:
    row = next(r for r in trace("605a") if r.cite == SOFTWARE)
    mentions = ("test_kill9_recovery", "test_sim_devices", "test_console_tablet", "test_rollback", "test_contract_e2e")
    assert [t for t in row.tests if any(f"/{m}.py::" in t for m in mentions)] == []
    # The release's tests check the digest and the verdict; the table's own test, asserting the row, credits nothing.
    assert row.tests and all(t.startswith("tests/release/") for t in row.tests), row.tests


def test_no_test_of_the_suite_is_credited_for_a_citation_only_its_comments_make(tmp_path: Path) -> None:
    """The guard over the real suite: with every comment inside the tests' bodies gone, each test keeps every credit
    it had. A parametrized table's comments stay (each row of it is checked), and so do the module's tables'."""
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "tests").rglob("*.py")):
        copy = tmp_path / path.relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8")
        copy.write_text(_without_body_comments(text) if path.name.startswith("test_") else text, encoding="utf-8")
    assert credits(tmp_path / "tests", tmp_path) == credits(root / "tests", root)


def _without_body_comments(text: str) -> str:
    """The module with each test's own comments blanked, from the `def` line to its end (not its decorators)."""
    body: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
            body.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines = text.splitlines(keepends=True)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        row, col = tok.start
        if tok.type == tokenize.COMMENT and row in body:
            lines[row - 1] = lines[row - 1][:col] + "\n"
    return "".join(lines)


TABLE_TEST = f'''
from controller.cli.rules import trace


def test_the_table_lists_it() -> None:
    """{EXPOSED}: the row is there."""
    assert [r.cite for r in trace("683a") if r.cite == "{EXPOSED}"] == ["{EXPOSED}"]
'''
ROUND_TEST = f'''
def test_the_round_is_void() -> None:
    assert "{EXPOSED}" == "{EXPOSED}"
'''


def test_a_test_of_the_table_itself_credits_nothing(tmp_path: Path) -> None:
    """A test that checks the table names subsections as the rows it expects, not as rules it proves: credited, it would
    be the last test of a row whose real tests are gone, and the table would not say so."""
    for name, text in (("test_table.py", TABLE_TEST), ("test_round.py", ROUND_TEST)):
        (tmp_path / "tests").mkdir(exist_ok=True)
        (tmp_path / "tests" / name).write_text(textwrap.dedent(text), encoding="utf-8")
    assert credits(tmp_path / "tests", tmp_path) == {
        EXPOSED: {"tests/test_round.py::test_the_round_is_void": frozenset()}
    }
    (tmp_path / "tests" / "test_round.py").unlink()
    assert credits(tmp_path / "tests", tmp_path) == {}
    real = {t for row in trace("683a") + trace("605a") + trace("603a") for t in row.tests}
    assert {t for t in real if t.startswith(("tests/games/test_traceability.py", "tests/cli/test_rules_"))} == set()
