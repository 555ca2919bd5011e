"""The names an LMS gives hand-ins in its "download all submissions" zip, read back into students and files.

- Canvas: `<login>_<user id>_<file id>_<name>`, or `<login>_LATE_<user id>_<file id>_<name>` (the login is
  the student's sortable name in lower case, without spaces or punctuation; a file uploaded again under a
  name the student already used becomes `name-1.ipynb`, `name-2.ipynb`). The student is
  `<login>_<user id>`: the user id is what Canvas's gradebook matches (a roster's `lms_id`), the login
  keeps the id readable, and neither changes when the student hands in again (the file id does).
- Moodle, without "Download submissions in folders": `<Full Name>_<participant id>_assignsubmission_file_<name>`.
  The student is `<Full Name>_<participant id>_assignsubmission_file_`, the name Moodle gives the
  student's folder in the other form, so both forms grade the same student.
- Blackboard: `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<name>`, beside the attempt's
  receipt `<assignment>_<username>_attempt_<time>.txt`, whose first line is `Name: <Full Name>
  (<username>)`. The student is the username; of a student's several attempts the latest is graded.
  The assignment's part is the same in every name: a receipt that names its username gives it, so a
  username may hold `_`. Without receipts it is the longest such prefix the names share (then, if every
  username of the download starts with one `word_`, that word is read as the assignment's).

A folder is read as a download only when most of its hand-ins (more than half) have one LMS's form: a
class the TA named (`ann.py`, `ben.ipynb`) is left as it is, and a file the TA added to a download keeps
its stem as its student.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# The login may be empty: Canvas drops every character of a name that is not a letter or digit.
_CANVAS = re.compile(r"(?P<login>[^\W_]*)_(?:[Ll][Aa][Tt][Ee]_)?(?P<user>\d+)_(?P<file>\d+)_(?P<name>.+)")
_CANVAS_STUDENT = re.compile(r"[^\W_]*_(\d+)")  # the student id _canvas gives
_CANVAS_AGAIN = re.compile(r"-\d+(?=\.[^.]+$)")  # Canvas's mark on a file uploaded again under one name
# The LMS's part is the first such part of a name: what follows it is the student's own file name, which may
# hold another (`x_1001_assignsubmission_file_a.py`, `a_attempt_2026-11-19-10-00-00_b.py`) to pose as another
# student or another time.
_MOODLE = re.compile(r"(?P<student>.+?_\d+_assignsubmission_file_)(?P<name>.+)")
_MOODLE_STUDENT = re.compile(r".+_(\d+)_assignsubmission_file_")  # the student id _moodle gives
# A download "in folders" gives each other submission plugin its own folder (online text, comments) beside the
# student's files folder: nothing to grade, and no hand-in missing.
_MOODLE_OTHER_PART = re.compile(r".+_(\d+)_assignsubmission_(?!file_)[a-z]+_")
_BLACKBOARD = re.compile(r"(?P<prefix>.+?)_attempt_(?P<time>\d{4}(?:-\d\d){5})_(?P<name>.+)")
_RECEIPT = re.compile(r"(?P<prefix>.+)_attempt_\d{4}(?:-\d\d){5}\.txt")
_RECEIPT_NAME = re.compile(r"Name:.*\(([^()\s]+)\)\s*")  # a receipt's first line: Name: John Smith (j_smith)


# How each LMS's students are named, as `grade` tells the TA.
STUDENT_IDS = {"Canvas": "login_userid (smithjohn_4101)",
               "Moodle": "Moodle's folder name (Full Name_123456_assignsubmission_file_)",
               "Blackboard": "the username",
               "Gradescope": "the submitters' emails (joined with , for a group), as on Gradescope"}


def moodle_other_parts(names: list[str]) -> set[str]:
    """Of a download's folder names, those Moodle gives a student's online text or comments
    (`Jane Doe_123456_assignsubmission_onlinetext_`) beside the same participant's files folder, which holds the
    hand-in: they hold nothing to grade. A student with online text alone is not among them: their hand-in is
    missing, and the folder is named as one with nothing to grade."""
    with_files = {moodle_participant(name) for name in names} - {None}
    return {name for name in names
            if (match := _MOODLE_OTHER_PART.fullmatch(name)) is not None and match[1] in with_files}


@dataclass(frozen=True)
class LmsName:
    """One downloaded file: whose it is and what the student called it."""
    lms: str  # "Canvas", "Moodle" or "Blackboard"
    student: str
    name: str  # the file's name as the student handed it in
    attempt: str = ""  # Blackboard's attempt time, YYYY-MM-DD-HH-MM-SS: a later attempt sorts later
    upload: int = 0  # Canvas's file id: a file uploaded again (`name-1.ipynb`) has a larger one


def read_download(names: list[str], receipts: Mapping[str, Callable[[], str]] | None = None) -> dict[str, LmsName]:
    """Those of a flat folder's hand-in file names that have one LMS's form, read, when more than half of them
    have it; {} otherwise (the folder is named by the TA). A name left out has its stem as its student.

    receipts: the folder's Blackboard receipts (`is_receipt`), file name -> what reads its first line, which
    names the username; read in name order only until one gives the download's assignment part."""
    return _canvas(names) or _moodle(names) or _blackboard(names, receipts or {})


