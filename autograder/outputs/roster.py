"""A class roster: our student ids mapped to what other systems know the students by.

Five forms are read, keyed by the student id `grade` stores:
- CSV with a header: `student` (or `id`, as `nbgrader db student import` reads it) and any other columns;
- JSON: a list of objects with `student` (or `id`) and any other fields;
- Canvas's own gradebook export (`Student, ID, SIS User ID, SIS Login ID, Section, …`), keyed by Canvas user
  id, its "Points Possible" row left out: `lms.by_lms_user` matches it to the ids a Canvas download gives;
- Moodle's grading worksheet (an assignment's "Download grading worksheet": `Identifier, Full name, …`),
  keyed by the number of its `Participant 123456`, the same number Moodle's download gives each student;
- Blackboard's Grade Center download (Work Offline > Download: `Last Name, First Name, Username, Student ID,
  …`, comma-separated, or tab-separated in UTF-16 as its `.xls`), keyed by username, which is also the
  student id a Blackboard download gives.
Only the fields asked for are kept, each as text; a field a row leaves out or empty is not kept. The order of
the file is kept: exports write their rows in it.
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import re
import sys
from pathlib import Path

from autograder.grading.ids import canonical
from autograder.outputs import ExportError
from autograder.text import safe

# Roster fields an LMS finds a student's row by (outputs.lms): each names one student. Names may repeat.
IDENTITIES = ("email", "username", "lms_id", "sis_user_id", "sis_login_id", "participant")
# Canvas's gradebook export's columns, and the roster fields they are.
CANVAS_COLUMNS = {"Student": "name", "ID": "lms_id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id",
                  "Section": "section"}
# Moodle's grading worksheet's columns (in English, as its upload reads them back), and the roster fields they are.
MOODLE_COLUMNS = {"Identifier": "participant", "Full name": "name", "Email address": "email",
                  "ID number": "sis_user_id", "Username": "username", "Maximum Grade": "max_grade"}
# Blackboard's Grade Center download's columns, and the roster fields they are.
BLACKBOARD_COLUMNS = {"Last Name": "last_name", "First Name": "first_name", "Username": "username",
                      "Student ID": "sis_user_id"}


# A gradebook column as an LMS's own download heads it: Canvas's `Title (4242)`, Blackboard's
# `Title [Total Pts: 100 Score] |1234567`.
_POINTS = re.compile(r"\d+(?:[.,]\d+)?")  # a decimal comma where the file is separated by semicolons
_LMS_COLUMN = re.compile(r"^(?P<title>.+?) (?:\((?P<canvas>\d+)\)|\[Total Pts:[^\]]*\] \|(?P<blackboard>\S+))$")


def not_on_roster(unknown: list[str], ungraded: list[str], roster: Path) -> str:
    """What `export` says of the students with a result that the roster does not list (`ungraded`: the roster's
    students without one), with their ids that lost their leading zeros there."""
    who = "1 student with a result is" if len(unknown) == 1 else f"{len(unknown)} students with a result are"
    return (f"{who} not on the roster {roster}, so not in the file: {', '.join(unknown)}. Add them to the roster "
            f"(or fix their ids) and export again{zeros_lost(ungraded, unknown)}")


def zeros_lost(ungraded: list[str], unknown: list[str]) -> str:
    """Where a roster id with no result is a stored id of digits without its leading zeros (`123` for `00123`):
    a spreadsheet read the id column as numbers, so the student is both without a result and not on the roster."""
    lost = [(stored.lstrip("0"), stored) for stored in unknown if stored.isdigit() and stored.startswith("0")]
    pairs = [(short, stored) for short, stored in lost if short in ungraded]
    if not pairs:
        return ""
    shown = ", ".join(f"{short} is {stored}" for short, stored in pairs[:5]) + (
        f" and {len(pairs) - 5} more" if len(pairs) > 5 else "")
    return (f". The roster's ids lost their leading zeros ({shown}): a spreadsheet such as Excel read its id column "
            "as numbers. Format that column as Text (or type each id after an apostrophe, '00123), put the zeros "
            "back, save the roster and export again (in a JSON roster, write each id in quotes: \"00123\")")


def read_roster(path: Path, fields: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """student id -> {field: value} for the `fields` each entry gives, in the file's order."""
    path = Path(path)
    text = _text(path, lambda note: print(safe(note, 2000), file=sys.stderr))
    rows = _json_rows(path, text) if path.suffix.lower() == ".json" else _csv_rows(text)
    if not rows:
        raise ExportError(f"{path} has no student rows{_header_read(path, text)}: add one row per student (its "
                          "`student` id as `autograder grade` stores it) and run again")
    roster, entry_of = {}, {}
    for number, row in enumerate(rows, start=1):
        student = (row.get("student") or row.get("id")) if isinstance(row, dict) else None
        if isinstance(row, dict) and not {"student", "id"} & set(row) and path.suffix.lower() != ".json":
            raise ExportError(f"{path}: no column is `student` or `id`{_header_read(path, text)}; name the column "
                              "of the student ids `student` (the ids `autograder grade` stores) and run again")
        if not isinstance(student, str) or not student.strip():
            raise ExportError(f"{path}: entry {number} has no student id (a `student` or `id` field); every entry "
                              "needs one, as `autograder grade` stores it")
        earlier = entry_of.setdefault(canonical(student.strip()), number)
        if earlier != number:  # which entry's name and email would go to the LMS is anyone's guess
            raise ExportError(f"{path}: entries {earlier} and {number} both give the student id {safe(student, 100)!r}"
                              " (ids match whatever their case); keep one entry per student and export again")
        roster[student.strip()] = {name: safe(row[name].strip(), 200) for name in fields
                                   if isinstance(row.get(name), str) and row[name].strip()}
    _refuse_shared_identities(path, list(roster.values()))
    return roster


