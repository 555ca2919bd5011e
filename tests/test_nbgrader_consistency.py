"""Issue 6: nbgrader's own `autograde` gives the same auto-graded totals as `autograder grade`.

Fixture submissions are put into the released notebook's answer cells and
handed in to a temporary nbgrader course. One real `nbgrader autograde` run
grades them all (nbgrader is serial, a few seconds per notebook);
`autograder grade` grades the same submitted/ tree through the sandbox. The
default run takes a sample that spans full marks, partial credit and zero;
`pytest -m nbgrader_table` takes every fixture (the reference, the stub, the
released notebook untouched, each correct variant, each one-bug variant) and
prints the README's table. Attacks are left out on purpose: inside
nbgrader's kernel only the sandbox could stop them (README, "Instructors").
"""
from __future__ import annotations

import json

import nbformat
import pytest
from nbgrader.api import Gradebook

from conftest import ROOT, run_cli
from nbgrader_course import ASSIGNMENT, fixture_codes, make_course, nbgrader, release, with_code

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
SAMPLE = ("reference", "stub", "untouched", "correct_plain", "correct_einsum", "buggy_softmax_no_max_subtraction",
          "buggy_score_missing_scale", "buggy_attention_returns_a_c")


@pytest.fixture(scope="module")
def graded(tmp_path_factory, suite):
    """The sample, graded by both: student -> {"nbgrader": {function: points}, "autograder": {...}}."""
    codes = fixture_codes(tmp_path_factory.mktemp("composed"))
    return grade_by_both(tmp_path_factory, suite, {student: codes[student] for student in SAMPLE})


def grade_by_both(tmp_path_factory, suite, codes: dict) -> dict:
    """student -> {"nbgrader": {function: points}, "autograder": {function: points}} for `codes`."""
    root = make_course(tmp_path_factory.mktemp("consistency"))
    released = release(root)
    for student, code in codes.items():
        notebook = (nbformat.read(released / "attention.ipynb", as_version=4) if code is None
                    else with_code(released, code, suite.functions))
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / "attention.ipynb")
    done = nbgrader("autograde", ASSIGNMENT, cwd=root, AUTOGRADER_COURSE=str(ROOT / "course.yaml"))
    assert done.returncode == 0, done.stderr[-3000:]
    ours = run_cli("grade", ASSIGNMENT, root, "--json", "--db", root / "grades.db", timeout=1800)
    assert ours.returncode == 0, ours.stderr[-3000:]
    table = {}
    for line in map(json.loads, ours.stdout.splitlines()):
        by_function = {f: 0.0 for f in suite.functions}
        for test in line["tests"]:
            by_function[test["function"]] += test["score"]
        table[line["student"]] = {"autograder": by_function}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for student in table:
            table[student]["nbgrader"] = {
                f: gradebook.find_grade(f"test_{f}", "attention", ASSIGNMENT, student).score for f in suite.functions}
    return table


def _rows(graded: dict) -> list[tuple[str, float, float]]:
    return sorted((student, sum(s["nbgrader"].values()), sum(s["autograder"].values()))
                  for student, s in graded.items())


def _differences(graded: dict) -> list:
    return [(student, function, s["nbgrader"][function], s["autograder"][function])
            for student, s in sorted(graded.items()) for function in s["autograder"]
            if s["nbgrader"][function] != s["autograder"][function]]


def test_the_sample_was_graded_by_both(graded):
    assert set(graded) == set(SAMPLE)


def test_nbgrader_autograde_and_autograder_grade_give_the_same_totals(graded):
    assert [row for row in _rows(graded) if row[1] != row[2]] == []


def test_every_function_gets_the_same_points_from_both(graded):
    assert _differences(graded) == []


def test_the_sample_spans_full_marks_partial_credit_and_zero(graded, suite):
    totals = {student: sum(s["nbgrader"].values()) for student, s in graded.items()}
    assert totals["reference"] == suite.max_score == 100
    assert totals["stub"] == totals["untouched"] == 0
    assert all(total == 100 for student, total in totals.items() if student.startswith("correct_"))
    buggy = {student: total for student, total in totals.items() if student.startswith("buggy_")}
    assert len(buggy) >= 3 and all(0 < total < 100 for total in buggy.values()), buggy
    # Partial credit inside one test cell: a bug costs some of its function's checks, not the whole cell.
    cell = graded["buggy_softmax_no_max_subtraction"]["nbgrader"]["softmax"]
    assert 0 < cell < sum(e.points for e in suite.checks if e.function == "softmax")


@pytest.mark.nbgrader_table
def test_every_fixture_gets_the_same_points_from_both_and_the_table_is_printed(tmp_path_factory, suite, capsys):
    """The README's table: `pytest -m nbgrader_table tests/test_nbgrader_consistency.py` prints it."""
    codes = fixture_codes(tmp_path_factory.mktemp("composed"))
    assert len(codes) >= 30
    graded = grade_by_both(tmp_path_factory, suite, codes)
    rows = _rows(graded)
    with capsys.disabled():
        print(f"\n{'submission':<42}{'nbgrader autograde':>20}{'autograder grade':>18}")
        for student, theirs, ours in rows:
            print(f"{student:<42}{theirs:>20g}{ours:>18g}")
    assert set(graded) == set(codes)
    assert [row for row in rows if row[1] != row[2]] == [] and _differences(graded) == []
