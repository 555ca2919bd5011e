"""Students' names for nbgrader's gradebook, from a roster file, so the formgrader shows them.

The roster (outputs.roster) is CSV, as `nbgrader db student import` reads it
(`id`, and any of `first_name`, `last_name`, `email`), or JSON: a list of
objects with `student` (or `id`) and any of the same fields, as
examples/<class>/roster.json lists its students. Fields a row leaves out or
empty are not written, so a name already in the gradebook (from nbgrader's
own import) stays. A roster id is matched to a stored student id exactly; the
export says which roster ids matched no student with a result, and why where
a spreadsheet took their leading zeros.
"""
from __future__ import annotations

from pathlib import Path

from autograder.outputs import roster
from autograder.text import counted, safe

FIELDS = ("first_name", "last_name", "email")
SHOWN = 5  # ids a note names before "…"


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """student id -> {field: value} for the FIELDS the roster gives."""
    return roster.read_roster(path, FIELDS)


def without_result(names: dict[str, dict[str, str]], students: list[str], path: Path, assignment: str) -> str:
    """The note on the roster's ids that match no student with a result (`students`), or "" where none: no name
    of theirs is written, and an id that lost its leading zeros in a spreadsheet is named as such."""
    unmatched = [student for student in names if student not in set(students)]
    if not unmatched:
        return ""
    off_roster = [student for student in students if student not in names]
    said = (f"the roster {path} lists {counted(len(unmatched), 'student')} with no result of {assignment} "
            f"({_some(unmatched)}), so no name of theirs was written")
    lost = roster.zeros_lost(unmatched, off_roster)  # ". The roster's ids lost their leading zeros (7 is 007) …"
    if lost:
        return safe(said + lost, 2000)
    return safe(f"{said}: nothing is needed for a student who did not hand in; for one who did, write their id in "
                f"the roster as `autograder export csv {assignment}` lists it, and export again", 2000)


def unnamed(students: list[str], path: Path | None) -> str:
    """The note on exported students left without a name in the gradebook, saying where names come from."""
    who = f"{counted(len(students), 'student')} {'has' if len(students) == 1 else 'have'}"
    where = (f"the roster {path} does not list {'this id' if len(students) == 1 else 'these ids'}: add "
             f"{'it' if len(students) == 1 else 'them'} to it and export again" if path else
             "pass --roster (nbgrader's students.csv: id,first_name,last_name,email)")
    return safe(f"{who} no name in the gradebook ({_some(students)}), so the formgrader shows them as \"None, "
                f"None\": {where}, or import them with `nbgrader db student import`", 2000)


def _some(students: list[str]) -> str:
    return ", ".join(students[:SHOWN]) + (", …" if len(students) > SHOWN else "")
