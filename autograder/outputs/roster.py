"""A class roster: our student ids mapped to what other systems know the students by.

Two forms are read, both keyed by the student id `grade` stores:
- CSV with a header: `student` (or `id`, as `nbgrader db student import` reads it) and any other columns;
- JSON: a list of objects with `student` (or `id`) and any other fields.
Only the fields asked for are kept, each as text; a field a row leaves out or empty is not kept. The order of
the file is kept: exports write their rows in it.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from autograder.outputs import ExportError
from autograder.text import safe


def read_roster(path: Path, fields: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """student id -> {field: value} for the `fields` each entry gives, in the file's order."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ExportError(f"cannot read the roster {path} ({error}); pass --roster with a readable CSV or JSON "
                          "file") from None
    rows = _json_rows(path, text) if path.suffix.lower() == ".json" else list(csv.DictReader(text.splitlines()))
    roster = {}
    for number, row in enumerate(rows, start=1):
        student = (row.get("student") or row.get("id")) if isinstance(row, dict) else None
        if not isinstance(student, str) or not student.strip():
            raise ExportError(f"{path}: entry {number} has no student id (a `student` or `id` field); every entry "
                              "needs one, as `autograder grade` stores it")
        roster[student.strip()] = {name: safe(row[name].strip(), 200) for name in fields
                                   if isinstance(row.get(name), str) and row[name].strip()}
    return roster


def _json_rows(path: Path, text: str) -> list:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as error:
        raise ExportError(f"{path} is not valid JSON (line {error.lineno}: {error.msg}); fix it, or pass a CSV "
                          "roster with a header row") from None
    if not isinstance(rows, list):
        raise ExportError(f"{path} must hold a list of students, each with `student` and its other fields")
    return rows
