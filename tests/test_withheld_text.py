"""Text a student's code chose (an exception's message, a class's name) reaches no student from a hidden check.

Code can write its arguments into such text, and a hidden check's arguments are its inputs, which no student
output may show (outputs.audience). The submissions under fixtures/submissions/leaking/ do so on the hidden
checks' inputs only; each graded through the real sandbox and stored in a real SQLite file, its text must be
absent from every student output and present in the instructor's.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from autograder.authoring.protocol import chosen
from autograder.grading.results import CHOSEN_NOTE, WITHHELD, CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.nbgrader.inkernel import format_function, run_checks
from autograder.outputs.gradescope import gradescope_results
from autograder.outputs.report import write_reports
from autograder.outputs.terminal import format_check

from conftest import SUBMISSIONS, compose, manifest

LEAKING = manifest("leaking")


def _stored(result, db):
    """`result` saved to a real store and read back, as every output reads it."""
    with Store(db) as store:
        store.save(result)
        return store.results(result.assignment)[0]


def _namespace(path) -> dict:
    """The globals a notebook's kernel holds after running the file (as nbgrader's test cells see them)."""
    namespace = {"__name__": "attention", "__file__": "attention.py"}
    exec(compile(path.read_text(), "attention.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", sorted(LEAKING))
def test_a_hidden_checks_text_from_the_code_reaches_the_instructor_only(name, grade, course, suite, tmp_path):
    entry = LEAKING[name]
    marker, function = entry["marker"], entry["function"]
    path = compose(tmp_path, name, SUBMISSIONS / "leaking" / f"{name}.py")
    result = _stored(grade(path, "leaky"), tmp_path / "grades.db")
    leaking = [t for t in result.tests if t.withheld]
    assert any(t.function == function for t in leaking), [t.message for t in result.tests if t.status != "passed"]
    assert all(t.visibility == "hidden" for t in leaking)
    assert all(t.status == "passed" for t in result.tests if t.visibility == "public" and t.function == function)

    # The student's: feedback pages, results.json but its extra_data, the check table, nbgrader's test cells.
    write_reports("w07_attention", [result], tmp_path / "out")
    pages = [p.read_text() for p in (tmp_path / "out" / "feedback").iterdir()]
    gradescope = gradescope_results(result)
    visible = {**gradescope, "extra_data": None,
               "tests": [{**test, "extra_data": None} for test in gradescope["tests"]]}
    table = "\n".join(format_check(test) for test in result.tests)
    cells = format_function(run_checks(course, suite, function, _namespace(path), "leaky"), "graded for leaky")
    for shown in (*pages, json.dumps(visible), table, cells):
        assert marker not in shown
    assert marker not in "".join(t.message for t in result.tests)
    for test in leaking:  # what happened, and what to do to see such messages
        assert WITHHELD in test.message and test.hint.startswith(CHOSEN_NOTE) and "autograder check" in CHOSEN_NOTE
        assert WITHHELD not in test.withheld

    # The instructor's: the store (read back above), the class report, Gradescope's extra_data.
    assert any(marker in test.withheld for test in leaking if test.function == function)
    assert marker in (tmp_path / "out" / "index.html").read_text()
    assert any(marker in test["extra_data"]["withheld"] for test in gradescope["tests"])


def test_a_public_checks_message_keeps_the_text_the_code_chose():
    quoted = f"f raised ValueError at line 3: {chosen('bad shape (2, 3)')}"
    public = CheckResult("f.a", "f", "public", "error", 0, 1, quoted)
    hidden = CheckResult("f.b", "f", "hidden", "error", 0, 1, quoted)
    assert public.message == "f raised ValueError at line 3: bad shape (2, 3)" and public.withheld == ""
    assert hidden.withheld == public.message
    assert hidden.message == f"f raised ValueError at line 3: {WITHHELD}" and hidden.hint == CHOSEN_NOTE


def test_a_store_from_before_withheld_text_still_opens(tmp_path):
    """A database whose checks table has no `withheld` column (written before it existed) opens and reads."""
    db = tmp_path / "old.db"
    check = CheckResult("f.a", "f", "hidden", "failed", 0, 1, "f returned the wrong values")
    _stored(SubmissionResult("s1", "w07_attention", "s1.py", "x", "v", 1, "bwrap", (check,), max_score=1), db)
    with sqlite3.connect(db) as connection:
        connection.execute("ALTER TABLE checks DROP COLUMN withheld")
    with Store(db) as store:
        (read,) = store.results("w07_attention")
    assert read.tests[0].message == "f returned the wrong values" and read.tests[0].withheld == ""
