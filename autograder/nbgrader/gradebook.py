"""`autograder export nbgrader`: leave the nbgrader course as `nbgrader autograde` would, with our scores.

For each stored result of a submission in the course's `submitted/` tree:
- the autograded notebook goes in `autograded/<student>/<assignment>/`
  (autograder.nbgrader.autograded), our points in its test cells;
- the gradebook, through nbgrader's own Gradebook API, records the student,
  the submission with its timestamp (nbgrader's own reading of
  timestamp.txt, so the formgrader counts it as autograded), the due time and
  the student's extension from course.yaml, every grade cell (our points on
  `test_<function>`; written answers left for the TA, as nbgrader leaves
  them), every comment cell, and our late penalty as nbgrader's
  `late_submission_penalty`.

What a TA wrote is never touched: `manual_score`, `extra_credit` and
`manual_comment` stay; a cell a TA graded is flagged for review again only
when what it grades changed since (our points, or the answer's text).

Each student is exported on their own: whatever in one student's data
nbgrader refuses (a damaged notebook, a folder that cannot be written) rolls
back that student only, who is listed with the reason; everyone else is
written. A hand-in's nbgrader cells are held to the gradebook's copy of the
release (autograded.restore_from_source): cell types, grade ids, points and
flags come from the release, and a hand-in whose cells disagreed is restored
and flagged for the instructor (the export's notes).

A gradebook without the released notebook (no `nbgrader generate_assignment`
or `autograder release` into it) gets one autograded grade cell per function
and no autograded notebooks: `nbgrader export` shows the totals, the
formgrader has nothing to grade by hand.
"""
from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.handin import read_small
from autograder.grading.ids import id_problem
from autograder.grading.late import NBGRADER_TIMESTAMP, TIMESTAMP_FILE, LateRule, assess_result, parse_timestamp
from autograder.grading.results import SubmissionResult
from autograder.grading.submission import file_sha256
from autograder.grading.test_cells import TEST_CELL
from autograder.nbgrader import install_nbgrader_hint, nbgrader_missing
from autograder.nbgrader.autograded import (
    Places,
    previous_sources,
    released_cells,
    restored_notes,
    sanitized,
    with_points,
    write_autograded,
)
from autograder.outputs import ExportError
from autograder.text import safe

NO_RESPONSE = "No response."  # nbgrader's automatic comment on an answer cell left as released


@dataclass
class NbgraderSummary:
    assignment: str
    notebook: str
    students: int
    cells: dict[str, float]  # autograded cell -> max score
    autograded: list[Path] = field(default_factory=list)  # notebooks written under autograded/
    skipped: list[str] = field(default_factory=list)  # students left out (handed in again since grading), and why
    notes: list[str] = field(default_factory=list)  # students exported without an autograded notebook, and why
    unnamed: list[str] = field(default_factory=list)  # students with no name in the gradebook (nor in the roster)


@dataclass(frozen=True)
class Target:
    """Where the export goes: the gradebook, the nbgrader course folder, and what the course says."""

    db_url: str  # sqlite:////absolute/path/gradebook.db, or another database URL
    root: Path  # the nbgrader course folder: submitted/, autograded/
    assignment: str
    notebook: str  # the notebook's name (the assignment's module)
    rule: LateRule = field(default_factory=LateRule)
    source_dir: Path | None = None  # nbgrader's source folder of the assignment (its other files are copied)
    names: dict[str, dict[str, str]] = field(default_factory=dict)  # student -> first_name, last_name, email


def require_nbgrader() -> None:
    """nbgrader is an extra: say how to install it instead of a traceback."""
    if nbgrader_missing():
        raise ExportError(f"`export nbgrader` needs nbgrader, which is not installed here; install the "
                          f"instructors' extra ({install_nbgrader_hint()}) and run it again.")


def function_points(results: list[SubmissionResult]) -> dict[str, float]:
    """function -> points possible, which must agree across results to be one grade cell."""
    points: dict[str, float] = {}
    for result in results:
        for function, (_, possible) in result.by_function().items():
            if points.setdefault(function, possible) != possible:
                raise ExportError(f"{function} is worth {points[function]:g} points in one stored result and "
                                  f"{possible:g} in another (different suites): run `autograder regrade "
                                  "ASSIGNMENT` (without --no-decrease, which keeps results of the earlier suite) so "
                                  "every student is graded by the same suite, then export again.")
    return points


def grade_cell_name(function: str) -> str:
    """The released notebook's name for a function's autograder-test cell."""
    return f"{TEST_CELL}{function}"


