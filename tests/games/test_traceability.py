"""The traceability table (`tablectl rules`, docs/rules.md): every subsection of the five chapters' published texts is
listed once, enforced or recorded with the code that does it and a test that names it, or left to people with why.
A subsection listed as enforced without a test naming it fails here."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from controller.cli.main import main as tablectl
from controller.cli.rules import trace
from controller.games.registry import REGISTRY
from controller.games.trace import CITATION, Subsection

CHAPTERS = ("643a", "655a", "683a", "679a", "684a")
# The sections of each published text (shared/regulations): all thirteen of the whole chapters; of 679a and 684a only
# those available, as their specs' PUBLISHED say.
SECTIONS = {
    "643a": range(1, 14),
    "655a": range(1, 14),
    "683a": range(1, 14),
    "679a": (1, 7, 9),
    "684a": (1, 10),
}
# Sections without lettered subsections: the definitions.
UNLETTERED = {"643a.1", "655a.1", "683a.1", "679a.1", "684a.1"}
# The last letter of each lettered section of the whole chapters, typed in from the texts.
LAST_LETTER = {
    "643a": dict(zip(range(2, 14), "gcegdkhfggg" + "g", strict=True)),
    "655a": dict(zip(range(2, 14), "fcegdehfgjfg", strict=True)),
    "683a": dict(zip(range(2, 14), "dcegeegffjfg", strict=True)),
    "679a": {7: "d", 9: "g"},
    "684a": {10: "f"},
}


def subsections(chapter: str) -> tuple[Subsection, ...]:
    return tuple(REGISTRY[chapter].subsections)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_published_subsection_is_listed_once(chapter: str) -> None:
    cites = [s.cite for s in subsections(chapter)]
    assert len(set(cites)) == len(cites), "a subsection listed twice"
    letters: dict[int, list[str]] = defaultdict(list)
    for cite in cites:
        m = CITATION.fullmatch(cite)
        assert m is not None and m["chapter"] == chapter
        if cite in UNLETTERED:
            assert m["sub"] == ""
            continue
        sub = re.fullmatch(r"\(([a-z])\)", m["sub"])
        assert sub is not None, f"{cite}: one subsection letter per row"
        letters[int(m["section"])].append(sub.group(1))
    sections = {int(m["section"]) for c in cites if (m := CITATION.fullmatch(c))}
    assert sorted(sections) == list(SECTIONS[chapter])
    for section, last in LAST_LETTER[chapter].items():
        expected = [chr(c) for c in range(ord("a"), ord(last) + 1)]
        assert letters[section] == expected, f"{chapter}.{section}: {letters[section]} instead of (a) to ({last})"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_enforced_subsection_without_code_and_a_test_that_names_it(chapter: str) -> None:
    rows = trace(chapter)
    assert [r.problem for r in rows if r.problem] == []
    assert all(r.why for r in rows if r.by == "people")
    assert len(rows) == len(subsections(chapter))


def test_the_table_is_read_from_the_code() -> None:
    """683a.13(d): the engine's step (asking for ".13(d)" in the common numbering) and the chapter's own settlement
    both cite it; the live test and the settlement tests name it."""
    row = next(r for r in trace("683a") if r.cite == "683a.13(d)")
    assert "controller/engine/irregularities.py:community_exposed" in row.code
    assert "controller/games/cajun_stud/settle.py:_settle_exposed" in row.code
    assert (
        "tests/e2e/test_procedures_e2e.py::test_683a_13_d_live_settles_the_optional_wagers_and_the_record_recomputes"
        in (row.tests)
    )
    stub = next(r for r in trace("683a") if r.cite == "683a.8(e)")
    assert "controller/engine/context.py:StepContext.stub_rules" in stub.code  # "8(f)" resolved by 683a's spec


def test_tablectl_rules_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["rules", "--chapter", "683a"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# 683a Cajun Stud: traceability")
    assert "| 683a.2(c) | drop box and tip box | people |" in text and "PROBLEM" not in text
    assert tablectl(["rules", "--chapter", "684a", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["cite"] for r in rows][:2] == ["684a.1", "684a.10(a)"]
    assert all(r["tests"] for r in rows)
    assert tablectl(["rules", "--chapter", "999a"]) == 2
    assert "no chapter '999a'" in capsys.readouterr().err
    assert tablectl(["rules", "--chapter", "605a"]) == 2
    assert "no chapter '605a' (cited by the code, but no game's chapter" in capsys.readouterr().err
