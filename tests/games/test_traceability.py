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


# 605a as far as the text is available (shared/regulations/605a-...): 605a.1 in part, 605a.2 to (d)(3), 605a.4 to
# (d)(4), 605a.7(a)(1) to (a)(6), 605a.9 whole. (d) of 605a.2 and (a) of 605a.7 are split into their paragraphs, whose
# dispositions differ; 605a.4(d)'s are one row (all the certificate holder's internal controls).
EXPECTED_605A = [
    "605a.1",
    *(f"605a.2({x})" for x in ("a", "b", "c", "d)(1", "d)(2", "d)(3")),
    *(f"605a.4({x})" for x in "abcd"),
    *(f"605a.7(a)({n})" for n in range(1, 7)),
    *(f"605a.9({x})" for x in "abc"),
]


def test_605a_2_a_tablectl_rules_shows_the_605a_subsections_that_bear_on_a_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """605a is no game, but the Five Card Hand Bonus (643a.2(e), 655a.2(d)) and the progressives answer to it: its
    table lists what is available of it, every enforced row with code and a test, every other with why."""
    rows = trace("605a")
    assert [r.cite for r in rows] == EXPECTED_605A
    assert [r.problem for r in rows if r.problem] == [] and all(r.why for r in rows if r.by == "people")
    by = {r.cite: r for r in rows}
    assert "controller/engine/round.py:_own_seat" in by["605a.2(a)"].code
    assert "controller/progressive/codec.py:decode" in by["605a.7(a)(6)"].code
    assert [c for c, r in by.items() if r.by == "enforced"] == [
        "605a.1",
        "605a.2(a)",
        "605a.2(d)(1)",
        "605a.2(d)(2)",
        "605a.4(c)",
        *(f"605a.7(a)({n})" for n in range(1, 7)),
    ]
    assert tablectl(["rules", "--chapter", "605a"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# 605a Electronic Gaming Tables") and "PROBLEM" not in text
    assert "| 605a.9(b) | every five terminals count as one gaming table | people |" in text
    assert tablectl(["rules", "--chapter", "605a", "--json"]) == 0
    assert [r["cite"] for r in json.loads(capsys.readouterr().out)] == EXPECTED_605A
    assert tablectl(["rules", "--chapter", "605b"]) == 2
    assert "the chapters are 603a, 605a, 643a, 655a, 679a, 683a, 684a" in capsys.readouterr().err


# 603a as far as the text is available (shared/regulations/603a-...): 603a.15(a) to (g), cut off in (g); 603a.16(a)
# and (b), cut off in (b); 603a.17(a) to (d), cut off in (d). 603a.17(b) and (c) are one row each (the shoe's make).
EXPECTED_603A = [*(f"603a.15({x})" for x in "abcdefg"), "603a.16(a)", "603a.16(b)", *(f"603a.17({x})" for x in "abcd")]


def test_tablectl_rules_prints_the_603a_table_and_what_its_text_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    """603a is no game, but every game's deck answers to 603a.15: the deck of 52 cards, four suits of thirteen, is
    enforced with code and a test; the cards' and shoes' make and keeping are left to people with why."""
    rows = trace("603a")
    assert [r.cite for r in rows] == EXPECTED_603A
    assert [r.problem for r in rows if r.problem] == [] and all(r.why for r in rows if r.by == "people")
    assert [r.cite for r in rows if r.by == "enforced"] == EXPECTED_603A[:3]
    by = {r.cite: r for r in rows}
    assert "controller/engine/shuffling.py:shuffle_completed" in by[EXPECTED_603A[0]].code
    assert "controller/core/cards.py:parse_card" in by[EXPECTED_603A[1]].code
    assert tablectl(["rules", "--chapter", "603a"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# 603a Table Game Equipment") and "PROBLEM" not in text
    assert "Not listed, as the text is not available: the rest of 603a.15 (cut off in (g))" in text
    assert tablectl(["rules", "--chapter", "605a"]) == 0
    assert "Not listed, as the text is not available: 605a.3 (buying in" in capsys.readouterr().out
    assert tablectl(["rules", "--chapter", "683a"]) == 0
    assert "Not listed" not in capsys.readouterr().out
