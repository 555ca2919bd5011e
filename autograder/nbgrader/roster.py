"""Students' names for nbgrader's gradebook, from a roster file, so the formgrader shows them.

The roster (outputs.roster) is CSV, as `nbgrader db student import` reads it
(`id`, and any of `first_name`, `last_name`, `email`), or JSON: a list of
objects with `student` (or `id`) and any of the same fields, as
examples/<class>/roster.json lists its students. Fields a row leaves out or
empty are not written, so a name already in the gradebook (from nbgrader's
own import) stays.
"""
from __future__ import annotations

from pathlib import Path

from autograder.outputs import roster

FIELDS = ("first_name", "last_name", "email")


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """student id -> {field: value} for the FIELDS the roster gives."""
    return roster.read_roster(path, FIELDS)