def lms_columns(path: Path) -> list[tuple[str, str]]:
    """The gradebook columns the header of an LMS's own download names, as (title, the LMS's id of the column:
    `--column-id`), in its order (two columns may share a title); [] for a roster of one's own or a JSON one."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return []
    delimiter, text = separated(_text(path))
    header = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
    found = [_LMS_COLUMN.match(cell.strip()) for cell in header]
    return [(match["title"], match["canvas"] or match["blackboard"]) for match in found if match]


def column_points(path: Path) -> dict[str, str]:
    """The points the LMS's own download gives each of its columns, by the column's id (`--column-id`): Canvas's
    "Points Possible" row, Blackboard's `[Total Pts: 100 Score]`; {} for a roster of one's own or a JSON one."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return {}
    delimiter, text = separated(_text(path))
    lines = list(itertools.islice(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), 5))
    possible = next((row for row in lines[1:] if row and row[0].strip() == "Points Possible"), [])
    points = {}
    for number, cell in enumerate(lines[0] if lines else []):
        match = _LMS_COLUMN.match(cell.strip())
        if match and match["canvas"] and number < len(possible) and _POINTS.fullmatch(possible[number].strip()):
            points[match["canvas"]] = possible[number].strip().replace(",", ".")
        elif match and match["blackboard"] and (total := re.search(r"Total Pts: *(\d+(?:\.\d+)?)", cell)):
            points[match["blackboard"]] = total[1]
    return points


def _text(path: Path, say=None) -> str:
    """The roster's text. Blackboard's tab-separated download is UTF-16 with a byte order mark; the rest is UTF-8,
    but Excel's plain "CSV" (Windows) saves Windows-1252, whose accented names are no UTF-8: such a file is read
    as Windows-1252, and `say` (when given) is told so, since a name in another encoding would read wrongly."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ExportError(f"cannot read the roster {path} ({error}); pass --roster with a readable CSV or JSON "
                          "file") from None
    try:
        text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        try:
            text = raw.decode("cp1252")
        except UnicodeDecodeError:
            raise ExportError(f"cannot read the roster {path}: it is not UTF-8 ({error}), nor Windows-1252. Save it "
                              "as UTF-8 (in Excel: Save As > \"CSV UTF-8 (Comma delimited)\"), then export "
                              "again") from None
        if say is not None:
            line = raw.count(b"\n", 0, error.start) + 1
            say(f"autograder: note: the roster {path} is not UTF-8 (line {line} holds the byte 0x{raw[error.start]:02x}"
                f"), so it was read as Windows-1252, as Excel's plain \"CSV\" saves it. Check that accented names "
                "look right in the file written; to be sure, save the roster in Excel as \"CSV UTF-8 (Comma "
                "delimited)\" and export again")
    return text.replace("\r\n", "\n")


def _refuse_shared_identities(path: Path, entries: list[dict[str, str]]) -> None:
    """Two entries with one email, username or LMS id would put two students' grades in one LMS row."""
    for name in IDENTITIES:
        first_of: dict[str, int] = {}
        for number, who in enumerate(entries, start=1):
            if name not in who:
                continue
            earlier = first_of.setdefault(canonical(who[name]), number)
            if earlier != number:
                raise ExportError(f"{path}: entries {earlier} and {number} both give the {name} {who[name]!r}, and an "
                                  f"LMS finds a student's row by it, so one row would get both grades; correct the "
                                  "roster so each student has their own, and export again")


