"""Students' names for nbgrader's gradebook, from a roster file, so the formgrader shows them.

Two forms are read, both keyed by the student id `grade` stores:
- CSV with a header, as `nbgrader db student import` reads it: `id`, and any
  of `first_name`, `last_name`, `email`;
- JSON: a list of objects with `student` (or `id`) and any of the same
  fields, as examples/<class>/roster.json lists its students.
Fields a row leaves out or empty are not written, so a name already in the
gradebook (from nbgrader's own import) stays.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from autograder.outputs import ExportError
from autograder.text import safe

FIELDS = ("first_name", "last_name", "email")


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """student id -> {field: value} for the FIELDS the roster gives."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ExportError(f"cannot read the roster {path} ({error}); pass --roster with a readable CSV or JSON "
                          "file, or leave it out") from None
    rows = _json_rows(path, text) if path.suffix.lower() == ".json" else list(csv.DictReader(text.splitlines()))
    roster = {}
    for number, row in enumerate(rows, start=1):
        student = (row.get("student") or row.get("id")) if isinstance(row, dict) else None
        if not isinstance(student, str) or not student:
            raise ExportError(f"{path}: entry {number} has no student id (an `id` or `student` field); every entry "
                              "needs one, as `autograder grade` stores it")
        roster[student] = {name: safe(row[name], 200) for name in FIELDS
                           if isinstance(row.get(name), str) and row[name].strip()}
    return roster


def _json_rows(path: Path, text: str) -> list:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as error:
        raise ExportError(f"{path} is not valid JSON (line {error.lineno}: {error.msg}); fix it, or pass a CSV "
                          "roster (id,first_name,last_name,email)") from None
    if not isinstance(rows, list):
        raise ExportError(f"{path} must hold a list of students, each with `student` and its names")
    return rows