def write_nbgrader(results: list[SubmissionResult], target: Target) -> NbgraderSummary:
    """Write every result into the gradebook and, where the notebook was released into it, autograded/."""
    require_nbgrader()
    from nbgrader.api import Gradebook, InvalidEntry
    from sqlalchemy.exc import SAWarning, SQLAlchemyError

    cells = function_points(results)
    summary = NbgraderSummary(target.assignment, target.notebook, 0, cells)
    try:
        with _alembic_on_path(), warnings.catch_warnings(), Gradebook(target.db_url) as gradebook:
            # nbgrader 0.9.6's add_submission builds its rows in an order SQLAlchemy 2 warns about
            # on autoflush; the rows are written correctly (the tests read them back).
            warnings.filterwarnings("ignore", category=SAWarning)
            released = _prepare(gradebook, target, cells)
            truth = released_cells(gradebook, target.notebook, target.assignment) if released else {}
            for result in results:
                _export_one(gradebook, result, target, truth, summary)
    except InvalidEntry as error:
        raise ExportError(f"nbgrader refused an entry ({error}); nothing after it was written. Fix the "
                          "gradebook (or use a fresh one) and export again.") from None
    except SQLAlchemyError as error:
        reason = str(error).splitlines()[0]
        raise ExportError(f"cannot use {target.db_url} as an nbgrader gradebook ({reason}). Check that its folder "
                          "exists and is writable, and that it is nbgrader's gradebook.db.") from None
    return summary


def _prepare(gradebook, target: Target, cells: dict[str, float]) -> bool:
    """The assignment, its due time and its notebook's grade cells; whether the notebook was released here."""
    due = _naive_utc(target.rule.due) if target.rule.due else None
    gradebook.update_or_create_assignment(target.assignment, **({"duedate": due} if due else {}))
    notebook = gradebook.update_or_create_notebook(target.notebook, target.assignment)
    ours = {grade_cell_name(function): points for function, points in cells.items()}
    foreign = sorted(c.name for c in notebook.grade_cells if c.cell_type == "code" and c.name not in ours)
    if foreign:
        raise ExportError(
            f"notebook {target.notebook!r} of {target.assignment} in the gradebook already has autograded cells that "
            f"are not ours ({', '.join(foreign)}); their points would be added to ours. Export into a gradebook "
            "without them, or release the notebook again (its test cells are test_<function>), and export again.")
    released = bool(notebook.source_cells)
    known = {c.name: c for c in notebook.grade_cells}
    for name, points in ours.items():
        if released and name not in known:
            raise ExportError(f"the released notebook {target.notebook!r} has no test cell {name}, so the formgrader "
                              "could not show its points. Release the assignment again (`autograder release "
                              f"{target.assignment} --rebuild`), then export again.")
        if released and known[name].max_score != points:
            raise ExportError(f"{name} is worth {known[name].max_score:g} points in the released notebook and "
                              f"{points:g} in the stored results: course.yaml changed after the release. Release "
                              "again or regrade, so both agree, then export again.")
        if not released:
            gradebook.update_or_create_grade_cell(name, target.notebook, target.assignment, max_score=points,
                                                  cell_type="code")
    return released


