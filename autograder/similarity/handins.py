"""The class's hand-ins for a similarity report: from files and folders as `grade` reads them, or from the store.

The store holds each graded student's file path; a file that has moved
since grading (or lived in a zip extracted for grading) is named in a note,
and the rest of the class is compared.
"""
from __future__ import annotations

from pathlib import Path

from autograder.grading.discover import find_submissions
from autograder.grading.store import stored_results
from autograder.grading.submission import Submission, read_submission
from autograder.similarity.code import for_instructor
from autograder.text import safe


def from_paths(paths: list[Path], assignment: str, module: str, workdir: Path) -> tuple[list[Submission], list[str]]:
    """(submissions, notes) of every student under `paths`; workdir receives extracted zips (caller removes it)."""
    submissions, notes = [], []
    for found in find_submissions(paths, assignment, module, workdir):
        if found.problem:
            notes.append(f"{safe(found.student)}: not compared: {for_instructor(found.problem)}")
            continue
        submissions.append(read_submission(found.path, found.student))
    return submissions, notes


def from_store(db: Path, assignment: str) -> tuple[list[Submission], list[str]]:
    """(submissions, notes) of every student with a stored result for `assignment`, read from their files."""
    _, results = stored_results(db, assignment)
    submissions, notes = [], []
    for result in sorted(results, key=lambda r: r.student):
        path = Path(result.file)
        if not path.is_file():
            notes.append(f"{safe(result.student)}: not compared: the graded file {safe(path)} is no longer there "
                         "(moved, or extracted from a zip for grading); pass the hand-ins' folder or zip as PATH")
            continue
        submissions.append(read_submission(path, result.student))
    return submissions, notes
