"""`tablectl rules` credits a test with the citations in the helper definitions it imports from tests/, shown "via"
the helper's file (docs/rules.md): when 18669f0 moved play_round out of tests/journal/test_archive.py into
archive_rounds.py, three archive tests stopped being credited with the round's start and its wager. The trees are real
files in a temporary checkout, read by the verb as it reads this one (`--source`)."""

from __future__ import annotations

import json
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cli.main import main as tablectl
from controller.cli.rules import trace
from controller.cli.rules_reach import credits

# The subsections these tests use as data, built rather than written out, so that a search for a subsection finds its
# real tests (this file imports the table: its tests credit nothing, controller/cli/rules_reach.py).
EXPOSED, SHUFFLE, WRONG_COUNT, FACE_UP = ("683a" + sub for sub in (".13(d)", ".5(a)", ".13(c)", ".13(a)"))
START, WAGER = "655a" + ".5(a)", "655a" + ".7(a)"
# A helper that cites EXPOSED in a builder and SHUFFLE in a definition no test uses.
HELPER = f"""
def exposed_round() -> str:
    return "{EXPOSED}"


def unused() -> str:
    return "{SHUFFLE}"
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    (root / "controller").mkdir(exist_ok=True)  # the verb's mark of a checkout; no code here cites anything
    return root


def test_a_test_using_a_citing_helper_is_credited_via_it_and_its_neighbour_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        tmp_path,
        {
            "tests/rounds/builders.py": HELPER,
            "tests/rounds/conftest.py": f"""
                import pytest

                @pytest.fixture
                def voided() -> str:
                    return "{WRONG_COUNT}"
            """,
            "tests/rounds/test_voids.py": f"""
                from tests.rounds.builders import exposed_round

                def test_uses_the_builder() -> None:
                    assert exposed_round()

                def test_imports_nothing_it_uses() -> None:
                    assert True

                def test_names_it_itself() -> None:
                    assert exposed_round() == "{EXPOSED}"

                def test_a_conftest_fixture_credits_nothing(voided: str) -> None:
                    assert voided
            """,
            "tests/rounds/orphan.py": f'RULE = "{FACE_UP}"  # a helper no test imports\n',
        },
    )
    assert tablectl(["rules", "--chapter", "683a", "--source", str(tmp_path), "--json"]) == 1  # no code: PROBLEMs
    rows = {r["cite"]: r for r in json.loads(capsys.readouterr().out)}
    voids = "tests/rounds/test_voids.py"
    assert rows[EXPOSED]["tests"] == [f"{voids}::test_names_it_itself", f"{voids}::test_uses_the_builder"]
    # Named in its own file, the test is credited there; only through the builder, via the builder's file.
    assert rows[EXPOSED]["via"] == {f"{voids}::test_uses_the_builder": ["tests/rounds/builders.py"]}
    # The builder's unused definition, the fixture pytest hands in and the helper nobody imports credit nothing.
    assert rows[SHUFFLE]["tests"] == rows[WRONG_COUNT]["tests"] == rows[FACE_UP]["tests"] == []
    assert tablectl(["rules", "--chapter", "683a", "--source", str(tmp_path)]) == 1
    table = capsys.readouterr().out
    assert f"`{voids}::test_uses_the_builder` via `tests/rounds/builders.py`" in table
    assert f"`{voids}::test_names_it_itself`<br>" in table  # no "via" for its own file


# Every way a test module binds the builder, and how the test then reaches it.
FORMS = {
    "from tests.rounds.builders import exposed_round": "exposed_round()",
    "from tests.rounds.builders import exposed_round as built": "built()",
    "from .builders import exposed_round": "exposed_round()",
    "from tests.rounds.builders import *": "exposed_round()",
    "from tests.rounds import builders": "builders.exposed_round()",
    "import tests.rounds.builders as builders": "builders.exposed_round()",
    "import tests.rounds.builders": "tests.rounds.builders.exposed_round()",
}


@settings(max_examples=40, deadline=None)
@given(form=st.sampled_from(sorted(FORMS)), uses=st.booleans(), other=st.sampled_from(["unused()", "len('x')"]))
def test_every_import_form_credits_a_test_exactly_when_it_uses_the_builder(form: str, uses: bool, other: str) -> None:
    # Not using it: the same reach to the builder's other definition (or, for `as built`, to a name nothing binds).
    call = FORMS[form] if uses else FORMS[form].replace("exposed_round", "unused").replace("built", "unused")
    with tempfile.TemporaryDirectory() as tmp:
        root = write(
            Path(tmp),
            {
                "tests/rounds/builders.py": HELPER,
                "tests/rounds/test_x.py": f"{form}\n\ndef test_it() -> None:\n    assert {call}, {other}\n",
            },
        )
        found = credits(root / "tests", root)
    got = found.get(EXPOSED, {})
    assert got == ({"tests/rounds/test_x.py::test_it": frozenset({"tests/rounds/builders.py"})} if uses else {})


@settings(max_examples=60, deadline=None)
@given(
    links=st.lists(st.integers(min_value=0, max_value=4), min_size=5, max_size=5),
    defines=st.sets(st.integers(min_value=0, max_value=4), max_size=2),
)
def test_re_exports_are_followed_and_a_cycle_of_them_ends(links: list[int], defines: set[int]) -> None:
    """Five helpers; helper i defines the builder or imports it from helper links[i] (itself, or a cycle, possibly).
    The test imports it from helper 0: it is credited via the helper the chain reaches, and nothing if it loops."""
    files = {
        f"tests/h/helper{i}.py": f'def build() -> str:\n    return "{EXPOSED}"  # in helper{i}\n'
        if i in defines
        else f"from tests.h.helper{links[i]} import build\n"
        for i in range(5)
    }
    files["tests/h/test_chain.py"] = "from tests.h.helper0 import build\n\ndef test_it() -> None:\n    build()\n"
    seen, at = [], 0
    while at not in defines and at not in seen:
        seen.append(at)
        at = links[at]
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), files)
        found = credits(root / "tests", root)
    expected = {"tests/h/test_chain.py::test_it": frozenset({f"tests/h/helper{at}.py"})} if at in defines else {}
    assert found.get(EXPOSED, {}) == expected


def test_the_archive_tests_are_credited_through_archive_rounds_again() -> None:
    """The three tests of `tablectl journal archive` that play rounds through archive_rounds.play_round (the round's
    start and its wager cited in its events) lost their credit when it left test_archive.py (18669f0)."""
    rows = {r.cite: r for r in trace("655a")}
    archive = "tests/journal/test_archive.py::"
    for cite in (START, WAGER):
        via = {t.removeprefix(archive): v for t, v in rows[cite].via.items() if t.startswith(archive)}
        assert via == {
            name: ["tests/journal/archive_rounds.py"]
            for name in (
                "test_beside_a_writer_committing_between_and_during_the_steps",
                "test_never_the_round_in_progress_an_unended_round_or_unpublished_rows",
                "test_the_daemon_opens_an_archived_journal_and_an_archived_anchor_is_behind_it",
            )
        }


@pytest.mark.parametrize(
    "form, call",
    [
        ("from tests.rounds.conftest import Harness", "Harness().wager()"),
        ("from .conftest import Harness", "Harness().wager()"),
        ("from tests.rounds import conftest", "conftest.Harness().wager()"),
        ("import tests.rounds.conftest as harness", "harness.Harness().wager()"),
    ],
)
def test_a_conftest_imported_by_name_credits_nothing(form: str, call: str) -> None:
    """A directory's harness serves every test of it: a builder there citing the wager rule would credit tests that
    check nothing of it (the engine's conftest table credited seven tests with 655a.7(d), five of them about other
    things)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = write(
            Path(tmp),
            {
                "tests/rounds/conftest.py": f'class Harness:\n    def wager(self) -> str:\n        return "{WAGER}"\n',
                "tests/rounds/test_x.py": f"{form}\n\ndef test_it() -> None:\n    assert {call}\n",
            },
        )
        assert credits(root / "tests", root).get(WAGER, {}) == {}
