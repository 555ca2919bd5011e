"""One student's hand-in as finding a class gives it (grading.discover), and what every layout's finds share:
ids settled so every output can hold them, and hand-ins refused where the class folder must be fixed first.
"""
from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.handin import read_bytes
from autograder.grading.ids import canonical, id_problem, shown_id, unique
from autograder.grading.late import FILE_TIME, FILE_TIME_INSTEAD, TIMESTAMP_FILE, LateRule, file_time
from autograder.text import safe

NOTHING_TO_GRADE = "nothing to grade"  # a hand-in with no .py or .ipynb (a PDF alone): graded as 0, said why


class LayoutError(Exception):
    """A path given to `grade` holds no submissions we can recognise."""


@dataclass(frozen=True)
class Found:
    student: str
    path: Path
    note: str = ""  # e.g. which of two files was picked
    problem: str = ""  # why the file cannot be graded at all, found before reading it (a refused zip member)
    submitted_at: str = ""  # ISO 8601 in UTC (grading.late)
    submitted_at_source: str = ""  # where that time came from: late.NBGRADER_TIMESTAMP, LMS_LOCAL_TIME or FILE_TIME
    root: Path | None = None  # the layout's top: no link below it is followed when the file is read (grading.handin)
    lms: str = ""  # the LMS whose download named the file ("Canvas"), where its name was read (grading.lms_downloads)
    # False where the class folder must be fixed before the hand-in can be graded (two files give one id, an id
    # no output can hold, a link): `grade` names it with `problem` and stores nothing under an id made up for it
    stored: bool = True


def settle_ids(found: list[Found]) -> list[Found]:
    """Every hand-in with an id every output can hold, unique; refused and colliding ones get their problem."""
    by_id: dict[str, list[Found]] = {}
    for item in found:
        by_id.setdefault(canonical(item.student), []).append(item)
    settled, taken = [], set()
    for group in by_id.values():
        for item in group:
            folder_problem = _collision(item, group) or _id_refused(item)
            student = item.student if not id_problem(item.student) else shown_id(item.student)
            settled.append(dataclasses.replace(item, student=unique(student, taken),
                                               problem=item.problem or folder_problem,
                                               stored=item.stored and not folder_problem))
    return settled


def _collision(item: Found, group: list[Found]) -> str:
    if len(group) == 1:
        return ""
    files = " and ".join(safe(other.path, 300) for other in group)
    return (f"{len(group)} hand-ins give the student id {safe(group[0].student, 200)!r}: {files}. None of them was "
            "graded, so no result replaces another; keep one (rename or remove the others) and grade again")


def _id_refused(item: Found) -> str:
    reason = id_problem(item.student)
    return f"{safe(item.path, 300)} was not graded: {reason}, and grade again" if reason else ""


def link_refused(item: Found) -> Found:
    """`item`, not to be stored where its file (or the student's folder, below the layout's top) is a symbolic link,
    or its file a hard link: the class folder was copied keeping links (`cp -a`, `cp -al`, rsync's --link-dest, a
    tool merging identical files), which the hand-in rule refuses to follow, and a zero for the student would stand
    for the copy, not their work. Its problem is what reading it says (grading.handin).
    The folder the TA passed may itself be a link: it is not the student's part of the path."""
    if item.problem or not (any(os.path.islink(path) for path in _below_the_top(item)) or _hard_link(item.path)):
        return item
    problem = read_bytes(item.path, item.root).error or (
        f"{safe(item.path, 300)} is in a folder that is a symbolic link; replace the link with a copy (or copy the "
        "class folder without keeping links) and grade again")
    return dataclasses.replace(item, problem=problem, stored=False)


def _hard_link(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def _below_the_top(item: Found) -> list[Path]:
    """The hand-in's file and each folder above it below the layout's top (submitted/<student>/<assignment>/ has two:
    a student's folder linked in had been graded, at 0), the folder the TA passed left out."""
    if item.root is None:
        return [item.path]
    root = Path(item.root)
    return [item.path, *[folder for folder in item.path.parents if root in folder.parents]]


def unreadable_refused(item: Found) -> Found:
    """`item`, not to be stored where this account may not read its file: the class folder's permissions to fix,
    not the student's 0 (an export would write it)."""
    if item.problem or os.access(item.path, os.R_OK) or not os.path.isfile(item.path):
        return item
    return dataclasses.replace(item, problem=read_bytes(item.path, item.root).error, stored=False)


def timed(item: Found) -> Found:
    """`item` with a submission time: its own (nbgrader's), else the file's, which is unreliable; for a hand-in of
    no file to grade (a PDF alone), its folder's."""
    return item if item.submitted_at else dataclasses.replace(
        item, submitted_at=file_time(item.path) or file_time(item.path.parent), submitted_at_source=FILE_TIME)


def held_for_their_time(item: Found, rule: LateRule) -> Found:
    """`item`, with a due time set and a timestamp.txt that could not be read, held back: not stored, so that no
    late penalty from its file's modification time (which copying the class folder changes) reaches a gradebook."""
    if rule.due is None or item.submitted_at_source != FILE_TIME or not item.note.endswith(FILE_TIME_INSTEAD):
        return item
    return dataclasses.replace(item, stored=False, problem=(
        f"{item.student}: {item.note.removesuffix(FILE_TIME_INSTEAD)}; fix {TIMESTAMP_FILE} and grade again (its "
        "file's modification time, which copying the class folder changes, would decide whether it is late)"))
