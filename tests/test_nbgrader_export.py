"""Issue 15: after `autograder grade` and `autograder export nbgrader`, nbgrader's formgrader sees our grades.

A temporary nbgrader course is released with the real `nbgrader generate_assignment` (through
`autograder release`); notebooks are handed in to submitted/ with nbgrader's timestamp.txt; our grader
grades them in the sandbox and exports. Then nbgrader's own formgrader back end (NbGraderAPI, what the
formgrader's pages call), its `nbgrader export` and its `generate_feedback` are asked what a TA sees.
A TA's manual grades, written as the formgrader's own handlers write them, must survive the next export.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime

import nbformat
import pytest
import yaml
from nbgrader.api import Gradebook
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.grading.store import Store

from conftest import REFERENCE, ROOT, SUBMISSIONS, compose, run_cli
from nbgrader_course import ASSIGNMENT, WRITTEN, make_course, nbgrader, release, with_code

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
DUE = datetime.datetime(2026, 11, 20, 23, 59, tzinfo=datetime.timezone(datetime.timedelta(hours=-5)))
WRITTEN_CELLS = ("written_why_scale_by_sqrt_dk", "written_weights_are_not_explanations")
# student -> (code: "reference", "buggy" or None for the released notebook as it is, hours after DUE or None
# for no timestamp.txt). "extended" has an extension of three days in course.yaml.
CLASS = {"ontime": ("reference", -20.0), "late": ("buggy", 30.0), "extended": ("reference", 48.0),
         "untouched": (None, -1.0), "nostamp": ("reference", None)}
BUGGY = "softmax_no_max_subtraction"  # partial credit inside softmax's cell (tests/test_nbgrader_consistency.py)
BUGGY_TOTAL = 87


def _stamp(hours: float) -> str:
    """nbgrader's timestamp.txt for `hours` after the due time: its own format, in UTC."""
    moment = (DUE + datetime.timedelta(hours=hours)).astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _course_yaml(folder) -> str:
    """The course, with a due time, a late rule and one extension, in `folder`."""
    data = yaml.safe_load((ROOT / "course.yaml").read_text())
    settings = data["assignments"][ASSIGNMENT]
    settings.update(source=str(ROOT / "assignments" / ASSIGNMENT), solution=str(ROOT / "solutions" / ASSIGNMENT),
                    due=DUE.isoformat(), late={"penalty_per_day": 0.1, "grace_minutes": 15, "max_days_late": 5},
                    extensions={"extended": (DUE + datetime.timedelta(days=3)).isoformat()})
    path = folder / "course.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _hand_in(root, released, suite, student: str, code: str | None, hours: float | None) -> None:
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    notebook = (nbformat.read(released / "attention.ipynb", as_version=4) if code is None
                else with_code(released, code, suite.functions, WRITTEN))
    nbformat.write(notebook, folder / "attention.ipynb")
    if hours is not None:
        (folder / "timestamp.txt").write_text(_stamp(hours))


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory, suite):
    """A released nbgrader course whose class was handed in, graded by `autograder grade` and exported once."""
    root = make_course(tmp_path_factory.mktemp("nbgrader-course"))
    released = release(root)
    codes = {"reference": REFERENCE.read_text(),
             "buggy": compose(root, "buggy", SUBMISSIONS / "buggy" / f"{BUGGY}.py").read_text()}
    for student, (code, hours) in CLASS.items():
        _hand_in(root, released, suite, student, codes.get(code), hours)
    course = _course_yaml(root)
    done = run_cli("grade", ASSIGNMENT, root, "--course", course, "--db", root / "grades.db", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    done = _export(root)
    assert done.returncode == 0, done.stderr
    return root


def _export(root, *extra, cwd=None):
    return run_cli("export", "nbgrader", "--course", root / "course.yaml", "--db", root / "grades.db",
                   "--root", root, *extra, cwd=cwd or root)


def _api(root) -> NbGraderAPI:
    """nbgrader's formgrader back end, pointed at the course, as nbgrader's own tests build it."""
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    config.Exchange.root = str(root / "exchange")  # unused; nbgrader's default is a system folder
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def _ours(root) -> dict[str, dict]:
    """Our own `export csv`, by student."""
    done = run_cli("export", "csv", "--course", root / "course.yaml", "--db", root / "grades.db")
    assert done.returncode == 0, done.stderr
    return {row["student"]: row for row in csv.DictReader(done.stdout.splitlines())}


def test_manage_submissions_shows_every_submission_autograded_with_our_score_and_its_timestamp(course_dir):
    ours = _ours(course_dir)
    submissions = {s["student"]: s for s in _api(course_dir).get_submissions(ASSIGNMENT)}
    assert sorted(submissions) == sorted(CLASS)
    for student, (code, hours) in CLASS.items():
        shown = submissions[student]
        assert shown["autograded"] and shown["submitted"], student
        assert shown["code_score"] == shown["score"] == float(ours[student]["raw_total"]), student
        expected = {"reference": 100, "buggy": BUGGY_TOTAL, None: 0}[code]
        assert shown["score"] == expected and shown["max_score"] == 110  # 100 autograded, 10 written
        stamp = None if hours is None else datetime.datetime.strptime(_stamp(hours), "%Y-%m-%d %H:%M:%S.%f UTC")
        assert shown["timestamp"] == (stamp.isoformat() if stamp else None), student
        # Answered written questions wait for the TA; unanswered ones are 0, as nbgrader's autograde leaves them.
        assert shown["needs_manual_grade"] == (code is not None), student


def test_every_notebook_is_listed_for_manual_grading(course_dir):
    listed = {n["student"]: n for n in _api(course_dir).get_notebook_submissions(ASSIGNMENT, "attention")}
    assert sorted(listed) == sorted(CLASS)
    assert all(n["index"] is not None for n in listed.values())
    assert listed["late"]["failed_tests"] and not listed["ontime"]["failed_tests"]
    notebook = nbformat.read(course_dir / "autograded" / "late" / ASSIGNMENT / "attention.ipynb", as_version=4)
    cells = {c.metadata["nbgrader"]["grade_id"]: c for c in notebook.cells if "nbgrader" in c.metadata}
    softmax = cells["test_softmax"]
    # The hidden region is restored from the source, as nbgrader's OverwriteCells does, and the output
    # carries our points as nbgrader's partial credit, after our per-check table.
    assert "### BEGIN HIDDEN TESTS" in softmax.source
    assert softmax.outputs[-1]["output_type"] == "execute_result"
    assert 0 < float(softmax.outputs[-1]["data"]["text/plain"]) < 21
    assert "graded for late by autograder grade" in softmax.outputs[0]["text"]
    assert (course_dir / "autograded" / "late" / ASSIGNMENT / "timestamp.txt").read_text() == _stamp(30.0)


def test_the_late_penalty_is_ours_and_nbgrader_sees_the_timestamp_due_date_and_extension(course_dir):
    ours = _ours(course_dir)
    assert (ours["late"]["total"], ours["late"]["penalty"], ours["late"]["late_by"]) == ("69.6", "17.4", "30")
    assert ours["extended"]["total"] == "100" and ours["extended"]["penalty"] == "0"
    assert ours["nostamp"]["submitted_at_source"] == "file time (unreliable)"
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as book:
        assert book.find_assignment(ASSIGNMENT).duedate == DUE.astimezone(datetime.UTC).replace(tzinfo=None)
        late = book.find_submission(ASSIGNMENT, "late")
        assert late.total_seconds_late == pytest.approx(30 * 3600, abs=1)
        penalty = book.find_submission_notebook("attention", ASSIGNMENT, "late").late_submission_penalty
        assert penalty == pytest.approx(17.4)
        extended = book.find_submission(ASSIGNMENT, "extended")
        assert extended.extension == datetime.timedelta(days=3) and extended.total_seconds_late == 0
        assert book.find_submission_notebook("attention", ASSIGNMENT, "extended").late_submission_penalty is None
    done = nbgrader("export", cwd=course_dir)
    assert done.returncode == 0, done.stderr
    theirs = {row["student_id"]: row for row in csv.DictReader((course_dir / "grades.csv").open())}
    # Once, not twice: nbgrader's score is its raw score less our penalty.
    assert float(theirs["late"]["raw_score"]) == BUGGY_TOTAL and float(theirs["late"]["score"]) == pytest.approx(69.6)
    assert float(theirs["extended"]["score"]) == 100


def test_generate_feedback_shows_our_scores(course_dir):
    done = nbgrader("generate_feedback", ASSIGNMENT, "--student=late", "--force", cwd=course_dir)
    assert done.returncode == 0, done.stderr
    page = (course_dir / "feedback" / "late" / ASSIGNMENT / "attention.html").read_text()
    assert "graded for late by autograder grade" in page and "softmax.last_axis" in page


def test_a_relative_gradebook_is_the_course_roots_and_the_message_says_where(course_dir, tmp_path):
    elsewhere = tmp_path / "examples"
    elsewhere.mkdir()
    done = _export(course_dir, "--gradebook", "sqlite:///gradebook.db", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert list(elsewhere.iterdir()) == []
    assert f"into the nbgrader gradebook {course_dir / 'gradebook.db'}" in done.stderr
    assert str(course_dir / "autograded") in done.stderr
    assert "checksum" not in done.stderr  # nbgrader's false alarm about hidden tests stays out of the output


def test_a_tas_grades_survive_every_export_and_are_flagged_only_when_what_they_grade_changed(course_dir):
    """One TA's story, in order (so one test: under xdist another worker builds its own course)."""
    url = f"sqlite:///{course_dir / 'gradebook.db'}"
    with Gradebook(url) as book:  # as the formgrader's GradeHandler and CommentHandler write them
        written = book.find_grade(WRITTEN_CELLS[0], "attention", ASSIGNMENT, "ontime")
        written.manual_score, written.extra_credit, written.needs_manual_grade = 4.0, 1.0, False
        override = book.find_grade("test_softmax", "attention", ASSIGNMENT, "late")
        override.manual_score, override.needs_manual_grade = 20.0, False
        book.find_comment(WRITTEN_CELLS[0], "attention", ASSIGNMENT, "ontime").manual_comment = "Variance, yes."
        book.db.commit()
    done = _export(course_dir)
    assert done.returncode == 0, done.stderr
    _assert_grades(url, "ontime", WRITTEN_CELLS[0], manual=4.0, flagged=False)
    _assert_grades(url, "late", "test_softmax", manual=20.0, flagged=False)
    with Gradebook(url) as book:
        assert book.find_grade(WRITTEN_CELLS[0], "attention", ASSIGNMENT, "ontime").extra_credit == 1.0
        assert book.find_grade("test_softmax", "attention", ASSIGNMENT, "late").auto_score < 20  # ours, beside
        comment = book.find_comment(WRITTEN_CELLS[0], "attention", ASSIGNMENT, "ontime")
        assert comment.manual_comment == "Variance, yes."
        assert book.find_submission(ASSIGNMENT, "ontime").score == 105  # ours, the TA's 4 and 1 extra credit

    # Handed in again, the same notebook, later: not exported until it is regraded.
    stamp = course_dir / "submitted" / "ontime" / ASSIGNMENT / "timestamp.txt"
    stamp.write_text(_stamp(-1.0))
    done = _export(course_dir)
    assert done.returncode == 1 and "not exported: ontime" in done.stderr
    assert "If that hand-in was not graded yet, grade the class again (`autograder grade`)" in done.stderr
    assert "ontime" not in _autograded(course_dir)
    handed_in = stamp.read_text()
    stamp.write_text("yesterday")  # unreadable: the advice is to mend it, not about the submissions policy
    said = [line for line in _export(course_dir).stderr.splitlines() if "ontime" in line and "timestamp" in line]
    assert said and all("write the hand-in's time in it" in line and "policy" not in line for line in said), said
    stamp.write_text(handed_in)
    done = _grade(course_dir)
    assert done.returncode == 0 and "[1/1] ontime" in done.stderr  # only the handed-in-again one is regraded
    assert _export(course_dir).returncode == 0 and "ontime" in _autograded(course_dir)
    _assert_grades(url, "ontime", WRITTEN_CELLS[0], manual=4.0, flagged=False)  # the answer did not change

    # Handed in once more, with a different written answer: the TA's grade stays, flagged for review.
    path = course_dir / "submitted" / "ontime" / ASSIGNMENT / "attention.ipynb"
    notebook = nbformat.read(path, as_version=4)
    next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == WRITTEN_CELLS[0]).source = \
        "A different answer."
    nbformat.write(notebook, path)
    stamp.write_text(_stamp(-0.5))
    assert _grade(course_dir).returncode == 0 and _export(course_dir).returncode == 0
    _assert_grades(url, "ontime", WRITTEN_CELLS[0], manual=4.0, flagged=True)
    _assert_grades(url, "ontime", WRITTEN_CELLS[1], manual=None, flagged=True)  # never graded: still waiting

    # Our points for an overridden cell change (a regrade with a corrected suite): flagged for review too.
    with Store(course_dir / "grades.db") as store:
        late = store.result(ASSIGNMENT, "late")
        store.save(dataclasses.replace(late, tests=tuple(dataclasses.replace(t, status="passed", score=t.max_score)
                                                         if t.function == "softmax" else t for t in late.tests),
                                       score=None))  # None: the new checks' sum
    assert _export(course_dir).returncode == 0
    _assert_grades(url, "late", "test_softmax", manual=20.0, flagged=True)
    _assert_grades(url, "late", "test_score", manual=None, flagged=False)


def _grade(root):
    return run_cli("grade", ASSIGNMENT, root, "--course", root / "course.yaml", "--db", root / "grades.db",
                   "--jobs", "1")


def _autograded(root) -> set[str]:
    return {s["student"] for s in _api(root).get_submissions(ASSIGNMENT) if s["autograded"]}


def _assert_grades(url: str, student: str, cell: str, manual: float | None, flagged: bool) -> None:
    with Gradebook(url) as book:
        grade = book.find_grade(cell, "attention", ASSIGNMENT, student)
        assert (grade.manual_score, grade.needs_manual_grade) == (manual, flagged), (student, cell)


def test_a_counted_hand_in_that_nbgrader_no_longer_holds_is_named_with_what_to_do(tmp_path, suite):
    """Under `last_on_time` a late resubmission leaves the on-time hand-in counting, while submitted/ holds the
    late one. The export said to grade again, which changed nothing: it now says why, and what to do instead."""
    root = make_course(tmp_path / "course")
    released = release(root)
    _hand_in(root, released, suite, "again", REFERENCE.read_text(), -5.0)
    _course_yaml(root)
    data = yaml.safe_load((root / "course.yaml").read_text())
    data["assignments"][ASSIGNMENT]["submissions"] = {"policy": "last_on_time"}
    (root / "course.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert _grade(root).returncode == 0
    _hand_in(root, released, suite, "again", REFERENCE.read_text(), 30.0)  # resubmitted, late
    assert _grade(root).returncode == 0
    done = _export(root)
    assert "again: " in done.stderr and "course.yaml's `submissions` policy counts an earlier hand-in" in done.stderr
    assert "write this student's grade with `autograder export csv` or to the LMS" in done.stderr, done.stderr