def canvas_user(student: str) -> str | None:
    """The Canvas user id of a student id read from a Canvas download (`smithjohn_4101`: "4101"), else None."""
    match = _CANVAS_STUDENT.fullmatch(student)
    return match[1] if match else None


def canvas_upload(name: str) -> str | None:
    """The Canvas file id in a file name of a Canvas download (`smithjohn_4101_90001_answers.py`: "90001"),
    else None: each upload has its own, so two names with different ones are two hand-ins, whatever their bytes."""
    match = _CANVAS.fullmatch(name)
    return match["file"] if match else None


def moodle_participant(student: str) -> str | None:
    """The Moodle participant number of a student id read from a Moodle download
    (`Jane Doe_123456_assignsubmission_file_`: "123456", its worksheet's `Participant 123456`), else None."""
    match = _MOODLE_STUDENT.fullmatch(student)
    return match[1] if match else None


def download_note(lms_names: list[str]) -> str:
    """What `grade` says of the hand-ins read from an LMS's download names (each one's LMS, "" for none), so that a
    TA sees the ids they will be stored under before any is."""
    read = Counter(lms for lms in lms_names if lms)
    return "".join(f"; {_which(count, len(lms_names))} in a {lms} download, {'named' if count == 1 else 'each named'} "
                   f"as {STUDENT_IDS[lms]}" for lms, count in sorted(read.items()))


def _which(count: int, found: int) -> str:
    """Which of the hand-ins found: "it is" (the only one), "all of them", "1 of them", "3 of them"."""
    return "it is" if found == 1 else f"{'all' if count == found else count} of them"


def shared_users(found: set[str], stored: set[str], assignment: str) -> list[str]:
    """What `grade` says of each id found whose Canvas user is stored under another id: the login in a Canvas id
    follows the student's name, so a name changed between two downloads stores one user twice (`smithjohn_12345`,
    `smithjohnny_12345`), and an LMS export, keyed by the user, cannot tell whose total is theirs."""
    users: dict[str, set[str]] = {}
    for student in found | stored:
        if (user := canvas_user(student)) is not None:
            users.setdefault(user, set()).add(student)
    return [f"warning: {' and '.join(sorted(ids & found))}, found now, and {' and '.join(sorted(ids - found))}, "
            f"stored before, are one Canvas user, {user} (a name changed between downloads?): they are kept as "
            "different students, and `autograder export canvas` refuses to guess whose total is the user's. Once "
            f"graded, `autograder retract {assignment} STUDENT` the one stored by mistake, then export"
            for user, ids in sorted(users.items()) if ids & found and ids - found]


def is_receipt(name: str) -> bool:
    """Whether `name` is a Blackboard attempt's receipt: the LMS's own file, not a student's hand-in."""
    return bool(_RECEIPT.fullmatch(name))


def _most(pattern: re.Pattern, names: list[str]) -> dict[str, re.Match]:
    """The names `pattern` reads, when it reads more than half of them; {} otherwise."""
    matches = {name: match for name in names if (match := pattern.fullmatch(name))}
    return matches if 2 * len(matches) > len(names) else {}


def _canvas(names: list[str]) -> dict[str, LmsName]:
    return {name: LmsName("Canvas", f"{m['login']}_{m['user']}", _CANVAS_AGAIN.sub("", m["name"]),
                          upload=int(m["file"]))
            for name, m in _most(_CANVAS, names).items()}


def _moodle(names: list[str]) -> dict[str, LmsName]:
    return {name: LmsName("Moodle", m["student"], m["name"]) for name, m in _most(_MOODLE, names).items()}


def _blackboard(names: list[str], receipts: Mapping[str, Callable[[], str]]) -> dict[str, LmsName]:
    matches = _most(_BLACKBOARD, names)
    if not matches:
        return {}
    prefixes = [m["prefix"] for m in matches.values()]
    assignment = _receipts_assignment(prefixes, receipts) or _shared_assignment(prefixes)
    if assignment is None:
        return {}
    return {name: LmsName("Blackboard", m["prefix"][len(assignment) + 1:], m["name"], m["time"])
            for name, m in matches.items()}


def _receipts_assignment(prefixes: list[str], receipts: Mapping[str, Callable[[], str]]) -> str | None:
    """The `<assignment>` of `<assignment>_<username>`, as the first receipt that names its username gives it
    and every prefix shares; None where none does."""
    for name in sorted(receipts):
        receipt = _RECEIPT.fullmatch(name)
        user = _RECEIPT_NAME.fullmatch(receipts[name]()) if receipt else None
        if receipt is None or user is None or not receipt["prefix"].endswith("_" + user[1]):
            continue
        assignment = receipt["prefix"][:-len(user[1]) - 1]
        if assignment and all(prefix.startswith(assignment + "_") and len(prefix) > len(assignment) + 1
                              for prefix in prefixes):
            return assignment
    return None


def _shared_assignment(prefixes: list[str]) -> str | None:
    """The longest `<assignment>` that every `<assignment>_<username>` shares, leaving each a username; None if
    there is none (the names are not one assignment's download)."""
    shared = None
    for prefix in prefixes:
        splits = {prefix[:at] for at, char in enumerate(prefix) if char == "_" and 0 < at < len(prefix) - 1}
        shared = splits if shared is None else shared & splits
    return max(shared, key=len) if shared else None