def _csv_rows(text: str) -> list[dict]:
    """A CSV roster's rows (comma-, tab- or semicolon-separated, as its header is: a spreadsheet saved as CSV in a
    locale whose decimal mark is a comma separates with semicolons); those of Canvas's gradebook export, Moodle's
    worksheet or Blackboard's Grade Center download with their columns as roster fields. (A cell may hold a line
    break: an earlier grader's feedback in Moodle's worksheet.)"""
    delimiter, text = separated(text)
    rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter))
    header = set(rows[0]) if rows else set()
    if not rows or "student" in header:
        return rows
    if {"Student", "ID"} <= header and {"SIS User ID", "SIS Login ID"} & header:
        return [{"student": row["ID"], **_fields(row, CANVAS_COLUMNS)} for row in rows
                if (row["ID"] or "").strip() and (row["Student"] or "").strip() != "Points Possible"]
    if {"Identifier", "Full name"} <= header:
        return [{"student": number[1], **_fields(row, MOODLE_COLUMNS)} for row in rows
                if (number := re.search(r"(\d+)\s*$", row["Identifier"] or ""))]
    if {"Username", "Last Name", "First Name"} <= header:
        return [{"student": row["Username"], **_fields(row, BLACKBOARD_COLUMNS)} for row in rows
                if (row["Username"] or "").strip()]
    return rows


def separated(text: str) -> tuple[str, str]:
    """(the separator of a CSV roster's cells, its text without Excel's `sep=X` first line where it has one).

    The separator is X where such a line names it, else whichever of comma, tab and semicolon the header holds
    most often outside quotes (a comma where none is more frequent): a spreadsheet saved in a locale whose decimal
    mark is a comma separates with semicolons, and a quoted title may hold commas
    (`student;"Full name, as printed";lms_id`)."""
    first_line, _, rest = text.partition("\n")
    named = re.fullmatch(r"sep=(.)\r?", first_line)
    if named:
        return named[1], rest
    outside = re.sub(r'"[^"]*"', "", first_line)  # a quote inside a quoted cell is doubled: still removed whole
    return max((",", "\t", ";"), key=outside.count), text


def _header_read(path: Path, text: str) -> str:
    """", and its header, read as separated by ';', is: a, b" for a CSV roster with a header line, else ""."""
    if path.suffix.lower() == ".json":
        return ""
    delimiter, text = separated(text)
    header = next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
    if not any(cell.strip() for cell in header):
        return " (nor a header: it is empty)"
    shown = {",": "commas", "\t": "tabs", ";": "semicolons"}.get(delimiter, repr(delimiter))
    return safe(f" (its header, read as separated by {shown}, is: {', '.join(cell.strip() for cell in header)})",
                400)


def _fields(row: dict, columns: dict[str, str]) -> dict:
    return {ours: row.get(theirs) for theirs, ours in columns.items()}


def _json_rows(path: Path, text: str) -> list:
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as error:
        raise ExportError(f"{path} is not valid JSON (line {error.lineno}: {error.msg}); fix it, or pass a CSV "
                          "roster with a header row") from None
    if not isinstance(rows, list):
        raise ExportError(f"{path} must hold a list of students, each with `student` and its other fields")
    return [{key: _json_text(path, number, key, value) for key, value in row.items()} if isinstance(row, dict)
            else row for number, row in enumerate(rows, start=1)]


def _json_text(path: Path, number: int, key: str, value):
    """A JSON roster's value as a CSV roster's would be: a whole number as its digits, since json.dump and pandas
    write a spreadsheet's id column (and an LMS id) as numbers, `{"student": 123}`; a student id that is any other
    number or kind of value is refused with what it is."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if key in ("student", "id") and value is not None and not isinstance(value, str):
        raise ExportError(f"{path}: entry {number} gives its `{key}` as {safe(json.dumps(value), 100)}, not as the "
                          "text of a student id; write it as `autograder grade` stores it, in quotes, and run again")
    return value