def _export_one(gradebook, result: SubmissionResult, target: Target, truth: dict, summary: NbgraderSummary) -> None:
    """One student inside their own boundary: what fails is rolled back and listed, and the export goes on."""
    from nbgrader.api import InvalidEntry
    from sqlalchemy.exc import SQLAlchemyError

    if id_problem(result.student):
        summary.skipped.append(f"{safe(result.student, 200)}: this id cannot be an nbgrader student "
                               f"({id_problem(result.student)}); regrade the hand-in under a plain id and export again")
        return
    try:
        _export_student(gradebook, result, target, truth, summary)
    except (InvalidEntry, SQLAlchemyError, OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        gradebook.db.rollback()
        summary.skipped.append(f"{safe(result.student, 200)}: nbgrader could not take this student's data "
                               f"({safe(str(error).splitlines()[0] if str(error) else type(error).__name__, 200)}); "
                               "nothing of it was written. Check the student's folders under submitted/ and "
                               "autograded/, then export again")


def _export_student(gradebook, result: SubmissionResult, target: Target, truth: dict,
                    summary: NbgraderSummary) -> None:
    """One student's submission, notebook, grades, comments and penalty; or a note saying why not."""
    released = bool(truth)
    places = Places(target.root, target.assignment, result.student, target.notebook)
    stamp, stale = _nbgrader_timestamp(places, result)
    if stale:  # unreadable, not graded yet, or an earlier hand-in counts: the gradebook holds the one in submitted/
        summary.skipped.append(f"{result.student}: {stale}")
        return
    path = _graded_notebook(places, result)
    sources = previous_sources(places)
    notebook = None
    if released and path is not None:
        notebook = _autograded(path, places, result, target, truth)
        summary.notes += restored_notes(notebook, result.student, path.name) if notebook is not None else []
        if notebook is None:
            summary.notes.append(f"{result.student}: {path} is not a notebook nbgrader can read, so there is no "
                                 "autograded notebook (its grades, zero where it could not be graded, are in the "
                                 "gradebook); `nbgrader autograde` would fail on it too")
        else:
            summary.autograded.append(write_autograded(places, notebook, target.source_dir))
    elif released:
        summary.notes.append(f"{result.student}: no {target.notebook}.ipynb in {places.submitted} matches the "
                             "graded file, so there is no autograded notebook (the grades are in the gradebook)")
    # None: no notebook to read answers from. A notebook without the release's cells (one the student
    # made) has no answers in them: its written cells get 0 as deleted ones would, not a manual grade.
    cells = None if notebook is None else {
        cell.metadata.nbgrader["grade_id"]: cell for cell in notebook.cells
        if "grade_id" in cell.get("metadata", {}).get("nbgrader", {})}
    if cells == {}:
        summary.notes.append(f"{result.student}: {path.name} was not built from the released notebook (it has none "
                             "of its nbgrader cells), so it was exported with our points and 0 for its written "
                             "answers, with nothing to grade by hand; read the student's notebook in "
                             f"{places.autograded} if the answers may be in it")
    student = gradebook.update_or_create_student(result.student, **target.names.get(result.student, {}))
    if student.first_name is None and student.last_name is None:
        summary.unnamed.append(result.student)
    submission = gradebook.update_or_create_submission(target.assignment, result.student, timestamp=stamp)
    if target.rule.due is not None:
        extension = target.rule.extension(result.student)
        submission.extension = None if extension is None else extension - target.rule.due
    submitted = _submitted_notebook(gradebook, submission, target)
    _save_grades(gradebook, submitted, result, cells, sources)
    _save_comments(gradebook, submitted, cells)
    penalty = assess_result(target.rule, result).penalty
    submitted.late_submission_penalty = penalty or None  # nbgrader's own convention: None when not late
    gradebook.db.commit()
    summary.students += 1


def _autograded(path: Path, places: Places, result: SubmissionResult, target: Target, truth: dict):
    """The autograded notebook, or None where the student's file is not one nbgrader can sanitize."""
    from nbgrader.nbgraderformat import ValidationError

    try:
        notebook = sanitized(path, places, target.db_url, truth)
    except (ValueError, KeyError, TypeError, AttributeError, RuntimeError, RecursionError, ValidationError, OSError):
        return None  # student data: broken JSON, damaged nbgrader metadata, cells nbgrader cannot restore
    return with_points(notebook, result, {grade_cell_name(f): f for f in result.by_function()})


def _nbgrader_timestamp(places: Places, result: SubmissionResult) -> tuple[datetime.datetime | None, str]:
    """(the timestamp nbgrader reads for this submission, why the stored result is not exported and what to do, or "").

    nbgrader's formgrader counts a submission as autograded only when the gradebook's timestamp equals its own
    reading of submitted/.../timestamp.txt (NbGraderAPI.get_autograded_students), so that reading is what goes in.
    """
    from nbgrader.utils import parse_utc

    path = places.submitted / TIMESTAMP_FILE
    data = read_small(path, 200)  # the hand-in rule: never a link or a FIFO (grading.handin)
    if data is None:
        return None, ""  # nbgrader knows no time for it, as after its own autograde; ours may be the file's
    text = data.decode(errors="replace").strip()
    try:
        theirs = parse_utc(text)
        ours = parse_timestamp(text)
    except (ValueError, OverflowError):
        return None, (f"{path} holds no time nbgrader can read: write the hand-in's time in it as nbgrader does "
                      "(2026-11-20 10:00:00 UTC), grade the class again (`autograder grade`) and export again")
    stored = datetime.datetime.fromisoformat(result.submitted_at) if result.submitted_at else None
    if result.submitted_at_source != NBGRADER_TIMESTAMP or stored is None or abs((stored - ours).total_seconds()) > 1:
        return None, (f"{path} says {text}, but the stored result was handed in at "
                      f"{result.submitted_at or 'an unknown time'}. If that hand-in was not graded yet, grade the "
                      "class again (`autograder grade`) and export again. If it was, course.yaml's `submissions` "
                      "policy counts an earlier hand-in, and nbgrader's gradebook holds only the one in "
                      "submitted/: write this student's grade with `autograder export csv` or to the LMS, or count "
                      "the latest hand-in (`submissions: {policy: last}`)")
    return theirs, ""


def _graded_notebook(places: Places, result: SubmissionResult) -> Path | None:
    """The submitted notebook that was graded: nbgrader's path first, else the stored file, if its bytes match."""
    for path in (places.submitted / f"{places.notebook}.ipynb", Path(result.file)):
        if path.suffix == ".ipynb" and result.sha256 and file_sha256(path, places.root / "submitted") == result.sha256:
            return path
    return None


def _submitted_notebook(gradebook, submission, target: Target):
    from nbgrader.api import SubmittedNotebook

    submitted = next((n for n in submission.notebooks if n.name == target.notebook), None)
    if submitted is None:  # the submission was created (e.g. by nbgrader) before our notebook existed
        submitted = SubmittedNotebook(notebook=gradebook.find_notebook(target.notebook, target.assignment),
                                      assignment=submission)
        gradebook.db.add(submitted)
    return submitted


def _save_grades(gradebook, submitted, result: SubmissionResult, cells: dict | None, previous: dict | None) -> None:
    """Every grade cell's auto_score, as nbgrader's SaveAutoGrades would, never touching what a TA wrote.

    Ours on the test cells; a written answer gets 0 when left as released and
    otherwise none, so it needs a manual grade. A cell a TA already graded
    (manual_score) keeps it, and is flagged for review only if what it
    grades changed: our points, or the answer's text since the last export.
    cells: grade_id -> the submitted notebook's cell; None when no notebook was graded.
    """
    from nbgrader.api import Grade
    from nbgrader.utils import determine_grade

    points = {grade_cell_name(f): got for f, (got, _) in result.by_function().items()}
    grades = {grade.name: grade for grade in submitted.grades}
    for cell in submitted.notebook.grade_cells:
        grade = grades.get(cell.name)
        if grade is None:  # nbgrader mirrors cells only when a submission is created; this one came later
            grade = Grade(cell_id=cell.id, notebook=submitted)
            gradebook.db.add(grade)
        if cell.name in points:
            auto = points[cell.name]
            changed = grade.auto_score != auto
        elif cells is None:
            continue  # no notebook to read the answer from (a .py was graded): left for the TA, as nbgrader leaves it
        elif cell.name in cells:
            auto, _ = determine_grade(cells[cell.name])
            changed = previous is None or previous.get(cell.name) != cells[cell.name].source
        else:  # the student deleted the cell: no answer
            auto, changed = 0.0, previous is None or cell.name in previous
        grade.auto_score = auto
        if grade.manual_score is None:
            grade.needs_manual_grade = auto is None
        elif changed:
            grade.needs_manual_grade = True


def _save_comments(gradebook, submitted, cells: dict) -> None:
    """nbgrader's automatic comment ("No response." on an unchanged answer); a TA's comment is never touched."""
    from nbgrader.api import Comment
    from nbgrader.utils import compute_checksum, is_task

    if not cells:
        return  # no notebook to judge the answers by
    comments = {comment.name: comment for comment in submitted.comments}
    for cell in list(submitted.notebook.solution_cells) + list(submitted.notebook.task_cells):
        comment = comments.get(cell.name)
        if comment is None:
            comment = Comment(cell_id=cell.id, notebook=submitted)
            gradebook.db.add(comment)
        ours = cells.get(cell.name)
        if ours is None:  # the student deleted the cell
            comment.auto_comment = NO_RESPONSE
        elif ours.metadata.nbgrader.get("checksum") == compute_checksum(ours) and not is_task(ours):
            comment.auto_comment = NO_RESPONSE
        else:
            comment.auto_comment = None


def gradebook_url(given: str | None, root: Path) -> tuple[str, str]:
    """(database URL, where it is, for messages) for --gradebook: relative paths are relative to `root`.

    nbgrader's own default is gradebook.db in the course root. A relative
    path, or a relative sqlite URL (sqlite:///gradebook.db), would otherwise
    follow the working directory and quietly start a new gradebook there.
    """
    prefix = "sqlite:///"
    if given is None:
        path = Path(root) / "gradebook.db"
    elif given.startswith(prefix):
        path = Path(given[len(prefix):])
    elif "://" in given:
        return given, given.split("@")[-1]  # another database: its URL as given, without a password
    else:
        path = Path(given)
    path = (Path(root) / path.expanduser()).resolve()
    return f"{prefix}{path}", str(path)


def _naive_utc(moment: datetime.datetime) -> datetime.datetime:
    """How nbgrader keeps times: naive, in UTC."""
    return moment.astimezone(datetime.UTC).replace(tzinfo=None)


@contextlib.contextmanager
def _alembic_on_path():
    """nbgrader runs the `alembic` command (by name) to stamp a new gradebook.

    It is installed beside this interpreter, which is not on PATH when the
    command runs as .venv/bin/autograder without an activated venv.
    """
    scripts = str(Path(sys.executable).parent)
    saved = os.environ.get("PATH", "")
    if shutil.which("alembic") is None:
        if shutil.which("alembic", path=scripts) is None:
            raise ExportError(f"nbgrader needs its `alembic` command to create a gradebook and it is not installed "
                              f"here; reinstall nbgrader ({install_nbgrader_hint()}) in this environment.")
        os.environ["PATH"] = scripts + os.pathsep + saved
    try:
        yield
    finally:
        os.environ["PATH"] = saved
