"""`export nbgrader` after `autograder retract`: take out of the gradebook what an earlier export wrote of a student
whose every hand-in is retracted since.

Such a student has no result, so the export writes nothing of theirs; without this, the grades an earlier export
wrote would stay in gradebook.db and `nbgrader export` would go on giving them. Their submission of the assignment
is removed through nbgrader's own API (Gradebook.remove_submission), as `nbgrader db` would, unless a TA graded or
commented on it by hand: then only our points (the test_<function> cells' auto_score) are taken out, and the TA's
work stays. The student's own record (name, email) stays, and so do files on disk (submitted/, autograded/): nbgrader
lists every student of its gradebook in `nbgrader export`, so the student is listed there with 0 for the assignment,
as one who handed nothing in. Only removing the student (`nbgrader db student remove`) takes them out of it, from
every assignment, which is the TA's call: the message gives the command.
"""
from __future__ import annotations

import shlex
import warnings

from autograder.text import command, safe


def clear_withdrawn(db_url: str, assignment: str, notebook: str, students: list[str]) -> list[str]:
    """Take out of the gradebook at `db_url` what was written of `students` (every hand-in retracted) for
    `assignment`; one line per student it changed, saying what was done and what is left to do."""
    if not students:
        return []
    from nbgrader.api import Gradebook, MissingEntry
    from sqlalchemy.exc import SAWarning

    lines = []
    with warnings.catch_warnings(), Gradebook(db_url) as gradebook:
        warnings.filterwarnings("ignore", category=SAWarning)
        for student in students:
            try:
                submission = gradebook.find_submission(assignment, student)
            except MissingEntry:
                continue  # never exported (or removed already): nothing to take out
            lines.append(safe(_clear(gradebook, submission, assignment, notebook, student), 1200))
    return lines


def _clear(gradebook, submission, assignment: str, notebook: str, student: str) -> str:
    """Remove the submission, or, where a TA graded it by hand, only our points; what was done, for the summary."""
    by_hand = any(g.manual_score is not None or g.extra_credit is not None for n in submission.notebooks
                  for g in n.grades) or any(c.manual_comment for n in submission.notebooks for c in n.comments)
    if not by_hand:
        gradebook.remove_submission(assignment, student)
        return (f"{student}: every hand-in is retracted, so their submission of {assignment} was removed from the "
                f"gradebook; they stay in it as a student, so `nbgrader export` lists them with 0 points for "
                f"{assignment}, as a student who handed nothing in. To leave them out of it, remove the student: "
                f"{_remove_student(gradebook, student)}. Their files under submitted/ and autograded/ stay: move them "
                f"out of the course folder so `nbgrader autograde` does not grade them again")
    for submitted in submission.notebooks:
        for grade in submitted.grades:
            if grade.name.startswith("test_"):  # ours (export refuses a notebook with other autograded cells)
                grade.auto_score = 0.0
        submitted.late_submission_penalty = None
    gradebook.db.commit()
    return (f"{student}: every hand-in is retracted, so our points in notebook {notebook!r} of {assignment} are now "
            f"0 in the gradebook; a TA graded this submission by hand, so it was kept with their grades, and "
            f"`nbgrader export` lists them with the TA's points alone. If it should not count, remove the student "
            f"(with the TA's grades): {_remove_student(gradebook, student)}; or put the hand-in back (`"
            f"{command('retract', [assignment, student], ['--undo'])}`) and export again")


def _remove_student(gradebook, student: str) -> str:
    """nbgrader's own command that removes `student` from this gradebook, and what else it removes."""
    others = sorted({s.assignment.name for s in gradebook.find_student(student).submissions})
    line = f"`nbgrader db student remove {shlex.quote(student)} --db={shlex.quote(_url(gradebook))}"
    if not others:
        return line + "`"
    # nbgrader refuses, without --force, to remove a student with grades, and removes those grades with them.
    return line + f" --force` (this removes their grades of {', '.join(others)} too)"


def _url(gradebook) -> str:
    """The gradebook's URL for a command to paste: a database password, if any, shown as ***."""
    return gradebook.db.bind.url.render_as_string(hide_password=True)
