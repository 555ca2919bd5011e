"""Text a student's code chose (an exception's message, a class's name, a returned value, shape or entry, the place
an exception names that the file's text does not have) reaches no student from a hidden check.

Code can write its arguments into such text, and a hidden check's arguments are its inputs, which no student
output may show (outputs.audience). The submissions under fixtures/submissions/leaking/ do so on the hidden
checks' inputs only; each graded through the real sandbox and stored in a real SQLite file, its text must be
absent from every student output and present in the instructor's.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from autograder.authoring.protocol import Raised, chosen
from autograder.grading.places import SourceText
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
        assert WITHHELD in test.message and test.hint.startswith(CHOSEN_NOTE)
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


def test_the_hint_says_how_to_see_a_withheld_message_on_inputs_like_the_checks():
    """A hidden check's inputs can be of a dtype no public check uses (float32): running the public checks would not
    show the message, calling the function on inputs like the ones it describes would."""
    quoted = (f"softmax raised UFuncTypeError at line 105: {chosen('Cannot cast ufunc')} "
              "(given S: a float32 array of shape (2, 3, 5, 7))")
    hidden = CheckResult("softmax.a", "softmax", "hidden", "error", 0, 1, quoted)
    assert hidden.message.endswith(f"{WITHHELD} (given S: a float32 array of shape (2, 3, 5, 7))")
    assert "call the function on inputs like the ones the message describes" in hidden.hint
    assert "given" in hidden.hint and "dtypes and shapes" in hidden.hint
    assert "one way" in hidden.hint and "`autograder check`" in hidden.hint


def test_a_place_is_shown_where_the_files_text_has_it(tmp_path):
    """The line and function an exception names are the code's choice too (it can make a code object with any): a
    hidden check shows them only where the file has that line and that name, and a public check always."""
    source = SourceText.of({"kind": "py", "labels": ["the file"], "sources": ["def helper():\n    raise ValueError\n"]})
    fits = Raised("ValueError", "no", line=2, within="helper").describe(called="f")
    made = Raised("ValueError", "no", line=1009379751, within="LEAKFN_1049370999").describe(called="f")
    named = Raised("ValueError", "no", line=2, within="LEAKFN_1049370999").describe(called="f")
    shown = [CheckResult("f.a", "f", "hidden", "error", 0, 1, source.vouch(text)).message
             for text in (fits, made, named)]
    assert shown[0] == f"ValueError at line 2, in helper: {WITHHELD}"
    assert shown[1] == shown[2] == f"ValueError at {WITHHELD}: {WITHHELD}"
    public = CheckResult("f.a", "f", "public", "error", 0, 1, source.vouch(made))
    assert public.message == "ValueError at line 1009379751, in LEAKFN_1049370999: no"
    notebook = SourceText.of({"kind": "cells", "labels": ["code cell 1"], "sources": ["x = 1\ny = 2"]})
    assert notebook.fits("code cell 1", 2, "") and not notebook.fits("code cell 2", 1, "")
    assert not notebook.fits("code cell 1", 3, "") and notebook.fits("code cell 1", 1, "<lambda>")
