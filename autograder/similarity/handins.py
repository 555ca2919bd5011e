"""The class's hand-ins for a similarity report: from files and folders as `grade` reads them, or from the store.

The store holds each graded student's file path and keeps the bytes of
hand-ins up to 16 MB (grading.history); a file that has moved since grading
(or lived in a zip extracted for grading) is read from those, and only one
the store kept no copy of is named in a note, the rest of the class compared.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from autograder.grading.discover import find_submissions
from autograder.grading.handin import FileBytes
from autograder.grading.store import Store, stored_results
from autograder.grading.submission import Submission, read_submission, submission_from_bytes
from autograder.similarity.code import for_instructor
from autograder.text import safe


def from_paths(paths: list[Path], assignment: str, module: str, workdir: Path) -> tuple[list[Submission], list[str]]:
    """(submissions, notes) of every student under `paths`; workdir receives extracted zips (caller removes it)."""
    submissions, notes = [], []
    zips = {Path(path).stem: Path(path) for path in paths if Path(path).suffix == ".zip"}
    for found in find_submissions(paths, assignment, module, workdir):
        if found.problem:
            notes.append(f"{safe(found.student)}: not compared: {for_instructor(found.problem)}")
            continue
        if found.note:  # which of two files was compared, as `grade` says which it graded
            notes.append(f"{safe(found.student)}: {safe(found.note, 300)}")
        submission = read_submission(found.path, found.student)
        submissions.append(dataclasses.replace(submission, path=_in_zip(found.path, workdir, zips)))
    return submissions, notes


def _in_zip(path: Path, workdir: Path, zips: dict[str, Path]) -> Path:
    """`path` as the instructor can find it: a file extracted from a zip given as PATH as `class.zip: ann.py`, not
    the temporary folder it was read from, which is gone when the command ends."""
    try:
        folder, *rest = Path(path).resolve().relative_to(Path(workdir).resolve()).parts
    except ValueError:
        return path
    archive = zips.get(folder.rsplit("-", 1)[0])  # class_zip.extract's folder: the zip's stem and a random part
    return Path(f"{archive}: {Path(*rest)}") if archive is not None and rest else path


def from_store(db: Path, assignment: str) -> tuple[list[Submission], list[str]]:
    """(submissions, notes) of every student with a stored result for `assignment`, read from their files, or
    where a file is gone, from the copy the store kept of it."""
    _, results = stored_results(db, assignment)
    gone = [r for r in results if not Path(r.file).is_file()]
    with Store.for_reading(db) as store:
        kept = dict(store.handins([r.sha256 for r in gone if r.sha256]))
    submissions, notes = [], []
    for result in sorted(results, key=lambda r: r.student):
        path = Path(result.file)
        if path.is_file():
            submissions.append(read_submission(path, result.student))
        elif result.sha256 in kept:  # named as where it is now, not where it was graded (a zip's folder, gone)
            data = kept[result.sha256]
            submission = submission_from_bytes(path, result.student, FileBytes(data, len(data), result.sha256))
            submissions.append(dataclasses.replace(submission, path=Path(f"{path.name}, as {db.name} kept it")))
        else:
            notes.append(f"{safe(result.student)}: not compared: the graded file {safe(path)} is no longer there "
                         "(moved, or extracted from a zip for grading) and the database kept no copy of it (it "
                         "keeps hand-ins up to 16 MB); pass the hand-ins' folder or zip as PATH")
    return submissions, notes
