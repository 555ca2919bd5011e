"""`export nbgrader` after `autograder retract`: take out of the gradebook what an earlier export wrote of a student
whose every hand-in is retracted since.

Such a student has no result, so the export writes nothing of theirs; without this, the grades an earlier export
wrote would stay in gradebook.db and `nbgrader export` would go on giving them. Their submission of the assignment
is removed through nbgrader's own API (Gradebook.remove_submission), as `nbgrader db` would, unless a TA graded or
commented on it by hand: then only our points (the test_<function> cells' auto_score) are taken out, and the TA's
work stays. The student's own record (name, email) stays, and so do files on disk (submitted/, autograded/).
"""
from __future__ import annotations

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
            lines.append(safe(_clear(gradebook, submission, assignment, notebook, student), 600))
    return lines


def _clear(gradebook, submission, assignment: str, notebook: str, student: str) -> str:
    """Remove the submission, or, where a TA graded it by hand, only our points; what was done, for the summary."""
    by_hand = any(g.manual_score is not None or g.extra_credit is not None for n in submission.notebooks
                  for g in n.grades) or any(c.manual_comment for n in submission.notebooks for c in n.comments)
    if not by_hand:
        gradebook.remove_submission(assignment, student)
        return (f"{student}: every hand-in is retracted, so their submission of {assignment} was removed from the "
                f"gradebook (`nbgrader export` no longer lists a grade of theirs); their files under submitted/ and "
                f"autograded/ stay: move them out of the course folder so `nbgrader autograde` does not grade them "
                f"again")
    for submitted in submission.notebooks:
        for grade in submitted.grades:
            if grade.name.startswith("test_"):  # ours (export refuses a notebook with other autograded cells)
                grade.auto_score = 0.0
        submitted.late_submission_penalty = None
    gradebook.db.commit()
    return (f"{student}: every hand-in is retracted, so our points in notebook {notebook!r} of {assignment} are now "
            f"0 in the gradebook; a TA graded this submission by hand, so it was kept with their grades. Remove it "
            f"if it should not count (`nbgrader db` or the formgrader), or put the hand-in back (`"
            f"{command('retract', [assignment, student], ['--undo'])}`) and export again")
