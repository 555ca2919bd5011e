"""nbgrader's gradebook: our scores written through nbgrader's own Gradebook API.

So formgrader and `nbgrader export` show them.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.results import SubmissionResult
from autograder.outputs import ExportError


@dataclass(frozen=True)
class NbgraderSummary:
    assignment: str
    notebook: str
    students: int
    cells: dict[str, float]  # grade cell -> max score


def function_points(results: list[SubmissionResult]) -> dict[str, float]:
    """function -> points possible, which must agree across results to be one grade cell."""
    points: dict[str, float] = {}
    for result in results:
        for function, (_, possible) in result.by_function().items():
            if points.setdefault(function, possible) != possible:
                raise ExportError(f"{function} is worth {points[function]:g} points in one stored result and "
                                  f"{possible:g} in another (different suites); regrade with --force so every "
                                  "student is graded by the same suite, then export again.")
    return points


def write_nbgrader(results: list[SubmissionResult], db_url: str, assignment: str,
                   notebook: str) -> NbgraderSummary:
    """Write every result into the nbgrader gradebook at `db_url` (e.g. sqlite:///gradebook.db).

    Model: one notebook named after the assignment's module, and one
    autograded code grade cell per graded function, worth that function's
    points. A cell per function rather than per check: both make nbgrader's
    totals equal ours (a function's points are the sum of its checks'), but
    the released notebook has exactly one autograder-test cell per function,
    `test_<function>`, worth the same points. Using its names, an export
    into the course's own gradebook (after `nbgrader generate_assignment`)
    fills the cells nbgrader already knows, and the hand-graded written
    answers stay for the TA and add to the total as nbgrader intends; a
    per-check model would add 43 cells no notebook holds. A function with
    some failing checks gets partial points, which nbgrader shows as
    failed tests.
    """
    # Imported here: nbgrader and SQLAlchemy take a second to load and only this export needs them.
    from nbgrader.api import Gradebook, InvalidEntry
    from sqlalchemy.exc import SAWarning, SQLAlchemyError

    cells = function_points(results)
    try:
        with _alembic_on_path(), warnings.catch_warnings(), Gradebook(db_url) as gradebook:
            # nbgrader 0.9.6's add_submission builds its rows in an order SQLAlchemy 2 warns about
            # on autoflush; the rows are written correctly (the tests read them back), so a TA
            # need not see three screens of SAWarning.
            warnings.filterwarnings("ignore", category=SAWarning)
            gradebook.update_or_create_assignment(assignment)
            gradebook.update_or_create_notebook(notebook, assignment)
            _refuse_foreign_cells(gradebook, assignment, notebook, cells)
            for function, points in cells.items():
                gradebook.update_or_create_grade_cell(grade_cell_name(function), notebook, assignment,
                                                      max_score=points, cell_type="code")
            for result in results:
                _write_student(gradebook, result, assignment, notebook)
    except InvalidEntry as error:
        raise ExportError(f"nbgrader refused an entry ({error}); nothing after it was written. Fix the "
                          "gradebook (or use a fresh one) and export again.") from None
    except SQLAlchemyError as error:
        reason = str(error).splitlines()[0]
        raise ExportError(f"cannot use {db_url} as an nbgrader gradebook ({reason}). Check that its folder "
                          "exists and is writable, and that it is nbgrader's gradebook.db.") from None
    return NbgraderSummary(assignment, notebook, len(results), cells)


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
            raise ExportError("nbgrader needs its `alembic` command to create a gradebook and it is not installed "
                              "here; reinstall nbgrader (pip install nbgrader==0.9.6) in this environment.")
        os.environ["PATH"] = scripts + os.pathsep + saved
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def grade_cell_name(function: str) -> str:
    """The released notebook's name for a function's autograder-test cell."""
    return f"test_{function}"


def _refuse_foreign_cells(gradebook, assignment: str, notebook: str, cells: dict[str, float]) -> None:
    """Other autograded cells in the notebook would add their points to ours and inflate the total."""
    found = gradebook.find_notebook(notebook, assignment)
    ours = {grade_cell_name(function) for function in cells}
    foreign = sorted(c.name for c in found.grade_cells if c.cell_type == "code" and c.name not in ours)
    if foreign:
        raise ExportError(
            f"notebook {notebook!r} of {assignment} in the gradebook already has autograded cells that are not "
            f"ours ({', '.join(foreign)}); their points would be added to ours. Export into a gradebook without "
            "them, or release the notebook again (its test cells are test_<function>), and export again.")


def _write_student(gradebook, result: SubmissionResult, assignment: str, notebook: str) -> None:
    from nbgrader.api import Grade, MissingEntry, SubmittedNotebook

    gradebook.update_or_create_student(result.student)
    submission = gradebook.update_or_create_submission(assignment, result.student)
    submitted = next((n for n in submission.notebooks if n.name == notebook), None)
    if submitted is None:  # the submission was created (e.g. by nbgrader) before our notebook existed
        submitted = SubmittedNotebook(notebook=gradebook.find_notebook(notebook, assignment), assignment=submission)
        gradebook.db.add(submitted)
    for function, (got, _) in result.by_function().items():
        cell_name = grade_cell_name(function)
        try:
            grade = gradebook.find_grade(cell_name, notebook, assignment, result.student)
        except MissingEntry:
            # nbgrader mirrors an assignment's cells only when a submission is created, so a
            # submission from an earlier export lacks grades for cells added since.
            cell = gradebook.find_grade_cell(cell_name, notebook, assignment)
            grade = Grade(cell_id=cell.id, notebook=submitted)
            gradebook.db.add(grade)
        grade.auto_score = got
        grade.needs_manual_grade = False
    gradebook.db.commit()
